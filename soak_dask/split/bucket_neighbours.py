"""Approximate k nearest neighbours of every row of a large table, block by block (an inverted
file of k-means buckets, as FAISS's IVF search), never holding the table in one task.

1. **Buckets**: k-means centres (Lloyd's passes from a seeded start) of a sample of rows
   chosen by smallest seeded hash of their values (the same sample whatever the partitions),
   about ``bucket_rows`` rows per centre. Each partition ranks, for each of its rows, the
   nearest centres (BLAS scores, then the few best re-ranked by exact distances in feature
   order, ties by centre index, so the ranking does not depend on the block the row is in).
   A row's bucket is its nearest centre.
2. **Search**: each row's candidates are the rows of its ``probes`` nearest buckets (more,
   up to ``probes + EXTRA_PROBES``, where those buckets hold fewer than k other rows). For each
   query partition, a chain of tasks visits every reference partition in turn; each task holds
   the two partitions' arrays and keeps the k best candidates per row so far, by (squared
   distance, position). Distances are computed exactly, Σ (q − r)² in feature order, and cut to
   28 significant bits, as the exact search does, so the neighbours it finds are the exact
   search's whenever they lie in the probed buckets.

Each row's candidate set depends only on its features, the centres and the global bucket
sizes, and the k best of a set under (distance, position) are unique: the result is the same
whatever the number of partitions or workers, for a seed. The work is about
``rows × probes × bucket_rows`` distances (linear in rows), against ``rows²`` for the exact
search; recall against the exact search is measured in ``benchmarks/overlap_scale.py``.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import dask
import numpy as np
from numba import njit
from threadpoolctl import threadpool_limits

from .neighbours import point_hashes

#: Rows per bucket on average (the number of centres is rows / bucket_rows).
BUCKET_ROWS = 2000
#: Buckets searched per row.
PROBES = 3
#: Further buckets a row may search where its first ``probes`` hold fewer than k other rows.
EXTRA_PROBES = 5
#: Rows sampled to fit the centres (by smallest seeded hash of their values).
SAMPLE_ROWS = 100_000
#: Lloyd passes of the centres' fit.
LLOYD_PASSES = 10
#: Rows scored against every centre at once (BLAS), bounding the score matrix.
_CHUNK = 1024
#: Distances keep 28 of float64's 52 mantissa bits (the exact search's cut).
_FINE = 2**24
_BIG = np.iinfo(np.int64).max


def check_search(bucket_rows: Any, probes: Any) -> tuple[int, int]:
    """``bucket_rows`` (≥ 10) and ``probes`` (≥ 1) as ints, or a clear error."""
    for name, value, low in (("bucket_rows", bucket_rows, 10), ("probes", probes, 1)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
            raise ValueError(f"{name}={value!r}: need an integer of at least {low}")
    return int(bucket_rows), int(probes)


def bucket_centres(
    points: Sequence[Any], n_rows: int, seed: int, bucket_rows: int = BUCKET_ROWS
) -> np.ndarray:
    """Centres of the buckets of the rows ``points`` (delayed float arrays, one per partition,
    ``n_rows`` rows in all): about ``n_rows / bucket_rows`` of them, fitted on a seeded sample."""
    sample = seeded_sample(points, n_rows, min(n_rows, SAMPLE_ROWS), seed)
    return lloyd(sample, max(1, min(math.ceil(n_rows / bucket_rows), len(sample))))


def seeded_sample(points: Sequence[Any], n_rows: int, n: int, seed: int) -> np.ndarray:
    """About ``n`` of the ``n_rows`` rows of ``points``: those of smallest seeded hash of their
    values (the same rows whatever the partitions), in hash order.

    Each partition sends only its rows whose hash is below the share 1.5 n / n_rows of the hash
    range (about 1.5 n rows in all, not n per partition), and the n smallest of those are
    kept; fewer than n where fewer fall below (then all of them)."""
    limit = np.uint64(min(2**64 - 1, int(2**64 * min(1.0, 1.5 * n / max(n_rows, 1)))))
    tasks = [dask.delayed(below_hash, pure=True)(p, seed, limit) for p in points]
    done = dask.compute(*tasks)
    hashes = np.concatenate([h for h, _ in done])
    values = np.concatenate([v for _, v in done])
    order = np.lexsort((*values.T[::-1], hashes))[:n]  # ties (equal rows) by value
    return values[order]


def below_hash(points: np.ndarray, seed: int, limit: np.uint64) -> tuple[np.ndarray, np.ndarray]:
    """A partition's rows whose seeded hash is at most ``limit``, and their hashes."""
    h = point_hashes(points, seed, "bucket_sample")
    keep = h <= limit
    return h[keep], points[keep]


