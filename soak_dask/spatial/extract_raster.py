"""The raster of ``soak_dask.extract``: its bands opened lazily, and its grid (cell size,
extent, Dask chunks) as the small object that places points in cells and chunks."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from ..tables.raster import DEFAULT_CHUNK, GEOTIFF_SUFFIXES, X, Y, open_geotiffs

#: Prefix ``open_geotiffs`` gives a multi-band file's variables when its key is this.
_KEY = "band"


@dataclass(frozen=True)
class Grid:
    """A regular raster grid and its Dask chunks.

    Attributes
    ----------
    x0, y0 : float
        Outer edge of the first column / row (the corner of cell (0, 0)).
    dx, dy : float
        Cell size along x and y, signed as the coordinates run (``dy`` < 0 north-up).
    nx, ny : int
        Cells along x and y.
    xbounds, ybounds : tuple of int
        Chunk edges along x and y, in cells, from 0 to ``nx`` / ``ny``.
    """

    x0: float
    dx: float
    y0: float
    dy: float
    nx: int
    ny: int
    xbounds: tuple[int, ...]
    ybounds: tuple[int, ...]

    @property
    def n_chunks_x(self) -> int:
        return len(self.xbounds) - 1

    @property
    def bounds(self) -> tuple[float, float, float, float]:
        """(xmin, ymin, xmax, ymax) of the cells' outer edges."""
        xs = sorted((self.x0, self.x0 + self.nx * self.dx))
        ys = sorted((self.y0, self.y0 + self.ny * self.dy))
        return xs[0], ys[0], xs[1], ys[1]

    def cells(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Row and column of the cell holding each point, and whether it is on the raster."""
        with np.errstate(invalid="ignore"):
            fx, fy = np.floor((x - self.x0) / self.dx), np.floor((y - self.y0) / self.dy)
        inside = (fx >= 0) & (fx < self.nx) & (fy >= 0) & (fy < self.ny)
        ix = np.where(inside, fx, -1).astype(np.int64)
        iy = np.where(inside, fy, -1).astype(np.int64)
        return iy, ix, inside

    def chunk(self, iy: np.ndarray, ix: np.ndarray) -> np.ndarray:
        """Chunk number (row-major) of cells (iy, ix) on the raster."""
        cy = np.searchsorted(self.ybounds, iy, side="right") - 1
        cx = np.searchsorted(self.xbounds, ix, side="right") - 1
        return cy * self.n_chunks_x + cx

    def window(self, span: tuple[int, ...], halo: int) -> tuple[int, int, int, int]:
        """Cells (y0, y1, x0, x1) spanning ``span`` (first and last row, first and last
        column) widened by ``halo`` cells, cut to the raster."""
        return (
            max(0, span[0] - halo),
            min(self.ny, span[1] + 1 + halo),
            max(0, span[2] - halo),
            min(self.nx, span[3] + 1 + halo),
        )

    def centres(self, iy: np.ndarray, ix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Coordinates of the centres of cells (iy, ix)."""
        return self.x0 + (ix + 0.5) * self.dx, self.y0 + (iy + 0.5) * self.dy


def open_raster(raster: Any, bands: Any, chunks: int | None) -> tuple[xr.Dataset, list[str], str]:
    """The raster as a lazy Dataset of (y, x) band variables chunked alike, the bands to
    extract (checked) and a name for messages."""
    if isinstance(raster, xr.DataArray):
        raster = _bands_of(raster)
        name = "raster"
    elif isinstance(raster, xr.Dataset):
        name = "raster"
    elif isinstance(raster, str | os.PathLike):
        name = os.fspath(raster)
        raster = _open_path(name, chunks)
    else:
        raise TypeError(
            f"raster is a {type(raster).__name__}: give an xarray Dataset or DataArray, or the "
            "path of a GeoTIFF or a Zarr store"
        )
    missing = [d for d in (Y, X) if d not in raster.dims]
    if missing:
        raise ValueError(
            f"{name} has dims {sorted(map(str, raster.dims))}, no {missing}: a raster needs "
            f"dims {Y!r} and {X!r} (rename them, e.g. ds.rename(lat='y', lon='x'))"
        )
    names = _band_names(raster, bands, name)
    return _chunked(raster[names], chunks), names, name


def _open_path(path: str, chunks: int | None) -> xr.Dataset:
    size = DEFAULT_CHUNK if chunks is None else chunks
    if path.lower().endswith(GEOTIFF_SUFFIXES):
        ds = open_geotiffs({_KEY: path}, chunks={Y: size, X: size})
        if list(ds.data_vars) == [_KEY]:  # one band: named by its description, else the file
            described = ds[_KEY].attrs.get("long_name")
            single = described if isinstance(described, str) and described else Path(path).stem
            return ds.rename({_KEY: single})
        return ds.rename({v: str(v).removeprefix(f"{_KEY}_") for v in ds.data_vars})
    if not os.path.exists(path) and "://" not in path:
        raise FileNotFoundError(f"raster {path!r} does not exist")
    return xr.open_zarr(path, consolidated=None, decode_coords="all")  # the CRS: a coordinate


def _bands_of(raster: xr.DataArray) -> xr.Dataset:
    """A (band, y, x) DataArray as one variable per band (named by its descriptions, else
    ``band_1``...); a (y, x) one as one variable."""
    if raster.ndim == 2:
        return raster.to_dataset(name=str(raster.name or "band"))
    names = raster.attrs.get("long_name")
    names = list(names) if isinstance(names, tuple | list) else []
    if len(set(names)) != raster.sizes.get(_KEY, -1):
        names = [f"band_{b}" for b in raster[_KEY].to_numpy()] if _KEY in raster.dims else []
    if not names:
        raise ValueError(f"a raster DataArray needs dims ({_KEY!r}, y, x); got {raster.dims}")
    return xr.Dataset({n: raster.isel({_KEY: i}, drop=True) for i, n in enumerate(names)})


def _band_names(ds: xr.Dataset, bands: Any, name: str) -> list[str]:
    grid = [str(v) for v in ds.data_vars if set(ds[v].dims) == {Y, X}]
    grid = [v for v in grid if ds[v].dtype.kind in "biuf"]
    if bands is None:
        if not grid:
            raise ValueError(f"{name} has no numeric (y, x) variables to extract")
        return grid
    names = [bands] if isinstance(bands, str) else [str(b) for b in bands]
    unknown = [b for b in names if b not in grid]
    if unknown or not names:
        raise ValueError(
            f"bands={bands!r}: {unknown or 'none given'}; the bands of {name} are {grid}"
        )
    return names


def _chunked(ds: xr.Dataset, chunks: int | None) -> xr.Dataset:
    """``ds`` as Dask arrays with y/x chunks shared by every band (a raster held in memory is
    cut into ``chunks`` or ``DEFAULT_CHUNK`` cells a side)."""
    if all(v.chunks is None for v in ds.data_vars.values()):
        size = DEFAULT_CHUNK if chunks is None else chunks
        return ds.chunk({Y: size, X: size})
    ds = ds.unify_chunks()  # bands held in memory beside Dask ones take the same chunks
    return ds.chunk({Y: ds.chunks[Y], X: ds.chunks[X]})


def grid_of(ds: xr.Dataset, name: str) -> Grid:
    """The regular grid of ``ds`` from its cell-centre coordinates (refused if irregular)."""
    steps = {}
    for dim in (X, Y):
        values = ds[dim].to_numpy().astype(np.float64)
        if len(values) < 2:
            raise ValueError(f"{name} has {len(values)} cell along {dim!r}; it needs 2 or more")
        step = np.diff(values)
        if not np.allclose(step, step[0], rtol=1e-6, atol=0):
            raise ValueError(
                f"{name}'s {dim!r} coordinates are not evenly spaced (steps from "
                f"{step.min():g} to {step.max():g}); extract needs a regular grid"
            )
        steps[dim] = (values[0] - step[0] / 2, float(step.mean()))
    return Grid(
        x0=float(steps[X][0]),
        dx=steps[X][1],
        y0=float(steps[Y][0]),
        dy=steps[Y][1],
        nx=ds.sizes[X],
        ny=ds.sizes[Y],
        xbounds=tuple(int(b) for b in np.cumsum((0, *ds.chunks[X]))),
        ybounds=tuple(int(b) for b in np.cumsum((0, *ds.chunks[Y]))),
    )


def nodata_of(var: xr.DataArray) -> float | None:
    """The nodata value a band marks missing cells with (NaN is always missing)."""
    value = var.attrs.get("_FillValue", var.attrs.get("nodata", var.encoding.get("_FillValue")))
    return None if value is None or np.isnan(value) else float(value)
