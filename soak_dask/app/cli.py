"""The ``soak`` command line: run SOAK on a table, evaluate learners, describe a table, report
on results, and the diagnostics built on them.

Commands: ``soak run``, ``soak evaluate``, ``soak transfer``, ``soak split-sensitivity``,
``soak compare-sampling``, ``soak aoa``, ``soak knndm``, ``soak extract``, ``soak info``,
``soak report``, ``soak demo``;
``soak COMMAND --help`` lists each one's flags. A user error prints one line
``soak: error: ...`` and exits with 2 (``--debug`` shows the traceback instead).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Callable
from importlib import import_module
from textwrap import indent
from typing import Any

from ..learn.builtin import describe_builtins
from ..settings import SETTINGS, Command, check_run_options
from ..version import __version__
from .flags import (
    SECTIONS,
    USER_ERRORS,
    Parser,
    UsageError,
    add_dry_run,
    add_setting,
    add_settings,
    command_names,
    run_settings,
    setting_values,
    spell,
)
from .spatial_flags import add_spatial_flags, spatial_options

#: Exit status of a user error, as argparse uses.
USAGE_ERROR = 2
#: Exit status after Ctrl-C (128 + SIGINT), as shells report it.
INTERRUPTED = 130
# Finished fits reach the run's checkpoint (--checkpoint, or OUT.checkpoint) as they arrive.
_RESUME_HINT = (
    "; the fits finished so far are in the checkpoint: run the same command again (same --out "
    "and --checkpoint) to resume"
)


#: ``soak evaluate``'s: the run settings it shares and its own make one section.
_EVALUATE_SECTIONS = {
    "table": SECTIONS["table"],
    "run": "the evaluation (soak_dask.evaluate)",
    "evaluate": "the evaluation (soak_dask.evaluate)",
    "app": SECTIONS["app"],
}
#: The settings ``soak demo`` takes, as flags of the same names as ``soak run``'s.
_DEMO = ("n_folds", "seed", "scheduler", "progress")
#: The settings of ``soak info``: the table's, and K and the group assignment for its warnings.
_INFO = (
    "data",
    *(s.name for s in SETTINGS.values() if s.scope == "table"),
    "blocks",
    "block_shape",
    "clusters",
    "n_folds",
    "group_assignment",
)


def build_parser() -> argparse.ArgumentParser:
    """The ``soak`` argument parser and its subcommands."""
    # The module docstring is reStructuredText; a terminal shows quotes, not ``literals``.
    parser = Parser(prog="soak", description=__doc__.replace("``", "'"))
    debug = {"action": "store_true", "help": "show tracebacks on errors"}
    parser.add_argument("--debug", default=False, **debug)
    parser.add_argument("--version", action="version", version=f"soak_dask {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help_text: str, **kwargs: Any) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text, **kwargs)
        sub.add_argument("--debug", default=argparse.SUPPRESS, **debug)
        return sub

    builtins = {
        "epilog": f"built-in learners (--learner NAME):\n{indent(describe_builtins(), '  ')}",
        "formatter_class": argparse.RawDescriptionHelpFormatter,  # keeps the list's lines
    }
    add_settings(
        command("run", "run SOAK on a table and save the results", **builtins),
        command_names("run"),
        run_file=True,
        command="run",
    )
    add_settings(
        command(
            "evaluate",
            "estimate how well learners predict new rows (K-fold, repeated, subsampling, LOO, "
            "LODO or bootstrap; optional reserved test split) and save the results",
            **builtins,
        ),
        command_names("evaluate"),
        run_file=True,
        sections=_EVALUATE_SECTIONS,
        command="evaluate",
    )
    for name in ("run", "evaluate"):
        add_dry_run(commands.choices[name])

    for module, _ in _EXTRA.values():
        import_module(f".{module}", __package__).add_parser(command)

    info = command("info", "describe a table: task, features, rows per subset × label, warnings")
    add_settings(info, _INFO, run_file=False)
    add_spatial_flags(info)

    report = command("report", "write an HTML report of saved results")
    report.add_argument(
        "results",
        help="results store of any kind: written by soak run, soak evaluate or save_results "
        "(transfer, search_subsets, split_sensitivity, compare_sampling results too), or the "
        "--out directory of soak split-sensitivity or soak compare-sampling (its one store); "
        "also an AOA Zarr store, or the --out directory of soak aoa or soak knndm",
    )
    report.add_argument("--out", required=True, help="report directory")
    report.add_argument("--overwrite", action="store_true", help="replace an existing report")

    demo = command("demo", "run SOAK on a generated pixel table (the README's job)")
    demo.add_argument("--out", default="soak_demo_output", help="output directory")
    demo.add_argument("--pixels", type=int, default=60_000, help="pixels to generate")
    demo.add_argument("--regions", type=int, default=3, help="regions (subsets)")
    for name in _DEMO:
        add_setting(demo, SETTINGS[name], SETTINGS[name].default)
    return parser


#: The function each of ``soak run`` and ``soak evaluate`` runs, as (module, name): imported
#: once the checks that need no cluster have passed.
_CALLS = {"run": (".run.engine", "soak"), "evaluate": (".run.evaluate", "evaluate")}


def _run(settings: Any, command: Command, debug: bool) -> tuple:
    """What ``soak run`` and ``soak evaluate`` share: check everything that needs no data
    (learners, ``--out`` and the checkpoint, TLS files), then on the cluster load the table
    (its passes read by the workers), check the measures against its task and run the
    command's function (``_CALLS``); save the results and remove our own checkpoint.
    Returns the results, the measures and the store's path. Each check imports only what it
    needs, so a mistake found early is refused before the engine loads."""
    learners = settings.learners()
    # A dry run given no --out writes nothing, so has neither --out nor a checkpoint to check.
    checkpoint = _checked_paths(settings) if settings.out is not None else None
    from ..run.cluster import connect, make_security

    security = make_security(settings.tls_ca_file, settings.tls_cert, settings.tls_key)
    from ..learn.measures import check_measures
    from ..results.store import save_results
    from ..run.checkpoint import remove_checkpoint
    from .table_input import open_table, table_settings

    module, name = _CALLS[command]
    call = getattr(import_module(module, "soak_dask"), name)
    options = setting_values(settings, command, ("run", "evaluate"))
    options.update(learners=learners, checkpoint=checkpoint)
    with connect(settings.scheduler, security=security, log_failures=debug) as client:
        # Loaded on the cluster: its passes over the data (column traps, duplicate rows, the
        # fold file's check) are read by the workers, not by this process.
        table = open_table(settings.data, table_settings(settings, command))
        measures = options["measures"] = check_measures(
            settings.measures, table.task, prior_correction=settings.prior_correction
        )
        res = call(table, **options, client=client)
    # A concurrent run may have written --out since the check at the start: name the flag.
    store = save_results(res, settings.out, overwrite=settings.overwrite, flag="--overwrite")
    if settings.checkpoint is None:  # our own: the saved results make it redundant
        remove_checkpoint(checkpoint)
    return res, measures, store


def run_command(args: argparse.Namespace) -> None:
    """``soak run``: load the table, run SOAK on the cluster, save and summarise the results."""
    settings = run_settings(args)  # every flag and run-file value checked before the engine loads
    res, measures, store = _run(settings, "run", args.debug)
    from ..results.stats import results_text

    print(results_text(res, measures[0]))
    print(f"\nResults: {store}")


def evaluate_command(args: argparse.Namespace) -> None:
    """``soak evaluate``: load the table, run ``evaluate`` on the cluster, save the results
    (and the final models with ``--models``), print mean ± SD, the test split's interval and
    the learners compared (the design's recommended test, with its interval)."""
    settings = run_settings(args, "evaluate")  # checked before the engine loads
    res, _, store = _run(settings, "evaluate", args.debug)
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


def info_command(args: argparse.Namespace) -> None:
    """``soak info``: print ``soak_dask.app.info.describe_table`` of the table."""
    from .info import describe_table, spatial_info
    from .table_input import open_table

    given = {s.name: getattr(args, s.dest) for s in map(SETTINGS.get, _INFO) if s.cli}
    values = check_run_options(given, spell=spell(args))
    spatial = spatial_options(args)
    n_folds, assignment = values.pop("n_folds"), values.pop("group_assignment")
    table = open_table(values.pop("data"), values)
    # The range first: a table without coordinates is refused before the pass of describe.
    ranged = None if spatial is None else spatial_info(table, n_folds, **spatial)
    print(describe_table(table, n_folds=n_folds, group_assignment=assignment))
    if ranged is not None:
        print(f"\n{ranged}")


def report_command(args: argparse.Namespace) -> None:
    """``soak report``: render a results store of any kind, an AOA store or a spatial
    command's directory (``soak_dask.app.render.render_path``) into ``--out``; print what the
    command that made it printed, then the main file's path."""
    from ..io.locations import check_apart
    from .render import render_path  # each renderer's dependencies load only for its kind

    check_apart(args.out, args.results, "report", source_name="results store")
    text, page = render_path(args.results, args.out, args.overwrite)
    print(text)
    print(page)


def demo_command(args: argparse.Namespace) -> None:
    """``soak demo``: the README's job on a generated pixel table."""
    from .demo import run_demo

    given = {name: getattr(args, name) for name in _DEMO}
    run_demo(
        args.out,
        n_pixels=args.pixels,
        n_regions=args.regions,
        **{name: value for name, value in given.items() if value is not None},  # else run_demo's
    )


#: Subcommands kept in their own modules (each imports this one, so they load on use):
#: name -> (module of soak_dask.app, its command function).
_EXTRA: dict[str, tuple[str, str]] = {
    "transfer": ("transfer_cli", "transfer_command"),
    "split-sensitivity": ("sensitivity_cli", "split_sensitivity_command"),
    "compare-sampling": ("sampling_cli", "compare_sampling_command"),
    "aoa": ("aoa_cli", "aoa_command"),
    "knndm": ("knndm_cli", "knndm_command"),
    "extract": ("extract_cli", "extract_command"),
}


def _extra_command(module: str, function: str) -> Callable[[argparse.Namespace], None]:
    def command(args: argparse.Namespace) -> None:
        getattr(import_module(f".{module}", __package__), function)(args)

    return command


COMMANDS: dict[str, Callable[[argparse.Namespace], None]] = {
    "run": run_command,
    "evaluate": evaluate_command,
    "info": info_command,
    "report": report_command,
    "demo": demo_command,
    **{name: _extra_command(*where) for name, where in _EXTRA.items()},
}


def _dry_run(args: argparse.Namespace) -> str:
    """``soak COMMAND --dry-run``: the command run under ``soak_dask.dry_run`` up to its first
    plan's fits (its checks, the table's keys and counts, the cluster's memory limit)."""
    from ..run.cost import dry_run

    costs = dry_run(COMMANDS[args.command], args)
    return f"soak {args.command} --dry-run: nothing was fitted or written\n\n{costs}"


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
            if getattr(args, "dry_run", False):  # the plan's cost; nothing fitted or written
                print(_dry_run(args))
            else:
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
        # Only a command with a checkpoint setting keeps finished work to resume from.
        resumable = args is not None and args.command in SETTINGS["checkpoint"].takers
        print(f"soak: interrupted{_RESUME_HINT if resumable else ''}", file=sys.stderr)
        return INTERRUPTED
    return 0


if __name__ == "__main__":
    sys.exit(main())
