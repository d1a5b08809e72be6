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
from ..settings import SETTINGS, check_run_options
from .flags import UsageError, add_output, add_settings, check_command_out, spell
from .resume import command_checkpoint, discard

#: The settings ``soak transfer`` shares with ``soak run`` (same flags, checks and help).
SHARED = (
    "data",
    *(s.name for s in SETTINGS.values() if s.scope == "table"),
    "learners",
    "n_folds",
    "seed",
    "measures",
    "persist",
    "progress",
    "checkpoint",
    "error_score",
    "scheduler",
    "tls_ca_file",
    "tls_cert",
    "tls_key",
)
_SECTIONS = {
    "table": "the table (soak_dask.load_table)",
    "run": "the transfer matrix (soak_dask.pooling.transfer)",
    "app": "data and cluster",
}


def add_parser(command: Callable[..., argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Register ``soak transfer`` with ``command(name, help_text, **kwargs)``; its parser."""
    from ..pooling.search import MAX_INNER_FITS

    sub = command(
        "transfer",
        "train on each subset and test on every subset (the transfer matrix, S*K fits per "
        "learner), then search which train subsets to pool for each test subset (nested "
        "greedy selection); save the results, tables, figures and an HTML report in --out",
        epilog=f"built-in learners (--learner NAME):\n{indent(describe_builtins(), '  ')}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_settings(sub, SHARED, run_file=False, sections=_SECTIONS)
    search = sub.add_argument_group("the search (soak_dask.pooling.search_subsets)")
    search.add_argument(
        "--search",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="run the greedy train-subset search after the matrix (default: yes)",
    )
    search.add_argument(
        "--threshold", type=float, default=0.01, metavar="R",
        help="a subset joins a pool only if it lowers the inner-CV error by more than R times "
        "the current one (default 0.01)",
    )  # fmt: skip
    search.add_argument(
        "--max-pool", type=int, default=None, metavar="N",
        help="at most N subsets in a pool (default: all)",
    )  # fmt: skip
    search.add_argument(
        "--max-inner-fits", type=int, default=MAX_INNER_FITS, metavar="N",
        help=f"refuse a search that may fit learners from rows more than N times per learner "
        f"(default {MAX_INNER_FITS}; additive learners are not counted)",
    )  # fmt: skip
    output = sub.add_argument_group("output")
    what = "directory for the results (transfer.zarr, search.zarr, CSV), the figures and "
    add_output(output, "soak transfer", what + "report.html")
    return sub


def transfer_command(args: argparse.Namespace) -> None:
    """``soak transfer``: check everything that needs no cluster, run the matrix (and the
    search) on the cluster, write the results and the report, print a summary."""
    from ..pooling.report import WRITER
    from ..run.cluster import connect, make_security
    from ..tables.table import load_table

    values = check_run_options(
        {name: getattr(args, SETTINGS[name].dest) for name in SHARED if SETTINGS[name].cli},
        spell=spell(args),
    )
    if values["subset"] is None:
        raise UsageError(
            "soak transfer needs --subset COLUMN: the matrix trains on each subset and tests "
            "on each (without subsets, use soak run or soak evaluate)"
        )
    search = _search_options(args) if args.search else None
    out = check_command_out(WRITER, args.out, args.overwrite, values["data"])
    checkpoint = command_checkpoint(out.path, values["checkpoint"], values["data"])
    security = make_security(values["tls_ca_file"], values["tls_cert"], values["tls_key"])
    table_options = {
        s.name: values[s.name] for s in SETTINGS.values() if s.scope == "table" and s.cli
    }
    table = load_table(values["data"], **table_options)
    names = ("n_folds", "seed", "measures", "persist", "progress", "error_score")
    run = {k: values[k] for k in names}
    if search is not None:
        _check_budget(table, values, search)
    with connect(
        values["scheduler"], security=security, log_failures=getattr(args, "debug", False)
    ) as client:
        matrix, found = _compute(table, values["learners"], run, search, client, checkpoint)
    page = _write(out, matrix, found)
    discard(values["checkpoint"], checkpoint)
    print(summary_text(matrix, found))
    print(f"\nReport: {page}")


def _search_options(args: argparse.Namespace) -> dict[str, Any]:
    """The search's flags, checked before any work."""
    from ..pooling.search import check_threshold

    try:
        threshold = check_threshold(args.threshold)
    except ValueError as err:
        raise UsageError(str(err).replace("threshold=", "--threshold ")) from None
    if args.max_pool is not None and args.max_pool < 2:
        raise UsageError(f"--max-pool {args.max_pool}: need at least 2 (or leave it out)")
    if args.max_inner_fits < 1:
        raise UsageError(f"--max-inner-fits {args.max_inner_fits}: need a positive integer")
    return {
        "threshold": threshold,
        "max_pool": args.max_pool,
        "max_inner_fits": args.max_inner_fits,
    }


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
    n_subsets = table.data[table.subset].nunique()
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
    table: Any, learners: Any, run: dict, search: dict | None, client: Any, checkpoint: str
) -> tuple:
    """The matrix and the search, each in its part of the command's checkpoint."""
    from ..pooling.matrix import transfer
    from ..pooling.search import search_subsets
    from ..run.checkpoint import open_checkpoint
    from ..run.session import part_path

    open_checkpoint(checkpoint, {"command": "soak transfer"})
    where = part_path(checkpoint, "transfer")
    matrix = transfer(table, learners, client=client, checkpoint=where, **run)
    if search is None:
        return matrix, None
    measure = matrix.attrs["measures"][0]
    options = {k: v for k, v in run.items() if k != "measures"}
    where = part_path(checkpoint, "search")
    found = search_subsets(
        table, learners, measure=measure, client=client, checkpoint=where, **options, **search
    )
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


def summary_text(matrix: Any, found: Any) -> str:
    """What the command prints: each learner's matrix of means with its marks, and the
    search's nested estimate against same and all."""
    import pandas as pd

    from ..pooling.matrix import MARKS, default_measure, transfer_table
    from ..pooling.search import search_pvalues

    measure = default_measure(matrix)
    lines = [
        f"{measure}: mean over folds, train subset (rows) -> test subset (columns); "
        f"{MARKS['worse']}/{MARKS['better']}: worse/better than the diagonal (p < 0.05)"
    ]
    for learner in matrix["learner"].values:
        lines += [f"\n{learner}", transfer_table(matrix, str(learner), measure).to_string()]
    if found is not None:
        keep = [
            "learner",
            "test_subset",
            "compare",
            "reference",
            "compare_mean",
            "mean_diff",
            "p",
        ]
        with pd.option_context("display.width", 160):
            table = search_pvalues(found)[keep].round(4).to_string(index=False)
        lines += ["\nsearch: nested greedy estimate against same and all (paired t-test)", table]
    return "\n".join(lines)
