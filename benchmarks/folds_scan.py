"""d. fold assignment on a large Parquet table ÷ one Dask scan of the same files.

``sd.assign_folds`` makes two passes: per-partition stratum counts (computed at once), then the
lazy fold column, forced here by its value counts. It is divided by the time of one scan of
(1) the columns fold assignment needs (subset and label) and (2) every column of the table.
With ``--groups`` the same is timed with polygons as groups (whole polygons in one fold).
Scans run before and after each assignment; the ratio uses their mean.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import soak_dask as sd

from .common import (
    Ratio,
    finish,
    header,
    load_pixels,
    local_cluster,
    parser,
    pixel_parquet,
    timed,
)

MODULE = "benchmarks.folds_scan"
TARGET = 1.2


def scans(source: str) -> dict[str, float]:
    """Seconds of one scan of the stratum columns and of the whole table."""
    table = load_pixels(source)
    keys = table.data[[table.subset, table.label]]
    return {
        "keys": timed(lambda: keys.count().compute())[1],
        "table": timed(lambda: table.data[list(table.features)].sum().compute())[1],
    }


def assign(source: str, n_folds: int, seed: int, group: str | None) -> tuple[float, Any]:
    """Seconds of assigning folds and computing the fold column; the fold sizes."""

    def run() -> Any:
        folded = sd.assign_folds(load_pixels(source, group=group), n_folds, seed)
        return folded.data[folded.fold].value_counts(split_out=1).compute()

    sizes, seconds = timed(run)
    return seconds, sizes.sort_index()


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=10_000_000, help="rows (default 10M)")
    p.add_argument("--folds", type=int, default=10, help="K (default 10)")
    p.add_argument(
        "--groups", action="store_true", help="also time fold assignment with polygon groups"
    )
    args = p.parse_args(argv)
    if args.quick:
        args.rows = min(args.rows, 200_000)
    facts = header("d. fold assignment ÷ one scan", MODULE, argv, args)
    source = pixel_parquet(args.workdir, args.rows, args.seed)
    rows, ratios, all_scans = [], [], []
    with local_cluster(2) as client:
        client.run(lambda: None)  # workers up before the first timing
        all_scans.append(scans(source))
        for group in [None, "polygon"] if args.groups else [None]:
            seconds, sizes = assign(source, args.folds, args.seed, group)
            all_scans.append(scans(source))
            keys_scan = float(np.mean([s["keys"] for s in all_scans[-2:]]))
            table_scan = float(np.mean([s["table"] for s in all_scans[-2:]]))
            rows.append(
                {
                    "groups": group or "none",
                    "assign_s": round(seconds, 2),
                    "scan_keys_s": round(keys_scan, 2),
                    "scan_table_s": round(table_scan, 2),
                    "ratio_keys": round(seconds / keys_scan, 2),
                    "ratio_table": round(seconds / table_scan, 2),
                    "fold_sizes": f"{sizes.min():,}..{sizes.max():,}",
                }
            )
            print(f"   done: {rows[-1]}", flush=True)
            for kind in ("keys", "table"):
                name = f"groups={group}: assign / scan of {kind}"
                ratios.append(Ratio(name, rows[-1][f"ratio_{kind}"], TARGET, False))
    return finish("d", args, facts, rows, ratios, {"scans": all_scans})


if __name__ == "__main__":
    main()
