"""Plans as data: which train sets to fit, which test blocks each scores, and where each score
lands in the result.

A train set and a test block are each a ``Selection``: a conjunction of conditions on key
columns of the table (the subset and fold columns, and whatever a design adds: a repeat's
folds, a reserved flag). A ``Plan`` holds three small tables -- the distinct fits, the test
blocks and the splits (one per result cell, with its coordinates) -- so one executor runs any
design, and identical train selections become one fit whatever design asked for them.
Builders (designs: ``soak_dask.split.same_other_all``'s ``SameOtherAll``...) add their key
columns on the cluster and return a plan.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class Term:
    """Rows whose ``column`` is one of ``values`` (or none of them, with ``exclude``).

    Examples
    --------
    >>> print(Term("fold", (3,), exclude=True))
    fold != 3
    >>> Term("region", ("A", "B")).mask(pd.DataFrame({"region": ["A", "C", "B"]})).tolist()
    [True, False, True]
    """

    column: str
    values: tuple
    exclude: bool = False

    def mask(self, frame: pd.DataFrame) -> np.ndarray:
        """Boolean array: which rows of ``frame`` meet the condition."""
        column = frame[self.column]
        if len(self.values) == 1:  # a comparison is faster than a hash lookup
            hit = (column == self.values[0]).to_numpy()
        else:
            hit = column.isin(list(self.values)).to_numpy()
        return ~hit if self.exclude else hit

    def __str__(self) -> str:
        if len(self.values) == 1:
            return f"{self.column} {'!=' if self.exclude else '=='} {self.values[0]}"
        listed = ", ".join(map(str, self.values))
        return f"{self.column} {'not in' if self.exclude else 'in'} {{{listed}}}"


@dataclass(frozen=True)
class Selection:
    """Rows meeting every one of ``terms`` (all rows when there are none).

    Hashable and comparable, so identical train sets are found by equality; ``&`` restricts one
    selection by another (rows reserved from every train set, an inner plan inside an outer
    train set).

    Examples
    --------
    >>> same = Selection((Term("region", ("A",)), Term("fold", (2,), exclude=True)))
    >>> print(same)
    region == A & fold != 2
    >>> print(same & Selection((Term("reserved", (False,)),)))
    region == A & fold != 2 & reserved == False
    """

    terms: tuple[Term, ...] = ()

    def mask(self, frame: pd.DataFrame) -> np.ndarray:
        """Boolean array: which rows of ``frame`` are selected."""
        out = np.ones(len(frame), dtype=bool)
        for term in self.terms:
            out &= term.mask(frame)
        return out

    @property
    def columns(self) -> frozenset[str]:
        """The key columns the selection reads."""
        return frozenset(term.column for term in self.terms)

    def __and__(self, other: Selection) -> Selection:
        return Selection(self.terms + other.terms)

    def __str__(self) -> str:
        return " & ".join(map(str, self.terms)) or "all rows"


@dataclass(frozen=True)
class Fit:
    """What a fit is fitted on; two equal ``Fit`` are one fit, whatever asked for them.

    Attributes
    ----------
    train : Selection
        The train rows.
    n_groups : int
        Down-sample the train set to this many groups (rows without groups); 0 keeps it whole.
    draw : int
        Which down-sample (1..), 0 for none.
    weights : str, optional
        A key column of integer row weights (a bootstrap's counts): each train row is used
        that many times. None: once each.
    """

    train: Selection
    n_groups: int = 0
    draw: int = 0
    weights: str | None = None


FIT_COLUMNS = tuple(Fit.__dataclass_fields__)


@dataclass(frozen=True)
class Plan:
    """A resampling plan: distinct fits, test blocks and the result cells they fill.

    Attributes
    ----------
    fits : DataFrame
        Indexed by ``fit_id``: the fields of ``Fit`` (``train``, ``n_groups``, ``draw``,
        ``weights``), ``blocks`` (tuple of the test blocks the fit scores), plus columns a
        design adds to describe its fits.
    blocks : DataFrame
        Indexed by ``block``: ``test`` (Selection), ``name`` (how messages name the block),
        plus one column per cell key (``cell_columns``) giving the block's value of it.
    splits : DataFrame
        One row per result cell: one column per dim of ``coords``, ``fit_id`` and ``block``.
    coords : dict
        Dim -> ordered coordinate values of the result (the learner dim excepted).
    cell_columns : tuple of str
        Key columns whose value combinations ("cells") partition the table so that every test
        block is one cell and every train set a union of cells: then statistics per cell make
        any fit in one pass. Empty when a design's sets are not made of cells.
    """

    fits: pd.DataFrame
    blocks: pd.DataFrame
    splits: pd.DataFrame
    coords: dict[str, list] = field(default_factory=dict)
    cell_columns: tuple[str, ...] = ()

    @property
    def dims(self) -> tuple[str, ...]:
        """Dims of the result cells, in order."""
        return tuple(self.coords)

    def table(self) -> pd.DataFrame:
        """The plan as one printable table: a row per split with its train and test sets."""
        fits = self.fits[list(FIT_COLUMNS)].map(str)
        out = self.splits.join(fits, on="fit_id").join(self.blocks["test"].map(str), on="block")
        return out[[*self.dims, "fit_id", *FIT_COLUMNS, "test"]]

    def __repr__(self) -> str:
        shape = " × ".join(f"{dim} {len(values)}" for dim, values in self.coords.items())
        return (
            f"Plan({len(self.splits)} splits ({shape}), {len(self.fits)} distinct fits, "
            f"{len(self.blocks)} test blocks)"
        )


def build_plan(
    rows: Iterable[tuple[Mapping[str, Any], Fit, Any]],
    tests: Mapping[Any, Selection],
    coords: Mapping[str, list],
    cells: Mapping[Any, Mapping[str, Any]] | None = None,
) -> Plan:
    """A plan from its splits, finding the distinct fits.

    Parameters
    ----------
    rows : iterable of (coordinates, Fit, test key)
        One per result cell, in the order fits should be numbered (first use).
    tests : mapping
        Test key -> the test block's Selection.
    coords : mapping
        Dim -> ordered coordinate values.
    cells : mapping, optional
        Test key -> the block's cell key values (see ``Plan.cell_columns``).

    Examples
    --------
    >>> a, b = (Selection((Term("fold", (k,)),)) for k in (1, 2))
    >>> rows = [({"fold": 1, "t": "x"}, Fit(b), 1), ({"fold": 1, "t": "y"}, Fit(b), 1),
    ...         ({"fold": 2, "t": "x"}, Fit(a), 2)]
    >>> build_plan(rows, {1: a, 2: b}, {"fold": [1, 2], "t": ["x", "y"]})
    Plan(3 splits (fold 2 × t 2), 2 distinct fits, 2 test blocks)
    """
    keys = list(tests)
    block_of = {key: i for i, key in enumerate(keys)}
    fit_ids: dict[Fit, int] = {}
    split_rows, fit_blocks = [], []
    for where, key, test in rows:
        fit = fit_ids.setdefault(key, len(fit_ids))
        if fit == len(fit_blocks):
            fit_blocks.append([])
        if block_of[test] not in fit_blocks[fit]:
            fit_blocks[fit].append(block_of[test])
        split_rows.append({**where, "fit_id": fit, "block": block_of[test]})
    # Object columns: pandas would read None among strings as a missing string (NaN).
    values = [[getattr(f, c) for c in FIT_COLUMNS] for f in fit_ids]
    fits = pd.DataFrame(values, columns=list(FIT_COLUMNS), dtype=object)
    fits = fits.astype({"n_groups": np.int64, "draw": np.int64})
    fits["blocks"] = [tuple(b) for b in fit_blocks]
    fits.index.name = "fit_id"
    blocks = pd.DataFrame({"test": [tests[k] for k in keys]})
    blocks["name"] = [f"block {k}" for k in keys]
    cell_columns: tuple[str, ...] = ()
    if cells is not None:
        blocks = blocks.join(pd.DataFrame([dict(cells[k]) for k in keys]))
        cell_columns = tuple(next(iter(cells.values()), {}))
    blocks.index.name = "block"
    splits = pd.DataFrame(split_rows, columns=[*coords, "fit_id", "block"])
    return Plan(fits, blocks, splits, {k: list(v) for k, v in coords.items()}, cell_columns)
