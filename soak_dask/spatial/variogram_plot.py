"""``plot_variogram``: the empirical semivariogram of ``spatial_range`` with the fitted model,
its range and interval, and the proposed block size marked."""

from __future__ import annotations

from typing import Any

import numpy as np

from .variogram import MODELS, SpatialRange


def plot_variogram(result: SpatialRange, ax: Any = None) -> Any:
    """The binned semivariogram (points sized by their pairs), the fitted model, the range
    (dashed, its block-bootstrap interval shaded) and the proposed block size (dotted).

    Parameters
    ----------
    result : SpatialRange
        From ``soak_dask.spatial_range``.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib.pyplot as plt

    if not isinstance(result, SpatialRange):
        raise TypeError(f"plot_variogram takes a SpatialRange, not a {type(result).__name__}")
    if ax is None:
        fig, ax = plt.subplots(figsize=(6, 4))
    else:
        fig = ax.figure
    v = result.variogram
    size = 10 + 60 * v["pairs"] / v["pairs"].max()
    ax.scatter(v["distance"], v["semivariance"], s=size, color="k", label="empirical (by pairs)")
    h = np.linspace(0.0, max(result.max_distance, result.block_size) * 1.05, 200)
    fitted = MODELS[result.model](h, result.nugget, result.sill - result.nugget, result.range)
    ax.plot(h, fitted, color="C0", label=f"{result.model} fit")
    low, high = result.range_interval
    if np.isfinite(low) and np.isfinite(high):
        ax.axvspan(low, high, color="C0", alpha=0.12, label="range, 95 % interval")
    ax.axvline(result.range, color="C0", ls="--", label=f"range {result.range:.3g}")
    ax.axvline(result.block_size, color="C3", ls=":", label=f"block size {result.block_size:g}")
    ax.set_xlim(0.0, h[-1])
    ax.set_ylim(bottom=0.0)
    ax.set_xlabel(f"distance ({result.unit})")
    what = "half the share of differing classes" if result.kind == "classes" else "semivariance"
    ax.set_ylabel(what)
    ax.set_title(f"semivariogram of {result.of!r}, {result.n_sampled:,} rows sampled")
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(alpha=0.3)
    return fig
