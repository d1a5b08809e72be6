"""Identity of a table's data, which a checkpoint records: the same in a new process for the
same files, different when they are rewritten.

- Parquet: per file, its path, size, modification time (ns when local) and a SHA-256 of its
  footer (row groups, rows, per-column statistics), read anyway when the table is opened.
- CSV/TSV: per file, its path, size and modification time.
- Zarr store: per top-level entry (a variable, or a metadata file), a SHA-256 of the sizes and
  modification times of its files.
- Anything else (pandas, xarray in memory, a Dask DataFrame): Dask's token of the lazy frame,
  which hashes the values of in-memory data, but for a user's Dask frame only its graph.

What it cannot see is documented in docs/scaling.md ("Checkpoints").
"""

from __future__ import annotations

import glob
import hashlib
import os
import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import dask.base
import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
from fsspec.implementations.local import LocalFileSystem

if TYPE_CHECKING:
    import dask.dataframe as dd

    from .table import Table

#: Column naming each row's file in ``SourceFiles.rows_by_file`` (the duplicate check's input).
FILE_COLUMN = "__soak_file__"

#: Keys of fsspec's ``info`` that stand for a file's version on stores without ``mtime``.
_MODIFIED = (
    "mtime",
    "LastModified",
    "last_modified",
    "updated",
    "ETag",
    "etag",
    "md5Hash",
    "created",
)


@dataclass(frozen=True)
class SourceFiles:
    """The files a table reads, fingerprinted when a run with a checkpoint starts.

    Attributes
    ----------
    fs : fsspec.AbstractFileSystem
        Their file system.
    kind : {"parquet", "csv", "zarr"}
    paths : tuple of str
        The Parquet or CSV files, or the Zarr store's root.
    footers : tuple of str
        Per Parquet file, the SHA-256 of its footer as the table read it ("" for a CSV file;
        empty for Zarr).
    rows_by_file : callable, optional
        Makes a lazy frame of the files' rows (of the files named by its optional argument,
        a collection of ``paths``; default all), read as the table reads them, with a column
        `FILE_COLUMN` naming each row's file (``soak_dask.tables.duplicates`` reads it);
        None for a Zarr store.
    """

    fs: Any
    kind: Literal["parquet", "csv", "zarr"]
    paths: tuple[str, ...]
    footers: tuple[str, ...] = ()
    rows_by_file: Callable[..., dd.DataFrame] | None = field(
        default=None, repr=False, compare=False
    )

    def _key(self, path: str) -> str:
        """A file as the fingerprint names it: a local one by its real path (the same file
        reached through a link is one file)."""
        return os.path.realpath(path) if isinstance(self.fs, LocalFileSystem) else path

    def fingerprint(self) -> dict[str, str]:
        """``{file or store entry: its state}``, stat'ed now."""
        if self.kind != "zarr":
            infos = file_infos(self.fs, self.paths)
            return {
                self._key(path): _stamp(self.fs, infos[path])
                + (f", footer {footer}" if footer else "")
                for path, footer in zip(self.paths, self.footers, strict=True)
            }
        (root,) = self.paths
        self.fs.invalidate_cache(root)
        listing = self.fs.find(root, detail=True)
        entries: dict[str, list[str]] = {}
        for path, info in sorted(listing.items()):
            relative = path[len(root.rstrip("/")) + 1 :]
            entries.setdefault(relative.split("/")[0], []).append(
                f"{relative} {_stamp(self.fs, info)}"
            )
        return {
            entry: f"{len(lines)} files, {_digest(chr(10).join(lines).encode())}"
            for entry, lines in entries.items()
        }


def footer_digest(metadata: pq.FileMetaData) -> str:
    """SHA-256 (16 hex digits) of a Parquet footer: row groups, rows, column statistics."""
    sink = pa.BufferOutputStream()
    metadata.write_metadata_file(sink)
    return _digest(sink.getvalue().to_pybytes())


def data_fingerprint(table: Table) -> dict[str, Any]:
    """What identifies ``table``'s data in a checkpoint's settings (see the module's doc)."""
    if table.files is not None:
        return {table.files.kind: table.files.fingerprint()}
    return {"token": dask.base.tokenize(table.data)}


def canonical_source(source: Any) -> Any:
    """A table's ``source`` as a checkpoint identifies it: a local path absolute, with links
    resolved (for a glob, the folder it starts from), so that the same data named by a
    relative and then an absolute path, or through a link, is one source; a URL, and a name
    of in-memory data (no such path), as given."""
    if not isinstance(source, str | os.PathLike):
        return source
    text = os.fspath(source)
    protocol, _ = fsspec.core.split_protocol(text)
    if protocol not in (None, "file"):
        return text
    parts = Path(text.removeprefix("file://")).parts
    plain = next((i for i, part in enumerate(parts) if glob.has_magic(part)), len(parts))
    base = Path(*parts[:plain]) if plain else Path(".")
    if not base.exists():
        return text
    return str(base.resolve().joinpath(*parts[plain:]))


def file_infos(fs: Any, paths: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """fsspec's ``info`` of each file, from one fresh listing per folder (one request per
    folder on an object store, rather than one per file)."""
    if isinstance(fs, LocalFileSystem):
        return {path: {"name": path, "size": os.path.getsize(path)} for path in paths}
    listed: dict[str, dict[str, Any]] = {}
    for folder in dict.fromkeys(posixpath.dirname(path) for path in paths):
        fs.invalidate_cache(folder)  # a listing cached earlier in this process may be stale
        listed.update((info["name"], info) for info in fs.ls(folder, detail=True))
    return {path: listed.get(path) or fs.info(path) for path in paths}


def _stamp(fs: Any, info: dict[str, Any]) -> str:
    """Size and modification time of a file (ns for local files) as fsspec lists it."""
    if isinstance(fs, LocalFileSystem):
        modified: Any = os.stat(info["name"]).st_mtime_ns
    else:
        modified = next((info[k] for k in _MODIFIED if info.get(k) is not None), "unknown")
    return f"{info.get('size')} bytes, modified {modified}"


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]
