"""The flags of ``soak``'s commands, made from the settings declared in ``soak_dask.settings``:
one argument per setting (its older spellings hidden, its former names hidden and refused),
``--help`` sections by scope, how messages name a setting (the flag as the user typed it), and
a command's settings from its run file and flags (`run_settings`). Every sub-command builds its
flags here."""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Callable, Iterable
from typing import Any

from ..settings import (
    REQUIRED,
    SETTINGS,
    Command,
    Setting,
    check_run_options,
    command_line_settings,
    command_settings,
)
from .config import empty_list_message, load_run_file, merge_settings


class UsageError(Exception):
    """A bad command line, raised instead of argparse's print-usage-and-exit."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see '{self.prog} --help')")

    def parse_args(self, args: Any = None, namespace: Any = None) -> argparse.Namespace:  # type: ignore[override]
        """As argparse's, and an unknown flag is refused naming the nearest flag of the
        command (``--repeats`` -> ``--n-repeats``)."""
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            command = getattr(parsed, "command", None)
            near = nearest_flags(extra, self.shown_flags(command))
            prog = self.prog if command is None else f"{self.prog} {command}"
            raise UsageError(
                f"unrecognized arguments: {' '.join(extra)}{near} (see '{prog} --help')"
            )
        return parsed

    def shown_flags(self, command: str | None = None) -> list[str]:
        """The flags ``--help`` shows, of this parser and of its sub-command ``command``."""
        parsers = [self]
        for action in self._actions:
            choices = getattr(action, "choices", None)  # the sub-commands' parsers, by name
            if isinstance(choices, dict) and command in choices:
                parsers.append(choices[command])
        return [
            flag
            for parser in parsers
            for action in parser._actions
            if action.help != argparse.SUPPRESS
            for flag in action.option_strings
        ]


def nearest_flags(given: list[str], flags: list[str]) -> str:
    """`` (did you mean ...?)`` naming the flag nearest each unknown flag in ``given``, or "".

    >>> nearest_flags(["--repeats", "3"], ["--n-repeats", "--ratios", "--out"])
    ' (did you mean --n-repeats?)'
    >>> nearest_flags(["--zzz"], ["--n-repeats"])
    ''
    """
    near = [
        match[0]
        for token in given
        if token.startswith("--")
        and (match := difflib.get_close_matches(token.split("=")[0], flags, n=1, cutoff=0.7))
    ]
    return f" (did you mean {', '.join(near)}?)" if near else ""


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


def _floats(text: str) -> list[float]:
    try:
        return [float(v) for v in _comma_list(text)]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: need comma-separated numbers, e.g. 0.5,0.7,0.8,0.9"
        ) from None


class _Renamed(argparse.Action):
    """A former flag: refused, naming the new one."""

    def __init__(self, *args: Any, new: str = "", **kwargs: Any) -> None:
        super().__init__(*args, nargs="?", **kwargs)
        self.new = new

    def __call__(self, parser, namespace, values, option_string=None) -> None:  # type: ignore[override]
        raise UsageError(f"{option_string} is now {self.new}")


def _arg_type(setting: Setting) -> Callable[[str], Any] | None:
    """How a flag's text becomes the setting's value."""
    if setting.empty is not None:
        return _names(setting.name)
    return {
        "int": int, "float": float, "list": _comma_list, "modules": _comma_list,
        "floats": _floats,
    }.get(setting.kind)  # fmt: skip


def add_setting(parser: Any, setting: Setting, default: Any) -> None:
    """The argument of `setting`, its older spellings as hidden arguments, and its former
    flags as hidden arguments that refuse, naming the new flag."""
    for flag in setting.renamed_flags:
        parser.add_argument(
            flag, action=_Renamed, new=setting.flag, dest=argparse.SUPPRESS,
            default=argparse.SUPPRESS, help=argparse.SUPPRESS,
        )  # fmt: skip
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
SECTIONS = {
    "table": "the table (soak_dask.load_table)",
    "run": "the run (soak_dask.soak)",
    "app": "data, output and cluster",
}


def add_settings(
    parser: argparse.ArgumentParser,
    names: Iterable[str],
    run_file: bool,
    sections: dict[str, str] = SECTIONS,
    command: str | None = None,
) -> None:
    """The flags of the settings `names` (those with flags), in ``--help`` sections: the titles
    of `sections`, by scope.

    With ``run_file``, unset flags stay out of the namespace (``argparse.SUPPRESS``), so
    ``run`` can tell them from run-file values, and DATA and --label may come from the file.
    With `command`, each setting as that command takes it (its help, default and check
    there; ``command_settings``).
    """
    chosen = [SETTINGS[name] for name in names if SETTINGS[name].cli]
    if command is not None:
        mine = {s.name: s for s in command_settings(command)}
        chosen = [mine.get(s.name, s) for s in chosen]
    for title in dict.fromkeys(sections.values()):
        section = parser.add_argument_group(title)
        for setting in (s for s in chosen if sections[s.scope] == title):
            default = argparse.SUPPRESS if run_file else setting.default
            add_setting(section, setting, None if default is REQUIRED else default)
        if title == sections["app"] and run_file:
            section.add_argument(
                "--config", metavar="FILE", help="TOML run file; flags override it"
            )


def typed_flags(args: argparse.Namespace) -> dict[str, str]:
    """Setting name -> the flag as the user typed it, of the settings given by flag."""
    by_dest = {s.dest: s.name for s in SETTINGS.values()}
    return {by_dest[dest]: flag for dest, flag in getattr(args, _TYPED, {}).items()}


def spell(args: argparse.Namespace) -> Callable[[str], str]:
    """How messages name a setting: the flag as typed, else its flag."""
    typed = typed_flags(args)
    return lambda name: typed.get(name, SETTINGS[name].flag)


def checked_flags(args: argparse.Namespace, names: Iterable[str]) -> dict[str, Any]:
    """The settings `names` (those with flags) of a command without a run file, by name,
    checked (``check_run_options``; messages name each flag as typed)."""
    given = {s.name: getattr(args, s.dest) for s in map(SETTINGS.get, names) if s.cli}
    return check_run_options(given, spell=spell(args))


def add_output(parser: Any, command: str, what: str = "directory to write") -> None:
    """``--out DIR`` and ``--overwrite`` of a command that writes a directory, with the one
    output rule's meaning (``soak_dask.io.outdir``) in the help."""
    parser.add_argument("--out", required=True, metavar="DIR", help=what)
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help=f"replace the output of an earlier '{command}' in --out (only the files it wrote; "
        "a directory holding other files is refused)",
    )


