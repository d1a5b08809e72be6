"""The maps of ``soak_dask.aoa``: the DI beside the AOA mask in panels of equal size sharing the
DI's colour bar, the training points drawn, the expected error beside them when the AOA holds
it (or, for a table, the DI of the new rows beside that of the training points); and the error
profile's curve."""

from __future__ import annotations

import math
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import xarray as xr
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from ..tables.crs import raster_crs
from ..tables.raster import X, Y
from .aoa_record import recorded_points
from .error_profile import ErrorProfile

__all__ = ["axis_unit", "error_name", "plot_aoa", "plot_error_profile"]

#: Cells drawn at most: a larger raster is averaged over blocks of cells on the cluster first.
MAX_CELLS = 1_000_000
#: Colours of the AOA mask: outside, inside.
MASK_COLOURS = ("#d7301f", "#2b8cbe")
#: What the axes say when the raster's CRS (and so its unit) is not known.
UNKNOWN_UNIT = "coordinate units"


def plot_aoa(
    ds: xr.Dataset,
    *,
    points: Any = None,
    max_cells: int = MAX_CELLS,
    title: str | None = None,
) -> Figure:
    """DI map and AOA mask side by side, and the expected error beside them if ``ds`` holds it
    (a table's AOA: DI histograms of the new rows and of the training points, with the
    threshold).

    Parameters
    ----------
    ds : xarray.Dataset
        From ``soak_dask.aoa``, lazy or computed (with ``expected_error`` added from
        ``soak_dask.expected_error``: a third map).
    points : array-like of shape (n, 2), or DataFrame of two columns, optional
        The training points' x and y, in the raster's coordinates, drawn on every map
        (default: those recorded in ``ds``, as ``soak aoa --points`` records them).
    max_cells : int
        A raster larger than this is averaged over square blocks of cells on the cluster
        before drawing (the AOA panel then shows the share of each block inside).
    title : str, optional
        Figure title.

    Returns
    -------
    matplotlib.figure.Figure
        The maps are of equal size; the DI and the AOA share one colour bar (the mask's two
        colours are in the legend), the expected error has its own; axes in the CRS's unit
        (``axis_unit``).
    """
    threshold = float(ds.attrs["threshold"])
    if ds["di"].dims != (Y, X):
        return _table_figure(ds, threshold, title)
    xy = recorded_points(ds) if points is None else _points(points)
    factor = max(1, math.ceil(math.sqrt(ds["di"].size / max_cells)))
    maps = ds[[v for v in ("di", "aoa", "expected_error") if v in ds]]
    if factor > 1:
        maps = maps.coarsen({Y: factor, X: factor}, boundary="trim").mean()
    maps = maps.compute()
    # a map's height from the raster's shape, plus room for the titles and colour bar
    aspect = min(max(maps.sizes[Y] / maps.sizes[X], 0.3), 2.0)
    size = (4.4 * len(maps.data_vars) + 0.6, 4.4 * aspect + 2.0)
    fig = plt.figure(figsize=size, layout="constrained")
    axes = fig.subplots(1, len(maps.data_vars), sharex=True, sharey=True, squeeze=False)[0]
    shared = [axes[0]] if factor > 1 else [axes[0], axes[1]]
    _di_panel(fig, axes[0], maps["di"], threshold, shared)
    _aoa_panel(fig, axes[1], maps["aoa"], factor)
    if "expected_error" in maps:
        _error_panel(fig, axes[2], maps["expected_error"])
    unit = axis_unit(ds)
    for ax in axes:
        if xy is not None:
            ax.scatter(*xy.T, s=16, c="white", edgecolors="black", linewidths=0.8, zorder=3)
        ax.set_aspect("equal")
        ax.ticklabel_format(useOffset=False, style="plain")
        ax.xaxis.set_major_locator(MaxNLocator(nbins=4))  # six-digit metres side by side
        ax.set(xlabel=f"{X} ({unit})", ylabel="")
    axes[0].set_ylabel(f"{Y} ({unit})")
    _legend(fig, factor, xy is not None)
    fig.suptitle(title or f"Area of applicability ({ds.attrs.get('n_train', '?')} training points)")
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
    left.set(
        xlabel="DI (dimensionless)",
        ylabel="rows",
        title=f"new rows: {np.mean(new <= threshold):.0%} inside",
    )
    right.hist(train, bins=bins, color="#969696")
    right.axvline(threshold, color="#d7301f", label=f"threshold {threshold:.3g}")
    against = "points outside its fold" if ds.attrs.get("n_folds") else "other points"
    right.set(
        xlabel="DI (dimensionless)",
        ylabel="training points",
        title=f"training points (against {against})",
    )
    right.legend()
    fig.suptitle(title or "Area of applicability")
    fig.tight_layout()
    return fig


def _points(points: Any) -> np.ndarray:
    """The training points as an (n, 2) float array, refused in any other shape."""
    xy = np.asarray(points, dtype=np.float64)
    if xy.ndim != 2 or xy.shape[1] != 2:
        raise ValueError(
            f"points has shape {xy.shape}; give the training points' x and y as an (n, 2) "
            "array or a DataFrame of two columns"
        )
    return xy


