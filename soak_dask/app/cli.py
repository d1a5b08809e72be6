"""The ``soak`` command line: run SOAK on a table, evaluate learners, describe a table, report
on results, and the diagnostics built on them.

Commands: ``soak run``, ``soak evaluate``, ``soak transfer``, ``soak split-sensitivity``,
``soak compare-sampling``, ``soak knndm``, ``soak info``, ``soak report``, ``soak demo``;
``soak COMMAND --help`` lists each one's flags. A user error prints one line
``soak: error: ...`` and exits with 2 (``--debug`` shows the traceback instead).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Callable, Iterable
from importlib import import_module
from textwrap import indent
from typing import Any

from ..learn.builtin import describe_builtins
from ..settings import REQUIRED, SETTINGS, Command, Setting, check_run_options, command_settings
from .config import empty_list_message, load_run_file, merge_settings

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


#: Where the flags record how the user typed them (``--folds`` or ``--n-folds``), for messages.
_TYPED = "_typed_flags"


def _note(namespace: argparse.Namespace, dest: str, option: str | None) -> None:
    if option is not None:
        setattr(namespace, _TYPED, {**getattr(namespace, _TYPED, {}), dest: option})


class _Value(argparse.Action):
    """Store a setting's value (with `extend`, add to the list of a repeated flag) and note the
    flag as typed."""

    def __init__(self, *args: Any, extend: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.extend = extend

    def __call__(self, parser, namespace, values, option_string=None) -> None:  # type: ignore[override]
        _note(namespace, self.dest, option_string)
        if self.extend:
            values = [*(getattr(namespace, self.dest, None) or []), *values]
        setattr(namespace, self.dest, values)


class _Switch(argparse.BooleanOptionalAction):
    """``--NAME`` / ``--no-NAME`` of a bool setting, noting the flag as typed."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:  # type: ignore[override]
        _note(namespace, self.dest, option_string)
        super().__call__(parser, namespace, values, option_string)


def _arg_type(setting: Setting) -> Callable[[str], Any] | None:
    """How a flag's text becomes the setting's value."""
    if setting.empty is not None:
        return _names(setting.name)
    return {"int": int, "float": float, "list": _comma_list, "modules": _comma_list}.get(
        setting.kind
    )


def _add_setting(parser: Any, setting: Setting, default: Any) -> None:
    """The argument of `setting`, and its older spellings as hidden arguments."""
    if setting.kind == "bool":
        parser.add_argument(
            setting.flag, action=_Switch, dest=setting.dest, default=default, help=setting.help
        )
        return
    kw = {
        "action": _Value,
        "type": _arg_type(setting),
        "default": default,
        "choices": setting.choices or None,
        "metavar": setting.flag if setting.positional else setting.metavar,
        "extend": setting.kind == "learners",
    }
    if setting.positional:
        required = default is not argparse.SUPPRESS
        parser.add_argument(setting.dest, nargs=None if required else "?", help=setting.help, **kw)
        return
    required = setting.default is REQUIRED and default is not argparse.SUPPRESS
    parser.add_argument(setting.flag, dest=setting.dest, required=required, help=setting.help, **kw)
    for flag in setting.alias_flags:
        parser.add_argument(flag, dest=setting.dest, help=argparse.SUPPRESS, **kw)


#: ``--help`` sections of the settings, by scope.
_SECTIONS = {
    "table": "the table (soak_dask.load_table)",
    "run": "the run (soak_dask.soak)",
    "app": "data, output and cluster",
}
#: ``soak evaluate``'s: the run settings it shares and its own make one section.
_EVALUATE_SECTIONS = {
    "table": _SECTIONS["table"],
    "run": "the evaluation (soak_dask.evaluate)",
    "evaluate": "the evaluation (soak_dask.evaluate)",
    "app": _SECTIONS["app"],
}
#: The settings ``soak demo`` takes, as flags of the same names as ``soak run``'s.
_DEMO = ("n_folds", "seed", "scheduler", "progress")
#: The settings of ``soak info``: the table's, and K for its warnings.
_INFO = ("data", *(s.name for s in SETTINGS.values() if s.scope == "table"), "n_folds")


