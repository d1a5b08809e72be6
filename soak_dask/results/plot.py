"""Paper-style figures of SOAK results (matplotlib only).

- ``plot_soak`` draws Figure 3 of the SOAK paper for one results Dataset: per learner a
  block of panels, one panel per test subset, showing the test error of every fold and its
  mean ± SD when training on the same, other and all subsets, with the paired t-test of
  other−same and all−same written under each row.
- ``plot_learners`` puts the learners side by side: per test subset a panel, per learner a
  row of mean ± SD for each train type, on one x axis (the whole figure of plain K-fold CV).
- ``plot_evaluation`` draws an ``evaluate`` result: per learner a row of its fold (or
  resample) scores, their mean ± SD, and the reserved test split's score with its 95 % interval.
- ``plot_datasets`` draws Figures 4–5 across data sets: per data set, the range over its
  test subsets of the mean difference other−same and all−same, beside the range of log10(p).

Mean ± SD bars stop at the measure's range (``MEASURE_RANGES``: no negative error, no
accuracy above 1).

Each returns the ``matplotlib.figure.Figure`` (made with pyplot, so Jupyter shows it) and
never call ``plt.show()``; close it with ``plt.close(fig)`` when drawing many.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterable, Mapping
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import xarray as xr
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from ..schema import (
    LOWER_IS_BETTER,
    MEASURE_NAMES,
    MEASURE_RANGES,
    MEASURE_UNITS,
    RESULT_DIMS,
    within_range,
)
from .stats import no_tests_reason, pvalues, validate_evaluation, validate_results
from .store import from_dataframe
from .summaries import fold_stats

__all__ = [
    "COLORS",
    "LOWER_IS_BETTER",
    "MEASURE_RANGES",
    "ORDERS",
    "POOLED_MARK",
    "axis_label",
    "check_choice",
    "datasets_table",
    "format_comparison",
    "format_pvalue",
    "mean_sd_bar",
    "measure_label",
    "plot_datasets",
    "plot_evaluation",
    "plot_learners",
    "plot_soak",
    "pooled_handle",
    "pooled_tick",
]

#: Colour of each train type (Okabe-Ito palette, readable by colour-blind readers).
COLORS: dict[str, str] = {"same": "#000000", "other": "#D55E00", "all": "#0072B2"}
#: The pooled estimate's mark in every figure of fold scores: a tick in a colour no train type,
#: train set or test split has (Okabe-Ito's reddish purple).
POOLED_MARK: dict[str, Any] = {"ls": "none", "marker": "|", "ms": 10, "mew": 2, "color": "#CC79A7"}

#: Panel orders of plot_soak.
ORDERS: tuple[str, ...] = ("name", "effect")

_MINUS = "\u2212"  # typographic minus: "other−same" reads as a difference, not a hyphenation
# plot_soak layout in inches. A panel column is wide enough for "other−same +12.3, p<0.0001"
# at 7 pt; the gaps hold 8-9 pt text (y tick labels, panel titles, x tick labels).
_PANEL_WIDTH = 3.0
_ROW_HEIGHT = 0.34  # one train type in a panel
_LEFT, _RIGHT, _PANEL_GAP = 0.6, 0.15, 0.2
_LEGEND, _LEARNER_TITLE, _PANEL_TITLE, _TICKS, _XLABEL = 0.35, 0.3, 0.22, 0.28, 0.3
# The legend's entries fit one row from this figure width (two panel columns) on; a narrower
# figure stacks them, one row of this height each.
_LEGEND_ONE_ROW, _LEGEND_ROW = 6.0, 0.17
_DATASET_ROW = 0.4  # one data set in plot_datasets
# plot_learners: one train type of one learner, the gap between learners, the learner names.
_LEARNER_ROW, _LEARNER_GAP, _NAMES = 0.2, 0.15, 1.5
#: Colour of the reserved test split in plot_evaluation (Okabe-Ito blue; the folds are black).
TEST_SPLIT_COLOR = "#0072B2"


# ------------------------------------------------------------------------------ text


def format_pvalue(p: float) -> str:
    """Short p-value text: ``"p=0.0012"``, ``"p=0.31"``, ``"p<0.0001"`` or ``"p=NA"``.

    Examples
    --------
    >>> [format_pvalue(p) for p in (0.001234, 0.31, 3e-7, float("nan"))]
    ['p=0.0012', 'p=0.31', 'p<0.0001', 'p=NA']
    """
    if not np.isfinite(p):
        return "p=NA"
    if p < 1e-4:
        return "p<0.0001"
    return f"p={p:.2g}"


def format_comparison(compare: str, mean_diff: float, p: float) -> str:
    """Text of one paired test, e.g. ``"other−same +2.31, p=0.0012"``.

    Examples
    --------
    >>> format_comparison("all", -0.5, 0.31)
    'all−same −0.5, p=0.31'
    """
    diff = "NA" if not np.isfinite(mean_diff) else f"{mean_diff:+.3g}".replace("-", _MINUS)
    return f"{compare}{_MINUS}same {diff}, {format_pvalue(p)}"


def _measure_label(ds: xr.Dataset, measure: str) -> str:
    """Axis label of a measure: its long_name attr, else the package's name for it."""
    return str(ds[measure].attrs.get("long_name", MEASURE_NAMES.get(measure, measure)))


