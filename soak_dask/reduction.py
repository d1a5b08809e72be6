"""Tree reductions of delayed values: combine a few at a time, so no task holds them all."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dask
from dask.delayed import Delayed


def tree_reduce(
    level: list[Delayed],
    combine: Callable[[list[Any]], Any],
    split_every: int,
    *,
    keep: int = 1,
    **delayed_kwargs: Any,
) -> list[Delayed]:
    """Apply ``combine`` to groups of ``split_every`` values, level after level, until at most
    ``keep`` values remain; ``delayed_kwargs`` go to ``dask.delayed`` (e.g. ``nout``)."""
    while len(level) > keep:
        level = [
            dask.delayed(combine, pure=True, **delayed_kwargs)(level[i : i + split_every])
            for i in range(0, len(level), split_every)
        ]
    return level