def _di_panel(fig: Figure, ax: Any, di: xr.DataArray, threshold: float, shared: list) -> None:
    values = di.values
    vmax = float(np.nanquantile(values, 0.98)) if np.isfinite(values).any() else 1.0
    image = di.plot.imshow(
        ax=ax, vmin=0, vmax=max(vmax, threshold), cmap="viridis", add_colorbar=False
    )
    fig.colorbar(image, ax=shared, location="bottom", shrink=0.7, label="DI (dimensionless)")
    ax.set_title(f"DI (threshold {threshold:.3g})")


def _aoa_panel(fig: Figure, ax: Any, aoa: xr.DataArray, factor: int) -> None:
    if factor > 1:
        image = aoa.plot.imshow(ax=ax, vmin=0, vmax=1, cmap="RdYlBu", add_colorbar=False)
        fig.colorbar(image, ax=ax, location="bottom", shrink=0.7, label="share of cells inside")
        ax.set_title(f"share inside the AOA (blocks of {factor}×{factor} cells)")
        return
    aoa.plot.imshow(ax=ax, vmin=0, vmax=1, cmap=ListedColormap(MASK_COLOURS), add_colorbar=False)
    inside = float(aoa.mean())
    ax.set_title(f"AOA: {inside:.0%} of cells with data inside")  # colours: the legend below


def _error_panel(fig: Figure, ax: Any, error: xr.DataArray) -> None:
    metric = error.attrs.get("metric", "error")
    image = error.plot.imshow(ax=ax, cmap="magma_r", add_colorbar=False)
    label = f"expected {error_name(metric, error.attrs.get('label', ''))}"
    fig.colorbar(image, ax=ax, location="bottom", shrink=0.7, label=label)
    ax.set_title(f"expected {metric} (error profile)")


def error_name(metric: str, label: str = "") -> str:
    """How the figures name an error, with its unit where known: the label's own for RMSE
    and MAE, a share of points for the error rate.

    >>> error_name("rmse", "VW"), error_name("mae"), error_name("error_rate", "class")
    ('RMSE of VW', "MAE (the label's unit)", 'error rate of class (share of points)')
    """
    if metric == "error_rate":
        return f"error rate{f' of {label}' if label else ''} (share of points)"
    name = metric.upper() if metric in ("rmse", "mae") else metric
    return f"{name} of {label}" if label else f"{name} (the label's unit)"


def _legend(fig: Figure, factor: int, with_points: bool) -> None:
    """The mask's colours and the points' marker, under the maps (on a map it hides cells)."""
    handles = [] if factor > 1 else [Patch(color=c) for c in reversed(MASK_COLOURS)]
    labels = [] if factor > 1 else ["inside the AOA", "outside the AOA"]
    if with_points:
        handles.append(Line2D([], [], ls="", marker="o", mfc="white", mec="black"))
        labels.append("training points")
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncols=3, fontsize=8)


def axis_unit(ds: xr.Dataset | xr.DataArray) -> str:
    """The unit of the raster's x and y: its CRS's (from the ``spatial_ref`` coordinate that
    rioxarray writes, e.g. ``"metre"``), else ``"coordinate units"``.

    Examples
    --------
    >>> axis_unit(xr.Dataset())
    'coordinate units'
    """
    wkt = raster_crs(ds)
    if not wkt:
        return UNKNOWN_UNIT
    try:
        from pyproj import CRS
        from pyproj.exceptions import CRSError
    except ImportError:
        return UNKNOWN_UNIT
    try:
        axes = CRS.from_wkt(wkt).axis_info
    except CRSError:
        return UNKNOWN_UNIT
    return axes[0].unit_name if axes and axes[0].unit_name else UNKNOWN_UNIT


def plot_error_profile(profile: ErrorProfile, ax: Any = None) -> Figure:
    """The error profile: the moving-window errors against the DI, the fitted non-decreasing
    curve and the AOA threshold (CAST's ``plot(errorModel)``).

    Parameters
    ----------
    profile : ErrorProfile
        From ``soak_dask.error_profile``.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    if not isinstance(profile, ErrorProfile):
        raise TypeError(f"profile is a {type(profile).__name__}; give error_profile's result")
    if ax is None:
        fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
    else:
        fig = ax.figure
    windows = profile.windows
    ax.scatter(windows["di"], windows["error"], s=14, color="#636363", label="moving windows")
    grid = np.linspace(0, profile.threshold, 200)
    ax.plot(grid, profile(grid), color="#2b8cbe", lw=2, label="monotone fit")
    ax.axvline(profile.threshold, color="#d7301f", ls="--", label="AOA threshold")
    ax.set(
        xlabel="DI (dimensionless)",
        ylabel=error_name(profile.metric, profile.label),
        title=f"Error profile: {profile.metric} over windows of {profile.window} CV predictions",
    )
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(alpha=0.3)
    return fig
