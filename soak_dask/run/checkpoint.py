"""Checkpoints: score records saved as fits finish, so a stopped run resumes where it was.

A checkpoint is a directory holding ``settings.json`` (what the run computes: data fingerprint,
seed, folds, learners and their parameters, measures…) and one small JSON file of records per
finished (fit, learner) task. A run given the same directory loads the finished tasks and
computes only the others; a run with different settings is refused, so results are never mixed.

Each task file carries an HMAC-SHA256 of its content keyed by the run's identity (a hash of
the settings, data fingerprint included): a record edited by hand, or copied from another
run's checkpoint, is refused. It guards against mistakes, not an attacker who can read the
settings and compute the hash himself.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

from ..results.store import check_apart

SETTINGS = "settings.json"
_TASK_KEYS = {"fit_id", "learner", "records", "hash"}
#: Differences listed in the message refusing other settings; the rest are counted.
_SHOWN = 5


def open_checkpoint(path: str | os.PathLike, settings: Mapping[str, Any]) -> dict:
    """Create the checkpoint at ``path`` or check it was made with ``settings``.

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
    path = Path(path)
    settings = _plain_json(settings)
    stored = path / SETTINGS
    if stored.exists():
        before = _read_json(stored, path)
        if before != settings:
            raise ValueError(
                f"checkpoint {path} was written by a run with other settings "
                f"({describe_differences(before, settings)}); use another checkpoint path, or "
                "delete it to start over"
            )
    else:
        check_checkpoint_dir(path)
        path.mkdir(parents=True, exist_ok=True)
        _write_atomic(stored, json.dumps(settings, sort_keys=True, indent=1))
    key = run_key(settings)
    done: dict[tuple[int, str], list[dict]] = {}
    for file in sorted(path.glob("task-*.json")):
        task = _read_task(file, path, key)
        done.setdefault((task["fit_id"], task["learner"]), []).extend(task["records"])
    return done


def check_checkpoint_dir(path: str | os.PathLike, source: Any = None) -> None:
    """Refuse a ``path`` that holds anything but a checkpoint (or nothing), or is, holds or
    lies inside the input table ``source`` (a path or a name, see ``check_apart``)."""
    path = Path(path)
    check_apart(path, source, "checkpoint")
    if path.exists() and not path.is_dir():
        raise FileExistsError(f"checkpoint {path} is a file, not a directory; choose another path")
    if path.is_dir() and not (path / SETTINGS).exists() and any(path.iterdir()):
        raise FileExistsError(f"{path} is not empty and not a SOAK checkpoint; choose another path")


def run_key(settings: Mapping[str, Any]) -> str:
    """The run's identity: SHA-256 of its settings (data fingerprint included), as JSON."""
    text = json.dumps(_plain_json(settings), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def save_task(
    path: str | os.PathLike, fit_id: int, learner: str, records: list[dict], key: str
) -> None:
    """Store records of a (fit, learner) task (all its test blocks, or some of them), with
    their hash keyed by ``key`` (``run_key`` of the run's settings)."""
    task = {"fit_id": int(fit_id), "learner": learner, "records": records}
    task = json.loads(json.dumps(task, default=_plain))  # what a reader gets back
    blocks = ",".join(sorted(str(r["test_subset"]) for r in records))
    name = hashlib.sha1(f"{learner}\0{blocks}".encode()).hexdigest()[:12]
    text = json.dumps({**task, "hash": _task_hash(task, key)})
    _write_atomic(Path(path) / f"task-{fit_id}-{name}.json", text)


def remove_checkpoint(path: str | os.PathLike) -> None:
    """Delete a checkpoint's own files (settings and tasks), and its directory if then empty.

    Anything else in the directory is kept; a directory without ``settings.json`` (not a
    checkpoint) is left alone entirely.
    """
    path = Path(path)
    if not (path / SETTINGS).is_file():
        return
    for pattern in ("task-*.json", "task-*.tmp", SETTINGS, "settings.tmp"):
        for file in path.glob(pattern):
            file.unlink()
    if not any(path.iterdir()):
        path.rmdir()


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


def _read_task(file: Path, checkpoint: Path, key: str) -> dict[str, Any]:
    """A task file's content, refused if unreadable, incomplete or not this run's."""
    task = _read_json(file, checkpoint)
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


def _read_json(file: Path, checkpoint: Path) -> Any:
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        _refuse(file, checkpoint, f"is not readable JSON ({err})")


def _refuse(file: Path, checkpoint: Path, problem: str) -> NoReturn:
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


def _write_atomic(target: Path, text: str) -> None:
    # Write then rename, so a run killed mid-write leaves no half file behind.
    tmp = target.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, target)


def _plain(value: Any) -> Any:
    """JSON for numpy scalars in records."""
    return value.item() if hasattr(value, "item") else str(value)