def axis_label(ds: xr.Dataset, measure: str) -> str:
    """A measure's axis label: its name and unit (`measure_label`), and which way is better,
    in one parenthesis.

    >>> axis_label(xr.Dataset(), "auc")
    'area under the ROC curve (0 to 1; higher is better)'
    """
    label = measure_label(ds, measure)
    better = "lower" if _base_measure(measure) in LOWER_IS_BETTER else "higher"
    if label.endswith(")"):
        return f"{label[:-1]}; {better} is better)"
    return f"{label} ({better} is better)"


def fitted_title(fig: Figure, text: str, fontsize: float = 9) -> None:
    """``fig.suptitle(text)``, each line wrapped to the figure's width: a figure of one narrow
    panel would cut a long title at both edges."""
    # About 0.55 em per character of the default sans-serif font.
    width = max(20, int(fig.get_figwidth() * 72 / (0.55 * fontsize)))
    lines = [textwrap.fill(line, width) for line in text.splitlines()]
    fig.suptitle("\n".join(lines), fontsize=fontsize)


def mean_sd_bar(values: np.ndarray, measure: str) -> tuple[float, float, float] | None:
    """(low, mean, high) of the mean ± SD bar of fold `values`, clipped to the measure's range.

    NaN folds are left out; one fold gives a bar of length 0; no finite fold gives None.

    Examples
    --------
    >>> [round(v, 2) for v in mean_sd_bar(np.array([0.0, 0.0, 30.0]), "error")]  # SD 17.32
    [0.0, 10.0, 27.32]
    """
    finite = values[np.isfinite(values)]
    if not finite.size:
        return None
    mean = float(finite.mean())
    sd = float(finite.std(ddof=1)) if finite.size > 1 else 0.0
    low, high = within_range(measure, mean - sd, mean + sd)
    return low, mean, high


# ------------------------------------------------------------------------------ plot_soak


def _select_learners(ds: xr.Dataset, learners: str | Iterable[str] | None) -> list[str]:
    """Learner names to draw, in the order asked (default: the coordinate's order)."""
    available = [str(v) for v in ds["learner"].values]
    if learners is None:
        return available
    wanted = [learners] if isinstance(learners, str) else [str(v) for v in learners]
    unknown = [name for name in wanted if name not in available]
    if unknown or not wanted:
        raise ValueError(
            f"learners={wanted!r} names {unknown or 'no learner'}; "
            f"the results have learners {available}"
        )
    return wanted


def check_choice(name: str, value: Any, choices: tuple[str, ...]) -> None:
    """Raise a ValueError naming option `name` unless `value` is one of `choices`."""
    if value not in choices:
        raise ValueError(f"{name}={value!r} is not supported; choose one of {list(choices)}")


def _other_effect(table: pd.DataFrame, index: str, value: str) -> pd.Series:
    """Column `value` of the other−same rows per `index`; all−same where other is undefined.

    With one subset there is no "other", but the order should still follow an effect.
    """
    wide = table.pivot(index=index, columns="compare", values=value)
    effect = wide["other"] if "other" in wide else pd.Series(np.nan, index=wide.index)
    if "all" in wide:
        effect = effect.fillna(wide["all"])
    return effect


def _subset_order(subsets: list[str], tests: pd.DataFrame, order: str) -> list[str]:
    """Test subsets by name, or by decreasing effect with undefined effects last."""
    by_name = sorted(subsets)
    if order == "name" or tests.empty:  # no tests (plain K-fold CV): no effect to sort by
        return by_name
    effect = _other_effect(tests, "test_subset", "mean_diff").abs()
    # sorted() is stable, so equal effects keep name order.
    return sorted(by_name, key=lambda s: -effect[s] if np.isfinite(effect[s]) else math.inf)


def _draw_panel(
    ax: Axes,
    values: np.ndarray,
    sizes: np.ndarray | None,
    train_types: list[str],
    texts: dict[str, str],
    title: str,
    measure: str,
) -> None:
    """One test subset: per train type (a row, same on top) fold dots, mean ± SD and the
    pooled estimate.

    `values` and `sizes` (test rows; None: no pooled mark) are (fold, train_type); `texts`
    maps a compare train type to its test's text.
    """
    for row, train_type in enumerate(train_types):
        rows = None if sizes is None else sizes[:, row]
        _draw_row(ax, row, train_type, values[:, row], rows, texts.get(train_type), measure)
    ax.set_title(title, fontsize=9, pad=3, y=1.0)  # a fixed y skips costly auto-placement
    ax.grid(axis="x", color="#dddddd", lw=0.6)
    ax.set_axisbelow(True)
    ax.tick_params(labelsize=8)
    ax.xaxis.set_major_locator(MaxNLocator(nbins=5))


def _draw_row(
    ax: Axes,
    row: int,
    train_type: str,
    folds: np.ndarray,
    sizes: np.ndarray | None,
    text: str | None,
    measure: str,
) -> None:
    """One train type's row of a panel. Dots sit just above the row's line, mean ± SD (clipped
    to the measure's range) and the pooled estimate (``summaries.fold_stats``: every test row
    once, a purple tick) on it and the text just under it, so they never overlap."""
    color = COLORS.get(train_type, "#555555")
    y = np.full(folds.shape, row - 0.22)
    ax.plot(folds, y, "o", ms=4, mfc="none", mew=1, color=color, gid=f"folds:{train_type}")
    bar = mean_sd_bar(folds, measure)
    if bar is not None:
        ax.plot(bar, [row] * 3, "-", lw=2, color=color, marker="D", ms=4, markevery=[1],
                gid=f"mean_sd:{train_type}")  # fmt: skip
    pooled_tick(ax, folds, sizes, row, f"pooled:{train_type}")
    if text is not None:
        ax.text(0.02, row + 0.3, text, transform=ax.get_yaxis_transform(), fontsize=7,
                va="center", ha="left", color=color, gid=f"pvalue:{train_type}")  # fmt: skip


