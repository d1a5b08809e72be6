"""Does ``soak_dask.spatial_range`` find the range of a Gaussian random field whose range is
known, and how long does it take on a million pixels?

1. **Accuracy**: ``--seeds`` fields of ``--grid``² cells with an exponential covariance of
   effective range ``--range`` cells (``soak_dask.gaussian_random_field``), each measured in
   memory: the fitted range, its block-bootstrap interval, the proposed block size and its
   ratio to the truth (issue 42: within a factor 1.5), and whether the interval holds the
   truth.
2. **Scale**: one field of ``--big``² cells written to Parquet, read by 2 single-threaded
   workers (LocalCluster) in partitions of 250,000 rows, and measured with the default sample
   of 1,000,000 rows: wall-clock seconds and the printout ``soak info --spatial`` gives.

Run: ``python -m benchmarks.spatial_range`` (``--quick``: seconds).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

import soak_dask as sd

from .common import Ratio, finish, header, local_cluster, parser


def field_table(cells: int, range_: float, seed: int, path: Path | None = None) -> sd.Table:
    """A ``cells``² field as a table (label ``value``, coordinates x, y, one constant band),
    from memory or written to ``path`` (Parquet) first."""
    df = sd.gaussian_random_field((cells, cells), range_, seed=seed)
    df["band"] = 1.0
    if path is None:
        return sd.load_table(df, label="value", coords=["x", "y"])
    df.to_parquet(path, row_group_size=250_000)
    return sd.load_table(str(path), label="value", coords=["x", "y"], rows_per_partition=250_000)


def accuracy(args) -> list[dict]:
    """One row per seed: the fit on a field of known range."""
    rows = []
    for seed in range(args.seeds):
        start = time.perf_counter()
        res = sd.spatial_range(field_table(args.grid, args.range, seed), seed=seed)
        low, high = res.range_interval
        rows.append(
            {
                "run": f"{args.grid}² seed {seed}",
                "seconds": round(time.perf_counter() - start, 1),
                "range": round(res.range, 2),
                "interval": f"{low:.3g} to {high:.3g}",
                "truth_inside": bool(low <= args.range <= high),
                "block_size": res.block_size,
                "block/truth": round(res.block_size / args.range, 3),
                "random_within": round(res.share_random, 3),
                "blocks_within": round(res.share_blocks, 3),
            }
        )
        print(rows[-1], flush=True)
    return rows


def main(argv: list[str] | None = None) -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--grid", type=int, default=200, help="cells per side, accuracy runs (200)")
    p.add_argument("--range", type=float, default=20.0, help="true effective range (20 cells)")
    p.add_argument("--seeds", type=int, default=10, help="fields of the accuracy runs (10)")
    p.add_argument("--big", type=int, default=1000, help="cells per side of the scale run (1000)")
    args = p.parse_args(argv)
    if args.quick:
        args.grid, args.seeds, args.big = 64, 3, 300
        args.range = min(args.range, 8.0)
    facts = header(
        "spatial_range on Gaussian random fields", "benchmarks.spatial_range", argv, args
    )
    rows = accuracy(args)
    ratio = [r["block/truth"] for r in rows]
    inside = float(np.mean([r["truth_inside"] for r in rows]))
    ratios = [
        Ratio("largest block size / true range", max(ratio), 1.5, False),
        Ratio("smallest block size / true range", min(ratio), 1 / 1.5, True),
        Ratio("share of intervals holding the truth", inside, 0.8, True),
    ]
    args.workdir.mkdir(parents=True, exist_ok=True)
    path = args.workdir / f"field_{args.big}_{args.range:g}.parquet"
    with local_cluster(2):
        table = field_table(args.big, args.range * args.big / args.grid, 0, path)
        start = time.perf_counter()
        res = sd.spatial_range(table)
        seconds = time.perf_counter() - start
    print(res, flush=True)
    rows.append(
        {
            "run": f"{args.big}² on 2 workers",
            "seconds": round(seconds, 1),
            "range": round(res.range, 2),
            "block_size": res.block_size,
            "block/truth": round(res.block_size / (args.range * args.big / args.grid), 3),
            "random_within": round(res.share_random, 3),
            "blocks_within": round(res.share_blocks, 3),
        }
    )
    finish("spatial_range", args, facts, rows, ratios, {"printout": str(res)})


if __name__ == "__main__":
    main()
