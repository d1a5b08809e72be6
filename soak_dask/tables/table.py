"""Load a table into a lazy Dask DataFrame and record the role of each column."""

from __future__ import annotations

import difflib
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

from .delimited import is_delimited_source, open_delimited
from .fingerprint import SourceFiles
from .parquet import ROWS_PER_PARTITION, open_parquet

Task = Literal["classification", "regression"]
Coordinates = Literal["exclude", "include"]

#: Value of the subset column when the user gives none: SOAK is then plain K-fold CV.
SINGLE_SUBSET = "all_rows"
#: Name of the column added when SOAK has no subset column, or assigns the folds itself.
SUBSET_COLUMN = "__soak_subset__"
FOLD_COLUMN = "__soak_fold__"
#: Column names that ``load_table`` takes for coordinates, compared in lower case without
#: "_", "-", "." or spaces (so ``X_Coord``, ``x-coord`` and ``coord_x`` all match ``xcoord``).
COORDINATE_NAMES = frozenset(
    {
        *("x", "y", "xcoord", "ycoord", "coordx", "coordy", "xcoordinate", "ycoordinate"),
        *("lon", "lng", "long", "longitude", "lat", "latitude", "easting", "northing"),
        *("row", "col"),
    }
)


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
    files : SourceFiles or None
        The Parquet files or Zarr store the data is read from, which identify it in a
        checkpoint (None for in-memory data, a Dask frame, or folds added to the table).
    excluded_coordinates : tuple of str
        Columns named like coordinates that ``load_table`` left out of the default features.
    coords : tuple of str
        Coordinate columns (x, y, ...) kept in ``data`` for the spatial functions
        (``soak_dask.spatial_blocks``, ``knndm_folds``, ``fold_summary``); features only when
        named in ``features``.
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
    files: SourceFiles | None = field(default=None, repr=False, compare=False)
    excluded_coordinates: tuple[str, ...] = ()
    coords: tuple[str, ...] = ()

    @property
    def roles(self) -> dict[str, Any]:
        """Column roles as a plain dict (what the results record)."""
        return {
            "label": self.label,
            "subset": self.subset if self.user_subset else None,
            "group": self.group,
            "fold": self.fold if self.fold != FOLD_COLUMN else None,
            "features": list(self.features),
            "excluded_coordinates": list(self.excluded_coordinates),
            **({"coords": list(self.coords)} if self.coords else {}),
        }

    def with_fold(
        self, data: dd.DataFrame, fold: str, fold_counts: pd.DataFrame | None = None
    ) -> Table:
        """Return a copy whose ``data`` carries the fold column ``fold`` (rows per block
        ``fold_counts``, if known)."""
        # New folds are not in the files: the data is then identified by its Dask graph.
        files = self.files if fold == self.fold else None
        return replace(self, data=data, fold=fold, fold_counts=fold_counts, files=files)

    def __repr__(self) -> str:
        subset = self.subset if self.user_subset else "(none: plain K-fold CV)"
        return (
            f"Table(source={self.source!r}, task={self.task!r}, label={self.label!r}, "
            f"subset={subset!r}, group={self.group!r}, fold={self.fold!r}, "
            f"{len(self.features)} features, {self.data.npartitions} partitions)"
        )


