"""The ``soak`` command line: run SOAK on a table, describe a table, report on results.

Commands: ``soak run``, ``soak info``, ``soak report``, ``soak demo``; ``soak COMMAND --help``
lists each one's flags. A user error prints one line ``soak: error: ...`` and exits with 2
(``--debug`` shows the traceback instead).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from textwrap import indent
from typing import Any

from ..learn.builtin import describe_builtins
from .config import (
    ALLOWED_MODULES,
    RunSettings,
    empty_list_message,
    load_run_file,
    merge_settings,
    setting_names,
)

#: Exit status of a user error, as argparse uses.
USAGE_ERROR = 2
#: Exit status after Ctrl-C (128 + SIGINT), as shells report it.
INTERRUPTED = 130
# Finished fits reach the run's checkpoint (--checkpoint, or OUT.checkpoint) as they arrive.
_RESUME_HINT = (
    "; the fits finished so far are in the checkpoint: run the same command again (same --out "
    "and --checkpoint) to resume"
)


class UsageError(Exception):
    """A bad command line, raised instead of argparse's print-usage-and-exit."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see '{self.prog} --help')")


#: Errors caused by the user's input or environment: one line, no traceback.
USER_ERRORS = (UsageError, ValueError, TypeError, KeyError, OSError)


def _comma_list(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def _names(key: str) -> Callable[[str], list[str]]:
    """Argparse type of the flag of list setting `key`: a comma-separated list, not empty.

    An empty value (``--features ''``) is refused: it would mean no column, no learner, ...
    while leaving the flag out means the default.
    """

    def parse(value: str) -> list[str]:
        names = _comma_list(value)
        if not names:
            raise argparse.ArgumentTypeError(empty_list_message(key, repr(value), "the flag"))
        return names

    return parse


def _add_table_args(parser: argparse.ArgumentParser, run_file: bool) -> None:
    """Flags naming the table and its columns, shared by ``run`` and ``info``.

    With ``run_file``, DATA and --label may come from a run file instead, and unset flags stay
    out of the namespace (``argparse.SUPPRESS``), so ``run`` can tell them from run-file values.
    """
    kw = {"default": argparse.SUPPRESS if run_file else None}
    parser.add_argument(
        "data",
        nargs="?" if run_file else None,
        metavar="DATA",
        **kw,
        help="Parquet or CSV/TSV file/directory/glob, or Zarr store, path or URL",
    )
    parser.add_argument(
        "--label", metavar="COLUMN", required=not run_file, **kw, help="column to predict"
    )
    parser.add_argument(
        "--subset", metavar="COLUMN", **kw, help="column of subsets (none: plain K-fold CV)"
    )
    parser.add_argument(
        "--group", metavar="COLUMN", **kw, help="rows sharing a group value stay in one fold"
    )
    parser.add_argument(
        "--fold-column",
        dest="fold_column",
        metavar="COLUMN",
        **kw,
        help="column of folds 1..K, used as is",
    )
    parser.add_argument(
        "--features",
        type=_names("features"),
        metavar="A,B,...",
        **kw,
        help="comma-separated feature columns",
    )
    parser.add_argument(
        "--exclude",
        type=_comma_list,
        metavar="A,B,...",
        **kw,
        help="comma-separated columns that are not features",
    )
    parser.add_argument(
        "--coordinates",
        choices=["exclude", "include"],
        **kw,
        help="columns named like coordinates (x, y, xcoord, lon, lat, easting, row, ...) when "
        "--features is not given: left out with a warning (exclude, the default) or used",
    )
    parser.add_argument(
        "--rows-per-partition",
        dest="rows_per_partition",
        type=int,
        metavar="N",
        **kw,
        help="rows per Dask partition, what one task reads (default 500000; lower it for "
        "workers with little memory)",
    )
    parser.add_argument(
        "--folds",
        type=int,
        metavar="K",
        **kw,
        help="K (default 10, or the fold column's largest fold)",
    )


def _add_run_args(run: argparse.ArgumentParser) -> None:
    s = argparse.SUPPRESS
    _add_table_args(run, run_file=True)
    run.add_argument(
        "--seed", type=int, default=s, metavar="N", help="seed of folds and learners (default 1)"
    )
    run.add_argument(
        "--learner",
        type=_names("learner"),
        action="extend",
        default=s,
        metavar="NAME",
        help="learner to fit (repeat or comma-separate): a built-in or a [learners.NAME] of "
        "the run file (default: featureless and a linear model)",
    )
    run.add_argument(
        "--train-types",
        dest="train_types",
        type=_names("train_types"),
        default=s,
        metavar="TYPES",
        help="comma-separated, from same,other,all (default: all three)",
    )
    run.add_argument(
        "--measures",
        type=_names("measures"),
        default=s,
        metavar="A,B,...",
        help="e.g. error,auc (default: every measure of the task)",
    )
    run.add_argument(
        "--no-persist",
        dest="no_persist",
        action="store_true",
        default=s,
        help="read rows from storage for each fit instead of keeping the table in memory",
    )
    run.add_argument(
        "--sizes",
        type=int,
        default=s,
        metavar="N",
        help="also down-sampled train sizes: 0 the smallest train set, N also smallest*ratio^1..N",
    )
    run.add_argument("--ratio", type=float, default=s, help="ratio between sizes (0.5)")
    run.add_argument(
        "--size-seeds", dest="size_seeds", type=int, default=s, help="down-samples per size"
    )
    run.add_argument(
        "--max-train-rows",
        dest="max_train_rows",
        type=int,
        default=s,
        metavar="N",
        help="fit a larger train set on a seeded sample of exactly N rows (class shares kept)",
    )
    run.add_argument(
        "--incremental",
        action="store_true",
        default=s,
        help="feed partial_fit learners one block of rows at a time",
    )
    run.add_argument("--epochs", type=int, default=s, help="passes for --incremental (1)")
    run.add_argument(
        "--checkpoint",
        default=s,
        metavar="DIR",
        help="where finished fits are saved so a stopped run resumes (default: OUT.checkpoint; "
        "removed once the results are written)",
    )
    run.add_argument(
        "--scheduler",
        default=s,
        metavar="ADDRESS",
        help="running Dask scheduler (tcp://, tls:// or a scheduler file); default: a "
        "LocalCluster on this machine",
    )
    run.add_argument(
        "--tls-ca-file", dest="tls_ca_file", default=s, metavar="FILE", help="TLS CA (PEM)"
    )
    run.add_argument(
        "--tls-cert", dest="tls_cert", default=s, metavar="FILE", help="client cert (PEM)"
    )
    run.add_argument(
        "--tls-key", dest="tls_key", default=s, metavar="FILE", help="client key (PEM)"
    )
    run.add_argument(
        "--allow-modules",
        dest="allow_modules",
        type=_comma_list,
        default=s,
        metavar="A,B,...",
        help=f"packages or modules that run-file learners may import besides "
        f"{', '.join(ALLOWED_MODULES)} (importing a module runs its code)",
    )
    run.add_argument("--config", metavar="FILE", help="TOML run file; flags override it")
    run.add_argument("--out", default=s, metavar="PATH", help="results to write: .zarr or .nc")
    run.add_argument("--overwrite", action="store_true", default=s, help="replace --out")
    _add_no_progress(run, s)


def _add_no_progress(parser: argparse.ArgumentParser, default: Any) -> None:
    parser.add_argument(
        "--no-progress",
        dest="no_progress",
        action="store_true",
        default=default,
        help="no progress bar",
    )


def build_parser() -> argparse.ArgumentParser:
    """The ``soak`` argument parser and its subcommands."""
    parser = _Parser(prog="soak", description=__doc__)
    debug = {"action": "store_true", "help": "show tracebacks on errors"}
    parser.add_argument("--debug", default=False, **debug)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help_text: str, **kwargs: Any) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text, **kwargs)
        sub.add_argument("--debug", default=argparse.SUPPRESS, **debug)
        return sub

    _add_run_args(
        command(
            "run",
            "run SOAK on a table and save the results",
            epilog=f"built-in learners (--learner NAME):\n{indent(describe_builtins(), '  ')}",
            formatter_class=argparse.RawDescriptionHelpFormatter,  # keeps the list's lines
        )
    )

    info = command("info", "describe a table: task, features, rows per subset × label, warnings")
    _add_table_args(info, run_file=False)

    report = command("report", "write an HTML report of saved results")
    report.add_argument("results", help="results store written by 'soak run'")
    report.add_argument("--out", required=True, help="report directory")
    report.add_argument("--overwrite", action="store_true", help="replace an existing report")

    demo = command("demo", "run SOAK on a generated pixel table (the README's job)")
    demo.add_argument("--out", default="soak_demo_output", help="output directory")
    demo.add_argument("--pixels", type=int, default=60_000, help="pixels to generate")
    demo.add_argument("--regions", type=int, default=3, help="regions (subsets)")
    demo.add_argument("--folds", type=int, default=10)
    demo.add_argument("--seed", type=int, default=1)
    demo.add_argument("--scheduler", default=None, help="address of a running Dask scheduler")
    _add_no_progress(demo, False)
    return parser


