"""Stores soak_dask writes (results, AOA rasters) are complete or absent, and read only as
written.

A local store is written to a hidden sibling in the same directory
(``.<name>.soak-partial-<pid>-<random>``) and renamed into place, so a write stopped half-way,
or by a full disk, leaves nothing at the target. A Zarr store's completion mark (the root
attribute ``MARK``) is written last: it records each variable's shape and dtype, a digest of
the root attributes and a SHA-256 of every file's bytes, so that ``verify_zarr`` refuses a
store with a missing, added, truncated or altered file, in one line naming the store and the
file. A NetCDF file records the SHA-256 of each variable's stored values in its attribute
``CHECKSUMS``. An object store (``s3://…``) has no rename: there the store is written in place
(emptied first), and the mark, written last, is what says it is whole.
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import posixpath
import re
import shutil
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from .locations import Location, locate

#: Root attribute of a Zarr store: its completion mark, written after everything else.
MARK = "soak_dask_store"
MARK_FORMAT = "soak_dask.store"
#: Hex digits kept of each file's SHA-256 (64 bits: any damage shows; the mark stays small).
_DIGITS = 16
#: Root attribute of a NetCDF file: JSON of variable name -> SHA-256 of its stored values.
CHECKSUMS = "soak_dask_checksums"
#: What the hidden sibling a store is written to has in its name.
PARTIAL = ".soak-partial-"
_ZARR_METADATA = ("zarr.json", ".zarray", ".zattrs", ".zgroup", ".zmetadata")
_DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


class StoreError(ValueError):
    """A store that is incomplete (its write did not finish) or was altered since."""


def write_zarr(ds: xr.Dataset, where: Location, what: str) -> None:
    """Write ``ds`` to a Zarr store at ``where``, complete or absent, its mark last.

    ``where`` was checked by the caller (it is new, or a store of ours that may be replaced);
    ``what`` names the store in messages (``"results store"``). Dask arrays are computed
    chunk by chunk as they are written.
    """

    def write(target: Location) -> None:
        # Zarr v3 has no consolidated metadata in its spec; plain metadata reads everywhere.
        # mode="w" empties the store first (an object store's old mark with it).
        ds.to_zarr(target.url, mode="w", consolidated=False, **target.options)
        _write_mark(target)

    write_whole(where, write, what)


def write_bytes(where: Location, data: bytes, what: str) -> None:
    """Write one file, complete or absent (an object store's single put is whole already)."""
    write_whole(where, lambda target: target.fs.pipe_file(target.path, data), what)


def write_whole(where: Location, write: Callable[[Location], None], what: str) -> None:
    """Call ``write`` with where to write so that ``where`` ends complete or absent: locally,
    a hidden sibling renamed into place (removed if the write fails or is stopped)."""
    if not where.local:
        write(where)
        return
    partial = sibling(where, "partial")
    try:
        write(partial)
        _move_into_place(Path(partial.path), Path(where.path))
    except BaseException as err:
        _remove_settled(Path(partial.path))
        if isinstance(err, OSError) and err.errno in _DISK_FULL:
            raise disk_full(err, where, what) from err
        raise


def sibling(where: Location, role: str) -> Location:
    """A new hidden path beside local ``where``, ours by its name, keeping its suffix (a
    GeoTIFF's driver is chosen by it)."""
    path = Path(where.path)
    name = f".{path.stem}.soak-{role}-{os.getpid()}-{uuid.uuid4().hex[:8]}{path.suffix}"
    return Location(where.fs, str(path.with_name(name)), str(Path(where.shown).with_name(name)))


#: A hidden path `sibling` or `_move_into_place` made beside a target: the target's stem, the
#: role, the writing process and a random part, the target's suffix.
_LEFTOVER = re.compile(r"\.(?P<stem>.+)\.soak-(?:partial|old)-\d+-[0-9a-f]{8}(?P<suffix>.*)")


def leftover_of(name: str) -> str | None:
    """The target whose hidden partial (or replaced) copy ``name`` is, if it is one: what a
    write killed mid-way leaves beside the store it was writing."""
    match = _LEFTOVER.fullmatch(name)
    return match["stem"] + match["suffix"] if match else None


def disk_full(err: OSError, where: Location, what: str) -> OSError:
    """One line for a write that filled the disk: what, where, and that nothing was changed."""
    full = OSError(
        f"the disk is full: writing the {what} {where} failed ({err.strerror or err}); the "
        f"partial write was removed and {where} is as it was before: free some space or "
        "choose another path"
    )
    full.errno = err.errno
    return full


def _move_into_place(new: Path, target: Path) -> None:
    """Rename ``new`` to ``target``; an existing ``target`` (checked by the caller as ours to
    replace) is first renamed aside, and removed only once ``new`` is in place."""
    if not os.path.lexists(target):
        os.rename(new, target)
        return
    aside = target.with_name(f".{target.name}.soak-old-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    os.rename(target, aside)
    try:
        os.rename(new, target)
    except BaseException:
        os.rename(aside, target)
        raise
    _remove(aside)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        path.unlink()


def _remove_settled(path: Path, quiet: int = 3, pause: float = 0.05, tries: int = 40) -> None:
    """``_remove`` ``path``, again until it has stayed absent for ``quiet`` checks ``pause``
    seconds apart (at most ``tries``): a failed ``to_zarr`` raises while Zarr's event loop
    still has chunk writes in flight, which recreate their directories and temporary files
    after the first removal (seen on a full disk: one ``zarr.<id>.partial`` left behind)."""
    absent = 0
    for _ in range(tries):
        if os.path.lexists(path):
            _remove(path)
            absent = 0
        else:
            absent += 1
            if absent >= quiet:
                return
        time.sleep(pause)


def _open_group(where: Location, mode: str = "r") -> Any:
    import zarr

    return zarr.open_group(where.url, mode=mode, **where.options)


def _write_mark(where: Location) -> None:
    """Mark the Zarr store at ``where`` complete: its variables, a digest of every file's
    bytes and of the root attributes, in the root attribute ``MARK``."""
    group = _open_group(where, "r+")
    variables = {
        name: {"shape": list(array.shape), "dtype": str(array.dtype)}
        for name, array in group.arrays()
    }
    group.attrs[MARK] = {
        "format": MARK_FORMAT,
        "variables": variables,
        "attrs": _attrs_digest(dict(group.attrs)),
        "files": _digests(where),
    }


def _attrs_digest(attrs: dict[str, Any]) -> str:
    attrs.pop(MARK, None)
    text = json.dumps(attrs, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:_DIGITS]


def _digests(where: Location) -> dict[str, str]:
    """Every file under ``where`` but the root metadata (which holds the mark): its path
    inside, and its bytes' digest."""
    root = where.path.rstrip("/")
    where.fs.invalidate_cache(root)
    found = {}
    for path in where.fs.find(root):
        name = posixpath.relpath(path, root)
        if name not in _ZARR_METADATA:
            with where.fs.open(path, "rb") as f:
                found[name] = hashlib.file_digest(f, "sha256").hexdigest()[:_DIGITS]
    return found


def has_mark(where: Location) -> bool:
    """Whether the Zarr store at ``where`` has a completion mark (intact or not)."""
    try:
        return MARK in _open_group(where).attrs
    except (OSError, ValueError, KeyError, TypeError):
        return False


def verify_zarr(where: Location, what: str, remedy: str) -> None:
    """Refuse, in one line naming the store and the first problem, a Zarr store whose mark
    is missing or damaged, or whose files or root attributes are not those the mark records
    (a file missing, added, or with other bytes). ``remedy`` says how to get a good store."""
    problem = _zarr_problem(where)
    if problem:
        raise StoreError(f"the {what} {where} cannot be read as written: {problem}; {remedy}")


def _zarr_problem(where: Location) -> str | None:
    try:
        attrs = dict(_open_group(where).attrs)
    except (OSError, ValueError, KeyError, TypeError):
        return "its root metadata zarr.json is missing or damaged"
    if MARK not in attrs:
        return f"missing completion mark (root attribute {MARK}; the write did not finish)"
    record = attrs[MARK]
    if not (isinstance(record, dict) and record.get("format") == MARK_FORMAT):
        return f"its completion mark (root attribute {MARK}) is damaged"
    if record.get("attrs") != _attrs_digest(attrs):
        return "its root attributes checksum mismatch (the store was altered)"
    recorded, found = dict(record.get("files", {})), _digests(where)
    for name, digest in recorded.items():
        if name not in found:
            return f"{_describe(name)} missing"
        if found[name] != digest:
            return f"{_describe(name)} checksum mismatch (the store was altered)"
    if extra := sorted(n for n in set(found) - set(recorded) if _read_by_zarr(n, recorded)):
        return f"{_describe(extra[0])} was added after the store was written"
    return None


def _read_by_zarr(name: str, recorded: Iterable[str]) -> bool:
    """Whether a file Zarr would read: metadata, or anything inside a recorded array."""
    folders = {n.split("/", 1)[0] for n in recorded if "/" in n}
    return posixpath.basename(name) in _ZARR_METADATA or name.split("/", 1)[0] in folders


def _describe(name: str) -> str:
    """A file of a Zarr store as a person names it: "variable 'error' chunk 0.1"."""
    parts = name.split("/")
    if len(parts) == 1:
        return f"the store's metadata {name}" if name in _ZARR_METADATA else f"file {name!r}"
    variable, rest = parts[0], parts[1:]
    if rest in (["zarr.json"], [".zarray"], [".zattrs"]):
        return f"variable {variable!r} metadata"
    key = rest[1:] if rest[0] == "c" else ".".join(rest).split(".")  # v3 c/0/1, v2 0.1
    return f"variable {variable!r} chunk {'.'.join(key)}"


def netcdf_bytes(ds: xr.Dataset) -> bytes:
    """``ds`` as NetCDF bytes, its attribute ``CHECKSUMS`` recording each variable's stored
    values (written twice: the attribute changes the header, not the values)."""
    sums = netcdf_checksums(bytes(ds.to_netcdf(engine="h5netcdf")))
    return bytes(ds.assign_attrs({CHECKSUMS: json.dumps(sums)}).to_netcdf(engine="h5netcdf"))


def verify_netcdf(where: Location, what: str, remedy: str) -> None:
    """Refuse, in one line, a NetCDF file whose variables are not as ``netcdf_bytes`` wrote
    them (or that has no ``CHECKSUMS``)."""
    with where.fs.open(where.path, "rb") as f:
        recorded = json.loads(_netcdf_attrs(f).get(CHECKSUMS, "{}"))
        f.seek(0)
        found = netcdf_checksums(f)
    problem = None
    for name in sorted(set(recorded) | set(found)):
        if recorded.get(name) != found.get(name):
            state = "missing" if name not in found else "checksum mismatch (the file was altered)"
            problem = problem or f"variable {name!r} {state}"
    if problem or not recorded:
        problem = problem or f"its attribute {CHECKSUMS} is missing"
        raise StoreError(f"the {what} {where} cannot be read as written: {problem}; {remedy}")


def _netcdf_attrs(f: Any) -> dict[str, Any]:
    with xr.open_dataset(f, decode_cf=False, engine="h5netcdf") as raw:
        return dict(raw.attrs)


def netcdf_checksums(data: bytes | Any) -> dict[str, str]:
    """SHA-256 of each variable's values as stored (not decoded) in NetCDF ``data`` (bytes or
    an open file), by name."""
    source = io.BytesIO(data) if isinstance(data, bytes) else data
    with xr.open_dataset(source, decode_cf=False, engine="h5netcdf") as raw:
        return {str(name): _values_digest(var.values) for name, var in raw.variables.items()}


def _values_digest(values: np.ndarray) -> str:
    """SHA-256 of an array's dtype, shape and values (strings by their text, not pointers)."""
    h = hashlib.sha256(f"{values.dtype.str}{values.shape}".encode())
    if values.dtype.kind == "O":
        h.update("\0".join(map(str, values.ravel())).encode())
    else:
        h.update(np.ascontiguousarray(values).tobytes())
    return h.hexdigest()


def enclosing_store(path: Path, is_store: Callable[[Path], bool]) -> Path | None:
    """The store soak_dask wrote that local ``path`` lies inside (a directory with a
    completion mark, or one ``is_store`` recognises: stores of older versions), if any."""
    for parent in path.resolve().parents:
        if parent.is_dir() and (has_mark(locate(parent)) or is_store(parent)):
            return parent
    return None