def check_table(table: Any, caller: str) -> None:
    """Refuse anything but a ``Table``, saying how to make one; ``caller`` names the function."""
    if not isinstance(table, Table):
        raise TypeError(
            f"{caller} takes a Table, not a {type(table).__name__}; make one with "
            "soak_dask.load_table(data, label=..., subset=...)"
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
    coordinates: Coordinates = "exclude",
    coords: Sequence[str] | None = None,
    task: Task | None = None,
    storage_options: dict | None = None,
    rows_per_partition: int | None = None,
) -> Table:
    """Open a table lazily and name the role of its columns.

    Parameters
    ----------
    source : path, URL, pandas/Dask DataFrame or xarray Dataset
        A Parquet file, directory or glob; CSV/TSV text (a file, glob or directory of files
        ending in .csv, .tsv, .tab or .txt, optionally compressed; the delimiter follows the
        ending, or is sniffed from the header of a .txt; column types are inferred from the
        first megabyte, see
        ``soak_dask.tables.delimited``); a Zarr store (an xarray Dataset with one
        row dimension and one variable per column), local or an fsspec URL such as ``s3://``;
        or an in-memory frame or Dataset. Nothing is read into the client.
    label : str
        Column to predict. The task follows scikit-learn's ``type_of_target``: text, boolean,
        categorical or integer labels mean classification; a float label means classification
        if every value is a whole number (0.0/1.0 is a binary label), else regression. Only a
        float label is read to decide, in one pass over that column on the cluster, which
        also refuses missing labels, naming the column and their count (``task`` skips it).
    subset : str, optional
        Column naming each row's subset. Without it SOAK is plain K-fold CV.
    group : str, optional
        Rows sharing a value of this column (e.g. the pixels of one polygon) stay in one fold.
    fold : str, optional
        A fold column with values 1..K, used as is instead of assigning folds.
        ``label``, ``subset``, ``group`` and ``fold`` must be different columns.
    features : sequence of str, optional
        Feature columns, used as given (coordinates included). Default: every other numeric or
        boolean column, except ``exclude`` and (see ``coordinates``) coordinate columns.
    exclude : sequence of str
        Columns that are never features (e.g. ids). Names that are not columns are refused.
    coordinates : {"exclude", "include"}
        What the default features do with columns named like coordinates (``COORDINATE_NAMES``:
        x, y, xcoord, ycoord, lon, lat, longitude, latitude, easting, northing, row, col…,
        ignoring case and "_", "-", "." or spaces). "exclude" (default) leaves them out with a
        warning naming them, since a model that learns where rows are changes what same,
        other and all compare; they are recorded in ``Table.excluded_coordinates`` and the
        results. "include" makes them features like any other column.
    coords : sequence of str, optional
        Coordinate columns, e.g. ``("x", "y")``: kept in the table as its coordinates
        (``Table.coords``) for the spatial functions, never default features (name them in
        ``features`` to use them as features too), and without the coordinate warning.
    task : str, optional
        "classification" or "regression": overrides the task inferred from the label.
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
    >>> df = df.assign(lon=[10.0, 11.0, 12.0, 13.0], label=[0.0, 1.0, 1.0, 0.0])
    >>> table = sd.load_table(df, label="label", subset="region", exclude=["y"])  # warns
    >>> table.features, table.excluded_coordinates, table.task
    (('x1',), ('lon',), 'classification')
    """
    if rows_per_partition is not None and (
        not isinstance(rows_per_partition, int | np.integer) or rows_per_partition < 1
    ):
        raise ValueError(f"rows_per_partition={rows_per_partition!r}: need a positive integer")
    if isinstance(features, str) or (features is not None and not len(features)):
        raise ValueError(
            f"features={features!r}: need a list of feature column names; leave features out "
            "to use every numeric column besides the role columns"
        )
    if task is not None and task not in ("classification", "regression"):
        raise ValueError(f"task={task!r} is not 'classification' or 'regression'")
    if coordinates not in ("exclude", "include"):
        raise ValueError(f"coordinates={coordinates!r} is not 'exclude' or 'include'")
    ddf, name, files = _open(source, storage_options, rows_per_partition or ROWS_PER_PARTITION)
    columns = list(ddf.columns)
    duplicated = sorted({c for c in columns if columns.count(c) > 1})
    if duplicated:
        raise ValueError(f"duplicate column names {duplicated} in {name}: rename them first")
    roles = {"label": label, "subset": subset, "group": group, "fold": fold}
    for role, col in roles.items():
        if col is not None and col not in columns:
            raise ValueError(
                f"{role} column {col!r} is not in {name}{_did_you_mean(col, columns)}; "
                f"available columns: {columns}"
            )
    _check_one_role(roles)
    _check_known(exclude, columns, "exclude", name)
    _check_role_types(source, ddf, roles)
    coords = check_coords(coords, ddf, roles, name)
    used = {c for c in roles.values() if c is not None} | set(coords)
    skipped: list[str] = []
    if features is None:
        features, skipped = _default_features(ddf, used, exclude, coordinates, name)
    features = list(features)
    _check_features(ddf, features, used - set(coords), name)
    both = [c for c in features if c in exclude]
    if both:
        raise ValueError(f"columns {both} are both in features and in exclude; keep one")
    task = task or _infer_task(ddf, label, name)
    keep = [*features, *(c for c in roles.values() if c is not None), *coords]
    keep = list(dict.fromkeys(keep))
    ddf = ddf[keep]
    if subset is None:
        ddf = ddf.assign(**{SUBSET_COLUMN: SINGLE_SUBSET})
    if skipped:
        warnings.warn(coordinates_warning(skipped), UserWarning, stacklevel=2)
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
        files=files,
        excluded_coordinates=tuple(skipped),
        coords=coords,
    )


