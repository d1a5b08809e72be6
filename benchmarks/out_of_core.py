"""c. out of core: Parquet ≈ 3× the total worker memory, on a LocalCluster with a low memory limit.

The table is sized so that its columns, loaded into pandas, take ``--factor`` × the workers'
total ``memory_limit``. soak runs with ``persist=False`` (each pass reads from Parquet) and
additive learners fitted from one pass of block statistics; optionally also a row-by-row learner
on a sample of at most ``--max-train-rows`` train rows. A background thread samples every
worker's resident memory every 0.5 s; the report gives each worker's peak against its limit and
whether the run completed (a run still going after ``--timeout`` seconds is stopped, as by Ctrl-C,
and reported as not completed).
"""

from __future__ import annotations

import _thread
import math
import threading
from typing import Any

import pandas as pd
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
    task_seconds,
    timed,
)

MODULE = "benchmarks.out_of_core"
N_WORKERS = 2
ROUND_ROWS = 1_000_000  # the size is rounded up to whole millions of rows (cached data)
SCENE_ROWS = 5_000_000  # rows generated per call: bounds the generator's memory (~2.5 GB)


def table_bytes_per_row(workdir: Any, seed: int) -> float:
    """In-memory bytes per row of the table's columns (features, label, subset) in pandas."""
    table = load_pixels(pixel_parquet(workdir, 100_000, seed))
    df = table.data.compute()
    return float(df.memory_usage(deep=True).sum() / len(df))


def run(client: Any, source: str, learners: dict[str, Any], args: Any, **kwargs: Any) -> dict:
    """One soak run under the memory sampler; completes or records the failure."""
    row: dict[str, Any] = {"learners": ",".join(learners), **kwargs}
    # A stalled cluster (workers paused at their memory limit) never finishes: stop it.
    fired = threading.Event()

    def stop() -> None:
        fired.set()
        _thread.interrupt_main()

    timer = threading.Timer(args.timeout, stop)
    with MemorySampler(client) as sampler, task_seconds(client) as by_task:
        timer.start()
        try:
            res, seconds = timed(
                lambda: sd.soak(
                    load_pixels(source),
                    learners,
                    n_folds=args.folds,
                    seed=args.seed,
                    measures=args.measures,
                    train_types=args.train_types,
                    options=sd.RunOptions(client=client, progress=False, persist=False, **kwargs),
                )
            )
            row.update(completed=True, seconds=round(seconds, 1), fits=int(res.attrs["n_fits"]))
            errors = res["error"].mean(["test_subset", "fold"]).to_pandas().round(2)
            print(f"   mean error (%):\n{errors}", flush=True)
        except (Exception, KeyboardInterrupt) as err:  # reported (time-out too), not raised
            error = f"{type(err).__name__}: {err}"[:300]
            if fired.is_set():
                error = f"stopped by --timeout {args.timeout:g} s"
            row.update(completed=False, error=error)
        finally:
            timer.cancel()
    limit = parse_bytes(args.memory_limit)
    peaks = sampler.peaks
    row.update(
        workers_seen=len(peaks),
        first_sample=", ".join(format_bytes(v) for v in sampler.first.values()),
        peak_per_worker=", ".join(format_bytes(v) for v in peaks.values()),
        peak_over_limit=round(max(peaks.values(), default=0) / limit, 2),
        samples=sampler.samples,
    )
    print(f"   done: {row}", flush=True)
    print(f"   worker compute seconds by task: {dict(list(by_task.items())[:8])}", flush=True)
    return row


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--memory-limit", default="600MB", help="memory_limit per worker (600MB)")
    p.add_argument("--factor", type=float, default=3.0, help="table size ÷ total worker memory")
    p.add_argument("--rows", type=int, help="rows (default: from --factor)")
    p.add_argument(
        "--rows-per-file",
        type=int,
        default=100_000,
        help="rows per Parquet file = per partition (default 100k: ~10 MB in pandas)",
    )
    p.add_argument("--folds", type=int, default=10, help="K (default 10)")
    p.add_argument("--learners", default="featureless,lda", help="additive built-in learners")
    p.add_argument("--measures", default="error", help="measures, comma-separated (default: error)")
    p.add_argument(
        "--train-types", default="same,other,all", help="train types (default all three)"
    )
    p.add_argument(
        "--timeout", type=float, default=1200.0, help="stop a run after this many s (1200)"
    )
    p.add_argument("--row-learner", default="", help="also a row-by-row learner, e.g. logistic")
    p.add_argument("--max-train-rows", type=int, default=100_000, help="its train sample")
    args = p.parse_args(argv)
    facts = header("c. out of core", MODULE, argv, args)
    per_row = table_bytes_per_row(args.workdir, args.seed)
    total_memory = N_WORKERS * parse_bytes(args.memory_limit)
    if args.rows is None:
        needed = args.factor * total_memory / per_row
        args.rows = 200_000 if args.quick else ROUND_ROWS * math.ceil(needed / ROUND_ROWS)
    scenes = math.ceil(args.rows / SCENE_ROWS)
    source = pixel_parquet(
        args.workdir, args.rows, args.seed, scenes=scenes, rows_per_file=args.rows_per_file
    )
    size = {
        "rows": args.rows,
        "parquet_on_disk": format_bytes(disk_bytes(source)),
        "table_in_pandas": format_bytes(args.rows * per_row),
        "total_worker_memory": format_bytes(total_memory),
        "factor_in_memory": round(args.rows * per_row / total_memory, 2),
        "factor_on_disk": round(disk_bytes(source) / total_memory, 2),
    }
    print(f"   data: {size}", flush=True)
    rows = []
    with local_cluster(N_WORKERS, memory_limit=args.memory_limit) as client:
        client.run(lambda: None)
        additive = {name: name for name in args.learners.split(",") if name}
        if additive:
            rows.append(run(client, source, additive, args, onepass=True))
        if args.row_learner:
            learners = {args.row_learner: args.row_learner}
            rows.append(run(client, source, learners, args, max_train_rows=args.max_train_rows))
    shown = pd.DataFrame(rows).drop(columns="error", errors="ignore").to_dict("records")
    result = finish("c", args, facts, shown, [], {"data": size, "runs": rows})
    print(f"   completed: {all(r['completed'] for r in rows)}")
    return result


if __name__ == "__main__":
    main()
