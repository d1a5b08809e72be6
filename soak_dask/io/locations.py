"""Locations on a file system (a local path or an fsspec URL, ``s3://…``, alike) and the
checks made before anything is written there: not into the input, into a writable place.

The results store, checkpoints, output directories and model directories all use them.
"""

from __future__ import annotations

import glob
import os
import posixpath
import tempfile
import uuid
from dataclasses import dataclass, replace
from pathlib import Path, PurePath, PurePosixPath
from typing import Any

import fsspec
from fsspec.implementations.local import LocalFileSystem


@dataclass(frozen=True)
class Location:
    """A local path or fsspec URL (``s3://bucket/prefix``…), resolved once.

    Attributes
    ----------
    fs : fsspec.AbstractFileSystem
        Its file system, made with the caller's ``storage_options``.
    path : str
        The path on ``fs`` (absolute for a local path).
    shown : str
        As the caller wrote it, for messages: a local path as ``pathlib`` prints it, a URL as is.
    kind : str
        ``"file"`` or ``"directory"`` for an entry listed by ``entries``; otherwise ``""``.
    """

    fs: Any
    path: str
    shown: str
    kind: str = ""

    def __str__(self) -> str:
        return self.shown

    @property
    def local(self) -> bool:
        return isinstance(self.fs, LocalFileSystem)

    @property
    def url(self) -> str:
        """What xarray and zarr open (with ``storage_options``)."""
        return self.shown if self.local else self.fs.unstrip_protocol(self.path)

    @property
    def options(self) -> dict[str, Any]:
        """``storage_options=`` to open ``url`` with xarray or zarr (none for a local path)."""
        return {} if self.local else {"storage_options": dict(self.fs.storage_options)}

    @property
    def name(self) -> str:
        return posixpath.basename(self.path.rstrip("/"))

    def child(self, name: str) -> Location:
        shown = str(Path(self.shown, name)) if self.local else f"{self.shown.rstrip('/')}/{name}"
        return Location(self.fs, f"{self.path.rstrip('/')}/{name}", shown)

    def entries(self) -> list[Location]:
        """What a directory holds, with their kinds, from one fresh listing (another process
        may have written there since a listing was cached)."""
        self.fs.invalidate_cache(self.path)
        return [
            replace(self.child(posixpath.basename(info["name"].rstrip("/"))), kind=info["type"])
            for info in self.fs.ls(self.path, detail=True)
        ]


def locate(path: str | os.PathLike | Location, storage_options: dict | None = None) -> Location:
    """The ``Location`` of a local path or fsspec URL (``storage_options`` go to its file
    system, as in ``load_table``); a ``Location`` is returned as is."""
    if isinstance(path, Location):
        return path
    text = os.fspath(path)
    fs, inner = fsspec.core.url_to_fs(text, **(storage_options or {}))
    if isinstance(fs, LocalFileSystem):
        text = str(Path(text.removeprefix("file://")))
    return Location(fs, inner, text)


def check_apart(
    path: str | os.PathLike | Location,
    source: Any,
    what: str = "results",
    *,
    storage_options: dict | None = None,
    source_name: str = "input table",
) -> None:
    """Refuse a ``path`` that is, holds or lies inside the input table ``source``: a local
    path, or a URL on the same kind of file system (names of in-memory data are ignored).
    ``what`` and ``source_name`` are how the message calls the two."""
    src = _source_key(source)
    if src is None:
        return
    out = _key(locate(path, storage_options))
    if src[0] not in out[0]:
        return
    if out[1] == src[1]:
        relation = f"is the {source_name}"
    elif out[1].is_relative_to(src[1]):
        relation = f"is inside the {source_name}'s directory"
    elif src[1].is_relative_to(out[1]):
        relation = f"holds the {source_name}"
    else:
        return
    raise ValueError(f"{path} {relation} ({source}); write the {what} outside it")


def overlaps(first: str | os.PathLike | Location, second: str | os.PathLike | Location) -> bool:
    """Whether two paths or URLs (on the same kind of file system) are one, or one lies
    inside the other: ``--out`` and ``--checkpoint`` must not."""
    (fs1, a), (fs2, b) = _key(locate(first)), _key(locate(second))
    return bool(set(fs1) & set(fs2)) and (a.is_relative_to(b) or b.is_relative_to(a))


def _key(where: Location) -> tuple[tuple[str, ...], PurePath]:
    """Where a location is, to compare with a source: its file system's protocols and its
    path (local paths with links resolved)."""
    fs_protocols = where.fs.protocol
    protocols = (fs_protocols,) if isinstance(fs_protocols, str) else tuple(fs_protocols)
    if where.local:
        return protocols, Path(where.shown).resolve()
    return protocols, PurePosixPath(where.path)


def _source_key(source: Any) -> tuple[str, PurePath] | None:
    """The protocol and path of the file or directory a table ``source`` names (for a glob,
    the folder it starts from); None for names of in-memory data and local paths that do
    not exist."""
    if not isinstance(source, str | os.PathLike):
        return None
    text = os.fspath(source).removeprefix("file://")
    protocol, rest = fsspec.core.split_protocol(text)
    parts = PurePosixPath(rest).parts if protocol else Path(text).parts
    plain = next((i for i, part in enumerate(parts) if glob.has_magic(part)), len(parts))
    if protocol:
        return protocol, PurePosixPath(*parts[:plain])
    local = Path(*parts[:plain]) if plain else Path(".")
    return ("file", local.resolve()) if local.exists() else None


def check_writable(where: Location) -> None:
    """Refuse, before any work, a path whose directory cannot be written."""
    if not where.local:
        _check_remote_writable(where)
        return
    path = Path(where.shown)
    check_links(path, str(path))
    place = path if path.is_dir() else path.parent
    while not place.exists():
        place = place.parent
    if not place.is_dir():
        raise NotADirectoryError(f"cannot write {path}: {place} is a file, not a directory")
    try:
        with tempfile.TemporaryFile(dir=place):
            pass
        if path.is_file() and not os.access(path, os.W_OK):
            raise PermissionError(f"{path} is read-only")
    except OSError as err:
        raise PermissionError(
            f"cannot write {path}: {err.strerror or err} in {place}; choose another path, or "
            "make it writable"
        ) from err


def check_links(path: Path, what: str) -> None:
    """Refuse a local ``path`` that is, or lies under, a symbolic link to a missing target
    (``what``: how the message names ``path``). Writing there would create the target
    wherever the link points, or fail with a bare "[Errno 17] File exists"."""
    for place in (path, *path.parents):
        if place.exists():
            return
        if place.is_symlink():
            where = "is" if place == path else f"lies under {str(place)!r}, which is"
            raise FileExistsError(
                f"{what} {where} a symbolic link to a missing target ({os.readlink(place)}); "
                "soak_dask does not write through it: remove the link, or choose another path"
            )


def _check_remote_writable(where: Location) -> None:
    """Write and delete an empty object of our own where the results go (inside the store,
    or beside the NetCDF file): an object store's permissions show only when used."""
    nc = where.name.endswith(".nc")
    folder = posixpath.dirname(where.path) if nc else where.path.rstrip("/")
    probe = f"{folder}/.soak_dask-write-check-{uuid.uuid4().hex}"
    try:
        where.fs.pipe_file(probe, b"")
        where.fs.rm_file(probe)
    except OSError as err:
        raise PermissionError(
            f"cannot write {where}: {err}; choose another path, or check the credentials and "
            "storage_options"
        ) from err