def run_settings(args: argparse.Namespace) -> RunSettings:
    """The run file's settings (``--config``) overridden by the flags given."""
    file = load_run_file(args.config) if args.config else {}
    flags = {k: v for k, v in vars(args).items() if k in setting_names()}
    return merge_settings(file, flags)


def run_command(args: argparse.Namespace) -> None:
    """``soak run``: load the table, run SOAK on the cluster, save and summarise the results."""
    from ..learn.measures import check_measures
    from ..results.stats import results_text
    from ..results.store import save_results
    from ..run.checkpoint import remove_checkpoint
    from ..run.cluster import connect, make_security
    from ..run.engine import check_options, soak
    from ..split.plan import check_train_types
    from ..tables.table import load_table

    settings = run_settings(args)
    # Everything that can be checked without a cluster is checked first.
    check_options(
        seed=settings.seed,
        n_folds=settings.folds,
        sizes=settings.sizes,
        ratio=settings.ratio,
        size_seeds=settings.size_seeds,
        max_train_rows=settings.max_train_rows,
        epochs=settings.epochs,
        spell=_flag,
    )
    learners = settings.learners()
    train_types = check_train_types(settings.train_types)
    security = make_security(settings.tls_ca_file, settings.tls_cert, settings.tls_key)
    checkpoint = _checked_paths(settings)
    table = load_table(
        settings.data,
        label=settings.label,
        subset=settings.subset,
        group=settings.group,
        fold=settings.fold_column,
        features=settings.features,
        exclude=settings.exclude,
        coordinates=settings.coordinates,
        rows_per_partition=settings.rows_per_partition,
    )
    measures = check_measures(settings.measures, table.task)
    with connect(settings.scheduler, security=security, log_failures=args.debug) as client:
        res = soak(
            table,
            learners,
            n_folds=settings.folds,
            seed=settings.seed,
            train_types=train_types,
            measures=measures,
            persist=not settings.no_persist,
            client=client,
            progress=not settings.no_progress,
            sizes=settings.sizes,
            ratio=settings.ratio,
            size_seeds=settings.size_seeds,
            max_train_rows=settings.max_train_rows,
            incremental=settings.incremental,
            epochs=settings.epochs,
            checkpoint=checkpoint,
        )
    store = save_results(res, settings.out, overwrite=settings.overwrite)
    if settings.checkpoint is None:  # our own: the saved results make it redundant
        remove_checkpoint(checkpoint)
    print(results_text(res, measures[0]))
    print(f"\nResults: {store}")


