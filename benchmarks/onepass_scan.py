"""b. one-pass learners on a large Parquet table: soak's total time ÷ one Dask scan of the files.

soak with additive learners (default featureless + LDA) gets all 2·S·K + K fits from one pass of
per-(subset, fold, class) statistics, then scores the test blocks. Its total time (fold
assignment, block counts, statistics, scoring) is divided by the time of one scan of the same
files on the same cluster: the feature column sums, ``ddf[features].sum().compute()``. Scans run
before and after each soak run; the ratio uses their mean, so a change of load hits both sides.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import soak_dask as sd

from .common import (
    Ratio,
    finish,
    header,
    load_pixels,
    local_cluster,
    parser,
    pixel_parquet,
    task_seconds,
    timed,
)

MODULE = "benchmarks.onepass_scan"
TARGET = 1.5


def scan(source: str) -> float:
    """Seconds of one Dask scan of the feature columns (their sums), on the current client."""
    data = load_pixels(source)
    return timed(lambda: data.data[list(data.features)].sum().compute())[1]


def run_soak(client: Any, source: str, learners: list[str], args: Any, persist: bool) -> dict:
    """One soak run; its seconds and the worker compute seconds per task kind."""
    with task_seconds(client) as by_task:
        res, seconds = timed(
            lambda: sd.soak(
                load_pixels(source),
                {name: name for name in learners},
                n_folds=args.folds,
                seed=args.seed,
                measures=None if args.measures == "all" else args.measures,
                options=sd.RunOptions(client=client, progress=False, persist=persist, onepass=True),
            )
        )
    errors = res["error"].mean(["test_subset", "fold"]).to_pandas().round(2)
    return {
        "seconds": seconds,
        "n_fits": int(res.attrs["n_fits"]),
        "by_task": by_task,
        "errors": errors.to_dict(),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=10_000_000, help="rows (default 10M)")
    p.add_argument("--folds", type=int, default=10, help="K (default 10)")
    p.add_argument(
        "--learners", default="featureless,lda", help="additive built-in learners, comma-separated"
    )
    p.add_argument(
        "--persist",
        default="no,yes",
        help="soak persist= settings to run, comma-separated (default: no,yes)",
    )
    p.add_argument(
        "--measures", default="all", help="measures, comma-separated (default: all five)"
    )
    args = p.parse_args(argv)
    if args.quick:
        args.rows = min(args.rows, 200_000)
    facts = header("b. one-pass soak ÷ one scan", MODULE, argv, args)
    source = pixel_parquet(args.workdir, args.rows, args.seed)
    learners = args.learners.split(",")
    rows, ratios, tasks = [], [], {}
    with local_cluster(2) as client:
        scans = [scan(source)]
        for setting in args.persist.split(","):
            persist = {"yes": True, "no": False}[setting]
            out = run_soak(client, source, learners, args, persist)
            scans.append(scan(source))
            one_scan = float(np.mean(scans[-2:]))
            rows.append(
                {
                    "persist": persist,
                    "fits": out["n_fits"],
                    "soak_s": round(out["seconds"], 2),
                    "scan_s": round(one_scan, 2),
                    "ratio": round(out["seconds"] / one_scan, 2),
                }
            )
            ratios.append(Ratio(f"persist={persist}: soak/scan", rows[-1]["ratio"], TARGET, False))
            tasks[f"persist={persist}"] = out["by_task"]
            print(f"   done: {rows[-1]}; mean errors {out['errors']}", flush=True)
            print(f"   worker compute seconds by task: {_top(out['by_task'])}", flush=True)
    return finish("b", args, facts, rows, ratios, {"scans": scans, "task_seconds": tasks})


def _top(by_task: dict[str, float], n: int = 8) -> str:
    return ", ".join(f"{k} {v:.1f}" for k, v in list(by_task.items())[:n])


if __name__ == "__main__":
    main()
