"""Read delimited text (CSV, TSV) lazily into a Dask DataFrame, with the files that identify it.

The SOAK paper's data sets are CSV files. Dask's ``read_csv`` cuts each file into byte blocks
at line ends (a fixed set of partitions for given files and block size), infers column types
from a sample at the start of the first file and checks every block against them.
"""

from __future__ import annotations

import csv
import glob
import posixpath
from functools import partial
from typing import Any

import dask.dataframe as dd
import fsspec

from .files import data_files
from .fingerprint import FILE_COLUMN, SourceFiles

#: File name endings read as delimited text, and the delimiter each implies (None: sniffed
#: from the header line among ``SNIFFED``).
SUFFIXES = {".csv": ",", ".tsv": "\t", ".tab": "\t", ".txt": None}
COMPRESSIONS = (".gz", ".bz2", ".xz", ".zst")
SNIFFED = ",\t;|"
#: Bytes read from the first file to infer the column types and the size of a row.
SAMPLE_BYTES = 1_000_000


def is_delimited_source(path: str, storage_options: dict | None) -> bool:
    """Whether ``path`` is delimited text: a file or glob with such an ending, or a directory
    holding only such files."""
    fs, root = fsspec.core.url_to_fs(path, **(storage_options or {}))
    if not glob.has_magic(root) and fs.isdir(root):
        return bool(delimited_files(fs, root))
    return is_delimited(root)


def is_delimited(path: str) -> bool:
    """Whether ``path`` (a file, or a glob) names delimited text by its ending."""
    name = path.lower()
    for compression in COMPRESSIONS:
        name = name.removesuffix(compression)
    return name.endswith(tuple(SUFFIXES))


def delimited_files(fs: fsspec.AbstractFileSystem, root: str) -> list[str]:
    """The delimited-text files of a directory (none when it holds other files too: a
    directory mixing tables of several formats is refused by the caller, not half read).
    Hidden files and documentation (``README.txt``, ``notes.md``) are not tables."""
    names = data_files(fs, root)
    return names if names and all(is_delimited(p) for p in names) else []


def open_delimited(
    path: str, storage_options: dict | None, rows_per_partition: int
) -> tuple[dd.DataFrame, SourceFiles]:
    """A lazy frame over CSV/TSV files (a file, a glob or a directory of them).

    Parameters
    ----------
    path : str
        File, glob or directory, local or an fsspec URL.
    storage_options : dict, optional
        fsspec options of remote paths.
    rows_per_partition : int
        Rows per partition, turned into a block size from the size of the sample's rows.
        Compressed files are read whole, one partition each (they cannot be cut).

    Raises
    ------
    FileNotFoundError, ValueError
        No file, an empty file, or a header that names no column; messages name the file.
    """
    fs, root = fsspec.core.url_to_fs(path, **(storage_options or {}))
    if glob.has_magic(root):
        files = sorted(fs.glob(root))
    elif fs.isdir(root):
        files = delimited_files(fs, root)
    else:
        files = [root] if fs.exists(root) else []
    if not files:
        raise FileNotFoundError(f"no CSV/TSV file at {path!r}")
    with fs.open(files[0], "rb", compression="infer") as f:
        sample = f.read(SAMPLE_BYTES)
    header = sample.split(b"\n", 1)[0].decode("utf-8", errors="replace").rstrip("\r")
    if not header.strip():
        raise ValueError(f"{files[0]!r} is empty or starts with an empty line: need a header")
    sep = _delimiter(files[0], header)
    compressed = any(f.lower().endswith(COMPRESSIONS) for f in files)
    rows = max(sample.count(b"\n"), 1)
    blocksize = None if compressed else max(len(sample) // rows * rows_per_partition, 1 << 16)
    read = partial(
        _read,
        fs,
        files,
        sep=sep,
        blocksize=blocksize,
        sample=SAMPLE_BYTES,
        compression="infer",
        storage_options=storage_options,
    )
    by_file = partial(read, include_path_column=FILE_COLUMN)
    # Text files have no footer: their sizes and modification times identify them.
    return read(), SourceFiles(fs, "csv", tuple(files), ("",) * len(files), by_file)


def _read(fs: Any, files: list[str], paths: Any = None, **kwargs: Any) -> dd.DataFrame:
    """``dd.read_csv`` of the ``files`` among ``paths`` (default all): the table, and
    ``SourceFiles.rows_by_file``."""
    urls = [fs.unstrip_protocol(f) for f in files if paths is None or f in paths]
    return dd.read_csv(urls, **kwargs)


def _delimiter(name: str, header: str) -> str:
    stem = name.lower()
    for compression in COMPRESSIONS:
        stem = stem.removesuffix(compression)
    given = SUFFIXES.get(posixpath.splitext(stem)[1])
    if given is not None:
        return given
    try:
        return csv.Sniffer().sniff(header, delimiters=SNIFFED).delimiter
    except csv.Error as err:
        raise ValueError(
            f"cannot tell the delimiter of {name!r} from its header line (tried "
            f"{list(SNIFFED)}); rename it .csv (comma) or .tsv (tab)"
        ) from err