def pooled_tick(ax: Axes, values: np.ndarray, sizes: np.ndarray | None, y: float, gid: str) -> None:
    """The pooled estimate of ``values`` (``summaries.fold_stats``: each weighted by its test
    rows ``sizes``, every test row once) as a tick at height ``y``; none without sizes."""
    if sizes is None:
        return
    pooled = fold_stats(np.asarray(values, np.float64), np.asarray(sizes, np.float64))[3]
    if np.isfinite(pooled):
        ax.plot([pooled], [y], **POOLED_MARK, gid=gid)


def pooled_handle() -> Line2D:
    """The legend entry of the pooled estimate's tick."""
    return Line2D([], [], **POOLED_MARK, label="pooled (every test row once)")


def _learner_block(
    fig: Figure,
    top: float,
    learner: str,
    values: xr.DataArray,
    sizes: xr.DataArray | None,
    tests: pd.DataFrame,
    subsets: list[str],
    ncols: int,
    measure: str,
    xlabel: str,
) -> float:
    """Draw one learner's wrapped grid of panels from `top` (inches below the figure's top).

    The layout is computed in inches rather than by a layout engine: constrained layout
    takes seconds per draw for 100 panels, and every size here is known in advance.
    Returns the inches from the figure's top to the end of this block.
    """
    width, height = fig.get_size_inches()
    train_types = [str(t) for t in values["train_type"].values]
    axes, grid_bottom = _panel_grid(fig, top, math.ceil(len(subsets) / ncols), ncols, train_types)
    texts: dict[str, dict[str, str]] = {s: {} for s in subsets}
    for row in tests.itertuples(index=False):
        texts[row.test_subset][row.compare] = format_comparison(row.compare, row.mean_diff, row.p)
    for i, subset in enumerate(subsets):
        ax = axes.flat[i]
        ax.set_gid(f"panel:{learner}:{subset}")  # names the panel, also as an SVG element id
        # Tick labels under every panel: in a tall grid the reader should not count rows.
        ax.xaxis.set_tick_params(labelbottom=True)
        cell = {"test_subset": subset}
        _draw_panel(
            ax,
            values.sel(cell).transpose("fold", "train_type").values,
            None if sizes is None else sizes.sel(cell).transpose("fold", "train_type").values,
            train_types,
            texts[subset],
            f"test subset {subset}",
            measure,
        )
    for ax in axes.flat[len(subsets) :]:
        ax.remove()
    first = axes.flat[0]
    first.set_yticks(range(len(train_types)), train_types)
    # Same on top; the extra room at the bottom holds the last row's p-value text.
    first.set_ylim(len(train_types) - 0.4, -0.55)
    fig.text(
        0.005,
        1 - (top + 0.05) / height,
        f"learner: {learner}",
        fontsize=11,
        fontweight="bold",
        va="top",
        gid=f"learner:{learner}",
    )
    fig.text(
        (_LEFT + (width - _LEFT - _RIGHT) / 2) / width,
        1 - (grid_bottom + _TICKS) / height,
        xlabel,
        fontsize=9,
        ha="center",
        va="top",
    )
    return grid_bottom + _TICKS + _XLABEL


def _panel_grid(
    fig: Figure, top: float, nrows: int, ncols: int, train_types: list[str]
) -> tuple[np.ndarray, float]:
    """The ``nrows`` x ``ncols`` panels of one learner's block from ``top`` (inches below the
    figure's top), one row of each panel per train type, sharing their axes; and the inches
    from the figure's top to the grid's bottom."""
    width, height = fig.get_size_inches()
    axes_height = len(train_types) * _ROW_HEIGHT
    grid_top = top + _LEARNER_TITLE + _PANEL_TITLE
    grid_bottom = grid_top + nrows * axes_height + (nrows - 1) * (_PANEL_TITLE + _TICKS)
    axes_width = (width - _LEFT - _RIGHT - (ncols - 1) * _PANEL_GAP) / ncols
    grid = fig.add_gridspec(
        nrows,
        ncols,
        left=_LEFT / width,
        right=1 - _RIGHT / width,
        top=1 - grid_top / height,
        bottom=1 - grid_bottom / height,
        wspace=_PANEL_GAP / axes_width,
        hspace=(_PANEL_TITLE + _TICKS) / axes_height,
    )
    return grid.subplots(sharex=True, sharey=True, squeeze=False), grid_bottom


def _legend_handles(tests: bool, pooled: bool) -> list[Line2D]:
    """Legend entries of plot_soak; the text entry only when there are tests to write, the
    pooled estimate's only when the results have each fold's test rows."""
    handles = [
        Line2D([], [], ls="none", marker="o", mfc="none", color="#555555", label="one test fold"),
        Line2D([], [], ls="-", lw=2, marker="D", ms=4, color="#555555", label="mean ± SD"),
    ]
    if pooled:
        handles.append(pooled_handle())
    if tests:
        handles.append(Line2D([], [], ls="none", label="text: mean difference, paired t-test p"))
    return handles


