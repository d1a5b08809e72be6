"""``soak extract``: the values of a raster's bands at points (``soak_dask.extract``), written
as a Parquet table that every other command reads, and a one-paragraph summary.

``add_parser(command)`` registers the sub-command with the ``soak`` parser;
``extract_command(args)`` runs it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

COMMAND = "extract"
HELP = (
    "values of a raster's bands at points (nearest cell, window or buffer mean), any CRS; "
    "writes the points' table with one column per band as Parquet"
)


def add_parser(command: Callable[[str, str], argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Register ``soak extract`` with ``command(name, help_text)``; the sub-parser."""
    sub = command(COMMAND, HELP)
    sub.add_argument(
        "raster", help="the raster: a GeoTIFF (bands named by their descriptions) or Zarr"
    )
    sub.add_argument(
        "points",
        help="the points: Parquet or CSV with coordinate columns, or GeoParquet of points",
    )
    sub.add_argument("--x", default="x", help="the points' x (easting, longitude) column (x)")
    sub.add_argument("--y", default="y", help="the points' y (northing, latitude) column (y)")
    sub.add_argument(
        "--crs",
        metavar="CRS",
        help="the points' CRS, e.g. EPSG:4326, when not the raster's (a GeoParquet file's "
        "own is read from it); they are transformed into the raster's",
    )
    sub.add_argument(
        "--method",
        choices=("nearest", "window", "buffer"),
        default="nearest",
        help="the cell holding the point (default), the mean of a window of cells, or of the "
        "cells within --buffer",
    )
    sub.add_argument("--window", type=int, metavar="N", help="window size in cells, odd (3)")
    sub.add_argument("--buffer", type=float, metavar="R", help="radius in the raster's unit")
    sub.add_argument("--bands", metavar="A,B,...", help="bands, comma-separated (default: all)")
    sub.add_argument(
        "--outside",
        choices=("keep", "drop"),
        help="keep (NaN values) or drop points off the raster or on nodata; default: refuse them",
    )
    sub.add_argument("--out", required=True, help="the table to write (a Parquet dataset)")
    sub.add_argument(
        "--overwrite",
        action="store_true",
        help="replace a table an earlier 'soak extract' wrote at --out (nothing else is replaced)",
    )
    sub.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="address or scheduler file of a running Dask scheduler (default: a local cluster)",
    )
    return sub


def extract_command(args: argparse.Namespace) -> None:
    """``soak extract``: check ``--out`` (in ``extract``, before any work), read the points
    and the raster around them on the cluster, write the table and print the summary."""
    from ..run.cluster import connect
    from ..spatial.extract import extract
    from ..spatial.extract_out import check_extract_out

    options = {
        "coords": (args.x, args.y),
        "crs": args.crs,
        "method": args.method,
        "window": args.window,
        "buffer": args.buffer,
        "bands": None if args.bands is None else [b.strip() for b in args.bands.split(",")],
        "outside": args.outside,
    }
    sources = {"raster": args.raster, "points": args.points}
    check_extract_out(args.out, args.overwrite, sources, "--overwrite")  # before the cluster
    # extract computes on the client that connect makes the default one
    with connect(args.scheduler, log_failures=getattr(args, "debug", False)):
        summary = extract(
            args.raster, args.points, **options, out=args.out, overwrite=args.overwrite
        )
    print(summary.text())