def _flag(option: str) -> str:
    """The ``soak run`` flag of a ``soak()`` option, for messages."""
    return "--folds" if option == "n_folds" else "--" + option.replace("_", "-")


def _checked_paths(settings: RunSettings) -> Path:
    """Check ``--out`` and the checkpoint before any work (nothing written over or into the
    input, other data or each other; ``--out`` writable); return the checkpoint's path."""
    from ..results.store import check_output
    from ..run.checkpoint import check_checkpoint_dir

    check_output(
        settings.out, overwrite=settings.overwrite, source=settings.data, flag="--overwrite"
    )
    checkpoint = Path(settings.checkpoint or f"{settings.out}.checkpoint")
    out, kept = Path(settings.out).resolve(), checkpoint.resolve()
    if out.is_relative_to(kept) or kept.is_relative_to(out):
        raise UsageError(
            f"--checkpoint {checkpoint} and --out {settings.out} overlap; give separate paths"
        )
    check_checkpoint_dir(checkpoint, source=settings.data)
    return checkpoint


def info_command(args: argparse.Namespace) -> None:
    """``soak info``: print ``soak_dask.app.info.describe_table`` of the table."""
    from ..split.folds import check_n_folds
    from ..tables.table import load_table
    from .info import describe_table

    if args.folds is not None:
        check_n_folds(args.folds, "--folds")
    table = load_table(
        args.data,
        label=args.label,
        subset=args.subset,
        group=args.group,
        fold=args.fold_column,
        features=args.features,
        exclude=args.exclude or (),
        coordinates=args.coordinates or "exclude",
        rows_per_partition=args.rows_per_partition,
    )
    print(describe_table(table, n_folds=args.folds))


