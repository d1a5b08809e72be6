"""Checks of the data before anything is fitted: clear errors instead of wrong numbers.

The warnings about the data are written here, once: a run gives them (``soak_dask.soak``,
``soak_dask.assign_folds``; ``soak_dask.load_table`` for coordinates) and
``soak_dask.describe_table`` lists the same messages, from the same counts, before any run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import dask.dataframe as dd
import numpy as np
import pandas as pd

from ..user_warning import warn_user
from .table import SUBSET_COLUMN, Table

_LISTED = 5  # examples named in one message


def named(items: Iterable[object]) -> str:
    """The first few ``items``, comma-separated, with their number when some are left out."""
    items = list(items)
    text = ", ".join(map(str, items[:_LISTED]))
    return text + (f", ... ({len(items)} in all)" if len(items) > _LISTED else "")


def warn(message: str | None) -> None:
    """Give ``message`` as a UserWarning, if there is one, located at the first caller outside
    the package (``user_warning.warn_user``: the user's line, however deep in the run path the
    data was checked)."""
    if message:
        warn_user(message)


def infinite_features_error(n_inf: Mapping[str, int]) -> str | None:
    """The refusal of feature columns with infinite values (``n_inf``: rows per column)."""
    inf = {c: int(n) for c, n in n_inf.items() if n}
    if not inf:
        return None
    return (
        f"feature columns {list(inf)} have infinite values ({list(inf.values())} rows); "
        "replace or drop those rows, or leave those columns out of features"
    )


def missing_features_warning(n_na: Mapping[str, int]) -> str | None:
    """The warning about feature columns with missing values (``n_na``: rows per column)."""
    na = {c: int(n) for c, n in n_na.items() if n}
    if not na:
        return None
    return (
        f"feature columns {list(na)} have missing values ({list(na.values())} rows); "
        "learners that cannot handle NaN will fail and score NaN"
    )


def small_strata_warning(
    strata: pd.Series,
    keys: Sequence[str],
    n_folds: int,
    unit: str = "rows",
    rows: pd.Series | None = None,
) -> str | None:
    """The warning about strata (rows or groups per key combination) smaller than K: folds
    are balanced per stratum, so some folds lack them.

    It names each such stratum with its size (and with groups, its rows: ``rows``, indexed
    as ``strata``), and the largest K that gives every fold a member of every stratum (the
    smallest stratum's size), so the user can act.

    Examples
    --------
    >>> strata = pd.Series([8, 44], pd.MultiIndex.from_tuples([("S", "no"), ("S", "yes")]))
    >>> rows = pd.Series([2638, 291], strata.index)
    >>> text = small_strata_warning(strata, ["region", "y"], 10, "groups of 'polygon'", rows)
    >>> text.split("): ", 1)[1].split("; ")[0]
    "('S', 'no'): 8 groups (2,638 rows)"
    >>> text.split("; ")[1]
    'n_folds=8 is the largest K that gives every fold a group of every (region, y) stratum'
    """
    present = strata[strata > 0]
    small = present[present < n_folds]
    if small.empty:
        return None
    if keys[0] == SUBSET_COLUMN and len(keys) > 1:  # no subset column: strata are the classes
        keys, small = keys[1:], small.droplevel(0)
        rows = None if rows is None else rows.droplevel(0)
    word = unit.split()[0]  # "rows" or "groups"
    listed = ", ".join(
        f"{k}: {n} {word if n != 1 else word[:-1]}"
        + ("" if rows is None else f" ({int(rows.get(k, 0)):,} rows)")
        for k, n in small.items()
    )
    largest = int(present.min())
    one = "a group" if unit.startswith("group") else "a row"
    every = f"every fold {one} of every ({', '.join(keys)}) stratum"
    act = (
        f"n_folds={largest} is the largest K that gives {every}"
        if largest >= 2
        else f"no K of 2 or more gives {every}: merge or drop the strata of size 1"
    )
    return (
        f"{len(small)} strata of ({', '.join(keys)}) have fewer {unit} than n_folds="
        f"{n_folds}, so some folds lack them (a train set may then miss a class): {listed}; "
        f"{act}"
    )


def one_class_warning(counts: pd.DataFrame, subset: str, label: str) -> str | None:
    """The warning about subsets holding one class (``counts``: rows ``n`` per key
    combination, with the columns ``subset`` and ``label``)."""
    classes = counts.loc[counts["n"] > 0].groupby(subset, observed=True)[label].unique()
    single = [f"{s} (only {_plain(v[0])!r})" for s, v in classes.items() if len(v) == 1]
    if not single:
        return None
    return (
        f"subsets with one class of {label!r}: {named(single)}; 'same' models there predict "
        "that class only and AUC is undefined"
    )


def check_classes(classes: Sequence | None, label: str) -> None:
    """Refuse a classification table whose label holds fewer than two classes: every model
    would predict that class and score error 0, which says nothing (``classes``: None for
    regression)."""
    if classes is None or len(classes) >= 2:
        return
    held = f"one class ({_plain(classes[0])!r})" if len(classes) else "no class"
    raise ValueError(
        f"label column {label!r} holds {held} in every row: a classifier has nothing to tell "
        "apart and would score error 0; give a table with at least two classes (or a numeric "
        "label for regression)"
    )


def _plain(value: object) -> object:
    """A NumPy scalar as the Python value it holds (which prints as itself)."""
    return value.item() if isinstance(value, np.generic) else value


def check_features(data: dd.DataFrame, features: tuple[str, ...]) -> None:
    """Refuse infinite feature values; warn about missing ones, naming the columns.

    Missing values are allowed (some learners, e.g. HistGradientBoosting, handle them); a
    learner that cannot will fail its fits, which then score NaN with a warning.
    """
    values = data[list(features)]
    n_inf, n_na = dd.compute(np.isinf(values).sum(), values.isna().sum())
    error = infinite_features_error(n_inf)
    if error:
        raise ValueError(error)
    warn(missing_features_warning(n_na))


def check_folds_within_groups(table: Table) -> None:
    """A user's fold column must give every row of a group the same fold."""
    if table.group is None:
        return
    pairs = table.data.groupby([table.group, table.fold], observed=True).size(split_out=1)
    groups = pairs.compute().reset_index()[table.group]
    split = groups[groups.duplicated()].unique()
    if len(split):
        raise ValueError(
            f"fold column {table.fold!r} varies within {len(split)} groups of {table.group!r} "
            f"(e.g. {split[:5].tolist()}); give each group one fold, or load the table without "
            "fold= to assign folds by group"
        )


def check_blocks(blocks: pd.Series, subsets: list, n_folds: int) -> None:
    """Every (subset, fold) test block must have rows (``blocks``: rows per block)."""
    full = pd.MultiIndex.from_product([subsets, range(1, n_folds + 1)])
    empty = [b for b in full if blocks.get(b, 0) == 0]
    if empty:
        raise ValueError(
            f"{len(empty)} (subset, fold) test blocks are empty, e.g. {empty[:5]}: each subset "
            f"needs rows in every fold; use fewer folds (n_folds={n_folds}) or larger subsets"
        )


#: Test folds of one subset whose sizes differ by more than this factor get a warning: the
#: mean over folds then gives a row of the smallest fold over 3 times the weight of one of the
#: largest. Without groups folds differ by a row or so; whole groups can make them differ a lot.
UNEQUAL_FOLDS = 3.0


def unequal_folds_warning(blocks: pd.Series, factor: float = UNEQUAL_FOLDS) -> str | None:
    """The warning about subsets whose test folds differ in size by more than ``factor``
    (``blocks``: rows per (subset, fold), indexed by the two)."""
    rows = blocks[blocks > 0]
    sizes = rows.groupby(level=0, observed=True).agg(["min", "max"])
    uneven = sizes[sizes["max"] > factor * sizes["min"]]
    if uneven.empty:
        return None
    listed = named(f"{s}: {lo:,} to {hi:,} rows" for s, (lo, hi) in uneven.iterrows())
    return (
        f"test folds differ in size by more than a factor of {factor:g} within subsets "
        f"({listed}): the mean over folds counts a row of a small fold more than one of a "
        "large fold; read it beside the row-weighted mean (weighted_mean, with n_test_min and "
        "n_test_max, in summary(); weighted_diff and sign_agrees in pvalues(); both in the "
        "printed table and the report), or use smaller groups or fewer folds"
    )
