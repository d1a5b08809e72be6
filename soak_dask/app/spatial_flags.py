"""The flags of the spatial commands (``soak aoa``, ``soak knndm``, ``soak extract``) and of
``soak info --spatial`` (the range of spatial autocorrelation, ``soak_dask.spatial_range``),
kept apart from the modules that run them so that parsing the command line loads no heavy
library (``soak_dask.app.commands`` names each command's flags)."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

from ..settings import SETTINGS
from .flags import add_output, add_setting, add_settings

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
        "--spatial-max-distance",
        type=float,
        default=None,
        metavar="D",
        help="largest distance of the semivariogram, in the coordinates' unit (a third of the "
        "sample's diagonal)",
    )
    group.add_argument(
        "--unit", default=None, help="unit of the coordinates, for the printout (e.g. m)"
    )
    compared = "also its error under random K-fold CV and K-fold CV of whole blocks (--blocks, "
    compared += "else the suggested size; K: --n-folds), side by side (random_vs_block_cv)"
    add_setting(group, replace(SETTINGS["learners"], help=compared), None)


def spatial_options(args: argparse.Namespace) -> dict[str, Any] | None:
    """``spatial_range``'s options from the flags, and ``learners`` (``--learner``, for
    ``random_vs_block_cv``), or None without ``--spatial``; a spatial option given without
    ``--spatial`` is refused (it would do nothing)."""
    if not args.spatial:
        given = [
            flag
            for flag, value, default in (
                ("--spatial-sample", args.spatial_sample, 1_000_000),
                ("--spatial-model", args.spatial_model, "exponential"),
                ("--spatial-max-distance", args.spatial_max_distance, None),
                ("--unit", args.unit, None),
                ("--learner", args.learner_specs, None),
            )
            if value != default
        ]
        if given:
            raise ValueError(f"{', '.join(given)} without --spatial does nothing: add --spatial")
        return None
    return {
        "sample": args.spatial_sample,
        "model": args.spatial_model,
        "max_distance": args.spatial_max_distance,
        "unit": args.unit,
        "learners": args.learner_specs,
    }


#: The table settings kNNDM has no use for: it makes the folds (subsets play no part), and
#: keeps the groups it is given whole, not blocks of its own.
_NOT_KNNDM = ("subset", "fold", "blocks", "block_shape", "clusters")
#: ``soak knndm``'s settings: the table's and the cluster's.
KNNDM_SETTINGS = (
    "data",
    *(s.name for s in SETTINGS.values() if s.scope == "table" and s.name not in _NOT_KNNDM),
    "scheduler",
)
#: The folds' options of ``soak knndm`` declared in ``soak_dask.settings`` (so that
#: ``soak evaluate --outer knndm`` and ``evaluate`` take them the same way).
KNNDM_OWN = ("clustering",)
_SCHEDULER = "address or scheduler file of a running Dask scheduler (default: a local cluster)"


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


def _window(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 2:
        raise argparse.ArgumentTypeError(f"{text!r}: need an integer of at least 2, e.g. 5")
    return value


def _coords(text: str) -> list[str]:
    names = _names(text)
    if len(names) != 2:
        raise argparse.ArgumentTypeError(f"{text!r}: need two column names, X,Y")
    return names


def add_aoa_flags(sub: argparse.ArgumentParser) -> None:
    """The flags of ``soak aoa``."""
    sub.add_argument("train", help="training table: Parquet or CSV (file, directory or glob)")
    sub.add_argument(
        "new",
        help="points to assess: a raster (Zarr store of (y, x) band variables, or a GeoTIFF "
        "whose band descriptions name the bands) or a table (Parquet, CSV)",
    )
    sub.add_argument(
        "--features", type=_names, required=True, metavar="A,B,...", help="the predictors"
    )
    sub.add_argument(
        "--folds",
        metavar="COL",
        help="column of TRAIN holding each row's CV fold, or the folds.parquet soak knndm "
        "wrote for TRAIN",
    )
    sub.add_argument(
        "--weights", type=_weights, metavar="A=W,...", help="predictor weights (importance)"
    )
    sub.add_argument("--lpd", action="store_true", help="also the local point density")
    sub.add_argument(
        "--points",
        type=_coords,
        metavar="X,Y",
        help="columns of TRAIN holding the training points' coordinates: drawn on the maps",
    )
    _add_profile_flags(sub)
    add_output(sub, "soak aoa")
    sub.add_argument(
        "--format",
        choices=("zarr", "tif"),
        default="zarr",
        help="the DI/AOA store: aoa.zarr (default) or aoa.tif (rasters only)",
    )
    sub.add_argument("--scheduler", metavar="ADDRESS", help=_SCHEDULER)


def _add_profile_flags(sub: argparse.ArgumentParser) -> None:
    group = sub.add_argument_group("error profile (CAST's errorProfiles)")
    group.add_argument(
        "--error-profile",
        action="store_true",
        help="fit the CV error as a non-decreasing function of the DI and write the expected "
        "error beside DI/AOA; needs --folds, --label and --predictions or --learner",
    )
    group.add_argument("--label", metavar="COL", help="column of TRAIN holding the observed value")
    group.add_argument(
        "--predictions",
        metavar="COL",
        help="column of TRAIN holding each row's cross-validated prediction (made by a model "
        "trained outside its --folds fold)",
    )
    group.add_argument(
        "--learner",
        metavar="NAME",
        help="instead of --predictions: a built-in learner fitted once per fold on the workers",
    )
    group.add_argument(
        "--error-metric",
        choices=("rmse", "mae", "error_rate"),
        help="default: rmse for a numeric label, error_rate for classes",
    )
    group.add_argument(
        "--window",
        type=_window,
        metavar="N",
        help="CV predictions per moving window (default 5, as CAST)",
    )


def add_knndm_flags(sub: argparse.ArgumentParser) -> None:
    """The flags of ``soak knndm``: its table settings, the folds' options and the output."""
    sections = {"table": "the training table (soak_dask.load_table)", "app": "data and cluster"}
    add_settings(sub, KNNDM_SETTINGS, run_file=False, sections=sections)
    run = sub.add_argument_group("the folds (soak_dask.knndm_folds)")
    run.add_argument(
        "prediction",
        metavar="PREDICTION",
        help="the prediction area: Parquet/CSV table with the coordinate (or feature) "
        "columns, or a GeoTIFF/Zarr raster",
    )
    run.add_argument("--n-folds", type=int, metavar="K", help="K (10)")
    run.add_argument(
        "--space",
        choices=("geographical", "feature"),
        default="geographical",
        help="distances between coordinates (default) or standardised features",
    )
    run.add_argument(
        "--sample", type=int, default=10_000, metavar="N", help="prediction points sampled (10000)"
    )
    run.add_argument("--maxp", type=float, help="largest share of one fold (0.5)")
    run.add_argument(
        "--test-prop",
        type=float,
        metavar="P",
        help="a train/test split instead of K folds (CAST 1.1.1's test_prop): one part holds "
        "P ± --test-tolerance of the rows, the part nearer P is the test part",
    )
    run.add_argument(
        "--test-tolerance",
        type=float,
        metavar="T",
        help="allowed deviation of the test share from --test-prop (0.1)",
    )
    run.add_argument(
        "--candidates", type=int, default=100, metavar="N", help="cluster counts (100)"
    )
    for name in KNNDM_OWN:
        add_setting(run, SETTINGS[name], None)
    run.add_argument("--seed", type=int, default=1, help="seed (1)")
    add_output(sub.add_argument_group("output"), "soak knndm")


