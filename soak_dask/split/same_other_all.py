"""SOAK's design (``SameOtherAll``) and its helpers: a ``soak_dask.split.design.Design`` --
parameters validated in ``__init__``, ``add_keys`` adds the fold column on the cluster (seeded
hashes) and ``plan`` returns the ``Plan`` of same, other and all."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd

from ..schema import SIZE_DIMS, TRAIN_TYPES
from ..tables.table import Table
from .balance import balanced_folds
from .block_design import BlockDesign
from .design import check_flag
from .fold_options import (
    check_group_assignment,
    check_n_folds,
    check_open_ratio,
    check_size_seeds,
    check_sizes,
    fold_count,
)
from .folds import (
    check_balance,
    check_fold_values,
)
from .plan import Fit, Plan, Selection, Term, build_plan
from .sizes import FULL, nominal_groups, size_labels


def check_train_types(train_types: Iterable[str] | str) -> tuple[str, ...]:
    """Validate ``train_types`` and return them in canonical order (same, other, all).

    A string such as ``"same,all"`` is split on commas.
    """
    if isinstance(train_types, str):
        train_types = [t.strip() for t in train_types.split(",") if t.strip()]
    chosen = set(train_types)
    unknown = sorted(chosen - set(TRAIN_TYPES))
    if unknown:
        raise ValueError(f"unknown train_types {unknown}; choose from {list(TRAIN_TYPES)}")
    if not chosen:
        raise ValueError(f"train_types is empty; choose one or more of {list(TRAIN_TYPES)}")
    return tuple(t for t in TRAIN_TYPES if t in chosen)


class SameOtherAll(BlockDesign):
    """Same/Other/All K-fold: the SOAK design, optionally with down-sampled train sizes.

    For each test subset σ and fold κ the test block is {subset = σ, fold = κ} and the train
    sets are same {subset = σ, fold ≠ κ}, other {subset ≠ σ, fold ≠ κ} and all {fold ≠ κ}.

    Parameters
    ----------
    n_folds : int, optional
        K, 2 to 127 (default 10; with a fold column, read from it).
    train_types : sequence of {"same", "other", "all"} or comma-separated str
        With one subset only "same" exists (plain K-fold CV).
    seed : int
        Seed of the fold assignment and the down-samples.
    stratify : bool
        Balance folds within subset × label (classification).
    sizes, ratio, size_seeds : int, float, int
        Down-sampled train sizes (mlr3resampling's ResamplingSameOtherSizesCV): -1 none; 0 also
        each train set down-sampled to the smallest of its test subset; n >= 1 also that size
        × ratio¹…ratioⁿ; ``size_seeds`` independent down-samples of each.
    balance : {"class", "overlap"}
        How folds are balanced (``soak_dask.soak``).
    group_assignment : {"rows", "mlr3resampling"}
        With a group column, how groups are dealt to folds (``soak_dask.assign_folds``).

    Examples
    --------
    >>> design = SameOtherAll(n_folds=3, train_types="same,all")
    >>> design
    SameOtherAll(n_folds=3, train_types=('same', 'all'))
    >>> plan = design.plan_for(["A", "B"])
    >>> plan
    Plan(12 splits (test_subset 2 × fold 3 × train_type 2), 9 distinct fits, 6 test blocks)
    >>> columns = ["test_subset", "fold", "train_type", "fit_id", "train", "test"]
    >>> print(plan.table().loc[:2, columns].to_string(index=False))
    test_subset  fold train_type  fit_id                        train                    test
              A     1       same       0      subset == A & fold != 1 subset == A & fold == 1
              A     1        all       1 subset in {A, B} & fold != 1 subset == A & fold == 1
              A     2       same       2      subset == A & fold != 2 subset == A & fold == 2
    """

    kind = "soak"

    def __init__(
        self,
        n_folds: int | None = None,
        train_types: Sequence[str] | str = TRAIN_TYPES,
        *,
        seed: int = 1,
        stratify: bool = True,
        sizes: int = -1,
        ratio: float = 0.5,
        size_seeds: int = 1,
        balance: str = "class",
        group_assignment: str = "rows",
    ) -> None:
        self.n_folds = None if n_folds is None else check_n_folds(n_folds)
        self.balance = check_balance(balance)
        self.group_assignment = check_group_assignment(group_assignment)
        self.train_types = check_train_types(train_types)
        self.seed = seed
        self.stratify = check_flag(stratify, "stratify")
        self.sizes, self.ratio = check_sizes(sizes), check_open_ratio(ratio)
        self.size_seeds = check_size_seeds(size_seeds)

    def add_keys(self, table: Table) -> Table:
        """``table`` with its fold column: the user's, or assigned on the cluster."""
        self.user_folds_ = table.fold is not None
        if self.user_folds_:
            return table
        k = fold_count(self.n_folds)
        return balanced_folds(
            table,
            k,
            self.seed,
            self.balance,
            stratify=self.stratify,
            group_assignment=self.group_assignment,
        )

    def plan(self, table: Table, counts: pd.DataFrame | None = None) -> Plan:
        """The plan for ``table`` (with its fold column), from its ``block_counts`` (as
        ``counted`` counted them, else counted here if not given)."""
        counts = self.blocks(table, counts)
        n_folds = check_fold_values(counts, table.fold, self.n_folds)
        subsets = sorted(counts[table.subset].unique().tolist())
        groups = None
        if self.sizes >= 0:
            if table.group is not None:
                by_subset = table.data.groupby(table.subset, observed=True)[table.group]
                groups = by_subset.nunique(split_out=1).compute()
            else:
                groups = counts.groupby(table.subset, observed=True)["n"].sum()
        return self.plan_for(subsets, groups, n_folds, subset=table.subset, fold=table.fold)

    def plan_for(
        self,
        subsets: Sequence,
        subset_groups: pd.Series | None = None,
        n_folds: int | None = None,
        *,
        subset: str = "subset",
        fold: str = "fold",
    ) -> Plan:
        """The plan for these subset values (no table needed).

        Parameters
        ----------
        subsets : sequence
            The distinct subset values, in the order results use.
        subset_groups : Series, optional
            Groups (rows without groups) per subset: needed with ``sizes >= 0``.
        n_folds : int, optional
            K (default: the design's).
        subset, fold : str
            The key columns' names in the table.
        """
        subsets = list(subsets)
        if len(set(subsets)) != len(subsets):
            raise ValueError(f"subsets must be distinct, got {subsets}")
        k = fold_count(n_folds, self.n_folds)
        types = ("same",) if len(subsets) == 1 else self.train_types
        cells = {(s, j): {subset: s, fold: j} for s in subsets for j in range(1, k + 1)}
        tests = {key: Selection((Term(subset, (key[0],)), Term(fold, (key[1],)))) for key in cells}
        full = [
            (
                {"test_subset": s, "fold": j, "train_type": t},
                self._train(subsets, s, t, j, subset, fold),
            )
            for s in subsets
            for j in range(1, k + 1)
            for t in types
        ]
        coords = {"test_subset": subsets, "fold": list(range(1, k + 1)), "train_type": list(types)}
        if self.sizes < 0:
            rows = [(where, Fit(train), _cell(where)) for where, train in full]
        else:
            if subset_groups is None:
                raise ValueError(f"sizes={self.sizes} needs subset_groups (groups per subset)")
            rows = self._sized_rows(full, subset_groups, k, types)
            samples = list(range(1, self.size_seeds + 1))
            coords.update(
                zip(SIZE_DIMS, (size_labels(self.sizes, self.ratio), samples), strict=True)
            )
        plan = build_plan(rows, tests, coords, cells)
        return _describe(plan, subset, fold)

    @staticmethod
    def _train(
        subsets: list, test: Any, train_type: str, k: int, subset: str, fold: str
    ) -> Selection:
        members = {
            "same": (test,),
            "other": tuple(s for s in subsets if s != test),
            "all": tuple(subsets),
        }[train_type]
        return Selection((Term(subset, members), Term(fold, (k,), exclude=True)))

    def _sized_rows(
        self,
        full: list[tuple[dict, Selection]],
        subset_groups: pd.Series,
        k: int,
        types: Sequence[str],
    ) -> list[tuple]:
        """Result cells with down-sampled sizes: every full-size cell first, so full fits keep
        the numbers they have without sizes; then the down-samples, which count groups
        nominally as mlr3resampling does (``sizes.nominal_groups``)."""
        nominal = nominal_groups(subset_groups, k)
        labels = size_labels(self.sizes, self.ratio)
        samples = range(1, self.size_seeds + 1)
        rows = [
            ({**where, "train_size": FULL, "sample": n}, Fit(train), _cell(where))
            for where, train in full
            for n in samples
        ]
        for where, train in full:
            whole = nominal.loc[where["test_subset"], where["train_type"]]
            smallest = nominal.loc[where["test_subset"], list(types)].min()
            for n in samples:
                for i, label in enumerate(labels[1:]):
                    target = max(1, int(smallest * self.ratio**i))
                    fit = Fit(train) if target >= whole else Fit(train, target, n)
                    rows.append(({**where, "train_size": label, "sample": n}, fit, _cell(where)))
        return rows


def _cell(where: dict) -> tuple:
    """The test block of a SOAK result cell: its (test subset, fold)."""
    return where["test_subset"], where["fold"]


def _describe(plan: Plan, subset: str, fold: str) -> Plan:
    """Add the SOAK columns ``fold``, ``train_subsets`` and ``test_subsets`` to the fits."""
    fits = plan.fits
    fits["fold"] = [int(train.terms[1].values[0]) for train in fits["train"]]
    fits["train_subsets"] = [train.terms[0].values for train in fits["train"]]
    tested = plan.blocks[subset].tolist()
    fits["test_subsets"] = [tuple(tested[b] for b in blocks) for blocks in fits["blocks"]]
    plan.blocks["name"] = [f"subset {s!r}" for s in plan.blocks[subset]]
    return plan


def make_plan(
    subsets: Sequence, n_folds: int, train_types: Iterable[str] | str = TRAIN_TYPES
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Splits and the distinct fits that serve them.

    Every train set is a union of (subset, fold) blocks, so a fit is identified by its fold and
    its set of train subsets: ``all`` for fold k is one fit whatever the test subset, and with two
    subsets other(A) is same(B). With one subset only ``same`` exists (plain K-fold CV). This
    is ``SameOtherAll(n_folds, train_types).plan_for(subsets)`` seen as two tables.

    Parameters
    ----------
    subsets : sequence
        The distinct subset values, in the order results should use.
    n_folds : int
        K; folds are numbered 1..K.
    train_types : iterable of {"same", "other", "all"}
        Any non-empty selection (mlr3resampling's S, O, A, SO, SA, SOA).

    Returns
    -------
    splits : DataFrame
        One row per split: ``test_subset, fold, train_type, fit_id``.
    fits : DataFrame
        One row per distinct fit, indexed by ``fit_id``: ``fold``, ``train_subsets`` (tuple),
        ``test_subsets`` (tuple of the subsets whose test block this fit predicts).

    Examples
    --------
    >>> splits, fits = make_plan(["A", "B", "C"], n_folds=10)
    >>> len(splits), len(fits)
    (90, 70)
    >>> len(make_plan(["A", "B"], n_folds=10)[1])
    30
    """
    plan = SameOtherAll(n_folds, train_types).plan_for(subsets)
    splits = plan.splits[["test_subset", "fold", "train_type", "fit_id"]]
    return splits, plan.fits[["fold", "train_subsets", "test_subsets"]]
