"""Checkpoints: score records saved as fits finish, so a stopped run resumes where it was.

A checkpoint is a directory, local or on any fsspec file system (a prefix such as
``s3://bucket/ckpt``), holding ``settings.json`` (what the run computes: data fingerprint, seed,
folds, learners and their parameters, measures…) and one small JSON file of records per
finished (fit, learner) task. A run given the same directory loads the finished tasks and
computes only the others; a run with different settings is refused, so results are never mixed.

Each task file carries an HMAC-SHA256 of its content keyed by the run's identity (a hash of
the settings, data fingerprint included): a record edited by hand, or copied from another
run's checkpoint, is refused. It guards against mistakes, not an attacker who can read the
settings and compute the hash himself.
"""

from __future__ import annotations

import fnmatch
import hashlib
import hmac
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

from ..io.locations import Location, check_apart, locate
from ..tables.fingerprint import canonical_source

SETTINGS = "settings.json"
_TASK_KEYS = {"fit_id", "learner", "records", "hash"}
#: Differences listed in the message refusing other settings; the rest are counted.
_SHOWN = 5


def open_checkpoint(
    path: str | os.PathLike, settings: Mapping[str, Any], *, storage_options: dict | None = None
) -> dict:
    """Create the checkpoint at ``path`` (local, or an fsspec URL opened with
    ``storage_options``) or check it was made with ``settings``.

    Returns
    -------
    dict
        ``{(fit_id, learner): records}`` of the tasks already finished.

    Raises
    ------
    ValueError
        If the checkpoint was made with other settings, or a file of it is unreadable or fails
        its integrity check; the message names the file and how to start over.
    FileExistsError
        If ``path`` is a non-empty directory that is not a checkpoint.
    """
    root = locate(path, storage_options)
    settings = _plain_json(identity(settings))
    stored = root.child(SETTINGS)
    root.fs.invalidate_cache(root.path)  # another process may have written there since
    if root.fs.isfile(stored.path):
        before = _read_json(root.fs.cat_file(stored.path), stored, root)
        if before != settings:
            raise ValueError(
                f"checkpoint {root} was written by a run with other settings "
                f"({describe_differences(before, settings)}); use another checkpoint path, or "
                "delete it to start over"
            )
    else:
        check_checkpoint_dir(root)
        if root.local:  # an object store has no folders: a key's prefix needs none
            root.fs.makedirs(root.path, exist_ok=True)
        # settings.json first: files beside it are then known to be this checkpoint's.
        _write(stored, json.dumps(settings, sort_keys=True, indent=1))
    key = run_key(settings)
    done: dict[tuple[int, str], list[dict]] = {}
    files = _own_files(root, "task-*.json")
    # One call, so that an object store serves the files concurrently (and none: no call).
    texts = root.fs.cat([file.path for file in files]) if files else {}
    for file in files:
        task = _read_task(texts[file.path], file, root, key)
        done.setdefault((task["fit_id"], task["learner"]), []).extend(task["records"])
    return done


def check_checkpoint_dir(
    path: str | os.PathLike | Location, source: Any = None, *, storage_options: dict | None = None
) -> None:
    """Refuse a ``path`` that holds anything but a checkpoint (or nothing), or is, holds or
    lies inside the input table ``source`` (a path, URL or name, see ``check_apart``)."""
    root = locate(path, storage_options)
    check_apart(root, source, "checkpoint")
    fs = root.fs
    fs.invalidate_cache(root.path)
    if fs.isfile(root.path):
        raise FileExistsError(f"checkpoint {root} is a file, not a directory; choose another path")
    if fs.isdir(root.path) and not fs.isfile(root.child(SETTINGS).path) and root.entries():
        raise FileExistsError(f"{root} is not empty and not a SOAK checkpoint; choose another path")


