"""The transfer matrix's design: train on each single subset, test on every subset, on SOAK's
folds.

A fit on subset t (all folds but κ) scores the fold-κ block of every test subset σ, so S
subsets cost S·K fits, not S²·K; the folds are SOAK's (same seed, same folds), so the diagonal
t = σ is SOAK's ``same``. ``cell_selection`` and ``train_selection`` write blocks and train
sets as SOAK writes them, so equal sets are one fit whatever design asked for them (the
subset search's rounds use them too).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from ..tables.table import SUBSET_COLUMN, Table
from .block_design import BlockDesign
from .design import check_flag
from .fold_options import check_n_folds, fold_count
from .folds import check_fold_values
from .plan import Fit, Plan, Selection, Term, build_plan
from .same_other_all import SameOtherAll


class Transfer(BlockDesign):
    """Plan builder of the transfer matrix, in the style of ``SameOtherAll``.

    Fit (t, κ) trains on {subset = t, fold ≠ κ} and scores the blocks {subset = σ, fold = κ}
    of every subset σ: S·K fits fill the S × S × K result cells. The folds are SOAK's, from the
    same seed (``add_keys`` is ``SameOtherAll.add_keys``), so fit (σ, κ) is SOAK's ``same`` fit
    of test subset σ and fold κ.

    Parameters
    ----------
    n_folds : int, optional
        K, 2 to 127 (default 10; with a fold column, read from it).
    seed : int
        Seed of the fold assignment.
    stratify : bool
        Balance folds within subset × label (classification).

    Examples
    --------
    >>> plan = Transfer(n_folds=3).plan_for(["A", "B"])
    >>> plan
    Plan(12 splits (train_subset 2 × test_subset 2 × fold 3), 6 distinct fits, 6 test blocks)
    >>> print(plan.table().loc[:1, ["train_subset", "test_subset", "fold", "train", "test"]]
    ...       .to_string(index=False))
    train_subset test_subset  fold                   train                    test
               A           A     1 subset == A & fold != 1 subset == A & fold == 1
               A           B     1 subset == A & fold != 1 subset == B & fold == 1
    """

    kind = "transfer"

    def __init__(self, n_folds: int | None = None, *, seed: int = 1, stratify: bool = True):
        self.n_folds = None if n_folds is None else check_n_folds(n_folds)
        self.seed = seed
        self.stratify = check_flag(stratify, "stratify")

    def add_keys(self, table: Table) -> Table:
        """``table`` with its fold column: the user's, or assigned on the cluster as ``soak``
        assigns it. A table loaded without a subset column is refused first: whichever path
        runs the design (``transfer``, ``search_subsets``, ``run_design``), the matrix needs
        subsets."""
        if table.subset == SUBSET_COLUMN:
            raise ValueError(
                "the transfer matrix (transfer, search_subsets) trains on each subset and tests "
                "on every subset: load the table with subset=COLUMN (without subsets, use "
                "soak_dask.soak or soak_dask.evaluate)"
            )
        self.user_folds_ = table.fold is not None
        return SameOtherAll(self.n_folds, seed=self.seed, stratify=self.stratify).add_keys(table)

    def counted(self, table: Table, given: Table) -> list | None:
        """As for every block design (``BlockDesign.counted``), refusing a single subset: a
        matrix of one cell compares nothing."""
        classes = super().counted(table, given)
        subsets = self.counts_[table.subset].unique().tolist()
        if len(subsets) < 2:
            raise ValueError(
                f"subset column {table.subset!r} holds one subset ({subsets[0]!r}), so the "
                "transfer matrix would be 1×1; give a column with at least two subsets"
            )
        return classes

    def plan(self, table: Table, counts: pd.DataFrame | None = None) -> Plan:
        """The plan for ``table`` (with its fold column), from its ``block_counts`` (as
        ``counted`` counted them, else counted here if not given)."""
        counts = self.blocks(table, counts)
        n_folds = check_fold_values(counts, table.fold, self.n_folds)
        subsets = sorted(counts[table.subset].unique().tolist())
        return self.plan_for(subsets, n_folds, subset=table.subset, fold=table.fold)

    def plan_for(
        self,
        subsets: Sequence,
        n_folds: int | None = None,
        *,
        subset: str = "subset",
        fold: str = "fold",
    ) -> Plan:
        """The plan for these subset values (no table needed); ``n_folds`` default: the
        builder's, else 10."""
        subsets = list(subsets)
        if len(set(subsets)) != len(subsets):
            raise ValueError(f"subsets must be distinct, got {subsets}")
        folds = list(range(1, fold_count(n_folds, self.n_folds) + 1))
        cells = {(s, k): {subset: s, fold: k} for s in subsets for k in folds}
        tests = {key: cell_selection(subset, fold, *key) for key in cells}
        rows = [
            (
                {"train_subset": t, "test_subset": s, "fold": k},
                Fit(train_selection(subset, fold, (t,), (k,))),
                (s, k),
            )
            for t in subsets
            for k in folds
            for s in subsets
        ]
        coords = {"train_subset": subsets, "test_subset": subsets, "fold": folds}
        plan = build_plan(rows, tests, coords, cells)
        plan.blocks["name"] = [f"subset {s!r} fold {k}" for s, k in cells]
        return plan


def cell_selection(subset: str, fold: str, value: Any, k: int) -> Selection:
    """The test block {subset = value, fold = k}, written as SOAK writes it."""
    return Selection((Term(subset, (value,)), Term(fold, (k,))))


def train_selection(subset: str, fold: str, members: tuple, left_out: tuple) -> Selection:
    """The train set {subset in members, fold not in left_out}, written as SOAK writes it
    (one term per column, values in the caller's order), so equal sets are one fit."""
    return Selection((Term(subset, members), Term(fold, left_out, exclude=True)))
