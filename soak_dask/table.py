"""Load a table into a lazy Dask DataFrame and record the role of each column."""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import dask.dataframe as dd
import fsspec
import numpy as np
import pandas as pd
import xarray as xr

from .parquet import ROWS_PER_PARTITION, read_parquet

Task = Literal["classification", "regression"]

#: Value of the subset column when the user gives none: SOAK is then plain K-fold CV.
SINGLE_SUBSET = "all_rows"
#: Name of the column added when SOAK has no subset column, or assigns the folds itself.
SUBSET_COLUMN = "__soak_subset__"
FOLD_COLUMN = "__soak_fold__"


@dataclass(frozen=True)
class Table:
    """A lazy table and the roles of its columns.

    Attributes
    ----------
    data : dask.dataframe.DataFrame
        Lazy frame holding only the feature and role columns.
    label : str
        Column to predict.
    features : tuple of str
        Feature columns, in order.
    subset : str
        Column naming each row's subset (``SUBSET_COLUMN`` when the user gave none).
    group : str or None
        Rows sharing a value of this column always fall in the same fold.
    fold : str or None
        Column holding folds 1..K, either the user's or assigned by ``soak_dask.assign_folds``.
    task : str
        "classification" or "regression".
    source : str
        Where the data came from, recorded in the results.
    user_subset : bool
        False when the user gave no subset column (plain K-fold CV).
    fold_counts : DataFrame or None
        Rows per (subset, fold[, label]) block when known without a pass over the data (folds
        assigned by ``assign_folds``); ``soak_dask.block_counts`` then returns it.
    """

    data: dd.DataFrame
    label: str
    features: tuple[str, ...]
    subset: str
    group: str | None
    fold: str | None
    task: Task
    source: str
    user_subset: bool = True
    fold_counts: pd.DataFrame | None = field(default=None, repr=False, compare=False)

    @property
    def roles(self) -> dict[str, Any]:
        """Column roles as a plain dict (what the results record)."""
        return {
            "label": self.label,
            "subset": self.subset if self.user_subset else None,
            "group": self.group,
            "fold": self.fold if self.fold != FOLD_COLUMN else None,
            "features": list(self.features),
        }

    def with_fold(
        self, data: dd.DataFrame, fold: str, fold_counts: pd.DataFrame | None = None
    ) -> Table:
        """Return a copy whose ``data`` carries the fold column ``fold`` (rows per block
        ``fold_counts``, if known)."""
        return replace(self, data=data, fold=fold, fold_counts=fold_counts)

    def __repr__(self) -> str:
        subset = self.subset if self.user_subset else "(none: plain K-fold CV)"
        return (
            f"Table(source={self.source!r}, task={self.task!r}, label={self.label!r}, "
            f"subset={subset!r}, group={self.group!r}, fold={self.fold!r}, "
            f"{len(self.features)} features, {self.data.npartitions} partitions)"
        )