def _legend_rows(width: float, n_entries: int) -> int:
    """Rows of plot_soak's legend: one, or one per entry when the figure is too narrow."""
    return 1 if width >= _LEGEND_ONE_ROW else n_entries


def _soak_figsize(
    n_learners: int, n_subsets: int, ncols: int, n_types: int, n_entries: int
) -> tuple[float, float]:
    """Figure size (inches) that `_learner_block` and the legend fill exactly."""
    nrows = math.ceil(n_subsets / ncols)
    grid = nrows * n_types * _ROW_HEIGHT + (nrows - 1) * (_PANEL_TITLE + _TICKS)
    block = _LEARNER_TITLE + _PANEL_TITLE + grid + _TICKS + _XLABEL
    width = _LEFT + ncols * _PANEL_WIDTH - _PANEL_GAP + _RIGHT
    return width, _legend_height(width, n_entries) + n_learners * block


def _legend_height(width: float, n_entries: int) -> float:
    return _LEGEND + (_legend_rows(width, n_entries) - 1) * _LEGEND_ROW


def plot_soak(
    ds: xr.Dataset,
    measure: str = "error",
    learners: str | Iterable[str] | None = None,
    *,
    order: str = "name",
    ncols: int | None = None,
) -> Figure:
    """Figure 3 of the SOAK paper: each fold's test score for same, other and all.

    Per learner, a block of panels (wrapped into rows of at most `ncols`), one per test subset.
    In a panel each train type is a row (same on top): hollow dots are the folds' scores, the
    diamond and bar their mean ± SD (clipped to the measure's range, `MEASURE_RANGES`), the
    purple tick the pooled estimate (each fold weighted by its test rows: every test row once,
    ``summary``'s ``weighted_mean``; where the two are far apart, small folds sway the mean), and
    the text under the other and all rows gives the mean difference to same and the
    two-sided paired t-test p over folds (``soak_dask.results.stats.pvalues``). Panels of one
    learner share their x axis. Results with nothing to compare (plain K-fold CV) get no text; see
    `plot_learners` for them.

    Parameters
    ----------
    ds : xarray.Dataset
        SOAK results (dims ``learner``, ``test_subset``, ``fold``, ``train_type``).
    measure : str, default "error"
        Data variable to draw (test error in percent for classification).
    learners : str or iterable of str, optional
        Learners to draw, in this order. Default: all.
    order : {"name", "effect"}, default "name"
        Panel order within each learner: test subsets by name, or by decreasing
        |mean difference other−same| of that learner (all−same when other is undefined,
        e.g. one subset; undefined effects last).
    ncols : int, optional
        Panels per row. Default ``min(number of test subsets, 5)``.

    Returns
    -------
    matplotlib.figure.Figure
        Sized from the grid: 3 in per panel column, about 1.6 in per panel row.

    Raises
    ------
    ValueError
        If `ds` is not a results Dataset, `measure` is missing, a learner is unknown, or
        `order`/`ncols` is invalid.

    Examples
    --------
    >>> fig = plot_soak(results, "error", order="effect")  # doctest: +SKIP
    >>> fig.savefig("soak_error.png")  # doctest: +SKIP
    """
    validate_results(ds, measure)
    check_choice("order", order, ORDERS)
    chosen = _select_learners(ds, learners)
    subsets = [str(s) for s in ds["test_subset"].values]
    ncols = _panel_columns(ncols, len(subsets), 5)
    tests = _tests(ds, measure)
    values, sizes = _values_and_sizes(ds, measure, subsets)
    handles = _legend_handles(not tests.empty, sizes is not None)
    figsize = _soak_figsize(len(chosen), len(subsets), ncols, ds.sizes["train_type"], len(handles))
    fig = plt.figure(figsize=figsize)
    xlabel = _measure_label(ds, measure)
    top = _legend_height(figsize[0], len(handles))
    for learner in chosen:
        learner_tests = tests[tests["learner"] == learner]
        top = _learner_block(
            fig,
            top,
            learner,
            values.sel(learner=learner),
            None if sizes is None else sizes.sel(learner=learner),
            learner_tests,
            _subset_order(subsets, learner_tests, order),
            ncols,
            measure,
            xlabel,
        )
    fig.legend(
        handles=handles,
        loc="upper center",
        ncols=len(handles) // _legend_rows(figsize[0], len(handles)),
        frameon=False,
        fontsize=8,
    )
    return fig


def _values_and_sizes(
    ds: xr.Dataset, measure: str, subsets: list[str]
) -> tuple[xr.DataArray, xr.DataArray | None]:
    """`measure` and each of its folds' test rows (None without ``n_test``), learners and
    test subsets named by str."""
    names = {"learner": [str(v) for v in ds["learner"].values], "test_subset": subsets}
    values = ds[measure].assign_coords(names)
    if "n_test" not in ds.data_vars:
        return values, None
    return values, ds["n_test"].broadcast_like(ds[measure]).assign_coords(names)


