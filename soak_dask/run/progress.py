"""Progress of a run: a bar of finished fits and the Dask dashboard link."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tqdm.auto import tqdm

from .facts import notes_to_say


@contextmanager
def progress_bar(
    total: int, unit: str, *, enabled: bool = True, client: Any = None, label: str = "SOAK"
) -> Iterator[tqdm]:
    """A tqdm bar (terminal or notebook) of ``total`` items named ``label``; prints the
    dashboard link first.

    With ``enabled=False`` the bar is silent (tqdm's ``disable``), so callers need no
    branches.
    """
    for line in notes_to_say() if enabled else ():  # the run's choices (what it persisted)
        print(line, file=sys.stderr)
    if enabled and client is not None and getattr(client, "dashboard_link", None):
        print(f"Dask dashboard: {client.dashboard_link}", file=sys.stderr)
    with tqdm(total=total, unit=unit, disable=not enabled, desc=label, file=sys.stderr) as bar:
        yield bar
