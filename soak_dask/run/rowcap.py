"""``max_train_rows``: fits on a seeded, stratified sample of the rows of a large train set.

A train set of N > M rows is fitted on exactly M of them, each class getting its share of M by
largest remainder (of the full train set's class counts). Each row has a rank: a seeded hash of
its values (its numeric columns and class), so the sample is the same whatever the partitioning
or the number of workers; the M_c rows of smallest rank of class c are the sample, fitted in
the order of their ranks. A weighted fit (a bootstrap resample, each row used w times) counts
its rows with their weights: row i is w copies ranked by a hash of (its values, the copy), and
exactly M copies are drawn, M_c of class c from its weighted count (an M-row subsample of the
resample, each class keeping its share of the resample's draws).

So that no task gathers the whole train set first, each partition keeps the train rows of class
c having a copy ranked below a threshold slightly above M_c / N_c of the rank range, and the
fit task takes the M_c smallest ranks of those. Incremental learners never hold their rows
together: for them the partition-level draw, at M_c / N_c, is the sample (M rows and the shares
in expectation). Identical rows share a rank; whichever is taken, the fit sees the same values.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..hashing import salt, seeded_hash
from ..split.sizes import largest_remainder
from ..tables.table import category_codes, float_array

#: Extra rows kept per class, in standard deviations of the binomial count (plus a constant):
#: the chance that a class keeps fewer than its quota is below 1e-6.
_MARGIN_SD = 5.0
_MARGIN_ROWS = 10
#: Names the random stream of the row cap's ranks, and the constants of its row hash.
_STREAM = salt("max_train_rows")
_COLUMNS = salt("max_train_rows columns")


def train_class_rows(
    counts: pd.DataFrame, fits: pd.DataFrame, label: str, classes: list | None
) -> pd.DataFrame:
    """Rows of each fit's full train set per class (one column ``n`` for regression).

    Parameters
    ----------
    counts : DataFrame
        Rows per block of key values (and label), column ``n`` (``folds.block_counts``).
    fits : DataFrame
        The plan's distinct fits, with their ``train`` selections.
    label : str
        The label column.
    classes : list, optional
        The table's classes: the columns, in this order. None for regression.
    """
    keys = [c for c in counts.columns if c not in ("n", label)]
    cells = counts.groupby([*keys, *([label] if classes is not None else [])], observed=True)["n"]
    by_block = cells.sum()
    by_block = (
        by_block.unstack(fill_value=0).reindex(columns=classes, fill_value=0)
        if classes is not None
        else by_block.to_frame("n")
    )
    key_frame = by_block.index.to_frame(index=False)
    values = by_block.to_numpy(np.int64)
    rows = [values[train.mask(key_frame)].sum(axis=0) for train in fits["train"]]
    return pd.DataFrame(rows, index=fits.index, columns=by_block.columns)


def keep_rates(class_rows: np.ndarray, max_rows: int, *, margin: bool) -> tuple[float, ...] | None:
    """Per class, the share of the rank range below which a partition keeps a train row of
    that class; None: keep all.

    ``margin`` keeps a few more rows than the quotas (for an exact draw later); without it the
    rates are the quotas' shares of their classes (the incremental learners' sample).
    """
    class_rows = np.asarray(class_rows, dtype=np.int64)
    if class_rows.sum() <= max_rows:
        return None
    quota = largest_remainder(class_rows, max_rows).astype(np.float64)
    if margin:
        quota = quota + _MARGIN_SD * np.sqrt(quota) + _MARGIN_ROWS
    rates = np.divide(quota, class_rows, out=np.ones(len(quota)), where=class_rows > 0)
    return tuple(np.minimum(rates, 1.0).tolist())


def row_hashes(frame: pd.DataFrame, label: str, classes: tuple | None) -> np.ndarray:
    """A hash of each row's values: the float64 bits of its numeric columns (features, keys,
    weights) and its class. Rows that agree there are interchangeable for a learner (a
    non-numeric column, such as a string group, is left out: hashing strings costs more than
    the rest, and rows alike in every feature and class but of two groups are rare; such a tie
    is taken in the order of the rows)."""
    coded = bool(classes)
    numeric = [
        c for c in frame.columns
        if not (coded and c == label) and pd.api.types.is_numeric_dtype(frame[c].dtype)
    ]  # fmt: skip
    bits = float_array(frame, numeric).view(np.uint64)
    # Each column's bits mixed and weighted by an odd constant of its own, then folded: two
    # passes over the values (a splitmix per column costs several times more).
    odd = seeded_hash(0, _COLUMNS, np.arange(len(numeric), dtype=np.uint64)) | np.uint64(1)
    with np.errstate(over="ignore"):
        mixed = bits ^ (bits >> np.uint64(29))
        mixed *= odd
    folded = np.bitwise_xor.reduce(mixed, axis=1) if numeric else np.zeros(len(frame), np.uint64)
    return seeded_hash(0, folded, class_codes(frame, label, classes))


def copy_ranks(
    frame: pd.DataFrame,
    seed: int,
    label: str,
    classes: tuple | None,
    weights: str | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(the row of each copy, its rank): one copy per row, or ``frame[weights]`` copies."""
    content = row_hashes(frame, label, classes)
    if weights is None:
        n = np.ones(len(frame), dtype=np.int64)
    else:
        n = np.maximum(frame[weights].to_numpy(np.int64), 0)
    rows = np.repeat(np.arange(len(frame)), n)
    copy = np.arange(len(rows), dtype=np.int64) - np.repeat(np.cumsum(n) - n, n)
    return rows, seeded_hash(seed, _STREAM, content[rows], copy.astype(np.uint64))


