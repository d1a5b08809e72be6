"""``soak extract``: the values of a raster's bands at points (``soak_dask.extract``), written
as a Parquet table that every other command reads, and a one-paragraph summary.

``extract_command(args)`` runs it (``soak_dask.app.commands`` declares it, its flags are
``spatial_flags.add_extract_flags``).
"""

from __future__ import annotations

import argparse


def extract_command(args: argparse.Namespace) -> None:
    """``soak extract``: check ``--out`` (in ``extract``, before any work), read the points
    and the raster around them on the cluster, write the table and print the summary."""
    from ..run.cluster import command_client
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
        "keep": None if args.keep is None else [c.strip() for c in args.keep.split(",")],
        "mean_by": args.mean_by,
        "layer": args.layer,
    }
    sources = {"raster": args.raster, "points": args.points}
    check_extract_out(args.out, args.overwrite, sources, "--overwrite")  # before the cluster
    # extract computes on the client that connect makes the default one
    with command_client(args.scheduler, log_failures=getattr(args, "debug", False)):
        summary = extract(
            args.raster, args.points, **options, out=args.out, overwrite=args.overwrite
        )
    print(summary.text())
