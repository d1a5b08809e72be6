"""kNNDM's hierarchical clustering (CAST's ``clustering = "hierarchical"``, its default): one
Ward tree of the training points (``hclust(method = "ward.D2")`` in CAST, scipy's ``ward``
here), fitted once and cut at every cluster count tried, where k-means fits anew per count.

The tree needs every pairwise distance: the condensed matrix of n(n - 1)/2 doubles, held
twice while scipy builds the tree, so it is refused above ``HIERARCHICAL_MAX_ROWS`` training
rows before anything is computed (k-means holds only the points). The same matrix then gives
the candidates' Gj* exactly and cheaply: cuts of one tree are nested, so every candidate's
clusters are unions of the finest cut's, and a fold made of them is nearest to a point at
that point's nearest member of a finest cluster in another fold. One pass over the matrix
stores each point's distance to each finest cluster; a candidate's Gj* is then a minimum
over those columns (n × clusters), not a search over n × n distances.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
from numba import njit
from scipy import stats as sps
from scipy.cluster.hierarchy import fcluster, linkage

from .knndm_merge import first_component, merge_clusters, whole_groups
from .knndm_shares import Shares

#: Training rows above which ``clustering="hierarchical"`` is refused: its condensed distance
#: matrix is n(n - 1)/2 doubles (1.6 GB at 20,000 rows, twice that while the tree is built).
HIERARCHICAL_MAX_ROWS = 20_000
#: Query rows and reference columns of one tile of ``condensed_distances``.
_TILE = (8, 512)


def ward_bytes(n: int) -> int:
    """Bytes of the condensed distance matrix of ``n`` points (n(n - 1)/2 doubles)."""
    return n * (n - 1) // 2 * 8


def check_ward_size(n: int, default: bool = False) -> None:
    """Refuse a Ward tree of more than ``HIERARCHICAL_MAX_ROWS`` training rows, naming the
    rows and the bytes it would hold, and the way beyond (k-means); ``default``: the
    clustering was not asked for (feature space's default)."""
    if n <= HIERARCHICAL_MAX_ROWS:
        return
    need, limit = ward_bytes(n), ward_bytes(HIERARCHICAL_MAX_ROWS)
    asked = " (the default in feature space)" if default else ""
    raise ValueError(
        f"clustering='hierarchical'{asked} on {n:,} training rows: Ward's tree holds their "
        f"condensed distance matrix, n(n-1)/2 × 8 bytes = {need:,} bytes ({need / 1e9:.1f} GB; "
        f"twice that while the tree is built), refused above {HIERARCHICAL_MAX_ROWS:,} rows "
        f"({limit / 1e9:.1f} GB): give clustering='kmeans' (soak knndm --clustering kmeans), "
        "which holds only the points, or subsample the table"
    )


@njit(cache=True, nogil=True, fastmath={"contract"})
def condensed_distances(points, points_t, block, tile):  # pragma: no cover - numba
    """Euclidean distances of every pair i < j of ``points`` in scipy's condensed order
    (``pdist``'s), from the coordinates' differences; ``points_t`` is ``points.T``
    (contiguous), tiles of ``block`` rows × ``tile`` columns keep them in cache."""
    n, d = points.shape
    out = np.empty(n * (n - 1) // 2)
    acc = np.empty((block, tile))
    for i0 in range(0, n - 1, block):
        i1 = min(i0 + block, n - 1)
        for j0 in range(i0 + 1, n, tile):
            j1 = min(j0 + tile, n)
            w = j1 - j0
            acc[:, :w] = 0.0
            for f in range(d):
                ref = points_t[f, j0:j1]
                for b in range(i1 - i0):
                    x = points[i0 + b, f]
                    row = acc[b]
                    for t in range(w):
                        u = x - ref[t]
                        row[t] += u * u
            for b in range(i1 - i0):
                i = i0 + b
                base = i * n - i * (i + 1) // 2 - i - 1  # (i, j) is at base + j
                for j in range(max(j0, i + 1), j1):
                    out[base + j] = np.sqrt(acc[b, j - j0])
    return out


@njit(cache=True, nogil=True)
def label_minima(distances, n, labels, n_labels):  # pragma: no cover - numba
    """``out[c, i]``: the distance from point i to its nearest other point labelled c (inf
    where none), from the condensed ``distances`` in one pass."""
    out = np.full((n_labels, n), np.inf)
    k = 0
    for i in range(n - 1):
        li = labels[i]
        for j in range(i + 1, n):
            d = distances[k]
            k += 1
            if d < out[labels[j], i]:
                out[labels[j], i] = d
            if d < out[li, j]:
                out[li, j] = d
    return out


@njit(cache=True, nogil=True)
def other_fold_minima(minima, label_fold, folds):  # pragma: no cover - numba
    """Each point's smallest ``minima[c, i]`` over the labels c whose fold
    (``label_fold[c]``) is not the point's own (``folds[i]``): its Gj*."""
    n_labels, n = minima.shape
    out = np.full(n, np.inf)
    for c in range(n_labels):
        fc = label_fold[c]
        row = minima[c]
        for i in range(n):
            if row[i] < out[i] and folds[i] != fc:
                out[i] = row[i]
    return out


@njit(cache=True, nogil=True)
def coarser_minima(minima, parent, n_parents):  # pragma: no cover - numba
    """``minima`` (clusters × points) of the clusters ``parent`` merges them into: each
    parent's row the elementwise minimum of its children's."""
    out = np.full((n_parents, minima.shape[1]), np.inf)
    for c in range(minima.shape[0]):
        row = minima[c]
        dst = out[parent[c]]
        for i in range(row.shape[0]):
            if row[i] < dst[i]:
                dst[i] = row[i]
    return out


@dataclass(frozen=True)
class WardTree:
    """The Ward tree of the (standardised) training points and what scores its cuts: the
    condensed distances, the finest cut tried (labels 0..L-1) and each point's distance to
    its nearest other member of each finest cluster (L × n)."""

    points: np.ndarray = field(repr=False)
    linkage: np.ndarray = field(repr=False)
    distances: np.ndarray = field(repr=False)
    finest: np.ndarray = field(repr=False)
    minima: np.ndarray = field(repr=False)

    @classmethod
    def fit(cls, points: np.ndarray, finest: int) -> WardTree:
        """The tree of ``points`` (Ward's linkage, as CAST's ``ward.D2`` on Euclidean
        distances) and its cut into at most ``finest`` clusters."""
        block, tile = _TILE
        distances = condensed_distances(points, np.ascontiguousarray(points.T), block, tile)
        tree = linkage(distances, method="ward")
        labels = fcluster(tree, finest, criterion="maxclust").astype(np.int64) - 1
        minima = label_minima(distances, len(points), labels, int(labels.max()) + 1)
        return cls(points, tree, distances, labels, minima)

    def cut(self, n_clusters: int) -> np.ndarray:
        """Labels 0.. of the tree cut into at most ``n_clusters`` clusters (scipy's
        ``fcluster(maxclust)``: CAST's ``cutree(k)``, but tied merge heights stay together
        where cutree would split them by merge order, giving fewer clusters)."""
        return fcluster(self.linkage, n_clusters, criterion="maxclust").astype(np.int64) - 1

    def loo(self) -> np.ndarray:
        """Distance from each point to its nearest other point (CAST's Gj)."""
        return self.minima.min(axis=0)

    def cv(
        self,
        folds: np.ndarray,
        rows: np.ndarray | None = None,
        minima: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> np.ndarray:
        """Gj*: distance from each point (of ``rows``, default all) to its nearest point of
        another fold. Folds made of whole clusters of ``minima`` ((labels, minima) of a cut;
        default the finest) are scored from those minima; others (random folds, groups kept
        whole) by one more pass over the distances."""
        labels, table = (self.finest, self.minima) if minima is None else minima
        folds = np.asarray(folds, dtype=np.int64)
        label_fold = np.zeros(table.shape[0], dtype=np.int64)
        label_fold[labels] = folds
        if np.array_equal(label_fold[labels], folds):
            out = other_fold_minima(table, label_fold, folds)
        else:
            n_labels = int(folds.max()) + 1
            table = label_minima(self.distances, len(folds), folds, n_labels)
            out = other_fold_minima(table, np.arange(n_labels), folds)
        return out if rows is None else out[rows]

    def cuts(self, grid: np.ndarray) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """(count, labels, minima) of the cut at each count of ``grid``, finest first: each
        cut's minima merged from the previous (finer) cut's, so that all of them cost about
        the sum of the counts × n, not the finest count × n each."""
        labels, minima = self.finest, self.minima
        for nk in sorted(grid.tolist(), reverse=True):
            coarser = self.cut(nk)
            parent = np.zeros(minima.shape[0], dtype=np.int64)
            parent[labels] = coarser  # nested cuts: each finer cluster lies in one coarser
            labels, minima = coarser, coarser_minima(minima, parent, int(coarser.max()) + 1)
            yield nk, labels, minima


def ward_candidates(
    tree: WardTree,
    gij: np.ndarray,
    grid: np.ndarray,
    shares: Shares,
    rows: np.ndarray | None,
    codes: np.ndarray | None,
) -> list[tuple]:
    """Every cluster count of ``grid`` as ``assess_candidate`` scores a k-means one, from
    cuts of one tree: (nk, W of its folds, largest fold's share, ``SCORED`` or why it may
    not be chosen, None (no centres), each cluster's fold)."""
    pc1 = first_component(tree.points)
    done = {}
    for nk, labels, minima in tree.cuts(grid):
        fold_of = merge_clusters(tree.points, labels, shares.n_folds, shares.split, pc1)
        if fold_of is None:
            done[nk] = (nk, np.nan, np.nan, "no fold left for the small clusters", None, None)
            continue
        folds = whole_groups(fold_of[labels], codes)[0]
        largest, status = shares.verdict(folds)
        w = float(sps.wasserstein_distance(tree.cv(folds, rows, (labels, minima)), gij))
        done[nk] = (nk, w, largest, status, None, fold_of)
    return [done[nk] for nk in grid.tolist()]
