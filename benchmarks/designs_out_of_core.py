"""Every design out of core (issue 24's table): each run on a Parquet table larger than a
worker's memory limit, ``persist=False``, learner ``lda`` (additive: block statistics), beside
one scan of the same files in the same cluster.

For each design: completed / the error's type (``FitMemoryError``: refused up front, as the
engine must; ``KilledWorker``: a task that gathered too much), seconds, seconds ÷ one scan,
worker processes seen (more than the workers: some were restarted) and each worker's peak
resident memory (sampled every 0.5 s). A run still going after ``--timeout`` s is stopped and
reported as such.

    python -m benchmarks.designs_out_of_core --rows 10000000 --memory-limit 600MB
    python -m benchmarks.designs_out_of_core --quick
    python -m benchmarks.designs_out_of_core --only "evaluate cv" transfer
"""

from __future__ import annotations

import _thread
import math
import tempfile
import threading
from collections.abc import Callable
from typing import Any

from dask.utils import format_bytes, parse_bytes

import soak_dask as sd

from .common import (
    MemorySampler,
    disk_bytes,
    finish,
    header,
    load_pixels,
    local_cluster,
    parser,
    pixel_parquet,
    timed,
)
from .out_of_core import table_bytes_per_row

MODULE = "benchmarks.designs_out_of_core"
N_WORKERS = 2
LDA = {"lda": "lda"}


def designs(
    client: Any, models: str, measures: list[str] | None = None, test_split: float = 0.2
) -> dict[str, Callable[[sd.Table], Any]]:
    """Each design of the issue's table, as a call on the loaded table (``measures``: each
    design's default when None; ``test_split``: the share the test split design reserves)."""
    base = {"options": sd.RunOptions(client=client, progress=False, persist=False)}
    # compare_sampling scores the error its MAI is built on: it takes no measures
    run = {**base, "measures": measures} if measures else base

    def ev(**kw: Any) -> Callable[[sd.Table], Any]:
        return lambda t: sd.evaluate(t, LDA, **run, **kw)

    return {
        "evaluate cv 5": ev(outer="cv", outer_folds=5),
        "evaluate repeated_cv 3x5": ev(outer="repeated_cv", outer_folds=5, outer_repeats=3),
        "evaluate subsampling x10": ev(outer="subsampling", outer_repeats=10),
        "evaluate bootstrap x10": ev(outer="bootstrap", outer_repeats=10),
        f"evaluate cv 5, test_split {test_split:g}, models": ev(
            outer="cv", outer_folds=5, test_split=test_split, models=models
        ),
        "transfer 5 folds": lambda t: sd.transfer(t, LDA, n_folds=5, **run),
        "search_subsets 5 folds": lambda t: sd.search_subsets(t, LDA, n_folds=5, **run),
        "split_sensitivity 5 trials x 5 folds": lambda t: sd.split_sensitivity(
            t, LDA, design=sd.SplitTrials(n_repeats=5, n_folds=5), **run
        ),
        "compare_sampling random x10": lambda t: sd.compare_sampling(
            t, LDA, design=sd.SamplingSplits(methods=["random"], n_repeats=10), **base
        ),
        "compare_sampling random x10 + overlap (blockwise)": lambda t: sd.compare_sampling(
            t,
            LDA,
            design=sd.SamplingSplits(methods=["random", "overlap"], n_repeats=10, knn="blockwise"),
            **base,
        ),
    }


def attempt(client: Any, call: Callable[[], Any], timeout: float, limit: int) -> dict:
    """``call()`` under the memory sampler and a time-out: outcome, seconds, workers, their
    memory at rest and peaks. A run whose workers all stay paused stops itself
    (``soak_dask.run.stall``: reported as ``WorkerMemoryStall``)."""
    fired = threading.Event()

    def stop() -> None:
        fired.set()
        _thread.interrupt_main()

    timer = threading.Timer(timeout, stop)
    row: dict[str, Any] = {}
    with MemorySampler(client) as sampler:
        timer.start()
        try:
            _, seconds = timed(call)
            row.update(outcome="completed", seconds=round(seconds, 1))
        except (Exception, KeyboardInterrupt) as err:  # reported, not raised
            stopped = fired.is_set()
            row.update(
                outcome=f"stopped after {timeout:g} s" if stopped else type(err).__name__,
                error=f"{type(err).__name__}: {err}"[:400],
            )
        finally:
            timer.cancel()
    peaks = sampler.peaks
    row.update(
        workers_seen=len(peaks),
        restarts=max(0, len(peaks) - N_WORKERS),
        rest_over_limit=round(max(sampler.first.values(), default=0) / limit, 2),
        peak_over_limit=round(max(peaks.values(), default=0) / limit, 2),
    )
    return row


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--memory-limit", default="600MB", help="memory_limit per worker")
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--rows-per-file", type=int, default=500_000, help="rows per partition")
    p.add_argument("--timeout", type=float, default=300.0, help="stop a run after this many s")
    p.add_argument("--only", nargs="*", help="run the designs whose names start so")
    p.add_argument("--skip", nargs="*", help="skip the designs whose names start so")
    p.add_argument("--measures", nargs="*", help="the measures of every design (default: each's)")
    p.add_argument("--test-split", type=float, default=0.2, help="the test split design's share")
    p.add_argument("--fresh-workers", action="store_true",
                   help="restart the workers before each design")  # fmt: skip
    args = p.parse_args(argv)
    if args.quick:
        args.rows, args.rows_per_file, args.memory_limit = 200_000, 50_000, "2GB"
    facts = header("every design out of core", MODULE, argv, args)
    source = pixel_parquet(
        args.workdir, args.rows, args.seed, math.ceil(args.rows / 2_000_000), args.rows_per_file
    )
    limit = parse_bytes(args.memory_limit)
    per_row = table_bytes_per_row(args.workdir, args.seed)
    size = {
        "rows": args.rows,
        "parquet_on_disk": format_bytes(disk_bytes(source)),
        "table_in_pandas": format_bytes(args.rows * per_row),
        "worker_limit": format_bytes(limit),
        "table_over_total_worker_memory": round(args.rows * per_row / (N_WORKERS * limit), 2),
    }
    print(f"   data: {size}", flush=True)
    rows = []
    with local_cluster(N_WORKERS, memory_limit=args.memory_limit) as client:
        client.run(lambda: None)
        table = load_pixels(source)
        features = table.data[list(table.features)]
        with tempfile.TemporaryDirectory() as tmp:
            calls = designs(client, f"{tmp}/models", args.measures, args.test_split)
            for name, make in calls.items():
                if args.only and not any(name.startswith(o) for o in args.only):
                    continue
                if args.skip and any(name.startswith(o) for o in args.skip):
                    continue
                if args.fresh_workers:
                    client.restart()
                scan = timed(lambda: features.sum().compute())[1]
                row = {"design": name, "scan_s": round(scan, 2)}
                row.update(attempt(client, lambda m=make: m(load_pixels(source)),
                                   args.timeout, limit))  # fmt: skip
                if "seconds" in row:
                    row["scans"] = round(row["seconds"] / scan, 1)
                rows.append(row)
                print(f"   done: {row}", flush=True)
                if row["outcome"] != "completed":
                    client.restart()  # stops what is left of it; the next starts on fresh workers
    shown = [{k: v for k, v in r.items() if k != "error"} for r in rows]
    return finish("designs_out_of_core", args, facts, shown, [], {"data": size, "runs": rows})


if __name__ == "__main__":
    main()
