"""The flags of ``soak info --spatial`` (the range of spatial autocorrelation,
``soak_dask.spatial_range``), kept apart from ``soak_dask.app.info`` so that parsing the
command line loads no heavy library."""

from __future__ import annotations

import argparse
from typing import Any

#: ``spatial_range``'s models (``soak_dask.spatial.variogram.MODELS``, which loads scipy).
MODELS = ("exponential", "spherical", "gaussian")


def add_spatial_flags(parser: argparse.ArgumentParser) -> None:
    """Add ``--spatial`` and its options to ``soak info``'s ``parser``."""
    group = parser.add_argument_group(
        "spatial autocorrelation (soak_dask.spatial_range; needs --coords)"
    )
    group.add_argument(
        "--spatial",
        action="store_true",
        help="also print the range of spatial autocorrelation of the label, its interval, the "
        "suggested --blocks size and how much random folds would flatter",
    )
    group.add_argument(
        "--spatial-sample",
        type=int,
        default=1_000_000,
        metavar="N",
        help="rows sampled for the semivariogram (1000000)",
    )
    group.add_argument(
        "--spatial-model", choices=MODELS, default="exponential", help="semivariogram model"
    )
    group.add_argument(
        "--unit", default=None, help="unit of the coordinates, for the printout (e.g. m)"
    )


def spatial_options(args: argparse.Namespace) -> dict[str, Any] | None:
    """``spatial_range``'s options from the flags, or None without ``--spatial``; a spatial
    option given without ``--spatial`` is refused (it would do nothing)."""
    if not args.spatial:
        given = [
            flag
            for flag, value, default in (
                ("--spatial-sample", args.spatial_sample, 1_000_000),
                ("--spatial-model", args.spatial_model, "exponential"),
                ("--unit", args.unit, None),
            )
            if value != default
        ]
        if given:
            raise ValueError(f"{', '.join(given)} without --spatial does nothing: add --spatial")
        return None
    return {"sample": args.spatial_sample, "model": args.spatial_model, "unit": args.unit}
