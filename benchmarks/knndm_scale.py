"""kNNDM at pixel scale: clustered training pixels and a large prediction raster, on a
LocalCluster of 2 workers (target: 1 M training pixels and a 10 M-cell raster in <= 10 min).

The scene: a square raster of ``--cells`` cells (a lazy, chunked Dask array: the workers
make their own chunks, nothing is held whole), with a NaN margin; training pixels are
``--train`` cells of ``--patches`` square patches (pixels cut out of the raster, as the
issue's users have them), written to Parquet and loaded with ``coords=("x", "y")``. The
run times each step: the prediction sample's distances on the workers (Gij), the training
points' leave-one-out distances (Gj), the candidates (k-means, merge, Gj*, W) and writing
the fold column back to Parquet partition by partition.

Run: ``python -m benchmarks.knndm_scale --train 200000 --cells 2000000 --candidates 10``
(the full size: ``--train 1000000 --cells 10000000``).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import dask.array as da
import numpy as np
import pandas as pd
import psutil
import xarray as xr
from distributed import Client, LocalCluster

import soak_dask as sd
from soak_dask.split import knndm as knndm_module


def raster(cells: int, chunk: int) -> xr.Dataset:
    """A lazy square raster of about ``cells`` cells, one band, NaN on a 5 % margin."""
    side = int(np.sqrt(cells))
    y = da.arange(side, chunks=chunk, dtype=np.float64)[:, None]
    x = da.arange(side, chunks=chunk, dtype=np.float64)[None, :]
    band = da.sin(x / 50) + da.cos(y / 70)
    edge = side * 0.05
    band = da.where((x < edge) | (y < edge), np.nan, band)
    coords = {"y": np.arange(side) + 0.5, "x": np.arange(side) + 0.5}
    return xr.Dataset({"b1": (("y", "x"), band)}, coords=coords)


def training(n: int, side: int, patches: int, seed: int, path: Path) -> None:
    """``n`` training pixels in ``patches`` square patches of the raster, as Parquet."""
    rng = np.random.default_rng(seed)
    per = n // patches
    width = int(np.ceil(np.sqrt(per)))
    corners = rng.uniform(side * 0.05, side - width, (patches, 2)).astype(int)
    dy, dx = np.divmod(np.arange(per), width)
    y = (corners[:, None, 0] + dy[None]).ravel() + 0.5
    x = (corners[:, None, 1] + dx[None]).ravel() + 0.5
    frame = pd.DataFrame({"x": x, "y": y, "b1": np.sin(x / 50) + np.cos(y / 70)})
    frame["label"] = frame["b1"] + rng.normal(scale=0.1, size=len(frame))
    frame.to_parquet(path, row_group_size=250_000)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--train", type=int, default=200_000)
    p.add_argument("--cells", type=int, default=2_000_000)
    p.add_argument("--patches", type=int, default=400)
    p.add_argument("--folds", type=int, default=10)
    p.add_argument("--candidates", type=int, default=10)
    p.add_argument("--max-clusters", type=int, default=2000)
    p.add_argument("--sample", type=int, default=10_000)
    p.add_argument("--chunk", type=int, default=1024)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    load_before = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="knndm_bench_"))
    ds = raster(args.cells, args.chunk)
    side = ds.sizes["x"]
    training(args.train, side, args.patches, args.seed, work / "train.parquet")
    times: dict[str, float] = {}
    real = {"sampled": knndm_module.sampled_distances, "candidates": knndm_module._candidates}

    def timed(name, fn):
        def run(*a, **k):
            t = time.perf_counter()
            out = fn(*a, **k)
            times[name] = time.perf_counter() - t
            return out

        return run

    knndm_module.sampled_distances = timed("prediction_sample_Gij", real["sampled"])
    knndm_module._candidates = timed("candidates", real["candidates"])
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, memory_limit="3GiB") as cluster,
        Client(cluster) as client,
    ):
        start = time.perf_counter()
        table = sd.load_table(str(work / "train.parquet"), label="label", coords=["x", "y"])
        res = sd.knndm_folds(
            table,
            ds,
            n_folds=args.folds,
            sample=args.sample,
            seed=args.seed,
            n_candidates=args.candidates,
            max_clusters=args.max_clusters,
            client=client,
        )
        times["knndm_folds_total"] = time.perf_counter() - start
        t = time.perf_counter()
        res.table.data[["x", "y", res.column]].to_parquet(work / "folds.parquet")
        times["write_fold_column"] = time.perf_counter() - t
        times["total"] = time.perf_counter() - start
    out = {
        "train_pixels": args.train,
        "raster_cells": side * side,
        "valid_cells": int(((ds.x >= side * 0.05) & (ds.y >= side * 0.05)).sum()),
        "candidates_tried": len(res.candidates),
        "n_clusters": res.n_clusters,
        "W": res.W,
        "W_random": res.W_random,
        "fold_sizes": list(res.fold_sizes),
        "seconds": {k: round(v, 1) for k, v in times.items()},
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "cpus": psutil.cpu_count(),
    }
    print(json.dumps(out, indent=1))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
