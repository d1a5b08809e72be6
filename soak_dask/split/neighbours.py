"""Points and nearest-neighbour distances for the spatial functions.

A (small) reference set -- the training coordinates or standardised features -- is held in
memory and sent to the workers once; a large query set (a prediction table or raster) is
read block by block on the workers, where each block keeps its seeded sample of points and
measures their distance to the reference. Only the sampled hashes and distances come back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
from numba import njit
from scipy.spatial import cKDTree

from ..hashing import salt, seeded_hash
from ..tables.table import Table

#: Training points held in memory by kNNDM and the distance functions (coordinates or
#: features of each row): above this many rows the table is refused with the numbers.
MAX_REFERENCE_ROWS = 20_000_000


@njit(cache=True, nogil=True)
def insert_best(dist, key, payload, i, v, p, e) -> None:  # pragma: no cover - numba
    """Put the candidate (distance ``v``, key ``p``, payload ``e``) into row ``i`` of the k
    best so far (``dist``, ``key``, ``payload``: n × k, sorted by (distance, key)), if it
    beats the k-th; the k-NN searches' one selection loop."""
    k = dist.shape[1]
    if v > dist[i, k - 1] or (v == dist[i, k - 1] and p >= key[i, k - 1]):
        return
    m = k - 1
    while m > 0 and (dist[i, m - 1] > v or (dist[i, m - 1] == v and key[i, m - 1] > p)):
        dist[i, m] = dist[i, m - 1]
        key[i, m] = key[i, m - 1]
        payload[i, m] = payload[i, m - 1]
        m -= 1
    dist[i, m] = v
    key[i, m] = p
    payload[i, m] = e


@njit(cache=True, nogil=True, fastmath={"contract"})
def squares(x, refT, lo, hi, out) -> None:  # pragma: no cover - numba
    """``out[j - lo]`` = Σ_f (x_f − refT[f, j])² for j in lo..hi, each sum in feature order
    (the same whatever else is computed), vectorised over j."""
    w = hi - lo
    out[:w] = 0.0
    for f in range(refT.shape[0]):
        xf = x[f]
        row = refT[f, lo:hi]
        for j in range(w):
            t = xf - row[j]
            out[j] += t * t


def coords_of(table: Any, caller: str) -> tuple[str, ...]:
    """The coordinate columns of ``table`` (a Table loaded with ``coords=``), or a clear
    error saying how to give them."""
    if not isinstance(table, Table):
        raise TypeError(
            f"{caller} takes a Table, not a {type(table).__name__}; make one with "
            "soak_dask.load_table(data, label=..., coords=('x', 'y'))"
        )
    if not table.coords:
        raise ValueError(
            f"{caller} needs the table's coordinates: load it with coords=['x', 'y'] (the "
            "coordinate columns; soak: --coords x,y)"
        )
    return table.coords


def point_hashes(points: np.ndarray, seed: int, purpose: str) -> np.ndarray:
    """A seeded hash of each row of ``points`` (float values): the same point hashes the
    same wherever it is read, so a sample by smallest hash does not depend on partitions."""
    bits = np.ascontiguousarray(points, dtype=np.float64).view(np.uint64)
    return seeded_hash(seed, salt(purpose), *bits.T)


def frame_points(
    frame: pd.DataFrame, columns: Sequence[str], what: str = "the table"
) -> np.ndarray:
    """``frame[columns]`` as float64 rows, rows with a missing value dropped; an infinite
    value is refused, naming ``what``, its columns and their rows in this partition."""
    z = frame[list(columns)].to_numpy(dtype=np.float64, na_value=np.nan)
    infinite = np.isinf(z).sum(axis=0)
    if infinite.any():
        named = ", ".join(f"{c!r} ({n:,})" for c, n in zip(columns, infinite, strict=True) if n)
        raise ValueError(
            f"{what}: columns {named} have rows with an infinite value (±inf; counted in one "
            "partition of the table): drop or fix those rows first"
        )
    return z[~np.isnan(z).any(axis=1)]


def table_parts(data: dd.DataFrame, columns: Sequence[str], what: str = "the table") -> list[Any]:
    """One delayed float array of points per partition of ``data`` (``what``, for messages)."""
    return [dask.delayed(frame_points)(part, list(columns), what) for part in data.to_delayed()]


