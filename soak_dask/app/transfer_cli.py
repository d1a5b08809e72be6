"""``soak transfer``: the transfer matrix of a table's subsets and the search for which train
subsets to pool, saved with their figures and report.

``transfer_command(args)`` runs it (``soak_dask.app.commands`` declares it: its flags are
the settings of ``soak_dask.settings`` it takes).
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from ..run_options import RunOptions
from .flags import UsageError, run_settings, setting_values
from .resume import command_paths, discard

COMMAND = "transfer"


def transfer_command(args: argparse.Namespace) -> None:
    """``soak transfer``: check everything that needs no cluster, run the matrix (and the
    search) on the cluster, write the results and the report, print a summary."""
    settings = run_settings(args, COMMAND)  # checked before the engine loads
    if settings.subset is None:
        raise UsageError(
            "soak transfer needs --subset COLUMN: the matrix trains on each subset and tests "
            "on each (without subsets, use soak run or soak evaluate)"
        )
    from .table_input import start_local_workers, table_on_cluster

    start_local_workers(settings)
    from ..pooling.report import WRITER, transfer_text

    out, checkpoint = command_paths(WRITER, settings, settings.data)
    run = setting_values(settings, COMMAND, ("run",))
    run.update(learners=settings.learners())
    del run["checkpoint"]  # each part has its own, in the command's
    search = setting_values(settings, COMMAND, ("search",)) if settings.search else None
    with table_on_cluster(settings, COMMAND, getattr(args, "debug", False)) as (table, client):
        matrix, found = _compute(table, run, search, client, checkpoint)
    page = _write(out, matrix, found)
    discard(settings.checkpoint, checkpoint)
    print(transfer_text(matrix, found))
    print(f"\nReport: {page}")


def _compute(
    table: Any, run: dict, search: dict | None, client: Any, checkpoint: str | None
) -> tuple:
    """The search (if asked) and the matrix, each in its part of the command's checkpoint;
    the search scores the matrix's measures and minimises the first. The search runs first,
    so its refusals (a budget of inner fits exceeded: ``search_subsets``' own check) come
    before any fit of the matrix. Under ``--dry-run``: the cost of the search's first round
    and of the matrix's plan, nothing written."""
    from ..pooling.matrix import transfer
    from ..pooling.search import search_subsets
    from ..run.checkpoint import open_checkpoint
    from ..run.cost import DryRunStop, dry_run, dry_running
    from ..run.session import part_path

    dry = dry_running()
    call = dry_run if dry else (lambda func, *args, **kwargs: func(*args, **kwargs))
    if not dry:
        open_checkpoint(checkpoint, {"command": "soak transfer"})

    def where(part: str) -> str | None:  # a dry run given no --out has no checkpoint
        return None if checkpoint is None else part_path(checkpoint, part)

    how, given = RunOptions.among(run, client=client, checkpoint=where("search"))
    found = None
    if search is not None:
        found = call(search_subsets, table, **given, **search, options=how)
    how = dataclasses.replace(how, checkpoint=where("transfer"))
    matrix = call(transfer, table, **given, options=how)
    if dry:  # the outer dry run (soak_dask.app.cli) has both costs
        raise DryRunStop
    return matrix, found


def _write(out: Any, matrix: Any, found: Any) -> Any:
    """The report first (the earlier output of ``out``, an ``OutputDir``, is removed when it
    begins), then the stores and the per-fold CSV files, each listed in its manifest."""
    from ..pooling.report import write_transfer_report
    from ..results.store import save_results

    page = write_transfer_report(matrix, out, found)
    save_results(matrix, out.claim("transfer.zarr"))
    frame = matrix.drop_vars("fit_id").to_dataframe().reset_index()
    frame.to_csv(out.claim("transfer.csv"), index=False)
    if found is not None:
        save_results(found, out.claim("search.zarr"))
        measure = found.attrs["search_measure"]
        per_fold = found[[measure, "n_train", "n_test"]].to_dataframe().reset_index()
        per_fold.to_csv(out.claim("search.csv"), index=False)
    out.finish()
    return page
