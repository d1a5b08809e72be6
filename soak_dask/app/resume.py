"""The checkpoint of a command that writes a directory (``soak transfer``, ``soak
split-sensitivity``, ``soak compare-sampling``), as ``soak run`` keeps its own: ``--checkpoint
DIR``, or ``OUT.checkpoint`` beside ``--out``, checked before any work and removed once the
results are written (unless given).

The functions import the run path when called: the commands import this module when
``soak --help`` builds their parsers."""

from __future__ import annotations

import os
from typing import Any

from .flags import check_command_out


def command_checkpoint(out: str | os.PathLike, given: Any, source: Any) -> str:
    """The command's checkpoint: ``given`` (``--checkpoint``), else ``OUT.checkpoint``;
    refused where it overlaps ``out``, is or holds the input ``source``, or holds anything
    but a checkpoint."""
    from ..io.locations import overlaps
    from ..run.checkpoint import check_checkpoint_dir

    # A string, not a Path: Path("s3://b/out") would lose the URL's "//".
    path = os.fspath(given) if given else f"{os.fspath(out).rstrip('/')}.checkpoint"
    if overlaps(out, path):
        raise ValueError(f"--checkpoint {path} and --out {out} overlap; give separate paths")
    check_checkpoint_dir(path, source=source)
    return path


def command_paths(writer: str, settings: Any, source: Any) -> tuple[Any, str | None]:
    """The command's ``--out`` checked (an ``OutputDir``, ``flags.check_command_out``) and its
    checkpoint (``command_checkpoint``); both None in a dry run given no ``--out``, which
    writes nothing."""
    if settings.out is None:
        return None, None
    out = check_command_out(writer, settings.out, settings.overwrite, source)
    return out, command_checkpoint(out.path, settings.checkpoint, source)


def discard(given: Any, path: str) -> None:
    """Remove the command's own checkpoint once its results are written (a ``--checkpoint``
    the user gave is kept)."""
    from ..run.session import remove_run_checkpoint

    if not given:
        remove_run_checkpoint(path)