def lloyd(sample: np.ndarray, n_centres: int, passes: int = LLOYD_PASSES) -> np.ndarray:
    """k-means centres of ``sample`` by Lloyd's passes from its first ``n_centres`` rows (the
    sample is in seeded-hash order, so those are a seeded random start). Not k-means++: its
    start costs centres × rows distances per centre, minutes for thousands of centres."""
    centres = sample[:n_centres].copy()
    for _ in range(passes):
        labels = rank_centres(sample, centres, 1)[:, 0]
        counts = np.bincount(labels, minlength=n_centres)
        sums = np.zeros_like(centres)
        np.add.at(sums, labels, sample)
        filled = counts > 0
        centres[filled] = sums[filled] / counts[filled, None]
    return centres


def rank_centres(X: np.ndarray, centres: np.ndarray, depth: int) -> np.ndarray:
    """Indices (int32, n × ``depth``) of each row's ``depth`` nearest centres, nearest first,
    ordered by exact squared distance in feature order and then by centre index."""
    depth = min(depth, len(centres))
    shortlist = min(depth + 2, len(centres))  # BLAS rounding can swap near ties: re-rank a few more
    norms = np.einsum("ij,ij->i", centres, centres)
    out = np.empty((len(X), depth), dtype=np.int32)
    with threadpool_limits(1):  # small products: BLAS threads cost more than they save
        for start in range(0, len(X), _CHUNK):
            chunk = np.ascontiguousarray(X[start : start + _CHUNK])
            scores = norms - 2.0 * (chunk @ centres.T)
            out[start : start + _CHUNK] = _rerank(chunk, centres, scores, shortlist, depth)
    return out


@njit(cache=True, nogil=True)
def _rerank(
    X: np.ndarray, centres: np.ndarray, scores: np.ndarray, shortlist: int, depth: int
) -> np.ndarray:  # pragma: no cover - numba
    n, c = scores.shape
    d = X.shape[1]
    out = np.empty((n, depth), dtype=np.int32)
    idx = np.empty(shortlist, dtype=np.int64)
    val = np.empty(shortlist)
    exact = np.empty(shortlist)
    for i in range(n):
        val[:] = np.inf
        idx[:] = -1
        for j in range(c):  # the shortlist of smallest scores, by insertion
            v = scores[i, j]
            if v >= val[shortlist - 1]:
                continue
            m = shortlist - 1
            while m > 0 and val[m - 1] > v:
                val[m] = val[m - 1]
                idx[m] = idx[m - 1]
                m -= 1
            val[m] = v
            idx[m] = j
        for m in range(shortlist):
            s = 0.0
            for f in range(d):
                t = X[i, f] - centres[idx[m], f]
                s += t * t
            exact[m] = s
        for m in range(1, shortlist):  # insertion sort by (exact distance, centre index)
            e, j = exact[m], idx[m]
            a = m
            while a > 0 and (exact[a - 1] > e or (exact[a - 1] == e and idx[a - 1] > j)):
                exact[a] = exact[a - 1]
                idx[a] = idx[a - 1]
                a -= 1
            exact[a] = e
            idx[a] = j
        out[i, :] = idx[:depth]
    return out


def bucket_block(
    block: tuple[np.ndarray, np.ndarray, np.ndarray], centres: np.ndarray, depth: int
) -> dict[str, np.ndarray]:
    """One partition's arrays for the search, rows sorted by bucket: the transposed features
    ``XT`` (d × n), ``codes``, ``pos`` and ``ranked`` centres of each row, the bucket ``offsets``
    (rows of bucket b are ``offsets[b]:offsets[b + 1]``) and ``order`` (the sorted rows' places
    in the partition)."""
    X, codes, pos = block
    ranked = rank_centres(X, centres, depth)
    order = np.argsort(ranked[:, 0], kind="stable")
    offsets = np.searchsorted(ranked[order, 0], np.arange(len(centres) + 1)).astype(np.int64)
    return {
        "XT": np.ascontiguousarray(X[order].T),
        "codes": codes[order].astype(np.int64),
        "pos": pos[order],
        "ranked": ranked[order],
        "offsets": offsets,
        "order": order,
    }


def block_sizes(block: dict[str, np.ndarray]) -> np.ndarray:
    """Rows per bucket of one prepared partition (a small array)."""
    return np.diff(block["offsets"])


def probe_counts(ranked: np.ndarray, sizes: np.ndarray, k: int, probes: int) -> np.ndarray:
    """Buckets each row searches: ``probes``, or more (up to all it ranked) until they hold at
    least k rows besides itself."""
    held = np.cumsum(sizes[ranked], axis=1)
    enough = held >= k + 1
    first = np.where(enough.any(axis=1), enough.argmax(axis=1), ranked.shape[1] - 1) + 1
    return np.maximum(first, min(probes, ranked.shape[1])).astype(np.int64)


