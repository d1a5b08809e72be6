"""What a worker holds at rest, counted or not: whole-train-set fits on 700 MB workers.

A fit that gathers its rows is checked against the memory a worker has for a task
(``soak_dask.worker_memory``: 80 % of its limit less what it holds at rest, 0.3 GB once
scikit-learn is in). Here the same runs are made twice in one cluster, each on freshly restarted
workers: with the check as it is, and with the memory at rest not counted (80 % of the limit,
as before), for tables whose fits the old check lets through and the new one refuses, and for
one both let through. Each run is ``evaluate(outer="cv", outer_folds=5)`` of logistic
regression (fitted on its gathered rows: train and test rows in one task), ``persist=False``,
the error only. Reported per run: the outcome
(``FitMemoryError``: refused up front; ``KilledWorker`` or ``WorkerMemoryStall``: what the
refusal exists to prevent), seconds, workers restarted and the peak memory over the limit.

    python -m benchmarks.resting_memory
    python -m benchmarks.resting_memory --rows 450000 200000 --memory-limit 700MB
"""

from __future__ import annotations

from typing import Any

from dask.utils import format_bytes, parse_bytes

import soak_dask as sd
from soak_dask.run import final, session
from soak_dask.run.memory import fit_bytes
from soak_dask.workers import WorkerMemory

from .common import finish, header, load_pixels, local_cluster, parser, pixel_parquet
from .designs_out_of_core import attempt

MODULE = "benchmarks.resting_memory"
N_WORKERS = 2
CHECKS = ("memory at rest counted", "memory at rest not counted")


def run(client: Any, source: str) -> Any:
    table = load_pixels(source)
    return sd.evaluate(
        table,
        ["logistic"],
        outer="cv",
        outer_folds=5,
        measures=["error"],
        options=sd.RunOptions(persist=False, progress=False, client=client),
    )


def uncounted(client: Any) -> WorkerMemory | None:
    """The check before the memory at rest was counted: 80 % of the smallest limit."""
    memory = sd.worker_memory(client)
    return None if memory is None else WorkerMemory(memory.limit)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--memory-limit", default="700MB", help="memory_limit per worker")
    p.add_argument("--rows", type=int, nargs="*", default=[450_000, 200_000])
    p.add_argument("--rows-per-file", type=int, default=50_000, help="rows per partition")
    p.add_argument("--timeout", type=float, default=300.0, help="stop a run after this many s")
    args = p.parse_args(argv)
    if args.quick:
        args.rows, args.memory_limit = [20_000], "2GB"
    facts = header("the memory a worker holds at rest", MODULE, argv, args)
    limit = parse_bytes(args.memory_limit)
    rows = []
    with local_cluster(N_WORKERS, memory_limit=args.memory_limit) as client:
        for n in args.rows:
            source = pixel_parquet(args.workdir, n, args.seed, 1, args.rows_per_file)
            for check in CHECKS:
                client.restart()
                client.wait_for_workers(N_WORKERS)  # a run stopped by its time-out lost some
                memory = sd.worker_memory(client)
                saved = session.worker_memory, final.worker_memory
                if check != CHECKS[0]:
                    session.worker_memory = final.worker_memory = uncounted
                try:
                    row = {"rows": n, "check": check, "estimate": format_bytes(fit_bytes(n, 20))}
                    row.update(at_rest=format_bytes(memory.resting), task_free=str(memory))
                    row.update(
                        attempt(client, lambda s=source: run(client, s), args.timeout, limit)
                    )
                finally:
                    session.worker_memory, final.worker_memory = saved
                rows.append(row)
                print(f"   done: {row}", flush=True)
    shown = [{k: v for k, v in r.items() if k not in ("error", "task_free")} for r in rows]
    return finish("resting_memory", args, facts, shown, [], {"runs": rows})


if __name__ == "__main__":
    main()
