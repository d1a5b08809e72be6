"""kNNDM in feature space: N training points of D features (CAST's PR #167 case: N = 10,000,
D = 128, target ≤ 20 s on one core), W against a brute-force reference on the same inputs.

1. **Nearest neighbours side by side**: Gj* of one fold assignment (each point's nearest point
   of another fold) by the k-d trees the 2-D path uses, and by the exact matrix search that
   ``soak_dask.split.knndm.cv_distances`` now takes above ``TREE_DIMS`` dimensions; and the
   largest difference between the two.
2. **knndm_folds, each clustering side by side** (``--clustering``, default both: a k-means
   fit per cluster count, and one Ward tree cut at every count, CAST's default):
   ``--candidates`` cluster counts on one core (Dask's synchronous scheduler), wall-clock
   and CPU seconds (the CPU seconds of this process: what one core spends, whatever else
   runs on the machine), the seconds per candidate, and W against W recomputed from scipy's
   ``cdist`` (brute force) with the chosen folds. numba's kernels are compiled (or loaded
   from their cache) by a small run first, outside the timing.

Run: ``python -m benchmarks.knndm_features`` (``--quick``: N = 2,000, D = 32, 5 counts).
"""

from __future__ import annotations

import argparse
import time

import dask
import numpy as np
import pandas as pd
from scipy.spatial import cKDTree
from scipy.spatial.distance import cdist
from scipy.stats import wasserstein_distance

import soak_dask as sd
from soak_dask.split.knndm import cv_distances

from .common import Ratio, finish, header, parser


def scene(n: int, d: int, seed: int) -> tuple[sd.Table, pd.DataFrame, list[str]]:
    """Training points in 20 clusters of a ``d``-dimensional feature space, prediction points
    spread over it (as many), and the feature names."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(20, d)) * 3
    train = centres[rng.integers(0, 20, n)] + rng.normal(size=(n, d))
    names = [f"f{i}" for i in range(d)]
    df = pd.DataFrame(train, columns=names).assign(
        label=rng.normal(size=n), x=rng.uniform(size=n), y=rng.uniform(size=n)
    )
    table = sd.load_table(df, label="label", coords=["x", "y"], features=names)
    return table, pd.DataFrame(rng.normal(size=(n, d)) * 3, columns=names), names


def tree_gjstar(points: np.ndarray, folds: np.ndarray) -> np.ndarray:
    """Gj* by one k-d tree per fold (what ``cv_distances`` does in two dimensions)."""
    out = np.full(len(points), np.inf)
    for f in np.unique(folds):
        other = folds != f
        out[other] = np.minimum(out[other], cKDTree(points[folds == f]).query(points[other])[0])
    return out


def brute_w(points: np.ndarray, folds: np.ndarray, gij: np.ndarray) -> float:
    """W of ``folds`` from scipy's ``cdist``: the reference the issue asks W to match."""
    d = cdist(points, points)
    d[folds[:, None] == folds[None, :]] = np.inf
    return float(wasserstein_distance(d.min(axis=1), gij))


def timed_knndm(table: sd.Table, prediction: pd.DataFrame, args, clustering: str) -> tuple:
    """``knndm_folds`` on one core: the result, wall-clock and CPU seconds."""
    with dask.config.set(scheduler="synchronous"):
        start, cpu = time.perf_counter(), time.process_time()
        res = sd.knndm_folds(
            table, prediction, n_folds=10, space="feature", seed=args.seed,
            n_candidates=args.candidates, clustering=clustering,
        )  # fmt: skip
        return res, time.perf_counter() - start, time.process_time() - cpu


def main(argv: list[str] | None = None) -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=10_000, help="training points (10,000)")
    p.add_argument("--d", type=int, default=128, help="features (128)")
    p.add_argument("--candidates", type=int, default=100, help="cluster counts tried (100)")
    p.add_argument(
        "--clustering", nargs="+", choices=("kmeans", "hierarchical"),
        default=["kmeans", "hierarchical"], help="clusterings timed side by side (both)",
    )  # fmt: skip
    args = p.parse_args(argv)
    if args.quick:
        args.n, args.d, args.candidates = 2_000, 32, 5
    facts = header("kNNDM in feature space", "benchmarks.knndm_features", argv, args)
    table, prediction, names = scene(args.n, args.d, args.seed)
    points = table.data[names].compute().to_numpy()
    points = (points - points.mean(axis=0)) / points.std(axis=0, ddof=1)
    folds = np.random.default_rng(args.seed).integers(1, 11, len(points))
    start = time.perf_counter()
    by_tree = tree_gjstar(points, folds)
    tree_s = time.perf_counter() - start
    start = time.perf_counter()
    by_matrix = cv_distances(points, folds)
    matrix_s = time.perf_counter() - start
    rows = [
        {"step": "Gj* k-d trees", "seconds": round(tree_s, 2)},
        {"step": "Gj* matrix search", "seconds": round(matrix_s, 2),
         "max |difference|": float(np.abs(by_tree - by_matrix).max())},
    ]  # fmt: skip
    ratios = [Ratio("k-d trees / matrix search (Gj*)", tree_s / matrix_s, 1.0, True)]
    small, small_area, _ = scene(60, args.d, args.seed)
    for clustering in args.clustering:
        timed_knndm(small, small_area, argparse.Namespace(seed=1, candidates=3), clustering)
        res, seconds, cpu = timed_knndm(table, prediction, args, clustering)
        chosen = res.table.data[res.column].compute().to_numpy()
        reference = brute_w(points, chosen, res.Gij)
        rows.append(
            {"step": f"knndm_folds {clustering}, {args.candidates} candidates",
             "seconds": round(seconds, 1), "cpu seconds": round(cpu, 1),
             "per candidate": round(seconds / args.candidates, 2), "chosen q": res.n_clusters,
             "W": res.W, "W brute force": reference}
        )  # fmt: skip
        ratios.append(Ratio(f"knndm_folds {clustering} CPU seconds (one core)", cpu, 20.0, False))
        ratios.append(
            Ratio(f"{clustering} |W / W brute force - 1|", abs(res.W / reference - 1), 0.01, False)
        )
    finish("knndm_features", args, facts, rows, ratios)


if __name__ == "__main__":
    main()
