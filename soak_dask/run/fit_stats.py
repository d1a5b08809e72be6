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

from ..reduction import tree_reduce
from ..split.plan import Fit
from ..tables.arrays import category_codes, float_array
from .onepass import Moments, TrainStats, check_finite, pool_moments


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


#: Fits whose rows are coded as bits of one int64 (the cell sums of ``_cell_moments``).
MAX_CODED_FITS = 62
#: Rows per cell on average at least, for the cell sums (else the row products serve).
ROWS_PER_CELL = 32
#: Float64 elements of one chunk of row products (32 MB): bounds a task's working memory.
CHUNK = 1 << 22
#: Bytes of fit weights held at once (float64, fits × rows): more fits are taken in groups.
WEIGHT_BYTES = 1 << 26


@dataclass(frozen=True)
class _FitRows:
    """How one partition's rows make each fit's moments; runs on the workers.

    Unweighted fits (K-fold, repeats, splits): each row's fits are the bits of one code, and
    where the (class, code) cells are few (K-fold's rows fall in K codes) each cell's rows are
    summed once by a BLAS product and each fit takes the sums of its cells. Otherwise (the
    bootstrap's counts, or as many codes as rows) each row's products (1, y, the upper
    triangle of y yᵀ, y = z − its class's mean in the partition) are made once, then one
    matrix product with the fits' row weights (0 off the train set, the bootstrap count on it)
    sums them for every fit at once. Either way the work grows with the rows, hardly with the
    fits; the cells do about half the work of the row products.
    """

    features: tuple[str, ...]
    label: str
    classes: np.ndarray | None
    fits: tuple[Fit, ...]

    def moments(self, part: pd.DataFrame) -> Moments:
        """Moments of each fit's train rows of one partition, shape (fits, groups)."""
        z, g, n_groups = self._values(part)
        if len(self.fits) <= MAX_CODED_FITS and all(f.weights is None for f in self.fits):
            code = np.zeros(len(part), dtype=np.int64)
            for bit, fit in enumerate(self.fits):
                code |= fit.train.mask(part).astype(np.int64) << bit
            found, cells = np.unique(code, return_inverse=True)
            if len(found) * n_groups * ROWS_PER_CELL <= len(part):
                return _cell_moments(z, g * len(found) + cells, found, n_groups, len(self.fits))
        # Rows sorted by class once (a copy), so each class is a slice.
        order = np.argsort(g.astype(np.min_scalar_type(n_groups)), kind="stable")
        z, bounds = z[order], np.searchsorted(g[order], np.arange(n_groups + 1))
        q = z.shape[1]
        upper = np.triu_indices(q)
        sums = np.zeros((len(self.fits), n_groups, 1 + q + len(upper[0])))
        shift = np.zeros((n_groups, q))
        for c, (start, stop) in enumerate(itertools.pairwise(bounds)):
            shift[c] = z[start:stop].mean(axis=0) if stop > start else 0.0
        step = max(1, WEIGHT_BYTES // (8 * max(len(part), 1)))
        for lo in range(0, len(self.fits), step):
            group = self.fits[lo : lo + step]
            w = np.stack([self._weight(fit, part)[order] for fit in group])
            for c, (start, stop) in enumerate(itertools.pairwise(bounds)):
                if stop > start:  # a class without rows here adds nothing
                    rows = slice(start, stop)
                    sums[lo : lo + len(group), c] = _weighted_sums(z[rows], shift[c], w[:, rows])
        second = np.zeros((*sums.shape[:2], q, q))
        second[..., upper[0], upper[1]] = sums[..., 1 + q :]
        second[..., upper[1], upper[0]] = sums[..., 1 + q :]
        return Moments.from_sums(sums[..., 0], sums[..., 1 : 1 + q], second, shift)

    def _values(self, part: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, int]:
        """The moments' columns (features, then the label for regression), each row's group
        code and the number of groups."""
        z = float_array(part, self.features)
        if self.classes is None:
            z = np.column_stack([z, float_array(part, [self.label])])
            g, n_groups = np.zeros(len(part), dtype=np.int64), 1
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
        return z, g, n_groups

    @staticmethod
    def _weight(fit: Fit, part: pd.DataFrame) -> np.ndarray:
        """Each row's weight in ``fit``: 0 outside its train set, else 1 or its count."""
        keep = fit.train.mask(part).astype(np.float64)
        return keep if fit.weights is None else keep * _weights(part[fit.weights])


def _cell_moments(
    z: np.ndarray, cell: np.ndarray, found: np.ndarray, n_groups: int, n_fits: int
) -> Moments:
    """The fits' moments (fits, groups) from the rows' cells: ``cell`` = group × len(found) +
    the position of the row's code in ``found`` (bit f of a code: the row trains fit f).

    K-fold's rows fall in K codes, a few repeats' in a few hundred: the rows of a cell are
    summed once (one BLAS product, about the class's mean in the partition), and each fit's
    sums are those of its cells -- the same sums as the row products, far fewer operations.
    """
    # (Codes of the smallest integer type sort by radix: 0.6 ms against 8 ms for 250k rows.)
    order = np.argsort(cell.astype(np.min_scalar_type(cell.max(initial=0))), kind="stable")
    z, cell = z[order], cell[order]  # one gather: each cell, and each group, is then a slice
    width = len(found)
    groups = np.searchsorted(cell, np.arange(n_groups + 1) * width)
    shift = np.zeros((n_groups, z.shape[1]))
    for c, (start, stop) in enumerate(itertools.pairwise(groups)):
        shift[c] = z[start:stop].mean(axis=0) if stop > start else 0.0
    q = z.shape[1]
    count = np.zeros((n_groups, width))
    first = np.zeros((n_groups, width, q))
    second = np.zeros((n_groups, width, q, q))
    bounds = np.flatnonzero(np.r_[True, cell[1:] != cell[:-1], True]) if len(cell) else [0]
    for start, stop in itertools.pairwise(bounds):
        c, u = divmod(int(cell[start]), width)
        y = np.subtract(z[start:stop], shift[c], out=z[start:stop])  # z is a copy: in place
        count[c, u], first[c, u], second[c, u] = stop - start, y.sum(axis=0), y.T @ y
    member = ((found[None, :] >> np.arange(n_fits)[:, None]) & 1).astype(np.float64)
    return Moments.from_sums(
        np.einsum("fu,gu->fg", member, count),
        np.einsum("fu,guq->fgq", member, first),
        np.einsum("fu,guqr->fgqr", member, second),
        shift,
    )


def _weighted_sums(z: np.ndarray, shift: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Per row of ``w`` (fits × rows): Σ w, Σ w·y and the upper triangle of Σ w·y yᵀ for
    y = z − shift, by chunks of rows (one matrix product each, column-major buffers so that
    every product is of contiguous columns)."""
    q = z.shape[1]
    width = 1 + q + q * (q + 1) // 2
    rows = min(max(1, CHUNK // width), len(z))
    y = np.empty((rows, q), order="F")
    products = np.empty((rows, width), order="F")
    products[:, 0] = 1.0
    out = np.zeros((len(w), width))
    for a in range(0, len(z), rows):
        n = min(rows, len(z) - a)
        chunk, o = y[:n], products[:n]
        np.subtract(z[a : a + n], shift, out=chunk)
        o[:, 1 : 1 + q] = chunk
        col = 1 + q
        for i in range(q):  # row i of the upper triangle: y_i·y_j for j ≥ i
            np.multiply(chunk[:, i : i + 1], chunk[:, i:], out=o[:, col : col + q - i])
            col += q - i
        out += w[:, a : a + n] @ o
    return out


def _weights(column: pd.Series) -> np.ndarray:
    w = column.to_numpy(dtype=np.float64, na_value=np.nan)
    if not (np.isfinite(w) & (w >= 0)).all():
        raise ValueError(
            f"weights column {column.name!r} has missing, infinite or negative values; row "
            "weights count how often a row is used"
        )
    return w
