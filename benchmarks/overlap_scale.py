"""Degree of overlap at scale: the block-wise approximate k-NN (``method="blockwise"``).

Two parts, on the generated pixel table (20 bands):

* ``--recall-rows``: in memory, the k-means-bucket search (``split.bucket_neighbours``) for
  each (bucket_rows, probes) of the grid against the exact k-NN (the exact search's own
  kernel): recall (share of the exact k nearest found), share of rows with the same degree of
  overlap, and the same for the paper's levels pooled to 3 (0, 1, 2+); seconds of each.
* ``--rows``: ``overlap_degrees(table, k, method="blockwise")`` on a LocalCluster (``--workers``
  single-threaded workers), the degrees computed partition by partition (their counts come back),
  beside one scan of the same files, and the same degrees again on the table cut into twice as
  many partitions (``--check-partitions``, smaller sizes only): they must be identical; the
  seconds per task name (where the time goes); and, to ``--sampled-recall-to`` rows, the recall
  of a seeded sample of ``--sampled-recall`` rows against their exact k nearest among every row.

    python -m benchmarks.overlap_scale --recall-rows 100000 --rows 1000000
    python -m benchmarks.overlap_scale --rows 10000000 --recall-rows 0
    python -m benchmarks.overlap_scale --quick
"""

from __future__ import annotations

import itertools
import math

import dask
import numpy as np
import pandas as pd
import psutil

from soak_dask.split.bucket_neighbours import SAMPLE_ROWS, bucket_neighbours
from soak_dask.split.overlap import (
    DO_COLUMN,
    POSITION,
    block_arrays,
    block_candidates,
    degrees,
    feature_scaling,
    merge_candidates,
    overlap_degrees,
    overlap_levels,
    with_positions,
)

from .common import (
    finish,
    header,
    load_pixels,
    local_cluster,
    parser,
    pixel_parquet,
    task_seconds,
    timed,
)
from .overlap_knn import exact_neighbours

MODULE = "benchmarks.overlap_scale"
EXCLUDE = ["x", "y", "polygon", "region"]


def bucket_positions(arrays: tuple, k: int, seed: int, bucket_rows: int, probes: int):
    """Positions of each row's k neighbours found by the bucket search, in memory."""
    n = len(arrays[0])
    with dask.config.set(scheduler="sync"):
        (found,) = bucket_neighbours([dask.delayed(arrays)], [n], k, seed, bucket_rows, probes)
        return found.compute()[1], min(math.ceil(n / bucket_rows), SAMPLE_ROWS)


def recall_grid(source: str, k: int, seed: int, grid: list[tuple[int, int]]) -> list[dict]:
    table = load_pixels(source, subset=None, exclude=EXCLUDE)
    mean, sd, lengths = feature_scaling(table)
    part = with_positions(table, lengths).data.compute()
    classes = pd.Index(sorted(part[table.label].unique()))
    arrays = block_arrays(part, table.features, table.label, classes, mean, sd)
    codes = arrays[1]
    exact, exact_s = timed(lambda: exact_neighbours(arrays, k, 20_000))
    exact_do = degrees(codes, codes[exact])
    levels = overlap_levels(k, n_levels=3)
    out = []
    for bucket_rows, probes in grid:
        (found, centres), seconds = timed(
            lambda b=bucket_rows, p=probes: bucket_positions(arrays, k, seed, b, p)
        )
        do = degrees(codes, codes[found])
        hits = sum(len(np.intersect1d(a, b)) for a, b in zip(exact, found, strict=True))
        out.append(
            {
                "rows": len(codes),
                "bucket_rows": bucket_rows,
                "probes": probes,
                "centres": centres,
                "exact_s": round(exact_s, 1),
                "blockwise_s": round(seconds, 1),
                "recall": round(hits / exact.size, 4),
                "same_degree": round(float((do == exact_do).mean()), 4),
                "same_level3": round(float((levels[do] == levels[exact_do]).mean()), 4),
                "degree_counts_exact": np.bincount(exact_do, minlength=k + 1).tolist(),
                "degree_counts_blockwise": np.bincount(do, minlength=k + 1).tolist(),
            }
        )
        print(out[-1], flush=True)
    return out


def degree_counts(client, table, k: int, seed: int) -> tuple[np.ndarray, pd.Series]:
    """Degrees of every row (sorted by position) -- computed partition by partition."""
    data = overlap_degrees(table, k, method="blockwise", seed=seed).data[[POSITION, DO_COLUMN]]
    parts = client.compute(data.to_delayed())
    frame = pd.concat(client.gather(parts)).sort_values(POSITION)
    return frame[DO_COLUMN].to_numpy(), frame[DO_COLUMN].value_counts().sort_index()


def pick_rows(block: tuple, merged: tuple, rows: np.ndarray) -> tuple[tuple, np.ndarray]:
    """The arrays of a partition's rows ``rows`` and their block-wise neighbours' positions."""
    return tuple(a[rows] for a in block), merged[1][rows]


