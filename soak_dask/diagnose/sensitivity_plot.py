"""The figure of ``split_sensitivity``: per train ratio, a box of the trials' CV estimates beside
a box of their test scores, with the variance tests, the share of consistent trials and the
CV–test correlation written above, and the recommended ratios starred.

matplotlib is imported when a figure is drawn, not with the package.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

#: Colours of the two samples (Okabe-Ito, readable by colour-blind readers).
COLORS = {"cv": "#0072B2", "test": "#D55E00"}
_WIDTH = 0.32  # of a box; the pair of a ratio sits at ratio index ± _WIDTH / 2 + a gap


def plot_split_sensitivity(ds: xr.Dataset, ax: Any = None) -> Any:
    """Box plots of the CV estimates and the test scores over trials, one pair per ratio.

    Parameters
    ----------
    ds : xarray.Dataset
        From ``soak_dask.split_sensitivity``.
    ax : matplotlib Axes, optional
        Where to draw; default: a new figure.

    Returns
    -------
    matplotlib.figure.Figure
        The figure drawn in (made with pyplot when ``ax`` is None, so Jupyter shows it).

    Each box shows the trials of one ratio (the median, quartiles, whiskers to 1.5 IQR), with
    the trials as dots. Above each pair: the p-values of Levene's and the F test (CV estimates
    against test scores), the share of trials whose test score lies in the CV prediction
    interval ("in PI") and the Pearson correlation r of CV estimate and test score. Ratios
    recommended (``ds.attrs["rule"]``) are starred on the axis.
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    _check(ds)
    if ax is None:
        fig, ax = plt.subplots(figsize=(1.5 * ds.sizes["ratio"] + 2.2, 4.2), layout="constrained")
    fig = ax.figure
    ratios = ds["ratio"].values
    offset = _WIDTH / 2 + 0.03
    for i, ratio in enumerate(ratios):
        for name, shift in (("cv_estimate", -offset), ("test_score", offset)):
            values = ds[name].sel(ratio=ratio).values
            values = values[np.isfinite(values)]
            _box(ax, values, i + shift, COLORS["cv" if name == "cv_estimate" else "test"])
    _annotate(ax, ds)
    labels = [
        f"{r:g}{' ★' if rec else ''}"
        for r, rec in zip(ratios, ds["recommended"].values, strict=True)
    ]
    ax.set_xticks(range(len(ratios)), labels)
    ax.set_xlim(-0.6, len(ratios) - 0.4)
    ax.set_xlabel("train ratio (★ recommended)")
    ax.set_ylabel(ds.attrs.get("measure_name", ds.attrs.get("measure", "score")))
    k, n = ds.attrs.get("n_folds", ds.sizes["fold"]), ds.sizes["trial"]
    ax.legend(
        handles=[
            Patch(color=COLORS["cv"], alpha=0.5, label=f"CV estimate (mean of {k} folds)"),
            Patch(color=COLORS["test"], alpha=0.5, label="test score (fit on the train part)"),
        ],
        loc="lower left",
        fontsize=8,
        frameon=False,
    )
    title = f"{ds.attrs.get('learner', '')}: {n} trials per ratio, alpha = {ds.attrs['alpha']:g}"
    ax.set_title(title, loc="left", fontsize=9, pad=52)  # above the statistics
    return fig


def _check(ds: Any) -> None:
    if not isinstance(ds, xr.Dataset) or ds.attrs.get("design") != "split_sensitivity":
        raise ValueError(
            "plot_split_sensitivity draws the Dataset returned by soak_dask.split_sensitivity"
        )


def _box(ax: Any, values: np.ndarray, where: float, color: str) -> None:
    """One box of a ratio's trials at x = ``where``, with the trials as jittered dots."""
    if not len(values):
        return
    box = ax.boxplot(
        [values],
        positions=[where],
        widths=_WIDTH,
        patch_artist=True,
        showfliers=False,
        medianprops={"color": "black"},
    )
    box["boxes"][0].set(facecolor=color, alpha=0.5)
    # Jitter from the trial's number (golden-ratio steps), not a random draw: the same figure
    # every time, and unrelated to the values.
    jitter = ((np.arange(len(values)) * 0.618) % 1 - 0.5) * _WIDTH * 0.6
    ax.plot(where + jitter, values, "o", color=color, markersize=3, alpha=0.8)


def _annotate(ax: Any, ds: xr.Dataset) -> None:
    """The statistics of each ratio, written above the axes over its pair of boxes (the y axis
    keeps to the scores), with room at the bottom for the legend."""
    top = np.nanmax([ds["cv_estimate"].max().item(), ds["test_score"].max().item()])
    bottom = np.nanmin([ds["cv_estimate"].min().item(), ds["test_score"].min().item()])
    span = (top - bottom) or 1.0
    for i, ratio in enumerate(ds["ratio"].values):
        row = ds.sel(ratio=ratio)
        text = (
            f"Levene p {_p(row['levene_p'])}\nF p {_p(row['f_p'])}\n"
            f"in PI {float(row['consistent_share']):.0%}\nr {float(row['correlation']):.2f}"
        )
        ax.text(
            i, 1.02, text, ha="center", va="bottom", fontsize=7.5,
            transform=ax.get_xaxis_transform(),  # x in data, y in axes fractions
        )  # fmt: skip
    ax.set_ylim(bottom - 0.3 * span, top + 0.05 * span)


def _p(value: xr.DataArray) -> str:
    p = float(value)
    if not np.isfinite(p):
        return "n/a"
    return "< 0.001" if p < 0.001 else f"{p:.3f}"
