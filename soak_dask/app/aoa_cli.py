"""``soak aoa``: the dissimilarity index and area of applicability (``soak_dask.aoa``) of a
raster or table against a training table, written into a directory: the DI/AOA store
(``aoa.zarr``, or ``aoa.tif`` with ``--format tif``), the map (``aoa.png``) and the settings
(``aoa.json``); the directory's manifest (``soak_dask.results.outdir``) marks it as this command's.

``add_parser(command)`` registers the sub-command with the ``soak`` parser;
``aoa_command(args)`` runs it.
"""

from __future__ import annotations

import argparse
import json
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .flags import add_output, check_command_out

if TYPE_CHECKING:
    import xarray as xr

COMMAND = "aoa"
HELP = (
    "area of applicability: the dissimilarity index of a raster or table against a training "
    "table (Meyer & Pebesma 2021, as CAST); writes the DI/AOA store and a map"
)
SETTINGS_FILE = "aoa.json"
GENERATOR = "soak_dask aoa"
#: Extensions of a GeoTIFF raster given as NEW.
_TIF = (".tif", ".tiff")


def _names(text: str) -> list[str]:
    names = [v.strip() for v in text.split(",") if v.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"{text!r}: need comma-separated names, e.g. B1,B2")
    return names


def _weights(text: str) -> dict[str, float]:
    out = {}
    for item in _names(text):
        name, sep, value = item.partition("=")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            sep = ""
        if not sep:
            raise argparse.ArgumentTypeError(
                f"{item!r}: need NAME=WEIGHT pairs, comma-separated, e.g. DEM=2.5,TWI=1"
            )
    return out


def add_parser(command: Callable[[str, str], argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Register ``soak aoa`` with ``command(name, help_text)``; the sub-parser."""
    sub = command(COMMAND, HELP)
    sub.add_argument("train", help="training table: Parquet or CSV (file, directory or glob)")
    sub.add_argument(
        "new",
        help="points to assess: a raster (Zarr store of (y, x) band variables, or a GeoTIFF "
        "whose band descriptions name the bands) or a table (Parquet, CSV)",
    )
    sub.add_argument(
        "--features", type=_names, required=True, metavar="A,B,...", help="the predictors"
    )
    sub.add_argument("--folds", metavar="COL", help="column of TRAIN holding each row's CV fold")
    sub.add_argument(
        "--weights", type=_weights, metavar="A=W,...", help="predictor weights (importance)"
    )
    sub.add_argument("--lpd", action="store_true", help="also the local point density")
    add_output(sub, "soak aoa")
    sub.add_argument(
        "--format",
        choices=("zarr", "tif"),
        default="zarr",
        help="the DI/AOA store: aoa.zarr (default) or aoa.tif (rasters only)",
    )
    sub.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="address or scheduler file of a running Dask scheduler (default: a local cluster)",
    )
    return sub


def aoa_command(args: argparse.Namespace) -> None:
    """``soak aoa``: check ``--out``, open the inputs lazily, compute on the cluster, write the
    files and print the threshold and the share inside."""
    import xarray as xr

    from ..io.locations import check_apart
    from ..run.cluster import connect
    from ..spatial.aoa import aoa
    from ..spatial.aoa_io import write_aoa

    out = check_command_out("soak aoa", args.out, args.overwrite, args.new)
    check_apart(out.path, args.train, "output")
    with connect(args.scheduler, log_failures=getattr(args, "debug", False)) as client:
        train, new = open_input(args.train), open_input(args.new, raster=True)
        if args.format == "tif" and not isinstance(new, xr.Dataset):
            raise ValueError(f"--format tif needs a raster as NEW; {args.new} is a table")
        options = {"features": args.features, "weights": args.weights, "folds": args.folds}
        ds = aoa(train, new, **options, lpd=args.lpd, client=client)
        store = out.claim("aoa.tif" if args.format == "tif" else "aoa.zarr")  # after begin
        settings = {"generator": GENERATOR, "train": args.train, "new": args.new, **ds.attrs}
        text = json.dumps(settings, indent=1, default=str) + "\n"
        out.claim(SETTINGS_FILE).write_text(text)
        write_aoa(ds, store, overwrite=True, sources=[args.train, args.new], flag="--overwrite")
        written = _reopen(store, ds)  # computed once, by write_aoa
        inside = float(written["aoa"].mean().compute())
        _write_map(written, out.claim("aoa.png"))
        out.finish()
    print(f"threshold {ds.attrs['threshold']:.4g} (mean distance {ds.attrs['mean_distance']:.4g})")
    print(f"inside the AOA: {inside:.1%} of the points with every predictor")
    print(f"\nFiles: {store}, {out.path / 'aoa.png'}, {out.path / SETTINGS_FILE}")


def _reopen(store: Path, ds: xr.Dataset) -> xr.Dataset:
    """The layers as written, lazily, with the result's attrs (a Zarr store checked whole)."""
    import xarray as xr

    from ..spatial.aoa_io import open_aoa

    if store.suffix != ".tif":
        return open_aoa(store)
    import rioxarray

    image = rioxarray.open_rasterio(store, chunks=True)
    layers = {name: image.isel(band=i, drop=True) for i, name in enumerate(image.long_name)}
    return xr.Dataset(layers, attrs=ds.attrs).assign(train_di=ds["train_di"])


def _write_map(ds: xr.Dataset, path: Path) -> None:
    import matplotlib.pyplot as plt

    from ..spatial.aoa_plot import plot_aoa

    fig = plot_aoa(ds)
    try:
        fig.savefig(path, dpi=150)
    finally:
        plt.close(fig)


def open_input(path: str, raster: bool = False) -> Any:
    """A lazy Dask frame of a Parquet or CSV table; with ``raster``, a Zarr store or GeoTIFF
    as a lazy Dataset (a GeoTIFF's variables named by its band descriptions)."""
    import xarray as xr

    from ..tables.delimited import is_delimited_source, open_delimited
    from ..tables.parquet import ROWS_PER_PARTITION, open_parquet

    plain = os.fspath(path).rstrip("/")
    if raster and plain.lower().endswith(".zarr"):
        with warnings.catch_warnings():
            # Stores without consolidated metadata (Zarr v3's default) are read all the same.
            warnings.filterwarnings("ignore", message="Failed to open Zarr store with consolid")
            return xr.open_zarr(plain, consolidated=None)
    if raster and plain.lower().endswith(_TIF):
        return _open_geotiff(plain)
    if is_delimited_source(plain, None):
        return open_delimited(plain, None, ROWS_PER_PARTITION)[0]
    return open_parquet(plain, None, ROWS_PER_PARTITION)[0]


def _open_geotiff(path: str) -> xr.Dataset:
    """One (y, x) variable per band, named by the band descriptions (``open_geotiffs`` names
    them ``"{variable}_{band}"``; the variable here is empty)."""
    from ..tables.raster import open_geotiffs

    ds = open_geotiffs({"band": path})
    return ds.rename({v: str(v).removeprefix("band_") for v in ds.data_vars})
