"""The design of ``compare_sampling``: one train/test split per sampling method and ``n_repeats``
random splits, each a key column (1 train, 0 test) drawn on the cluster by the methods of
``soak_dask.split.sampling``, and a plan of one fit per split (dim ``split``)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from ..settings import refuse_ignored
from ..tables.table import Table
from ..user_warning import warn_user
from .design import Design
from .overlap import (
    DEFAULT_K,
    POSITION,
    SEARCHES,
    attach,
    check_k,
    degree_frame,
    label_counts,
    overlap_levels,
)
from .plan import Fit, Plan, Selection, Term, build_plan
from .sampling import (
    D_OPTIMAL_REPEATS,
    MDC_MAX_ROWS,
    METHODS,
    SPLITTERS,
    check_ratio,
    classes_of,
    random_splits,
)

#: The methods compared by default: the paper's five and stratified sampling.
DEFAULT_METHODS = ("random", "stratified", "clustering", "mdc", "doptimal", "overlap")
#: A table of at most this many rows has its fits made ``BATCH`` a task (the table gathered once
#: a task); a larger one's, one a task.
BATCH_MAX_ROWS = 100_000
BATCH = 8
#: Options of some methods only: their defaults, and the methods that use them.
METHOD_OPTIONS = {
    "n_neighbors": (DEFAULT_K, ("overlap", "overlap_class")),
    "n_levels": (None, ("overlap", "overlap_class")),
    "knn": ("exact", ("overlap", "overlap_class")),
    "mdc_max_rows": (MDC_MAX_ROWS, ("mdc",)),
    "doptimal_repeats": (D_OPTIMAL_REPEATS, ("doptimal",)),
}


class SamplingSplits(Design):
    """Each sampling method's split and ``n_repeats`` random splits of share ``train_ratio``.

    Parameters
    ----------
    methods : sequence of str or comma-separated str
        From ``soak_dask.split.sampling.METHODS``.
    train_ratio : float
        Share of the rows that train, in (0, 1).
    n_repeats : int
        Random splits (at least 2): their mean accuracy is the AEV, their SD scales MAI.
    seed : int
        Seed of every split.
    n_neighbors, n_levels, knn, mdc_max_rows, doptimal_repeats
        Options of the overlap methods, MDC and D-optimal sampling (``compare_sampling``);
        given other than their defaults, they are refused when no method asked uses them.

    Examples
    --------
    >>> design = SamplingSplits(["random", "overlap"], n_repeats=3)
    >>> design
    SamplingSplits(methods=('random', 'overlap'), n_repeats=3)
    >>> design.plan(None)
    Plan(5 splits (split 5), 5 distinct fits, 5 test blocks)
    """

    def __init__(
        self,
        methods: Sequence[str] | str = DEFAULT_METHODS,
        train_ratio: float = 0.7,
        n_repeats: int = 100,
        seed: int = 1,
        *,
        n_neighbors: int = DEFAULT_K,
        n_levels: int | None = None,
        knn: str = "exact",
        mdc_max_rows: int = MDC_MAX_ROWS,
        doptimal_repeats: int = D_OPTIMAL_REPEATS,
    ) -> None:
        self.seed, self.train_ratio = seed, check_ratio(train_ratio)
        self.methods = check_methods(methods)
        given = {"n_neighbors": n_neighbors, "n_levels": n_levels, "knn": knn}
        given.update(mdc_max_rows=mdc_max_rows, doptimal_repeats=doptimal_repeats)
        check_method_options(self.methods, **given)
        self.n_repeats = check_at_least(n_repeats, 2, "n_repeats")
        self.n_neighbors = check_k(n_neighbors, "n_neighbors")
        overlap_levels(self.n_neighbors, n_levels)  # refuses a bad n_levels, naming it
        self.n_levels = n_levels
        if knn not in SEARCHES:
            raise ValueError(f"knn={knn!r}: choose one of {', '.join(map(repr, SEARCHES))}")
        self.knn = knn
        self.mdc_max_rows = check_at_least(mdc_max_rows, 1, "mdc_max_rows")
        self.doptimal_repeats = check_at_least(doptimal_repeats, 1, "doptimal_repeats")

    def names(self) -> list[str]:
        """The splits, in the plan's order: the methods, then ``random_1``…"""
        return [*self.methods, *(f"random_{r}" for r in range(1, self.n_repeats + 1))]

    def add_keys(self, table: Table) -> Table:
        """``table`` (its features and label, with ``POSITION``, which the keys need) with every
        split's key column, kept in cluster memory, and without ``POSITION``; ``learned_``:
        each method's warnings (``notes``, given again, prefixed with its name) and the
        ``classes``; ``batch``: fits made in one task, on a small table (the table gathered
        once a task)."""
        overlap: dict[str, Any] = {"k": self.n_neighbors, "n_levels": self.n_levels}
        overlap["method"] = self.knn
        if {"overlap", "overlap_class"} <= set(self.methods):  # one search serves both
            overlap["degrees"] = degree_frame(table, self.n_neighbors, self.knn, self.seed)
        options = {
            "overlap": overlap,
            "overlap_class": overlap,
            "mdc": {"max_rows": self.mdc_max_rows},
            "doptimal": {"n_repeats": self.doptimal_repeats},
        }
        keyed, notes = table, {}
        for method in self.methods:
            keyed, notes[method] = _with_split(keyed, table, method, self, options.get(method))
        trials = [split_column(f"random_{r}") for r in range(1, self.n_repeats + 1)]
        drawn = random_splits(table, self.train_ratio, self.seed, trials)
        self.learned_ = {"notes": notes, "classes": tuple(classes_of(table))}
        # The rows per class the splits counted: no pass of its own.
        n_rows = int(label_counts(table).rows.sum())
        self.batch = BATCH if n_rows <= BATCH_MAX_ROWS else None
        keyed = attach(keyed, drawn.data[trials].persist())
        return replace(keyed, data=keyed.data.drop(columns=[POSITION]))

    def plan(self, table: Table | None, counts: pd.DataFrame | None = None) -> Plan:
        """One fit per split, trained on its training rows and scored on its test rows (the
        plan reads no table: its key columns are named by the splits)."""
        rows, tests = [], {}
        for name in self.names():
            column = split_column(name)
            tests[name] = Selection((Term(column, (0,)),))
            rows.append(({"split": name}, Fit(Selection((Term(column, (1,)),))), name))
        return build_plan(rows, tests, {"split": self.names()})


