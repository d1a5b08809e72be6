"""The designs of ``search_subsets``' runs, on SOAK's folds: one greedy round of inner fits
(``SearchRound``) and the outer fits of the chosen pools (``SearchOuter``).

For test subset σ and outer fold κ the search sees only the outer training part (fold ≠ κ),
whose inner folds are the other outer folds j ≠ κ: a pool P is scored by fitting on
{subset ∈ P, fold ∉ {κ, j}} and scoring {σ, j}. Each round asks, for every search still going,
the pools it scores; the chosen pool is then fitted on {subset ∈ P, fold ≠ κ} and scored on
{σ, κ}, beside same and all. Both read the fold column the transfer design adds
(``soak_dask.split.transfer.Transfer.add_keys``), so they add no keys of their own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ..tables.table import Table
from .design import Design
from .folds import block_counts, check_fold_values
from .plan import Fit, Plan, build_plan
from .transfer import cell_selection, train_selection

#: The train sets the search's outer folds score, in this order.
TRAIN_SETS: tuple[str, ...] = ("same", "greedy", "all")

Key = tuple[int, Any]  # (outer fold, test subset): one search


class SearchRound(Design):
    """One greedy round of the subset search: the inner fits of the pools ``asked``.

    Parameters
    ----------
    asked : mapping
        (outer fold κ, test subset σ) -> the pools (tuples of subsets) the round scores for
        that search.

    Examples
    --------
    >>> design = SearchRound({(1, "a"): [("a",), ("a", "b")]})
    >>> design.pools()
    [('a',), ('a', 'b')]
    >>> plan = design.plan_for(["a", "b"], n_folds=3)
    >>> print(plan.table().loc[:1, ["pool", "inner_fold", "train", "test"]].to_string(index=False))
     pool  inner_fold                            train                    test
        0           2 subset == a & fold not in {1, 2} subset == a & fold == 2
        0           3 subset == a & fold not in {1, 3} subset == a & fold == 3
    """

    def __init__(self, asked: Mapping[Key, Sequence[tuple]]) -> None:
        self.asked = check_asked(asked)

    def pools(self) -> list[tuple]:
        """The pools asked, by number (the plan's ``pool`` coordinate)."""
        return list(dict.fromkeys(pool for pools in self.asked.values() for pool in pools))

    def add_keys(self, table: Table) -> Table:
        """``table`` as it is: the round reads SOAK's fold column (``Transfer.add_keys``)."""
        return on_folds(table, self)

    def plan(self, table: Table, counts: pd.DataFrame | None = None) -> Plan:
        """The round's plan for ``table``'s subsets and folds (from its ``block_counts``)."""
        subsets, n_folds = subsets_and_folds(table, counts)
        return self.plan_for(subsets, n_folds, subset=table.subset, fold=table.fold)

    def plan_for(
        self, subsets: list, n_folds: int, *, subset: str = "subset", fold: str = "fold"
    ) -> Plan:
        """The plan for these subset values and K (no table needed)."""
        return inner_plan(self.asked, subsets, list(range(1, n_folds + 1)), subset, fold)[0]


class SearchOuter(Design):
    """The outer fits of the subset search: each search's chosen pool, same and all.

    Parameters
    ----------
    pools : mapping
        (outer fold κ, test subset σ) -> the pool the search chose.
    """

    def __init__(self, pools: Mapping[Key, tuple]) -> None:
        self.pools = check_pools(pools)

    def add_keys(self, table: Table) -> Table:
        """``table`` as it is: the outer fits read SOAK's fold column."""
        return on_folds(table, self)

    def plan(self, table: Table, counts: pd.DataFrame | None = None) -> Plan:
        """The outer plan for ``table``'s subsets and folds (from its ``block_counts``)."""
        subsets, n_folds = subsets_and_folds(table, counts)
        folds = list(range(1, n_folds + 1))
        return outer_plan(self.pools, subsets, folds, table.subset, table.fold)


def check_asked(asked: Any) -> dict[Key, list[tuple]]:
    """``asked`` as a dict of (outer fold, test subset) -> list of pools (non-empty tuples of
    subsets); else a ValueError naming ``asked``."""
    out = {}
    for key, pools in _searches(asked, "asked").items():
        if isinstance(pools, str | tuple) or not isinstance(pools, Sequence):
            raise ValueError(f"asked[{key!r}]={pools!r}: need a list of pools (tuples of subsets)")
        for pool in pools:
            _check_pool(pool, f"asked[{key!r}]")
        out[key] = list(pools)
    return out


def check_pools(pools: Any) -> dict[Key, tuple]:
    """``pools`` as a dict of (outer fold, test subset) -> its pool (a non-empty tuple of
    subsets); else a ValueError naming ``pools``."""
    return {
        key: _check_pool(pool, f"pools[{key!r}]") for key, pool in _searches(pools, "pools").items()
    }


def _searches(value: Any, name: str) -> Mapping:
    """``value`` if it is a mapping keyed by (outer fold, test subset)."""
    if not isinstance(value, Mapping):
        raise ValueError(f"{name}={value!r}: need a mapping (outer fold, test subset) -> pools")
    for key in value:
        if not (isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], int)):
            raise ValueError(f"{name}: key {key!r}; need (outer fold, test subset)")
    return value