def check_coords(
    coords: Sequence[str] | None, ddf: dd.DataFrame, roles: dict[str, str | None], name: str
) -> tuple[str, ...]:
    """The coordinate columns ``coords`` checked: column names of ``ddf``, numeric, distinct,
    with no other role; ``()`` when none are given."""
    if coords is None:
        return ()
    if isinstance(coords, str) or len(coords) < 1:
        raise ValueError(f"coords={coords!r}: need a list of coordinate columns, e.g. ['x', 'y']")
    coords = tuple(coords)
    _check_known(coords, list(ddf.columns), "coords", name)
    if len(set(coords)) < len(coords):
        raise ValueError(f"coords={list(coords)} names a column twice")
    taken = {col: role for role, col in roles.items() if col in coords}
    if taken:
        raise ValueError(f"coords={list(coords)}: {taken} already have a role; a column has one")
    bad = [c for c in coords if not pd.api.types.is_numeric_dtype(ddf[c].dtype)]
    if bad:
        raise ValueError(
            f"coordinate columns {bad} are not numeric (dtypes "
            f"{[str(ddf[c].dtype) for c in bad]}): give projected coordinates as numbers"
        )
    return coords


def is_coordinate_name(column: Any) -> bool:
    """Whether ``column`` is named like a coordinate (see ``COORDINATE_NAMES``).

    Examples
    --------
    >>> [is_coordinate_name(c) for c in ["X_Coord", "Latitude", "B04", "row_id"]]
    [True, True, False, False]
    """
    return (
        isinstance(column, str)
        and "".join(ch for ch in column.lower() if ch not in "_-. ") in COORDINATE_NAMES
    )


def coordinates_warning(columns: Sequence[str]) -> str:
    """The warning that the default features leave out the coordinate columns ``columns``
    (given by ``load_table``, listed by ``soak_dask.describe_table``)."""
    return (
        f"coordinate columns {list(columns)} are left out of the features (a model that "
        "learns where rows are changes what same, other and all compare); to use them, pass "
        "coordinates='include' (soak: --coordinates include) or name them in features; "
        "exclude them to leave them out without this warning"
    )


def _default_features(
    ddf: dd.DataFrame, used: set, exclude: Sequence[str], coordinates: Coordinates, name: str
) -> tuple[list[str], list[str]]:
    """The default features: numeric or boolean columns without a role, not excluded; and the
    coordinate columns left out of them."""
    numeric = [
        c
        for c in ddf.columns
        if c not in used
        and c not in exclude
        and (pd.api.types.is_numeric_dtype(ddf[c].dtype) or ddf[c].dtype == bool)
    ]
    skipped = [c for c in numeric if coordinates == "exclude" and is_coordinate_name(c)]
    features = [c for c in numeric if c not in skipped]
    if not features:
        also = (
            f"; the coordinate columns {skipped} are left out unless you pass "
            "coordinates='include' or name them in features"
            if skipped
            else ""
        )
        raise ValueError(
            f"no numeric feature columns in {name} besides the role columns{also}; "
            f"pass features=[...] (columns: {list(ddf.columns)})"
        )
    return features, skipped


def _check_one_role(roles: dict[str, str | None]) -> None:
    """Refuse a column named for two roles (label, subset, group, fold)."""
    seen: dict[str, str] = {}
    for role, col in roles.items():
        if col is None:
            continue
        if col in seen:
            raise ValueError(
                f"column {col!r} is given as both the {seen[col]} and the {role}; a column has "
                f"one role: name another column for the {role}"
            )
        seen[col] = role


def _did_you_mean(name: Any, columns: list) -> str:
    """`` (did you mean 'y'?)`` naming the columns close to ``name`` (ignoring case: 'Y' finds
    'y'), or ""."""
    by_lower: dict[str, list[str]] = {}
    for col in columns:
        by_lower.setdefault(str(col).lower(), []).append(str(col))
    near = difflib.get_close_matches(str(name).lower(), list(by_lower), n=3)
    close = [c for lower in near for c in by_lower[lower]]
    return f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""


