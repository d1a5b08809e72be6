"""a. soak on a 2-worker LocalCluster vs the plain pandas + scikit-learn loop a user writes.

Same Parquet data, same folds (soak_dask's own assignment, computed once and handed to the
loop for free), same learner. The loop reads the files into one pandas DataFrame and fits all
3·S·K train sets one after another in one process; soak reads the files on the cluster, assigns
folds and fits only the distinct train sets (2·S·K + K). Both must give the same test errors.

Two learners: a row-by-row one (default logistic regression: every fit is an lbfgs run on its
rows) and an additive one (default LDA), which soak fits from one pass of block statistics.
"""

from __future__ import annotations

import argparse
import glob
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, clone
from threadpoolctl import threadpool_limits

import soak_dask as sd

from .common import (
    Ratio,
    finish,
    header,
    load_pixels,
    local_cluster,
    parser,
    pixel_parquet,
    timed,
)

MODULE = "benchmarks.vs_sklearn"
TARGET = 3.0
N_WORKERS = 2


def read_like_a_user(source: str) -> pd.DataFrame:
    """All files in one pandas DataFrame, in the order soak_dask reads them."""
    return pd.concat([pd.read_parquet(f) for f in sorted(glob.glob(source))], ignore_index=True)


def user_loop(
    df: pd.DataFrame,
    fold: np.ndarray,
    features: tuple[str, ...],
    estimator: BaseEstimator,
    n_folds: int,
) -> pd.DataFrame:
    """Every (test subset, fold, train type) fitted in turn with boolean masks: 3·S·K fits."""
    X = df[list(features)].to_numpy(np.float64)
    y = df["label"].to_numpy()
    region = df["region"].to_numpy()
    records = []
    for sigma in sorted(pd.unique(region)):
        same_subset = region == sigma
        for k in range(1, n_folds + 1):
            in_fold = fold == k
            test = same_subset & in_fold
            train_sets = {
                "same": same_subset & ~in_fold,
                "other": ~same_subset & ~in_fold,
                "all": ~in_fold,
            }
            for train_type, train in train_sets.items():
                model = clone(estimator).fit(X[train], y[train])
                error = 100.0 * np.mean(model.predict(X[test]) != y[test])
                records.append(
                    {"test_subset": sigma, "fold": k, "train_type": train_type, "error": error}
                )
    return pd.DataFrame(records)


def max_error_difference(loop: pd.DataFrame, res: Any, learner: str) -> float:
    """Largest |loop error − soak error| over all splits (percentage points)."""
    ours = res["error"].sel(learner=learner).to_dataframe().reset_index()
    both = loop.merge(ours, on=["test_subset", "fold", "train_type"], suffixes=("_loop", ""))
    if len(both) != len(loop):
        raise AssertionError(f"splits differ: {len(loop)} in the loop, {len(both)} matched")
    return float(np.max(np.abs(both["error_loop"] - both["error"])))


#: --loop-threads choice -> thread limits of the loop's runs (None: as the pools come).
LOOP_THREADS: dict[str, list[int | None]] = {"both": [None, 1], "default": [None], "1": [1]}


def loop_key(threads: int | None) -> str:
    return "loop_s" if threads is None else f"loop_{threads}thread_s"


