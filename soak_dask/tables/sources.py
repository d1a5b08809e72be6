"""Open a table's source lazily: a Parquet, CSV or Zarr path or URL, or a frame or Dataset in
memory, as one Dask DataFrame with a name for messages and the files that identify it."""

from __future__ import annotations

import os
import warnings
from typing import Any

import dask.dataframe as dd
import fsspec
import numpy as np
import pandas as pd
import xarray as xr

from .delimited import is_delimited_source, open_delimited
from .fingerprint import SourceFiles
from .parquet import open_parquet


def open_source(
    source: Any, storage_options: dict | None, rows_per_partition: int
) -> tuple[dd.DataFrame, str, SourceFiles | None]:
    """Return a lazy frame for ``source``, a short name for messages and results, and the
    files it reads (None for data in memory or a Dask frame)."""
    if isinstance(source, dd.DataFrame):
        return source, "dask DataFrame", None
    if isinstance(source, pd.DataFrame):
        if source.empty:
            raise ValueError("the pandas DataFrame is empty")
        nparts = max(1, int(np.ceil(len(source) / rows_per_partition)))
        return dd.from_pandas(source, npartitions=nparts, sort=False), "pandas DataFrame", None
    if isinstance(source, xr.Dataset):
        ddf = _from_xarray(source, "xarray Dataset", rows_per_partition)
        return ddf, "xarray Dataset", None
    if not isinstance(source, str | os.PathLike):
        raise TypeError(
            f"cannot load a table from {type(source).__name__}; give a path or URL to Parquet "
            "or Zarr, or a pandas/Dask DataFrame or xarray Dataset"
        )
    path = os.fspath(source)
    name = path
    if _is_zarr(path, storage_options):
        with warnings.catch_warnings():
            # Stores without consolidated metadata (Zarr v3's default) are read all the same.
            warnings.filterwarnings("ignore", message="Failed to open Zarr store with consolid")
            ds = xr.open_zarr(path, storage_options=storage_options, consolidated=None)
        fs, root = fsspec.core.url_to_fs(path, **(storage_options or {}))
        files = SourceFiles(fs, "zarr", (root,))
        return _from_xarray(ds, path, rows_per_partition), name, files
    if is_delimited_source(path, storage_options):
        ddf, files = open_delimited(path, storage_options, rows_per_partition)
        return ddf, name, files
    ddf, files = open_parquet(path, storage_options, rows_per_partition)
    if len(ddf.columns) == 0:
        raise ValueError(f"Parquet {path} has no columns")
    return ddf, name, files


def _is_zarr(path: str, storage_options: dict | None) -> bool:
    if path.rstrip("/").endswith(".zarr"):
        return True
    fs, root = fsspec.core.url_to_fs(path, **(storage_options or {}))
    root = root.rstrip("/")
    return any(fs.exists(f"{root}/{meta}") for meta in ("zarr.json", ".zgroup", ".zmetadata"))


def _from_xarray(ds: xr.Dataset, name: str, rows_per_partition: int) -> dd.DataFrame:
    dims = set(ds.dims)
    if len(dims) != 1:
        raise ValueError(
            f"{name} has dims {sorted(map(str, dims))}; a table needs exactly one row dimension "
            "(one variable per column). For rasters, stack them to pixels first"
        )
    (row,) = dims
    if not ds.data_vars:
        raise ValueError(f"{name} has no data variables")
    if any(v.chunks for v in ds.variables.values()):
        ds = ds.unify_chunks()
    else:  # in memory: split into partitions like a pandas frame
        ds = ds.chunk({row: rows_per_partition})
    ddf = ds.to_dask_dataframe()
    return ddf.drop(columns=[row]) if row not in ds.data_vars else ddf
