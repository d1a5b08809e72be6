"""Gather score records into the results ``xarray.Dataset`` and read/write it."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

DIMS = ("learner", "test_subset", "fold", "train_type")
COUNTS = ("n_train", "n_test")
TIMINGS = ("fit_seconds", "predict_seconds")
_PACKAGES = ("soak_dask", "dask", "distributed", "pandas", "numpy", "scikit-learn", "xarray")


def package_versions() -> dict[str, str]:
    """Versions of the packages that shape a result, recorded in its attrs."""
    out = {}
    for name in _PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


def build_dataset(
    records: Iterable[Mapping[str, Any]],
    splits: pd.DataFrame,
    learners: Sequence[str],
    subsets: Sequence[str],
    n_folds: int,
    measures: Sequence[str],
    attrs: Mapping[str, Any],
    extra_coords: Mapping[str, Sequence] | None = None,
) -> xr.Dataset:
    """Place per-(learner, fit, test subset) records on the splits they serve.

    Parameters
    ----------
    records : iterable of dict
        Keys ``learner, fit_id, test_subset``, the measures, counts and timings.
    splits : DataFrame
        The plan's split table (``test_subset, fold, train_type, fit_id``), test subsets as str.
    learners, subsets : sequence of str
        Coordinate values, in order.
    n_folds : int
    measures : sequence of str
    attrs : mapping
        Run settings stored in ``Dataset.attrs``.
    extra_coords : mapping, optional
        Further split dims (``train_size``, ``sample``) and their ordered values; ``splits``
        then has a column for each.
    """
    scores = pd.DataFrame.from_records(list(records))
    rows = splits.merge(scores, on=["fit_id", "test_subset"], how="left", validate="many_to_many")
    train_types = [t for t in ("same", "other", "all") if t in set(splits["train_type"])]
    coords = {
        "learner": np.array(learners, dtype=object),
        "test_subset": np.array(subsets, dtype=object),
        "fold": np.arange(1, n_folds + 1, dtype=np.int64),
        "train_type": np.array(train_types, dtype=object),
        **{
            k: np.array(v, dtype=object if isinstance(v[0], str) else np.int64)
            for k, v in (extra_coords or {}).items()
        },
    }
    dims = list(coords)
    index = pd.MultiIndex.from_product(list(coords.values()), names=dims)
    full = rows.set_index(dims).reindex(index)
    # from_dataframe sorts each level; reindex restores the intended coordinate order.
    ds = xr.Dataset.from_dataframe(full[[*measures, *COUNTS, *TIMINGS]]).reindex(coords)
    for name in COUNTS:
        ds[name] = ds[name].astype(np.int64)
    fit_id = (
        splits.set_index(dims[1:])["fit_id"].to_xarray().reindex({k: coords[k] for k in dims[1:]})
    )
    ds = ds.assign_coords(fit_id=fit_id.astype(np.int64))
    for name in measures:
        ds[name].attrs["long_name"] = MEASURE_NAMES[name]
    ds["n_train"].attrs["long_name"] = "rows in the train set"
    ds["n_test"].attrs["long_name"] = "rows in the test block"
    ds["fit_seconds"].attrs["long_name"] = "seconds to fit (shared by the splits a fit serves)"
    ds["predict_seconds"].attrs["long_name"] = "seconds to predict the test block"
    ds.attrs.update(attrs)
    ds.attrs["measures"] = list(measures)
    return ds


MEASURE_NAMES = {
    "error": "test error (percent)",
    "accuracy": "accuracy",
    "balanced_accuracy": "balanced accuracy",
    "auc": "area under the ROC curve",
    "log_loss": "log loss",
    "mse": "mean squared error",
    "rmse": "root mean squared error",
    "mae": "mean absolute error",
    "r2": "coefficient of determination R²",
}


def encode_attrs(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Make settings storable in both Zarr and NetCDF attrs (no None, bool or dict)."""
    out: dict[str, Any] = {}
    for key, value in settings.items():
        if value is None:
            value = ""
        elif isinstance(value, bool):
            value = int(value)
        elif isinstance(value, Mapping):
            value = json.dumps(value, sort_keys=True, default=str)
        elif isinstance(value, tuple | list):
            value = [str(v) for v in value]
        out[key] = value
    return out


def save_results(ds: xr.Dataset, path: str | os.PathLike, *, overwrite: bool = False) -> Path:
    """Write results to a Zarr store, or a NetCDF file when ``path`` ends in ``.nc``.

    Refuses to replace an existing store unless ``overwrite=True``.
    """
    path = Path(path)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} exists; choose another path or pass overwrite=True")
    if path.suffix == ".nc":
        ds.to_netcdf(path)
    else:
        # Zarr v3 has no consolidated metadata in its spec; plain metadata reads everywhere.
        ds.to_zarr(path, mode="w", consolidated=False)
    return path


def open_results(path: str | os.PathLike, **kwargs: Any) -> xr.Dataset:
    """Open saved results (Zarr store or NetCDF file) fully into memory.

    Examples
    --------
    >>> ds = open_results("results.zarr")  # doctest: +SKIP
    """
    path = os.fspath(path)
    if path.rstrip("/").endswith(".nc"):
        with xr.open_dataset(path, **kwargs) as ds:
            return ds.load()
    with xr.open_zarr(path, **{"consolidated": False, **kwargs}) as ds:
        return ds.load()


def from_dataframe(scores: pd.DataFrame, **attrs: Any) -> xr.Dataset:
    """Build a results Dataset from a tidy frame of per-split scores.

    ``scores`` has columns ``learner, test_subset, fold, train_type`` and one column per
    measure, e.g. results computed elsewhere (the SOAK paper's, the R package's).

    Examples
    --------
    >>> df = pd.DataFrame({"learner": "glm", "test_subset": "A", "fold": [1, 2],
    ...                    "train_type": "same", "error": [10.0, 12.0]})
    >>> from_dataframe(df)["error"].sizes["fold"]
    2
    """
    missing = [c for c in DIMS if c not in scores.columns]
    if missing:
        raise ValueError(f"scores lack the columns {missing}; need {list(DIMS)}")
    frame = scores.assign(test_subset=scores["test_subset"].astype(str))
    ds = frame.set_index(list(DIMS)).to_xarray()
    order = [t for t in ("same", "other", "all") if t in set(frame["train_type"])]
    ds = ds.reindex(train_type=order)
    measures = [v for v in ds.data_vars if v not in (*COUNTS, *TIMINGS)]
    ds.attrs.update(attrs)
    ds.attrs.setdefault("measures", measures)
    return ds
