"""Write the DI / AOA of ``soak_dask.aoa`` to a Zarr store or a GeoTIFF, chunk by chunk, and
open such a store again.

Nothing the project did not write is replaced: an existing path is refused unless
``overwrite`` and it is a store or GeoTIFF that ``write_aoa`` wrote (marked by the root
attribute or GeoTIFF tag ``AOA_MARK``); a path that is, holds or lies inside an input, or lies
inside a store soak_dask wrote, is refused. What is written is complete or absent, and a Zarr
store carries a completion mark that ``open_aoa`` checks (``soak_dask.io.stores``).
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
from ..io.locations import check_apart, locate
from ..io.stores import MARK, StoreError, enclosing_store, verify_zarr, write_whole, write_zarr
from ..results.store import is_results_store
from ..tables.raster import GEOTIFF_SUFFIXES, X, Y

__all__ = ["AOA_MARK", "is_aoa_output", "open_aoa", "write_aoa"]

#: Root attribute (Zarr) or tag (GeoTIFF) marking what ``write_aoa`` wrote; its value, the
#: format: 2 since stores are written whole with a completion mark.
AOA_MARK = "soak_dask_aoa"
AOA_FORMAT = 2
#: Suffixes of files that are not Zarr stores: ``write_aoa`` refuses to write a Zarr store
#: under such a name (it writes Zarr or GeoTIFF only).
NOT_ZARR = (".nc", ".nc4", ".cdf", ".netcdf", ".h5", ".hdf5", ".csv", ".parquet", ".json")
_WHAT = "AOA store"
_REMEDY = "write it again with write_aoa or 'soak aoa'"
#: Layers written, in band order for a GeoTIFF (those present: ``lpd`` with ``lpd=True``,
#: ``expected_error`` once added from an error profile).
LAYERS = ("di", "aoa", "lpd", "expected_error")


def write_aoa(
    ds: xr.Dataset,
    path: str | os.PathLike,
    *,
    overwrite: bool = False,
    sources: Sequence[Any] = (),
    flag: str = "overwrite=True",
    points: Any = None,
    profile: Any = None,
) -> Path:
    """Write the result of ``soak_dask.aoa`` to ``path``, computing it chunk by chunk.

    Parameters
    ----------
    ds : xarray.Dataset
        From ``soak_dask.aoa`` (lazy or computed).
    path : str or path
        A ``.tif`` / ``.tiff`` file (rasters only: one float32 band per layer, ``di``,
        ``aoa``, and ``lpd`` and ``expected_error`` if present, named in the band
        descriptions, the threshold and settings in the tags; CRS from the raster's
        ``spatial_ref``), or else a Zarr store (every variable, with its attrs -- an
        ``expected_error``'s profile -- and the dataset's; read it with ``open_aoa``). A
        name ending in ``.nc`` or another suffix in ``NOT_ZARR`` is refused.
    overwrite : bool
        Replace ``path`` if ``write_aoa`` wrote it; anything else is never replaced.
    sources : sequence of paths
        Inputs (training table, raster): ``path`` must lie apart from each.
    flag : str
        How messages name ``overwrite`` (``--overwrite`` for the CLI).
    points : array-like, optional
        The training points' x and y, one row each (n, 2), kept in a Zarr store so that its
        page (``soak report``, ``render_path``) draws them on the maps, as ``soak aoa
        --points`` does.
    profile : ErrorProfile, optional
        The ``soak_dask.error_profile`` whose ``expected_error`` layer ``ds`` holds: its CV
        predictions and windows are kept in a Zarr store, for the page's profile figure.

    Returns
    -------
    Path
        ``path``.
    """
    path = Path(path)
    for source in sources:
        check_apart(path, source, "AOA")
    tif = path.suffix.lower() in GEOTIFF_SUFFIXES
    if points is not None or profile is not None:
        if tif:
            raise ValueError(
                f"points= and profile= are kept in a Zarr store only; {path} is a GeoTIFF, "
                "which holds the layers: write to a Zarr path (e.g. aoa.zarr) to keep them"
            )
        from .aoa_record import with_record  # scipy and the AOA code: only when asked

        ds = with_record(ds, points, profile)
    _check_format(ds, path, tif)
    _check_target(path, overwrite, flag)
    path.parent.mkdir(parents=True, exist_ok=True)
    where = locate(path)
    if tif:
        write_whole(where, lambda partial: _write_geotiff(ds, Path(partial.path)), "AOA GeoTIFF")
    else:
        write_zarr(ds.assign_attrs({AOA_MARK: AOA_FORMAT}), where, _WHAT)
    return path


def open_aoa(path: str | os.PathLike, *, allow_unverified: bool = False) -> xr.Dataset:
    """The Zarr store ``write_aoa`` wrote at ``path``, lazily, once checked whole.

    A store whose write did not finish (killed half-way, only partly copied) or with a file
    missing, added or altered since is refused with a ``StoreError`` (a ``ValueError``)
    naming it and what is wrong, where it would otherwise read as NaN. A store written before
    stores had a completion mark cannot be checked: it is refused too, unless
    ``allow_unverified=True``.

    Examples
    --------
    >>> ds = open_aoa("aoa.zarr")  # doctest: +SKIP
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no AOA store at {path}: it does not exist")
    if not is_aoa_output(path) or not path.is_dir():
        raise ValueError(
            f"{path} is not an AOA Zarr store written by write_aoa or 'soak aoa' (a GeoTIFF "
            "it wrote opens with rioxarray.open_rasterio)"
        )
    attrs = _zarr_attrs(path)
    if MARK in attrs or attrs[AOA_MARK] != 1:
        verify_zarr(locate(path), _WHAT, _REMEDY)
    elif not allow_unverified:
        raise StoreError(
            f"the {_WHAT} {path} was written by an older soak_dask, without a completion mark, "
            "so whether it is complete cannot be checked; open it with open_aoa(path, "
            f"allow_unverified=True) if you trust it, or {_REMEDY}"
        )
    ds = xr.open_zarr(path, consolidated=False)
    ds.attrs.pop(MARK, None)  # the store's, not the AOA's
    return ds


