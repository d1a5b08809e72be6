"""Degree of overlap: exact block-by-block k-NN on the cluster vs pynndescent's approximate index.

On the generated pixel table (20 bands), for each size: seconds of
``soak_dask.split.overlap.overlap_degrees`` with ``method="exact"`` (one task per pair of
partitions, on a LocalCluster) and of pynndescent on the same standardised features (one task
holding every row, as ``method="nndescent"`` runs it; numba compilation excluded by a warm-up
run); the recall of pynndescent's neighbour lists against the exact ones (share of the exact
k nearest found), and how often the two give the same degree of overlap.

    python -m benchmarks.overlap_knn                # 10k and 50k rows, k = 5
    python -m benchmarks.overlap_knn --quick        # 5k rows
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from soak_dask.split.overlap import (
    DO_COLUMN,
    POSITION,
    block_arrays,
    block_candidates,
    degrees,
    feature_scaling,
    merge_candidates,
    overlap_degrees,
    with_positions,
)

from .common import finish, header, load_pixels, local_cluster, parser, pixel_parquet, timed

MODULE = "benchmarks.overlap_knn"


def exact_neighbours(arrays: tuple[np.ndarray, ...], k: int, block: int) -> np.ndarray:
    """Positions of the exact k nearest neighbours of every row (in memory, blocks of rows)."""
    X, codes, pos = arrays
    parts = [tuple(a[i : i + block] for a in arrays) for i in range(0, len(X), block)]
    out = []
    for query in parts:
        found = [block_candidates(query, ref, k) for ref in parts]
        out.append(merge_candidates(found)[1])
    return np.vstack(out)


def nndescent_neighbours(X: np.ndarray, k: int, seed: int) -> np.ndarray:
    """pynndescent's k approximate nearest neighbours of every row (the row itself left out)."""
    from pynndescent import NNDescent

    from soak_dask.split.overlap import without_self

    graph, _ = NNDescent(X, n_neighbors=k + 1, random_state=seed, n_jobs=1).neighbor_graph
    return without_self(graph, k)


def measure(source: str, k: int, seed: int, n_workers: int) -> dict:
    """One size: the two methods' seconds, recall and agreement of degrees."""
    table = load_pixels(source, subset=None, exclude=["x", "y", "polygon", "region"])
    with local_cluster(n_workers) as client:

        def run() -> pd.DataFrame:
            lazy = overlap_degrees(table, k).data[[POSITION, DO_COLUMN]]
            return client.compute(lazy).result()

        frame, exact_s = timed(run)
    frame = frame.sort_values(POSITION)
    mean, sd, lengths = feature_scaling(table)
    part = with_positions(table, lengths).data.compute()
    classes = pd.Index(sorted(part[table.label].unique()))
    arrays = block_arrays(part, table.features, table.label, classes, mean, sd)
    exact = exact_neighbours(arrays, k, 20_000)
    nndescent_neighbours(arrays[0][:2000], k, seed)  # numba compiles here, outside the timing
    approx, approx_s = timed(lambda: nndescent_neighbours(arrays[0], k, seed))
    hits = [len(np.intersect1d(a, b)) for a, b in zip(exact, approx, strict=True)]
    codes = arrays[1]
    same_do = degrees(codes, codes[approx]) == frame[DO_COLUMN].to_numpy()
    return {
        "rows": len(part),
        "partitions": table.data.npartitions,
        "exact_s": round(exact_s, 1),
        "nndescent_s": round(approx_s, 1),
        "recall": round(float(np.sum(hits)) / exact.size, 4),
        "same_degree": round(float(same_do.mean()), 4),
        "mean_abs_degree_diff": round(
            float(np.abs(degrees(codes, codes[approx]) - frame[DO_COLUMN].to_numpy()).mean()), 4
        ),
    }


def main(argv: list[str] | None = None) -> dict:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, nargs="+", default=[10_000, 50_000])
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--rows-per-file", type=int, default=12_500, help="rows per partition")
    args = p.parse_args(argv)
    if args.quick:
        args.rows = [5_000]
    facts = header("degree of overlap: exact k-NN vs pynndescent", MODULE, argv, args)
    rows = []
    for n in args.rows:
        source = pixel_parquet(args.workdir, n, args.seed, rows_per_file=args.rows_per_file)
        rows.append(measure(source, args.k, args.seed, args.workers))
        print(rows[-1], flush=True)
    return finish("overlap_knn", args, facts, rows, [])


if __name__ == "__main__":
    main()
