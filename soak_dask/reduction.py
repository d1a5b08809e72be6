"""Tree reductions of delayed values: combine a few at a time, so no task holds them all; and
`list_call`, the delayed call of a function of a list of delayed values."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dask
from dask.delayed import Delayed, tokenize
from dask.utils import funcname
from distributed import Future

__all__ = ["Plain", "is_lazy", "list_call", "tree_reduce"]


def list_call(func: Callable[..., Any], items: list[Any], *args: Any, **delayed_kwargs: Any) -> Any:
    """``dask.delayed(func)(items, *args)``, one task, with the delayed ``items`` handed to dask
    one by one: dask optimises and culls the whole graph of every delayed value it finds inside
    a list argument, once per call (``dask.delayed.unpack_collections``), which made a run's
    graph cost its size times its tasks to build. Of ``args``, the dask values (``Delayed``, a
    future) are handed over as items are; the others are passed as they are, never walked
    (dask would walk every dataclass, tuple and list in them, a fit's spec and the run's
    options, looking for dask values: a third of a small run's graph building): they must hold
    none. ``delayed_kwargs`` go to ``dask.delayed`` (``pure``, ``nout``) and to the call
    (``dask_key_name``, named after `func` by default).

    >>> parts = [dask.delayed(n) for n in range(3)]
    >>> list_call(lambda values, k: k * sum(values), parts, 10).compute()
    30
    """
    key = delayed_kwargs.pop("dask_key_name", None)
    pure = delayed_kwargs.get("pure")  # impure (the default): a unique key, as dask makes one
    key = key or f"{funcname(func)}-{tokenize(func, *items, *args, pure=pure)}"
    lazy = tuple(is_lazy(a) for a in args)
    plain = Plain(tuple(None if later else a for a, later in zip(args, lazy, strict=True)))
    values = [a for a, later in zip(args, lazy, strict=True) if later]
    call = dask.delayed(_listed, **delayed_kwargs)
    return call(func, plain, lazy, len(items), *items, *values, dask_key_name=key)


def is_lazy(value: Any) -> bool:
    """Whether dask computes ``value`` before a task's call (a dask collection or a future)."""
    return isinstance(value, Future) or dask.is_dask_collection(value)


class Plain:
    """Values dask hands to a task as they are: neither a dataclass nor a container, so
    ``dask.delayed`` does not walk them."""

    __slots__ = ("values",)

    def __init__(self, values: tuple[Any, ...]) -> None:
        self.values = values


def _listed(
    func: Callable[..., Any], plain: Plain, lazy: tuple[bool, ...], n: int, *values: Any
) -> Any:
    """`func` of the first `n` values as a list, and of the arguments: ``plain``'s, with the
    other values where ``lazy`` is True."""
    computed = iter(values[n:])
    args = [next(computed) if later else a for a, later in zip(plain.values, lazy, strict=True)]
    return func(list(values[:n]), *args)


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
            list_call(combine, level[i : i + split_every], pure=True, **delayed_kwargs)
            for i in range(0, len(level), split_every)
        ]
    return level
