"""The one rule for every output directory soak_dask writes (reports, the files of ``soak
transfer``, ``soak split-sensitivity``, ``soak compare-sampling`` and ``soak demo``).

A directory is written only if it is new (or empty), or if soak_dask wrote it: such a directory
holds ``MANIFEST``, which names the command that wrote it and every file or folder it wrote,
each with a SHA-256 of its content. Before any computation, ``check_out_dir`` refuses a
directory that is, holds or lies inside the input; one holding anything the manifest does not
list (a user's own ``report.html`` or ``summary.csv``: named in the message); one whose listed
files were changed since; one another command wrote; and, unless ``overwrite``, the command's
own earlier output. With ``overwrite``, exactly the listed files are replaced.

The writer then calls ``OutputDir.begin`` (the checks again, then the earlier output removed),
``OutputDir.claim`` for each file it writes (listed in the manifest before it is written, with
no digest yet) and ``OutputDir.finish`` (each file's digest recorded, the manifest marked
finished). A manifest not marked finished means another run is writing there now, or one
stopped part-way: the directory is refused, never replaced, since a file listed without a
digest cannot be told from a user's file put there under that name.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fsspec

from .locations import check_apart, check_links, check_writable, locate
from .stores import leftover_of

#: The file marking a directory as soak_dask's, listing what it wrote there.
MANIFEST = "soak_dask_output.json"
FORMAT = "soak_dask.output"
_TMP = f".{MANIFEST}.tmp"
#: A name soak_dask writes or accepts in a manifest: a plain file name, no folder.
_PLAIN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")
_SHOWN = 5


@dataclass
class OutputDir:
    """An output directory checked by ``check_out_dir``: where ``writer`` writes its files.

    Attributes
    ----------
    path : Path
    writer : str
        The command or function writing it, as messages and the manifest name it.
    overwrite, source, name, flag
        As given to ``check_out_dir`` (kept for the checks ``begin`` repeats).
    written : dict
        File name -> SHA-256 of what this run wrote (None until ``finish``).
    """

    path: Path
    writer: str
    overwrite: bool = False
    source: Any = None
    name: str = "out"
    flag: str = "overwrite=True"
    written: dict[str, str | None] = field(default_factory=dict)
    begun: bool = False

    def begin(self) -> OutputDir:
        """Check the directory again (it may have changed while the results were computed),
        remove the earlier output the manifest lists, and create the directory."""
        if self.begun:
            return self
        earlier = _check(self)
        for entry in earlier:
            target = self.path / entry
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            else:
                target.unlink(missing_ok=True)
        self.path.mkdir(parents=True, exist_ok=True)
        self.begun = True
        self._save()
        return self

    def claim(self, name: str) -> Path:
        """The path of file (or folder) ``name`` in the directory, listed in the manifest
        before it is written."""
        self.begin()
        if not _PLAIN.fullmatch(name) or name == MANIFEST:
            raise ValueError(f"{name!r} is not a plain file name soak_dask may write")
        if name not in self.written:
            self.written[name] = None
            self._save()
        return self.path / name

    def finish(self) -> Path:
        """Record what every claimed file holds now; the directory's path."""
        self.begin()
        self.written = {name: digest(self.path / name) for name in self.written}
        self._save(finished=True)
        return self.path

    def _save(self, *, finished: bool = False) -> None:
        record = {
            "format": FORMAT,
            "writer": self.writer,
            "files": self.written,
            "finished": finished,
        }
        tmp = self.path / _TMP
        tmp.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, self.path / MANIFEST)


def check_out_dir(
    out: str | os.PathLike | OutputDir,
    *,
    writer: str,
    overwrite: bool = False,
    source: Any = None,
    name: str = "out",
    flag: str = "overwrite=True",
) -> OutputDir:
    """``out`` checked before any work, as an ``OutputDir`` for ``writer`` to write.

    Refused: a path that is, holds or lies inside the input table ``source``; a file; a
    non-empty directory without soak_dask's manifest, or holding anything it does not list
    (named in the message), or whose listed files changed since they were written, or that
    another writer wrote; the writer's own earlier output unless ``overwrite`` (then it, and
    only it, is replaced); a directory that cannot be written. ``name`` and ``flag`` are how
    messages call the output and the override (``--out`` / ``--overwrite`` on the command
    line). An ``OutputDir`` is returned as is (a caller that writes more files beside it).
    """
    if isinstance(out, OutputDir):
        return out
    od = OutputDir(local_path(out, name), writer, bool(overwrite), source, name, flag)
    _check(od)
    return od


def local_path(out: str | os.PathLike, name: str = "out") -> Path:
    """``out`` as a local Path; a URL (``s3://…``) is refused rather than made into a local
    folder named ``s3:``."""
    text = os.fspath(out)
    protocol, _ = fsspec.core.split_protocol(text)
    if protocol not in (None, "file"):
        raise ValueError(
            f"{name} {text!r} is a URL; this output is written to a local directory: give a "
            "local path (results stores alone go to URLs, with save_results)"
        )
    return Path(text.removeprefix("file://"))


