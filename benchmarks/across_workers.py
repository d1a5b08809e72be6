"""A learner trained across the workers (issue 41, item 3): xgboost's Dask estimator (the
built-in ``xgboost``) on train sets larger than one worker's memory.

1. *Larger than a worker*: ``soak(table, ["xgboost"], n_folds=2, train_types=["all"])`` on the
   generated pixel table (20 float32 bands), ``--workers`` single-threaded workers of
   ``--memory-limit`` each, ``persist=False``: each fit's train set (half the table) is a
   multiple of one worker's memory. Beside it, in the same run, the same train sets for a
   learner fitted in one task (``hist_gradient_boosting``): refused up front by the memory
   check, as it must be. Outcome, seconds, workers restarted, each worker's peak ÷ its limit,
   and the bytes a worker held per train value of its share (what ``across_bytes`` assumes).
2. *Within noise of in memory*: on a small table, the same learner trained across two workers
   and fitted in memory (``xgboost.XGBClassifier``, same parameters) on the same train rows
   (the folds given as a column): each fold's error, and the largest gap beside the SD of the
   errors over the folds.

    python -m benchmarks.across_workers
    python -m benchmarks.across_workers --quick
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from dask.utils import format_bytes, parse_bytes

import soak_dask as sd
from soak_dask.run.across_workers import FEATURE_BYTES

from .common import (
    MemorySampler,
    Ratio,
    finish,
    header,
    load_pixels,
    local_cluster,
    parser,
    pixel_parquet,
    timed,
)

MODULE = "benchmarks.across_workers"
OPTIONS = {"n_folds": 2, "train_types": ["all"]}
OPTIONS["options"] = sd.RunOptions(progress=False, persist=False)


def larger_than_a_worker(source: str, learner: str, args: Any) -> dict[str, Any]:
    """``learner`` on train sets larger than a worker, on a cluster of its own."""
    limit = parse_bytes(args.memory_limit)
    table = load_pixels(source, duplicates="allow")
    value_bytes = table.data[list(table.features)]._meta.dtypes.map(lambda d: d.itemsize).sum()
    train_rows = args.rows // 2
    row = {"learner": learner, "train_rows": train_rows}
    row["train_set"] = format_bytes(train_rows * value_bytes)
    row["train_set_over_one_worker"] = round(train_rows * value_bytes / limit, 2)
    with local_cluster(args.workers, memory_limit=args.memory_limit) as client:
        resting = _rss(client)
        with MemorySampler(client) as sampler:
            try:
                res, seconds = timed(lambda: sd.soak(table, [learner], seed=args.seed, **OPTIONS))
                error = float(res["error"].sel(learner=learner).mean())
                row.update(outcome="completed", seconds=round(seconds, 1), error=round(error, 2))
            except Exception as err:  # noqa: BLE001 -- reported
                row.update(outcome=type(err).__name__, error_message=str(err)[:300])
        peaks = sampler.peaks
    row["restarts"] = max(0, len(peaks) - args.workers)
    row["peak_over_limit"] = round(max(peaks.values(), default=0) / limit, 2)
    if row["outcome"] == "completed" and learner == "xgboost":
        held = max(peaks.values()) - max(resting.values())
        share = math.ceil(train_rows / args.workers) * len(table.features)
        row["held_bytes_per_value"] = round(held / share, 1)
    return row


def _rss(client: Any) -> dict[str, int]:
    import psutil

    return client.run(lambda: psutil.Process().memory_info().rss)


def within_noise(client: Any, n: int, seed: int) -> dict[str, Any]:
    """Each fold's error of xgboost trained across the workers and in memory, same rows."""
    import xgboost

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 8))
    signal = X[:, 0] - X[:, 1] * X[:, 2] + np.sin(2 * X[:, 3]) + 0.7 * rng.normal(size=n)
    frame = pd.DataFrame(X, columns=[f"b{i}" for i in range(8)])
    frame = frame.assign(y=np.where(signal > 0, "yes", "no"), fold=rng.integers(1, 6, n))
    table = sd.load_table(frame, label="y", fold="fold")
    res = sd.soak(table, ["xgboost"], seed=seed, options=sd.RunOptions(progress=False))
    across = res["error"].sel(learner="xgboost", train_type="same").values.ravel()
    features = [f"b{i}" for i in range(8)]
    local = []
    for k in range(1, 6):
        train, test = frame[frame["fold"] != k], frame[frame["fold"] == k]
        model = xgboost.XGBClassifier(random_state=seed).fit(train[features], train["y"] == "yes")
        local.append(100 * float(np.mean(model.predict(test[features]) != (test["y"] == "yes"))))
    gaps = across - np.array(local)
    return {
        "rows": n,
        "error_across": [round(e, 2) for e in across],
        "error_in_memory": [round(e, 2) for e in local],
        "largest_gap": round(float(np.abs(gaps).max()), 2),
        "sd_over_folds": round(float(np.std(local, ddof=1)), 2),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=12_000_000)
    p.add_argument("--rows-per-file", type=int, default=250_000, help="rows per partition")
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--memory-limit", default="1GB", help="memory_limit per worker")
    p.add_argument("--noise-rows", type=int, default=100_000)
    args = p.parse_args(argv)
    if args.quick:
        args.rows, args.rows_per_file, args.noise_rows = 400_000, 50_000, 20_000
    facts = header("xgboost trained across the workers", MODULE, argv, args)
    source = pixel_parquet(
        args.workdir, args.rows, args.seed, math.ceil(args.rows / 2_000_000), args.rows_per_file
    )
    rows = [larger_than_a_worker(source, n, args) for n in ("xgboost", "hist_gradient_boosting")]
    with local_cluster(2) as client:
        noise = within_noise(client, args.noise_rows, args.seed)
    print(f"   within noise: {noise}")
    xgb = rows[0]
    ratios = [
        Ratio(
            "train set ÷ one worker's memory, completed",
            xgb["train_set_over_one_worker"] if xgb["outcome"] == "completed" else 0.0,
            3.0,
            True,
        ),  # fmt: skip
        Ratio(
            "largest fold gap ÷ SD over folds",
            noise["largest_gap"] / noise["sd_over_folds"],
            1.0,
            False,
        ),  # fmt: skip
    ]
    extra = {"within_noise": noise, "feature_bytes_assumed": FEATURE_BYTES}
    return finish(MODULE, args, facts, rows, ratios, extra)


if __name__ == "__main__":
    main()
