"""Read Parquet into a Dask DataFrame with fixed, known partitions.

Dask's ``read_parquet`` fuses partitions when columns are projected, and how many depends on
the query. SOAK's folds are computed per partition in two passes, and a persisted projected
frame then refers to partitions that were never made (dask issue 12488). Reading through
``dd.from_map`` gives one partition per piece (row groups of one file), the same for every
query, while columns are still projected into the read.
"""

from __future__ import annotations

import glob
from functools import partial
from typing import Any

import dask.dataframe as dd
import fsspec
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq

from .delimited import is_delimited
from .files import data_files
from .fingerprint import FILE_COLUMN, SourceFiles, footer_digest

#: Target rows per partition; row groups of one file are grouped up to this.
ROWS_PER_PARTITION = 500_000


def open_parquet(
    path: str,
    storage_options: dict | None = None,
    rows_per_partition: int = ROWS_PER_PARTITION,
) -> tuple[dd.DataFrame, SourceFiles]:
    """A lazy frame over a Parquet file, directory (hive partitions allowed) or glob, and its
    files with their footers' digests (which identify the data in a checkpoint).

    Raises a clear error for a glob matching nothing, an empty file, no rows, or files whose
    schemas disagree (columns in another order are fine: they are read by name). Only the
    footers are read here.
    """
    fs, root = fsspec.core.url_to_fs(path, **(storage_options or {}))
    source = _source(fs, root, path)
    try:
        dataset = pads.dataset(
            source,
            filesystem=fs,
            format="parquet",
            partitioning="hive",
            partition_base_dir=root if isinstance(source, list) else None,
        )
        fragments = list(dataset.get_fragments())
    except (pa.ArrowInvalid, OSError) as err:
        raise ValueError(
            f"cannot read Parquet at {path!r}: {err} (CSV and TSV files are read when their "
            "names end in .csv, .tsv, .tab or .txt)"
        ) from err
    if not fragments:
        raise FileNotFoundError(f"no Parquet files under {path!r}")
    _check_schemas(fragments, path)
    partition_fields = [
        f for f in dataset.schema if f.name not in fragments[0].physical_schema.names
    ]
    # Hive keys become plain columns (not dictionaries) so every piece has the same dtypes.
    schema = pa.schema(
        pa.field(f.name, f.type.value_type) if pa.types.is_dictionary(f.type) else f
        for f in dataset.schema
    )
    metas = [frag.metadata for frag in fragments]  # each footer read once
    pieces = [
        piece
        for frag, meta in zip(fragments, metas, strict=True)
        for piece in _pieces(frag, meta, partition_fields, rows_per_partition)
    ]
    if not sum(meta.num_rows for meta in metas):
        raise ValueError(f"the Parquet data at {path!r} has no rows")
    footers = tuple(map(footer_digest, metas))
    meta = schema.empty_table().to_pandas()
    by_file_meta = meta.assign(**{FILE_COLUMN: pd.Series(dtype="category")})
    by_file = partial(_by_file, pieces, fs, schema, by_file_meta)
    paths = tuple(f.path for f in fragments)
    files = SourceFiles(fs, "parquet", paths, footers, rows_by_file=by_file)
    return _frame(read_piece, pieces, fs, schema, meta, "soak-read-parquet"), files


def _frame(
    func: Any, pieces: list, fs: Any, schema: pa.Schema, meta: pd.DataFrame, label: str
) -> dd.DataFrame:
    """One partition per piece, read by ``func``."""
    return dd.from_map(
        func, pieces, fs=fs, schema=schema, meta=meta, label=label, enforce_metadata=False
    )


def _by_file(
    pieces: list, fs: Any, schema: pa.Schema, meta: pd.DataFrame, paths: Any = None
) -> dd.DataFrame:
    """``SourceFiles.rows_by_file``: the rows of the files ``paths`` (default all)."""
    mine = [piece for piece in pieces if paths is None or piece[0] in paths]
    return _frame(read_piece_by_file, mine, fs, schema, meta, "soak-read-files")


def read_piece(
    piece: tuple[str, tuple[int, ...], dict[str, Any]],
    fs: fsspec.AbstractFileSystem,
    schema: pa.Schema,
    columns: list[str] | None = None,
) -> pd.DataFrame:
    """Read row groups of one file (only ``columns``), adding its hive partition keys."""
    path, row_groups, keys = piece
    columns = list(schema.names) if columns is None else list(columns)
    in_file = [c for c in columns if c not in keys]
    try:
        with fs.open(path, "rb") as f:
            table = pq.ParquetFile(f).read_row_groups(list(row_groups), columns=in_file)
    except (pa.ArrowInvalid, OSError) as err:
        # Arrow's messages ("Unexpected end of stream") do not say which file.
        kind = OSError if isinstance(err, OSError) else ValueError
        raise kind(
            f"cannot read row groups {list(row_groups)} of {path}: {' '.join(str(err).split())}; "
            "the file is corrupt or truncated, or changed since the table was loaded"
        ) from err
    for name in columns:
        if name in keys:
            value = pa.array([keys[name]] * table.num_rows, type=schema.field(name).type)
            table = table.append_column(name, value)
    return table.select(columns).cast(pa.schema([schema.field(c) for c in columns])).to_pandas()