def _tests(ds: xr.Dataset, measure: str) -> pd.DataFrame:
    """pvalues() of `measure` with names as str; no rows when there is nothing to compare
    (plain K-fold CV), without the warning meant for users who ask for p-values."""
    if no_tests_reason(ds):
        return pd.DataFrame(columns=["learner", "test_subset", "compare", "mean_diff", "p"])
    tests = pvalues(ds, measure)
    return tests.assign(
        test_subset=tests["test_subset"].astype(str), learner=tests["learner"].astype(str)
    )


def _panel_columns(ncols: int | None, n_panels: int, default: int) -> int:
    """Panels per row: `ncols` (checked) or `default`, at most `n_panels`."""
    if ncols is None:
        ncols = default
    if isinstance(ncols, bool) or not isinstance(ncols, int) or ncols < 1:
        raise ValueError(f"ncols must be a positive integer, got ncols={ncols!r}")
    return min(ncols, n_panels)


# ------------------------------------------------------------------------------ plot_learners


def plot_learners(
    ds: xr.Dataset,
    measure: str = "error",
    learners: str | Iterable[str] | None = None,
    *,
    ncols: int | None = None,
) -> Figure:
    """The learners side by side: per test subset a panel, per learner a row.

    In a learner's row, each train type (same on top, coloured as in `plot_soak`) shows its
    mean ± SD over folds (diamond and bar, clipped to the measure's range, see
    `MEASURE_RANGES`) and the folds' scores (small hollow dots). All panels share one x axis,
    so learners compare within and across test subsets. Results of plain K-fold CV (one
    subset, ``same`` only) give one panel with one row per learner.

    Parameters
    ----------
    ds : xarray.Dataset
        SOAK results (dims ``learner``, ``test_subset``, ``fold``, ``train_type``).
    measure : str, default "error"
    learners : str or iterable of str, optional
        Learners to draw, top to bottom. Default: all, in the results' order.
    ncols : int, optional
        Panels per row. Default ``min(number of test subsets, 3)``.

    Returns
    -------
    matplotlib.figure.Figure
        About 3 in wide per panel column, 0.2 in high per learner and train type.

    Raises
    ------
    ValueError
        If `ds` is not a results Dataset, `measure` is missing, a learner is unknown, or
        `ncols` is invalid.

    Examples
    --------
    >>> fig = plot_learners(results, "auc")  # doctest: +SKIP
    """
    validate_results(ds, measure)
    chosen = _select_learners(ds, learners)
    subsets = [str(s) for s in ds["test_subset"].values]
    ncols = _panel_columns(ncols, len(subsets), 3)
    nrows = math.ceil(len(subsets) / ncols)
    train_types = [str(t) for t in ds["train_type"].values]
    panel = len(chosen) * (len(train_types) * _LEARNER_ROW + _LEARNER_GAP)
    fig, axes = plt.subplots(
        nrows,
        ncols,
        # One panel (plain K-fold CV) is drawn wider: it is the whole comparison.
        figsize=(_NAMES + max(ncols * _PANEL_WIDTH, 4.5), 0.9 + nrows * (panel + 0.55)),
        sharex=True,
        sharey=True,
        squeeze=False,
        layout="constrained",
    )
    values, sizes = _values_and_sizes(ds, measure, subsets)
    plain = bool(no_tests_reason(ds)) and len(subsets) == 1
    for ax, subset in zip(axes.flat, subsets, strict=False):
        ax.set_gid(f"learners:{subset}")
        rows = None if sizes is None else sizes.sel(test_subset=subset)
        _draw_learners(ax, values.sel(test_subset=subset), rows, chosen, train_types, measure)
        title = f"plain K-fold CV, {ds.sizes['fold']} folds" if plain else f"test subset {subset}"
        ax.set_title(title, fontsize=9)
        ax.xaxis.set_tick_params(labelbottom=True)  # under every panel of a wrapped grid
    for ax in axes.flat[len(subsets) :]:
        ax.remove()
    axes.flat[0].set_yticks(range(len(chosen)), chosen)
    axes.flat[0].set_ylim(len(chosen) - 0.5, -0.5)
    fig.supxlabel(axis_label(ds, measure), fontsize=9)
    handles = [
        Line2D([], [], ls="none", marker="o", mfc="none", color="#555555", label="one test fold"),
        Line2D([], [], lw=2, marker="D", ms=4, color="#555555", label="mean ± SD over folds"),
        *([pooled_handle()] if sizes is not None else []),
    ]
    if not plain:
        handles += [
            Line2D([], [], lw=2, color=COLORS.get(t, "#555555"), label=f"train on {t}")
            for t in train_types
        ]
    fig.legend(
        handles=handles,
        loc="outside upper center",
        ncols=len(handles) if ncols > 1 else 2,
        frameon=False,
        fontsize=8,
    )
    return fig