def _with_split(
    keyed: Table, base: Table, method: str, design: SamplingSplits, options: Mapping | None
) -> tuple[Table, str]:
    """``keyed`` with ``method``'s key column drawn from ``base`` (kept in cluster memory),
    and the method's warnings, given again prefixed with its name."""
    column = split_column(method)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        split = SPLITTERS[method](
            base, design.train_ratio, design.seed, column=column, **(options or {})
        )
    for w in caught:
        warn_user(f"{method}: {w.message}", w.category)
    return attach(keyed, split.data[[column]].persist()), " ".join(str(w.message) for w in caught)


def split_column(name: str) -> str:
    """The key column of split ``name`` (a method, or ``random_<trial>``)."""
    return f"__soak_split_{name}__"


def check_methods(methods: Sequence[str] | str, name: str = "methods") -> tuple[str, ...]:
    """The methods as a tuple, refusing unknown and repeated names and an empty list
    (messages call the option ``name``)."""
    if isinstance(methods, str):
        methods = [m.strip() for m in methods.split(",") if m.strip()]
    if not isinstance(methods, Sequence) or not all(isinstance(m, str) for m in methods):
        raise ValueError(f"{name}={methods!r}: need a list of method names")
    methods = tuple(methods)
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ValueError(
            f"{name}={list(methods)}: {unknown} are not sampling methods; choose from "
            f"{list(METHODS)}"
        )
    if not methods or len(set(methods)) < len(methods):
        raise ValueError(f"{name}={list(methods)}: need one or more distinct methods")
    return methods


def check_method_options(methods: Sequence[str], **given: Any) -> None:
    """Refuse an option given (other than its default) when no method asked for uses it."""
    for name, value in given.items():
        default, users = METHOD_OPTIONS[name]
        if not set(users) & set(methods):
            named = "the methods " + " and ".join(map(repr, users))
            refuse_ignored(name, value, default, f"methods={list(methods)}", named)


def check_at_least(value: Any, low: int, name: str) -> int:
    """``value`` as an int of at least ``low``; else a ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise ValueError(f"{name}={value!r}: need an integer of at least {low}")
    return int(value)
