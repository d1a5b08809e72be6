"""How folds are balanced: by class (``assign_folds``), or also by each row's degree of overlap
with other classes (``overlap_folds``, the balanced sampling of
``../shared/seeds/004_balanced_sampling.txt`` dealt into K folds).

Both deal rows (or whole groups) to folds by permuted blocks within strata, as
``soak_dask.split.folds`` does; ``overlap_folds`` adds each row's overlap level
(``soak_dask.split.overlap``) to the strata.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import dask.dataframe as dd
import numpy as np
import pandas as pd

from ..schema import DEFAULT_N_FOLDS
from ..tables.table import FOLD_COLUMN, Table, check_table
from ..user_warning import warn_user
from .fold_options import check_n_folds, check_seed
from .folds import (
    assign_folds,
    assign_group_folds,
    assign_row_folds,
    check_balance,
    groups_hold_one_class,
    row_fold_counts,
)
from .overlap import (
    DEFAULT_K,
    DO_COLUMN,
    POSITION,
    attach,
    check_classification,
    degree_frame,
    overlap_levels,
)


def balanced_folds(
    table: Table,
    n_folds: int,
    seed: int,
    balance: str,
    *,
    stratify: bool = True,
    group_assignment: str = "rows",
    degrees: dd.DataFrame | None = None,
) -> Table:
    """``assign_folds``, or with ``balance="overlap"`` ``soak_dask.overlap_folds`` (rows dealt
    within subset × degree-of-overlap level × class; ``degrees``: its ``degree_frame``, made
    once for several assignments)."""
    if check_balance(balance) == "overlap":
        return overlap_folds(table, n_folds, seed, degrees=degrees)
    return assign_folds(table, n_folds, seed, stratify=stratify, group_assignment=group_assignment)


#: The column of each row's overlap level while folds are dealt.
LEVEL = "__soak_overlap_level__"


def overlap_folds(
    table: Table,
    n_folds: int = DEFAULT_N_FOLDS,
    seed: int = 1,
    *,
    k: int = DEFAULT_K,
    n_levels: int | None = None,
    method: str = "exact",
    degrees: dd.DataFrame | None = None,
) -> Table:
    """Add a fold column (1..K) balanced by degree of overlap, as ``assign_folds`` balances
    classes: rows are dealt to folds within each subset × overlap level × class.

    Each fold then holds the same share of easy rows (degree 0: all k nearest neighbours of
    their own class) and of hard ones (near other classes), so no fold's test score is
    flattered or sunk by where its rows lie -- the paper's balanced sampling (section 3.2)
    applied to K folds. Folds are dealt as ``assign_folds`` deals them (permuted blocks of K
    within each stratum: fold sizes in a stratum differ by at most one, and the folds depend on
    the seed and the rows only).

    With a group column, each group takes the level of its rows' mean degree (rounded) and
    whole groups are dealt to folds within subset × level (× class, when every group holds one
    class), balancing rows, as ``assign_folds`` deals groups.

    Parameters
    ----------
    table : Table
        A classification table without a fold column.
    n_folds, seed
        As for ``assign_folds``.
    k, n_levels, method
        The degree of overlap (``overlap_degrees``) and its levels (``overlap_levels``): the
        k + 1 levels of the paper by default; fewer levels (e.g. ``n_levels=3``) keep the
        strata larger than K on small tables.
    degrees : dask DataFrame, optional
        ``degree_frame(table, k, method)``, to share one search between several fold
        assignments (repeated K-fold); ``method`` is then ignored.

    Returns
    -------
    Table
        A copy whose ``fold`` names the new column (``soak_dask.tables.table.FOLD_COLUMN``),
        which ``soak`` and ``evaluate`` use as they use ``assign_folds``' folds.
    """
    check_table(table, "overlap_folds")
    check_classification(table, "overlap_folds")
    if table.fold is not None:
        raise ValueError(
            f"the table already has the fold column {table.fold!r}; load it without fold= to "
            "assign new folds"
        )
    n_folds, seed = check_n_folds(n_folds), check_seed(seed)
    if degrees is None:
        degrees = degree_frame(table, k, method, seed)
    level = overlap_levels(k, n_levels)
    leveled = attach(table, degrees)
    if table.group is None:
        data, fold_counts = _row_overlap_folds(leveled, level, n_folds, seed)
    else:
        data, fold_counts = _group_overlap_folds(leveled, level, n_folds, seed), None
    data = data.drop(columns=[LEVEL, DO_COLUMN, POSITION])
    return table.with_fold(data, FOLD_COLUMN, fold_counts)


def _row_overlap_folds(
    table: Table, level: np.ndarray, n_folds: int, seed: int
) -> tuple[dd.DataFrame, pd.DataFrame]:
    """Permuted-block folds within subset × level × class; rows per (subset, fold, class)."""
    keys = [table.subset, LEVEL, table.label]
    leveled = _with_level(table, lambda part: level[part[DO_COLUMN].to_numpy(np.int64)])
    data, strata = _renamed_warnings(lambda: assign_row_folds(leveled, keys, n_folds, seed))
    counts = row_fold_counts(strata, n_folds, seed)
    counts = counts.groupby([table.subset, FOLD_COLUMN, table.label], observed=True)["n"].sum()
    return data, counts.reset_index()


def _group_overlap_folds(table: Table, level: np.ndarray, n_folds: int, seed: int) -> dd.DataFrame:
    """Whole groups dealt to folds within subset × level of the group (× class)."""
    group, label = table.group, table.label
    mean = table.data.groupby(group, observed=True)[DO_COLUMN].mean().compute()
    of_group = pd.Series(level[np.rint(mean.to_numpy()).astype(np.int64)], index=mean.index)
    leveled = _with_level(table, lambda part: of_group.reindex(part[group].to_numpy()).to_numpy())
    single = table.task == "classification" and groups_hold_one_class(table)
    keys = [table.subset, LEVEL, *([label] if single else [])]
    return _renamed_warnings(lambda: assign_group_folds(leveled, keys, n_folds, seed)[0])


def _with_level(table: Table, make: Callable[[pd.DataFrame], np.ndarray]) -> Table:
    def add(part: pd.DataFrame) -> pd.DataFrame:
        return part.assign(**{LEVEL: np.asarray(make(part), dtype=np.int64)})

    meta = table.data._meta.assign(**{LEVEL: np.int64(0)})
    return replace(table, data=table.data.map_partitions(add, meta=meta), fold=None)


def _renamed_warnings(call: Callable[[], Any]) -> Any:
    """``call()``, its warnings given again with the level column called "overlap level"
    (``assign_folds``' warnings about small strata name the key columns)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = call()
    for w in caught:
        text = str(w.message)
        if LEVEL in text:
            text = text.replace(LEVEL, "overlap level") + (
                "; fewer overlap levels (n_levels=3, say) make larger strata"
            )
        warn_user(text, w.category)
    return out
