"""``compare_sampling`` with the overlap method at about 3× the workers' total memory (issue 41,
item 2): the generated pixel table on small workers, ``knn="blockwise"``, ``persist=False``,
beside one scan of the same files: completed or not, seconds, worker processes restarted
(more seen than started) and each worker's peak resident memory over its limit.

The table is loaded with ``duplicates="allow"`` (the generated files share no row; the
default check is a pass of its own, not what is measured here).

    python -m benchmarks.overlap_out_of_core --rows 23000000 --rows-per-file 40000
    python -m benchmarks.overlap_out_of_core --quick
"""

from __future__ import annotations

import math
from typing import Any

from dask.utils import format_bytes, parse_bytes

import soak_dask as sd

from .common import disk_bytes, finish, header, load_pixels, local_cluster, parser, pixel_parquet
from .designs_out_of_core import LDA, N_WORKERS, attempt
from .out_of_core import table_bytes_per_row

MODULE = "benchmarks.overlap_out_of_core"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--memory-limit", default="400MB", help="memory_limit per worker")
    p.add_argument("--rows", type=int, default=23_000_000)
    p.add_argument("--rows-per-file", type=int, default=40_000, help="rows per partition")
    p.add_argument("--repeats", type=int, default=10, help="random splits beside overlap")
    p.add_argument("--timeout", type=float, default=2400.0, help="stop the run after this many s")
    args = p.parse_args(argv)
    if args.quick:
        args.rows, args.rows_per_file, args.memory_limit = 200_000, 20_000, "1GB"
    facts = header("compare_sampling overlap out of core", MODULE, argv, args)
    scenes = math.ceil(args.rows / 2_000_000)
    source = pixel_parquet(args.workdir, args.rows, args.seed, scenes, args.rows_per_file)
    limit = parse_bytes(args.memory_limit)
    per_row = table_bytes_per_row(args.workdir, args.seed)
    size = {
        "rows": args.rows,
        "parquet_on_disk": format_bytes(disk_bytes(source)),
        "table_in_pandas": format_bytes(args.rows * per_row),
        "worker_limit": format_bytes(limit),
        "table_over_total_worker_memory": round(args.rows * per_row / (N_WORKERS * limit), 2),
    }
    print(f"   data: {size}", flush=True)
    with local_cluster(N_WORKERS, memory_limit=args.memory_limit) as client:
        table = load_pixels(source, duplicates="allow")

        def run() -> Any:  # the call measured, on a fresh load of the files
            fresh = load_pixels(source, duplicates="allow")
            methods = ["random", "overlap"]
            return sd.compare_sampling(
                fresh,
                LDA,
                design=sd.SamplingSplits(methods=methods, n_repeats=args.repeats, knn="blockwise"),
                options=sd.RunOptions(persist=False, client=client, progress=False),
            )

        features = table.data[list(table.features)]
        scan = attempt(client, lambda: features.sum().compute(), args.timeout, limit)
        row = {"design": "compare_sampling random + overlap (blockwise)"}
        row["scan_s"] = scan.get("seconds")
        row.update(attempt(client, run, args.timeout, limit))
        if "seconds" in row and row["scan_s"]:
            row["scans"] = round(row["seconds"] / row["scan_s"], 1)
        print(f"   done: {row}", flush=True)
    shown = [{k: v for k, v in row.items() if k != "error"}]
    return finish("overlap_out_of_core", args, facts, shown, [], {"data": size, "runs": [row]})


if __name__ == "__main__":
    main()
