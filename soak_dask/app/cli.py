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
import sys
import warnings
from textwrap import indent
from typing import Any

from ..learn.builtin import describe_builtins
from ..settings import SETTINGS
from ..version import __version__
from .commands import COMMAND_TABLE, CommandSpec
from .flags import USER_ERRORS, Parser, add_dry_run, add_settings, command_names

#: Exit status of a user error, as argparse uses.
USAGE_ERROR = 2
#: Exit status after Ctrl-C (128 + SIGINT), as shells report it.
INTERRUPTED = 130
# Finished fits reach the run's checkpoint (--checkpoint, or OUT.checkpoint) as they arrive.
_RESUME_HINT = (
    "; the fits finished so far are in the checkpoint: run the same command again (same --out "
    "and --checkpoint) to resume"
)
_DEBUG = {"action": "store_true", "help": "show tracebacks on errors"}

#: What each command runs, by name (``soak_dask.app.commands``): ``COMMANDS[name](args)``.
COMMANDS: dict[str, CommandSpec] = {spec.name: spec for spec in COMMAND_TABLE}


def build_parser() -> argparse.ArgumentParser:
    """The ``soak`` argument parser and its subcommands, one per `COMMANDS` entry."""
    # The module docstring is reStructuredText; a terminal shows quotes, not ``literals``.
    parser = Parser(prog="soak", description=__doc__.replace("``", "'"))
    parser.add_argument("--debug", default=False, **_DEBUG)
    parser.add_argument("--version", action="version", version=f"soak_dask {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for spec in COMMAND_TABLE:
        _add_command(commands, spec)
    return parser


def _add_command(commands: Any, spec: CommandSpec) -> None:
    """The sub-parser of ``spec`` in ``commands`` (``add_subparsers``'s): its settings' flags
    (with a run file and ``--dry-run``), then its own."""
    kwargs = {}
    if spec.learners is not None:
        kwargs = {
            "epilog": f"{spec.learners}\n{indent(describe_builtins(), '  ')}",
            "formatter_class": argparse.RawDescriptionHelpFormatter,  # keeps the list's lines
        }
    sub = commands.add_parser(spec.name, help=spec.help, description=spec.help, **kwargs)
    sub.add_argument("--debug", default=argparse.SUPPRESS, **_DEBUG)
    if spec.scope is not None:
        names = command_names(spec.scope)
        add_settings(sub, names, run_file=True, sections=spec.sections, command=spec.scope)
        add_dry_run(sub)
    if spec.flags is not None:
        spec.flags(sub)


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
        print(f"soak: error: {error_text(err)}", file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt:
        if debug:
            raise
        # Only a command with a checkpoint setting keeps finished work to resume from.
        resumable = args is not None and args.command in SETTINGS["checkpoint"].takers
        print(f"soak: interrupted{_RESUME_HINT if resumable else ''}", file=sys.stderr)
        return INTERRUPTED
    return 0


def error_text(err: BaseException) -> str:
    """`err`'s message on one line, or its type's name: an error from a worker whose message
    cannot be made after its trip back (numpy's ``AxisError`` loses the attributes its
    ``str`` reads) is still named, not replaced by a traceback of its own.

    >>> class Lost(ValueError):
    ...     def __str__(self):
    ...         raise AttributeError("'Lost' object has no attribute 'axis'")
    >>> error_text(Lost()), error_text(ValueError("spaced   out"))
    ('Lost', 'spaced out')
    """
    try:
        text = str(err)
    except Exception:  # noqa: BLE001 -- any failure of a foreign __str__
        text = ""
    return " ".join(text.split()) or type(err).__name__


if __name__ == "__main__":
    sys.exit(main())
