"""Rows repeated across the files of a table: a file and its copy, or two exports that overlap.

Concatenated silently, such rows land in train and test folds alike, and every score is too
good. ``load_table`` refuses them, naming the files and the count, unless the user allows them
(``duplicates="allow"``). Only tables read from several CSV or Parquet files are checked.

Two steps, the cheap one first:

1. **Identical files**, without reading their rows: files of one size (Parquet: and one footer)
   are read as bytes, on the workers, and compared by SHA-256.
2. **Rows found in more than one file**: a pass over the files, each partition hashing the
   values of its rows (``pandas.util.hash_pandas_object``, 8 bytes a row) and keeping each
   (file id, hash) once, cut into buckets by hash; one task per bucket gathers it from every
   partition and counts the hashes seen in more than one file, and only those counts per
   pair of files reach the client (with each partition's file names). The first pass reads
   and hashes only a few numeric columns (``probe_columns``: rows equal in every column are
   equal in these), and the pass over every column of the table runs only when that one
   finds rows in several files, and reads only those files: for a table of measured values,
   a read of 3 columns instead of all of them.

Rows repeated within one file are not counted (they may be real, equal observations); two
rows are taken to be equal when their 64-bit hashes are (a false match has a chance of about
one in 10^19 per pair of rows).
"""

from __future__ import annotations

import hashlib
import posixpath
from collections import defaultdict
from collections.abc import Sequence
from typing import Any, Literal, NamedTuple

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

from .checks import named
from .fingerprint import FILE_COLUMN, SourceFiles, file_infos

Duplicates = Literal["refuse", "allow"]
#: Bytes read at a time when a file is hashed whole.
_CHUNK = 1 << 22
#: Partitions whose row hashes one task of the duplicate check holds (a bucket of each of
#: them, about this many partitions' worth), and the most buckets (tasks) it makes.
_PER_BUCKET = 4
_MAX_BUCKETS = 64
#: Columns the first pass hashes: one float32 band alone is shared by 38,436 of the 1M
#: benchmark pixels with a pixel of another file, three bands apart by none.
_PROBE = 3


def file_digest(fs: Any, path: str) -> str:
    """SHA-256 of the bytes of ``path`` on ``fs``, read in chunks."""
    digest = hashlib.sha256()
    with fs.open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def identical_files(files: SourceFiles) -> list[list[str]]:
    """Groups of files with the same bytes; only files that share their size (and Parquet
    footer) with another are read, on the workers."""
    infos = file_infos(files.fs, files.paths)
    footers = files.footers or ("",) * len(files.paths)
    alike: dict[tuple, list[str]] = defaultdict(list)
    for path, footer in zip(files.paths, footers, strict=True):
        alike[(infos[path].get("size"), footer)].append(path)
    candidates = [path for group in alike.values() if len(group) > 1 for path in group]
    digests = dask.compute(*(dask.delayed(file_digest)(files.fs, p) for p in candidates))
    same: dict[str, list[str]] = defaultdict(list)
    for path, digest in zip(candidates, digests, strict=True):
        same[digest].append(path)
    return [group for group in same.values() if len(group) > 1]


def row_hashes(frame: pd.DataFrame, n_buckets: int) -> tuple[Any, ...]:
    """Each distinct (file, row hash) of a partition, cut into ``n_buckets`` by hash, and last
    ``{file id: file name}`` of the partition's files. A row's hash is of its values in every
    column but ``FILE_COLUMN``; its file is the 64-bit hash of its name (``file_ids``), so the
    buckets hold 16 bytes a row, not a Python string each."""
    values = frame.drop(columns=FILE_COLUMN)
    hashes = pd.util.hash_pandas_object(values, index=False).to_numpy()
    codes, uniques = pd.factorize(frame[FILE_COLUMN])  # a partition holds few files
    names = [str(name) for name in uniques]
    ids = file_ids(names)
    pairs = pd.DataFrame({"file": ids[codes], "hash": hashes}).drop_duplicates(ignore_index=True)
    bucket = (pairs["hash"] % n_buckets).to_numpy()
    return (
        *(pairs[bucket == b] for b in range(n_buckets)),
        dict(zip(ids.tolist(), names, strict=True)),
    )


