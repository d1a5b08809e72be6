"""``soak run`` and ``soak evaluate``: check everything that needs no data, load the table on
the cluster, run ``soak`` or ``evaluate``, save the results store and print its summary
(``soak_dask.app.commands`` declares their flags: the settings of ``soak_dask.settings``)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

from ..run_options import RunOptions
from ..settings import Command
from .flags import UsageError, run_settings, setting_values


def _soak() -> Callable[..., Any]:
    from ..run.soak import soak

    return soak


def _evaluate() -> Callable[..., Any]:
    from ..run.evaluate import evaluate

    return evaluate


def _run(
    settings: Any, command: Command, debug: bool, engine: Callable[[], Callable[..., Any]]
) -> tuple:
    """What ``soak run`` and ``soak evaluate`` share: check everything that needs no data
    (learners, ``--out`` and the checkpoint, TLS files), then on the cluster load the table
    (its passes read by the workers) and run the command's function (which checks the
    measures against its task) (``engine()``, imported once the checks that need no cluster have
    passed); save the results and remove our own checkpoint.
    Returns the results, the measures and the store's path. Each check imports only what it
    needs, so a mistake found early is refused before the engine loads."""
    learners = settings.learners()
    # A dry run given no --out writes nothing, so has neither --out nor a checkpoint to check.
    checkpoint = _checked_paths(settings) if settings.out is not None else None
    from .table_input import start_local_workers, table_on_cluster

    start_local_workers(settings)
    from ..results.kinds import as_name_list
    from ..results.store import save_results
    from ..run.checkpoint import remove_checkpoint

    options = setting_values(settings, command, ("run", "evaluate"))
    options.update(learners=learners, checkpoint=checkpoint)
    # Loaded on the cluster: its passes over the data (column traps, duplicate rows, the fold
    # file's check) are read by the workers, not by this process.
    with table_on_cluster(settings, command, debug) as (table, client):
        call = engine()  # once the TLS files are checked too
        run, given = RunOptions.among(options, client=client)
        res = call(table, **given, options=run)  # the measures checked for its task there
    measures = as_name_list(res.attrs["measures"])
    # A concurrent run may have written --out since the check at the start: name the flag.
    store = save_results(res, settings.out, overwrite=settings.overwrite, flag="--overwrite")
    if settings.checkpoint is None:  # our own: the saved results make it redundant
        remove_checkpoint(checkpoint)
    return res, measures, store


def run_command(args: argparse.Namespace) -> None:
    """``soak run``: load the table, run SOAK on the cluster, save and summarise the results."""
    settings = run_settings(args)  # every flag and run-file value checked before the engine loads
    res, measures, store = _run(settings, "run", args.debug, _soak)
    from ..results.stats import results_text

    print(results_text(res, measures[0]))
    print(f"\nResults: {store}")


def evaluate_command(args: argparse.Namespace) -> None:
    """``soak evaluate``: load the table, run ``evaluate`` on the cluster, save the results
    (and the final models with ``--models``), print mean ± SD, the test split's interval and
    the learners compared (the design's recommended test, with its interval)."""
    settings = run_settings(args, "evaluate")  # checked before the engine loads
    res, _, store = _run(settings, "evaluate", args.debug, _evaluate)
    from ..results.soak_kinds import evaluation_printout

    print(evaluation_printout(res))
    print(f"\nResults: {store}")
    if settings.models is not None:
        print(f"Models: {settings.models}")


def _checked_paths(settings: Any) -> str | os.PathLike:
    """Check ``--out``, the checkpoint and ``--models`` (of ``soak evaluate``) before any work
    (nothing written over or into the input, other data or each other; ``--out`` writable);
    return the checkpoint's path or URL (``s3://…`` as well: credentials come from the
    environment)."""
    from ..io.locations import overlaps
    from ..learn.model_dir import check_models_dir
    from ..results.store import check_output
    from ..run.checkpoint import check_checkpoint_dir

    check_output(
        settings.out, overwrite=settings.overwrite, source=settings.data, flag="--overwrite"
    )
    # A string, not a Path: Path("s3://b/out") would lose the URL's "//".
    checkpoint = settings.checkpoint or f"{os.fspath(settings.out).rstrip('/')}.checkpoint"
    if overlaps(settings.out, checkpoint):
        raise UsageError(
            f"--checkpoint {checkpoint} and --out {settings.out} overlap; give separate paths"
        )
    check_checkpoint_dir(checkpoint, source=settings.data)
    models = getattr(settings, "models", None)  # soak evaluate's only
    if models is not None:
        check_models_dir(
            models, source=settings.data, overwrite=settings.overwrite, name="--models"
        )
        for flag, path in (("--out", settings.out), ("--checkpoint", checkpoint)):
            if overlaps(models, path):
                raise UsageError(
                    f"--models {models} and {flag} {path} overlap; give separate paths"
                )
    return checkpoint
