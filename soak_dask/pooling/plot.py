"""Figures of the transfer matrix and of the train-subset search (matplotlib only, imported
when a figure is drawn).

- ``plot_transfer``: per learner, a heat map of the mean measure training on each subset (rows)
  and testing on each (columns), each off-diagonal cell marked with its paired t-test against
  the diagonal (▲ significantly worse than the test subset's own model, ▼ better), subsets in
  the leaf order of a hierarchical clustering drawn above the first map, every map in that
  order and on one colour scale, so learners compare cell by cell;
- ``plot_search``: per learner, how often each train subset joins the pool of each test subset
  across the outer folds, with the nested greedy estimate against same and all written beside.

Both return the ``matplotlib.figure.Figure`` and never call ``plt.show()``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import xarray as xr
from matplotlib.axes import Axes
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

from ..results.plot import (
    COLORS,
    check_choice,
    fitted_title,
    format_pvalue,
    mean_sd_bar,
    measure_label,
    pooled_handle,
    pooled_tick,
)
from ..results.verdicts import MARKS
from ..schema import LOWER_IS_BETTER
from ..settings import check_alpha
from ..split.search import TRAIN_SETS
from .matrix import check_transfer, cluster_subsets, transfer_pvalues, transfer_summary
from .search import check_search, search_pvalues

#: Subset orders of ``plot_transfer``.
ORDERS: tuple[str, ...] = ("cluster", "name")
#: Colour of each train set of the search (SOAK's same and all; Okabe-Ito green for greedy).
SEARCH_COLORS: dict[str, str] = {"same": COLORS["same"], "greedy": "#009E73", "all": COLORS["all"]}
_CELL = 0.62  # inches per heat-map cell
_DENDROGRAM = 0.7  # inches of dendrogram above a heat map


def _learners(ds: xr.Dataset, learners: str | Iterable[str] | None) -> list[str]:
    known = [str(v) for v in ds["learner"].values]
    if learners is None:
        return known
    chosen = [learners] if isinstance(learners, str) else list(learners)
    unknown = [name for name in chosen if name not in known]
    if unknown or not chosen:
        raise ValueError(f"learners={chosen!r}: choose among {known}")
    return chosen


def plot_transfer(
    ds: xr.Dataset,
    measure: str | None = None,
    learners: str | Iterable[str] | None = None,
    *,
    order: str = "cluster",
    order_by: str | None = None,
    alpha: float = 0.05,
) -> Figure:
    """Heat maps of a transfer matrix, one per learner.

    Parameters
    ----------
    ds : xarray.Dataset
        From ``soak_dask.pooling.transfer`` (or ``transfer_from_soak``).
    measure : str, optional
        Default: the first measure of the results (error for classification).
    learners : str or iterable of str, optional
        Default: every learner.
    order : {"cluster", "name"}
        Subsets in the leaf order of ``cluster_subsets`` for learner ``order_by`` (its
        dendrogram drawn above that learner's map), or as the results order them. Every
        learner's map has this one order and one colour scale.
    order_by : str, optional
        The learner whose transfer distances order the subsets. Default: the one with the best
        mean on the diagonal (each subset's own model), whose transfer pattern is the most
        informative (a featureless baseline's says little).
    alpha : float
        Level of the ▲ / ▼ marks (paired t-test over folds against the diagonal).

    Returns
    -------
    matplotlib.figure.Figure
    """
    measure = check_transfer(ds, measure)
    check_choice("order", order, ORDERS)
    alpha = check_alpha(alpha)
    names = _learners(ds, learners)
    tests = transfer_pvalues(ds, measure, alpha=alpha)
    # Each cell's pooled estimate, written under its mean where the two disagree.
    tests = tests.merge(transfer_summary(ds, measure)[[*_CELL_KEYS, *_POOLED]], on=_CELL_KEYS)
    n = ds.sizes["test_subset"]
    side = max(2.2, _CELL * n)
    fig = plt.figure(
        figsize=(len(names) * (side + 1.9) + 0.3, side + _DENDROGRAM + 1.9), layout="constrained"
    )
    means = ds[measure].sel(learner=names).mean("fold")
    norm = Normalize(float(means.min()), float(means.max()))  # one scale for every learner
    subsets, tree = [str(s) for s in ds["test_subset"].values], None
    by = _order_learner(means, measure) if order_by is None else order_by
    if order == "cluster":
        check_choice("order_by", by, tuple(names))
        subsets, tree = cluster_subsets(ds, by, measure)
    columns = fig.subfigures(1, len(names), squeeze=False)[0]
    for sub, name in zip(columns, names, strict=True):
        mine = tree is not None and name == by
        note = f"in the order of {by}'s clustering" if tree is not None and not mine else ""
        panel = _Panel(subsets, tree if mine else None, note, norm, side)
        _transfer_panel(sub, ds, tests, measure, name, panel)
    k = ds.sizes["fold"]
    fitted_title(
        fig,
        f"Train on one subset (rows), test on each (columns): mean {measure} over {k} folds\n"
        f"{MARKS['worse']} / {MARKS['better']}: significantly worse / better than the test "
        f"subset's own model (paired t-test over folds, p < {alpha:g}); (pooled …): every test "
        "row once, where it disagrees with the fold mean",
    )
    return fig


#: The keys of a transfer cell, and the columns of ``transfer_summary`` a cell's text reads.
_CELL_KEYS = ["learner", "train_subset", "test_subset"]
_POOLED = ["weighted_mean", "estimates_differ"]


def _order_learner(means: xr.DataArray, measure: str) -> str:
    """The learner of best mean measure on the diagonal (each subset's own model)."""
    own = [means.sel(train_subset=s, test_subset=s, drop=True) for s in means["test_subset"].values]
    diagonal = xr.concat(own, "subset").mean("subset").to_series()
    return str(diagonal.idxmin() if measure in LOWER_IS_BETTER else diagonal.idxmax())


@dataclass(frozen=True)
class _Panel:
    """What every learner's heat map shares: the subset order, the colour scale, the size; and
    the clustering tree, drawn above the map whose learner it orders."""

    subsets: list[str]
    tree: np.ndarray | None
    note: str  # said above a map without the tree
    norm: Normalize
    side: float


def _transfer_panel(
    sub, ds: xr.Dataset, tests: pd.DataFrame, measure: str, learner: str, panel: _Panel
) -> None:
    """One learner's heat map (and the dendrogram, if it has the tree) in subfigure ``sub``."""
    subsets = panel.subsets
    top, heat = sub.subplots(
        2, 1, height_ratios=[_DENDROGRAM, panel.side], sharex=True, gridspec_kw={"hspace": 0.0}
    )
    _dendrogram(top, panel.tree, panel.note)
    top.set_title(learner, fontsize=10)
    mean = ds[measure].sel(learner=learner).mean("fold")
    grid = mean.sel(train_subset=subsets, test_subset=subsets).transpose(
        "train_subset", "test_subset"
    )
    values = np.asarray(grid.values, dtype=np.float64)
    mesh = heat.pcolormesh(
        values, cmap="magma_r", norm=panel.norm, edgecolors="white", linewidth=0.5
    )
    mine = tests[tests["learner"] == learner].set_index(["train_subset", "test_subset"])
    _cell_texts(heat, values, mine, subsets, mesh)
    heat.set_xlim(0, len(subsets))  # shared with the dendrogram
    heat.set_ylim(len(subsets), 0)  # first train subset on top
    ticks = np.arange(len(subsets)) + 0.5
    heat.set_xticks(ticks, subsets, rotation=45 if max(map(len, subsets)) > 4 else 0)
    heat.set_yticks(ticks, subsets)
    heat.set_xlabel("test subset")
    heat.set_ylabel("train subset")
    bar = sub.colorbar(mesh, ax=[top, heat], shrink=0.6, pad=0.02)
    bar.set_label(measure_label(ds, measure), fontsize=8)


def _dendrogram(ax: Axes, tree: np.ndarray | None, note: str = "") -> None:
    """The clustering above the heat map's columns, leaf i at x = i + 0.5 (scipy draws leaf
    i at 10 i + 5); without a tree, ``note``."""
    ax.axis("off")
    if tree is None or not np.any(tree[:, 2] > 0):
        ax.text(
            0.5,
            0.2,
            note if tree is None else "no clusters: every distance is 0",
            transform=ax.transAxes,
            ha="center",
            fontsize=7,
            color="#555555",
        )
        return
    from scipy.cluster.hierarchy import dendrogram

    drawn = dendrogram(tree, no_plot=True)
    for xs, ys in zip(drawn["icoord"], drawn["dcoord"], strict=True):
        ax.plot(np.asarray(xs) / 10, ys, color="#555555", lw=1)
    top = tree[:, 2].max()
    ax.set_ylim(-0.04 * top, 1.05 * top)  # links at distance 0 stay visible above the map


def _cell_texts(
    ax: Axes, values: np.ndarray, tests: pd.DataFrame, subsets: list[str], mesh
) -> None:
    """Each cell's mean, its verdict mark and, where they disagree, its pooled estimate; the
    diagonal boxed."""
    n = len(subsets)
    size = 8 if n <= 6 else max(5, 48 / n)
    for i, t in enumerate(subsets):
        for j, s in enumerate(subsets):
            value = values[i, j]
            if not np.isfinite(value):
                continue
            row = tests.loc[(t, s)]
            mark = "same" if t == s else MARKS[row["verdict"]]
            if row["verdict"] in ("worse", "better") and n <= 6:
                mark += f"\n{format_pvalue(row['p'])}"
            if row["estimates_differ"]:
                mark += f"\n(pooled {row['weighted_mean']:.3g})"
            rgba = mesh.cmap(mesh.norm(value))
            dark = 0.299 * rgba[0] + 0.587 * rgba[1] + 0.114 * rgba[2] < 0.5
            ax.text(
                j + 0.5,
                i + 0.5,
                f"{value:.3g}\n{mark}".strip(),
                ha="center",
                va="center",
                fontsize=size,
                color="white" if dark else "black",
                linespacing=1.1,
            )
            if t == s:
                ax.add_patch(Rectangle((j, i), 1, 1, fill=False, edgecolor="#0072B2", lw=2))


def plot_search(
    ds: xr.Dataset, learners: str | Iterable[str] | None = None, *, alpha: float = 0.05
) -> Figure:
    """Per learner: how often each train subset joins each test subset's pool across the
    outer folds (left), and the nested estimate of the search beside same and all (right:
    mean ± SD over the outer folds, with greedy − same and greedy − all and their paired
    t-tests written on the right).

    Parameters
    ----------
    ds : xarray.Dataset
        From ``soak_dask.pooling.search_subsets``.
    learners : str or iterable of str, optional
        Default: every learner.
    alpha : float
        Differences with p < alpha are starred.

    Returns
    -------
    matplotlib.figure.Figure
    """
    measure = check_search(ds)
    alpha = check_alpha(alpha)
    names = _learners(ds, learners)
    tests = search_pvalues(ds, alpha=alpha).set_index(
        ["learner", "test_subset", "compare", "reference"]
    )
    n_test, n_train = ds.sizes["test_subset"], ds.sizes["train_subset"]
    left = max(1.6, 0.5 * n_train)
    fig, axes = plt.subplots(
        len(names),
        2,
        figsize=(left + 6.2, len(names) * (0.62 * n_test + 1.1) + 0.7),
        squeeze=False,
        width_ratios=[left, 3.0],
        layout="constrained",
    )
    for (share_ax, score_ax), name in zip(axes, names, strict=True):
        _shares(share_ax, ds, name)
        _scores(score_ax, ds, tests, name, measure, alpha)
        share_ax.set_title(name, fontsize=10, loc="left")
    handles = [Line2D([], [], color=SEARCH_COLORS[t], marker="o", label=t) for t in TRAIN_SETS]
    handles += [pooled_handle()] if "n_test" in ds.data_vars else []
    fig.legend(
        handles=handles, loc="outside lower center", ncols=len(handles), fontsize=8, frameon=False
    )
    fitted_title(
        fig,
        f"Greedy pools across {ds.sizes['fold']} outer folds, and their nested {measure} "
        f"(* p < {alpha:g}, paired t-test over folds)",
    )
    return fig


def _shares(ax: Axes, ds: xr.Dataset, learner: str) -> None:
    """The share of outer folds whose pool holds each train subset, per test subset."""
    share = ds["chosen"].sel(learner=learner).mean("fold").transpose("test_subset", "train_subset")
    values = share.values.astype(np.float64)
    ax.pcolormesh(values, cmap="Blues", vmin=0, vmax=1.6, edgecolors="white", linewidth=0.5)
    for i, j in np.ndindex(values.shape):
        ax.text(j + 0.5, i + 0.5, f"{values[i, j]:.0%}", ha="center", va="center", fontsize=7)
    n_test, n_train = values.shape
    ax.set_xlim(0, n_train)
    ax.set_ylim(n_test, 0)
    ax.set_xticks(
        np.arange(n_train) + 0.5,
        [str(t) for t in share["train_subset"].values],
        fontsize=8,
        rotation=45 if n_train > 5 else 0,
    )
    ax.set_yticks(np.arange(n_test) + 0.5, [str(s) for s in share["test_subset"].values])
    ax.set_xlabel("train subset: share of folds\nwhose pool holds it", fontsize=8)
    ax.set_ylabel("test subset")


def _scores(
    ax: Axes, ds: xr.Dataset, tests: pd.DataFrame, learner: str, measure: str, alpha: float
) -> None:
    """Mean ± SD over the outer folds of same, greedy and all, per test subset, each with its
    pooled estimate's tick; the tests of greedy against same and all as right-hand labels."""
    subsets = [str(s) for s in ds["test_subset"].values]
    labels = []
    for i, subset in enumerate(subsets):
        for offset, train_set in zip((0.25, 0.5, 0.75), TRAIN_SETS, strict=True):
            folds = ds[measure].sel(learner=learner, test_subset=subset, train_set=train_set)
            bar = mean_sd_bar(np.asarray(folds.values, dtype=np.float64), measure)
            if bar is not None:
                low, mean, high = bar
                color = SEARCH_COLORS[train_set]
                ax.plot([low, high], [i + offset] * 2, color=color, lw=1.5)
                ax.plot(mean, i + offset, "o", color=color, ms=4)
            cell = {"learner": learner, "test_subset": subset, "train_set": train_set}
            rows = ds["n_test"].sel(cell).values if "n_test" in ds.data_vars else None
            gid = f"pooled:{learner}:{subset}:{train_set}"
            pooled_tick(ax, folds.values, rows, i + offset, gid)
        labels.append(
            "\n".join(_difference(tests, learner, subset, r, alpha) for r in ("same", "all"))
        )
    ax.set_ylim(len(subsets), 0)
    ax.set_yticks(np.arange(len(subsets)) + 0.5, labels, fontsize=7)
    ax.yaxis.tick_right()
    ax.tick_params(axis="y", length=0)
    for i in range(1, len(subsets)):
        ax.axhline(i, color="#dddddd", lw=0.8)
    ax.set_xlabel(measure_label(ds, measure), fontsize=8)


def _difference(
    tests: pd.DataFrame, learner: str, subset: str, reference: str, alpha: float
) -> str:
    """``greedy−same −1.37, p=0.0015*``."""
    row = tests.loc[(learner, subset, "greedy", reference)]
    diff = "NA" if not np.isfinite(row["mean_diff"]) else f"{row['mean_diff']:+.3g}"
    star = "*" if np.isfinite(row["p"]) and row["p"] < alpha else ""
    text = f"greedy\u2212{reference} {diff}, {format_pvalue(row['p'])}{star}"
    return text.replace("-", "\u2212")
