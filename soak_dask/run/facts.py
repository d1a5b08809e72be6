"""What a run learns as it runs and its results record: facts no setting states (the waves its
AUC scoring took), gathered in the scope of one run (``entry.entry_point``) and written into
the result's attrs by ``session.result_attrs``, the one place every entry point's attrs are
made. An entry point run inside another adds to the outer run's facts."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_FACTS: ContextVar[dict[str, int] | None] = ContextVar("soak_dask_run_facts", default=None)
# Lines the run prints when its fits start, after every check that refuses up front.
_NOTES: ContextVar[list[str] | None] = ContextVar("soak_dask_run_notes", default=None)


@contextmanager
def run_facts() -> Iterator[None]:
    """The scope of one run's facts (inside another run's: that run's)."""
    if _FACTS.get() is not None:
        yield
        return
    token, notes = _FACTS.set({}), _NOTES.set([])
    try:
        yield
    finally:
        _FACTS.reset(token)
        _NOTES.reset(notes)


def record_most(name: str, value: int) -> None:
    """Keep ``value`` as the run's fact ``name`` if it is the largest yet (outside a run's
    scope, nothing is kept)."""
    facts = _FACTS.get()
    if facts is not None:
        facts[name] = max(facts.get(name, value), value)


def current_facts() -> dict[str, int]:
    """The facts of the run under way (empty outside one)."""
    return dict(_FACTS.get() or {})


def say_when_fitting(line: str) -> None:
    """Print ``line`` when the run's fits start (``notes_to_say``, with its progress bar), so
    that a refusal found before them is the only line a refused run prints; outside a run's
    scope, at once."""
    notes = _NOTES.get()
    if notes is None:
        print(line, file=sys.stderr)
    else:
        notes.append(line)


def notes_to_say() -> list[str]:
    """The lines of ``say_when_fitting`` not printed yet (then none are left)."""
    notes = _NOTES.get() or []
    said = list(notes)
    notes.clear()
    return said
