"""``load_table``: open a table lazily and name the role of its columns."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import dask.dataframe as dd
import numpy as np
import pandas as pd
import xarray as xr

from ..user_warning import warn_user
from .column_traps import check_column_traps
from .crs import source_crs
from .duplicates import Duplicates, check_duplicates
from .parquet import ROWS_PER_PARTITION
from .roles import (
    Coordinates,
    check_coords,
    check_features,
    check_roles,
    coordinates_warning,
    default_features,
    infer_task,
)
from .sources import open_source
from .table import SINGLE_SUBSET, SUBSET_COLUMN, Table, Task


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
    crs: Any = None,
    task: Task | None = None,
    storage_options: dict | None = None,
    rows_per_partition: int | None = None,
    duplicates: Duplicates = "refuse",
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
    crs : str, int or pyproj.CRS, optional
        The coordinates' CRS (e.g. ``"EPSG:32632"``), when the files do not say: a GeoParquet
        file's ``geo`` metadata, or the one ``soak extract`` writes, is read (``Table.crs``);
        a different one given here is refused. The spatial functions then measure and label
        distances in its unit, and refuse degrees where they need metres.
    task : str, optional
        "classification" or "regression": overrides the task inferred from the label.
    storage_options : dict, optional
        Passed to fsspec for remote sources (credentials, endpoint).
    rows_per_partition : int, optional
        Rows per Dask partition (default 500,000), the unit a task reads and holds: lower it
        for workers with little memory. Parquet row groups are combined up to this many rows,
        so a partition is never smaller than one row group; in-memory frames and Datasets are
        cut to it; a chunked Zarr store keeps its chunks.
    duplicates : {"refuse", "allow"}
        Rows found in more than one file of a CSV or Parquet folder or glob (a file and its
        copy, two exports that overlap), equal in every column the table reads, are refused
        (default) with the files and the count named, or allowed. Checking costs one pass
        over the files' rows (hashed on the workers) when there are several files, after
        comparing the bytes of files of equal size; see ``soak_dask.tables.duplicates``.

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
    _check_options(rows_per_partition, features, task, coordinates, duplicates)
    rows = rows_per_partition or ROWS_PER_PARTITION
    ddf, name, files = open_source(source, storage_options, rows)
    roles = {"label": label, "subset": subset, "group": group, "fold": fold}
    check_roles(source, ddf, roles, exclude, name)
    coords = check_coords(coords, ddf, roles, name)
    crs = source_crs(files, crs, coords, name, source)
    used = {c for c in roles.values() if c is not None} | set(coords)
    given = features is not None
    features, skipped = _features(ddf, features, used, coords, exclude, coordinates, name)
    # Features the user names are not doubted: only default ones may be warned about as ids.
    ids = check_column_traps(ddf, roles, () if given else features, name)
    task = task or infer_task(ddf, label, name)
    keep = list(dict.fromkeys([*features, *(c for c in roles.values() if c is not None), *coords]))
    check_duplicates(files, keep, name, duplicates)
    ddf = ddf[keep]
    if subset is None:
        ddf = ddf.assign(**{SUBSET_COLUMN: SINGLE_SUBSET})
    for message in (coordinates_warning(skipped) if skipped else None, ids):
        if message:
            warn_user(message)
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
        crs=crs,
    )


def _check_options(
    rows_per_partition: int | None,
    features: Sequence[str] | None,
    task: Task | None,
    coordinates: Coordinates,
    duplicates: Duplicates,
) -> None:
    """Refuse option values that no table could make right, before anything is opened."""
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
    if duplicates not in ("refuse", "allow"):
        raise ValueError(f"duplicates={duplicates!r} is not 'refuse' or 'allow'")


def _features(
    ddf: dd.DataFrame,
    features: Sequence[str] | None,
    used: set,
    coords: tuple[str, ...],
    exclude: Sequence[str],
    coordinates: Coordinates,
    name: str,
) -> tuple[list[str], list[str]]:
    """The feature columns, checked (the default ones without ``features``), and the coordinate
    columns the default left out."""
    skipped: list[str] = []
    if features is None:
        features, skipped = default_features(ddf, used, exclude, coordinates, name)
    features = list(features)
    check_features(ddf, features, used - set(coords), name)
    both = [c for c in features if c in exclude]
    if both:
        raise ValueError(f"columns {both} are both in features and in exclude; keep one")
    return features, skipped
