"""The map of ``soak_dask.aoa``: the DI beside the AOA mask (or, for a table, the DI of the new
rows beside that of the training points)."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import xarray as xr
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure

from ..tables.raster import X, Y

__all__ = ["plot_aoa"]

#: Cells drawn at most: a larger raster is averaged over blocks of cells on the cluster first.
MAX_CELLS = 1_000_000


def plot_aoa(ds: xr.Dataset, *, max_cells: int = MAX_CELLS, title: str | None = None) -> Figure:
    """DI map and AOA mask side by side (a table's AOA: DI histograms of the new rows and of
    the training points, with the threshold).

    Parameters
    ----------
    ds : xarray.Dataset
        From ``soak_dask.aoa``, lazy or computed.
    max_cells : int
        A raster larger than this is averaged over square blocks of cells on the cluster
        before drawing (the AOA panel then shows the share of each block inside).
    title : str, optional
        Figure title.

    Returns
    -------
    matplotlib.figure.Figure
    """
    threshold = float(ds.attrs["threshold"])
    if ds["di"].dims != (Y, X):
        return _table_figure(ds, threshold, title)
    factor = max(1, math.ceil(math.sqrt(ds["di"].size / max_cells)))
    maps = ds[["di", "aoa"]]
    if factor > 1:
        maps = maps.coarsen({Y: factor, X: factor}, boundary="trim").mean()
    maps = maps.compute()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5), sharex=True, sharey=True)
    di = maps["di"]
    vmax = float(np.nanquantile(di.values, 0.98)) if np.isfinite(di.values).any() else 1.0
    di.plot.imshow(ax=left, vmin=0, vmax=max(vmax, threshold), cmap="viridis", robust=False)
    left.set_title(f"DI (threshold {threshold:.3g})")
    if factor > 1:
        maps["aoa"].plot.imshow(ax=right, vmin=0, vmax=1, cmap="RdYlBu")
        right.set_title(f"share inside the AOA (blocks of {factor}×{factor} cells)")
    else:
        cmap = ListedColormap(["#d7301f", "#2b8cbe"])
        maps["aoa"].plot.imshow(ax=right, vmin=0, vmax=1, cmap=cmap, add_colorbar=False)
        inside = float(maps["aoa"].mean())
        right.set_title(f"AOA: inside (blue) {inside:.0%} of cells with data, outside (red)")
    for ax in (left, right):
        ax.set_aspect("equal")
    fig.suptitle(title or f"Area of applicability ({ds.attrs.get('n_train', '?')} training points)")
    fig.tight_layout()
    return fig


def _table_figure(ds: xr.Dataset, threshold: float, title: str | None) -> Figure:
    """Histograms of the DI of the new rows and of the training points."""
    new = ds["di"].values
    new = new[np.isfinite(new)]
    train = ds["train_di"].values
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    top = max(np.quantile(new, 0.99) if len(new) else 0, train.max(), threshold) * 1.05
    bins = np.linspace(0, top, 40)
    left.hist(np.clip(new, 0, top), bins=bins, color="#2b8cbe")
    left.axvline(threshold, color="#d7301f")
    left.set(xlabel="DI", ylabel="rows", title=f"new rows: {np.mean(new <= threshold):.0%} inside")
    right.hist(train, bins=bins, color="#969696")
    right.axvline(threshold, color="#d7301f", label=f"threshold {threshold:.3g}")
    against = "points outside its fold" if ds.attrs.get("n_folds") else "other points"
    right.set(xlabel="DI", ylabel="training points", title=f"training points (against {against})")
    right.legend()
    fig.suptitle(title or "Area of applicability")
    fig.tight_layout()
    return fig