def empty_best(n: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """No candidates yet: distances inf, positions and codes none."""
    return np.full((n, k), np.inf), np.full((n, k), _BIG), np.full((n, k), -1, dtype=np.int64)


def search_step(
    query: dict[str, np.ndarray],
    ref: dict[str, np.ndarray],
    best: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
    sizes: np.ndarray,
    k: int,
    probes: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The k best candidates of each query row (sorted order) after also searching ``ref``:
    (squared distances, positions, class codes), each n × k, by (distance, position)."""
    n = query["XT"].shape[1]
    dist, pos, codes = empty_best(n, k) if best is None else (a.copy() for a in best)
    if not ref["XT"].shape[1]:
        return dist, pos, codes
    width = int(np.diff(ref["offsets"]).max())
    _search(
        query["XT"], query["pos"], query["ranked"], probe_counts(query["ranked"], sizes, k, probes),
        ref["XT"], ref["pos"], ref["codes"], ref["offsets"], dist, pos, codes, width,
    )  # fmt: skip
    return dist, pos, codes


@njit(cache=True, nogil=True, fastmath={"contract"})
def _search(
    XqT, Pq, ranked, nprobe, XrT, Pr, Cr, offsets, dist, pos, codes, width
) -> None:  # pragma: no cover - numba
    d, nq = XqT.shape
    k = dist.shape[1]
    s = np.empty(max(width, 1))
    bits = s.view(np.uint64)
    mask = ~np.uint64(_FINE - 1)
    q = np.empty(d)
    for i in range(nq):
        for f in range(d):
            q[f] = XqT[f, i]
        for a in range(nprobe[i]):
            b = ranked[i, a]
            lo, hi = offsets[b], offsets[b + 1]
            w = hi - lo
            s[:w] = 0.0
            for f in range(d):  # vectorised over the bucket's rows; each sum in feature order
                qf = q[f]
                row = XrT[f, lo:hi]
                for j in range(w):
                    t = qf - row[j]
                    s[j] += t * t
            for jj in range(w):
                bits[jj] &= mask
                v = s[jj]
                p = Pr[lo + jj]
                if p == Pq[i] or v > dist[i, k - 1] or (v == dist[i, k - 1] and p >= pos[i, k - 1]):
                    continue
                m = k - 1
                while m > 0 and (dist[i, m - 1] > v or (dist[i, m - 1] == v and pos[i, m - 1] > p)):
                    dist[i, m] = dist[i, m - 1]
                    pos[i, m] = pos[i, m - 1]
                    codes[i, m] = codes[i, m - 1]
                    m -= 1
                dist[i, m] = v
                pos[i, m] = p
                codes[i, m] = Cr[lo + jj]


def unsorted_codes(
    query: dict[str, np.ndarray], best: tuple[np.ndarray, np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """(class codes, neighbours' class codes) of the partition's rows in their own order."""
    if np.isinf(best[0]).any():
        raise ValueError(
            f"{int(np.isinf(best[0]).any(axis=1).sum())} rows found fewer than k neighbours in "
            "their buckets (many duplicate rows?): raise probes= or bucket_rows=, or use the "
            "exact search"
        )
    back = np.empty_like(query["order"])
    back[query["order"]] = np.arange(len(back))
    return query["codes"][back], best[2][back]


def bucket_neighbour_codes(
    blocks: list[Any],
    n_rows: int,
    k: int,
    seed: int,
    bucket_rows: int = BUCKET_ROWS,
    probes: int = PROBES,
) -> list[Any]:
    """Per partition, delayed (class codes, the k approximate nearest neighbours' class codes).

    ``blocks`` are delayed (standardised features, class codes, positions) of each partition
    (``split.overlap.block_arrays``), ``n_rows`` rows in all. The centres are fitted here
    (one small computation on the cluster); the rest is returned lazy. Every task holds at most
    two partitions; the only task reading every partition sums their bucket sizes (one small
    array each).
    """
    bucket_rows, probes = check_search(bucket_rows, probes)
    points = [dask.delayed(operator.getitem, pure=True)(b, 0) for b in blocks]
    centres = bucket_centres(points, n_rows, seed, bucket_rows)
    depth = probes + EXTRA_PROBES
    prepared = [dask.delayed(bucket_block, pure=True)(b, centres, depth) for b in blocks]
    each = [dask.delayed(block_sizes, pure=True)(p) for p in prepared]
    sizes = dask.delayed(sum, pure=True)(each)
    out = []
    for query in prepared:
        best = None
        for ref in prepared:
            best = dask.delayed(search_step, pure=True)(query, ref, best, sizes, k, probes)
        out.append(dask.delayed(unsorted_codes, pure=True)(query, best))
    return out
