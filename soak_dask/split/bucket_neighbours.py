"""Approximate k nearest neighbours of every row of a large table, block by block (an inverted
file of k-means buckets, as FAISS's IVF search), never holding the table in one task.

1. **Buckets**: a two-level index of k-means centres (Lloyd's passes from a seeded start) of a
   sample of rows chosen by smallest seeded hash of their values (the same sample whatever the
   partitions): about √n_centres coarse cells, and each cell's share of the fine centres (the
   buckets, about ``bucket_rows`` rows each) fitted on its sample rows. Each partition ranks,
   for each of its rows, the nearest fine centres of its ``COARSE_PROBES`` nearest cells by
   exact distances in feature order, ties by centre index (so a row's ranking depends on its
   values only, not on the block it is in), at about √n_centres distances per row, not
   n_centres. A row's bucket is its nearest centre.
2. **Search**: each row's candidates are the rows of its ``probes`` nearest buckets (more,
   up to ``probes + EXTRA_PROBES``, where those buckets hold fewer than k other rows). The
   buckets are cut into groups of about ``GROUP_ROWS`` rows (consecutive buckets, which lie
   near each other: cell by cell; more groups where the largest one's search would not fit
   a worker's memory, estimated from the centres' sample); each partition, read again, sends
   each row to its bucket's group (as a reference) and to the groups of its other probed
   buckets (as a query), one search task per group keeps the k best candidates of each query
   row among its buckets, by (squared distance, position), and each partition merges its
   rows' candidates from the groups they went to. Both exchanges are shuffles (``exchange``:
   Dask's P2P shuffle on a distributed cluster, its buffers on disk), so the rows in transit
   (about three copies of the table's features) wait on disk, not in the workers' memory or
   Dask's spill of one piece per (partition, group). Distances are computed
   exactly, Σ (q − r)² in feature order, and cut to 28 significant bits, as the exact search
   does, so the neighbours it finds are the exact search's whenever they lie in the probed
   buckets.

Each row's candidate set depends only on its features, the centres and the global bucket
sizes (not on the groups, which only share the work out), and the k best of a set under
(distance, position) are unique: the result is the same whatever the number of partitions or
workers or their memory, for a seed.
The work is about ``rows × probes × bucket_rows`` distances for the search and ``rows ×
√(rows / bucket_rows)`` for the ranking, against ``rows²`` for the exact search; a row travels
to at most its probe count of groups. Recall against the exact search is measured in
``benchmarks/overlap_scale.py``.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
from dask.utils import format_bytes
from numba import njit

from ..dask_client import current_client
from ..workers import FitMemoryError, WorkerMemory
from .neighbours import insert_best, point_hashes, squares
from .shares import partition_starts

#: Rows per bucket on average (the number of centres is rows / bucket_rows).
BUCKET_ROWS = 2000
#: Buckets searched per row.
PROBES = 3
#: Further buckets a row may search where its first ``probes`` hold fewer than k other rows.
EXTRA_PROBES = 5
#: Rows whose buckets one search task holds (the groups: as many whatever the partitioning).
GROUP_ROWS = 250_000
#: Rows sampled to fit the centres (by smallest seeded hash of their values).
SAMPLE_ROWS = 100_000
#: Lloyd passes of the centres' fit.
LLOYD_PASSES = 10
#: Cells of the centre index whose fine centres a row's ranking compares.
COARSE_PROBES = 4
#: Bytes a search task holds per row sent to it besides 24 a feature (its pieces, them joined
#: and transposed, its buckets' rows) and 24 a neighbour (the candidates): their positions,
#: codes, rankings and sort. Measured with tracemalloc: 777 bytes a row at 20 features and
#: k = 5 against 750 estimated (``tests/split/test_bucket_neighbours.py``).
SEARCH_ROW_BYTES = 150
#: Bytes a routing task holds per row of its partition besides 16 a feature and 8 a feature
#: per group it is sent to (its block and the rows it sends) and 32 a ranked bucket (the
#: ranking and its (group, row) pairs, sorted). Measured with tracemalloc (100,000 rows, 20
#: features, 8 ranked, sent to 2.6-3.0 of 40-250 groups): 809-887 bytes a row, 1,076-1,131
#: estimated.
ROUTE_ROW_BYTES = 80
#: Room for the error of the largest group's rows, estimated from the centres' sample.
SAMPLE_MARGIN = 1.25
#: Distances keep 28 of float64's 52 mantissa bits (the exact search's cut).
_FINE = 2**24
_BIG = np.iinfo(np.int64).max


def check_search(bucket_rows: Any, probes: Any) -> tuple[int, int]:
    """``bucket_rows`` (≥ 10) and ``probes`` (≥ 1) as ints, or a clear error."""
    for name, value, low in (("bucket_rows", bucket_rows, 10), ("probes", probes, 1)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
            raise ValueError(f"{name}={value!r}: need an integer of at least {low}")
    return int(bucket_rows), int(probes)


@dataclass(frozen=True)
class CentreIndex:
    """Two-level index of the bucket centres: ``coarse`` centres of cells, and the ``fine``
    centres (the buckets) fitted within each cell, listed cell by cell (cell c's are
    ``fine[starts[c]:starts[c + 1]]``), so consecutive buckets lie near each other."""

    coarse: np.ndarray
    fine: np.ndarray
    starts: np.ndarray

    def __len__(self) -> int:
        return len(self.fine)


def bucket_centres(
    points: Sequence[Any], n_rows: int, seed: int, bucket_rows: int = BUCKET_ROWS
) -> tuple[CentreIndex, np.ndarray]:
    """Centres of the buckets of the rows ``points`` (delayed float arrays, one per partition,
    ``n_rows`` rows in all): about ``n_rows / bucket_rows`` of them, fitted on a seeded sample,
    and that sample."""
    sample = seeded_sample(points, n_rows, min(n_rows, SAMPLE_ROWS), seed)
    return two_level(sample, max(1, min(math.ceil(n_rows / bucket_rows), len(sample)))), sample


def two_level(sample: np.ndarray, n_centres: int) -> CentreIndex:
    """About ``n_centres`` k-means centres of ``sample`` in about √n_centres cells: coarse
    centres first, then each cell's share of the fine centres fitted on its sample rows (a
    hierarchical k-means: each fit costs √n_centres distances per row, not n_centres)."""
    n_cells = max(1, min(n_centres, round(math.sqrt(n_centres))))
    coarse = lloyd(sample, n_cells)
    cell = flat_ranking(sample, coarse, 1)[:, 0]
    counts = np.bincount(cell, minlength=n_cells)
    share = np.where(counts > 0, np.maximum(1, np.round(n_centres * counts / len(sample))), 0)
    fine = [lloyd(sample[cell == c], int(min(share[c], counts[c]))) for c in range(n_cells)]
    starts = np.concatenate([[0], np.cumsum([len(f) for f in fine])]).astype(np.int64)
    return CentreIndex(coarse, np.vstack(fine), starts)


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
    start costs centres × rows distances per centre."""
    centres = sample[:n_centres].copy()
    for _ in range(passes):
        labels = flat_ranking(sample, centres, 1)[:, 0]
        counts = np.bincount(labels, minlength=n_centres)
        sums = np.zeros_like(centres)
        np.add.at(sums, labels, sample)
        filled = counts > 0
        centres[filled] = sums[filled] / counts[filled, None]
    return centres