def load_table(
    source: str | os.PathLike | pd.DataFrame | dd.DataFrame | xr.Dataset,
    label: str,
    subset: str | None = None,
    group: str | None = None,
    fold: str | None = None,
    features: Sequence[str] | None = None,
    *,
    exclude: Sequence[str] = (),
    task: Task | None = None,
    storage_options: dict | None = None,
    rows_per_partition: int | None = None,
) -> Table:
    """Open a table lazily and name the role of its columns.

    Parameters
    ----------
    source : path, URL, pandas/Dask DataFrame or xarray Dataset
        A Parquet file, directory or glob; a Zarr store (an xarray Dataset with one row
        dimension and one variable per column), local or an fsspec URL such as ``s3://``;
        or an in-memory frame or Dataset. Nothing is read into the client.
    label : str
        Column to predict. Text, boolean or integer labels mean classification, floats mean
        regression (override with ``task``).
    subset : str, optional
        Column naming each row's subset. Without it SOAK is plain K-fold CV.
    group : str, optional
        Rows sharing a value of this column (e.g. the pixels of one polygon) stay in one fold.
    fold : str, optional
        A fold column with values 1..K, used as is instead of assigning folds.
    features : sequence of str, optional
        Feature columns. Default: every other numeric or boolean column.
    exclude : sequence of str
        Columns that are never features (e.g. pixel coordinates), when ``features`` is not given.
    task : str, optional
        "classification" or "regression": overrides the task inferred from the label's dtype.
    storage_options : dict, optional
        Passed to fsspec for remote sources (credentials, endpoint).
    rows_per_partition : int, optional
        Rows per Dask partition (default 500,000), the unit a task reads and holds: lower it
        for workers with little memory. Parquet row groups are combined up to this many rows,
        so a partition is never smaller than one row group; in-memory frames and Datasets are
        cut to it; a chunked Zarr store keeps its chunks.

    Returns
    -------
    Table

    Examples
    --------
    >>> import pandas as pd, soak_dask as sd
    >>> df = pd.DataFrame({"x1": [0.1, 0.5, 0.9, 0.3], "y": ["a", "b", "a", "b"],
    ...                    "region": ["N", "N", "S", "S"]})
    >>> table = sd.load_table(df, label="y", subset="region")
    >>> table.features
    ('x1',)
    """
    if rows_per_partition is not None and (
        not isinstance(rows_per_partition, int | np.integer) or rows_per_partition < 1
    ):
        raise ValueError(f"rows_per_partition={rows_per_partition!r}: need a positive integer")
    ddf, name = _open(source, storage_options, rows_per_partition or ROWS_PER_PARTITION)
    columns = list(ddf.columns)
    duplicated = sorted({c for c in columns if columns.count(c) > 1})
    if duplicated:
        raise ValueError(f"duplicate column names {duplicated} in {name}: rename them first")
    roles = {"label": label, "subset": subset, "group": group, "fold": fold}
    for role, col in roles.items():
        if col is not None and col not in columns:
            raise ValueError(
                f"{role} column {col!r} is not in {name}; available columns: {columns}"
            )
    used = {c for c in roles.values() if c is not None}
    if features is None:
        features = [
            c
            for c in columns
            if c not in used
            and c not in exclude
            and (pd.api.types.is_numeric_dtype(ddf[c].dtype) or ddf[c].dtype == bool)
        ]
        if not features:
            raise ValueError(
                f"no numeric feature columns in {name} besides the role columns; "
                f"pass features=[...] (columns: {columns})"
            )
    features = list(features)
    _check_features(ddf, features, used, name)
    task = task or _infer_task(ddf[label].dtype)
    if task not in ("classification", "regression"):
        raise ValueError(f"task={task!r} is not 'classification' or 'regression'")
    keep = list(dict.fromkeys([*features, *(c for c in roles.values() if c is not None)]))
    ddf = ddf[keep]
    if subset is None:
        ddf = ddf.assign(**{SUBSET_COLUMN: SINGLE_SUBSET})
    return Table(
        data=ddf,
        label=label,
        features=tuple(features),
        subset=subset or SUBSET_COLUMN,
        group=group,
        fold=fold,
        task=task,
        source=name,
        user_subset=subset is not None,
    )


def _check_features(ddf: dd.DataFrame, features: list[str], used: set, name: str) -> None:
    missing = [c for c in features if c not in ddf.columns]
    if missing:
        raise ValueError(f"feature columns {missing} are not in {name}")
    roles = sorted(set(features) & used)
    if roles:
        raise ValueError(
            f"columns {roles} have a role (label/subset/group/fold) and cannot also be features"
        )
    bad = [c for c in features if not pd.api.types.is_numeric_dtype(ddf[c].dtype)]
    if bad:
        raise ValueError(
            f"feature columns {bad} are not numeric (dtypes "
            f"{[str(ddf[c].dtype) for c in bad]}); encode them as numbers or leave them out"
        )


def _infer_task(dtype: Any) -> Task:
    return "regression" if pd.api.types.is_float_dtype(dtype) else "classification"


def _open(
    source: Any, storage_options: dict | None, rows_per_partition: int
) -> tuple[dd.DataFrame, str]:
    """Return a lazy frame for ``source`` and a short name for messages and results."""
    if isinstance(source, dd.DataFrame):
        return source, "dask DataFrame"
    if isinstance(source, pd.DataFrame):
        if source.empty:
            raise ValueError("the pandas DataFrame is empty")
        nparts = max(1, int(np.ceil(len(source) / rows_per_partition)))
        return dd.from_pandas(source, npartitions=nparts, sort=False), "pandas DataFrame"
    if isinstance(source, xr.Dataset):
        return _from_xarray(source, "xarray Dataset", rows_per_partition), "xarray Dataset"
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
        return _from_xarray(ds, path, rows_per_partition), name
    ddf = read_parquet(path, storage_options, rows_per_partition)
    if len(ddf.columns) == 0:
        raise ValueError(f"Parquet {path} has no columns")
    return ddf, name


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


def category_codes(values: pd.Series, categories: pd.Index) -> np.ndarray:
    """Position of each value among ``categories`` (-1 if absent or missing).

    Only the distinct values are looked up: hashing a column of Arrow strings natively is
    several times faster than ``categories.get_indexer`` on the column.
    """
    codes, uniques = pd.factorize(values)
    return np.append(categories.get_indexer(uniques), -1)[codes]


def float_array(frame: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    """``frame[columns]`` as a read-only float64 array (missing values NaN).

    A view of the frame's block when the columns are float64 already: pandas copies whenever
    a dtype is asked of ``to_numpy``, a pass over the data that this saves. Read-only, so that
    nothing writes through it into the (perhaps persisted) partition; scikit-learn accepts
    read-only input and copies where it needs to.
    """
    z = frame[list(columns)].to_numpy(na_value=np.nan)
    if z.dtype != np.float64:
        z = z.astype(np.float64)
    z.flags.writeable = False
    return z