def read_piece_by_file(
    piece: tuple[str, tuple[int, ...], dict[str, Any]],
    fs: fsspec.AbstractFileSystem,
    schema: pa.Schema,
    columns: list[str] | None = None,
) -> pd.DataFrame:
    """`read_piece`'s rows (only ``columns``, as ``read_piece``: dask passes the columns a
    selection keeps) with the column ``FILE_COLUMN`` naming their file."""
    columns = list(schema.names) + [FILE_COLUMN] if columns is None else list(columns)
    read = read_piece(piece, fs, schema, [c for c in columns if c != FILE_COLUMN])
    # A category (as dask's read_csv names a row's file): one code a row, not a string each.
    name = pd.Categorical.from_codes(np.zeros(len(read), dtype=np.int8), [piece[0]])
    return read.assign(**{FILE_COLUMN: name})[columns]


#: Endings of Parquet files; other files of a directory have their first bytes checked.
_SUFFIXES = (".parquet", ".parq", ".pq")


def _source(fs: fsspec.AbstractFileSystem, root: str, path: str) -> str | list[str]:
    """What pyarrow is to read for ``path`` (``root`` on ``fs``): the files a glob matches, a
    directory's Parquet files, or the one file; refused when there is nothing to read."""
    if glob.has_magic(root):
        matched = sorted(fs.glob(root))
        if not matched:
            raise FileNotFoundError(f"the pattern {path!r} matches no file")
        return matched
    if not fs.exists(root):
        raise FileNotFoundError(f"no file or directory at {path!r}")
    if fs.isfile(root) and fs.size(root) == 0:
        raise ValueError(f"{path!r} is an empty file, not Parquet")
    return _directory_files(fs, root, path) if fs.isdir(root) else root


def _pieces(
    frag: Any, footer: pq.FileMetaData, partition_fields: list, rows_per_partition: int
) -> list[tuple]:
    """``(path, row groups, hive keys)`` of one file's partitions: its row groups in order,
    grouped up to ``rows_per_partition`` rows."""
    keys = pads.get_partition_keys(frag.partition_expression)
    keys = {f.name: keys.get(f.name) for f in partition_fields}
    pieces, groups, rows = [], [], 0
    for i in range(footer.num_row_groups):
        n = footer.row_group(i).num_rows
        if groups and rows + n > rows_per_partition:
            pieces.append((frag.path, tuple(groups), keys))
            groups, rows = [], 0
        groups.append(i)
        rows += n
    if groups:
        pieces.append((frag.path, tuple(groups), keys))
    return pieces


def _directory_files(fs: fsspec.AbstractFileSystem, root: str, path: str) -> list[str]:
    """The Parquet files of a directory, after refusing one that holds other files, named
    (pyarrow would fail on the first with a message about its bytes, not its name). Hidden
    files (``_SUCCESS``, ``.crc``) and documentation (``README.txt``, ``notes.md``) are no
    tables and are skipped, as pyarrow skips hidden files."""
    files, strange = [], []
    for name in data_files(fs, root):
        if not name.lower().endswith(_SUFFIXES):
            with fs.open(name, "rb") as f:
                if f.read(4) != b"PAR1":
                    strange.append(name[len(root.rstrip("/")) + 1 :])
                    continue
        files.append(name)
    if strange:
        # A folder of CSV files beside other files is no Parquet folder: suggest its CSVs.
        ending = "*.csv" if not files and any(map(is_delimited, strange)) else "*.parquet"
        raise ValueError(
            f"the directory {path!r} holds files that are not Parquet: {strange[:10]}; move "
            f"them out, or name the tables with a glob such as '{path.rstrip('/')}/{ending}'"
        )
    if not files:
        raise FileNotFoundError(f"no Parquet files under {path!r}")
    return files


def _check_schemas(fragments: list, path: str) -> None:
    """Refuse files whose column names or types differ (their order may: pieces are read by
    name)."""
    a = {f.name: str(f.type) for f in fragments[0].physical_schema}
    for frag in fragments[1:]:
        b = {f.name: str(f.type) for f in frag.physical_schema}
        if a != b:
            diff = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
            raise ValueError(
                f"Parquet files under {path!r} have different schemas: {fragments[0].path} and "
                f"{frag.path} differ in columns {diff} ({[a.get(k) for k in diff]} vs "
                f"{[b.get(k) for k in diff]}); make their column names and types agree"
            )
