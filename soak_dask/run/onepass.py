"""One pass -> all fits: learners fitted from additive statistics of the (subset, fold) blocks.

Every SOAK train set is a union of (subset, fold) blocks. Learners whose fit depends on the rows
only through per-class counts, means and scatter matrices -- featureless baselines, least squares
and ridge regression, ridge classification, linear discriminant analysis and Gaussian naive Bayes,
each optionally behind a ``StandardScaler`` -- need not see their train rows:

1. ``block_stats`` computes the moments of every (subset, fold, class) cell in one pass over
   the lazy table (one task per partition, then a tree reduction; only O(blocks × classes × p²)
   numbers travel);
2. ``train_stats`` pools the blocks of one train set;
3. ``run.closed_form.fit_from_stats`` turns the pooled moments into a fitted scikit-learn
   estimator, so that scikit-learn's own ``predict``, ``predict_proba`` and
   ``decision_function`` score the test blocks in a second pass.

Moments are kept as (count, mean, centred scatter) and pooled with the parallel formula of Chan,
Golub and LeVeque, so features with large offsets (1000 ± 1) lose nothing to cancellation and the
result does not depend on how the table is partitioned.

Examples
--------
>>> import numpy as np, pandas as pd, soak_dask as sd
>>> from sklearn.linear_model import Ridge
>>> from soak_dask.run.closed_form import fit_from_stats, is_additive
>>> rng = np.random.default_rng(0)
>>> df = pd.DataFrame({"x1": rng.normal(size=60), "region": np.repeat(["N", "S"], 30)})
>>> df["y"] = 2.0 * df["x1"] + rng.normal(size=60)
>>> table = sd.assign_folds(sd.load_table(df, label="y", subset="region"), n_folds=3)
>>> stats = block_stats(table, ["N", "S"], n_folds=3).compute()
>>> all_but_fold_1 = sd.Selection((sd.Term(table.fold, (1,), exclude=True),))
>>> est = fit_from_stats(Ridge(alpha=1.0), train_stats(stats, all_but_fold_1, "region", table.fold))
>>> is_additive(Ridge()), est.coef_.shape
('ridge', (1,))
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import dask
import numpy as np
import pandas as pd
from dask.delayed import Delayed

from ..reduction import tree_reduce
from ..split.plan import Selection
from ..tables.table import Table, category_codes, float_array

_FIELDS = ("count", "mean", "scatter")


@dataclass(frozen=True)
class Moments:
    """Count, mean and centred scatter of groups of rows, with any leading dims.

    Attributes
    ----------
    count : ndarray of float64, shape (...)
        Rows per group.
    mean : ndarray of float64, shape (..., q)
        Mean of each group's rows (0 for empty groups).
    scatter : ndarray of float64, shape (..., q, q)
        Sum over each group's rows of (z - mean)(z - mean)ᵀ.
    """

    count: np.ndarray
    mean: np.ndarray
    scatter: np.ndarray

    @classmethod
    def of(cls, z: np.ndarray, overwrite: bool = False) -> Moments:
        """Moments of the rows of ``z`` (n × q) as one group, by two passes over the rows.

        ``overwrite``: centre ``z`` (float64) in place rather than in a copy.
        """
        z = np.asarray(z, dtype=np.float64)
        if len(z) == 0:
            return cls(np.float64(0), np.zeros(z.shape[1]), np.zeros((z.shape[1],) * 2))
        mean = z.mean(axis=0)
        centred = np.subtract(z, mean, out=z if overwrite else None)
        return cls(np.float64(len(z)), mean, centred.T @ centred)

    @classmethod
    def from_sums(
        cls, count: np.ndarray, first: np.ndarray, second: np.ndarray, shift: np.ndarray
    ) -> Moments:
        """Moments from weighted sums about ``shift`` (leading dims ``count.shape``): a row of
        weight w (used w times, as a bootstrap's counts) adds w to ``count``, w·(z − shift)
        to ``first`` and w·(z − shift)(z − shift)ᵀ to ``second``.

        With ``shift`` near the mean (the group's mean in a part of the rows) the sums lose
        nothing to large offsets: scatter = second − count·d dᵀ for d = first / count, small.
        """
        safe = np.where(count > 0, count, 1.0)[..., None]
        d = np.where(count[..., None] > 0, first / safe, 0.0)
        mean = np.where(count[..., None] > 0, shift + d, 0.0)
        scatter = second - np.einsum("...,...q,...r->...qr", count, d, d)
        return cls(np.asarray(count, dtype=np.float64), mean, scatter)

    @classmethod
    def stack(cls, parts: Sequence[Moments]) -> Moments:
        """Moments of several groups along a new leading axis 0."""
        return cls(*(np.stack([getattr(m, name) for m in parts]) for name in _FIELDS))

    def take(self, index: Any) -> Moments:
        """The groups selected by ``index`` (numpy indexing of the leading dims)."""
        return Moments(self.count[index], self.mean[index], self.scatter[index])

    def pool(self, axis: int = 0) -> Moments:
        """Moments of the union of the groups along leading axis ``axis``.

        The parallel formula: pooled mean = count-weighted mean, pooled scatter = sum of the
        scatters + Σ count·(mean − pooled mean)(mean − pooled mean)ᵀ. Empty groups add nothing.
        """
        if not 0 <= axis < np.ndim(self.count):
            raise ValueError(
                f"axis={axis} is not a leading axis of moments with count shape "
                f"{np.shape(self.count)}"
            )
        count = np.moveaxis(self.count, axis, 0)
        mean = np.moveaxis(self.mean, axis, 0)
        scatter = np.moveaxis(self.scatter, axis, 0)
        total = count.sum(axis=0)
        weight = count / np.where(total > 0, total, 1.0)
        pooled = np.einsum("g...,g...q->...q", weight, mean)
        dev = mean - pooled
        between = np.einsum("g...,g...q,g...r->...qr", count, dev, dev)
        return Moments(total, pooled, scatter.sum(axis=0) + between)


@dataclass(frozen=True)
class BlockStats:
    """Moments of every (subset, fold, group) cell of a table.

    Attributes
    ----------
    moments : Moments
        Leading dims (subset, fold, group). Groups are the classes (classification) or a single
        group (regression); the q columns are the features, then the label for regression.
    subsets : tuple
        Subset values, in the order of the first dim.
    classes : ndarray or None
        Sorted class values (classification), in the order of the group dim.
    features : tuple of str
        Feature columns, in order.
    """

    moments: Moments
    subsets: tuple
    classes: np.ndarray | None
    features: tuple[str, ...]

    @property
    def n_folds(self) -> int:
        """K: folds are 1..K along the second dim."""
        return int(self.moments.count.shape[1])


@dataclass(frozen=True)
class TrainStats:
    """Pooled moments of one train set, one group per class (or one group for regression).

    Attributes
    ----------
    moments : Moments
        Leading dim: group. Columns: the features, then the label for regression.
    classes : ndarray or None
        Class of each group (classification); None for regression.
    n_features : int
        p, the number of feature columns.
    """

    moments: Moments
    classes: np.ndarray | None
    n_features: int

    @property
    def n_rows(self) -> int:
        """Rows in the train set."""
        return int(self.moments.count.sum())

    def total(self) -> Moments:
        """Moments of all the train rows, classes pooled."""
        return self.moments.pool(0)

    def present(self) -> tuple[np.ndarray, Moments]:
        """The classes with train rows and their moments (scikit-learn's ``classes_``)."""
        has_rows = self.moments.count > 0
        return self.classes[has_rows], self.moments.take(has_rows)

    def scaled(self, shift: np.ndarray, scale: np.ndarray) -> TrainStats:
        """Moments of the rows after features x -> (x - shift) / scale (label unchanged)."""
        q = self.moments.mean.shape[-1]
        offset = np.zeros(q)
        offset[: self.n_features] = shift
        factor = np.ones(q)
        factor[: self.n_features] = 1.0 / np.asarray(scale)
        m = self.moments
        moved = Moments(m.count, (m.mean - offset) * factor, m.scatter * np.outer(factor, factor))
        return TrainStats(moved, self.classes, self.n_features)


def block_stats(
    table: Table,
    subsets: Sequence,
    n_folds: int,
    classes: Sequence | None = None,
    *,
    split_every: int = 8,
) -> Delayed:
    """Lazy moments of every (subset, fold, class) block of ``table``: one pass over the rows.

    Parameters
    ----------
    table : Table
        With a fold column (see ``soak_dask.assign_folds``).
    subsets : sequence
        Every subset value of the table, in the order results use.
    n_folds : int
        K; the fold column holds 1..K.
    classes : sequence, optional
        Every class value (required for classification; sorted here as scikit-learn sorts).
    split_every : int
        Fan-in of the tree reduction that pools the partitions' moments.

    Returns
    -------
    dask.delayed.Delayed
        Computes (``.compute()`` or ``client.compute``) to a ``BlockStats``. Rows with a
        subset, fold or class outside the given ones, or non-finite features or labels, raise a
        ValueError naming the column.
    """
    if table.fold is None:
        raise ValueError("the table has no fold column yet; call assign_folds first")
    if (classes is None) != (table.task == "regression"):
        raise ValueError(
            f"classes={classes!r} for a {table.task} table: give the class values for "
            "classification and classes=None for regression"
        )
    if split_every < 2:
        raise ValueError(f"split_every={split_every}: need at least 2")
    class_values = None if classes is None else pd.Index(sorted(set(classes))).to_numpy()
    cells = _Cells(
        features=tuple(table.features),
        label=table.label,
        subset=table.subset,
        fold=table.fold,
        subsets=tuple(subsets),
        n_folds=int(n_folds),
        classes=class_values,
    )
    columns = list(dict.fromkeys([*cells.features, cells.label, cells.subset, cells.fold]))
    level = [
        dask.delayed(cells.moments, pure=True)(part) for part in table.data[columns].to_delayed()
    ]
    (pooled,) = tree_reduce(level, pool_moments, split_every)
    return dask.delayed(BlockStats, pure=True)(pooled, cells.subsets, class_values, cells.features)


@dataclass(frozen=True)
class _Cells:
    """How rows map to (subset, fold, group) cells; runs on the workers."""

    features: tuple[str, ...]
    label: str
    subset: str
    fold: str
    subsets: tuple
    n_folds: int
    classes: np.ndarray | None

    def moments(self, part: pd.DataFrame) -> Moments:
        """Moments of each cell of one partition, shape (subsets, folds, groups)."""
        s = _codes(part[self.subset], pd.Index(self.subsets), "subset")
        k = _codes(part[self.fold], pd.Index(range(1, self.n_folds + 1)), "fold")
        z = float_array(part, self.features)
        if self.classes is None:
            n_groups = 1
            g = np.zeros(len(part), dtype=np.int64)
            z = np.column_stack([z, float_array(part, [self.label])])
        else:
            n_groups = len(self.classes)
            g = _codes(part[self.label], pd.Index(self.classes), "label")
        check_finite(z, [*self.features, self.label])
        shape = (len(self.subsets), self.n_folds, n_groups)
        q = z.shape[1]
        count = np.zeros(int(np.prod(shape)))
        mean = np.zeros((len(count), q))
        scatter = np.zeros((len(count), q, q))
        cell = (s * self.n_folds + k) * n_groups + g
        order = np.argsort(cell.astype(np.min_scalar_type(len(count))), kind="stable")
        cell = cell[order]  # sorted: each cell's rows run from one change of code to the next
        bounds = np.flatnonzero(np.r_[True, cell[1:] != cell[:-1], True]) if len(cell) else [0]
        z = z[order]  # one gather (a copy): each cell is then a slice, centred in place
        for start, stop in itertools.pairwise(bounds):
            cid = cell[start]
            m = Moments.of(z[start:stop], overwrite=True)
            count[cid], mean[cid], scatter[cid] = m.count, m.mean, m.scatter
        return Moments(count.reshape(shape), mean.reshape(*shape, q), scatter.reshape(*shape, q, q))


def check_finite(z: np.ndarray, names: Sequence[str]) -> None:
    """Refuse non-finite values in the columns of ``z`` (named by the first of ``names``)."""
    bad = ~np.isfinite(z).all(axis=0)
    if bad.any():
        cols = [c for c, b in zip(names[: z.shape[1]], bad, strict=True) if b]
        raise ValueError(
            f"columns {cols} have missing or infinite values; fits from statistics need "
            "finite features and labels: drop or fill those rows first"
        )


def _codes(values: pd.Series, index: pd.Index, role: str) -> np.ndarray:
    codes = category_codes(values, index)
    if (codes < 0).any():
        unknown = pd.unique(values[codes < 0].to_numpy())[:5].tolist()
        raise ValueError(
            f"{role} column {values.name!r} has values {unknown} outside the known {role} "
            f"values {index[:10].tolist()}; pass every {role} value to block_stats"
        )
    return codes.astype(np.int64)


def pool_moments(parts: list[Moments]) -> Moments:
    """Moments of the union of each group over ``parts`` (partitions' moments, same shape)."""
    return Moments.stack(parts).pool(0)


def train_stats(stats: BlockStats, train: Selection, subset: str, fold: str) -> TrainStats:
    """Pooled moments of the train set ``train``, a selection of (subset, fold) cells.

    Parameters
    ----------
    stats : BlockStats
        From ``block_stats``.
    train : Selection
        The train set, reading only the ``subset`` and ``fold`` columns.
    subset, fold : str
        The table's subset and fold columns.

    Returns
    -------
    TrainStats
    """
    others = sorted(train.columns - {subset, fold})
    if others:
        raise ValueError(f"train set {train} reads {others}: statistics are per (subset, fold)")
    for term in train.terms:
        known = stats.subsets if term.column == subset else range(1, stats.n_folds + 1)
        unknown = [v for v in term.values if v not in known]
        if unknown:
            raise ValueError(f"{term.column} values {unknown} are not among {list(known)}")
    cells = pd.DataFrame(
        {
            subset: np.repeat(np.asarray(stats.subsets, dtype=object), stats.n_folds),
            fold: np.tile(np.arange(1, stats.n_folds + 1), len(stats.subsets)),
        }
    )
    blocks = train.mask(cells).reshape(len(stats.subsets), stats.n_folds)
    pooled = stats.moments.take(blocks).pool(0)
    return TrainStats(pooled, stats.classes, len(stats.features))
