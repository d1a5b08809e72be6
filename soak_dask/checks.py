"""Checks of the data before anything is fitted: clear errors instead of wrong numbers."""

from __future__ import annotations

import warnings

import dask.dataframe as dd
import numpy as np
import pandas as pd

from .table import Table


def check_features(data: dd.DataFrame, features: tuple[str, ...]) -> None:
    """Refuse infinite feature values; warn about missing ones, naming the columns.

    Missing values are allowed (some learners, e.g. HistGradientBoosting, handle them); a
    learner that cannot will fail its fits, which then score NaN with a warning.
    """
    values = data[list(features)]
    n_inf, n_na = dd.compute(np.isinf(values).sum(), values.isna().sum())
    inf = n_inf[n_inf > 0]
    if len(inf):
        raise ValueError(
            f"feature columns {inf.index.tolist()} have infinite values ({inf.tolist()} rows); "
            "replace or drop those rows, or leave those columns out of features"
        )
    na = n_na[n_na > 0]
    if len(na):
        warnings.warn(
            f"feature columns {na.index.tolist()} have missing values ({na.tolist()} rows); "
            "learners that cannot handle NaN will fail and score NaN",
            UserWarning,
            stacklevel=3,
        )


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
