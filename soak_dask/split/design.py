"""The design protocol: what every evaluation design is, so one run path serves them all.

A design is a small class in the scikit-learn splitter style:

- ``__init__`` takes the design's parameters, validates each once (a bad value is refused
  there, naming the parameter) and keeps it under its own name; inner layers trust it;
- ``add_keys(table)`` returns the table with the design's key columns, added lazily on the
  cluster from seeded hashes (so the split depends on the seed and the data only), and records
  what it learned from the data (K after capping, the share drawn, the classes) in
  ``learned_``;
- ``plan(table, counts)`` returns the ``Plan`` -- the distinct fits, the test blocks each
  scores and the coordinates of every result cell -- for the keyed table (``counts``: its
  ``block_counts``, for designs made of (subset, fold) blocks; None for the others);
- ``repr`` and ``get_params`` come from the ``__init__`` signature, as scikit-learn's
  ``BaseEstimator`` makes them: one implementation for every design;
- the hooks the run path reads instead of asking which design it runs: ``resubstitution``
  and ``batch`` (attributes), ``counted()`` (the keyed table's classes, and its blocks
  counted and checked where the design is made of them), ``recorded()`` and ``notes()``
  (what ``add_keys`` drew, as a result records and prints it).
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar

import dask.dataframe as dd
import numpy as np
import pandas as pd
import xarray as xr

from ..tables.table import Table
from .fold_options import check_seed
from .folds import table_classes
from .plan import Plan


class Seed:
    """A design's ``seed``, checked where it is set (``fold_options.check_seed``): a design's
    ``__init__`` assigns ``self.seed = seed`` and nothing re-checks it."""

    def __get__(self, design: Any, owner: type | None = None) -> Any:
        if design is None:
            return self
        try:
            return design.__dict__["seed"]
        except KeyError:
            raise AttributeError(f"{type(design).__name__} has no seed") from None

    def __set__(self, design: Any, value: Any) -> None:
        design.__dict__["seed"] = check_seed(value)


class Design(ABC):
    """Base of every evaluation design (see the module's docstring).

    Attributes
    ----------
    learned_ : dict
        What ``add_keys`` learned from the table (empty before it ran, and for designs that
        learn nothing): read by ``plan`` and recorded in a run's settings.
    kind : str or None
        The kind of result (``schema.DESIGN_DIMS``) that ``run_design`` records for this
        design, so the same results get the same name whichever path ran them
        (``SameOtherAll``: ``"soak"``, ``Transfer``: ``"transfer"``, every
        ``outer.OuterDesign``: ``"evaluate"``); None: a design of its own, named by its
        class.
    counts_ : DataFrame or None
        Rows per combination of the key columns ``add_keys`` added (column ``n``, beside the
        subset and, for classification, the label) when it knows them without a pass over
        the data (one repeat of row folds, from the strata's sizes; every repeat of group
        folds, from the groups'); the run then counts no fit's rows. None: not known, the
        run counts them when it needs them.
    resubstitution : bool
        Whether ``evaluate`` scores each final model on its own training rows and gives
        Efron's .632 estimates from them (``Bootstrap``: its out-of-bag scores alone are
        pessimistic).
    batch : int or None
        Fits made in one task, each task gathering the table once (``run.strategies.Batched``),
        for the fits no other strategy takes; None: one task per fit. A class's when its fits
        are many and small (``LeaveOneOutDesign``, one per row: 64), or set by ``add_keys``
        from the table (``SamplingSplits``: 8 on a table of at most 100,000 rows).

    Examples
    --------
    >>> class Halves(Design):
    ...     def __init__(self, seed: int = 1):
    ...         self.seed = seed
    ...     def add_keys(self, table): ...
    ...     def plan(self, table, counts=None): ...
    >>> Halves(), Halves(seed=3), Halves(3).get_params()
    (Halves(), Halves(seed=3), {'seed': 3})
    """

    kind: ClassVar[str | None] = None
    seed = Seed()
    resubstitution: ClassVar[bool] = False
    batch: int | None = None
    learned_: dict[str, Any] = {}  # noqa: RUF012 (read-only default; add_keys sets its own)
    counts_: pd.DataFrame | None = None

    @classmethod
    def parameters(cls) -> dict[str, Any]:
        """The parameters of ``__init__`` and their defaults (``inspect.Parameter.empty``
        when required), in signature order."""
        signature = inspect.signature(cls.__init__)
        kinds = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
        return {
            name: p.default
            for name, p in signature.parameters.items()
            if name != "self" and p.kind not in kinds
        }

    @classmethod
    def among(cls, values: Mapping[str, Any]) -> tuple[Design, dict[str, Any]]:
        """The design made of its parameters among `values` (a command's settings, as the
        command line and run files check them), and the other values: what a command hands
        an entry point that takes its design (as ``RunOptions.among`` splits the run
        options).

        >>> class Halves(Design):
        ...     def __init__(self, seed: int = 1):
        ...         self.seed = seed
        ...     def add_keys(self, table): ...
        ...     def plan(self, table, counts=None): ...
        >>> Halves.among({"seed": 2, "alpha": 0.1})
        (Halves(seed=2), {'alpha': 0.1})
        """
        names = cls.parameters()
        mine = {name: value for name, value in values.items() if name in names}
        return cls(**mine), {name: value for name, value in values.items() if name not in names}

    def get_params(self) -> dict[str, Any]:
        """Each parameter's validated value, by name (``design_class(**params)`` makes the
        same design)."""
        return {name: getattr(self, name) for name in self.parameters()}

    def __repr__(self) -> str:
        defaults = self.parameters()
        shown = {k: v for k, v in self.get_params().items() if not _is_default(v, defaults[k])}
        listed = ", ".join(f"{k}={_shown(v)}" for k, v in shown.items())
        return f"{type(self).__name__}({listed})"

    def counted(self, table: Table, given: Table) -> list | None:
        """The classes (None for a regression), called by the run path once the keys are
        added to ``given`` (the table as the run was given it) and the columns of the keyed
        ``table`` persisted, before the plan: as ``add_keys`` learned them, else from the
        strata counts of ``given`` its keys were drawn by (shared within a run: no pass of
        its own). A design of (subset, fold) blocks counts and checks the blocks of ``table``
        here too (``block_design.BlockDesign``)."""
        classes = self.learned_["classes"] if "classes" in self.learned_ else table_classes(given)
        return None if classes is None else list(classes)

    def recorded(self) -> dict[str, Any]:
        """What a run's result records of the keys ``add_keys`` drew, beyond the plan's
        coordinates and ``learned_`` (``KNNDMFolds``: the W of its folds and of random
        folds); empty by default."""
        return {}

    def notes(self) -> list[str]:
        """Lines a run's result prints beside its scores about the keys ``add_keys`` drew;
        none by default."""
        return []

    @abstractmethod
    def add_keys(self, table: Table) -> Table:
        """``table`` with the design's key columns (lazy; seeded)."""

    @abstractmethod
    def plan(self, table: Table, counts: pd.DataFrame | None = None) -> Plan:
        """The ``Plan`` of the keyed ``table`` (from ``add_keys``); ``counts`` its
        ``block_counts`` where the design reads them."""


def check_flag(value: Any, name: str) -> bool:
    """``value`` if it is True or False; else a ValueError naming the parameter ``name``."""
    if not isinstance(value, bool | np.bool_):
        raise ValueError(f"{name}={value!r}: need True or False")
    return bool(value)


def _shown(value: Any) -> str:
    """A parameter as ``repr`` shows it: a table or raster (a prediction area) by its type
    alone, as ``<DataFrame>`` -- its own repr runs to pages and names no source."""
    if isinstance(value, Table | pd.DataFrame | dd.DataFrame | xr.Dataset):
        return f"<{type(value).__name__}>"
    return repr(value)


def _is_default(value: Any, default: Any) -> bool:
    """Whether ``value`` is the parameter's default (so ``repr`` leaves it out)."""
    if default is inspect.Parameter.empty:
        return False
    if value is default:
        return True
    if isinstance(value, np.ndarray) or isinstance(default, np.ndarray):
        return False
    try:
        return type(value) is type(default) and bool(value == default)
    except (TypeError, ValueError):
        return False
