"""The house rules (GUIDE.md) on the package's source, by ``scripts/house.py``: no import cycle,
no private name of another module, no function over 60 code lines, no import that climbs a floor.

``KNOWN`` lists the violations left today. A new one fails ``test_no_new_violation``; a fixed one
fails ``test_known_list_is_current`` until it is struck from ``KNOWN``, so the list only shrinks.
The scanner itself is tested on small packages written here, rule by rule.
"""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("house", ROOT / "scripts" / "house.py")
house = importlib.util.module_from_spec(_spec)
sys.modules["house"] = house  # dataclasses look their module up while the class is made
_spec.loader.exec_module(house)

#: Violations of today, each to be fixed (by its owner) and then struck from this list.
KNOWN: set[tuple[str, str]] = set()  # none left: a new violation fails the suite


@pytest.fixture(scope="module")
def found() -> dict:
    return {(v.rule, v.key): v for v in house.scan(ROOT)}


@pytest.mark.slow
def test_no_new_violation(found):
    new = [str(found[k]) for k in sorted(set(found) - KNOWN)]
    assert not new, "new house-rule violations (scripts/house.py):\n" + "\n".join(new)


@pytest.mark.slow
def test_known_list_is_current(found):
    fixed = sorted(KNOWN - set(found))
    assert not fixed, f"fixed, well done: strike them from KNOWN in tests/test_house.py: {fixed}"


def write_package(tmp_path: Path, files: dict[str, str]) -> Path:
    """A package ``soak_dask`` under ``tmp_path`` with ``files`` (``{"run/a.py": source}``)."""
    for name, source in {"__init__.py": "", **files}.items():
        path = tmp_path / "soak_dask" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        (path.parent / "__init__.py").touch()
        path.write_text(textwrap.dedent(source))
    return tmp_path


def rules(root: Path) -> list[tuple[str, str]]:
    return [(v.rule, v.key) for v in house.scan(root)]


def test_an_import_time_cycle_is_found_and_deferred_imports_are_not(tmp_path):
    root = write_package(
        tmp_path,
        {
            "split/a.py": "from . import b\n",
            "split/b.py": "from .c import f\n",
            "split/c.py": "from soak_dask.split import a\ndef f(): pass\n",
            # Not cycles: the import back runs inside a function, or only for type checkers.
            "split/d.py": "from .e import g\n",
            "split/e.py": "def g():\n    from . import d\n",
            "split/f.py": "from .h import x\n",
            "split/h.py": "import typing\nif typing.TYPE_CHECKING:\n    from . import f\nx = 1\n",
        },
    )
    found = [v for v in house.scan(root) if v.rule == "cycle"]
    assert [v.key for v in found] == ["soak_dask.split.a soak_dask.split.b soak_dask.split.c"]
    assert "soak_dask.split.a -> soak_dask.split.b -> soak_dask.split.c -> soak_dask.split.a" in (
        found[0].message
    )
    # Shown apart (not counted): the cycle closed inside a function; never the TYPE_CHECKING one.
    tied = house.cycles(house.all_edges(root), deferred=True)
    assert [v.key for v in tied] == [
        "soak_dask.split.a soak_dask.split.b soak_dask.split.c",
        "soak_dask.split.d soak_dask.split.e",
    ]


def test_private_names_of_another_module_are_found(tmp_path):
    root = write_package(
        tmp_path,
        {
            "run/a.py": "_x = 1\n__all__ = []\ndef _own(): return _x\n",
            "run/b.py": "from .a import _x, __all__\n",  # a dunder is not private
            "run/c.py": "def f():\n    from soak_dask.run import a\n    return a._own()\n",
        },
    )
    assert rules(root) == [
        ("private", "soak_dask.run.b soak_dask.run.a._x"),
        ("private", "soak_dask.run.c soak_dask.run.a._own"),
    ]


def test_long_functions_count_code_lines_only(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(60))
    padding = '    """Doc\n\n    string."""\n    # a comment\n\n'
    # 60 assignments: 60 code lines (the signature, decorator, docstring, comment and blank
    # lines do not count), at the limit; the method has 61, over it.
    at_limit = f"@staticmethod\ndef ok(\n    a,\n):\n{padding}{body}\n"
    over = f"class K:\n    def long(self):\n{body.replace('    ', '        ')}\n        return 1\n"
    root = write_package(tmp_path, {"learn/a.py": at_limit, "learn/b.py": over})
    assert rules(root) == [("long", "soak_dask.learn.b.K.long")]


def test_an_import_of_a_higher_floor_is_found(tmp_path):
    root = write_package(
        tmp_path,
        {
            "run/a.py": "def f():\n    from ..results import store\n",  # up, even deferred
            "results/store.py": "from ..run import a\n",  # down: fine
            "learn/b.py": "from soak_dask import thing\n",  # the package's __init__: up
        },
    )
    assert rules(root) == [
        ("floor", "soak_dask.learn.b soak_dask"),
        ("floor", "soak_dask.run.a soak_dask.results.store"),
    ]