def _check_known(names: Sequence[str], columns: list, what: str, name: str) -> None:
    """Refuse names in ``what`` (features or exclude) that are not columns, with close
    matches."""
    if isinstance(names, str):
        raise ValueError(f"{what}={names!r}: need a list of column names, e.g. [{names!r}]")
    unknown = [c for c in names if c not in columns]
    if not unknown:
        return
    described = [f"{col!r}{_did_you_mean(col, columns)}" for col in unknown]
    raise ValueError(
        f"{what} names columns that are not in {name}: {', '.join(described)}; "
        f"available columns: {columns}"
    )


def _check_features(ddf: dd.DataFrame, features: list[str], used: set, name: str) -> None:
    _check_known(features, list(ddf.columns), "features", name)
    twice = list(dict.fromkeys(c for c in features if features.count(c) > 1))
    if twice:
        raise ValueError(f"features names {twice} more than once; give each feature column once")
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


def _check_role_types(source: Any, ddf: dd.DataFrame, roles: dict[str, str | None]) -> None:
    """Refuse a fold column that is not numeric, and label, subset or group columns of a pandas
    frame that mix value types (Dask would turn 1 and '1' into one string; other sources are
    checked where their values are first counted, on the cluster)."""
    pandas = isinstance(source, pd.DataFrame)
    fold = roles["fold"]
    # A pandas frame's own dtype: Dask would show an object column of ints as strings.
    dtype = None if fold is None else (source if pandas else ddf)[fold].dtype
    if dtype is not None and (
        pd.api.types.is_bool_dtype(dtype) or not pd.api.types.is_numeric_dtype(dtype)
    ):
        raise ValueError(
            f"fold column {fold!r} has dtype {dtype}, not integers 1..K; cast it to integers "
            f"first (e.g. df[{fold!r}] = df[{fold!r}].astype(int))"
        )
    if pandas:
        for role in ("label", "subset", "group"):
            if roles[role] is not None:
                check_one_type(source[roles[role]], roles[role], role)


def check_one_type(values: pd.Series, column: str, role: str = "") -> None:
    """Refuse a column whose values mix Python types (e.g. 1 and '1'), naming some of them.

    Such values are merged or kept apart depending on the step (Dask casts them to strings,
    pandas groups them apart), so subsets, classes or groups would not be what the user meant.

    Parameters
    ----------
    values : Series
        The column, or its distinct values; only an object or categorical column can mix.
    column : str
        Its name, for the message.
    role : str
        "label", "subset" or "group", for the message.
    """
    if isinstance(values.dtype, pd.CategoricalDtype):
        values = pd.Series(values.dtype.categories)
    if values.dtype != object:
        return
    if not pd.api.types.infer_dtype(values, skipna=True).startswith("mixed"):
        return
    distinct = pd.Series(values.dropna().unique())
    clash = distinct[distinct.map(str).duplicated(keep=False)]
    types = distinct.map(lambda v: type(v).__name__)
    shown = clash if len(clash) else distinct[~types.duplicated()]
    examples = ", ".join(f"{v!r} ({type(v).__name__})" for v in shown.head(6))
    same = " that read the same" if len(clash) else ""
    raise ValueError(
        f"{role + ' ' if role else ''}column {column!r} mixes value types{same}: {examples}; "
        f"cast it to one type first (e.g. df[{column!r}] = df[{column!r}].astype(str))"
    )


def _infer_task(ddf: dd.DataFrame, label: str, name: str) -> Task:
    """The task of ``label``, as scikit-learn's ``type_of_target`` calls it: a float column is
    a class label ("binary"/"multiclass") when all its values are whole numbers, else
    "continuous" (regression); any other dtype is a class label.

    Only a float column is read, in one pass over that column that returns two counts; its
    missing values are refused first, since a 0/1 label with a gap would otherwise be read as
    a float and taken for a quantity.
    """
    y = ddf[label]
    if not pd.api.types.is_float_dtype(y.dtype):
        return "classification"
    missing = y.isna()
    n_missing, n_fractional = dd.compute(missing.sum(), (~missing & (y % 1 != 0)).sum())
    if n_missing:
        raise ValueError(
            f"label column {label!r} has {int(n_missing)} missing values in {name}; drop those "
            f"rows first (e.g. df = df.dropna(subset=[{label!r}])), or fill them"
        )
    return "regression" if n_fractional else "classification"


def _open(
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
