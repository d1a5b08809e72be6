"""Checkpoints: score records saved as fits finish, so a stopped run resumes where it was.

A checkpoint is a directory holding ``settings.json`` (what the run computes: data fingerprint,
seed, folds, learners and their parameters, measures…) and one small JSON file of records per
finished (fit, learner) task. A run given the same directory loads the finished tasks and
computes only the others; a run with different settings is refused, so results are never mixed.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

SETTINGS = "settings.json"


def open_checkpoint(path: str | os.PathLike, settings: Mapping[str, Any]) -> dict:
    """Create the checkpoint at ``path`` or check it was made with ``settings``.

    Returns
    -------
    dict
        ``{(fit_id, learner): records}`` of the tasks already finished.
    """
    path = Path(path)
    settings = json.loads(json.dumps(settings, sort_keys=True, default=str))
    stored = path / SETTINGS
    if stored.exists():
        before = json.loads(stored.read_text())
        if before != settings:
            diff = sorted(
                k for k in before.keys() | settings.keys() if before.get(k) != settings.get(k)
            )
            details = "; ".join(
                f"{k}: {_short(before.get(k))} then, {_short(settings.get(k))} now" for k in diff
            )
            raise ValueError(
                f"checkpoint {path} was written by a run with other settings ({details}); "
                "use another checkpoint path, or delete it to start over"
            )
    elif path.exists() and any(path.iterdir()):
        raise FileExistsError(f"{path} is not empty and not a SOAK checkpoint; choose another path")
    else:
        path.mkdir(parents=True, exist_ok=True)
        _write_atomic(stored, json.dumps(settings, sort_keys=True, indent=1))
    done: dict[tuple[int, str], list[dict]] = {}
    for file in sorted(path.glob("task-*.json")):
        task = json.loads(file.read_text())
        done.setdefault((task["fit_id"], task["learner"]), []).extend(task["records"])
    return done


def save_task(path: str | os.PathLike, fit_id: int, learner: str, records: list[dict]) -> None:
    """Store records of a (fit, learner) task: all its test blocks, or some of them."""
    task = {"fit_id": fit_id, "learner": learner, "records": records}
    blocks = ",".join(sorted(str(r["test_subset"]) for r in records))
    key = hashlib.sha1(f"{learner}\0{blocks}".encode()).hexdigest()[:12]
    name = f"task-{fit_id}-{key}.json"
    _write_atomic(Path(path) / name, json.dumps(task, default=_plain))


def _write_atomic(target: Path, text: str) -> None:
    # Write then rename, so a run killed mid-write leaves no half file behind.
    tmp = target.with_suffix(".tmp")
    tmp.write_text(text)
    os.replace(tmp, target)


def _plain(value: Any) -> Any:
    """JSON for numpy scalars in records."""
    return value.item() if hasattr(value, "item") else str(value)


def _short(value: Any, width: int = 80) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= width else text[: width - 1] + "…"
