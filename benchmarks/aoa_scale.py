"""AOA at scale: ``soak_dask.aoa`` of a generated raster against training pixels on 2 workers,
beside an in-memory scikit-learn ``NearestNeighbors`` loop on the same data.

The raster is written to Zarr chunk by chunk by the workers (never whole in memory): each band
is a mix of a few smooth latent fields (sinusoids of the coordinates, as terrain and spectra
are smooth and correlated) plus pixel noise. The training pixels are cells drawn at random.

Two runs, side by side on the same data:

- ``soak_dask``: ``sd.aoa(train, lazy_zarr_raster, client=...)`` written with ``write_aoa``
  (training pass on the workers, raster read and searched chunk by chunk);
- ``sklearn``: the raster loaded into one process's memory, standardised, the training DI from
  ``NearestNeighbors`` (k = 2) and the mean distance from ``pairwise_distances_chunked``, then
  ``kneighbors`` over the cells in a loop of 100k-cell blocks (what one writes by hand; its peak
  memory holds the whole raster).

Both must give the same DI (checked on a sample of cells). Ratios: sklearn seconds ÷ soak_dask
seconds; and whether the full-size target (10 M cells, 20 bands, 50k training pixels, 2
workers, <= 10 min, no worker past its memory limit) was met or is extrapolated.

Re-run:  python -m benchmarks.aoa_scale --cells 1000000 --train 20000
Full:    python -m benchmarks.aoa_scale --cells 10000000 --train 50000 --no-sklearn
"""

from __future__ import annotations

import functools
import math
import shutil
import time
from pathlib import Path

import dask.array as da
import numpy as np
import psutil
import xarray as xr
from dask.utils import parse_bytes

import soak_dask as sd
from soak_dask.spatial.aoa import di_threshold, new_di, train_di

from .common import MemorySampler, Ratio, finish, header, local_cluster, parser, timed

LATENT = 4
BLOCK = 100_000


