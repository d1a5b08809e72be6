"""``soak aoa``: the dissimilarity index and area of applicability (``soak_dask.aoa``) of a
raster or table against a training table, written into a directory: the DI/AOA store
(``aoa.zarr``, or ``aoa.tif`` with ``--format tif``), the map (``aoa.png``), the settings
(``aoa.json``) and the report page (``report.html``: ``soak_dask.spatial.aoa_page``, with
its figures and tables beside it); the directory's manifest (``soak_dask.io.outdir``)
marks it as this command's. With ``--error-profile``, the error profile
(``soak_dask.error_profile``) of the training table's cross-validated predictions too: the
expected-error layer in the store, beside DI/AOA, and its figure (``error_profile.png``).
A Zarr store also keeps the training points (``--points``) and the profile's windows, so that
``soak report`` draws the same page from it alone.

``aoa_command(args)`` runs it (``soak_dask.app.commands`` declares it, its flags are
``spatial_flags.add_aoa_flags``).
"""

from __future__ import annotations

import argparse
import json
import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .flags import check_command_out

if TYPE_CHECKING:
    import xarray as xr

SETTINGS_FILE = "aoa.json"
GENERATOR = "soak_dask aoa"
#: The writer its output directory's manifest names.
WRITER = "soak aoa"
#: Extensions of a GeoTIFF raster given as NEW.
_TIF = (".tif", ".tiff")


def check_profile_flags(args: argparse.Namespace) -> None:
    """Refuse, before any work, error-profile flags that do not go together."""
    given = [f"--{n}" for n in ("label", "predictions", "learner") if getattr(args, n)]
    given += [f for f, v in (("--error-metric", args.error_metric), ("--window", args.window)) if v]
    if not args.error_profile:
        if given:
            raise ValueError(
                f"{', '.join(given)} only serve --error-profile; add it, or leave them out"
            )
        return
    missing = [f for f, v in (("--folds", args.folds), ("--label", args.label)) if not v]
    if missing:
        raise ValueError(
            f"--error-profile needs {' and '.join(missing)}: the CV fold of each training row "
            "and its observed value"
        )
    if bool(args.predictions) == bool(args.learner):
        raise ValueError(
            "--error-profile needs one of --predictions COL (the CV predictions) or --learner "
            "NAME (fitted once per fold to make them), not "
            + ("both" if args.learner else "neither")
        )


def aoa_command(args: argparse.Namespace) -> None:
    """``soak aoa``: check ``--out``, open the inputs lazily, compute on the cluster, write the
    files and print the threshold and the share inside."""
    import xarray as xr

    from ..io.locations import check_apart
    from ..run.cluster import command_client
    from ..spatial.aoa import aoa
    from ..spatial.aoa_page import aoa_text
    from ..spatial.error_profile import expected_error

    check_profile_flags(args)
    out = check_command_out(WRITER, args.out, args.overwrite, args.new)
    check_apart(out.path, args.train, "output")
    with command_client(args.scheduler, log_failures=getattr(args, "debug", False)) as client:
        train, new = open_input(args.train), open_input(args.new, raster=True)
        if args.format == "tif" and not isinstance(new, xr.Dataset):
            raise ValueError(f"--format tif needs a raster as NEW; {args.new} is a table")
        train, folds = _train_folds(train, args.folds)
        options = {"features": args.features, "weights": args.weights, "folds": folds}
        points = _points(train, args.points)
        profile = _profile(train, args, options, client) if args.error_profile else None
        ds = aoa(train, new, **options, lpd=args.lpd, client=client)
        if profile is not None:
            ds = ds.assign(expected_error=expected_error(ds, profile))
        store, page, counts = _write_outputs(ds, out, args, points, profile)
    print(aoa_text(ds, counts[1] / counts[0] if counts[0] else float("nan"), profile))
    print(f"\nFiles: {', '.join(str(f) for f in [store, page, out.path / SETTINGS_FILE])}")


def _write_outputs(
    ds: xr.Dataset, out: Any, args: argparse.Namespace, points: Any, profile: Any
) -> tuple[Path, Path, tuple[int, int]]:
    """The settings, the store (with the training points and the profile's windows: a Zarr
    store, ``soak_dask.spatial.aoa_record``) and the report page with its figures and tables;
    the store's and page's paths and ``aoa_counts``."""
    from ..results.pages import write_page
    from ..spatial.aoa_io import write_aoa
    from ..spatial.aoa_page import NEW_SOURCE, TRAIN_SOURCE, aoa_counts, aoa_page
    from ..spatial.aoa_record import with_record

    tif = args.format == "tif"
    store = out.claim("aoa.tif" if tif else "aoa.zarr")  # after begin
    settings = {"generator": GENERATOR, "train": args.train, "new": args.new, **ds.attrs}
    if profile is not None:
        settings["error_profile"] = profile.attrs()
    text = json.dumps(settings, indent=1, default=str) + "\n"
    out.claim(SETTINGS_FILE).write_text(text)
    ds = ds.assign_attrs({TRAIN_SOURCE: str(args.train), NEW_SOURCE: str(args.new)})
    recorded = ds if tif else with_record(ds, points, profile)  # a GeoTIFF: layers only
    write_aoa(recorded, store, overwrite=True, sources=[args.train, args.new], flag="--overwrite")
    written = _reopen(store, ds)  # computed once, by write_aoa
    counts = aoa_counts(written)
    page = write_page(aoa_page(written, points=points, profile=profile, counts=counts), out)
    return store, page, counts


def _train_folds(train: Any, folds: str | None) -> tuple[Any, str | None]:
    """TRAIN and the name of its fold column: ``--folds`` itself, or the fold column of the
    fold file ``--folds`` names (``soak knndm``'s folds.parquet), joined on row position."""
    from ..split.fold_file import is_fold_file, join_fold_file, refuse_split

    if not is_fold_file(folds):
        return train, folds
    refuse_split(folds, "--folds")  # before the pass that joins it
    train, info = join_fold_file(train, folds)
    return train, info["fold"]


def _points(train: Any, columns: list[str] | None) -> Any:
    """The training points' coordinates (small: the training table is held in memory)."""
    if columns is None:
        return None
    missing = [c for c in columns if c not in train.columns]
    if missing:
        raise ValueError(
            f"--points: columns {missing} not in TRAIN, whose columns are {list(train.columns)}"
        )
    return train[columns].compute().to_numpy(dtype=float)


def _profile(train: Any, args: argparse.Namespace, options: dict, client: Any) -> Any:
    from ..spatial.error_profile import error_profile

    return error_profile(
        train,
        predictions=args.predictions,
        learner=args.learner,
        label=args.label,
        metric=args.error_metric,
        client=client,
        **({"window": args.window} if args.window else {}),
        **options,
    )


def _reopen(store: Path, ds: xr.Dataset) -> xr.Dataset:
    """The layers as written, lazily, with the result's attrs (a Zarr store checked whole)."""
    import xarray as xr

    from ..spatial.aoa_io import open_aoa

    if store.suffix != ".tif":
        return open_aoa(store)
    import rioxarray

    image = rioxarray.open_rasterio(store, chunks=True)
    layers = {
        name: image.isel(band=i, drop=True).assign_attrs(ds[name].attrs)
        for i, name in enumerate(image.long_name)
    }
    return xr.Dataset(layers, attrs=ds.attrs).assign(train_di=ds["train_di"])


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
            # decode_coords="all": the CRS variable rioxarray wrote (CF grid mapping) stays a
            # coordinate, so the outputs keep it (map axes in metres, not coordinate units).
            return xr.open_zarr(plain, consolidated=None, decode_coords="all")
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