def _check(od: OutputDir) -> list[str]:
    """Refuse ``od`` as ``check_out_dir`` says; the entries of its earlier output."""
    path, what = od.path, f"{od.name} {str(od.path)!r}"
    check_links(path, what)
    if od.source is not None:
        check_apart(path, od.source, "output")
    if path.exists() and not path.is_dir():
        raise FileExistsError(f"{what} exists and is not a directory; give a directory")
    if not path.is_dir() or not any(path.iterdir()):
        check_writable(locate(path))
        return []
    listed, finished = _manifest(od)
    present = {entry.name for entry in path.iterdir()} - {MANIFEST, _TMP}
    # A store's hidden partial copy, left by a write killed mid-way, is ours with its store.
    leftovers = {n for n in present if leftover_of(n) in listed}
    present -= leftovers
    if foreign := sorted(present - set(listed)):
        raise FileExistsError(
            f"{what} holds {shown_names(foreign)}, which {od.writer} did not write; soak_dask "
            "never writes over or beside files it did not write: choose a new or empty "
            "directory, or move those files away"
        )
    if not finished:
        raise FileExistsError(_unfinished(od, sorted(present)))
    # A digest of None (a manifest edited by hand) never matches: such a file is kept.
    changed = [n for n in sorted(present) if digest(path / n) != listed[n]]
    if changed:
        raise FileExistsError(
            f"{what}: {shown_names(changed)} changed since {od.writer} wrote them, so they are "
            "not replaced; choose another directory, or move them away"
        )
    if present and not od.overwrite:
        raise FileExistsError(
            f"{what} holds an earlier output of {od.writer}; pass {od.flag} to replace it "
            "(only the files it wrote), or choose another directory"
        )
    check_writable(locate(path))
    return sorted(present | leftovers)


def _unfinished(od: OutputDir, present: list[str]) -> str:
    """Why a directory whose manifest is not marked finished is refused."""
    held = f"; it holds {shown_names(present)}, listed with no digest" if present else ""
    return (
        f"{od.name} {str(od.path)!r}: another run of {od.writer} is writing to it now, or one "
        f"stopped before it finished (its {MANIFEST} is not marked finished{held}). soak_dask "
        "cannot tell such files from files put there under those names, so it replaces "
        "nothing: wait for that run to end, or, if none is running, check those files and "
        "move them away (or remove the directory), or choose another directory"
    )


def _manifest(od: OutputDir) -> tuple[dict[str, str | None], bool]:
    """The files the manifest in ``od.path`` lists, and whether it is marked finished (a
    manifest from before that mark: if every file has a digest); refuses a directory without
    one, or with one another writer made or that is damaged."""
    what = f"{od.name} {str(od.path)!r}"
    marker = od.path / MANIFEST
    if not marker.is_file():
        shown = sorted(entry.name for entry in od.path.iterdir())
        raise FileExistsError(
            f"{what} is a non-empty directory that soak_dask did not write (it holds "
            f"{shown_names(shown)} and no {MANIFEST}); soak_dask writes only into a new or empty "
            "directory, or one it wrote: choose another directory"
        )
    try:
        record = json.loads(marker.read_text(encoding="utf-8"))
        files = record["files"]
        finished = record.get("finished", None not in files.values())
        ok = record.get("format") == FORMAT and isinstance(files, dict)
        ok = ok and isinstance(finished, bool)
        ok = ok and all(_PLAIN.fullmatch(str(n)) for n in files)
        ok = ok and all(d is None or isinstance(d, str) for d in files.values())
    except (ValueError, KeyError, TypeError, AttributeError, OSError):
        ok = False
    if not ok:
        raise FileExistsError(
            f"{what}: its {MANIFEST} is damaged or was not written by soak_dask, so nothing "
            "in it is replaced; choose another directory"
        )
    if record.get("writer") != od.writer:
        raise FileExistsError(
            f"{what} was written by {record.get('writer')}, not {od.writer}; choose another "
            "directory (each command replaces only its own output)"
        )
    return files, finished


def digest(path: Path) -> str:
    """SHA-256 of a file's content, or of a folder's file names and contents (a link: of
    where it points, so a link put in place of what soak_dask wrote never matches)."""
    h = hashlib.sha256()
    if path.is_symlink():
        h.update(b"link\0" + os.fsencode(os.readlink(path)))
    elif path.is_dir():
        for item in sorted(p for p in path.rglob("*") if p.is_file() and not p.is_symlink()):
            h.update(item.relative_to(path).as_posix().encode() + b"\0")
            h.update(_file_digest(item).encode())
    elif path.exists():
        h.update(_file_digest(path).encode())
    return h.hexdigest()


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def self_marked(
    path: Path, suffix: str, is_ours: Callable[[Path], bool]
) -> tuple[list[Path], list[str]]:
    """The rule for a directory whose files carry their own mark instead of a manifest (the
    demo's Parquet files, saved models: a reader would take a manifest for data): the files
    of directory ``path`` with ``suffix`` that ``is_ours`` recognises, and the names of every
    other entry (none of either where ``path`` is no directory: the caller refuses a
    file)."""
    entries = sorted(path.iterdir()) if path.is_dir() else []
    ours = [e for e in entries if e.suffix == suffix and e.is_file() and is_ours(e)]
    return ours, [e.name for e in entries if e not in ours]


def shown_names(names: list[str]) -> str:
    """The first few ``names``, and how many more, for a message."""
    shown = ", ".join(names[:_SHOWN])
    return shown + (f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else "")
