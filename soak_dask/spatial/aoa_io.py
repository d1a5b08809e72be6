"""Write the DI / AOA of ``soak_dask.aoa`` to a Zarr store or a GeoTIFF, chunk by chunk.

Nothing the project did not write is replaced: an existing path is refused unless
``overwrite`` and it is a store or GeoTIFF that ``write_aoa`` wrote (marked by the root
attribute or GeoTIFF tag ``AOA_MARK``); a path that is, holds or lies inside an input is
refused (``soak_dask.results.store.check_apart``).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from ..dask_client import current_client
from ..io.locations import check_apart
from ..tables.raster import GEOTIFF_SUFFIXES, X, Y

__all__ = ["AOA_MARK", "is_aoa_output", "write_aoa"]

#: Root attribute (Zarr) or tag (GeoTIFF) marking what ``write_aoa`` wrote.
AOA_MARK = "soak_dask_aoa"
#: Layers written, in band order for a GeoTIFF.
LAYERS = ("di", "aoa", "lpd")


def write_aoa(
    ds: xr.Dataset,
    path: str | os.PathLike,
    *,
    overwrite: bool = False,
    sources: Sequence[Any] = (),
    flag: str = "overwrite=True",
) -> Path:
    """Write the result of ``soak_dask.aoa`` to ``path``, computing it chunk by chunk.

    Parameters
    ----------
    ds : xarray.Dataset
        From ``soak_dask.aoa`` (lazy or computed).
    path : str or path
        A ``.tif`` / ``.tiff`` file (rasters only: one float32 band per layer, ``di``,
        ``aoa`` and ``lpd`` if present, named in the band descriptions, the threshold and
        settings in the tags; CRS from the raster's ``spatial_ref``), or else a Zarr store
        (every variable and the attrs).
    overwrite : bool
        Replace ``path`` if ``write_aoa`` wrote it; anything else is never replaced.
    sources : sequence of paths
        Inputs (training table, raster): ``path`` must lie apart from each.
    flag : str
        How messages name ``overwrite`` (``--overwrite`` for the CLI).

    Returns
    -------
    Path
        ``path``.
    """
    path = Path(path)
    for source in sources:
        check_apart(path, source, "AOA")
    tif = path.suffix.lower() in GEOTIFF_SUFFIXES
    if tif and ds["di"].dims != (Y, X):
        raise ValueError(
            f"{path} is a GeoTIFF, but the AOA is over {ds['di'].dims}, not a raster's "
            f"({Y}, {X}); write a table's AOA to a Zarr store (a path not ending in .tif)"
        )
    _check_target(path, overwrite, flag)
    path.parent.mkdir(parents=True, exist_ok=True)
    if tif:
        _write_geotiff(ds, path)
    else:
        ds.assign_attrs({AOA_MARK: 1}).to_zarr(path, mode="w", consolidated=False)
    return path


def is_aoa_output(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a Zarr store or GeoTIFF that ``write_aoa`` wrote."""
    path = Path(path)
    try:
        if path.suffix.lower() in GEOTIFF_SUFFIXES and path.is_file():
            import rasterio

            with rasterio.open(path) as src:
                return AOA_MARK in src.tags()
        if path.is_dir():
            import zarr

            return AOA_MARK in zarr.open_group(str(path), mode="r").attrs
    except (OSError, ValueError, KeyError, TypeError, ImportError):
        return False
    return False


def _check_target(path: Path, overwrite: bool, flag: str) -> None:
    if not path.exists():
        return
    if not overwrite:
        raise FileExistsError(f"{path} exists; pass {flag} to replace it, or choose another path")
    empty_dir = path.is_dir() and not any(path.iterdir())
    if not (empty_dir or is_aoa_output(path)):
        raise FileExistsError(
            f"{path} was not written by write_aoa, and {flag} replaces only what write_aoa "
            f"wrote; choose another path, or move or delete {path} yourself"
        )


def _write_geotiff(ds: xr.Dataset, path: Path) -> None:
    """One float32 band per layer, written by rioxarray chunk by chunk (a lock per file)."""
    try:
        import rioxarray  # noqa: F401  (registers the .rio accessor)
    except ImportError as err:
        raise ImportError(
            f"writing {path} needs rioxarray: pip install 'soak_dask[raster]', or write a Zarr "
            "store (a path not ending in .tif)"
        ) from err
    layers = [name for name in LAYERS if name in ds]
    stack = xr.concat([ds[name].astype(np.float32) for name in layers], dim="band")
    stack = stack.assign_coords(band=np.arange(1, len(layers) + 1)).transpose("band", Y, X)
    stack = stack.rio.write_nodata(np.float32(np.nan), encoded=False)
    stack.attrs["long_name"] = tuple(layers)
    tags = {AOA_MARK: "1", **{k: _tag(v) for k, v in ds.attrs.items()}}
    client = current_client()
    if client is not None:
        from distributed import Lock

        lock: Any = Lock(f"write_aoa:{path.resolve()}")
    else:
        lock = threading.Lock()
    stack.rio.to_raster(path, tiled=True, lock=lock, compute=True, tags=tags)


def _tag(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)