def reference_points(data: dd.DataFrame, columns: Sequence[str], what: str) -> np.ndarray:
    """The points ``data[columns]`` in row order, in memory: refused above
    ``MAX_REFERENCE_ROWS`` rows, with a missing or infinite value (naming each column and its
    rows), or when every row has the same values (no distance between them to match)."""
    n = int(data.map_partitions(len).compute().sum())
    if n > MAX_REFERENCE_ROWS:
        raise ValueError(
            f"{what} has {n:,} rows; its {len(columns)} columns {list(columns)} are held in "
            f"memory (limit {MAX_REFERENCE_ROWS:,} rows): subsample the table first"
        )
    z = data[list(columns)].compute().to_numpy(dtype=np.float64, na_value=np.nan)
    bad = (~np.isfinite(z)).sum(axis=0)
    if bad.any():
        named = ", ".join(f"{c!r} ({b:,})" for c, b in zip(columns, bad, strict=True) if b)
        raise ValueError(
            f"{what}: columns {named} have rows with a missing or infinite value (NaN or "
            f"±inf) among its {n:,} rows; drop or fix those rows first"
        )
    if n and not np.ptp(z, axis=0).any():
        place = ", ".join(f"{c}={v:g}" for c, v in zip(columns, z[0], strict=True))
        raise ValueError(
            f"{what}: all {n:,} rows have the same values ({place}): no distances between "
            "them, so no folds can be matched to the prediction area; check the columns"
        )
    return z


