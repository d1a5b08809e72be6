"""One pass -> the statistics of every fit of any plan: per fit, the per-class moments of its
train rows, weighted by the fit's row weights.

``run.onepass.block_stats`` serves plans whose train sets are unions of (subset, fold) cells
(SOAK, transfer, the subset search): moments per cell, pooled per train set. The other designs
(evaluate's K-fold, repeats, subsampling, bootstrap and test split, split_sensitivity's trials,
compare_sampling's methods) select train rows by key columns of their own, so here each
partition computes, for every fit, the moments of its train rows (``Selection.mask``) by class;
a bootstrap's Poisson counts (``Fit.weights``) count each row that many times (count Σw,
weighted mean, scatter Σ w (z − m)(z − m)ᵀ: the moments of the resample with its repeats). The
partitions' moments are pooled by the parallel formula in a tree reduction, so only
O(fits × classes × p²) numbers travel and the result does not depend on the partitioning.

Examples
--------
>>> import numpy as np, pandas as pd, dask.dataframe as dd
>>> from soak_dask.split.plan import Fit, Selection, Term
>>> df = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0], "y": [0.0, 1.0, 1.0, 3.0],
...                    "k": [1, 1, 2, 2], "w": [2, 0, 1, 1]})
>>> fits = {0: Fit(Selection((Term("k", (1,)),))), 1: Fit(Selection(), weights="w")}
>>> stats = fit_stats(dd.from_pandas(df, npartitions=2), fits, ["x"], "y").compute()
>>> stats.train(1).n_rows, stats.train(1).total().mean.tolist()
(4, [2.25, 1.0])
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
from dask.delayed import Delayed

from ..split.plan import Fit
from ..tables.table import category_codes, float_array
from .onepass import Moments, TrainStats, check_finite, pool_moments
from .reduction import tree_reduce


@dataclass(frozen=True)
class FitStats:
    """Moments of every fit's train rows, by class.

    Attributes
    ----------
    moments : Moments
        Leading dims (fit, group): groups are the classes (classification) or one group
        (regression); the q columns are the features, then the label for regression.
    fit_ids : tuple of int
        The fit of each position along the first dim.
    classes : ndarray or None
        Class values in the order of the group dim (classification).
    features : tuple of str
        Feature columns, in order.
    """

    moments: Moments
    fit_ids: tuple[int, ...]
    classes: np.ndarray | None
    features: tuple[str, ...]

    def train(self, fit_id: int) -> TrainStats:
        """The pooled moments of fit ``fit_id``'s train set, one group per class."""
        if fit_id not in self.fit_ids:
            raise ValueError(f"fit {fit_id} is not among the fits {list(self.fit_ids)[:10]}")
        index = self.fit_ids.index(fit_id)
        return TrainStats(self.moments.take(index), self.classes, len(self.features))


def fit_stats(
    data: dd.DataFrame,
    fits: Mapping[int, Fit],
    features: Sequence[str],
    label: str,
    classes: Sequence | None = None,
    *,
    split_every: int = 8,
) -> Delayed:
    """Lazy per-class moments of every fit's (weighted) train rows: one pass over ``data``.

    Parameters
    ----------
    data : dask.dataframe.DataFrame
        With the features, the label and every key column the fits read.
    fits : mapping
        Fit id -> ``Fit`` (its train ``Selection`` and ``weights`` column; down-sampled fits,
        ``n_groups`` > 0, are not additive and are refused).
    features : sequence of str
        Feature columns.
    label : str
        Label column.
    classes : sequence, optional
        Every class value (classification), in the order of the group dim: a row's class code
        is its position here. None: regression (the label joins the moments' columns).
    split_every : int
        Fan-in of the tree reduction that pools the partitions' moments.

    Returns
    -------
    dask.delayed.Delayed
        Computes to a ``FitStats``. Non-finite features or labels in any row, a label outside
        ``classes``, or weights that are not finite and non-negative raise a ValueError
        naming the column.
    """
    if split_every < 2:
        raise ValueError(f"split_every={split_every}: need at least 2")
    down = [f for f, fit in fits.items() if fit.n_groups]
    if down:
        raise ValueError(f"fits {down[:10]} are down-sampled (n_groups > 0): not additive")
    class_values = None if classes is None else pd.Index(list(classes)).to_numpy()
    rows = _FitRows(tuple(features), label, class_values, tuple(fits.values()))
    keys = sorted(set().union(*(fit.train.columns for fit in rows.fits)))
    weights = sorted({fit.weights for fit in rows.fits if fit.weights is not None})
    columns = list(dict.fromkeys([*rows.features, label, *keys, *weights]))
    level = [dask.delayed(rows.moments, pure=True)(part) for part in data[columns].to_delayed()]
    (pooled,) = tree_reduce(level, pool_moments, split_every)
    ids = tuple(int(f) for f in fits)
    return dask.delayed(FitStats, pure=True)(pooled, ids, class_values, rows.features)


@dataclass(frozen=True)
class _FitRows:
    """How one partition's rows make each fit's moments; runs on the workers."""

    features: tuple[str, ...]
    label: str
    classes: np.ndarray | None
    fits: tuple[Fit, ...]

    def moments(self, part: pd.DataFrame) -> Moments:
        """Moments of each fit's train rows of one partition, shape (fits, groups)."""
        z = float_array(part, self.features)
        if self.classes is None:
            n_groups, g = 1, np.zeros(len(part), dtype=np.int64)
            z = np.column_stack([z, float_array(part, [self.label])])
        else:
            n_groups = len(self.classes)
            g = category_codes(part[self.label], pd.Index(self.classes))
            if (g < 0).any():
                unknown = pd.unique(part[self.label].to_numpy()[g < 0])[:5].tolist()
                raise ValueError(
                    f"label column {self.label!r} has values {unknown} outside the classes "
                    f"{self.classes[:10].tolist()}"
                )
        check_finite(z, [*self.features, self.label])
        # Rows sorted by class once (a copy), so each class is a slice of every fit's rows.
        order = np.argsort(g, kind="stable")
        z, bounds = z[order], np.searchsorted(g[order], np.arange(n_groups + 1))
        q = z.shape[1]
        count = np.zeros((len(self.fits), n_groups))
        mean = np.zeros((len(self.fits), n_groups, q))
        scatter = np.zeros((len(self.fits), n_groups, q, q))
        for f, fit in enumerate(self.fits):
            keep = fit.train.mask(part)[order]
            w = None if fit.weights is None else _weights(part[fit.weights])[order]
            if w is not None:
                keep &= w > 0  # rows drawn 0 times add nothing
            for c, (start, stop) in enumerate(itertools.pairwise(bounds)):
                rows = keep[start:stop]
                weight = None if w is None else w[start:stop][rows]
                m = Moments.of(z[start:stop][rows], overwrite=True, weights=weight)
                count[f, c], mean[f, c], scatter[f, c] = m.count, m.mean, m.scatter
        return Moments(count, mean, scatter)


def _weights(column: pd.Series) -> np.ndarray:
    w = column.to_numpy(dtype=np.float64, na_value=np.nan)
    if not (np.isfinite(w) & (w >= 0)).all():
        raise ValueError(
            f"weights column {column.name!r} has missing, infinite or negative values; row "
            "weights count how often a row is used"
        )
    return w
