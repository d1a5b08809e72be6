"""The registry of result kinds: what every kind of result (``attrs["design"]``) answers to.

A ``ResultKind`` says what ``ds.soak.summary()``, ``ds.soak.pvalues()`` and ``soak report`` do
with results of one kind; each kind's own package defines its ``ResultKind``
(``soak_dask.results.soak_kinds``: ``soak``, ``evaluate``; ``soak_dask.pooling.kind``:
``transfer``, ``search_subsets``; ``soak_dask.diagnose.kind``: ``split_sensitivity``,
``compare_sampling``) and ``soak_dask.result_kinds`` registers them, one line each (the
accessor and ``soak report`` import it before they look a kind up). A new design is one module
defining its kind and one ``register_kind`` line. This module imports nothing above
``results/``: the kinds come to it, it never looks for them.

Examples
--------
>>> kind = kind_of(ds)  # doctest: +SKIP
>>> kind.name, kind.dims  # doctest: +SKIP
('transfer', ('learner', 'train_subset', 'test_subset', 'fold'))
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import xarray as xr

from ..schema import DESIGN_ALIASES

__all__ = [
    "SUMMARY_INSTEAD",
    "ResultKind",
    "kind_name",
    "kind_of",
    "register_kind",
    "registered",
    "result_kind",
    "unregister_kind",
]

#: What ``ResultKind.instead`` says by default: the summary is every kind's.
SUMMARY_INSTEAD = "ds.soak.summary() summarises them"


@dataclass(frozen=True)
class ResultKind:
    """What one kind of result answers to.

    Attributes
    ----------
    name : str
        The kind: the results' ``attrs["design"]``.
    dims : tuple of str
        The dims its results have (``open_results`` refuses a store of this kind without them).
    summary : callable
        ``summary(ds, measures) -> DataFrame``: ``ds.soak.summary(measures)``.
    text : callable
        ``text(ds) -> str``: what the command that made the result prints, and ``soak report``.
    report : callable
        ``report(ds, out, overwrite) -> Path``: writes ``report.html`` (and its tables and
        figures) into the directory ``out``, checked first as every report directory is
        (``soak_dask.results.html.prepare_report_dir``; messages name ``--overwrite``, soak
        report's option); returns the page's path.
    tests : callable or None
        ``tests(ds, measures, **options) -> DataFrame``: ``ds.soak.pvalues(measures, ...)``,
        which passes the options it was given (``corrected``, ``adjust``, any other keyword)
        as ``options``: a kind's tests take their own and refuse the others; None for a kind
        without paired tests.
    instead : str
        What ``ds.soak.pvalues()`` says to call instead, for a kind without ``tests``.
    """

    name: str
    dims: tuple[str, ...]
    summary: Callable[[xr.Dataset, Any], pd.DataFrame]
    text: Callable[[xr.Dataset], str]
    report: Callable[[xr.Dataset, str | os.PathLike, bool], Path]
    tests: Callable[..., pd.DataFrame] | None = None
    instead: str = SUMMARY_INSTEAD

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"a result kind's name is a non-empty str, got {self.name!r}")
        if not (isinstance(self.dims, tuple) and all(isinstance(d, str) for d in self.dims)):
            raise TypeError(f"kind {self.name!r}: dims must be a tuple of str, got {self.dims!r}")
        for field in ("summary", "text", "report"):
            if not callable(getattr(self, field)):
                raise TypeError(f"kind {self.name!r}: {field} must be callable")
        if self.tests is not None and not callable(self.tests):
            raise TypeError(f"kind {self.name!r}: tests must be callable or None")


_KINDS: dict[str, ResultKind] = {}


def register_kind(kind: ResultKind) -> ResultKind:
    """Register ``kind`` under its name; returns it.

    Refuses a second kind of the same name (``unregister_kind`` it first to replace it) and a
    name that is an old spelling of another (``soak_dask.schema.DESIGN_ALIASES``).
    """
    if not isinstance(kind, ResultKind):
        raise TypeError(f"register_kind takes a ResultKind, got {type(kind).__name__}")
    if kind.name in DESIGN_ALIASES:
        raise ValueError(
            f"{kind.name!r} is the old name of the kind {DESIGN_ALIASES[kind.name]!r}: results "
            "of that design are read as that kind; choose another name"
        )
    if kind.name in _KINDS:
        raise ValueError(
            f"a result kind named {kind.name!r} is registered already; unregister_kind"
            f"({kind.name!r}) first to replace it, or choose another name"
        )
    _KINDS[kind.name] = kind
    return kind


def unregister_kind(name: str) -> ResultKind:
    """Remove the kind ``name`` from the registry; returns it (``register_kind`` puts it
    back)."""
    if name not in _KINDS:
        raise KeyError(f"no result kind named {name!r} is registered; registered: {list(_KINDS)}")
    return _KINDS.pop(name)


def registered() -> dict[str, ResultKind]:
    """The registered kinds, by name, in the order they were registered (a copy)."""
    return dict(_KINDS)


def result_kind(ds: xr.Dataset) -> str:
    """The name of the kind of a result: its ``attrs["design"]`` (``soak``, ``evaluate``,
    ``transfer``, ``search_subsets``, ``split_sensitivity``, ``compare_sampling``, or a kind
    registered since); ``soak`` for results saved before SOAK's had the attribute."""
    return kind_name(ds.attrs)


def kind_name(attrs: Any) -> str:
    """``result_kind`` from a result's attrs (a store's root attributes, before it is read)."""
    name = str(attrs.get("design", "soak"))
    return DESIGN_ALIASES.get(name, name)


def kind_of(ds: xr.Dataset) -> ResultKind:
    """The registered kind of the results ``ds`` (``result_kind``: its ``attrs["design"]``).

    Raises a ``ValueError`` naming the kind found and the registered ones when it is not
    registered.
    """
    name = result_kind(ds)
    if name not in _KINDS:
        raise ValueError(
            f"results of kind {name!r} (attrs['design']) have no registered kind; registered: "
            f"{list(_KINDS)} (soak_dask.result_kinds registers the built-in kinds; "
            "soak_dask.results.registry.register_kind adds one)"
        )
    return _KINDS[name]