def _check_pool(pool: Any, name: str) -> tuple:
    if not (isinstance(pool, tuple) and pool):
        raise ValueError(f"{name}: pool {pool!r}; need a non-empty tuple of subsets")
    return pool


def on_folds(table: Table, design: Design) -> Table:
    """``table``, which must hold SOAK's fold column (the search's designs add no keys)."""
    if table.fold is None:
        raise ValueError(
            f"{type(design).__name__} reads SOAK's folds: key the table with "
            "Transfer(n_folds, seed=...).add_keys(table) first"
        )
    return table


def subsets_and_folds(table: Table, counts: pd.DataFrame | None) -> tuple[list, int]:
    """The sorted subsets and K of a table with SOAK's folds, from its ``block_counts``."""
    counts = block_counts(table) if counts is None else counts
    subsets = sorted(counts[table.subset].unique().tolist())
    return subsets, check_fold_values(counts, table.fold, None)


def inner_plan(
    asked: dict[Key, list[tuple]], subsets: list, folds: list[int], subset: str, fold: str
) -> tuple[Plan, list[tuple]]:
    """The plan of one round: for each search (κ, σ), each pool P asked and each inner fold
    j ≠ κ, fit {subset ∈ P, fold ∉ {κ, j}} and score {σ, j}. The fold κ is in no train set
    and no test block. Returns the plan (pools numbered in the ``pool`` column) and the pools
    by number."""
    index: dict[tuple, int] = {}
    rows = []
    for (k, s), pools in asked.items():
        for pool in pools:
            number = index.setdefault(pool, len(index))
            for j in folds:
                if j != k:
                    train = train_selection(subset, fold, pool, (min(k, j), max(k, j)))
                    where = {"outer_fold": k, "test_subset": s, "pool": number, "inner_fold": j}
                    rows.append((where, Fit(train), (s, j)))
    cells = {(s, j): {subset: s, fold: j} for s in subsets for j in folds}
    tests = {key: cell_selection(subset, fold, *key) for key in cells}
    coords = {
        "outer_fold": folds,
        "test_subset": subsets,
        "pool": list(index.values()),
        "inner_fold": folds,
    }
    return build_plan(rows, tests, coords, cells), list(index)


def outer_plan(
    pools: dict[Key, tuple], subsets: list, folds: list[int], subset: str, fold: str
) -> Plan:
    """Each search's chosen pool, same and all, fitted on the outer training part
    {fold ≠ κ} and scored on the outer test block {σ, κ}."""
    rows = []
    for s in subsets:
        for k in folds:
            for name, members in zip(
                TRAIN_SETS, ((s,), pools[(k, s)], tuple(subsets)), strict=True
            ):
                train = train_selection(subset, fold, members, (k,))
                rows.append(({"test_subset": s, "fold": k, "train_set": name}, Fit(train), (s, k)))
    cells = {(s, k): {subset: s, fold: k} for s in subsets for k in folds}
    tests = {key: cell_selection(subset, fold, *key) for key in cells}
    coords = {"test_subset": subsets, "fold": folds, "train_set": list(TRAIN_SETS)}
    return build_plan(rows, tests, coords, cells)
