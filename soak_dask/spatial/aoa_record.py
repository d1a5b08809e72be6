"""What an AOA store keeps beside its layers so that its figures and report can be drawn again
from the store alone (``soak report aoa.zarr``): the training points' coordinates and the error
profile's CV predictions and windows.

``with_record(ds, points, profile)`` adds them as variables over their own dims (``train``,
``profile_point``, ``profile_window``); ``recorded_points`` and ``recorded_profile`` read them
back. A GeoTIFF holds the layers only: these are in a Zarr store alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from .aoa import TRAIN
from .error_profile import ErrorProfile

__all__ = ["recorded_points", "recorded_profile", "with_record"]

#: The training points' x and y, over the ``train`` dim.
POINT_X, POINT_Y = "train_x", "train_y"
#: The error profile's CV predictions (``ErrorProfile.points``) and windows, each column a
#: variable ``<dim>_<column>`` over its dim.
POINT_DIM, WINDOW_DIM = "profile_point", "profile_window"
#: The attr of each such variable holding its column's place in the frame.
COLUMN = "column"


def with_record(
    ds: xr.Dataset, points: Any = None, profile: ErrorProfile | None = None
) -> xr.Dataset:
    """``ds`` with the training points' coordinates (an (n, 2) array, one row per training
    point) and the error profile's CV predictions and windows added as variables.

    ``ds`` must hold ``expected_error`` when ``profile`` is given (its attrs hold the curve).
    """
    out = ds
    if points is not None:
        xy = np.asarray(points, dtype=np.float64)
        if xy.shape != (ds.sizes[TRAIN], 2):
            raise ValueError(
                f"points has shape {xy.shape}; the AOA has {ds.sizes[TRAIN]} training points: "
                "give their x and y, one row each"
            )
        out = out.assign({POINT_X: (TRAIN, xy[:, 0]), POINT_Y: (TRAIN, xy[:, 1])})
    if profile is not None:
        if "expected_error" not in ds:
            raise ValueError("a profile is recorded beside its expected_error layer: add it first")
        out = out.assign(_columns(profile.points, POINT_DIM))
        out = out.assign(_columns(profile.windows, WINDOW_DIM))
    return out


def _columns(frame: pd.DataFrame, dim: str) -> dict[str, xr.DataArray]:
    """Each column as a variable over ``dim``, its place in ``frame`` in its attrs (a store
    lists variables by name); text (a class label, a fold name) as str."""
    out = {}
    for place, (name, column) in enumerate(frame.items()):
        values = column.to_numpy()
        values = values.astype(str) if values.dtype == object else values
        out[f"{dim}_{name}"] = xr.DataArray(values, dims=dim, attrs={COLUMN: place})
    return out


def recorded_points(ds: xr.Dataset) -> np.ndarray | None:
    """The training points' (x, y) recorded in ``ds``, an (n, 2) array, or None."""
    if POINT_X not in ds or POINT_Y not in ds:
        return None
    return np.column_stack([ds[POINT_X].values, ds[POINT_Y].values])


def recorded_profile(ds: xr.Dataset) -> ErrorProfile | None:
    """The error profile recorded in ``ds`` (its curve from ``expected_error``'s attrs, its
    CV predictions and windows from the ``profile_*`` variables), or None without one."""
    if "expected_error" not in ds or POINT_DIM not in ds.dims or WINDOW_DIM not in ds.dims:
        return None
    attrs = ds["expected_error"].attrs
    return ErrorProfile(
        metric=str(attrs["metric"]),
        window=int(attrs["window"]),
        threshold=float(attrs["aoa_threshold"]),
        points=_frame(ds, POINT_DIM),
        windows=_frame(ds, WINDOW_DIM),
        knots=np.asarray(attrs["knots"], dtype=np.float64),
        coefficients=np.asarray(attrs["coefficients"], dtype=np.float64),
        n_outside=int(attrs["n_outside"]),
        label=str(attrs.get("label", "")),  # absent from a store written before it was kept
    )


def _frame(ds: xr.Dataset, dim: str) -> pd.DataFrame:
    names = [name for name, var in ds.data_vars.items() if var.dims == (dim,)]
    names.sort(key=lambda name: ds[name].attrs[COLUMN])
    return pd.DataFrame({name.removeprefix(f"{dim}_"): ds[name].values for name in names})