def _check_format(ds: xr.Dataset, path: Path, tif: bool) -> None:
    """Refuse a GeoTIFF of a table's AOA, and a Zarr store under a file format's name."""
    if tif and ds["di"].dims != (Y, X):
        raise ValueError(
            f"{path} is a GeoTIFF, but the AOA is over {ds['di'].dims}, not a raster's "
            f"({Y}, {X}); write a table's AOA to a Zarr store (a path not ending in .tif)"
        )
    if path.suffix.lower() in NOT_ZARR:
        raise ValueError(
            f"{path} ends in {path.suffix}, but write_aoa writes a Zarr store (a directory) or "
            "a GeoTIFF, not that format; give a path ending in .zarr, or .tif for a raster's AOA"
        )


def is_aoa_output(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a Zarr store or GeoTIFF that ``write_aoa`` wrote."""
    path = Path(path)
    try:
        if path.suffix.lower() in GEOTIFF_SUFFIXES and path.is_file():
            import rasterio

            with rasterio.open(path) as src:
                return AOA_MARK in src.tags()
        if path.is_dir():
            return AOA_MARK in _zarr_attrs(path)
    except (OSError, ValueError, KeyError, TypeError, ImportError):
        return False
    return False


def _zarr_attrs(path: Path) -> dict[str, Any]:
    import zarr

    return dict(zarr.open_group(str(path), mode="r").attrs)


def _check_target(path: Path, overwrite: bool, flag: str) -> None:
    """Refuse a path inside a store soak_dask wrote, and one that exists unless
    ``overwrite`` and write_aoa wrote it."""
    inside = enclosing_store(path, lambda p: is_results_store(p) or is_aoa_output(p))
    if inside:
        raise ValueError(
            f"{path} is inside the store {inside}, which soak_dask wrote (it would no longer "
            "read as written); write the AOA outside that store"
        )
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