def flat_ranking(X: np.ndarray, centres: np.ndarray, depth: int) -> np.ndarray:
    """``rank_centres`` against every one of ``centres`` (one cell)."""
    one = CentreIndex(np.zeros((1, X.shape[1])), centres, np.array([0, len(centres)]))
    return rank_centres(X, one, depth)


def rank_centres(X: np.ndarray, index: CentreIndex, depth: int) -> np.ndarray:
    """Indices (int32, n × ``depth``) of each row's ``depth`` nearest fine centres among those
    of its ``COARSE_PROBES`` nearest cells (of every cell where those hold fewer than
    ``depth``), nearest first, by exact squared distance in feature order, then centre index:
    a row's ranking depends on its values only."""
    depth = min(depth, len(index.fine))
    return _rank(
        np.ascontiguousarray(X), np.ascontiguousarray(index.coarse.T),
        np.ascontiguousarray(index.fine.T), index.starts, min(COARSE_PROBES, len(index.coarse)),
        depth,
    )  # fmt: skip


@njit(cache=True, nogil=True)
def _rank(X, coarseT, fineT, starts, n_cells, depth) -> np.ndarray:  # pragma: no cover - numba
    n, d = X.shape
    m = coarseT.shape[1]
    out = np.empty((n, depth), dtype=np.int32)
    s = np.empty(max(m, int(np.max(starts[1:] - starts[:-1]))))
    cell_d = np.empty((1, n_cells))
    cell_i = np.empty((1, n_cells), dtype=np.int64)
    best_d = np.empty((1, depth))
    best_i = np.empty((1, depth), dtype=np.int64)
    for i in range(n):
        squares(X[i], coarseT, 0, m, s)
        cell_d[:] = np.inf
        cell_i[:] = _BIG
        for c in range(m):
            if s[c] <= cell_d[0, n_cells - 1]:
                insert_best(cell_d, cell_i, cell_i, 0, s[c], c, c)
        held = 0
        for a in range(n_cells):
            held += starts[cell_i[0, a] + 1] - starts[cell_i[0, a]]
        best_d[:] = np.inf
        best_i[:] = _BIG
        for a in range(n_cells if held >= depth else m):
            c = cell_i[0, a] if held >= depth else a
            lo, hi = starts[c], starts[c + 1]
            squares(X[i], fineT, lo, hi, s)
            for j in range(lo, hi):
                if s[j - lo] <= best_d[0, depth - 1]:  # most fail here, without a call
                    insert_best(best_d, best_i, best_i, 0, s[j - lo], j, j)
        for a in range(depth):
            out[i, a] = best_i[0, a]
    return out


