"""The command table (``soak_dask.app.commands``): ``soak``'s parser and dispatch come from it,
its records agree with the settings, the result-kind registry and docs/cli.md, and a new record
is a new command."""

from __future__ import annotations

import argparse
import dataclasses
import re
from pathlib import Path

import pytest

import soak_dask.result_kinds  # noqa: F401  (registers the built-in kinds)
from soak_dask.app import cli
from soak_dask.app.commands import COMMAND_TABLE, INPUTS, OUTPUTS, CommandSpec
from soak_dask.results.registry import registered
from soak_dask.settings import COMMANDS as SETTINGS_COMMANDS

from ..test_lazy_import import fresh_python

DOCS = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def flags_of(parser: argparse.ArgumentParser) -> set[str]:
    return {flag for action in parser._actions for flag in action.option_strings}


def test_the_parser_has_one_subcommand_per_record_in_order():
    subs = subparsers(cli.build_parser())
    assert list(subs) == [spec.name for spec in COMMAND_TABLE] == list(cli.COMMANDS)
    for spec in COMMAND_TABLE:
        sub = subs[spec.name]
        assert sub.description == spec.help and "--debug" in flags_of(sub)
        # a settings scope brings the run file and the dry run; flags of its own do not
        assert ("--dry-run" in flags_of(sub)) is (spec.scope is not None), spec.name
        assert ("--config" in flags_of(sub)) is (spec.scope is not None), spec.name
        assert (spec.learners is not None) == bool(sub.epilog), spec.name


def test_records_agree_with_the_settings_and_the_registry():
    names = [spec.name for spec in COMMAND_TABLE]
    assert len(set(names)) == len(names)
    scopes = [spec.scope for spec in COMMAND_TABLE if spec.scope is not None]
    # every settings command is one command's scope, but search: soak transfer takes it
    assert sorted(scopes) == sorted(set(SETTINGS_COMMANDS) - {"search"})
    kinds = [kind for spec in COMMAND_TABLE for kind in spec.kinds]
    assert sorted(kinds) == sorted(registered())  # each registered kind saved by one command
    for spec in COMMAND_TABLE:
        assert (spec.scope is None) != (spec.flags is None), spec.name  # one source of flags
        assert set(spec.reads) <= set(INPUTS) and spec.writes in (*OUTPUTS, None), spec.name
        function = spec.load()
        assert callable(function) and spec.function.endswith(f":{function.__name__}")
        assert function.__module__.startswith("soak_dask.app."), spec.name
    with pytest.raises(dataclasses.FrozenInstanceError):
        COMMAND_TABLE[0].name = "other"  # type: ignore[misc]


def _cell(text: str) -> tuple[str, ...]:
    return tuple(part.strip().strip("`") for part in text.split(",") if part.strip())


def test_docs_list_the_table_as_declared():
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index("The table, as declared") :]
    rows = re.findall(r"^\| `([a-z-]+)` \|([^|]*)\|([^|]*)\|([^|]*)\|([^|]*)\|$", section, re.M)
    documented = {name: tuple(map(_cell, cells)) for name, *cells in rows}
    declared = {
        spec.name: (_cell(spec.scope or ""), spec.kinds, spec.reads, _cell(spec.writes or ""))
        for spec in COMMAND_TABLE
    }
    assert documented == declared


def test_a_new_record_is_a_new_command(tmp_path, capsys, monkeypatch):
    """One more record: its sub-parser, its flags and its function run by ``soak``."""
    (tmp_path / "t.csv").write_text(
        "a,s,y\n" + "".join(f"{i},{i % 2},{i % 3}\n" for i in range(30))
    )
    info = next(spec for spec in COMMAND_TABLE if spec.name == "info")
    new = dataclasses.replace(info, name="describe", help="describe a table, by another name")
    monkeypatch.setattr(cli, "COMMAND_TABLE", (*COMMAND_TABLE, new))
    monkeypatch.setitem(cli.COMMANDS, new.name, new)
    argv = [str(tmp_path / "t.csv"), "--label", "y", "--subset", "s"]
    assert cli.main(["describe", *argv]) == 0
    described = capsys.readouterr().out
    assert cli.main(["info", *argv]) == 0
    assert described == capsys.readouterr().out and "rows" in described
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["describe", "--help"])
    assert "describe a table, by another name" in capsys.readouterr().out


@pytest.mark.slow
def test_help_imports_no_command_s_module():
    code = """
import contextlib, io, sys
from soak_dask.app.cli import COMMAND_TABLE, main
for argv in (["--help"], *([spec.name, "--help"] for spec in COMMAND_TABLE)):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        main(argv)
modules = {"soak_dask.app." + spec.function.split(":")[0] for spec in COMMAND_TABLE}
print(*sorted(m for m in modules if m in sys.modules))
"""
    assert fresh_python(code).split() == []


def test_a_record_names_its_function_lazily():
    spec = CommandSpec("x", "x", "no_such_module:run", writes=None, flags=lambda parser: None)
    with pytest.raises(ModuleNotFoundError, match="no_such_module"):
        spec.load()
