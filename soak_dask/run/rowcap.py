"""``max_train_rows``: fits on a seeded, stratified sample of the rows of a large train set.

A train set of N > M rows is fitted on exactly M of them, each class getting its share of M by
largest remainder (``sizes.downsample`` with the full train set's class counts). So that no
task gathers the whole train set first, each partition keeps the train rows of class c with
probability slightly above M_c / N_c (a seeded hash of the row decides), and the fit task draws
the exact sample from those. Incremental learners never hold their rows together: for them the
partition-level draw, at M_c / N_c, is the sample (M rows and the shares in expectation).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..split.sizes import largest_remainder

#: Extra rows kept per class, in standard deviations of the binomial count (plus a constant):
#: the chance that a class keeps fewer than its quota is below 1e-6.
_MARGIN_SD = 5.0
_MARGIN_ROWS = 10


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
    """Per class, the chance that a partition keeps a train row of that class; None: keep all.

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