def standardiser(points: np.ndarray, columns: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Mean and SD (n - 1, as R's ``scale``) of each column, refusing a constant one."""
    centre, scale = points.mean(axis=0), points.std(axis=0, ddof=1)
    flat = [c for c, s in zip(columns, scale, strict=True) if not s > 0]
    if flat:
        raise ValueError(f"columns {flat} are constant in the training rows: leave them out")
    return centre, scale


#: Up to this many dimensions a k-d tree finds nearest neighbours; above it (feature space:
#: tens to hundreds of standardised features) a tree visits nearly every point anyway, and
#: matrix products do the same search faster (2.8x at 10,000 points of 128 features:
#: benchmarks/knndm_features.py; at 32 features and 2,000 points the tree still wins).
TREE_DIMS = 8
#: Squared distances held at once by the matrix search (query chunk × reference): 128 MB.
_CHUNK_CELLS = 2**24


def nn_distance(reference: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Distance from each query point to its nearest reference point."""
    if not len(query):
        return np.empty(0)
    if reference.shape[1] <= TREE_DIMS:
        return cKDTree(reference).query(query, k=1)[0]
    return nearest_in_groups(reference, np.zeros(len(reference), np.int64), query, None)


def loo_distance(points: np.ndarray) -> np.ndarray:
    """Distance from each point to its nearest other point (CAST's Gj)."""
    if points.shape[1] <= TREE_DIMS:
        return cKDTree(points).query(points, k=2)[0][:, 1]
    out = np.empty(len(points))
    for rows, d2 in score_chunks(points, points):
        d2[np.arange(len(rows)), rows] = np.inf  # the point itself: its nearest *other*
        out[rows] = _exact(points[rows], points, d2.argmin(axis=1))
    return out


def nearest_in_groups(
    reference: np.ndarray, groups: np.ndarray, query: np.ndarray, exclude: np.ndarray | None
) -> np.ndarray:
    """Distance from each query point to its nearest reference point outside the group
    ``exclude[i]`` (None: any group; ``groups`` labels the reference points; inf where no
    point is left), by an exact search of squared distances from matrix products.

    The reference is sorted by group once; each chunk of query points takes the nearest of
    each group's columns, then the nearest group not its own, and its distance is computed
    from the coordinates' differences: exact (0 for a duplicate), as a k-d tree's; only two
    points within rounding of the same distance may be chosen the other way round.
    """
    order = np.argsort(groups, kind="stable")
    ref, sorted_groups = reference[order], groups[order]
    starts = np.flatnonzero(np.r_[True, sorted_groups[1:] != sorted_groups[:-1]])
    bounds = [*zip(starts, [*starts[1:], len(ref)], strict=True)]
    out = np.empty(len(query))
    for rows, d2 in score_chunks(query, ref):
        best = np.stack([d2[:, a:b].argmin(axis=1) + a for a, b in bounds], axis=1)
        value = np.take_along_axis(d2, best, axis=1)
        if exclude is not None:
            value[sorted_groups[starts][None, :] == exclude[rows][:, None]] = np.inf
        pick = value.argmin(axis=1)
        nearest = best[np.arange(len(rows)), pick]
        out[rows] = _exact(query[rows], ref, nearest)
        out[rows[~np.isfinite(value[np.arange(len(rows)), pick])]] = np.inf
    return out


def score_chunks(query: np.ndarray, reference: np.ndarray) -> Any:
    """Chunks of query rows and, for each, ``|r|² - 2 q·r`` against every reference point
    (the squared distance less ``|q|²``, which does not change a row's nearest): computed in
    place, ``_CHUNK_CELLS`` at a time."""
    ref_sq = np.einsum("ij,ij->i", reference, reference)
    chunk = max(1, _CHUNK_CELLS // max(1, len(reference)))
    for start in range(0, len(query), chunk):
        rows = np.arange(start, min(start + chunk, len(query)))
        d2 = query[rows] @ reference.T
        d2 *= -2.0
        d2 += ref_sq[None, :]
        yield rows, d2


def _exact(query: np.ndarray, reference: np.ndarray, nearest: np.ndarray) -> np.ndarray:
    """Distance from each query point to its chosen reference point, from their differences."""
    return np.sqrt(((query - reference[nearest]) ** 2).sum(axis=1))


def _sample_block(
    points: np.ndarray,
    n: int,
    seed: int,
    reference: np.ndarray,
    transform: tuple[np.ndarray, np.ndarray] | None,
) -> tuple[np.ndarray, np.ndarray]:
    """The block's ``n`` points of smallest hash: their hashes and distances to
    ``reference`` (after ``transform`` = (centre, scale), if given)."""
    h = point_hashes(points, seed, "prediction_sample")
    keep = np.argsort(h, kind="stable")[:n]
    chosen = points[keep]
    if transform is not None:
        chosen = (chosen - transform[0]) / transform[1]
    return h[keep], nn_distance(reference, chosen)


def sampled_distances(
    parts: Sequence[Any],
    reference: np.ndarray,
    n: int,
    seed: int,
    transform: tuple[np.ndarray, np.ndarray] | None = None,
    client: Any = None,
) -> np.ndarray:
    """Nearest-neighbour distances to ``reference`` of a seeded sample of ``n`` points of
    the query set ``parts`` (delayed point arrays), in hash order.

    Each block keeps its ``n`` points of smallest hash and measures them on its worker;
    the ``n`` smallest hashes overall are the sample, whatever the blocks. The reference is
    sent once (scattered to every worker with a distributed client).
    """
    ref = client.scatter(reference, broadcast=True, hash=False) if client is not None else reference
    ref = dask.delayed(ref) if client is None else ref
    tasks = [dask.delayed(_sample_block)(p, n, seed, ref, transform) for p in parts]
    done = client.compute(tasks, sync=True) if client is not None else dask.compute(*tasks)
    hashes = np.concatenate([h for h, _ in done]) if done else np.empty(0, np.uint64)
    dists = np.concatenate([d for _, d in done]) if done else np.empty(0)
    if not len(hashes):
        raise ValueError("the prediction area has no valid points (every value missing)")
    order = np.lexsort((dists, hashes))[:n]
    return dists[order]


def _smallest(points: np.ndarray, n: int, seed: int, purpose: str) -> tuple[np.ndarray, ...]:
    h = point_hashes(points, seed, purpose)
    keep = np.argsort(h, kind="stable")[:n]
    return h[keep], points[keep]


def hash_sample(
    parts: Sequence[Any], n: int, seed: int, purpose: str, client: Any = None
) -> np.ndarray:
    """The ``n`` points of smallest seeded hash among the blocks ``parts`` (delayed point
    arrays), in hash order: a seeded sample that does not depend on the partitioning."""
    tasks = [dask.delayed(_smallest)(p, n, seed, purpose) for p in parts]
    done = client.compute(tasks, sync=True) if client is not None else dask.compute(*tasks)
    hashes = np.concatenate([h for h, _ in done])
    points = np.concatenate([p for _, p in done])
    order = np.lexsort((*points.T[::-1], hashes))[:n]  # ties (equal points) by value
    return points[order]