def _draw_learners(
    ax: Axes,
    values: xr.DataArray,
    sizes: xr.DataArray | None,
    learners: list[str],
    train_types: list[str],
    measure: str,
) -> None:
    """One test subset of plot_learners: learner i at y = i, its train types just around it
    (`sizes`: test rows, for the pooled estimate's tick)."""
    step = 0.8 / len(train_types)
    for i, learner in enumerate(learners):
        for j, train_type in enumerate(train_types):
            y = i + (j - (len(train_types) - 1) / 2) * step
            cell = {"learner": learner, "train_type": train_type}
            folds = values.sel(cell).values
            rows = None if sizes is None else sizes.sel(cell).values
            pooled_tick(ax, folds, rows, y, f"pooled:{learner}:{train_type}")
            color = COLORS.get(train_type, "#555555")
            ax.plot(
                folds,
                np.full(folds.shape, y),
                "o",
                ms=3,
                mfc="none",
                mew=0.7,
                alpha=0.6,
                color=color,
                gid=f"folds:{learner}:{train_type}",
            )
            bar = mean_sd_bar(folds, measure)
            if bar is not None:
                ax.plot(
                    bar,
                    [y] * 3,
                    "-",
                    lw=2,
                    marker="D",
                    ms=4,
                    markevery=[1],
                    color=color,
                    gid=f"mean_sd:{learner}:{train_type}",
                )
    ax.grid(axis="x", color="#dddddd", lw=0.6)
    ax.set_axisbelow(True)
    ax.tick_params(labelsize=8)
    ax.xaxis.set_major_locator(MaxNLocator(nbins=5))


# ------------------------------------------------------------------------------ plot_evaluation

# Names of evaluate's designs, for titles.
_OUTER_TITLES = {
    "cv": "{k}-fold CV",
    "repeated_cv": "{k}-fold CV × {r} repeats",
    "subsampling": "{r} random train/test splits",
    "loo": "leave-one-out, {k} folds",
    "lodo": "leave one group out, {k} groups",
    "bootstrap": "{r} bootstrap resamples, scored out of bag",
}


def _base_measure(name: str) -> str:
    """The measure an evaluate variable estimates: ``error`` of ``error_632`` and
    ``error_632plus``."""
    return name.removesuffix("plus").removesuffix("_632")


def measure_label(ds: xr.Dataset, measure: str) -> str:
    """Name of an evaluate measure: its measure's long name, and which bootstrap estimate.

    Examples
    --------
    >>> measure_label(xr.Dataset(), "error_632plus")
    'test error (percent), .632+ estimate'
    """
    base = _base_measure(measure)
    label = _measure_label(ds, base) if base in ds else MEASURE_NAMES.get(base, base)
    if measure == base:
        return label
    estimate = measure.removeprefix(base + "_").replace("632", ".632").replace("plus", "+")
    return f"{label}, {estimate} estimate"


def plot_evaluation(ds: xr.Dataset, measure: str = "error") -> Figure:
    """An ``evaluate`` result: one row per learner, on one x axis.

    In a learner's row, each resampling cell's score -- a (repeat, fold) of K-fold CV, a split
    of subsampling, an out-of-bag resample of the bootstrap -- is a small hollow dot, and their
    mean ± SD a diamond and bar (clipped to the measure's range, see `MEASURE_RANGES`). With a
    reserved test split, its score (one per learner, by the final model) is a square with its
    bootstrap 95 % interval, just under the row, in `TEST_SPLIT_COLOR`.

    Parameters
    ----------
    ds : xarray.Dataset
        Results of ``soak_dask.evaluate`` (dims ``learner``, ``repeat``, ``fold``).
    measure : str, default "error"
        A measure of the results, or a bootstrap estimate of one (``error_632``).

    Returns
    -------
    matplotlib.figure.Figure
        About 6 in wide, 0.2 in high per learner (0.4 with a test split).

    Raises
    ------
    ValueError
        If `ds` is not an evaluate result or lacks `measure`.

    Examples
    --------
    >>> fig = plot_evaluation(ds, "auc")  # doctest: +SKIP
    """
    (measure,) = validate_evaluation(ds, [measure])
    base = _base_measure(measure)
    learners = [str(v) for v in ds["learner"].values]
    values = ds[measure].transpose("learner", "repeat", "fold").values.reshape(len(learners), -1)
    # The pooled estimate of a measure averaged over rows (not of .632 estimates).
    pooled = measure == base and "n_test" in ds.data_vars
    sizes = _cell_rows(ds, measure) if pooled else None
    test = f"test_{measure}"
    interval = ds[test].sel(interval=["estimate", "low", "high"]) if test in ds else None
    rows = 2 if interval is not None else 1
    fig, ax = plt.subplots(
        figsize=(_NAMES + 4.5, 0.9 + 0.55 + len(learners) * (rows * _LEARNER_ROW + _LEARNER_GAP)),
        layout="constrained",
    )
    offset = 0.2 if interval is not None else 0.0  # the folds above, the test split under
    for i, learner in enumerate(learners):
        cells = values[i][np.isfinite(values[i])]
        y = i - offset
        if sizes is not None:
            pooled_tick(ax, values[i], sizes[i], y, f"pooled:{learner}")
        ax.plot(
            cells, np.full(cells.shape, y), "o", ms=3, mfc="none", mew=0.7, alpha=0.6,
            color="#000000", gid=f"cells:{learner}",
        )  # fmt: skip
        bar = mean_sd_bar(cells, base)
        if bar is not None:
            ax.plot(
                bar, [y] * 3, "-", lw=2, marker="D", ms=4, markevery=[1], color="#000000",
                gid=f"mean_sd:{learner}",
            )  # fmt: skip
        if interval is not None:
            estimate, low, high = interval.sel(learner=ds["learner"].values[i]).values
            if np.isfinite(estimate):
                ax.plot(
                    [low, estimate, high], [i + offset] * 3, "-", lw=2, marker="s", ms=4,
                    markevery=[1], color=TEST_SPLIT_COLOR, gid=f"test_split:{learner}",
                )  # fmt: skip
    ax.set_yticks(range(len(learners)), learners)
    ax.set_ylim(len(learners) - 0.5, -0.5)
    ax.grid(axis="x", color="#dddddd", lw=0.6)
    ax.set_axisbelow(True)
    ax.tick_params(labelsize=8)
    ax.xaxis.set_major_locator(MaxNLocator(nbins=6))
    _label_evaluation(fig, ax, ds, measure, interval is not None, pooled)
    return fig