def rank_block(
    block: tuple[np.ndarray, np.ndarray, np.ndarray], index: CentreIndex, depth: int
) -> np.ndarray:
    """Each row's ``depth`` nearest centres (int32, n × depth), nearest (its bucket) first."""
    return rank_centres(block[0], index, depth)


def bucket_sizes(ranked: np.ndarray, n_centres: int) -> np.ndarray:
    """Rows per bucket of one partition (a small array)."""
    return np.bincount(ranked[:, 0], minlength=n_centres)


def search_groups(sizes: np.ndarray, n_groups: int) -> np.ndarray:
    """The search task (group) of each bucket: consecutive buckets cut into ``n_groups``
    ranges of about equal rows."""
    before = np.cumsum(sizes) - sizes
    return np.minimum(before * n_groups // max(int(sizes.sum()), 1), n_groups - 1).astype(np.int64)


def probe_counts(ranked: np.ndarray, sizes: np.ndarray, k: int, probes: int) -> np.ndarray:
    """Buckets each row searches: ``probes``, or more (up to all it ranked) until they hold at
    least k rows besides itself."""
    held = np.cumsum(sizes[ranked], axis=1)
    enough = held >= k + 1
    first = np.where(enough.any(axis=1), enough.argmax(axis=1), ranked.shape[1] - 1) + 1
    return np.maximum(first, min(probes, ranked.shape[1])).astype(np.int64)


def routes(ranked: np.ndarray, nprobe: np.ndarray, group: np.ndarray) -> np.ndarray:
    """The (search group, row) pairs of a partition's rows, each row once with each group of
    its probed buckets, as sorted codes ``group × rows + row`` (rows ascending in a group)."""
    n = len(ranked)
    probed = np.arange(ranked.shape[1]) < nprobe[:, None]
    rows = np.broadcast_to(np.arange(n, dtype=np.int64)[:, None], ranked.shape)[probed]
    return np.unique(group[ranked[probed]] * n + rows)


def route_block(
    block: tuple[np.ndarray, np.ndarray, np.ndarray],
    ranked: np.ndarray,
    sizes: np.ndarray,
    group: np.ndarray,
    n_groups: int,
    k: int,
    probes: int,
) -> list[dict[str, np.ndarray]]:
    """One partition's rows sent to each search task (group): the rows of its buckets (as
    references, ``ref`` True) and the rows probing one of its buckets (as queries, with their
    ranked buckets and probe counts). A row goes to at most its probe count of groups."""
    X, codes, pos = block
    nprobe = probe_counts(ranked, sizes, k, probes)
    pairs = routes(ranked, nprobe, group)
    cuts = np.searchsorted(pairs, np.arange(n_groups + 1) * len(X))
    home = group[ranked[:, 0]]
    out = []
    for g in range(n_groups):
        rows = pairs[cuts[g] : cuts[g + 1]] - g * len(X)
        out.append(
            {"X": X[rows], "codes": codes[rows].astype(np.int64), "pos": pos[rows],
             "ranked": ranked[rows], "nprobe": nprobe[rows], "ref": home[rows] == g}
        )  # fmt: skip
    return out


def search_bytes(rows: int, n_features: int, k: int) -> int:
    """Bytes a search task holds for ``rows`` rows sent to it (``SEARCH_ROW_BYTES``)."""
    return int(rows) * (24 * n_features + 24 * k + SEARCH_ROW_BYTES)


def route_bytes(rows: int, n_features: int, depth: int, sent: float) -> int:
    """Bytes a routing task holds for a partition of ``rows`` rows, each ranking ``depth``
    buckets and sent to ``sent`` groups on average (``ROUTE_ROW_BYTES``)."""
    per_row = (16 + 8 * sent) * n_features + 32 * depth + ROUTE_ROW_BYTES
    return int(rows * per_row)


def sized_groups(
    sample: np.ndarray,
    index: CentreIndex,
    lengths: np.ndarray,
    k: int,
    probes: int,
    group_rows: int,
    memory: WorkerMemory | None,
) -> int:
    """Search groups: ``ceil(rows / group_rows)``, or more where the largest group's search
    would not fit ``memory`` (a worker's, ``workers.worker_memory``), its rows estimated from the
    centres' sample ranked and routed as the table's would be (times ``SAMPLE_MARGIN``).

    Raises ``FitMemoryError``, before any search, where a routing task (the largest partition)
    or a group of one bucket would not fit."""
    n_rows, d, depth = int(lengths.sum()), sample.shape[1], probes + EXTRA_PROBES
    n_groups = max(1, min(len(index), math.ceil(n_rows / group_rows)))
    if memory is None:
        return n_groups
    ranked = rank_centres(sample, index, depth)
    scale = n_rows / len(sample)
    sizes = np.round(bucket_sizes(ranked, len(index)) * scale).astype(np.int64)
    nprobe = probe_counts(ranked, sizes, k, probes)
    while True:
        pairs = routes(ranked, nprobe, search_groups(sizes, n_groups))
        sent = np.bincount(pairs // len(sample), minlength=n_groups)
        need = search_bytes(math.ceil(sent.max() * scale * SAMPLE_MARGIN), d, k)
        if need <= memory.free or n_groups == len(index):
            break
        n_groups = min(len(index), max(n_groups + 1, math.ceil(n_groups * need / memory.free)))
    route = route_bytes(int(lengths.max()), d, depth, len(pairs) / len(sample))
    for what, bytes_, fix in (
        (f"routing of a partition of {int(lengths.max()):,} rows", route,
         "cut the table into smaller partitions"),
        (f"search of {n_groups:,} groups' largest (about {sent.max() * scale:,.0f} rows)", need,
         "use the exact search (method='exact')"),
    ):  # fmt: skip
        if bytes_ > memory.free:
            raise FitMemoryError(
                f"the block-wise neighbour search's {what} needs about {format_bytes(bytes_)} "
                f"on a worker, more than the {memory}: {fix}, or give the workers more memory"
            )
    return n_groups


def group_search(
    pieces: list[dict[str, np.ndarray]], n_centres: int, k: int
) -> tuple[np.ndarray, ...]:
    """The k best candidates in one group's buckets of each row probing them: (the rows'
    positions and class codes; the candidates' squared distances, positions and class codes,
    n × k, by (distance, position); inf distance where those buckets held fewer)."""
    rows = {key: np.concatenate([p[key] for p in pieces]) for key in pieces[0] if key != "X"}
    XT = np.empty((pieces[0]["X"].shape[1], len(rows["pos"])))  # transposed as it is joined
    np.concatenate([p["X"].T for p in pieces], axis=1, out=XT)
    ref = np.flatnonzero(rows["ref"])
    ref = ref[np.argsort(rows["ranked"][ref, 0], kind="stable")]
    offsets = np.searchsorted(rows["ranked"][ref, 0], np.arange(n_centres + 1)).astype(np.int64)
    Pq = rows["pos"]
    dist, pos, codes = (
        np.full((len(Pq), k), np.inf), np.full((len(Pq), k), _BIG),
        np.full((len(Pq), k), -1, dtype=np.int64),
    )  # fmt: skip
    if len(ref):
        width = int(np.diff(offsets).max())
        XrT = np.take(XT, ref, axis=1, out=np.empty((len(XT), len(ref))))
        _search(
            XT, Pq, rows["ranked"], rows["nprobe"], XrT, Pq[ref], rows["codes"][ref], offsets,
            dist, pos, codes, width,
        )  # fmt: skip
    return Pq, rows["codes"], dist, pos, codes


def merge_groups(
    pieces: list[tuple[np.ndarray, ...]], start: int, n: int, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A partition's rows (positions ``start`` .. ``start + n``): their class codes, and the
    positions and class codes (n × k) of their k best candidates over every group's, by
    (distance, position)."""
    qpos, own, dist, pos, codes = (np.concatenate([p[i] for p in pieces]) for i in range(5))
    row = qpos - start
    if len(row) and (row.min() < 0 or row.max() >= n) or len(np.unique(row)) != n:
        raise RuntimeError("the search lost rows of a partition: its partitions changed")
    best = (np.full((n, k), np.inf), np.full((n, k), _BIG), np.full((n, k), -1, dtype=np.int64))
    _merge(row, dist, pos, codes, *best)
    missing = np.isinf(best[0]).any(axis=1)
    if missing.any():
        raise ValueError(
            f"{int(missing.sum())} rows found fewer than k neighbours in their buckets (many "
            "duplicate rows?): raise probes= or bucket_rows=, or use the exact search"
        )
    mine = np.empty(n, dtype=np.int64)
    mine[row] = own
    return mine, best[1], best[2]


@njit(cache=True, nogil=True)
def _merge(row, dist, pos, codes, best_d, best_p, best_c) -> None:  # pragma: no cover - numba
    for i in range(len(row)):
        for a in range(dist.shape[1]):
            insert_best(best_d, best_p, best_c, row[i], dist[i, a], pos[i, a], codes[i, a])


@njit(cache=True, nogil=True, fastmath={"contract"})
def _search(
    XqT, Pq, ranked, nprobe, XrT, Pr, Cr, offsets, dist, pos, codes, width
) -> None:  # pragma: no cover - numba
    nq = XqT.shape[1]
    k = dist.shape[1]
    s = np.empty(max(width, 1))
    bits = s.view(np.uint64)
    mask = ~np.uint64(_FINE - 1)
    q = np.empty(XqT.shape[0])
    for i in range(nq):
        q[:] = XqT[:, i]
        for a in range(nprobe[i]):
            b = ranked[i, a]
            lo, hi = offsets[b], offsets[b + 1]
            squares(q, XrT, lo, hi, s)
            for jj in range(hi - lo):
                bits[jj] &= mask
                if s[jj] <= dist[i, k - 1] and Pr[lo + jj] != Pq[i]:  # most fail here, no call
                    insert_best(dist, pos, codes, i, s[jj], Pr[lo + jj], Cr[lo + jj])


def bucket_neighbour_codes(
    blocks: list[Any],
    lengths: Sequence[int],
    k: int,
    seed: int,
    bucket_rows: int = BUCKET_ROWS,
    probes: int = PROBES,
    group_rows: int = GROUP_ROWS,
    memory: WorkerMemory | None = None,
) -> list[Any]:
    """Per partition, delayed (class codes, the k approximate nearest neighbours' class codes):
    ``bucket_neighbours`` without the neighbours' positions."""
    found = bucket_neighbours(blocks, lengths, k, seed, bucket_rows, probes, group_rows, memory)
    return [dask.delayed(_codes, pure=True)(m) for m in found]


def bucket_neighbours(
    blocks: list[Any],
    lengths: Sequence[int],
    k: int,
    seed: int,
    bucket_rows: int = BUCKET_ROWS,
    probes: int = PROBES,
    group_rows: int = GROUP_ROWS,
    memory: WorkerMemory | None = None,
) -> list[Any]:
    """Per partition, delayed (class codes, positions and class codes of the k approximate
    nearest neighbours, n × k).

    ``blocks`` are delayed (standardised features, class codes, positions) of each partition
    (``split.overlap.block_arrays``), ``lengths`` their rows. The centres are fitted and the
    buckets' sizes counted here (two small computations on the cluster, the second reading
    every partition once); the rest is returned lazy: each partition is read again, ranks its
    rows' buckets and sends each row to the search tasks (groups of about ``group_rows`` rows'
    buckets, as many whatever the partitioning) of its probed buckets, and gets back their
    candidates, both ways through a shuffle (``exchange``: Dask's P2P shuffle on a
    distributed cluster, whose buffers spill to disk). No task holds more than a partition,
    or a group's rows and the rows probing them; given a worker's ``memory``, the groups are
    cut finer where the largest would not fit it, and a search that cannot fit is refused
    before it starts (``sized_groups``).
    """
    bucket_rows, probes = check_search(bucket_rows, probes)
    lengths = np.asarray(lengths, dtype=np.int64)
    n_rows = int(lengths.sum())
    points = [dask.delayed(operator.getitem, pure=True)(b, 0) for b in blocks]
    centres, sample = bucket_centres(points, n_rows, seed, bucket_rows)
    n_centres = len(centres)
    depth = min(probes + EXTRA_PROBES, n_centres)  # centres a row ranks (rank_centres)
    n_groups = sized_groups(sample, centres, lengths, k, probes, group_rows, memory)
    held = dask.delayed(centres, pure=True)  # one key, not a copy in every task
    # Only the counts come back: the blocks are read again to be routed, not held meanwhile.
    counted = [dask.delayed(block_sizes, pure=True)(b, held, n_centres) for b in blocks]
    sizes = np.sum(dask.compute(*counted), axis=0)
    group = search_groups(sizes, n_groups)
    routed = dd.from_delayed(
        [
            dask.delayed(route_frame, pure=True)(b, held, sizes, group, n_groups, k, probes)
            for b in blocks
        ],
        meta=route_meta(sample.shape[1], depth),
        verify_meta=False,
    )
    searched = exchange(routed, n_groups).map_partitions(
        search_frame, n_centres, k, partition_starts(lengths), meta=found_meta(k)
    )
    merged = exchange(searched, len(lengths)).to_delayed()
    starts = partition_starts(lengths)
    return [
        dask.delayed(merge_frame, pure=True)(part, int(start), int(n), k)
        for part, start, n in zip(merged, starts, lengths, strict=True)
    ]


def block_sizes(block: tuple[np.ndarray, ...], index: CentreIndex, n_centres: int) -> np.ndarray:
    """Rows per bucket of one partition (its rows' nearest centres)."""
    return bucket_sizes(rank_block(block, index, 1), n_centres)


#: The column of the task (search group, then partition) a row of the exchange goes to.
TARGET = "__soak_target__"


def exchange(frame: dd.DataFrame, n_targets: int) -> dd.DataFrame:
    """``frame``'s rows moved to ``n_targets`` partitions, partition t holding exactly the rows
    whose ``TARGET`` is t (its index then): a shuffle on known divisions, Dask's P2P shuffle
    (buffered, spilled to disk) on a distributed cluster unless configured otherwise
    (``dataframe.shuffle.method``), so no task holds a piece per pair of partitions."""
    method = dask.config.get("dataframe.shuffle.method", None)
    if method is None:
        method = "p2p" if current_client() is not None else "tasks"
    divisions = list(range(n_targets + 1))
    return frame.set_index(TARGET, divisions=divisions, shuffle_method=method)


def route_meta(n_features: int, depth: int) -> pd.DataFrame:
    """The columns of ``route_frame``'s rows."""
    columns = {TARGET: np.int64, "pos": np.int64, "codes": np.int64, "nprobe": np.int64}
    columns |= {"ref": bool} | {f"ranked{a}": np.int32 for a in range(depth)}
    columns |= {f"x{j}": np.float64 for j in range(n_features)}
    return pd.DataFrame({c: np.array([], dtype=t) for c, t in columns.items()})


def route_frame(
    block: tuple[np.ndarray, np.ndarray, np.ndarray],
    index: CentreIndex,
    sizes: np.ndarray,
    group: np.ndarray,
    n_groups: int,
    k: int,
    probes: int,
) -> pd.DataFrame:
    """``route_block``'s pieces of one partition as one frame, a row per (group, row) pair,
    its group in ``TARGET``."""
    ranked = rank_block(block, index, probes + EXTRA_PROBES)
    pieces = route_block(block, ranked, sizes, group, n_groups, k, probes)
    counts = [len(p["pos"]) for p in pieces]
    columns: dict[str, Any] = {TARGET: np.repeat(np.arange(n_groups, dtype=np.int64), counts)}
    for key in ("pos", "codes", "nprobe", "ref"):
        columns[key] = np.concatenate([p[key] for p in pieces])
    ranks = np.concatenate([p["ranked"] for p in pieces])
    X = np.concatenate([p["X"] for p in pieces])
    columns |= {f"ranked{a}": ranks[:, a] for a in range(ranks.shape[1])}
    columns |= {f"x{j}": X[:, j] for j in range(X.shape[1])}
    return pd.DataFrame(columns)


def search_frame(part: pd.DataFrame, n_centres: int, k: int, starts: np.ndarray) -> pd.DataFrame:
    """``group_search`` of one group's rows (a partition of the routed frame): each query row's
    candidates, its partition in ``TARGET``."""
    if not len(part):
        return found_meta(k)
    ranked = part.filter(regex="^ranked").to_numpy()
    piece = {key: part[key].to_numpy() for key in ("pos", "codes", "nprobe", "ref")}
    piece |= {"ranked": ranked, "X": part.filter(regex="^x").to_numpy(np.float64)}
    qpos, own, dist, pos, codes = group_search([piece], n_centres, k)
    columns = {TARGET: np.searchsorted(starts, qpos, side="right") - 1, "qpos": qpos, "own": own}
    for name, values in (("dist", dist), ("npos", pos), ("ncodes", codes)):
        columns |= {f"{name}{a}": values[:, a] for a in range(k)}
    return pd.DataFrame(columns)


def found_meta(k: int) -> pd.DataFrame:
    """The columns of ``search_frame``'s rows."""
    columns = {TARGET: np.int64, "qpos": np.int64, "own": np.int64}
    for name, dtype in (("dist", np.float64), ("npos", np.int64), ("ncodes", np.int64)):
        columns |= {f"{name}{a}": dtype for a in range(k)}
    return pd.DataFrame({c: np.array([], dtype=t) for c, t in columns.items()})


def merge_frame(
    part: pd.DataFrame, start: int, n: int, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``merge_groups`` of a partition's candidates as they come back from the exchange."""
    piece = [part["qpos"].to_numpy(), part["own"].to_numpy()]
    piece += [
        part[[f"{name}{a}" for a in range(k)]].to_numpy() for name in ("dist", "npos", "ncodes")
    ]
    return merge_groups([tuple(piece)], start, n, k)


def _codes(merged: tuple[np.ndarray, np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    return merged[0], merged[2]
