"""Run a plan's tasks on a distributed client or Dask's local scheduler: stream each fit's
records as it finishes, save them to a checkpoint, resume from one, and report failures."""

from __future__ import annotations

import hashlib
import os
import queue
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass
from functools import partial
from typing import Any

import dask
import dask.threaded
from dask.base import get_scheduler
from dask.system import CPU_COUNT

# The run path imports current_client from here; it is defined on the ground floor, for split/ too.
from ..split.plan import Plan
from ..tables.checks import check_classes, check_features
from ..tables.fingerprint import data_fingerprint
from ..tables.table import Table
from ..user_warning import warn_user
from .checkpoint import check_checkpoint_dir, open_checkpoint, run_key, save_task
from .facts import record_most
from .progress import progress_bar
from .strategies import Context, make_tasks


@dataclass(frozen=True)
class Checkpoint:
    """Where a run saves each finished fit, and what identifies the run there."""

    path: str | os.PathLike
    settings: dict[str, Any]
    data: dict[str, Any]  # the data's fingerprint and its rows per stratum


def data_identity(checkpoint: str | os.PathLike | None, table: Table) -> dict[str, Any] | None:
    """The fingerprint of the data as given, for a checkpoint (checked first: a bad checkpoint
    directory is refused before any pass over the data)."""
    if checkpoint is None:
        return None
    check_checkpoint_dir(checkpoint, table.source)
    return data_fingerprint(table)


def run_plan(
    ctx: Context, strategies: list[Any], progress: bool, checkpoint: Checkpoint | None = None
) -> list[dict[str, Any]]:
    """Run ``ctx.plan``: every (fit, learner) pair not in the checkpoint, made into tasks by
    ``strategies`` (see ``strategies.make_tasks``); the records of every pair, failures warned
    about once.
    """
    plan, estimators = ctx.plan, ctx.estimators
    check_classes(ctx.run.classes, ctx.run.label)
    done, save = resume(checkpoint, plan) if checkpoint is not None else ({}, None)
    todo = [(f, name) for f in plan.fits.index for name in estimators if (f, name) not in done]
    # A train set's learners are scored together (the Wald CV test pairs their per-row
    # losses): one of them missing, all of them are made again.
    again = {f for f, _ in todo}
    done = {pair: records for pair, records in done.items() if pair[0] not in again}
    todo = [(f, name) for f in plan.fits.index for name in estimators if (f, name) not in done]
    if done:  # printed without progress bars too: it says where the results come from
        print(f"{ctx.label}: resuming, {len(done)} of {len(done) + len(todo)} fits already done")
    tasks, stats_made, n_waves = make_tasks(ctx, todo, strategies)
    if n_waves > 1:  # recorded in the result's attrs (score_waves) where it is not 1
        record_most("score_waves", n_waves)
        if progress:
            print(f"{ctx.label}: AUC's pieces do not fit the workers' memory at once: scoring "
                  f"in {n_waves} waves, each one more read of the table")  # fmt: skip
    if not stats_made:
        # Block statistics need finite values in every feature, so when they were made the
        # check is done; otherwise it is a pass of its own.
        check_features(ctx.data, ctx.table.features)
    blocks = {(f, name): len(plan.fits.loc[f, "blocks"]) for f, name in todo}
    records = [r for batch in done.values() for r in batch]
    records += execute(tasks, ctx.client, progress, save, blocks, ctx.label)
    warn_failures(records)
    return records


def resume(
    checkpoint: Checkpoint, plan: Plan
) -> tuple[dict[tuple[int, str], list[dict[str, Any]]], Callable[..., None]]:
    """The fits a checkpoint holds in full (refusing one of other settings or data), and the
    function saving a finished fit's records into it: ``save(fit_id, learner, records)``."""
    run = {
        **checkpoint.settings,
        "data": checkpoint.data,
        # Any change in how fits are numbered or selected makes another run.
        "plan": hashlib.sha256(plan.table().to_csv().encode()).hexdigest(),
    }
    done = open_checkpoint(checkpoint.path, run)
    save = partial(save_task, checkpoint.path, key=run_key(run))
    # A fit's test blocks may be scored by separate tasks: done only when all of them are.
    full = {k: v for k, v in done.items() if len(v) == len(plan.fits.loc[k[0], "blocks"])}
    return full, save


