"""The duplicate check of a table of several files, at pixel scale, beside a load without it.

``load_table`` of a folder of Parquet files refuses rows found in more than one file
(``soak_dask.tables.duplicates``: one pass hashing every row, buckets of (file, hash) gathered
per task). Measured here on the generated pixel table (default 6 M rows, 12 files) with 2
single-threaded workers of 2 GiB: the load with the check (``duplicates="refuse"``, the
default) beside one scan of the same files (the table loaded with ``duplicates="allow"``, its
columns summed), each on a fresh cluster: seconds, the workers' peak memory against
their limit and workers replaced; and one bucket's count
(``shared_in_bucket``) of 2 M (file, hash) pairs in this process: CPU seconds and peak memory.

    python -m benchmarks.duplicates_check
    python -m benchmarks.duplicates_check --rows 12000000 --memory-limit 2GiB
"""

from __future__ import annotations

import resource
import time
from typing import Any

import numpy as np
import pandas as pd
from dask.utils import parse_bytes

from soak_dask.tables.duplicates import file_ids, shared_in_bucket

from .common import (
    MemorySampler,
    finish,
    header,
    load_pixels,
    local_cluster,
    parser,
    pixel_parquet,
)

MODULE = "benchmarks.duplicates_check"
N_WORKERS = 2


def bucket_cost(n: int, n_files: int = 12, seed: int = 0) -> dict[str, Any]:
    """CPU seconds and peak memory (this process's) of one bucket count of `n` pairs."""
    rng = np.random.default_rng(seed)
    names = [f"/data/pixels/part-{i:03d}.parquet" for i in range(n_files)]
    ids = file_ids(names)
    pieces = [
        pd.DataFrame(
            {
                "file": ids[rng.integers(0, n_files, n // 4)],
                "hash": rng.integers(0, 2**63, n // 4, dtype=np.int64).astype(np.uint64),
            }
        )
        for _ in range(4)
    ]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.process_time()
    shared_in_bucket([dict(zip(ids.tolist(), names, strict=True))], *pieces)
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    return {"pairs": n, "cpu_s": round(time.process_time() - start, 2), "peak_mb": grown // 1024}


def load(client: Any, source: str, run: str, limit: int) -> dict[str, Any]:
    """The load with the check, or one scan of the files, under the memory sampler."""
    before = set(client.scheduler_info()["workers"])
    with MemorySampler(client) as sampler:
        start = time.perf_counter()
        if run == "load, duplicate check":
            load_pixels(source)
        else:
            load_pixels(source, duplicates="allow").data.sum(numeric_only=True).compute()
        seconds = time.perf_counter() - start
    after = set(client.scheduler_info()["workers"])
    peak = max(sampler.peaks.values(), default=0)
    return {
        "run": run,
        "seconds": round(seconds, 1),
        "peak_share_of_limit": round(peak / limit, 2),
        "workers_replaced": len(before - after),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=6_000_000)
    p.add_argument("--memory-limit", default="2GiB", help="memory_limit per worker")
    args = p.parse_args(argv)
    if args.quick:
        args.rows = 400_000
    facts = header("the duplicate check of several files", MODULE, argv, args)
    source = pixel_parquet(args.workdir, args.rows, args.seed, 3)
    limit = parse_bytes(args.memory_limit)
    rows = []
    for run in ("load, duplicate check", "one scan"):  # each on a fresh cluster
        with local_cluster(N_WORKERS, memory_limit=args.memory_limit) as client:
            rows.append(load(client, source, run, limit))
    bucket = bucket_cost(2_000_000)
    print(f"   one bucket: {bucket}")
    rows[0]["scans"] = round(rows[0]["seconds"] / rows[1]["seconds"], 1)
    return finish(MODULE, args, facts, rows, [], {"bucket": bucket})


if __name__ == "__main__":
    main()
