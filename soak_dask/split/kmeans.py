"""Seeded k-means of coordinates (or standardised features) that gives the same clusters
for a seed whatever the partitioning.

dask-ml's ``KMeans`` (2025.1.0, init "k-means||") gives sensible clusters on this stack but
not the same labels for a seed when the array is chunked differently (its initialisation
samples chunk by chunk), and its k-means++ init and ``inertia_`` are broken (DESIGN.md), so it
is not used. Here the centres start from scikit-learn's ``KMeans`` on a seeded sample chosen
by smallest hash of the point values (the same points whatever the blocks), then Lloyd passes
over every block refine them (per-block sums and counts, combined on the client); labels are
the nearest centre, computed block by block.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dask
import numpy as np
from scipy.spatial import cKDTree
from sklearn.cluster import KMeans
from threadpoolctl import threadpool_limits

from .neighbours import TREE_DIMS, hash_sample, point_hashes, score_chunks

#: Points scikit-learn's k-means is fitted on; a larger set is subsampled by seeded hash.
FIT_ROWS = 100_000
#: Points x clusters of one fit at most (fewer points for many clusters): a k-means pass
#: costs this many distances, and 2,000 clusters of 100,000 points took 160 s here.
FIT_BUDGET = 20_000_000
#: Below this many points a fit runs on one thread (thread start-up costs more than it saves
#: on a shared machine: 0.2 s against 0.005 s for 500 points).
_ONE_THREAD = 20_000


def fit_centres(
    points: np.ndarray,
    n_clusters: int,
    seed: int,
    max_iter: int = 100,
    max_rows: int = FIT_ROWS,
    budget: int = FIT_BUDGET,
) -> np.ndarray:
    """Centres of ``n_clusters`` k-means clusters of ``points``, one k-means++ start seeded
    by ``seed``; at most ``max_rows`` points, and ``budget / n_clusters`` for many clusters
    (at least 5 per cluster), chosen by seeded hash, are fitted."""
    rows = min(max_rows, max(budget // n_clusters, 5 * n_clusters))
    if len(points) > rows:
        h = point_hashes(points, seed, "kmeans_fit")
        points = points[np.sort(np.argsort(h, kind="stable")[:rows])]
    km = KMeans(n_clusters, n_init=1, max_iter=max_iter, random_state=seed % 2**32)
    with threadpool_limits(1 if len(points) < _ONE_THREAD else None):
        return km.fit(points).cluster_centers_


def nearest_centre(points: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """The index of each point's nearest centre."""
    if not len(points):
        return np.empty(0, dtype=np.int64)
    if points.shape[1] <= TREE_DIMS:
        return cKDTree(centres).query(points, k=1)[1].astype(np.int64)
    labels = np.empty(len(points), dtype=np.int64)
    for rows, d2 in score_chunks(points, centres):  # a tree is no help in many dimensions
        labels[rows] = d2.argmin(axis=1)
    return labels


def _sums(points: np.ndarray, centres: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    labels = nearest_centre(points, centres)
    counts = np.bincount(labels, minlength=len(centres)).astype(np.float64)
    sums = np.stack(
        [
            np.bincount(labels, weights=points[:, j], minlength=len(centres))
            for j in range(points.shape[1])
        ],
        axis=1,
    )
    return sums, counts


def dask_kmeans(
    parts: Sequence[Any],
    n_clusters: int,
    seed: int,
    sample: int = FIT_ROWS,
    max_iter: int = 10,
    client: Any = None,
) -> np.ndarray:
    """Centres of ``n_clusters`` k-means clusters of the points of ``parts`` (delayed point
    arrays, one per block), the same for a seed whatever the blocks.

    The start: scikit-learn's k-means on the ``sample`` points of smallest seeded hash.
    Then up to ``max_iter`` Lloyd passes over every block; each pass rounds the centres to
    1e-9 of the sample's extent, so that sums added in another order (other partitions)
    give the same centres, and stops when they no longer move.
    """
    start = hash_sample(parts, sample, seed, "kmeans_sample", client)
    if len(start) < n_clusters:
        raise ValueError(
            f"n_clusters={n_clusters} is more than the {len(start)} distinct points sampled"
        )
    step = 1e-9 * max(float(np.ptp(start, axis=0).max()), 1e-300)
    centres = np.round(fit_centres(start, n_clusters, seed) / step) * step
    for _ in range(max_iter):
        tasks = [dask.delayed(_sums)(p, centres) for p in parts]
        done = client.compute(tasks, sync=True) if client is not None else dask.compute(*tasks)
        sums = sum(s for s, _ in done)
        counts = sum(c for _, c in done)
        moved = np.where(counts[:, None] > 0, sums / np.maximum(counts, 1)[:, None], centres)
        moved = np.round(moved / step) * step
        if np.array_equal(moved, centres):
            break
        centres = moved
    return centres