def execute(
    tasks: list,
    client: Any,
    progress: bool,
    save: Callable[..., None] | None,
    blocks: Mapping[tuple[int, str], int],
    label: str = "SOAK",
) -> list[dict[str, Any]]:
    """Run ``tasks``; their records, each fit saved as it arrives (by
    ``save``, if given).

    ``blocks`` gives the test blocks of each (fit, learner) to run. The progress bar counts
    these pairs, as ``n_fits`` does, each once all its blocks are scored: one task may score
    several fits (one-pass learners are scored block by block), and one fit several blocks.
    """
    records = []
    left = dict(blocks)
    with progress_bar(len(left), "fits", enabled=progress, client=client, label=label) as bar:

        def count(batch: list[dict[str, Any]]) -> None:
            for key, rows in _by_fit(batch).items():
                left[key] -= len(rows)
                if not left[key]:
                    bar.update(1)

        # closing(): however the loop ends, the run stops at once (no fits left running).
        with closing(_run(tasks, client, count)) as batches:
            for batch in batches:
                if save is not None:
                    for (fit_id, learner), rows in _by_fit(batch).items():
                        save(fit_id, learner, rows)
                records.extend(batch)
    return records


def _by_fit(records: list[dict[str, Any]]) -> dict[tuple[int, str], list[dict[str, Any]]]:
    out: dict[tuple[int, str], list[dict[str, Any]]] = {}
    for r in records:
        out.setdefault((r["fit_id"], r["learner"]), []).append(r)
    return out


def _run(tasks: list, client: Any, arrived: Callable[[Any], None]) -> Iterator[Any]:
    """Yield task results as they finish, releasing each future once its result is here.

    ``arrived(result)`` is called with each result as it arrives, before it is yielded.
    """
    if client is None:
        yield from _run_local(tasks, arrived)
        return
    from distributed import as_completed

    futures = client.compute(tasks)
    # The run's client's loop: it need not be the default client (RunOptions(client=...)).
    for future in as_completed(futures, loop=client.loop):
        result = future.result()
        future.release()
        arrived(result)
        yield result


def _run_local(tasks: list, arrived: Callable[[Any], None]) -> Iterator[Any]:
    """Compute ``tasks`` as one graph on Dask's local scheduler, yielding results as they finish.

    One graph, so tasks share what they read; a scheduler callback streams each task's result
    (and so its checkpoint) as soon as it is computed, rather than when all are done.
    """
    from dask.callbacks import Callback

    wanted = {task.key for task in tasks}
    finished: queue.Queue = queue.Queue()
    stop = threading.Event()
    end = object()

    class Stream(Callback):
        def _pretask(self, key, dsk, state):
            if stop.is_set():  # the caller went away: start nothing more
                raise _Stopped

        def _posttask(self, key, result, dsk, state, worker_id):
            if key in wanted:
                finished.put(result)

    def compute() -> None:
        # The threaded scheduler (the default) gets a pool of our own, unless the user set one,
        # so that stopping can wait for the tasks still running: Dask's scheduler returns on
        # the first error while its pool goes on. Other schedulers are used as configured.
        threaded = get_scheduler(collections=tasks) is dask.threaded.get
        own = threaded and dask.config.get("pool", None) is None
        workers = dask.config.get("num_workers", None) or CPU_COUNT
        pool = ThreadPoolExecutor(workers) if own else None
        try:
            with Stream():
                dask.compute(*tasks, **({"pool": pool} if own else {}))
        except _Stopped:
            pass
        except BaseException as err:  # noqa: BLE001 -- re-raised in the caller's thread
            finished.put(err)
        finally:
            if own:
                pool.shutdown(wait=True)
        finished.put(end)

    worker = threading.Thread(target=compute, daemon=True)
    worker.start()
    try:
        for item in iter(finished.get, end):
            if isinstance(item, BaseException):
                raise item
            arrived(item)
            yield item
    finally:
        stop.set()
        worker.join()  # tasks already running finish; none start after the caller stops


class _Stopped(Exception):
    """Ends a local computation whose results are no longer wanted."""


def warn_failures(records: list[dict[str, Any]]) -> None:
    failed = {(r["learner"], r["fit_id"]): r["message"] for r in records if r["message"]}
    if failed:
        listed = "; ".join(
            f"{lrn} fit {fid}: {msg}" for (lrn, fid), msg in list(failed.items())[:10]
        )
        warn_user(f"{len(failed)} fits failed and score NaN (error_score): {listed}")
