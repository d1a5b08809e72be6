"""What every entry point (``soak``, ``evaluate``, ``transfer``, ``search_subsets``,
``split_sensitivity``, ``compare_sampling``, ``run_design``) runs inside: one run's scope."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import Any, TypeVar

from ..dask_client import current_client
from ..split.shares import counts_shared
from .facts import run_facts
from .stall import stall_guard

_F = TypeVar("_F", bound=Callable[..., Any])


def entry_point(func: _F) -> _F:
    """``func`` (taking ``options=RunOptions(client=...)``; else the default client) run as one
    run: with its client as the current one, so every pass of the run goes to that client's
    workers even when it is not the default client (``Client(..., set_as_default=False)``);
    the same data counted by the same keys once (``shares.counts_shared``), its facts gathered
    for its result (``facts.run_facts``), and stopped if every worker stays paused by its
    memory limit (``stall.stall_guard``)."""

    @functools.wraps(func)
    def run(*args: Any, **kwargs: Any) -> Any:
        given = getattr(kwargs.get("options"), "client", None)
        client = given or current_client()
        current = given.as_current() if given is not None else contextlib.nullcontext()
        with current, counts_shared(), run_facts(), stall_guard(client):
            return func(*args, **kwargs)

    return run  # type: ignore[return-value]
