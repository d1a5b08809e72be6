"""Designs made of (subset, fold) blocks -- SOAK's ``SameOtherAll`` and the transfer matrix's
``Transfer`` --: their blocks counted once, after the keys are added, and checked before any
fit (the run path calls ``Design.counted``; the plan and every fit's rows read the counts)."""

from __future__ import annotations

import pandas as pd

from ..tables.checks import (
    check_blocks,
    check_classes,
    check_folds_within_groups,
    one_class_warning,
    unequal_folds_warning,
    warn,
)
from ..tables.table import Table
from .design import Design
from .folds import block_counts, check_fold_values


class BlockDesign(Design):
    """A design whose train and test sets are unions of (subset, fold) blocks.

    Attributes
    ----------
    n_folds : int or None
        K as given (None: the default, or read from the user's fold column).
    user_folds_ : bool
        Whether ``add_keys`` kept the user's fold column (then checked to keep groups whole).
    n_folds_ : int
        After ``counted``: K, as the blocks hold it.
    subsets_ : list
        After ``counted``: the subsets, sorted.
    """

    n_folds: int | None = None
    user_folds_: bool = False
    n_folds_: int
    subsets_: list

    def counted(self, table: Table, given: Table) -> list | None:
        """Count the blocks of the keyed ``table`` into ``counts_`` (``folds.block_counts``)
        and check them (``checked_counts``), keeping K and the subsets they hold; the classes
        (of the blocks: ``given`` unread)."""
        self.counts_, classes, self.subsets_, self.n_folds_ = checked_counts(
            table, self.n_folds, self.user_folds_
        )
        return classes

    def blocks(self, table: Table, counts: pd.DataFrame | None = None) -> pd.DataFrame:
        """The block counts a plan of ``table`` reads: ``counts`` if given, else those
        ``counted`` counted, else counted here (one pass)."""
        if counts is not None:
            return counts
        return block_counts(table) if self.counts_ is None else self.counts_


def checked_counts(
    table: Table, n_folds: int | None, user_folds: bool
) -> tuple[pd.DataFrame, list | None, list, int]:
    """The table's block counts, classes, subsets (sorted) and K, after the checks and warnings
    about its data: no rows, folds 1..K (K = ``n_folds`` when given), an empty block, folds of
    very unequal size, a user's folds that split a group, a single class, a subset of one
    class."""
    counts = block_counts(table)
    if not counts["n"].sum():
        raise ValueError(f"the table ({table.source}) has no rows")
    k = check_fold_values(counts, table.fold, n_folds)
    subsets = sorted(counts[table.subset].unique().tolist())
    block_rows = counts.groupby([table.subset, table.fold], observed=True)["n"].sum()
    check_blocks(block_rows, subsets, k)
    warn(unequal_folds_warning(block_rows))
    if user_folds:
        check_folds_within_groups(table)
    if table.task != "classification":
        return counts, None, subsets, k
    classes = sorted(counts[table.label].unique().tolist())
    check_classes(classes, table.label)  # before the subsets' one-class warning
    warn(one_class_warning(counts, table.subset, table.label))
    return counts, classes, subsets, k