def identity(settings: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` as a checkpoint records them: the input's path made canonical
    (``canonical_source``: a relative and an absolute path to the same data are one run)."""
    out = dict(settings)
    if "source" in out:
        out["source"] = canonical_source(out["source"])
    return out


def run_key(settings: Mapping[str, Any]) -> str:
    """The run's identity: SHA-256 of its settings (data fingerprint included), as JSON."""
    text = json.dumps(_plain_json(identity(settings)), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def save_task(
    path: str | os.PathLike,
    fit_id: int,
    learner: str,
    records: list[dict],
    key: str,
    *,
    storage_options: dict | None = None,
) -> None:
    """Store records of a (fit, learner) task (all its test blocks, or some of them), with
    their hash keyed by ``key`` (``run_key`` of the run's settings)."""
    task = {"fit_id": int(fit_id), "learner": learner, "records": records}
    task = json.loads(json.dumps(task, default=_plain))  # what a reader gets back
    blocks = ",".join(sorted(str(r["block"]) for r in records))
    name = hashlib.sha1(f"{learner}\0{blocks}".encode()).hexdigest()[:12]
    text = json.dumps({**task, "hash": _task_hash(task, key)})
    _write(locate(path, storage_options).child(f"task-{fit_id}-{name}.json"), text)


def remove_checkpoint(path: str | os.PathLike, *, storage_options: dict | None = None) -> None:
    """Delete a checkpoint's own files (settings and tasks), and its directory if then empty.

    Anything else in the directory is kept; a directory without ``settings.json`` (not a
    checkpoint) is left alone entirely.
    """
    root = locate(path, storage_options)
    root.fs.invalidate_cache(root.path)
    if not root.fs.isfile(root.child(SETTINGS).path):
        return
    # settings.json goes last: a removal stopped midway leaves a checkpoint, removable again.
    for pattern in ("task-*.json", "task-*.tmp", SETTINGS, "settings.tmp"):
        files = [file.path for file in _own_files(root, pattern)]
        if files:
            root.fs.rm(files)  # on S3, one request per 1,000 files
    if root.local and not root.entries():  # (an object store's prefix ends with its last key)
        root.fs.rmdir(root.path)


def describe_differences(before: Any, now: Any) -> str:
    """The first differing values of two JSON documents, each as ``key.path: X then, Y now``.

    Long values are cut around their first difference, so the part that differs shows.
    """
    diffs = [(where, *_compact(a, b)) for where, a, b in _differences(before, now, "")]
    shown = "; ".join(
        f"{where}: {_window(a, b)} then, {_window(b, a)} now" for where, a, b in diffs[:_SHOWN]
    )
    more = len(diffs) - _SHOWN
    return shown + (f"; and {more} more" if more > 0 else "")


_ABSENT = object()


def _differences(before: Any, now: Any, where: str) -> list[tuple[str, Any, Any]]:
    """``(key path, before, now)`` of every leaf that differs."""
    if isinstance(before, dict) and isinstance(now, dict):
        return [
            d
            for k in sorted(before.keys() | now.keys())
            for d in _differences(
                before.get(k, _ABSENT), now.get(k, _ABSENT), f"{where}.{k}" if where else k
            )
        ]
    if isinstance(before, list) and isinstance(now, list) and len(before) == len(now):
        pairs = enumerate(zip(before, now, strict=True))
        return [d for i, (a, b) in pairs for d in _differences(a, b, f"{where}[{i}]")]
    return [] if before == now else [(where or "settings", before, now)]


def _compact(a: Any, b: Any) -> tuple[Any, Any]:
    """Strings (such as a pipeline's repr) with runs of white space as one space, unless
    that is all they differ by."""
    if not (isinstance(a, str) and isinstance(b, str)):
        return a, b
    ca, cb = " ".join(a.split()), " ".join(b.split())
    return (ca, cb) if ca != cb else (a, b)


def _window(value: Any, other: Any, width: int = 80) -> str:
    """``value`` as JSON; if longer than ``width``, the part around where it differs from
    ``other``."""
    if value is _ABSENT:
        return "(absent)"
    text = json.dumps(value, default=str)
    if len(text) <= width:
        return text
    other_text = "" if other is _ABSENT else json.dumps(other, default=str)
    first = next(
        (i for i, (a, b) in enumerate(zip(text, other_text, strict=False)) if a != b),
        min(len(text), len(other_text)),
    )
    start = max(0, first - width // 3)
    end = start + width
    return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")


def _own_files(root: Location, pattern: str) -> list[Location]:
    """The files directly in the checkpoint ``root`` whose names match ``pattern``, sorted."""
    return sorted(
        (
            entry
            for entry in root.entries()
            if entry.kind != "directory" and fnmatch.fnmatchcase(entry.name, pattern)
        ),
        key=lambda entry: entry.name,
    )


def _read_task(data: bytes, file: Location, checkpoint: Location, key: str) -> dict[str, Any]:
    """A task file's content ``data``, refused if unreadable, incomplete or not this run's."""
    task = _read_json(data, file, checkpoint)
    if not isinstance(task, dict) or set(task) != _TASK_KEYS:
        found = sorted(task) if isinstance(task, dict) else type(task).__name__
        _refuse(file, checkpoint, f"holds {found}, not the keys {sorted(_TASK_KEYS)}")
    body = {k: task[k] for k in ("fit_id", "learner", "records")}
    if not hmac.compare_digest(str(task["hash"]), _task_hash(body, key)):
        _refuse(
            file,
            checkpoint,
            "does not match this run's settings (it was edited, or comes from another run)",
        )
    return body


def _read_json(data: bytes, file: Location, checkpoint: Location) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        _refuse(file, checkpoint, f"is not readable JSON ({err})")


def _refuse(file: Location, checkpoint: Location, problem: str) -> NoReturn:
    if file.name == SETTINGS:
        fix = f"delete the checkpoint {checkpoint} to start over, or use another checkpoint path"
    else:
        fix = (
            "delete that file (its fits are computed again), or delete the checkpoint "
            f"{checkpoint} to start over"
        )
    raise ValueError(f"checkpoint file {file} {problem}; {fix}")


def _task_hash(task: Mapping[str, Any], key: str) -> str:
    text = json.dumps(task, sort_keys=True)
    return hmac.new(key.encode(), text.encode(), hashlib.sha256).hexdigest()


def _plain_json(value: Any) -> Any:
    """``value`` as it reads back from JSON (tuples as lists, other objects as str)."""
    return json.loads(json.dumps(value, sort_keys=True, default=str))


def _write(target: Location, text: str) -> None:
    """Write ``text`` so that a run killed mid-write leaves no half file behind: locally, to a
    temporary file then renamed; on an object store (where a rename is a copy), in a single
    put, which makes the object appear whole or not at all."""
    data = text.encode("utf-8")
    if not target.local:
        target.fs.pipe_file(target.path, data)
        return
    tmp = Path(target.path).with_suffix(".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, target.path)


def _plain(value: Any) -> Any:
    """JSON for numpy scalars in records."""
    return value.item() if hasattr(value, "item") else str(value)