def raster_shape(cells: int) -> tuple[int, int]:
    ny = max(1, round(math.sqrt(cells / 2)))
    return ny, max(1, cells // ny)


def _chunk(block_id=None, *, shape, chunks, seed, bands, mixing, freqs):
    """One (band, y, x) chunk of the scene, a function of the seed and the chunk's place."""
    _, iy, ix = block_id
    y0, x0 = sum(chunks[1][:iy]), sum(chunks[2][:ix])
    ny, nx = chunks[1][iy], chunks[2][ix]
    yy, xx = np.meshgrid(np.arange(y0, y0 + ny), np.arange(x0, x0 + nx), indexing="ij")
    latent = np.stack([np.sin(f[0] * yy + f[1] * xx + f[2]) for f in freqs])  # (L, ny, nx)
    rng = np.random.default_rng([seed, iy, ix])
    values = np.tensordot(mixing, latent, axes=1) + 0.05 * rng.standard_normal((bands, ny, nx))
    return values.astype(np.float32)


def write_scene(path: Path, cells: int, bands: int, chunk: int, seed: int) -> xr.Dataset:
    """The generated raster as a Zarr store (one (y, x) variable per band), opened lazily."""
    shape = raster_shape(cells)
    rng = np.random.default_rng(seed)
    mixing = rng.normal(size=(bands, LATENT))
    freqs = rng.uniform([0.001, 0.001, 0], [0.02, 0.02, 6.3], size=(LATENT, 3))
    chunks = da.core.normalize_chunks((bands, chunk, chunk), (bands, *shape))
    make = functools.partial(
        _chunk, shape=shape, chunks=chunks, seed=seed, bands=bands, mixing=mixing, freqs=freqs
    )
    arr = da.map_blocks(make, chunks=chunks, dtype=np.float32, meta=np.array((), np.float32))
    names = [f"B{i + 1:02d}" for i in range(bands)]
    ds = xr.Dataset({n: (("y", "x"), arr[i]) for i, n in enumerate(names)})
    ds = ds.assign_coords(y=np.arange(shape[0])[::-1] * 10.0, x=np.arange(shape[1]) * 10.0)
    shutil.rmtree(path, ignore_errors=True)
    ds.to_zarr(path, consolidated=False)
    return xr.open_zarr(path, consolidated=False)


def training_pixels(ds: xr.Dataset, n: int, seed: int):
    """``n`` distinct cells drawn at random, read from the store (pointwise, lazily)."""
    ny, nx = ds.sizes["y"], ds.sizes["x"]
    flat = np.sort(np.random.default_rng(seed + 1).choice(ny * nx, size=n, replace=False))
    iy, ix = np.divmod(flat, nx)
    picked = ds.isel(y=xr.DataArray(iy, dims="p"), x=xr.DataArray(ix, dims="p"))
    return picked.to_dataframe()[list(ds.data_vars)].reset_index(drop=True)


def sklearn_loop(train, ds: xr.Dataset, features: list[str]) -> tuple[np.ndarray, float, float]:
    """The in-memory way: the whole raster as one array, NearestNeighbors over 100k-cell blocks.
    Returns the DI of every cell, the threshold and the process's peak RSS in bytes."""
    from sklearn.metrics import pairwise_distances_chunked
    from sklearn.neighbors import NearestNeighbors

    x = train[features].to_numpy(float)
    center, scale = x.mean(0), x.std(0, ddof=1)
    z = (x - center) / scale
    total = sum(chunk.sum() for chunk in pairwise_distances_chunked(z, working_memory=256))
    mean = total / (len(z) * (len(z) - 1))
    nn = NearestNeighbors(n_neighbors=2).fit(z)
    threshold = di_threshold(nn.kneighbors(z)[0][:, 1] / mean)
    cells = np.stack([ds[f].values.ravel() for f in features], axis=1)  # the whole raster
    peak = psutil.Process().memory_info().rss
    nn1 = NearestNeighbors(n_neighbors=1).fit(z)
    di = np.empty(len(cells))
    for start in range(0, len(cells), BLOCK):
        q = (cells[start : start + BLOCK] - center) / scale
        di[start : start + BLOCK] = nn1.kneighbors(q)[0][:, 0] / mean
        peak = max(peak, psutil.Process().memory_info().rss)
    return di, threshold, peak


def main(argv: list[str] | None = None) -> dict:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--cells", type=int, default=1_000_000, help="raster cells (1,000,000)")
    p.add_argument("--bands", type=int, default=20, help="bands (20)")
    p.add_argument("--train", type=int, default=20_000, help="training pixels (20,000)")
    p.add_argument("--chunk", type=int, default=512, help="raster chunk side in cells (512)")
    p.add_argument("--memory-limit", default="3GiB", help="per worker (3GiB)")
    p.add_argument("--no-sklearn", action="store_true", help="skip the in-memory baseline")
    args = p.parse_args(argv)
    if args.quick:
        args.cells, args.train, args.chunk = 40_000, 2_000, 100
    facts = header("AOA at scale", "benchmarks.aoa_scale", argv, args)
    work = args.workdir / "aoa_scale"
    work.mkdir(parents=True, exist_ok=True)
    rows, extra = [], {}
    with local_cluster(2, args.memory_limit) as client:
        (ds, gen_s) = timed(
            lambda: write_scene(work / "scene.zarr", args.cells, args.bands, args.chunk, args.seed)
        )
        features = list(ds.data_vars)
        train = training_pixels(ds, args.train, args.seed)
        print(
            f"   raster {dict(ds.sizes)} ({ds.nbytes / 2**30:.2f} GiB as float32), "
            f"written in {gen_s:.0f} s; {len(train)} training pixels",
            flush=True,
        )
        shutil.rmtree(work / "aoa.zarr", ignore_errors=True)
        with MemorySampler(client) as mem:
            start = time.perf_counter()
            params = train_di(train, features=features, client=client)
            train_s = time.perf_counter() - start
            result = new_di(params, ds, client=client)
            sd.write_aoa(result, work / "aoa.zarr")
            total_s = time.perf_counter() - start
        print(f"   soak_dask: training DI {train_s:.0f} s, all {total_s:.0f} s", flush=True)
        limit = parse_bytes(args.memory_limit)
        peak = max(mem.peaks.values())
        rows.append(
            {
                "run": "soak_dask (2 workers)",
                "train_DI_s": round(train_s, 1),
                "total_s": round(total_s, 1),
                "peak_worker_GiB": round(peak / 2**30, 2),
            }
        )
        extra["memory_limit"] = args.memory_limit
        extra["limit_bytes"] = limit
        ours = xr.open_zarr(work / "aoa.zarr", consolidated=False)
        if not args.no_sklearn:
            (di, thr, rss), sk_s = timed(lambda: sklearn_loop(train, ds.compute(), features))
            rows.append(
                {
                    "run": "sklearn NearestNeighbors loop (1 process)",
                    "train_DI_s": None,
                    "total_s": round(sk_s, 1),
                    "peak_worker_GiB": round(rss / 2**30, 2),
                }
            )
            pick = np.random.default_rng(0).choice(
                di.size, size=min(di.size, 10_000), replace=False
            )
            mine = ours["di"].values.ravel()[pick]
            np.testing.assert_allclose(mine, di[pick], rtol=1e-6, atol=1e-6)  # sklearn: dot trick
            assert abs(thr - params.threshold) < 1e-6 * max(1.0, thr)
            extra["sklearn_seconds"] = sk_s
    ratios = [Ratio("peak worker memory / memory limit", peak / limit, 1.0, False)]
    if not args.no_sklearn:
        ratios.append(Ratio("sklearn seconds / soak_dask seconds", sk_s / total_s, 1.0, True))
    # Full size: the training pass grows with the pairs, the raster pass with the cells (the
    # k-d tree's query time per cell is that of this run's training size: exact at 50,000).
    pair_scale, cell_scale = (50_000 / args.train) ** 2, 10_000_000 / args.cells
    estimate = train_s * pair_scale + (total_s - train_s) * cell_scale
    full = args.cells >= 10_000_000 and args.train >= 50_000
    label = "full size, measured (minutes)" if full else "full size, extrapolated (minutes)"
    ratios.append(Ratio(label, estimate / 60, 10.0, False))
    extra.update(
        seconds_ours=total_s,
        seconds_train=train_s,
        extrapolated_full_seconds=estimate,
        inside=float(ours["aoa"].mean().compute()),
    )
    print(
        f"   inside the AOA: {extra['inside']:.1%}; extrapolated to 10 M cells x 50k training "
        f"pixels (training pass x{pair_scale:.3g}, raster pass x{cell_scale:.3g}): "
        f"{estimate / 60:.1f} min" + ("" if full else " -- an estimate, not a measurement")
    )
    return finish("aoa_scale", args, facts, rows, ratios, extra)


if __name__ == "__main__":
    main()
