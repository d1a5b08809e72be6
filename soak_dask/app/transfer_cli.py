"""``soak transfer``: the transfer matrix of a table's subsets and the search for which train
subsets to pool, saved with their figures and report.

``add_parser(command)`` registers the sub-command on ``soak``'s parser (``command`` is the
factory of ``soak_dask.app.cli.build_parser``) and ``transfer_command(args)`` runs it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from textwrap import indent
from typing import Any

from ..learn.builtin import describe_builtins
from .flags import (
    UsageError,
    add_dry_run,
    add_settings,
    command_names,
    run_settings,
    setting_values,
)
from .resume import command_paths, discard

COMMAND = "transfer"
#: ``--help`` sections, by scope: the matrix's settings (shared with ``soak run``: same flags,
#: checks and help), the search's own, then data, output and cluster.
_SECTIONS = {
    "table": "the table (soak_dask.load_table)",
    "run": "the transfer matrix (soak_dask.pooling.transfer)",
    "search": "the search (soak_dask.pooling.search_subsets)",
    "app": "data, output and cluster",
}


def add_parser(command: Callable[..., argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Register ``soak transfer`` with ``command(name, help_text, **kwargs)``; its parser."""
    sub = command(
        COMMAND,
        "train on each subset and test on every subset (the transfer matrix, S*K fits per "
        "learner), then search which train subsets to pool for each test subset (nested "
        "greedy selection); save the results, tables, figures and an HTML report in --out",
        epilog=f"built-in learners (--learner NAME):\n{indent(describe_builtins(), '  ')}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_settings(sub, command_names(COMMAND), run_file=True, sections=_SECTIONS, command=COMMAND)
    add_dry_run(sub)
    return sub


def transfer_command(args: argparse.Namespace) -> None:
    """``soak transfer``: check everything that needs no cluster, run the matrix (and the
    search) on the cluster, write the results and the report, print a summary."""
    settings = run_settings(args, COMMAND)  # checked before the engine loads
    from ..pooling.report import WRITER, transfer_text
    from ..run.cluster import connect, make_security
    from .table_input import open_table, table_settings

    if settings.subset is None:
        raise UsageError(
            "soak transfer needs --subset COLUMN: the matrix trains on each subset and tests "
            "on each (without subsets, use soak run or soak evaluate)"
        )
    out, checkpoint = command_paths(WRITER, settings, settings.data)
    security = make_security(settings.tls_ca_file, settings.tls_cert, settings.tls_key)
    run = setting_values(settings, COMMAND, ("run",))
    run.update(learners=settings.learners())
    del run["checkpoint"]  # each part has its own, in the command's
    search = setting_values(settings, COMMAND, ("search",)) if settings.search else None
    with connect(
        settings.scheduler, security=security, log_failures=getattr(args, "debug", False)
    ) as client:
        # Loaded on the cluster: the table's passes over the data are read by the workers.
        table = open_table(settings.data, table_settings(settings, COMMAND))
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
    from ..schema import DEFAULT_N_FOLDS

    estimators = resolve_learners(values["learners"], table.task, values["seed"])
    if all(is_additive(e) for e in estimators.values()):
        return
    n_subsets = table.data[table.subset].nunique(split_out=1)  # a tree reduction, no shuffle
    k = table.data[table.fold].max() if table.fold is not None else None
    n_subsets, k = dask.compute(n_subsets, k)
    n_folds = values["n_folds"] or (int(k) if k is not None else DEFAULT_N_FOLDS)
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

    matrix = call(transfer, table, client=client, checkpoint=where("transfer"), **run)
    found = None
    if search is not None:
        found = call(
            search_subsets, table, client=client, checkpoint=where("search"), **run, **search
        )
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