def _add_settings(
    parser: argparse.ArgumentParser,
    names: Iterable[str],
    run_file: bool,
    sections: dict[str, str] = _SECTIONS,
) -> None:
    """The flags of the settings `names` (those with flags), in ``--help`` sections: the titles
    of `sections`, by scope.

    With ``run_file``, unset flags stay out of the namespace (``argparse.SUPPRESS``), so
    ``run`` can tell them from run-file values, and DATA and --label may come from the file.
    """
    chosen = [SETTINGS[name] for name in names if SETTINGS[name].cli]
    for title in dict.fromkeys(sections.values()):
        section = parser.add_argument_group(title)
        for setting in (s for s in chosen if sections[s.scope] == title):
            default = argparse.SUPPRESS if run_file else setting.default
            _add_setting(section, setting, None if default is REQUIRED else default)
        if title == sections["app"] and run_file:
            section.add_argument(
                "--config", metavar="FILE", help="TOML run file; flags override it"
            )


def typed_flags(args: argparse.Namespace) -> dict[str, str]:
    """Setting name -> the flag as the user typed it, of the settings given by flag."""
    by_dest = {s.dest: s.name for s in SETTINGS.values()}
    return {by_dest[dest]: flag for dest, flag in getattr(args, _TYPED, {}).items()}


def _spell(args: argparse.Namespace) -> Callable[[str], str]:
    """How messages name a setting: the flag as typed, else its flag."""
    typed = typed_flags(args)
    return lambda name: typed.get(name, SETTINGS[name].flag)


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

    builtins = {
        "epilog": f"built-in learners (--learner NAME):\n{indent(describe_builtins(), '  ')}",
        "formatter_class": argparse.RawDescriptionHelpFormatter,  # keeps the list's lines
    }
    _add_settings(
        command("run", "run SOAK on a table and save the results", **builtins),
        _command_names("run"),
        run_file=True,
    )
    _add_settings(
        command(
            "evaluate",
            "estimate how well learners predict new rows (K-fold, repeated, subsampling, LOO, "
            "LODO or bootstrap; optional reserved test split) and save the results",
            **builtins,
        ),
        _command_names("evaluate"),
        run_file=True,
        sections=_EVALUATE_SECTIONS,
    )

    for module, _ in _EXTRA.values():
        import_module(f".{module}", __package__).add_parser(command)

    info = command("info", "describe a table: task, features, rows per subset × label, warnings")
    _add_settings(info, _INFO, run_file=False)

    report = command("report", "write an HTML report of saved results")
    report.add_argument("results", help="results store written by 'soak run' or 'soak evaluate'")
    report.add_argument("--out", required=True, help="report directory")
    report.add_argument("--overwrite", action="store_true", help="replace an existing report")

    demo = command("demo", "run SOAK on a generated pixel table (the README's job)")
    demo.add_argument("--out", default="soak_demo_output", help="output directory")
    demo.add_argument("--pixels", type=int, default=60_000, help="pixels to generate")
    demo.add_argument("--regions", type=int, default=3, help="regions (subsets)")
    for name in _DEMO:
        _add_setting(demo, SETTINGS[name], SETTINGS[name].default)
    return parser


def _command_names(command: Command) -> list[str]:
    """The settings of ``soak COMMAND``, by name."""
    return [s.name for s in command_settings(command)]


def run_settings(args: argparse.Namespace, command: Command = "run") -> Any:
    """The run file's settings (``--config``) overridden by the flags given, checked (errors
    name each flag as typed, each run-file key as written): a ``RunSettings``, or an
    ``EvaluateSettings`` for ``soak evaluate``."""
    file = load_run_file(args.config) if args.config else {}
    by_dest = {s.dest: s.name for s in command_settings(command) if s.cli}
    flags = {by_dest[dest]: value for dest, value in vars(args).items() if dest in by_dest}
    return merge_settings(file, flags, typed_flags(args), command)


def _values(settings: Any, command: Command, scopes: tuple[str, ...]) -> dict[str, Any]:
    """The settings of `command` in `scopes` that have flags, by name: keywords of
    ``load_table``, ``soak`` or ``evaluate``."""
    return {
        s.name: getattr(settings, s.dest)
        for s in command_settings(command)
        if s.scope in scopes and s.cli
    }