def add_extract_flags(sub: argparse.ArgumentParser) -> None:
    """The flags of ``soak extract``."""
    sub.add_argument(
        "raster", help="the raster: a GeoTIFF (bands named by their descriptions) or Zarr"
    )
    sub.add_argument(
        "points",
        help="the points: Parquet or CSV with coordinate columns, GeoParquet of points, or a "
        "GeoPackage (.gpkg) layer of points (needs pip install soak_dask[vector])",
    )
    sub.add_argument(
        "--layer",
        metavar="NAME",
        help="the GeoPackage's layer of points, when it has several",
    )
    sub.add_argument("--x", default="x", help="the points' x (easting, longitude) column (x)")
    sub.add_argument("--y", default="y", help="the points' y (northing, latitude) column (y)")
    sub.add_argument(
        "--crs",
        metavar="CRS",
        help="the points' CRS, e.g. EPSG:4326, when not the raster's (a GeoParquet file's or "
        "GeoPackage layer's own is read from it); they are transformed into the raster's",
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
        "--keep",
        metavar="A,B,...",
        help="the points' columns to carry beside the coordinates (default: all); leave out "
        "those named like the bands",
    )
    sub.add_argument(
        "--mean-by",
        metavar="COLUMN",
        help="one point per value of COLUMN: the mean of its rows' columns kept (e.g. the "
        "readings of each sensor, as CAST's farm examples average them)",
    )
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
    sub.add_argument("--scheduler", metavar="ADDRESS", help=_SCHEDULER)
