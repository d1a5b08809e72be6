"""Model files in a directory: the learner names that may name them (``<learner>.skops``), the
mark that says soak_dask wrote one (a ``soak_dask.json`` member in its skops archive, read with
``zipfile`` and ``json`` alone), and the check of a models directory before any fit.

Kept apart from ``persist`` so that checking a directory does not import skops.
"""

from __future__ import annotations

import io
import json
import os
import re
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..io.locations import check_apart, check_writable, locate, overlaps
from ..io.outdir import local_path, self_marked, shown_names

#: The zip member holding soak_dask's metadata, and the value of its ``format`` key.
METADATA_MEMBER = "soak_dask.json"
FORMAT = "soak_dask.model"
#: A learner name that may be a model file's stem: letters, digits, ``. _ -``, not first a dot.
SAFE_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")
MODEL_SUFFIX = ".skops"
#: Longest learner name a model file may have (file names are at most 255 bytes).
MAX_NAME = 255 - len(MODEL_SUFFIX) - 16


def check_model_names(learners: Iterable[str]) -> None:
    """Refuse, before any fit, learner names that cannot be model file names
    (``<learner>.skops``): only letters, digits, ``.``, ``_`` and ``-``, not starting with a
    dot (so no folder, absolute path, hidden file or line break), at most 233 characters, and
    no two equal but for case (one file on a case-insensitive file system)."""
    seen: dict[str, str] = {}
    for name in learners:
        if not isinstance(name, str) or not SAFE_NAME.fullmatch(name) or len(name) > MAX_NAME:
            raise ValueError(
                f"learner name {name!r} cannot name a model file "
                f"({str(name) + MODEL_SUFFIX!r}): use only letters, digits, '.', '_' and '-', "
                "not starting with '.', at most "
                f"{MAX_NAME} characters; rename it (the key of the learners dict, or the "
                "run file's [learners.NAME] table)"
            )
        if (other := seen.setdefault(name.casefold(), name)) != name:
            raise ValueError(
                f"learners {other!r} and {name!r} would share one model file on a "
                "case-insensitive file system; rename one of them"
            )


def model_path(folder: str | os.PathLike, learner: str) -> Path:
    """The model file of ``learner`` in ``folder``: ``<learner>.skops`` (see
    ``check_model_names``)."""
    check_model_names([learner])
    return Path(folder) / f"{learner}{MODEL_SUFFIX}"


def check_models_dir(
    models: str | os.PathLike | None,
    learners: Iterable[str] = (),
    source: Any = None,
    *,
    overwrite: bool = True,
    name: str = "models",
    flag: str = "--overwrite",
    apart: Mapping[str, Any] | None = None,
) -> Path | None:
    """Check, before any fit, that the final models can be saved in ``models`` (None: not
    saved) for ``learners`` without touching anything soak_dask did not write.

    Refused: learner names that cannot be file names (``check_model_names``); a ``models``
    that is a file, or is, holds or lies inside the input table ``source``; a directory
    holding anything but model files ``save_model`` wrote (each carries its own mark, so no
    manifest is needed); without ``overwrite``, one holding such files already (the command
    line's ``soak evaluate --models`` without ``--overwrite``); a directory that cannot be
    written; a directory that is, holds or lies inside a path of ``apart`` (name -> path,
    None skipped: the run's checkpoint). With ``overwrite`` (``evaluate(models=...)`` in
    Python, which has no switch), the model files of the same learners are replaced, those
    of other learners kept.
    """
    if models is None:
        return None
    check_model_names(learners)
    path = local_path(models, name)
    check_apart(path, source, "models")
    shown = f"{name} {str(path)!r}"
    for other, where in (apart or {}).items():
        if where is not None and overlaps(path, where):
            raise ValueError(f"{shown} and {other} {str(where)!r} overlap; give separate paths")
    if path.exists() and not path.is_dir():
        raise FileExistsError(
            f"{shown} is a file; give a new directory (or one of soak_dask's model files)"
        )
    ours, foreign = self_marked(path, MODEL_SUFFIX, _is_ours)
    if foreign:
        raise FileExistsError(
            f"{shown} holds {shown_names(foreign)}, which "
            "soak_dask did not write (only model files saved by soak_dask.save_model may be "
            "there); choose a new or empty directory, or move those files away"
        )
    if ours and not overwrite:
        raise FileExistsError(
            f"{shown} holds models an earlier run saved ({shown_names([e.name for e in ours])}); "
            f"pass {flag} to replace them, or choose another directory"
        )
    check_writable(locate(path))
    return path


def _is_ours(path: Path) -> bool:
    try:
        return read_metadata(path) is not None
    except (OSError, zipfile.BadZipFile):
        return False


def read_metadata(source: str | os.PathLike | bytes) -> dict[str, Any] | None:
    """soak_dask's metadata of a model file, or None if soak_dask did not write it.

    Reads JSON from the zip only: nothing in the file is rebuilt or run.
    """
    handle = io.BytesIO(source) if isinstance(source, bytes) else source
    if not zipfile.is_zipfile(handle):
        return None
    with zipfile.ZipFile(handle) as archive:
        names = set(archive.namelist())
        if not {"schema.json", METADATA_MEMBER} <= names:
            return None
        try:
            record = json.loads(archive.read(METADATA_MEMBER))
        except (ValueError, zipfile.BadZipFile):  # a damaged member or not JSON
            return None
    return record if isinstance(record, dict) and record.get("format") == FORMAT else None
