"""What every entry point (``soak``, ``evaluate``, ``transfer``, ``search_subsets``,
``split_sensitivity``, ``compare_sampling``, ``run_design``) runs inside: one run's scope."""

from __future__ import annotations

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
    run: the same data counted by the same keys once (``shares.counts_shared``), its facts
    gathered for its result (``facts.run_facts``), and stopped if every worker stays paused by
    its memory limit (``stall.stall_guard``)."""

    @functools.wraps(func)
    def run(*args: Any, **kwargs: Any) -> Any:
        client = getattr(kwargs.get("options"), "client", None) or current_client()
        with counts_shared(), run_facts(), stall_guard(client):
            return func(*args, **kwargs)

    return run  # type: ignore[return-value]
