"""The house rules of GUIDE.md checked on the package's source (AST only, nothing imported).

Run ``python scripts/house.py`` from the repository root: it prints every violation, one a
line, grouped by rule, and exits 1 if there is any. ``tests/test_house.py`` runs the same scan
and fails on any violation not in its list of known ones.

Rules, and how each is counted:

``cycle``
    Import cycles between modules, counting only imports executed when the module is
    imported: statements at module level (also inside a module-level ``if``/``try``/``with``
    and class bodies), not under ``if TYPE_CHECKING:``, not inside functions. An edge goes to
    the module named (``from soak_dask.a import b`` goes to ``soak_dask.a.b`` when ``b`` is a
    module, else to ``soak_dask.a``); the implicit import of parent packages is not an edge.
    A cycle is reported once per strongly connected component, as one closed path through it.
``private``
    A private name (one leading underscore, not a dunder) of another module of the package
    imported (``from m import _x``), or read as an attribute of an imported package module
    (``m._x``), at any level.
``long``
    A function (or method) over ``MAX_LINES`` code lines. Code lines are the physical lines
    of its body (after the signature, which is its API: a function of thirty keyword options
    is not long for them) holding a token other than a comment: blank lines, comment lines,
    decorators, the signature and the docstring do not count; a nested function's lines count
    for the function holding it too.
``floor``
    An import (at any level, also inside functions) from a module to one on a higher floor.
    Floors, lowest first: ``FLOORS`` below; modules of one floor may import each other.
    The package's ``__init__`` (the public face) is above every floor.
"""

from __future__ import annotations

import ast
import io
import sys
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "soak_dask"
MAX_LINES = 60

#: Floors, lowest first: a module may import from its own floor and those below it.
#: Results sit above the run path (``run/`` writes through a store it should not need
#: ``results/`` for); designs built on the run path (transfer, diagnostics, spatial) sit above
#: the results they render, each defining its own kinds of result for the registry in
#: ``results/`` (``results.registry``), which knows none of them; ``result_kinds`` registers
#: them all, one line each, above every package that defines one; the command line is on top.
#: ``io`` (locations, the checks before writing, the output-directory rule) sits beside
#: ``tables``: ``learn/`` saves models by it and ``run/`` writes checkpoints through it.
#: ``stats`` (tests on plain arrays, needing only ``schema``) is on the ground floor, below
#: ``run/`` (``evaluate`` counts McNemar's cells) and ``results/`` (``compare``, ``pvalues``).
#: ``settings`` (every option declared once) and ``option_checks`` (the door that checks them)
#: sit beside ``split/``: they need only ``schema`` and the fold options, and the public
#: functions of ``split/`` (the sampling splits) check their options at the door too.
#: ``dask_client`` (the client in use) is there too: kNNDM's folds in ``split/`` send their
#: candidates to it, as the run path does; and ``workers`` (what a task may hold on them):
#: the block-wise neighbour search in ``split/`` sizes its tasks by it, as the run path does.
FLOORS: list[set[str]] = [
    {
        "version",
        "hashing",
        "reduction",
        "schema",
        "stats",
        "dask_client",
        "workers",
        "user_warning",
    },
    {"tables", "io"},
    {"learn", "split", "compiled", "settings", "option_checks", "run_options"},
    {"run"},
    {"results"},
    {"diagnose", "pooling", "spatial"},
    {"result_kinds"},
    {"app"},
]


@dataclass(frozen=True, order=True)
class Violation:
    """One breach of a house rule: ``rule``, a stable ``key`` (for the known list), a message."""

    rule: str
    key: str
    message: str

    def __str__(self) -> str:
        return f"{self.rule}: {self.message}"


def modules(root: Path) -> dict[str, Path]:
    """``{dotted name: path}`` of every module of the package under ``root``."""
    out = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _is_package(name: str, mods: dict[str, Path]) -> bool:
    return mods[name].name == "__init__.py"


