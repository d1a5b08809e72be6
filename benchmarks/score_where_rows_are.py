"""Score where the rows are (issue 41, item 0): a fit on its gathered train rows returns its
model and its test rows are scored partition by partition, so a row-capped fit no longer
gathers its whole test set.

1. The issue's run: ``soak(["logistic"], n_folds=5, max_train_rows=50_000)`` on the generated
   pixel table (default 6 M rows, 20 bands), 2 workers × 2 GiB, ``persist=False``: outcome,
   seconds, seconds ÷ one scan of the same files, each worker's peak resident memory against
   its limit (the whole run's: its fold assignment included), and the most rows a fit task
   holds (before: the capped train rows plus the fit's test rows, refused up front). The
   table is loaded with ``duplicates="allow"``: the generated files share no row, and the
   load's check of rows repeated across files (``tables.duplicates``) is not what is measured
   (``benchmarks.duplicates_check`` measures it).
2. The small-table fast path (``Batched``: many fits per task, each task gathering the table
   once): its fits scored in their task (as kept) against the same batches scored by a
   scoring pass, on ``evaluate(outer="loo")`` of a small table.

    python -m benchmarks.score_where_rows_are
    python -m benchmarks.score_where_rows_are --quick
"""

from __future__ import annotations

import math
from typing import Any
from unittest import mock

import pandas as pd
from dask.utils import format_bytes, parse_bytes

import soak_dask as sd
from soak_dask.run.fitting import fit_train
from soak_dask.run.strategies import Batched, Context, Pair

from .common import finish, header, load_pixels, local_cluster, parser, pixel_parquet, timed
from .designs_out_of_core import attempt

MODULE = "benchmarks.score_where_rows_are"
N_WORKERS = 2


def capped_run(client: Any, source: str, args: Any) -> dict[str, Any]:
    """The issue's row-capped soak under the memory sampler, beside one scan of the files."""
    how = sd.RunOptions(max_train_rows=args.max_train_rows, client=client, progress=False,
                        persist=False)  # fmt: skip
    options = {"n_folds": 5, "measures": ["error", "auc"], "options": how}
    table = load_pixels(source, duplicates="allow")
    scan = timed(lambda: table.data[list(table.features)].sum().compute())[1]
    row = {"run": f"soak logistic, 5 folds, max_train_rows={args.max_train_rows:,}"}
    row["scan_s"] = round(scan, 2)
    done: dict[str, Any] = {}
    call = lambda: done.setdefault("res", sd.soak(table, ["logistic"], **options))  # noqa: E731
    row.update(attempt(client, call, args.timeout, parse_bytes(args.memory_limit)))
    if "seconds" in row:
        row["scans"] = round(row["seconds"] / scan, 1)
    if "res" in done:  # what a fit task holds now, and held before (its test rows beside)
        cells = done["res"][["fit_id", "n_train", "n_test"]].to_dataframe().reset_index()
        fits = cells.groupby("fit_id").agg(train=("n_train", "max"), test=("n_test", "sum"))
        row["fit_task_rows"] = int(fits["train"].max())
        row["fit_task_rows_before"] = int((fits["train"] + fits["test"]).max())
    return row


def fit_states(parts: list[pd.DataFrame], jobs: list[tuple], run: Any) -> list[Any]:
    """The fitted models of a batch of fits on one small table, gathered once."""
    frame = pd.concat(parts)
    return [fit_train(frame.loc[fit.train.mask(frame)], est, fit, run) for est, fit in jobs]


class BatchedPass(Batched):
    """``Batched``'s fits, many per task, scored by a scoring pass instead of in their task:
    the alternative measured here (not the engine's)."""

    scores_by_pass = True

    def models(self, ctx: Context, pairs: list[Pair]) -> tuple[dict[Pair, Any], list[Pair]]:
        import dask

        parts, fitted = ctx.data.to_delayed(), {}
        for start in range(0, len(pairs), self.size):
            batch = pairs[start : start + self.size]
            jobs = [(ctx.estimators[n], ctx.spec(f, n)) for f, n in batch]
            states = dask.delayed(fit_states, nout=len(jobs), pure=True)(parts, jobs, ctx.run)
            for k, pair in enumerate(batch):
                fitted[pair] = (states[k], jobs[k][1])
        return fitted, []


def batched_runs(client: Any, source: str, args: Any) -> list[dict[str, Any]]:
    """``evaluate(outer="loo")`` on ``--loo-rows`` rows of the first file, scored in the batches'
    tasks and by a scoring pass (best of ``--repeats``)."""
    part = load_pixels(source, duplicates="allow").data.partitions[0].compute()
    small = part.sample(n=args.loo_rows, random_state=args.seed).drop(columns="region")
    frame = sd.load_table(small.reset_index(drop=True), label="label")
    learners = ["logistic", "decision_tree"]
    options = {"outer": "loo", "options": sd.RunOptions(client=client, progress=False)}
    rows, results = [], {}
    for name, strategy in [("in the batch's task", Batched), ("by a scoring pass", BatchedPass)]:
        with mock.patch("soak_dask.run.evaluate.Batched", strategy):
            times = []
            for _ in range(args.repeats):
                res, seconds = timed(lambda: sd.evaluate(frame, learners, **options))
                times.append(seconds)
        results[name] = res
        rows.append({"run": f"evaluate loo, {args.loo_rows} rows, scored {name}",
                     "seconds": round(min(times), 2)})  # fmt: skip
    first, second = results.values()
    same = all(first[v].equals(second[v]) for v in first.data_vars if "seconds" not in v)
    for row in rows:
        row["same_scores"] = same
    return rows


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=6_000_000)
    p.add_argument("--memory-limit", default="2GiB", help="memory_limit per worker")
    p.add_argument("--max-train-rows", type=int, default=50_000)
    p.add_argument("--timeout", type=float, default=1800.0, help="stop a run after this many s")
    p.add_argument("--loo-rows", type=int, default=400, help="rows of the leave-one-out table")
    p.add_argument("--repeats", type=int, default=3, help="repeats of each leave-one-out run")
    args = p.parse_args(argv)
    if args.quick:
        args.rows, args.max_train_rows, args.loo_rows, args.repeats = 300_000, 5_000, 100, 1
    facts = header("score where the rows are", MODULE, argv, args)
    source = pixel_parquet(args.workdir, args.rows, args.seed, math.ceil(args.rows / 2_000_000))
    print(f"   data: {args.rows:,} rows, workers {N_WORKERS} × {args.memory_limit}", flush=True)
    with local_cluster(N_WORKERS, memory_limit=args.memory_limit) as client:
        client.run(lambda: None)
        rows = [capped_run(client, source, args)]
        print(f"   done: {rows[0]}", flush=True)
        rows += batched_runs(client, source, args)
    shown = [{k: v for k, v in r.items() if k != "error"} for r in rows]
    limit = format_bytes(parse_bytes(args.memory_limit))
    return finish("score_where_rows_are", args, facts, shown, [], {"limit": limit, "runs": rows})


if __name__ == "__main__":
    main()
