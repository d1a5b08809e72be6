"""Shared helpers of the benchmarks: data, clusters, timing, machine facts and reports.

Every benchmark writes its data with :func:`soak_dask.tables.generated.write_pixel_parquet`
(20 bands, four regions with region-specific band signatures), so subsets really differ. Data
sets are cached under ``--workdir`` and reused while their parameters are unchanged.
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import platform
import shutil
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import psutil
from dask.utils import key_split
from distributed import Client, LocalCluster, get_task_stream

import soak_dask as sd
from soak_dask.run.assemble import package_versions
from soak_dask.run.cluster import set_worker_env
from soak_dask.tables.generated import write_pixel_parquet
from soak_dask.tables.parquet import ROWS_PER_PARTITION

DEFAULT_WORKDIR = Path(tempfile.gettempdir()) / "soak_benchmarks"
N_BANDS = 20
N_REGIONS = 4
#: Environment variables that change memory or thread use, recorded when set.
ENV_RECORDED = ("ARROW_DEFAULT_MEMORY_POOL", "MALLOC_TRIM_THRESHOLD_", "OMP_NUM_THREADS")
#: Column roles of the generated pixel table (coordinates and polygon ids are not features).
ROLES: dict[str, Any] = {"label": "label", "subset": "region", "exclude": ["x", "y", "polygon"]}


def parser(description: str) -> argparse.ArgumentParser:
    """Command-line options shared by every benchmark; each script adds its sizes."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--quick", action="store_true", help="small smoke run (seconds, not minutes)")
    p.add_argument(
        "--workdir",
        type=Path,
        default=DEFAULT_WORKDIR,
        help=f"where generated Parquet data is cached (default {DEFAULT_WORKDIR})",
    )
    p.add_argument("--seed", type=int, default=1, help="seed of the data and of the folds")
    p.add_argument("--json", type=Path, help="also write the results to this JSON file")
    return p


# --- data --------------------------------------------------------------------------------------


def pixel_parquet(
    workdir: Path,
    rows: int,
    seed: int = 1,
    scenes: int = 1,
    rows_per_file: int = ROWS_PER_PARTITION,
) -> str:
    """A glob of Parquet files holding ``rows`` generated pixels; generated once, then cached.

    Each scene is one call of :func:`~soak_dask.tables.generated.write_pixel_parquet` (one
    generator, so its four regions differ consistently), cut into files of about
    ``rows_per_file`` rows (default :data:`~soak_dask.tables.parquet.ROWS_PER_PARTITION`; each
    file is one Dask partition). Several scenes (seeds ``seed``, ``seed + 1``, ...) bound the
    generator's memory.
    """
    if rows < 1 or scenes < 1 or rows < scenes or rows_per_file < 1:
        raise ValueError(
            f"rows={rows}, scenes={scenes}, rows_per_file={rows_per_file}: need "
            "rows >= scenes >= 1 and rows_per_file >= 1"
        )
    name = f"pixels-{rows}-seed{seed}-scenes{scenes}"
    params = {"rows": rows, "seed": seed, "scenes": scenes, "n_bands": N_BANDS}
    params["n_regions"] = N_REGIONS
    if rows_per_file != ROWS_PER_PARTITION:
        name += f"-files{rows_per_file}"
        params["rows_per_file"] = rows_per_file
    path = Path(workdir) / name
    manifest = path / "manifest.json"
    if not (manifest.exists() and json.loads(manifest.read_text()) == params):
        shutil.rmtree(path, ignore_errors=True)
        bounds = [round(rows * i / scenes) for i in range(scenes + 1)]
        for i in range(scenes):
            n = bounds[i + 1] - bounds[i]
            print(f"generating scene {i + 1}/{scenes}: {n:,} rows -> {path}", flush=True)
            write_pixel_parquet(
                path / f"scene-{i + 1:03d}",
                n_files=math.ceil(n / rows_per_file),
                n_pixels=n,
                n_regions=N_REGIONS,
                n_bands=N_BANDS,
                seed=seed + i,
            )
        manifest.write_text(json.dumps(params))
    return str(path / "scene-*" / "*.parquet")


def load_pixels(source: str, **kwargs: Any) -> sd.Table:
    """The pixel table with the benchmark roles (label, region as subset, bands as features)."""
    return sd.load_table(source, **{**ROLES, **kwargs})


def disk_bytes(pattern: str) -> int:
    """Total size of the files matching a glob."""
    return sum(os.path.getsize(p) for p in glob.glob(pattern))


# --- clusters and measurements -------------------------------------------------------------


