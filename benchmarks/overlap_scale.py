"""Degree of overlap at scale: the block-wise approximate k-NN (``method="blockwise"``).

Two parts, on the generated pixel table (20 bands):

* ``--recall-rows``: in memory, the k-means-bucket search (``split.bucket_neighbours``) for
  each (bucket_rows, probes) of the grid against the exact k-NN (the exact search's own
  kernel): recall (share of the exact k nearest found), share of rows with the same degree of
  overlap, and the same for the paper's levels pooled to 3 (0, 1, 2+); seconds of each.
* ``--rows``: ``overlap_degrees(table, k, method="blockwise")`` on a LocalCluster (``--workers``
  single-threaded workers), the degrees computed partition by partition (their counts come back),
  beside one scan of the same files, and the same degrees again on the table cut into twice as
  many partitions (``--check-partitions``, smaller sizes only): they must be identical.

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

from soak_dask.split.bucket_neighbours import SAMPLE_ROWS, bucket_neighbours
from soak_dask.split.overlap import (
    DO_COLUMN,
    POSITION,
    block_arrays,
    degrees,
    feature_scaling,
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


def scale_run(source: str, rows: int, k: int, seed: int, workers: int, check: bool) -> dict:
    with local_cluster(workers) as client:
        table = load_pixels(source, subset=None, exclude=EXCLUDE)
        features = table.data[list(table.features)]
        scan = timed(lambda: features.sum().compute())[1]
        with task_seconds(client) as where:
            (do, counts), seconds = timed(lambda: degree_counts(client, table, k, seed))
        row = {
            "rows": rows,
            "partitions": table.data.npartitions,
            "workers": workers,
            "blockwise_s": round(seconds, 1),
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
        rows.append(scale_run(source, n, args.k, args.seed, args.workers,
                              n <= args.check_partitions))  # fmt: skip
    return finish("overlap_scale", args, facts, rows, [], {"recall": recall})


if __name__ == "__main__":
    main()