def sampled_recall(client, table, k: int, seed: int, n_queries: int) -> dict:
    """Recall of the block-wise search (``bucket_neighbours``, as ``overlap_degrees`` runs it)
    against the exact k nearest among every row, for a seeded sample of query rows: the exact
    search of a sample is one pass (each partition's candidates for the sample, merged)."""
    mean, sd, lengths = feature_scaling(table)
    table = with_positions(table, lengths)
    classes = pd.Index(sorted(table.data[table.label].unique().compute().tolist()))
    blocks = [
        dask.delayed(block_arrays)(p, table.features, table.label, classes, mean, sd)
        for p in table.data.to_delayed()
    ]
    found = bucket_neighbours(blocks, lengths, k, seed)
    n = int(lengths.sum())
    picks = np.sort(np.random.default_rng(seed).choice(n, min(n_queries, n), replace=False))
    starts = np.concatenate([[0], np.cumsum(lengths)])
    tasks = [
        dask.delayed(pick_rows)(b, m, picks[(picks >= lo) & (picks < hi)] - lo)
        for b, m, lo, hi in zip(blocks, found, starts[:-1], starts[1:], strict=True)
    ]
    picked = client.gather(client.compute(tasks))
    query = tuple(np.concatenate([q[i] for q, _ in picked]) for i in range(3))
    approx = np.vstack([f for _, f in picked])
    exact = [dask.delayed(block_candidates)(query, b, k) for b in blocks]
    best = merge_candidates(client.gather(client.compute(exact)))[1]
    hits = sum(len(np.intersect1d(a, b)) for a, b in zip(best, approx, strict=True))
    return {"sampled_queries": len(picks), "sampled_recall": round(hits / best.size, 4)}


def worker_cpu(client) -> float:
    """CPU seconds used so far by every worker process (the work, whatever the load)."""

    def used() -> float:
        times = psutil.Process().cpu_times()
        return times.user + times.system

    return sum(client.run(used).values())


def scale_run(
    source: str, rows: int, k: int, seed: int, workers: int, check: bool, queries: int
) -> dict:
    with local_cluster(workers) as client:
        table = load_pixels(source, subset=None, exclude=EXCLUDE)
        features = table.data[list(table.features)]
        scan = timed(lambda: features.sum().compute())[1]
        cpu = worker_cpu(client)
        with task_seconds(client) as where:
            (do, counts), seconds = timed(lambda: degree_counts(client, table, k, seed))
        cpu = worker_cpu(client) - cpu
        row = {
            "rows": rows,
            "partitions": table.data.npartitions,
            "workers": workers,
            "blockwise_s": round(seconds, 1),
            "workers_cpu_s": round(cpu, 1),
            "scan_s": round(scan, 2),
            "scans": round(seconds / scan, 1),
            "degree_counts": counts.tolist(),
            "task_seconds": {name: round(s, 1) for name, s in where.items() if s >= 0.5},
        }
        if check:
            more = table.data.repartition(npartitions=2 * table.data.npartitions)
            from dataclasses import replace

            again, _ = degree_counts(client, replace(table, data=more, files=None), k, seed)
            row["same_with_2x_partitions"] = bool(np.array_equal(do, again))
        if queries:
            row.update(sampled_recall(client, table, k, seed, queries))
    print(row, flush=True)
    return row


def main(argv: list[str] | None = None) -> dict:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--recall-rows", type=int, default=100_000, help="0: skip the recall part")
    p.add_argument("--rows", type=int, nargs="*", default=[1_000_000])
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--bucket-rows", type=int, nargs="+", default=[1000, 2000, 4000])
    p.add_argument("--probes", type=int, nargs="+", default=[1, 2, 3, 5])
    p.add_argument(
        "--check-partitions", type=int, default=2_000_000, help="2x partitions check to here"
    )
    p.add_argument(
        "--sampled-recall",
        type=int,
        default=2000,
        help="query rows whose neighbours are checked against the exact search (0: none)",
    )
    p.add_argument(
        "--sampled-recall-to", type=int, default=2_000_000, help="the sampled recall to here"
    )
    args = p.parse_args(argv)
    if args.quick:
        args.recall_rows, args.rows, args.bucket_rows, args.probes = 20_000, [100_000], [1000], [3]
    facts = header("degree of overlap: block-wise approximate k-NN", MODULE, argv, args)
    recall = []
    if args.recall_rows:
        source = pixel_parquet(args.workdir, args.recall_rows, args.seed, rows_per_file=25_000)
        grid = list(itertools.product(args.bucket_rows, args.probes))
        recall = recall_grid(source, args.k, args.seed, grid)
    rows = []
    for n in args.rows:
        source = pixel_parquet(args.workdir, n, args.seed, scenes=math.ceil(n / 2_000_000))
        check = n <= args.check_partitions
        queries = args.sampled_recall if n <= args.sampled_recall_to else 0
        rows.append(scale_run(source, n, args.k, args.seed, args.workers, check, queries))
    return finish("overlap_scale", args, facts, rows, [], {"recall": recall})


if __name__ == "__main__":
    main()
