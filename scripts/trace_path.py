"""How far a run travels through the package: ``soak run`` and ``sd.evaluate`` traced.

Run ``python scripts/trace_path.py`` from the repository root. It writes a small generated pixel
table (``soak_dask.tables.generated.make_pixel_table``, 2,000 rows) as a CSV in a temporary
directory, starts a ``LocalCluster`` of two worker threads in this process, and runs on it:

- ``soak run`` through ``soak_dask.app.cli.main`` (featureless and LDA, K = 3, ``--out`` a new
  directory, ``--scheduler`` the cluster), and
- ``sd.evaluate`` on the same table loaded by ``load_table`` (the same learners, 3-fold CV,
  ``RunOptions(client=...)``),

each under ``sys.setprofile`` and ``threading.setprofile``, recording every call of a function
defined in ``soak_dask``, on every thread. It prints, per run:

``hops``
    The longest chain of nested package calls on the calling thread, from the entry point
    down (the calls in it): how many functions a reader follows from the command to the
    deepest work the client does, and the distinct **modules** that chain passes through.
``functions`` / ``modules``
    The distinct package functions and modules the run calls at all, the workers' tasks
    included.

Calls to functions outside the package (Dask, scikit-learn, pandas) are not hops; package
calls under them are, attached to the package call above them. Module bodies (imports),
comprehensions, lambdas and the methods ``dataclasses`` generates are not counted, and both
runs are made once before the traced ones, so first-use caches (compiled kernels, lazy imports)
do not lengthen the chains.
"""

from __future__ import annotations

import contextlib
import io
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from distributed import Client, LocalCluster

PACKAGE = "soak_dask"
LEARNERS = ["featureless", "lda"]


@dataclass
class Trace:
    """Package calls of one run: the deepest chain on the calling thread (its functions,
    outermost first) and the distinct functions called on any thread."""

    main: int = field(default_factory=threading.get_ident)
    stacks: dict[int, list[str]] = field(default_factory=dict)
    deepest: list[str] = field(default_factory=list)
    functions: set[str] = field(default_factory=set)

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        module = frame.f_globals.get("__name__", "")
        if not (module == PACKAGE or module.startswith(PACKAGE + ".")):
            return
        code = frame.f_code
        # Module bodies, comprehensions, lambdas and dataclasses' generated methods are not
        # functions a reader follows.
        if code.co_name.startswith("<") or "__create_fn__" in code.co_qualname:
            return
        name = f"{module}.{code.co_qualname}"
        stack = self.stacks.setdefault(threading.get_ident(), [])
        if event == "call":
            stack.append(name)
            self.functions.add(name)
            if threading.get_ident() == self.main and len(stack) > len(self.deepest):
                self.deepest = list(stack)
        elif event == "return" and stack and stack[-1] == name:
            stack.pop()


def modules_of(functions: list[str] | set[str]) -> list[str]:
    """The modules of `functions` (qualified names), in first-seen order."""
    seen: dict[str, None] = {}
    for name in functions:
        module, _, rest = name.partition(".<locals>")
        parts = module.split(".")
        # ``a.b.func`` or ``a.b.Class.method``: the module is the longest imported prefix.
        for cut in range(len(parts), 0, -1):
            if ".".join(parts[:cut]) in sys.modules:
                seen.setdefault(".".join(parts[:cut]), None)
                break
    return list(seen)


def traced(run: Any) -> Trace:
    """`run()` once untraced (first-use costs), then under ``sys.setprofile``."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        run(0)
        trace = Trace()
        threading.setprofile(trace.profile)
        sys.setprofile(trace.profile)
        try:
            run(1)
        finally:
            sys.setprofile(None)
            threading.setprofile(None)
    return trace


def report(title: str, trace: Trace) -> str:
    """The counts of one run and its deepest chain, one call a line."""
    chain = trace.deepest
    lines = [
        f"## {title}",
        f"hops (the deepest chain of package calls): {len(chain)} through "
        f"{len(modules_of(chain))} modules",
        f"functions called: {len(trace.functions)} in {len(modules_of(trace.functions))} modules",
        "the deepest chain:",
    ]
    lines += [f"  {name}" for name in chain]
    return "\n".join(lines)


def main() -> int:
    import soak_dask as sd
    from soak_dask.app import cli
    from soak_dask.tables.generated import make_pixel_table

    with tempfile.TemporaryDirectory(prefix="soak-trace-") as tmp:
        csv = Path(tmp) / "pixels.csv"
        make_pixel_table(n_pixels=2_000, seed=1).to_csv(csv, index=False)
        flags = ["--label", "label", "--subset", "region", "--group", "polygon"]
        flags += ["--exclude", "x,y", "--learners", ",".join(LEARNERS), "--n-folds", "3"]

        cluster = LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        )
        with cluster, Client(cluster) as client:

            def soak_run(i: int) -> None:
                argv = ["run", str(csv), *flags, "--out", str(Path(tmp) / f"run{i}.zarr")]
                argv += ["--no-progress", "--scheduler", cluster.scheduler_address]
                assert cli.main(argv) == 0

            def evaluate(i: int) -> None:
                table = sd.load_table(
                    str(csv), label="label", group="polygon", exclude=["x", "y", "region"]
                )
                options = sd.RunOptions(client=client, progress=False)
                sd.evaluate(table, LEARNERS, outer_folds=3, options=options)

            print(report("soak run", traced(soak_run)))
            print()
            print(report("sd.evaluate", traced(evaluate)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
