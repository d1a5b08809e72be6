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
    from ..pooling.report import WRITER, transfer_text
    from .table_input import table_on_cluster

    if settings.subset is None:
        raise UsageError(
            "soak transfer needs --subset COLUMN: the matrix trains on each subset and tests "
            "on each (without subsets, use soak run or soak evaluate)"
        )
    out, checkpoint = command_paths(WRITER, settings, settings.data)
    run = setting_values(settings, COMMAND, ("run",))
    run.update(learners=settings.learners())
    del run["checkpoint"]  # each part has its own, in the command's
    search = setting_values(settings, COMMAND, ("search",)) if settings.search else None
    with table_on_cluster(settings, COMMAND, getattr(args, "debug", False)) as (table, client):
        if search is not None:
            _check_budget(table, run, search)
        matrix, found = _compute(table, run, search, client, checkpoint)
    page = _write(out, matrix, found)
    discard(settings.checkpoint, checkpoint)
    print(transfer_text(matrix, found))
    print(f"\nReport: {page}")


def _check_budget(table: Any, values: dict[str, Any], search: dict[str, Any]) -> None:
    """Refuse, before the matrix is computed, a search over its budget: one pass over the
    subset (and fold) columns gives S (and K)."""
    import dask

    from ..learn.builtin import resolve_learners
    from ..pooling.search import check_budget, inner_fit_bound
    from ..run.closed_form import is_additive
    from ..split.fold_options import fold_count

    estimators = resolve_learners(values["learners"], table.task, values["seed"])
    if all(is_additive(e) for e in estimators.values()):
        return
    n_subsets = table.data[table.subset].nunique(split_out=1)  # a tree reduction, no shuffle
    k = table.data[table.fold].max() if table.fold is not None else None
    n_subsets, k = dask.compute(n_subsets, k)
    n_folds = fold_count(values["n_folds"], k)
    max_pool = min(search["max_pool"] or n_subsets, n_subsets)
    if n_subsets >= 2:
        additive = {n: bool(is_additive(e)) for n, e in estimators.items()}
        check_budget(
            additive, inner_fit_bound(n_subsets, n_folds, max_pool), search["max_inner_fits"]
        )


def _compute(
    table: Any, run: dict, search: dict | None, client: Any, checkpoint: str | None
) -> tuple:
    """The matrix and the search, each in its part of the command's checkpoint; the search
    scores the matrix's measures and minimises the first (under ``--dry-run``: the cost of
    the matrix's plan and of the search's first round, nothing written)."""
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

    how, given = RunOptions.among(run, client=client, checkpoint=where("transfer"))
    matrix = call(transfer, table, **given, options=how)
    found = None
    if search is not None:
        how = dataclasses.replace(how, checkpoint=where("search"))
        found = call(search_subsets, table, **given, **search, options=how)
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