def compare(
    client: Any,
    source: str,
    df: pd.DataFrame,
    fold: np.ndarray,
    learner: str,
    args: argparse.Namespace,
) -> dict[str, Any]:
    """Time the user's loop and soak for one built-in learner; check their errors agree.

    The loop runs once per thread setting, the first before soak and the others after it (so
    a change of machine load hits both sides): with the BLAS/OpenMP thread pools as they come
    (2 threads here), and limited to one thread, which is faster on a loaded machine. The
    faster run is the loop's time.
    """
    estimator = sd.builtin_learner(learner, "classification", args.seed)
    features = load_pixels(source).features

    def loop(threads: int | None) -> tuple[pd.DataFrame, float]:
        with threadpool_limits(limits=threads):
            return timed(lambda: user_loop(df, fold, features, estimator, args.folds))

    first, *others = LOOP_THREADS[args.loop_threads]
    loops = {first: loop(first)}
    res, soak_seconds = timed(
        lambda: sd.soak(
            load_pixels(source),
            {learner: learner},
            n_folds=args.folds,
            seed=args.seed,
            options=sd.RunOptions(client=client, progress=False),
        )
    )
    loops.update({threads: loop(threads) for threads in others})
    diff = max(max_error_difference(errors, res, learner) for errors, _ in loops.values())
    if diff > args.tolerance:
        raise AssertionError(
            f"{learner}: soak and the loop disagree by {diff:.3g} % error "
            f"(tolerance {args.tolerance})"
        )
    fit_seconds = res["fit_seconds"].sel(learner=learner).to_dataframe()
    errors = loops[first][0]
    return {
        "learner": learner,
        "loop_fits": len(errors),
        "soak_fits": int(res.attrs["n_fits"]),
        **{loop_key(threads): seconds for threads, (_, seconds) in loops.items()},
        "soak_s": round(soak_seconds, 2),
        "soak_fit_s_sum": round(
            float(fit_seconds.groupby("fit_id")["fit_seconds"].first().sum()), 2
        ),
        "max_err_diff": diff,
        "mean_error": round(float(errors["error"].mean()), 3),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1_000_000, help="rows (default 1M)")
    p.add_argument("--folds", type=int, default=10, help="K (default 10)")
    p.add_argument("--learner", default="logistic", help="row-by-row built-in learner")
    p.add_argument(
        "--additive", default="lda", help="additive built-in learner ('' to leave it out)"
    )
    p.add_argument(
        "--tolerance", type=float, default=1e-9, help="allowed |error difference| in percent"
    )
    p.add_argument(
        "--loop-threads",
        choices=sorted(LOOP_THREADS),
        default="both",
        help="BLAS threads of the loop: as they come, 1, or both (default)",
    )
    args = p.parse_args(argv)
    if args.quick:
        args.rows = min(args.rows, 40_000)
    facts = header("a. soak vs the pandas + scikit-learn loop", MODULE, argv, args)
    source = pixel_parquet(args.workdir, args.rows, args.seed)
    rows = []
    with local_cluster(N_WORKERS) as client:
        folded = sd.assign_folds(load_pixels(source), args.folds, args.seed)
        fold_frame = folded.data[[folded.subset, folded.fold]].compute()
        df, read_seconds = timed(lambda: read_like_a_user(source))
        if not np.array_equal(df["region"].to_numpy(), fold_frame[folded.subset].to_numpy()):
            raise AssertionError("pandas and soak_dask read the rows in different orders")
        fold = fold_frame[folded.fold].to_numpy()
        for learner in [args.learner, args.additive]:
            if learner:
                row = compare(client, source, df, fold, learner, args)
                for threads in LOOP_THREADS[args.loop_threads]:  # the user reads the files too
                    row[loop_key(threads)] = round(row[loop_key(threads)] + read_seconds, 2)
                rows.append(row)
                print(f"   done: {row}", flush=True)
    ratios = [
        Ratio(
            f"{r['learner']}: faster loop s / soak s",
            min(r[loop_key(t)] for t in LOOP_THREADS[args.loop_threads]) / r["soak_s"],
            TARGET,
            True,
        )
        for r in rows
    ]
    # Row-by-row fits are CPU-bound: the best soak can do is fewer fits on more cores.
    bound = rows[0]["loop_fits"] / rows[0]["soak_fits"] * N_WORKERS
    print(
        f"   pandas read: {read_seconds:.2f} s (included in loop_s); ideal speed-up of "
        f"row-by-row fits = {rows[0]['loop_fits']}/{rows[0]['soak_fits']} fits x "
        f"{N_WORKERS} workers = {bound:.2f}"
    )
    extra = {"rows_in_table": args.rows, "read_seconds": read_seconds, "ideal_speedup": bound}
    return finish("a", args, facts, rows, ratios, extra)


if __name__ == "__main__":
    main()