def _cell_rows(ds: xr.Dataset, measure: str) -> np.ndarray:
    """Test rows of each (repeat, fold) cell of each learner, as ``plot_evaluation`` lays out
    `measure`'s values."""
    rows = ds["n_test"].broadcast_like(ds[measure]).transpose("learner", "repeat", "fold")
    return rows.values.reshape(ds.sizes["learner"], -1)


def _label_evaluation(
    fig: Figure, ax: Axes, ds: xr.Dataset, measure: str, test: bool, pooled: bool
) -> None:
    """Title (the outer design), x label and legend of ``plot_evaluation``'s figure; ``test``:
    the figure shows a test split; ``pooled``: the pooled estimates' ticks."""
    base = _base_measure(measure)
    a = ds.attrs
    outer = str(a.get("outer", ""))
    title = _OUTER_TITLES.get(outer, outer or "evaluation").format(
        k=a.get("outer_folds", ds.sizes["fold"]), r=ds.sizes["repeat"]
    )
    if a.get("group"):
        title += f", groups of {a['group']} kept whole"
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(axis_label(ds, measure), fontsize=9)
    if outer == "bootstrap":
        one = "one resample" + (" (out of bag)" if measure == base else "")
    else:
        one = "one test fold"
    handles = [
        Line2D([], [], ls="none", marker="o", mfc="none", color="#555555", label=one),
        Line2D([], [], lw=2, marker="D", ms=4, color="#000000", label="mean ± SD"),
        *([pooled_handle()] if pooled else []),
    ]
    if test:
        split = "test split, 95 % interval"
        handles.append(Line2D([], [], lw=2, marker="s", ms=4, color=TEST_SPLIT_COLOR, label=split))
    fig.legend(handles=handles, loc="outside upper center", ncols=len(handles), frameon=False,
               fontsize=8)  # fmt: skip


# ------------------------------------------------------------------------------ plot_datasets


def _as_datasets(results: Mapping[str, xr.Dataset] | pd.DataFrame) -> dict[str, xr.Dataset]:
    """Name → results Dataset, from a mapping or a tidy frame with a ``data`` column."""
    if isinstance(results, pd.DataFrame):
        if "data" not in results.columns:
            raise ValueError(
                "a results frame needs a 'data' column naming each row's data set, and the "
                f"columns {list(RESULT_DIMS)} plus one per measure; got {list(results.columns)}"
            )
        return {
            str(name): from_dataframe(group.drop(columns="data"))
            for name, group in results.groupby("data", sort=False)
        }
    if not isinstance(results, Mapping):
        raise TypeError(
            "results must be a mapping {data set name: results Dataset} or a tidy DataFrame "
            f"with a 'data' column, got {type(results).__name__}"
        )
    if not results:
        raise ValueError("results is empty: pass at least one data set")
    return {str(name): ds for name, ds in results.items()}


def _common_learner(datasets: dict[str, xr.Dataset], learner: str | None) -> str:
    """The learner to compare across data sets; every data set must have it."""
    per_data = {name: [str(v) for v in ds["learner"].values] for name, ds in datasets.items()}
    if learner is not None:
        lacking = [name for name, names in per_data.items() if learner not in names]
        if lacking:
            raise ValueError(
                f"learner={learner!r} is missing from data set(s) {lacking}; "
                f"their learners: { {n: per_data[n] for n in lacking} }"
            )
        return learner
    common = set.intersection(*(set(names) for names in per_data.values()))
    if len(common) != 1:
        raise ValueError(
            f"learner=None is ambiguous: the data sets share the learners {sorted(common)}; "
            "pass learner=<one of them>"
            if common
            else "the data sets share no learner; pass data sets that all have one learner"
        )
    return common.pop()


def datasets_table(
    results: Mapping[str, xr.Dataset] | pd.DataFrame,
    measure: str = "error",
    learner: str | None = None,
) -> pd.DataFrame:
    """Per data set and compare type, the range over test subsets of the paired tests.

    Parameters
    ----------
    results : mapping or pandas.DataFrame
        ``{data set name: results Dataset}``, or a tidy frame with columns ``data``,
        ``learner``, ``test_subset``, ``fold``, ``train_type`` and the measure.
    measure : str, default "error"
    learner : str, optional
        Learner to compare; needed when the data sets share more than one.

    Returns
    -------
    pandas.DataFrame
        One row per data set × compare (``other``, ``all``), in the order of `results`, with
        ``data``, ``learner``, ``compare``, ``n_subsets`` (test subsets with a defined difference),
        ``diff_min``, ``diff_mean``, ``diff_max`` (of the mean difference compare−same) and
        ``log10p_min``, ``log10p_mean``, ``log10p_max`` (of the paired t-test p; p=0 counts
        as the smallest positive float).
    """
    datasets = _as_datasets(results)
    for name, ds in datasets.items():
        try:
            validate_results(ds, measure)
        except (TypeError, ValueError) as err:
            raise type(err)(f"data set {name!r}: {err}") from err
    learner = _common_learner(datasets, learner)
    rows = []
    for name, ds in datasets.items():
        tests = pvalues(ds, measure)
        tests = tests[tests["learner"].astype(str) == learner]
        for compare, part in tests.groupby("compare", sort=False):
            diff = part["mean_diff"].dropna()
            p = part["p"].dropna()
            log_p = np.log10(np.maximum(p.to_numpy(), np.finfo(np.float64).tiny))
            rows.append(
                {
                    "data": name,
                    "learner": learner,
                    "compare": compare,
                    "n_subsets": diff.size,
                    "diff_min": diff.min() if diff.size else math.nan,
                    "diff_mean": diff.mean() if diff.size else math.nan,
                    "diff_max": diff.max() if diff.size else math.nan,
                    "log10p_min": log_p.min() if log_p.size else math.nan,
                    "log10p_mean": log_p.mean() if log_p.size else math.nan,
                    "log10p_max": log_p.max() if log_p.size else math.nan,
                }
            )
    return pd.DataFrame(rows)