def _base(module: str, node: ast.ImportFrom, mods: dict[str, Path]) -> str:
    """The absolute name ``from X import`` names in ``module``."""
    if not node.level:
        return node.module or ""
    package = module if _is_package(module, mods) else module.rpartition(".")[0]
    parts = package.split(".")
    parts = parts[: len(parts) - node.level + 1]
    return ".".join([*parts, *([node.module] if node.module else [])])


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_time(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements of ``body`` run when the module is imported: not in functions, not under
    ``if TYPE_CHECKING:``."""
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        yield node
        if isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                yield from _import_time(node.body)
            yield from _import_time(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                yield from _import_time(block)
        elif isinstance(node, ast.With | ast.ClassDef):
            yield from _import_time(node.body)


@dataclass(frozen=True)
class Edge:
    """``source`` imports ``target`` (a module of the package); ``names`` taken from it."""

    source: str
    target: str
    line: int
    names: tuple[str, ...]
    import_time: bool
    typing_only: bool = False  # under ``if TYPE_CHECKING:``: never run


def edges(module: str, tree: ast.Module, mods: dict[str, Path]) -> list[Edge]:
    """Every import in ``module`` of a module of the package."""
    at_import = {id(n) for n in _import_time(tree.body)}
    typing_only = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and _is_type_checking(node.test)
        for n in ast.walk(node)
    }
    out = []
    for node in ast.walk(tree):
        now, typing = id(node) in at_import, id(node) in typing_only
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE and alias.name in mods:
                    out.append(Edge(module, alias.name, node.lineno, (), now, typing))
        elif isinstance(node, ast.ImportFrom):
            base = _base(module, node, mods)
            if base.split(".")[0] != PACKAGE:
                continue
            plain = []
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in mods:
                    out.append(Edge(module, sub, node.lineno, (), now, typing))
                else:
                    plain.append(alias.name)
            if plain and base in mods:
                out.append(Edge(module, base, node.lineno, tuple(plain), now, typing))
    return out


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one node (or with a self-loop)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1 or node in graph.get(node, ()):
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _closed_path(component: list[str], graph: dict[str, set[str]]) -> list[str]:
    """A shortest cycle through the component's first module (breadth-first)."""
    start, members = component[0], set(component)
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for nxt in sorted(graph[node] & members):
            if nxt == start:
                return [*paths[node], start]
            if nxt not in paths:
                paths[nxt] = [*paths[node], nxt]
                queue.append(nxt)
    return component


def cycles(all_edges: list[Edge], deferred: bool = False) -> list[Violation]:
    """Import-time cycles; with ``deferred``, also those closed by imports inside functions
    (not violations: Python runs them, but they tie the modules together all the same)."""
    graph: dict[str, set[str]] = {}
    for e in all_edges:
        if (e.import_time or (deferred and not e.typing_only)) and e.source != e.target:
            graph.setdefault(e.source, set()).add(e.target)
            graph.setdefault(e.target, set())
    out = []
    for component in _strongly_connected(graph):
        path = " -> ".join(_closed_path(component, graph))
        when = "counting imports in functions" if deferred else "import-time"
        out.append(Violation("cycle", " ".join(component), f"{path} ({when})"))
    return out


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_imports(
    module: str, tree: ast.Module, mods: dict[str, Path], mine: list[Edge]
) -> list[Violation]:
    out = []
    for e in mine:
        for name in e.names:
            if _private(name) and e.target != module:
                msg = f"{module}:{e.line} imports {e.target}.{name}"
                out.append(Violation("private", f"{module} {e.target}.{name}", msg))
    # Names bound to package modules: ``import soak_dask.a.b as m``, ``from soak_dask.a import b``.
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in mods and a.asname:
                    aliases[a.asname] = a.name
        elif isinstance(node, ast.ImportFrom):
            base = _base(module, node, mods)
            for a in node.names:
                if f"{base}.{a.name}" in mods:
                    aliases[a.asname or a.name] = f"{base}.{a.name}"
    seen = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and _private(node.attr)
            and aliases[node.value.id] != module
        ):
            key = f"{module} {aliases[node.value.id]}.{node.attr}"
            if key not in seen:
                seen.add(key)
                msg = f"{module}:{node.lineno} reads {aliases[node.value.id]}.{node.attr}"
                out.append(Violation("private", key, msg))
    return out


def _code_lines(source: str) -> set[int]:
    """Physical lines holding a token that is not a comment, a newline or an indent."""
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
    lines: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in skip and tok.type != tokenize.ENDMARKER:
            lines.update(range(tok.start[0], tok.end[0] + 1))
    return lines


def long_functions(module: str, tree: ast.Module, source: str) -> list[Violation]:
    code = _code_lines(source)
    out = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                body = child.body
                if (
                    len(body) > 1
                    and isinstance(body[0], ast.Expr)
                    and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)
                ):
                    body = body[1:]
                span = set(range(body[0].lineno, child.end_lineno + 1))
                n = len(span & code)
                if n > MAX_LINES:
                    msg = f"{module}:{child.lineno} {name} has {n} code lines (> {MAX_LINES})"
                    out.append(Violation("long", f"{module}.{name}", msg))
                visit(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return out


def floor_of(module: str) -> int | None:
    """The floor of ``module`` (``None`` for the package's ``__init__``, above all floors)."""
    parts = module.split(".")
    if len(parts) == 1:
        return None
    for level, names in enumerate(FLOORS):
        if parts[1] in names:
            return level
    raise ValueError(f"{module} is on no floor: add {parts[1]!r} to FLOORS in scripts/house.py")


def floor_climbs(mine: list[Edge]) -> list[Violation]:
    out = []
    for e in mine:
        here, there = floor_of(e.source), floor_of(e.target)
        if here is None:
            continue
        if there is None or there > here:
            up = "the package __init__" if there is None else f"floor {there}"
            key = f"{e.source} {e.target}"
            msg = f"{e.source}:{e.line} (floor {here}) imports {e.target} ({up})"
            out.append(Violation("floor", key, msg))
    return out


def all_edges(root: Path) -> list[Edge]:
    """Every import of a package module in the package under ``root``."""
    mods = modules(root)
    return [e for m, p in mods.items() for e in edges(m, ast.parse(p.read_text()), mods)]


def scan(root: Path) -> list[Violation]:
    """Every violation of the house rules in the package under ``root``."""
    mods = modules(root)
    found, all_edges = [], []
    for module, path in mods.items():
        source = path.read_text()
        tree = ast.parse(source, str(path))
        mine = edges(module, tree, mods)
        all_edges += mine
        found += private_imports(module, tree, mods, mine)
        found += long_functions(module, tree, source)
        found += floor_climbs(mine)
    found += cycles(all_edges)
    # One violation per key (the same private name read on several lines counts once).
    unique = {(v.rule, v.key): v for v in sorted(found)}
    return sorted(unique.values())


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else Path(__file__).resolve().parents[1]
    found = scan(root)
    seen = {(v.rule, v.key) for v in found}
    for rule in ("cycle", "private", "long", "floor"):
        mine = [v for v in found if v.rule == rule]
        print(f"## {rule}: {len(mine)}")
        for v in mine:
            print(f"  {v.message}")
    tied = [v for v in cycles(all_edges(root), deferred=True) if (v.rule, v.key) not in seen]
    print(f"## (not counted) cycles closed by imports inside functions: {len(tied)}")
    for v in tied:
        print(f"  {v.message}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
