"""Arrow's allocator in the Dask workers: mimalloc (Arrow's default) against the system
allocator and jemalloc (``ARROW_DEFAULT_MEMORY_POOL``).

On the generated pixel table (default 6M rows, 20 bands, 12 Parquet files), two
single-threaded workers of 2 GiB, each allocator on a fresh cluster, one after the other:
``--scans`` reads of the table's columns (their sums, so no task result stays in memory), the
seconds of each, and after them each worker's memory: its RSS, which with no data held is the
memory Dask calls unmanaged (it can neither count it as data nor spill it), and what Arrow's
pool says it still holds (``bytes_allocated``) and held at most.

    python -m benchmarks.arrow_pool
    python -m benchmarks.arrow_pool --rows 12000000 --scans 3
"""

from __future__ import annotations

import os
import time
from typing import Any

import psutil
from distributed import Client, LocalCluster

from .common import finish, header, load_pixels, parser, pixel_parquet

MODULE = "benchmarks.arrow_pool"
#: Arrow's allocators: its default, and the two it can be told to use instead.
POOLS = ("mimalloc", "system", "jemalloc")


def worker_memory() -> dict[str, float]:
    """This worker's RSS and its Arrow pool's allocated and peak bytes, in MiB."""
    import pyarrow

    pool = pyarrow.default_memory_pool()
    return {
        "pool": pool.backend_name,
        "rss": psutil.Process().memory_info().rss / 2**20,
        "arrow_held": pool.bytes_allocated() / 2**20,
        "arrow_peak": pool.max_memory() / 2**20,
    }


def scans(pool: str, source: str, n_scans: int, memory_limit: str) -> dict[str, Any]:
    """``n_scans`` reads of the table on a fresh 2-worker cluster whose workers use ``pool``."""
    # Workers inherit this process's environment when they start; a nanny's ``env`` and
    # ``pre-spawn-environ`` give way to a value already set here.
    os.environ["ARROW_DEFAULT_MEMORY_POOL"] = pool
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, memory_limit=memory_limit, dashboard_address=":0"
        ) as cluster,
        Client(cluster) as client,
    ):
        at_rest = client.run(worker_memory)
        table = load_pixels(source, duplicates="allow")
        columns = table.data[list(table.features)]
        seconds = []
        for _ in range(n_scans):
            start = time.perf_counter()
            columns.sum().compute()
            seconds.append(time.perf_counter() - start)
        time.sleep(2)  # past mimalloc's delay before it may give pages back
        after = client.run(worker_memory)
    workers = list(after.values())
    assert {w["pool"] for w in workers} == {pool}, workers
    return {
        "pool": pool,
        "first_scan_s": round(seconds[0], 2),
        "later_scans_s": round(min(seconds[1:]), 2) if n_scans > 1 else None,
        "rss_at_rest_mib": round(max(w["rss"] for w in at_rest.values())),
        "rss_after_mib": round(max(w["rss"] for w in workers)),
        "arrow_held_mib": round(max(w["arrow_held"] for w in workers), 1),
        "arrow_peak_mib": round(max(w["arrow_peak"] for w in workers)),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = parser(__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=6_000_000)
    p.add_argument("--scans", type=int, default=3)
    p.add_argument("--memory-limit", default="2GiB")
    p.add_argument("--pools", nargs="+", choices=POOLS, default=list(POOLS))
    args = p.parse_args(argv)
    if args.quick:
        args.rows, args.scans = 400_000, 2
    facts = header("Arrow's allocator in the Dask workers", MODULE, argv, args)
    source = pixel_parquet(args.workdir, args.rows, args.seed, 3)
    rows = [scans(pool, source, args.scans, args.memory_limit) for pool in args.pools]
    return finish(MODULE, args, facts, rows, [])


if __name__ == "__main__":
    main()