def _run(settings: Any, command: Command, call: Callable[..., Any], debug: bool) -> tuple:
    """What ``soak run`` and ``soak evaluate`` share: check everything that needs no cluster
    (learners, TLS files, ``--out`` and the checkpoint, the table, the measures), run
    ``call(table, ..., client=client)`` on the cluster, save the results and remove our own
    checkpoint. Returns the results, the measures and the store's path."""
    from ..learn.measures import check_measures
    from ..results.store import save_results
    from ..run.checkpoint import remove_checkpoint
    from ..run.cluster import connect, make_security
    from ..tables.table import load_table

    learners = settings.learners()
    security = make_security(settings.tls_ca_file, settings.tls_cert, settings.tls_key)
    checkpoint = _checked_paths(settings)
    table = load_table(settings.data, **_values(settings, command, ("table",)))
    measures = check_measures(settings.measures, table.task)
    options = _values(settings, command, ("run", "evaluate"))
    options.update(learners=learners, measures=measures, checkpoint=checkpoint)
    with connect(settings.scheduler, security=security, log_failures=debug) as client:
        res = call(table, **options, client=client)
    store = save_results(res, settings.out, overwrite=settings.overwrite)
    if settings.checkpoint is None:  # our own: the saved results make it redundant
        remove_checkpoint(checkpoint)
    return res, measures, store


def run_command(args: argparse.Namespace) -> None:
    """``soak run``: load the table, run SOAK on the cluster, save and summarise the results."""
    from ..results.stats import results_text
    from ..run.engine import soak

    res, measures, store = _run(run_settings(args), "run", soak, args.debug)
    print(results_text(res, measures[0]))
    print(f"\nResults: {store}")


def evaluate_command(args: argparse.Namespace) -> None:
    """``soak evaluate``: load the table, run ``evaluate`` on the cluster, save the results
    (and the final models with ``--models``), print mean ± SD and the test split's interval."""
    from ..results.stats import evaluation_text
    from ..run.evaluate import evaluate

    settings = run_settings(args, "evaluate")
    res, _, store = _run(settings, "evaluate", evaluate, args.debug)
    print(evaluation_text(res))
    print(f"\nResults: {store}")
    if settings.models is not None:
        print(f"Models: {settings.models}")


def _checked_paths(settings: Any) -> str | os.PathLike:
    """Check ``--out``, the checkpoint and ``--models`` (of ``soak evaluate``) before any work
    (nothing written over or into the input, other data or each other; ``--out`` writable);
    return the checkpoint's path or URL (``s3://…`` as well: credentials come from the
    environment)."""
    from ..results.store import check_apart, check_output, overlaps
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
        check_apart(models, settings.data, "models")
        for flag, path in (("--out", settings.out), ("--checkpoint", checkpoint)):
            if overlaps(models, path):
                raise UsageError(
                    f"--models {models} and {flag} {path} overlap; give separate paths"
                )
    return checkpoint


def info_command(args: argparse.Namespace) -> None:
    """``soak info``: print ``soak_dask.app.info.describe_table`` of the table."""
    from ..tables.table import load_table
    from .info import describe_table

    given = {s.name: getattr(args, s.dest) for s in map(SETTINGS.get, _INFO) if s.cli}
    values = check_run_options(given, spell=_spell(args))
    n_folds = values.pop("n_folds")
    table = load_table(values.pop("data"), **values)
    print(describe_table(table, n_folds=n_folds))


def report_command(args: argparse.Namespace) -> None:
    """``soak report``: write the HTML report of a results store; print what ``soak run`` or
    ``soak evaluate`` printed (the first measure's tests, or mean ± SD), then the page's path."""
    from ..results.report import write_report  # its own dependencies load only for this command
    from ..results.stats import evaluation_text, is_evaluation, results_text, validate_results
    from ..results.store import open_results

    ds = open_results(args.results)
    page = write_report(ds, args.out, overwrite=args.overwrite, flag="--overwrite")
    if is_evaluation(ds):
        print(evaluation_text(ds))
    else:
        print(results_text(ds, validate_results(ds)[0]))
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
    "knndm": ("knndm_cli", "knndm_command"),
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
        resumable = args is not None and args.command in ("run", "evaluate")
        print(f"soak: interrupted{_RESUME_HINT if resumable else ''}", file=sys.stderr)
        return INTERRUPTED
    return 0


if __name__ == "__main__":
    sys.exit(main())
