"""e. overhead: the featureless learner on a small table (10k rows), S=4, K=10: seconds per fit.

With nothing to learn, the time is soak's own: fold assignment, block counts, planning, task
scheduling, scoring and gathering the results. Timed with Dask's local scheduler and with a
2-worker LocalCluster, each with one-pass fits (the default: featureless is additive) and with
one task per fit (``onepass=False``). Each setting runs once to warm up, then ``--repeat``
times; the median counts.
"""

from __future__ import annotations

import statistics
from typing import Any

import soak_dask as sd

from .common import finish, header, load_pixels, local_cluster, parser, pixel_parquet, timed

MODULE = "benchmarks.overhead"


def time_soak(source: str, args: Any, client: Any, onepass: bool) -> dict[str, Any]:
    """Median wall seconds of ``--repeat`` soak runs, and the number of fits and splits."""
    seconds = []
    for _ in range(args.repeat + 1):  # the first run warms imports and caches up: dropped
        res, s = timed(
            lambda: sd.soak(
                load_pixels(source),
                {"featureless": "featureless"},
                n_folds=args.folds,
                seed=args.seed,
                options=sd.RunOptions(client=client, progress=False, onepass=onepass),
            )
        )
        seconds.append(s)
    wall = statistics.median(seconds[1:])
    n_fits = int(res.attrs["n_fits"])
    n_splits = int(res["error"].count())
    return {
        "scheduler": "local threads" if client is None else "LocalCluster(2)",
        "onepass": onepass,
        "wall_s": round(wall, 3),
        "fits": n_fits,
        "s_per_fit": round(wall / n_fits, 4),
        "splits": n_splits,
        "s_per_split": round(wall / n_splits, 4),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=10_000, help="rows (default 10k)")
    p.add_argument("--folds", type=int, default=10, help="K (default 10)")
    p.add_argument("--repeat", type=int, default=3, help="runs per setting (default 3)")
    args = p.parse_args(argv)
    if args.quick:
        args.repeat = 1
    facts = header("e. overhead per fit (featureless)", MODULE, argv, args)
    source = pixel_parquet(args.workdir, args.rows, args.seed)
    rows = [time_soak(source, args, None, onepass) for onepass in (True, False)]
    with local_cluster(2) as client:
        client.run(lambda: None)  # workers up before the first timing
        rows += [time_soak(source, args, client, onepass) for onepass in (True, False)]
    return finish("e", args, facts, rows, [])


if __name__ == "__main__":
    main()