def _dataset_order(table: pd.DataFrame) -> list[str]:
    """Data sets by decreasing mean other−same difference (all−same if other is undefined)."""
    effect = _other_effect(table, "data", "diff_mean")
    names = list(dict.fromkeys(table["data"]))
    return sorted(names, key=lambda n: -effect[n] if np.isfinite(effect[n]) else math.inf)


def _draw_ranges(ax: Axes, table: pd.DataFrame, rows: dict[str, int], column: str) -> None:
    """Min–max segment and mean dot per data set, one colour and vertical offset per compare."""
    compares = list(dict.fromkeys(table["compare"]))
    for k, compare in enumerate(compares):
        part = table[table["compare"] == compare]
        y = part["data"].map(rows).to_numpy() + 0.18 * (k - (len(compares) - 1) / 2)
        color = COLORS.get(compare, "#555555")
        ax.hlines(
            y,
            part[f"{column}_min"],
            part[f"{column}_max"],
            color=color,
            lw=2.5,
            label=f"{compare}{_MINUS}same",
            gid=f"{column}:{compare}",
        )
        ax.plot(part[f"{column}_mean"], y, "o", ms=5, color=color, gid=f"{column}_mean:{compare}")
    ax.grid(axis="x", color="#dddddd", lw=0.6)
    ax.set_axisbelow(True)


def plot_datasets(
    results: Mapping[str, xr.Dataset] | pd.DataFrame,
    measure: str = "error",
    learner: str | None = None,
    *,
    alpha: float = 0.05,
) -> Figure:
    """Figures 4–5 of the SOAK paper: same vs other and all across data sets.

    One row per data set, ordered by decreasing mean difference other−same over its test
    subsets (for error: the data sets whose subsets are least alike on top). Left: over the
    data set's test subsets, the min–max segment of the mean difference compare−same with a
    dot at its mean, for other (orange) and all (blue). Right: the same for log10 of the
    paired t-test p, with a dashed line at log10(`alpha`): segments left of it hold
    significant test subsets.

    Parameters
    ----------
    results : mapping or pandas.DataFrame
        ``{data set name: results Dataset}``, or a tidy frame with a ``data`` column (see
        ``datasets_table``).
    measure : str, default "error"
    learner : str, optional
        Learner to compare; needed when the data sets share more than one.
    alpha : float, default 0.05
        Significance level drawn on the p panel.

    Returns
    -------
    matplotlib.figure.Figure
        Two panels sharing the y axis; about 0.4 in of height per data set.

    Raises
    ------
    TypeError
        If `results` is neither a mapping nor a DataFrame, or holds something else than
        Datasets.
    ValueError
        If a data set is not a results Dataset, lacks `measure` or `learner`, or `learner` is
        None while the data sets share several learners.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, got alpha={alpha!r}")
    table = datasets_table(results, measure, learner)
    names = _dataset_order(table)
    rows = {name: i for i, name in enumerate(names)}
    fig, (ax_diff, ax_p) = plt.subplots(
        1,
        2,
        sharey=True,
        figsize=(10, len(names) * _DATASET_ROW + 1.4),
        layout="constrained",
        gridspec_kw={"width_ratios": [3, 2]},
    )
    _draw_ranges(ax_diff, table, rows, "diff")
    _draw_ranges(ax_p, table, rows, "log10p")
    ax_diff.axvline(0, color="#888888", lw=1)
    ax_p.axvline(math.log10(alpha), color="#888888", lw=1, ls="--")
    ax_p.text(
        math.log10(alpha),
        1.0,
        f" p={alpha:g}",
        transform=ax_p.get_xaxis_transform(),
        va="bottom",
        fontsize=8,
        color="#555555",
    )
    ax_diff.set_yticks(range(len(names)), names)
    ax_diff.set_ylim(len(names) - 0.5, -0.5)
    unit = MEASURE_UNITS.get(measure)
    unit = f" ({unit})" if unit else ""
    ax_diff.set_xlabel(f"mean difference in {measure}{unit}, compare {_MINUS} same")
    ax_p.set_xlabel("log10(p), paired t-test over folds")
    fig.legend(
        *ax_diff.get_legend_handles_labels(),
        loc="outside upper center",
        ncols=2,
        frameon=False,
        title=f"learner {table['learner'].iat[0]}; over its test subsets: min–max, dot = mean",
    )
    return fig