def file_ids(names: Sequence[str]) -> np.ndarray:
    """A file's id in the duplicate check: the 64-bit hash of its name, the same in every
    partition and worker."""
    return pd.util.hash_array(np.asarray(names, dtype=object))


class Shared(NamedTuple):
    """Rows found in more than one file: ``counts`` per (first, last) file holding them, by
    name, and the names of every ``files`` holding one of them."""

    counts: pd.Series
    files: frozenset[str]


def shared_in_bucket(names: Sequence[dict[int, str]], *pieces: pd.DataFrame) -> Shared:
    """Rows of one bucket found in more than one file, counted per (first, last) file holding
    them by name (``names``: each partition's ``{file id: name}``), and every file holding
    one. Sorted arrays of ids, not a groupby of strings: a bucket of 2M rows takes 97 MB and
    0.8 CPU s (1 GB and 6.5 s with the files as strings, which restarted 2 GiB workers)."""
    named = {i: name for part in names for i, name in part.items()}
    ids = np.array(sorted(named, key=named.__getitem__), dtype=np.uint64)  # by name
    by_id = np.argsort(ids)
    file = np.concatenate([p["file"].to_numpy() for p in pieces]).astype(np.uint64)
    file = by_id[np.searchsorted(ids, file, sorter=by_id)]  # each file's rank by name
    row = np.concatenate([p["hash"].to_numpy() for p in pieces])
    order = np.lexsort((file, row))
    file, row = file[order], row[order]
    new = np.ones(len(row), dtype=bool)
    new[1:] = (row[1:] != row[:-1]) | (file[1:] != file[:-1])  # each (row, file) once
    file, row = file[new], row[new]
    start = np.flatnonzero(np.r_[True, row[1:] != row[:-1]])
    held = np.diff(np.r_[start, len(row)])  # files holding each row
    shared = held > 1
    first, last = file[start[shared]], file[start[shared] + held[shared] - 1]
    counts = pd.DataFrame({"first": first, "last": last}).groupby(["first", "last"]).size()
    in_order = [named[int(i)] for i in ids]
    holding = np.unique(file[np.repeat(shared, held)])
    return Shared(
        counts.rename(index=dict(enumerate(in_order))),
        frozenset(in_order[int(i)] for i in holding),
    )


