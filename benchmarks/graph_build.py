"""Graph building: a run's client-side CPU with ``reduction.list_call`` against a list argument.

A fit task reads its train rows from every partition, a test block's scoring task merges the
pieces of every partition, a tree merge takes a few pieces: each is a delayed call of a list
of delayed values. Handed to dask inside a list, those values make dask optimise and cull the
whole graph once per call (``dask.delayed.unpack_collections``); ``list_call`` hands them to
dask one by one, and its other arguments (a fit's spec, the run's options) as they are, never
walked by dask. Compared in one run: the same SOAK runs (``decision_tree``, one task per fit,
scored partition by partition; and ``featureless``, one pass of statistics) on a generated
pixel table cut into ``--partitions`` partitions, with Dask's local scheduler, each run's CPU
seconds on the client (the process's, threads included) and its wall seconds, with
``list_call`` and with it replaced by the two forms it replaced (``FORMS``). Results equal.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np

import soak_dask as sd
from soak_dask import reduction
from soak_dask.run import final, strategies

from .common import Ratio, finish, header, load_pixels, parser, pixel_parquet

MODULE = "benchmarks.graph_build"
#: Modules that call ``list_call`` by name (patched together for the alternative).
CALLERS = (reduction, strategies, final)
TARGET_CPU_RATIO = 1.2
#: Against the walked arguments: no slower, within the noise of a run (the walk is a share of
#: the graph building, which a run of heavy fits hides).
NO_SLOWER = 0.95


def list_argument(func: Callable[..., Any], items: list[Any], *args: Any, **kwargs: Any) -> Any:
    """The alternative: ``dask.delayed(func)(items, *args)``, the list handed to dask whole."""
    key = kwargs.pop("dask_key_name", None)
    return dask.delayed(func, **kwargs)(items, *args, dask_key_name=key)


def walked_arguments(func: Callable[..., Any], items: list[Any], *args: Any, **kwargs: Any) -> Any:
    """The second alternative (``list_call`` until 2026-12-07): the items handed to dask one
    by one, the other arguments as they are, so dask walks each (a fit's spec, the run's
    options, a dict of models) looking for dask values."""
    key = kwargs.pop("dask_key_name", None)
    return dask.delayed(_walked, **kwargs)(func, len(items), *items, *args, dask_key_name=key)


def _walked(func: Callable[..., Any], n: int, *values: Any) -> Any:
    return func(list(values[:n]), *values[n:])


@contextmanager
def calls_with(call: Callable[..., Any]) -> Iterator[None]:
    """Every caller of ``list_call`` uses `call` instead, for the block."""
    kept = [module.list_call for module in CALLERS]
    for module in CALLERS:
        module.list_call = call
    try:
        yield
    finally:
        for module, original in zip(CALLERS, kept, strict=True):
            module.list_call = original


#: The forms compared: ``list_call`` and the two it replaced.
FORMS = {
    "list_call": reduction.list_call,
    "walked arguments": walked_arguments,
    "list argument": list_argument,
}


def time_run(table: sd.Table, learner: str, folds: int, seed: int) -> tuple[float, float, Any]:
    """CPU and wall seconds of one soak run with the local scheduler, and its errors."""
    cpu, wall = time.process_time(), time.perf_counter()
    res = sd.soak(table, [learner], n_folds=folds, seed=seed, options=sd.RunOptions(progress=False))
    return time.process_time() - cpu, time.perf_counter() - wall, res["error"].values


def compare(table: sd.Table, learner: str, args: Any) -> list[dict[str, Any]]:
    """Every form of ``FORMS``, alternating, ``--repeat`` times each after a warm-up run of
    each."""
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in FORMS}
    errors = {}
    for i in range(args.repeat + 1):
        for name, call in FORMS.items():
            with calls_with(call):
                cpu, wall, errors[name] = time_run(table, learner, args.folds, args.seed)
            if i:  # the first round warms imports and caches up: dropped
                times[name].append((cpu, wall))
    first = next(iter(errors.values()))
    same = all(np.array_equal(first, e, equal_nan=True) for e in errors.values())
    return [
        {
            "learner": learner,
            "graph": name,
            "cpu_s": round(statistics.median(c for c, _ in times[name]), 3),
            "wall_s": round(statistics.median(w for _, w in times[name]), 3),
            "same_errors": same,
        }
        for name in FORMS
    ]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=40_000, help="rows (default 40k)")
    p.add_argument("--partitions", type=int, default=32, help="partitions (default 32)")
    p.add_argument("--folds", type=int, default=10, help="K (default 10)")
    p.add_argument("--repeat", type=int, default=3, help="runs per form (default 3)")
    args = p.parse_args(argv)
    if args.quick:
        args.rows, args.partitions, args.folds, args.repeat = 4_000, 8, 3, 1
    facts = header("graph building: list_call against a list argument", MODULE, argv, args)
    loaded = load_pixels(pixel_parquet(args.workdir, args.rows, args.seed))
    data = dd.from_pandas(loaded.data.compute(), npartitions=args.partitions)
    table = sd.load_table(data, label="label", subset="region", features=loaded.features)
    rows = []
    with dask.config.set(scheduler="sync"):
        for learner in ("decision_tree", "featureless"):
            rows += compare(table, learner, args)
    ratios = [
        Ratio(
            f"{row['learner']}: CPU of a run, {other['graph']} / list_call",
            other["cpu_s"] / row["cpu_s"],
            TARGET_CPU_RATIO if other["graph"] == "list argument" else NO_SLOWER,
            higher_is_better=True,
        )
        for row in rows[:: len(FORMS)]
        for other in rows
        if other["learner"] == row["learner"] and other["graph"] != "list_call"
    ]
    return finish("graph_build", args, facts, rows, ratios)


if __name__ == "__main__":
    main()