def report_command(args: argparse.Namespace) -> None:
    """``soak report``: write the HTML report of a results store; print the first measure's
    results as ``soak run`` does (tests, or mean ± SD in plain K-fold CV), then its path."""
    if not Path(args.results).exists():
        raise FileNotFoundError(f"results store {args.results} does not exist; run 'soak run'")
    from ..results.report import write_report  # its own dependencies load only for this command
    from ..results.stats import results_text, validate_results
    from ..results.store import open_results

    ds = open_results(args.results)
    page = write_report(ds, args.out, overwrite=args.overwrite, flag="--overwrite")
    print(results_text(ds, validate_results(ds)[0]))
    print(page)


def demo_command(args: argparse.Namespace) -> None:
    """``soak demo``: the README's job on a generated pixel table."""
    from .demo import run_demo

    run_demo(
        args.out,
        n_pixels=args.pixels,
        n_regions=args.regions,
        n_folds=args.folds,
        seed=args.seed,
        scheduler=args.scheduler,
        progress=not args.no_progress,
    )


COMMANDS: dict[str, Callable[[argparse.Namespace], None]] = {
    "run": run_command,
    "info": info_command,
    "report": report_command,
    "demo": demo_command,
}


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    text = " ".join(str(message).split())
    print(f"soak: warning: {text}", file=sys.stderr if file is None else file)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``soak`` command; returns the exit status.

    Examples
    --------
    >>> main(["info", "pixels/", "--label", "label", "--subset", "region"])  # doctest: +SKIP
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    debug = "--debug" in argv  # known even when parsing fails
    args = None
    try:
        args = build_parser().parse_args(argv)
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            COMMANDS[args.command](args)
    except USER_ERRORS as err:
        if debug:
            raise
        message = " ".join(str(err).split()) or type(err).__name__
        print(f"soak: error: {message}", file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt:
        if debug:
            raise
        resumable = args is not None and args.command == "run"
        print(f"soak: interrupted{_RESUME_HINT if resumable else ''}", file=sys.stderr)
        return INTERRUPTED
    return 0


if __name__ == "__main__":
    sys.exit(main())