def class_codes(frame: pd.DataFrame, label: str, classes: tuple | None) -> np.ndarray:
    """Each row's class code (0 for every row of a regression)."""
    if not classes:
        return np.zeros(len(frame), dtype=np.int64)
    return category_codes(frame[label], pd.Index(classes))


def sampled(
    train: pd.DataFrame,
    rates: tuple[float, ...],
    seed: int,
    label: str,
    classes: tuple | None,
    weights: str | None = None,
) -> np.ndarray:
    """Which rows of ``train`` (one partition's train rows) the partition passes on: those with
    a copy ranked below their class's ``rates`` share of the rank range."""
    rows, ranks = copy_ranks(train, seed, label, classes, weights)
    lowest = np.full(len(train), np.iinfo(np.uint64).max, dtype=np.uint64)
    np.minimum.at(lowest, rows, ranks)
    rate = np.asarray(rates)[np.maximum(class_codes(train, label, classes), 0)]
    below = (np.where(rate < 1.0, rate, 0.0) * 2.0**64).astype(np.uint64)
    return (rate >= 1.0) | (lowest < below)


def capped(
    train: pd.DataFrame,
    max_rows: int,
    class_rows: tuple,
    seed: int,
    label: str,
    classes: tuple | None,
    weights: str | None = None,
) -> pd.DataFrame:
    """``train`` (its rows repeated by ``weights``) capped at ``max_rows`` copies: per class
    its largest-remainder quota of ``class_rows`` (the full train set's rows per class,
    weighted; default those of ``train``), the copies of smallest rank, in rank order."""
    rows, ranks = copy_ranks(train, seed, label, classes, weights)
    if len(rows) <= max_rows:
        return train.iloc[rows]
    codes = class_codes(train, label, classes)[rows]
    width = max(len(classes or ()), 1)
    shares = np.asarray(class_rows) if class_rows else np.bincount(codes, minlength=width)
    quota = largest_remainder(shares.astype(np.int64), max_rows)
    chosen = []
    for code, q in enumerate(quota):
        mine = np.flatnonzero(codes == code)
        chosen.append(mine[np.argsort(ranks[mine], kind="stable")[:q]])
    keep = np.concatenate(chosen)
    keep = keep[np.argsort(ranks[keep], kind="stable")]
    return train.iloc[rows[keep]]
