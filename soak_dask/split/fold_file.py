"""A fold file: a table's fold column as a Parquet dataset keyed by row position, with the
row's key columns (label, coordinates, group) beside it, and its way back onto the table.

``soak knndm`` writes one (``folds.parquet``); ``attach_folds`` joins it to the training
table on the row position -- never on float coordinates -- after checking, row by row, that
the key columns both hold agree: a fold file of another table, or of the table's rows in
another order, is refused, naming the first row that differs.

A ``Table`` keeps only its feature and role columns, so it has no id column of its own: a
row is identified by its 0-based position in the table's row order (the files' order, each
file's rows in order), which no partitioning changes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import dask.dataframe as dd
import fsspec
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..tables.table import Table, check_table
from .overlap import POSITION, with_positions
from .shares import partition_lengths, partition_starts

#: The row position column of a fold file.
ROW = "row_position"
#: The Parquet metadata key that marks a fold file and says what it holds.
METADATA_KEY = b"soak_dask.fold_file"


def fold_file_columns(table: Table, column: str) -> list[str]:
    """The columns of ``table``'s fold file: ``ROW``, the label, the coordinates, the group
    column if any, and the fold column ``column``."""
    keys = [table.label, *table.coords, *([table.group] if table.group else [])]
    if ROW in keys:
        raise ValueError(
            f"column {ROW!r} of the table is a key column, and a fold file names its row "
            "positions so: rename that column"
        )
    return [ROW, *dict.fromkeys(keys), column]


def write_fold_file(table: Table, column: str, path: str | os.PathLike) -> int:
    """Write ``table``'s fold column ``column`` as a fold file at ``path`` (a Parquet
    dataset, one file per partition, in row order), with each row's position and key
    columns; the rows written."""
    columns = fold_file_columns(table, column)
    lengths = partition_lengths(table.data)
    data = with_positions(table, lengths).data.rename(columns={POSITION: ROW})
    about = {"fold": column, "keys": columns[1:-1], "rows": int(lengths.sum())}
    about["split"] = not pd.api.types.is_integer_dtype(table.data._meta[column].dtype)
    meta = {METADATA_KEY: json.dumps(about).encode()}
    data[columns].to_parquet(path, write_index=False, overwrite=True, custom_metadata=meta)
    return about["rows"]


def read_fold_file_info(path: str | os.PathLike) -> dict[str, Any]:
    """What the fold file at ``path`` holds (``fold``, ``keys``, ``rows``, ``split``), read
    from its first file's metadata; a missing path, or Parquet that no ``soak knndm``
    wrote, is refused."""
    fs, root = fsspec.core.url_to_fs(os.fspath(path))
    if not fs.exists(root):
        raise FileNotFoundError(f"fold file {os.fspath(path)!r} does not exist")
    metadata = _first_metadata(fs, root)
    if METADATA_KEY not in metadata:
        raise ValueError(
            f"{os.fspath(path)!r} is not a fold file (no {METADATA_KEY.decode()!r} metadata): "
            "give the folds.parquet that soak knndm wrote, or load a table with its own fold "
            "column with load_table(..., fold=COLUMN)"
        )
    return json.loads(metadata[METADATA_KEY])


def refuse_split(path: str | os.PathLike, flag: str) -> None:
    """Refuse the fold file at ``path`` given as ``flag`` (a command's option for CV folds)
    when it holds a train/test split (``soak knndm --test-prop``), not folds."""
    if read_fold_file_info(path)["split"]:
        raise ValueError(
            f"{flag} {os.fspath(path)}: a train/test split of soak knndm --test-prop, not CV "
            "folds: give the folds.parquet of a soak knndm run without --test-prop, or join "
            "the split with soak_dask.attach_folds in Python"
        )


def _first_metadata(fs: Any, root: str) -> dict[bytes, bytes]:
    """The Parquet metadata of the file at ``root``, or of the first ``.parquet`` file in the
    folder ``root``; empty when there is none."""
    files = [root] if fs.isfile(root) else sorted(fs.glob(f"{root.rstrip('/')}/*.parquet"))
    if not files:
        return {}
    with fs.open(files[0], "rb") as f:
        return pq.read_schema(f).metadata or {}


def is_fold_file(path: Any) -> bool:
    """Whether ``path`` names an existing fold file (its Parquet carries the fold file's
    mark); False for anything else: no such path, a folder of other files, a CSV."""
    if not isinstance(path, str | os.PathLike):
        return False
    fs, root = fsspec.core.url_to_fs(os.fspath(path))
    try:
        return fs.exists(root) and METADATA_KEY in _first_metadata(fs, root)
    except (OSError, pa.ArrowException):  # not Parquet: a CSV or other file of that name
        return False


def attach_folds(table: Table, path: str | os.PathLike) -> Table:
    """``table`` with the fold column of the fold file at ``path`` (``soak knndm``'s
    ``folds.parquet``), joined on each row's position, as its fold role.

    One pass checks, before anything uses the folds, that the file holds a fold for every
    row of the table and that every key column both hold (label, coordinates, group) has
    the same value in each row. Each partition then reads only its own rows of the file
    (their positions' row groups).

    Parameters
    ----------
    table : Table
        The training table the folds were made for, loaded from the same data (any
        partitioning; the same row order).
    path : str or path
        The fold file.

    Returns
    -------
    Table
        ``table`` with the fold column (its fold role: ``soak``, ``evaluate`` and
        ``fold_summary`` use it as it is). A train/test split's column ("train"/"test",
        ``soak knndm --test-prop``) is added with no fold role.

    Examples
    --------
    >>> import soak_dask as sd
    >>> table = sd.load_table("train.parquet", label="VW", coords=["x", "y"])  # doctest: +SKIP
    >>> folded = sd.attach_folds(table, "knndm_out/folds.parquet")  # doctest: +SKIP
    >>> sd.evaluate(folded, "linear")  # doctest: +SKIP
    """
    check_table(table, "attach_folds")
    data, info = join_fold_file(table.data, path)
    if info["split"]:
        return replace(table, data=data, files=None)
    # Recorded with the roles: the results say which file the folds came from.
    made = replace(table, spatial={**table.spatial, "fold_file": os.fspath(path)})
    return made.with_fold(data, info["fold"])


def join_fold_file(data: dd.DataFrame, path: str | os.PathLike) -> tuple[dd.DataFrame, dict]:
    """``data`` with the fold file's fold column, joined on each row's position after one
    pass that checks every row and key column (as `attach_folds` says), and the file's
    `read_fold_file_info`: the join of `attach_folds` and of ``soak aoa --folds FILE``."""
    info = read_fold_file_info(path)
    fold, keys = info["fold"], [k for k in info["keys"] if k in data.columns]
    _check_columns(data.columns, info, keys, path)
    lengths = partition_lengths(data)
    if int(lengths.sum()) != info["rows"]:
        raise ValueError(
            f"fold file {os.fspath(path)!r} holds the folds of {info['rows']:,} rows and the "
            f"table has {int(lengths.sum()):,}: load the table kNNDM was run on"
        )
    args = (os.fspath(path), fold, keys, partition_starts(lengths))
    dtype = np.dtype(object) if info["split"] else np.dtype(np.int64)
    column = {fold: pd.Series(dtype=dtype)}
    checked = data[keys].map_partitions(file_part, *args, meta=data._meta[keys].assign(**column))
    checked.map_partitions(len).compute()  # refuses a row that differs, naming it
    return data.map_partitions(file_part, *args, meta=data._meta.assign(**column)), info


def _check_columns(columns: Any, info: dict[str, Any], keys: list[str], path: Any) -> None:
    """Refuse a fold column the table already has, and a table with none of the key
    columns (nothing would show the file is its own)."""
    if info["fold"] in columns:
        raise ValueError(
            f"the table already has a column {info['fold']!r}, the fold file's fold column: "
            "load it without that column"
        )
    if not keys:
        raise ValueError(
            f"the table has none of the fold file's key columns {info['keys']} (label, "
            f"coordinates, group of the table kNNDM was run on), so {os.fspath(path)!r} "
            "cannot be checked against it: load the table with those columns"
        )


def file_part(
    part: pd.DataFrame,
    path: str,
    fold: str,
    keys: Sequence[str],
    starts: np.ndarray,
    partition_info: dict | None = None,
) -> pd.DataFrame:
    """``part`` with the fold file's fold of each of its rows, read from the file's rows of
    this partition's positions; a missing row, or a key column whose value differs, is
    refused, naming the row."""
    start = int(starts[partition_info["number"]]) if partition_info else 0
    stop = start + len(part)
    fs, root = fsspec.core.url_to_fs(path)
    rows = pq.read_table(
        root, columns=[ROW, fold, *keys], filters=[(ROW, ">=", start), (ROW, "<", stop)],
        filesystem=fs,
    ).to_pandas().sort_values(ROW, kind="stable")  # fmt: skip
    if not np.array_equal(rows[ROW].to_numpy(), np.arange(start, stop)):
        raise ValueError(f"fold file {path!r} lacks folds of rows {start:,} to {stop - 1:,}")
    for key in keys:
        mine, theirs = part[key].astype(object).to_numpy(), rows[key].astype(object).to_numpy()
        same = (mine == theirs) | (pd.isna(mine) & pd.isna(theirs))
        if not same.all():
            i = int(np.flatnonzero(~same)[0])
            raise ValueError(
                f"row {start + i:,} of the table has {key}={mine[i]!r} and fold file {path!r} "
                f"{key}={theirs[i]!r}: the folds were made for another table, or for its rows "
                "in another order; load the table kNNDM was run on, as it was loaded then"
            )
    return part.assign(**{fold: rows[fold].to_numpy()})