def command_names(command: Command) -> list[str]:
    """The settings of ``soak COMMAND``, by name."""
    return [s.name for s in command_line_settings(command)]


def run_settings(args: argparse.Namespace, command: Command = "run") -> Any:
    """The run file's settings (``--config``) overridden by the flags given, checked (errors
    name each flag as typed, each run-file key as written): a ``RunSettings``, an
    ``EvaluateSettings`` for ``soak evaluate``... (``soak_dask.app.config``)."""
    file = load_run_file(args.config) if args.config else {}
    by_dest = {s.dest: s.name for s in command_line_settings(command) if s.cli}
    flags = {by_dest[dest]: value for dest, value in vars(args).items() if dest in by_dest}
    dry = getattr(args, "dry_run", False)
    return merge_settings(file, flags, typed_flags(args), command, dry_run=dry)


def setting_values(settings: Any, command: Command, scopes: tuple[str, ...]) -> dict[str, Any]:
    """The settings of `command` in `scopes` that have flags, by name: keywords of
    ``load_table``, ``soak``, ``evaluate``... (each command's settings object, `run_settings`,
    holds them)."""
    return {
        s.name: getattr(settings, s.dest)
        for s in command_line_settings(command)
        if s.scope in scopes and s.cli
    }


def add_dry_run(parser: Any) -> None:
    """``--dry-run`` of a command that fits: ``cli.main`` then runs it under
    ``soak_dask.dry_run`` and prints the plan's cost instead of fitting."""
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan and its cost (fits, rows per fit, each learner's strategy, the "
        "largest fit's estimated memory against the workers' limit, passes over the data) "
        "and exit without fitting or writing anything",
    )


def check_command_out(writer: str, out: Any, overwrite: bool, source: Any) -> Any:
    """A command's ``--out``, checked before any work (``soak_dask.io.outdir``): apart
    from the input `source`, and new, empty or `writer`'s earlier output (replaced with
    ``--overwrite``); messages name ``--out`` and ``--overwrite``. An ``OutputDir``."""
    from ..io.outdir import check_out_dir  # imported when a command runs, not at start-up

    return check_out_dir(
        out, writer=writer, overwrite=overwrite, source=source, name="--out", flag="--overwrite"
    )