def shared_rows(by_file: dd.DataFrame) -> Shared:
    """Distinct rows of ``by_file`` found in more than one file, counted per (first, last)
    file holding them (files compared by name; empty when no row is), and the files holding
    them.

    One pass: each partition's (file, hash) pairs are cut into buckets by hash, and each
    bucket gathered from every partition by one task, which holds about `_PER_BUCKET`
    partitions' worth of hashes (16 bytes a row); only the counts and names reach the client.
    """
    n_buckets = max(1, min(_MAX_BUCKETS, by_file.npartitions // _PER_BUCKET))
    cut = [
        dask.delayed(row_hashes, nout=n_buckets + 1)(part, n_buckets)
        for part in by_file.to_delayed()
    ]
    names = [c[n_buckets] for c in cut]
    counts = dask.compute(
        *(dask.delayed(shared_in_bucket)(names, *(c[b] for c in cut)) for b in range(n_buckets))
    )
    found = [c.counts for c in counts if len(c.counts)]
    files = frozenset().union(*(c.files for c in counts))
    if not found:
        return Shared(pd.Series(dtype=int), files)
    return Shared(pd.concat(found).groupby(level=[0, 1]).sum().sort_index(), files)


def short_names(paths: Sequence[str]) -> dict[str, str]:
    """Each path named relative to the folder the paths share (its file name, mostly)."""
    plain = [str(p).split("://", 1)[-1] for p in paths]
    root = posixpath.commonpath(plain) if len(set(plain)) > 1 else posixpath.dirname(plain[0])
    return {p: posixpath.relpath(q, root) if root else q for p, q in zip(paths, plain, strict=True)}


def duplicates_error(name: str, copies: list[list[str]], shared: pd.Series) -> str:
    """The refusal of identical files (``copies``) or rows shared between files (``shared``,
    as `shared_rows` counts them) of the table ``name``."""
    fix = (
        "Rows in several files land in train and test folds alike. Remove the copies or the "
        "overlap, or, if the files hold distinct observations that happen to be equal, pass "
        "duplicates='allow' (soak: --duplicates allow)"
    )
    if copies:
        short = short_names([p for group in copies for p in group])
        listed = named(" = ".join(short[p] for p in group) for group in copies)
        return f"files of {name} hold the same bytes: {listed}. {fix}"
    files = sorted({f for pair in shared.index for f in pair})
    short = short_names(files)
    listed = named(f"{short[a]} and {short[b]} share {n:,}" for (a, b), n in shared.items())
    return (
        f"{int(shared.sum()):,} distinct rows of {name} appear in more than one of its files, "
        f"equal in every column the table reads ({listed}). {fix}"
    )


def check_duplicates(
    files: SourceFiles | None, columns: Sequence[str], name: str, duplicates: Duplicates
) -> None:
    """Refuse a table of several CSV or Parquet files that holds identical files or rows
    found in more than one file, compared in ``columns`` (the table's), unless
    ``duplicates="allow"``.

    Costs, for several files only: reading the bytes of files that share their size with
    another, then one pass over every row of a few numeric columns (``probe_columns``: read
    and hashed on the workers, 16 bytes per distinct row shuffled between them), and a pass
    over every column of the files whose rows match in those, if any. Nothing is read with
    "allow" or for one file, data in memory or a Zarr store.
    """
    if duplicates == "allow" or files is None or files.rows_by_file is None:
        return
    if len(files.paths) < 2:
        return
    copies = identical_files(files)
    if copies:
        raise ValueError(duplicates_error(name, copies, pd.Series(dtype=int)))
    by_file = files.rows_by_file()
    probe = probe_columns(by_file[list(columns)]._meta)
    if len(probe) < len(columns):
        among = shared_rows(by_file[[*probe, FILE_COLUMN]]).files
        if not among:
            return  # no row of one file matches a row of another even in these columns
        # A row in several files is in the files holding its probed values: only they are
        # read whole (all of them, should a file be named otherwise than listed).
        if among <= set(files.paths):
            by_file = files.rows_by_file(among)
    shared = shared_rows(by_file[[*columns, FILE_COLUMN]]).counts
    if len(shared):
        raise ValueError(duplicates_error(name, [], shared))


def probe_columns(meta: pd.DataFrame) -> list[str]:
    """The columns of ``meta`` the duplicate check's first pass hashes: ``_PROBE`` float
    columns spread over the table's floats (neighbouring bands saturate together: the first
    three bands of the benchmark's 1M pixels are all 0 in 95 rows of 4 of its 8 files, its
    1st, 11th and 20th in none), then integer ones likewise if there are fewer floats; none when
    the table has no numeric column. Features come first in the table's columns: they vary
    row to row, where coordinates repeat across the scenes of one grid."""
    floats = [c for c in meta.columns if pd.api.types.is_float_dtype(meta[c])]
    ints = [c for c in meta.columns if pd.api.types.is_integer_dtype(meta[c])]
    return [*_spread(floats, _PROBE), *_spread(ints, _PROBE - min(len(floats), _PROBE))]


def _spread(names: list[str], n: int) -> list[str]:
    """``n`` of ``names``, first and last included, evenly apart (all of them if fewer)."""
    if len(names) <= n:
        return names
    return [names[i] for i in np.linspace(0, len(names) - 1, n).round().astype(int)]
