"""One-pass fits beyond SOAK: evaluate (cv, bootstrap) with LDA, one pass vs each fit on its rows.

``evaluate`` fits additive learners (LDA here, inside evaluate's default prior correction) from
per-fit statistics made in one pass over the table -- the bootstrap's Poisson counts as row
weights -- and scores every fit in a second pass (``soak_dask.run.fit_stats``). Beside it, in
the same run on the same cluster: the same evaluate with every fit gathered on its train rows
(``WholeTrainSet``, one task per fit), and one scan of the same files (the feature column sums).
Reported: seconds, and seconds in scans (``seconds / scan``); the outer loop (``outer_seconds``)
apart from the final model that evaluate fits on all rows for the bootstrap's .632 estimates.
"""

from __future__ import annotations

from typing import Any
from unittest import mock

import numpy as np

import soak_dask as sd
from soak_dask.run.strategies import OnePass

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

MODULE = "benchmarks.onepass_designs"
DESIGNS = {"cv": {"outer_folds": 5}, "bootstrap": {"outer_repeats": 10}}


def scan(source: str) -> float:
    """Seconds of one Dask scan of the feature columns (their sums), on the current client."""
    data = load_pixels(source)
    return timed(lambda: data.data[list(data.features)].sum().compute())[1]


def run_evaluate(client: Any, source: str, outer: str, onepass: bool, args: Any) -> dict:
    """One evaluate run: seconds, outer-loop seconds, errors and compute seconds by task."""

    def call():
        return sd.evaluate(
            load_pixels(source),
            {"lda": "lda"},
            outer=outer,
            seed=args.seed,
            **DESIGNS[outer],
            options=sd.RunOptions(client=client, progress=False, persist=args.persist),
        )

    with task_seconds(client) as by_task:
        if onepass:
            res, seconds = timed(call)
        else:  # every fit on its gathered train rows, as before one-pass designs
            with mock.patch.object(OnePass, "accepts", lambda *a: False):
                res, seconds = timed(call)
    return {
        "seconds": seconds,
        "outer_seconds": float(res.attrs["outer_seconds"]),
        "n_fits": int(res.attrs["n_fits"]),
        "error": res["error"].values.ravel(),
        "by_task": by_task,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1_500_000, help="rows (default 1.5M)")
    p.add_argument("--persist", action="store_true", help="evaluate's persist=True")
    p.add_argument("--designs", default="cv,bootstrap", help="outer designs, comma-separated")
    args = p.parse_args(argv)
    if args.quick:
        args.rows = min(args.rows, 100_000)
    facts = header("one-pass evaluate designs vs fits on rows, ÷ one scan", MODULE, argv, args)
    source = pixel_parquet(args.workdir, args.rows, args.seed)
    rows, tasks = [], {}
    with local_cluster(2) as client:
        scans = [scan(source)]
        for outer in args.designs.split(","):
            out = {}
            for onepass in (True, False):
                out[onepass] = run_evaluate(client, source, outer, onepass, args)
                scans.append(scan(source))
                one_scan = float(np.mean(scans[-2:]))
                run = out[onepass]
                rows.append(
                    {
                        "outer": outer,
                        "strategy": "one pass" if onepass else "whole train set",
                        "fits": run["n_fits"],
                        "seconds": round(run["seconds"], 2),
                        "outer_s": round(run["outer_seconds"], 2),
                        "scan_s": round(one_scan, 2),
                        "scans": round(run["seconds"] / one_scan, 2),
                        "outer_scans": round(run["outer_seconds"] / one_scan, 2),
                    }
                )
                tasks[f"{outer} {rows[-1]['strategy']}"] = run["by_task"]
                print(f"   done: {rows[-1]}", flush=True)
                print(f"   worker compute seconds by task: {_top(run['by_task'])}", flush=True)
            gap = float(np.max(np.abs(out[True]["error"] - out[False]["error"])))
            print(f"   {outer}: largest error difference one pass vs rows {gap:.2e}", flush=True)
            rows[-1]["speedup"] = round(out[False]["seconds"] / out[True]["seconds"], 2)
    return finish("onepass_designs", args, facts, rows, [], {"scans": scans, "tasks": tasks})


def _top(by_task: dict[str, float], n: int = 8) -> str:
    return ", ".join(f"{k} {v:.1f}" for k, v in list(by_task.items())[:n])


if __name__ == "__main__":
    main()
