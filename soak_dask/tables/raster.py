"""Raster inputs: the labelled pixels of an xarray, Zarr or GeoTIFF raster as a lazy table.

A raster holds band variables over (y, x) -- or one variable with a band dimension -- plus a
label raster whose NaN / nodata pixels are unlabelled. ``raster_table`` turns it into the
pixel table SOAK needs without ever holding the raster in memory: one Dask task per spatial
chunk of the raster reads that chunk's label, bands and role rasters, keeps the labelled pixels
and returns a small pandas frame. Unlabelled pixels never leave the worker. GeoTIFFs (also
Cloud-Optimised ones) are opened lazily by ``open_geotiffs`` with rioxarray, the optional
``raster`` extra.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import xarray as xr

from ..user_warning import warn_user
from .crs import raster_crs
from .load import load_table
from .table import Table, Task

__all__ = ["NodataWarning", "open_geotiffs", "raster_table"]

#: Spatial dimensions of the raster and names of the coordinate columns of the table.
Y, X = "y", "x"
#: Name of the subset column made by ``tiles=``.
TILE_COLUMN = "tile"
#: Chunk size (pixels along y and along x) for a raster held in memory or read from GeoTIFF.
DEFAULT_CHUNK = 1024
#: File name endings of GeoTIFFs (Cloud-Optimised GeoTIFFs are GeoTIFFs too).
GEOTIFF_SUFFIXES = (".tif", ".tiff")


class NodataWarning(UserWarning):
    """Labelled pixels were dropped because a band, subset or group value is NaN / nodata."""


@dataclass(frozen=True)
class _Spec:
    """What each chunk task needs to know to turn its arrays into rows (small, picklable)."""

    label: str
    label_kind: str  # "codes" (int64), "names" (mapped to str) or "values" (float64)
    subset: str | None  # subset variable (None for tiles or no subset)
    group: str | None
    features: dict[str, tuple[str, ...]]  # band variable -> its feature columns
    dims: dict[str, tuple[str, ...]]  # variable -> dims, ordered (y, x[, time][, band])
    nodata: dict[str, Any]
    names: dict[str, tuple[np.ndarray, np.ndarray]]  # variable -> (sorted codes, names)
    tiles: tuple[int, int] | None
    shape: tuple[int, int]
    time_dim: str
    times: np.ndarray | None  # time coordinate when rows are per (pixel, time)

    @property
    def feature_columns(self) -> list[str]:
        return [f for names in self.features.values() for f in names]


def raster_table(
    source: xr.Dataset | str | os.PathLike | Mapping[str, str | os.PathLike],
    label: str,
    *,
    subset: str | None = None,
    tiles: tuple[int, int] | None = None,
    group: str | None = None,
    bands: Sequence[str] | str | None = None,
    band_dim: str = "band",
    nodata: float | Mapping[str, float] | None = None,
    time_dim: str = "time",
    classes: Mapping[int, str] | None = None,
    storage_options: dict | None = None,
    task: Task | None = None,
) -> Table:
    """The labelled pixels of a raster as a lazy table, one partition per spatial chunk.

    Parameters
    ----------
    source : xarray.Dataset, path or URL, or dict
        A Dataset with spatial dims ``y`` and ``x``, or a Zarr store of one (opened with
        ``xarray.open_zarr``; its chunks are kept), or GeoTIFFs on one grid as
        ``{variable: path or URL}``, bands and label alike (opened with ``open_geotiffs``,
        which names the variables of a multi-band file). A Dataset held in memory is cut into
        chunks of ``DEFAULT_CHUNK`` × ``DEFAULT_CHUNK`` pixels.
    label : str
        Label variable over (y, x) or (time, y, x). NaN or nodata pixels are unlabelled and
        left out. Integer codes mean classification (the column holds the codes, or names with
        ``classes``); floats mean regression (override with ``task``).
    subset : str, optional
        Region-id variable over (y, x) or (time, y, x): each row's subset.
    tiles : (int, int), optional
        Instead of ``subset``: cut the raster into ``n_rows`` × ``n_cols`` regular tiles (sizes
        differ by at most one pixel), named ``"r{row}c{col}"`` from 0 in a ``tile`` column.
    group : str, optional
        Polygon-id variable: pixels of one polygon stay in one fold.
    bands : str or sequence of str, optional
        Band variables. Default: every other numeric variable over (y, x). A variable with the
        ``band_dim`` dimension gives one feature ``"{var}_{band}"`` per band coordinate value;
        otherwise the feature is named by the variable.
    band_dim : str
        Name of the band dimension.
    nodata : float or dict, optional
        Value marking missing pixels, for every variable or per variable ``{name: value}``.
        Default: each variable's ``nodata`` or ``_FillValue`` attribute. NaN is always missing.
    time_dim : str
        Name of the time dimension. With one, the table has one row per (pixel, time) where
        the pixel is labelled, and a ``time_dim`` column; variables without it are repeated
        over time.
    classes : dict, optional
        ``{code: name}`` for the label's integer codes. Default: the label's CF attributes
        ``flag_values`` / ``flag_meanings``, if any (these also name a subset's codes).
    storage_options : dict, optional
        Passed to fsspec when ``source`` is a Zarr URL. GeoTIFF URLs are read by GDAL, which
        takes its credentials from environment variables (``AWS_*``, ``GDAL_*``) instead.
    task : str, optional
        "classification" or "regression".
        Override the task inferred from the label.

    Returns
    -------
    Table
        As ``soak_dask.load_table`` makes it: features are the band columns; ``x``, ``y``
        (and the time column) are kept in ``table.data`` but are never features. Nothing is
        computed: labelled pixels whose bands, subset or group are NaN / nodata are dropped when
        a chunk is read, with a ``NodataWarning`` counting them per variable.

    Examples
    --------
    >>> import numpy as np, xarray as xr, soak_dask.tables.raster as sr
    >>> rng = np.random.default_rng(0)
    >>> lab = np.where(rng.random((4, 6)) < 0.5, rng.integers(0, 2, (4, 6)), -1)
    >>> ds = xr.Dataset({"B1": (("y", "x"), rng.random((4, 6))),
    ...                  "B2": (("y", "x"), rng.random((4, 6))),
    ...                  "lab": (("y", "x"), lab)})
    >>> table = sr.raster_table(ds, "lab", tiles=(2, 2), nodata={"lab": -1})
    >>> table.features, table.subset
    (('B1', 'B2'), 'tile')
    >>> len(table.data) == int((lab >= 0).sum())
    True

    From GeoTIFFs (needs ``pip install 'soak_dask[raster]'``)::

        table = sr.raster_table(
            {"red": "red.tif", "nir": "nir.tif", "label": "label.tif", "polygon": "polygon.tif"},
            "label", tiles=(2, 2), group="polygon", nodata={"polygon": 0},
        )
    """
    ds, name = _open_raster(source, storage_options)
    _check_spatial(ds, name)
    if subset is not None and tiles is not None:
        raise ValueError(
            f"both subset={subset!r} and tiles={tiles!r} given; a raster's subsets come from "
            "one of them"
        )
    roles = {"label": label, "subset": subset, "group": group}
    roles = {role: var for role, var in roles.items() if var is not None}
    for role, var in roles.items():
        _check_role_var(ds, var, role, time_dim)
    _check_distinct(roles)
    band_vars = _band_vars(ds, bands, set(roles.values()), band_dim, time_dim)
    used = [*roles.values(), *band_vars]
    crs = raster_crs(ds, used)
    ds = _chunked(ds[used])
    spec = _make_spec(ds, roles, band_vars, band_dim, time_dim, nodata, classes, tiles, task)
    ddf = _pixel_frame(ds, spec)
    table = load_table(
        ddf,
        label=label,
        subset=subset or (TILE_COLUMN if tiles is not None else None),
        group=group,
        features=spec.feature_columns,
        task="regression" if spec.label_kind == "values" else "classification",
        coords=(X, Y),
        crs=crs,
    )
    if spec.times is None:
        return replace(table, source=name)
    # load_table keeps only features and roles; the time column rides along, unused.
    return replace(table, data=table.data.assign(**{time_dim: ddf[time_dim]}), source=name)


def _open_raster(source: Any, storage_options: dict | None) -> tuple[xr.Dataset, str]:
    if isinstance(source, xr.Dataset):
        return source, "xarray raster"
    if isinstance(source, Mapping):
        if storage_options is not None:
            raise ValueError(
                "storage_options is for Zarr stores; GDAL reads GeoTIFF URLs and takes its "
                "credentials from environment variables (AWS_ACCESS_KEY_ID, GDAL_HTTP_*, ...) "
                "set where the workers run"
            )
        ds = open_geotiffs(source)
        return ds, "GeoTIFFs " + ", ".join(f"{k}={os.fspath(v)}" for k, v in source.items())
    if isinstance(source, str | os.PathLike):
        path = os.fspath(source)
        if path.lower().endswith(GEOTIFF_SUFFIXES):
            raise ValueError(
                f"{path} is one GeoTIFF, but a raster table needs the label raster too: give "
                "the files as {variable: path}, e.g. {'bands': 'scene.tif', 'label': "
                "'label.tif'}, or open them yourself with soak_dask.tables.raster.open_geotiffs"
            )
        ds = xr.open_zarr(
            path, storage_options=storage_options, consolidated=None, decode_coords="all"
        )  # the CRS variable rioxarray wrote stays a coordinate, not a band
        return ds, path
    raise TypeError(
        f"cannot read a raster from {type(source).__name__}; give an xarray Dataset, the "
        "path or URL of a Zarr store, or GeoTIFFs as {variable: path}"
    )


def open_geotiffs(
    files: Mapping[str, str | os.PathLike], *, chunks: int | Mapping[str, int] | None = None
) -> xr.Dataset:
    """GeoTIFF or Cloud-Optimised GeoTIFF rasters on one grid as one lazy Dataset.

    Each file is opened with ``rioxarray.open_rasterio(path, chunks=...)``: only its header is
    read here; pixels are read chunk by chunk by the Dask tasks that need them (GDAL reads
    only the tiles of a COG that a chunk covers, also over HTTP or S3).

    Parameters
    ----------
    files : dict
        ``{variable: path or URL}``, e.g. ``{"red": "B04.tif", "label": "label.tif"}``. A
        single-band file becomes the variable of that name; a multi-band file becomes one
        variable per band, ``"{variable}_{band}"`` where ``band`` is the band's description
        when every band of the file has a distinct one, else its number from 1.
    chunks : int or dict, optional
        Dask chunk size in pixels, e.g. ``512`` or ``{"y": 512, "x": 2048}`` (a COG reads
        fastest with multiples of its tile size). Default ``DEFAULT_CHUNK`` along ``y`` and
        ``x``.

    Returns
    -------
    xarray.Dataset
        Variables over (``y``, ``x``) with the files' coordinates (pixel centres) and CRS
        (``spatial_ref``). The values are stored values: neither masked nor scaled; each
        variable's nodata value is its ``_FillValue`` attribute, which ``raster_table``
        honours.

    Raises
    ------
    ImportError
        Without rioxarray (install the ``raster`` extra).
    ValueError
        When the files do not share one CRS, transform and shape (naming the file that
        differs), or when two variables would have the same name.
    """
    rioxarray = _import_rioxarray()
    if not isinstance(files, Mapping) or not files:
        raise ValueError(f"files={files!r}: give a non-empty dict {{variable: path or URL}}")
    chunks = {Y: DEFAULT_CHUNK, X: DEFAULT_CHUNK} if chunks is None else chunks
    variables: dict[str, xr.DataArray] = {}
    first = None
    for name, path in files.items():
        if not isinstance(name, str) or not isinstance(path, str | os.PathLike):
            raise TypeError(f"files must map variable names to paths; got {name!r}: {path!r}")
        raster = rioxarray.open_rasterio(path, chunks=chunks)
        first = first or (name, path, raster)
        _check_same_grid((name, path, raster), first)
        for var, band in _split_bands(name, raster).items():
            if var in variables:
                raise ValueError(
                    f"two rasters give a variable named {var!r} (a multi-band file's bands "
                    "are named '{variable}_{band}'); rename one of the files' keys"
                )
            variables[var] = band
    return xr.Dataset(variables)


def _import_rioxarray() -> Any:
    try:
        import rioxarray
    except ImportError as err:
        raise ImportError(
            "reading GeoTIFFs needs rioxarray (and rasterio): pip install 'soak_dask[raster]'"
        ) from err
    return rioxarray


def _check_same_grid(this: tuple, first: tuple) -> None:
    """Fail unless raster ``this`` has the CRS, transform and shape of ``first``."""
    (name, path, raster), (name0, path0, raster0) = this, first
    grid, grid0 = _grid(raster), _grid(raster0)
    differ = [key for key in grid if grid[key] != grid0[key]]
    if differ:
        what = "; ".join(f"{key} {grid[key]} against {grid0[key]}" for key in differ)
        raise ValueError(
            f"GeoTIFF {name!r} ({os.fspath(path)}) is not on the grid of {name0!r} "
            f"({os.fspath(path0)}): {what}. All rasters must share one CRS, transform and "
            f"shape: reproject or resample {name!r} onto that grid first (e.g. rioxarray's "
            "raster.rio.reproject_match(reference), or gdalwarp) and write it out"
        )


def _grid(raster: xr.DataArray) -> dict[str, Any]:
    """CRS, transform (its six numbers, on one line) and shape of a rioxarray raster."""
    transform = tuple(raster.rio.transform())[:6]
    return {"CRS": raster.rio.crs, "transform": transform, "shape": raster.rio.shape}


def _split_bands(name: str, raster: xr.DataArray) -> dict[str, xr.DataArray]:
    """One (y, x) variable per band of a raster opened by rioxarray (dims band, y, x)."""
    n_bands = raster.sizes["band"]
    if n_bands == 1:
        return {name: raster.isel(band=0, drop=True)}
    descriptions = raster.attrs.get("long_name")  # rioxarray: a tuple, one per band
    named = (
        isinstance(descriptions, tuple | list)
        and all(descriptions)
        and len(set(descriptions)) == n_bands
    )
    labels = list(descriptions) if named else range(1, n_bands + 1)
    return {
        f"{name}_{label}": raster.isel(band=i, drop=True).assign_attrs(long_name=str(label))
        for i, label in enumerate(labels)
    }


def _check_spatial(ds: xr.Dataset, name: str) -> None:
    missing = [d for d in (Y, X) if d not in ds.dims]
    if missing:
        raise ValueError(
            f"{name} has dims {sorted(map(str, ds.dims))} but no {missing}; a raster needs "
            f"spatial dims {Y!r} and {X!r} (rename them, e.g. ds.rename(lat='y', lon='x'))"
        )


def _check_role_var(ds: xr.Dataset, var: str, role: str, time_dim: str) -> None:
    if var not in ds.data_vars:
        raise ValueError(
            f"{role} variable {var!r} is not in the raster; data variables: "
            f"{sorted(map(str, ds.data_vars))}"
        )
    dims = ds[var].dims
    if not {Y, X} <= set(dims) or set(dims) - {Y, X, time_dim}:
        raise ValueError(
            f"{role} variable {var!r} has dims {dims}; it needs dims ({Y!r}, {X!r}) or "
            f"({time_dim!r}, {Y!r}, {X!r}) (time_dim={time_dim!r})"
        )
    if ds[var].dtype.kind not in "biuf":
        raise ValueError(
            f"{role} variable {var!r} has dtype {ds[var].dtype}; store it as numbers (integer "
            "codes, with names in classes= or CF flag_values/flag_meanings attributes)"
        )


def _check_distinct(roles: dict[str, str]) -> None:
    if len(set(roles.values())) < len(roles):
        raise ValueError(f"the label, subset and group variables must differ; got {roles}")


def _band_vars(
    ds: xr.Dataset, bands: Sequence[str] | str | None, roles: set, band_dim: str, time_dim: str
) -> list[str]:
    """The band variables, checked: numeric, over (y, x) with only band/time dims besides."""
    if bands is None:
        # Variables off the grid (a CRS variable such as spatial_ref) are not bands.
        names = [v for v in ds.data_vars if v not in roles and {Y, X} <= set(ds[v].dims)]
        names = [v for v in names if ds[v].dtype.kind in "biuf"]
    else:
        names = [bands] if isinstance(bands, str) else list(bands)
        missing = [v for v in names if v not in ds.data_vars]
        if missing:
            raise ValueError(
                f"band variables {missing} are not in the raster; data variables: "
                f"{sorted(map(str, ds.data_vars))}"
            )
        taken = sorted(set(names) & roles)
        if taken:
            raise ValueError(f"variables {taken} are label/subset/group and cannot be bands")
    if not names:
        raise ValueError(
            f"the raster has no numeric band variables over ({Y!r}, {X!r}) besides "
            f"{sorted(roles)}; data variables: {sorted(map(str, ds.data_vars))}"
        )
    allowed = {Y, X, band_dim, time_dim}
    for var in names:
        dims = ds[var].dims
        if not {Y, X} <= set(dims) or set(dims) - allowed:
            raise ValueError(
                f"band variable {var!r} has dims {dims}; bands need ({Y!r}, {X!r}) plus "
                f"optionally band_dim={band_dim!r} and time_dim={time_dim!r} (set band_dim= "
                "to the name of the band dimension, or leave the variable out with bands=)"
            )
        if ds[var].dtype.kind not in "biuf":
            raise ValueError(f"band variable {var!r} has non-numeric dtype {ds[var].dtype}")
    return names


def _chunked(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` as dask arrays whose y/x chunks agree across variables."""
    if any(v.chunks is not None for v in ds.data_vars.values()):
        ds = ds.unify_chunks()
        chunks = {d: ds.chunks[d] for d in (Y, X)}
    else:
        chunks = {Y: DEFAULT_CHUNK, X: DEFAULT_CHUNK}
    return ds.chunk(chunks)  # also chunks variables held in memory like the others


def _make_spec(
    ds: xr.Dataset,
    roles: dict[str, str],
    band_vars: list[str],
    band_dim: str,
    time_dim: str,
    nodata: float | Mapping[str, float] | None,
    classes: Mapping[int, str] | None,
    tiles: tuple[int, int] | None,
    task: Task | None,
) -> _Spec:
    shape = (ds.sizes[Y], ds.sizes[X])
    names = {}
    label_kind = _label_kind(ds[roles["label"]], classes, task)
    if label_kind == "names":
        names[roles["label"]] = _code_names(classes or _cf_classes(ds[roles["label"]]), "classes")
    subset_names = _cf_classes(ds[roles["subset"]]) if "subset" in roles else None
    if subset_names is not None:
        names[roles["subset"]] = _code_names(subset_names, roles["subset"])
    used = [*roles.values(), *band_vars]
    has_time = any(time_dim in ds[v].dims for v in used)
    spec = _Spec(
        label=roles["label"],
        label_kind=label_kind,
        subset=roles.get("subset"),
        group=roles.get("group"),
        features={v: _feature_names(ds[v], band_dim) for v in band_vars},
        dims={v: tuple(d for d in (Y, X, time_dim, band_dim) if d in ds[v].dims) for v in used},
        nodata=_nodata_values(ds, used, nodata),
        names=names,
        tiles=None if tiles is None else _check_tiles(tiles, shape),
        shape=shape,
        time_dim=time_dim,
        times=ds[time_dim].to_numpy() if has_time else None,
    )
    _check_columns(spec, roles)
    return spec


def _label_kind(var: xr.DataArray, classes: Mapping | None, task: Task | None) -> str:
    """How the label raster becomes the label column: "names", "codes" or "values"."""
    if task not in (None, "classification", "regression"):
        raise ValueError(f"task={task!r} is not 'classification' or 'regression'")
    if classes is not None or _cf_classes(var) is not None:
        if task == "regression":
            what = "classes=" if classes is not None else "CF flag_values/flag_meanings"
            raise ValueError(f"task='regression' but label {var.name!r} has {what} names")
        return "names"
    # Zarr decodes an integer raster with a fill value to floats; its stored dtype tells codes.
    stored = np.dtype(var.encoding.get("dtype", var.dtype))
    scaled = {"scale_factor", "add_offset"} & set(var.encoding)
    integer = stored.kind in "biu" and not scaled
    task = task or ("classification" if integer else "regression")
    return "codes" if task == "classification" else "values"


def _cf_classes(var: xr.DataArray) -> dict | None:
    """``{code: name}`` from CF ``flag_values`` / ``flag_meanings`` attributes, if present."""
    values, meanings = var.attrs.get("flag_values"), var.attrs.get("flag_meanings")
    if values is None or meanings is None:
        return None
    values, meanings = np.atleast_1d(values).tolist(), str(meanings).split()
    if len(values) != len(meanings):
        raise ValueError(
            f"variable {var.name!r} has {len(values)} flag_values but {len(meanings)} "
            "flag_meanings; they must pair up"
        )
    return dict(zip(values, meanings, strict=True))


def _code_names(mapping: Mapping, what: str) -> tuple[np.ndarray, np.ndarray]:
    """Sorted integer codes and their names from a ``{code: name}`` mapping."""
    if not isinstance(mapping, Mapping) or not mapping:
        raise ValueError(f"{what}={mapping!r}: give a non-empty dict {{code: name}}")
    codes = np.asarray(list(mapping), dtype=np.float64)
    if not np.all(np.isfinite(codes) & (codes == np.round(codes))):
        raise ValueError(f"{what} has non-integer codes {list(mapping)}; codes are integers")
    order = np.argsort(codes)
    names = np.asarray([str(v) for v in mapping.values()], dtype=object)[order]
    codes = codes[order].astype(np.int64)
    if len(np.unique(codes)) < len(codes):
        raise ValueError(f"{what} lists a code twice: {list(mapping)}")
    return codes, names


def _feature_names(var: xr.DataArray, band_dim: str) -> tuple[str, ...]:
    if band_dim not in var.dims:
        return (str(var.name),)
    return tuple(f"{var.name}_{b}" for b in var[band_dim].to_numpy().tolist())


def _nodata_values(
    ds: xr.Dataset, used: list[str], nodata: float | Mapping[str, float] | None
) -> dict[str, Any]:
    if isinstance(nodata, Mapping):
        unknown = sorted(set(nodata) - set(used))
        if unknown:
            raise ValueError(
                f"nodata names variables {unknown} that are not used; used variables: {used}"
            )
        return {v: nodata.get(v, _attr_nodata(ds[v])) for v in used}
    if nodata is not None and not np.isscalar(nodata):
        raise ValueError(f"nodata={nodata!r}: give one number or a dict {{variable: number}}")
    return {v: _attr_nodata(ds[v]) if nodata is None else nodata for v in used}


def _attr_nodata(var: xr.DataArray) -> Any:
    # Set by rasterio/rioxarray on undecoded rasters; decoded fill values are NaN already.
    return var.attrs.get("nodata", var.attrs.get("_FillValue"))


def _check_tiles(tiles: Any, shape: tuple[int, int]) -> tuple[int, int]:
    ok = (
        isinstance(tiles, tuple | list)
        and len(tiles) == 2
        and all(isinstance(n, int | np.integer) and not isinstance(n, bool) for n in tiles)
        and min(tiles) >= 1
    )
    if not ok:
        raise ValueError(
            f"tiles={tiles!r}: give (n_rows, n_cols) of regular tiles, two positive integers, "
            "e.g. tiles=(2, 3)"
        )
    for n, dim, size in zip(tiles, (Y, X), shape, strict=True):
        if n > size:
            raise ValueError(
                f"tiles={tuple(tiles)} asks for {n} tiles along {dim!r} but the raster has only "
                f"{size} pixels along {dim!r}; use at most {size}"
            )
    return int(tiles[0]), int(tiles[1])


def _check_columns(spec: _Spec, roles: dict[str, str]) -> None:
    columns = [X, Y, *roles.values(), *spec.feature_columns]
    if spec.times is not None:
        columns.append(spec.time_dim)
    if spec.tiles is not None:
        columns.append(TILE_COLUMN)
    clash = sorted({c for c in columns if columns.count(c) > 1})
    if clash:
        raise ValueError(
            f"the table would have several columns named {clash} (coordinates {X!r}/{Y!r}"
            f"{'/' + repr(spec.time_dim) if spec.times is not None else ''}, "
            f"{'tile, ' if spec.tiles else ''}role and band variables); rename those variables"
        )


def _pixel_frame(ds: xr.Dataset, spec: _Spec) -> dd.DataFrame:
    """One delayed pandas frame per spatial chunk, assembled into a Dask DataFrame."""
    arrays = {v: ds[v].transpose(*spec.dims[v]).data for v in spec.dims}
    ys, xs = ds[Y].to_numpy(), ds[X].to_numpy()
    ybounds = np.cumsum((0, *ds.chunks[Y]))
    xbounds = np.cumsum((0, *ds.chunks[X]))
    parts = []
    for y0, y1 in zip(ybounds[:-1], ybounds[1:], strict=True):
        for x0, x1 in zip(xbounds[:-1], xbounds[1:], strict=True):
            window = (int(y0), int(x0), ys[y0:y1], xs[x0:x1])
            chunk = {v: a[y0:y1, x0:x1] for v, a in arrays.items()}
            parts.append(dask.delayed(_chunk_frame, pure=True)(chunk, spec, window))
    empty = {v: np.empty((0, 0, *a.shape[2:]), dtype=a.dtype) for v, a in arrays.items()}
    meta = _chunk_frame(empty, spec, (0, 0, ys[:0], xs[:0]))
    return dd.from_delayed(parts, meta=meta, prefix="soak-raster")


def _chunk_frame(
    arrays: dict[str, np.ndarray], spec: _Spec, window: tuple[int, int, np.ndarray, np.ndarray]
) -> pd.DataFrame:
    """The labelled pixels of one chunk: coordinates, bands, label, subset, group."""
    y0, x0, ys, xs = window
    n_time = 1 if spec.times is None else len(spec.times)
    shape = (len(ys), len(xs), n_time)
    cubes = {v: _broadcast(a, spec.dims[v], shape, spec.time_dim) for v, a in arrays.items()}
    labelled = _valid(cubes[spec.label], spec.nodata[spec.label])
    valid = {}
    for var, cube in cubes.items():
        if var != spec.label:
            ok = _valid(cube, spec.nodata[var])
            valid[var] = ok.all(axis=3) if ok.ndim == 4 else ok
    keep = labelled.copy()
    for ok in valid.values():
        keep &= ok
    _warn_dropped(labelled, keep, valid, window, spec)
    iy, ix, it = np.nonzero(keep)  # pixel-major: row by row, then each pixel's times
    columns: dict[str, Any] = {X: xs[ix], Y: ys[iy]}
    if spec.times is not None:
        columns[spec.time_dim] = spec.times[it]
    for var, names in spec.features.items():
        values = cubes[var][keep].reshape(len(iy), len(names))
        columns.update(zip(names, values.T, strict=True))
    label = cubes[spec.label][keep]
    columns[spec.label] = (
        label.astype(np.float64)
        if spec.label_kind == "values"
        else _id_column(label, spec.label, spec)
    )
    if spec.tiles is not None:
        columns[TILE_COLUMN] = _tile_names(y0 + iy, x0 + ix, spec)
    for var in (spec.subset, spec.group):
        if var is not None:
            columns[var] = _id_column(cubes[var][keep], var, spec)
    return pd.DataFrame(columns)


def _broadcast(a: np.ndarray, dims: tuple, shape: tuple, time_dim: str) -> np.ndarray:
    """View of ``a`` (dims y, x[, time][, band]) as (y, x, time[, band])."""
    if time_dim not in dims:
        a = np.expand_dims(a, 2)
    return np.broadcast_to(a, shape + a.shape[3:])


def _valid(a: np.ndarray, nodata: Any) -> np.ndarray:
    ok = ~np.isnan(a) if a.dtype.kind == "f" else np.ones(a.shape, dtype=bool)
    if nodata is not None:  # a NaN nodata compares unequal to everything: no-op
        ok &= a != nodata
    return ok


def _warn_dropped(labelled, keep, valid, window, spec: _Spec) -> None:
    lost = int((labelled & ~keep).sum())
    if not lost:
        return
    y0, x0, ys, xs = window
    why = ", ".join(
        f"{var!r} ({n})" for var, ok in valid.items() if (n := int((labelled & ~ok).sum()))
    )
    unit = "(pixel, time) rows" if spec.times is not None else "pixels"
    warn_user(
        f"{lost} labelled {unit} of y[{y0}:{y0 + len(ys)}], x[{x0}:{x0 + len(xs)}] dropped: "
        f"NaN or nodata in {why}",
        NodataWarning,
    )


def _id_column(values: np.ndarray, var: str, spec: _Spec) -> Any:
    """Integer codes of an id raster, or their names when the variable has some."""
    if values.dtype.kind == "f":
        bad = values != np.round(values)
        if bad.any():
            raise ValueError(
                f"variable {var!r} holds non-integer values {np.unique(values[bad])[:5]} but "
                "is used as integer codes (label classes, subset or group ids)"
            )
    ids = values.astype(np.int64)
    if var not in spec.names:
        return ids
    codes, names = spec.names[var]
    pos = np.searchsorted(codes, ids).clip(max=len(codes) - 1)
    unknown = codes[pos] != ids
    if unknown.any():
        raise ValueError(
            f"variable {var!r} has codes {np.unique(ids[unknown])[:10].tolist()} without a name "
            f"(named codes: {codes.tolist()}); add them to classes= / flag_values, or mark them "
            "as nodata"
        )
    return pd.array(names[pos], dtype="str")


def _tile_names(iy: np.ndarray, ix: np.ndarray, spec: _Spec) -> Any:
    (n_rows, n_cols), (height, width) = spec.tiles, spec.shape
    grid = np.array([[f"r{r}c{c}" for c in range(n_cols)] for r in range(n_rows)], dtype=object)
    return pd.array(grid[iy * n_rows // height, ix * n_cols // width], dtype="str")