@contextmanager
def local_cluster(n_workers: int = 2, memory_limit: str | int = "auto") -> Iterator[Client]:
    """A LocalCluster of single-threaded worker processes and its client, closed on exit; its
    workers' environment as ``soak`` sets it for its own (``run.cluster.set_worker_env``:
    Arrow's allocator), so the benchmarks measure what a user of ``soak`` runs."""
    set_worker_env()
    with (
        LocalCluster(
            n_workers=n_workers,
            threads_per_worker=1,
            memory_limit=memory_limit,
            dashboard_address=":0",
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


def timed(call: Callable[[], Any]) -> tuple[Any, float]:
    """``call()`` and its wall-clock seconds."""
    start = time.perf_counter()
    out = call()
    return out, time.perf_counter() - start


def _worker_rss() -> int:
    return psutil.Process().memory_info().rss


class MemorySampler:
    """Peak resident memory of each worker process, sampled from a background thread.

    Use as a context manager around the work; ``peaks`` and ``first`` map worker address to
    bytes. A worker that dies and is replaced appears under its new address.
    """

    def __init__(self, client: Client, interval: float = 0.5) -> None:
        self.client = client
        self.interval = interval
        self.peaks: dict[str, int] = {}
        self.first: dict[str, int] = {}  # each worker's first sample: its memory at rest
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                rss = self.client.run(_worker_rss)
            except Exception:  # noqa: BLE001 -- a worker restarting: sample again later
                rss = {}
            for addr, value in rss.items():
                self.first.setdefault(addr, value)
                self.peaks[addr] = max(self.peaks.get(addr, 0), value)
            self.samples += 1
            self._stop.wait(self.interval)

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@contextmanager
def task_seconds(client: Client) -> Iterator[dict[str, float]]:
    """Worker compute seconds per task name prefix (e.g. ``read_piece``) of the work inside.

    Tells where a run's time goes without touching the package: the dict is filled on exit.
    """
    out: dict[str, float] = {}
    with get_task_stream(client) as stream:
        yield out
    totals: dict[str, float] = defaultdict(float)
    for task in stream.data:
        for part in task["startstops"]:
            if part["action"] == "compute":
                totals[key_split(task["key"])] += part["stop"] - part["start"]
    out.update(sorted(totals.items(), key=lambda kv: -kv[1]))


# --- reports -------------------------------------------------------------------------------


@dataclass
class Ratio:
    """A measured ratio against the issue's target."""

    name: str
    value: float
    target: float
    higher_is_better: bool

    @property
    def met(self) -> bool:
        return self.value >= self.target if self.higher_is_better else self.value <= self.target

    def __str__(self) -> str:
        sign = ">=" if self.higher_is_better else "<="
        verdict = "met" if self.met else "NOT met"
        return f"{self.name}: {self.value:.2f} (target {sign} {self.target:g}: {verdict})"


def machine() -> dict[str, Any]:
    """Facts about this machine and its current load, recorded with every result."""
    cpuinfo = Path("/proc/cpuinfo")
    models = [
        line.split(":", 1)[1].strip()
        for line in (cpuinfo.read_text().splitlines() if cpuinfo.exists() else [])
        if line.startswith("model name")
    ]
    return {
        "nproc": os.cpu_count(),
        "cpu": models[0] if models else platform.processor(),
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "loadavg_1_5_15": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        "env": {k: os.environ[k] for k in ENV_RECORDED if k in os.environ},
        "versions": package_versions(),
    }


def header(title: str, module: str, argv: list[str] | None, args: argparse.Namespace) -> dict:
    """Print the benchmark's title, command, options and machine facts; return the facts."""
    facts = machine()
    command = " ".join(["python -m", module, *(sys.argv[1:] if argv is None else argv)])
    print(f"== {title}")
    print(f"   command: {command}")
    print(f"   options: {vars(args)}")
    print(
        f"   machine: {facts['nproc']} cores ({facts['cpu']}), {facts['memory_gib']} GiB, "
        f"load average {facts['loadavg_1_5_15']}",
        flush=True,
    )
    facts["command"] = command
    return facts


def finish(
    name: str,
    args: argparse.Namespace,
    facts: dict[str, Any],
    rows: list[dict[str, Any]],
    ratios: list[Ratio],
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Print the result table and ratios; write them as JSON with ``--json``; return them."""
    print(pd.DataFrame(rows).to_string(index=False))
    for ratio in ratios:
        print(f"   {ratio}")
    load_after = [round(x, 2) for x in os.getloadavg()]
    print(f"   load average after: {load_after}", flush=True)
    result = {
        "benchmark": name,
        "options": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "machine": facts,
        "loadavg_after": load_after,
        "rows": rows,
        "ratios": [{**asdict(r), "met": r.met} for r in ratios],
        **(extra or {}),
    }
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2, default=str))
    return result
