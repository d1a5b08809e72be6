"""h. key columns of many repeats on a Parquet table ÷ one Dask scan of the same files.

The key columns of 100 subsampling, 100 bootstrap and 100 repeated 5-fold repeats, of a
reserved test split and of ``split_sensitivity``'s trials are made partition by partition: a
count pass (class × subset per partition) and one pass adding every repeat's column. Each is
timed from ``add_keys`` to the keys computed (their sums, read partition by partition), beside
one scan of the features, and the tasks run are counted (a pass per repeat would be 100 tasks
per partition). No task may repartition the table into fewer partitions.

Run: ``python -m benchmarks.keys_scan --rows 1200000 --repeats 100`` (``--quick``: 120 k rows);
issue 24's size: ``--rows 10000000 --rows-per-file 500000 --repeats 100``.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import dask

from soak_dask.split.outer import Bootstrap, KFoldDesign, Subsampling, reserve
from soak_dask.split.trials import SplitTrials

from .common import finish, header, load_pixels, local_cluster, parser, pixel_parquet, timed

MODULE = "benchmarks.keys_scan"


def _designs(repeats: int, grouped: Any) -> dict[str, Any]:
    """Each design's keys of a table (``grouped``: the table with its polygons as groups)."""
    return {
        f"subsampling x{repeats}": lambda t: Subsampling(repeats, 0.8).add_keys(t),
        f"bootstrap x{repeats}": lambda t: Bootstrap(repeats).add_keys(t),
        f"repeated_cv x{repeats} (5 folds)": lambda t: KFoldDesign(5, repeats).add_keys(t),
        f"repeated_cv x{repeats} (5 folds, whole polygons)": lambda t: KFoldDesign(
            5, repeats
        ).add_keys(grouped),
        "test_split 0.01": lambda t: reserve(t, 0.01, 1)[0],
        "split_sensitivity 4 ratios x 20 trials": lambda t: SplitTrials(
            (0.5, 0.7, 0.8, 0.9), 20, 5
        ).add_keys(t),
    }


def _keys_computed(keyed) -> None:
    names = [c for c in keyed.data.columns if c.startswith("__soak")]
    sums = [dask.delayed(lambda p: p.sum())(p) for p in keyed.data[names].to_delayed()]
    dask.compute(*sums)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1_200_000)
    p.add_argument("--rows-per-file", type=int, default=100_000)
    p.add_argument("--repeats", type=int, default=100)
    args = p.parse_args(argv)
    if args.quick:
        args.rows, args.rows_per_file, args.repeats = 120_000, 20_000, 20
    facts = header("key columns of many repeats vs one scan", MODULE, argv, args)
    scenes = math.ceil(args.rows / 2_000_000)  # bounds the generator's memory (10M rows: 5)
    source = pixel_parquet(args.workdir, args.rows, args.seed, scenes, args.rows_per_file)
    rows = []
    with local_cluster(2) as client:
        table = load_pixels(source)
        grouped = load_pixels(source, group="polygon", exclude=["x", "y"])
        features = table.data[list(table.features)]
        for name, make in _designs(args.repeats, grouped).items():
            scan = timed(lambda: features.sum().compute())[1]
            before = set(client.run_on_scheduler(_task_keys))
            seconds = timed(lambda make=make: _keys_computed(make(table)))[1]
            new = Counter(
                k.rsplit("-", 1)[0] for k in set(client.run_on_scheduler(_task_keys)) - before
            )
            rows.append(
                {
                    "keys of": name,
                    "seconds": round(seconds, 2),
                    "scan_seconds": round(scan, 2),
                    "scans": round(seconds / scan, 2),
                    "partitions": table.data.npartitions,
                    "tasks": sum(new.values()),
                    "repartition_tasks": sum(v for k, v in new.items() if "repartition" in k),
                }
            )
            print(rows[-1], flush=True)
    return finish(MODULE, args, facts, rows, [])


def _task_keys(dask_scheduler=None) -> list[str]:
    """The layer name of every task the scheduler has logged a transition of, with its key."""
    out = []
    for key, *_ in dask_scheduler.transition_log:
        out.append(f"{key[0]}-{key[1:]}" if isinstance(key, tuple) else str(key))
    return out


if __name__ == "__main__":
    main()
