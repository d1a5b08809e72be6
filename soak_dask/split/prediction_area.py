"""The prediction area of kNNDM and NNDM as blocks of points, read on the workers.

A prediction area is a ``Table``, a pandas or Dask DataFrame, an ``xarray.Dataset`` raster
of 2-D (``y``, ``x``) variables, or a path to one (Parquet, CSV, GeoTIFF, Zarr). Each block
becomes a float array of points: coordinates (geographical space) or feature values
(feature space); rows or cells with a missing value (NaN or the variable's ``_FillValue``)
are left out; an infinite value is refused, naming the column.

Where both inputs carry a coordinate reference system -- a raster's (rioxarray's
``rio.crs``, a GeoTIFF's), a GeoParquet file's (its ``geo`` metadata) -- the two must be the
same: distances between coordinates of two systems mean nothing.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import dask
import dask.dataframe as dd
import fsspec
import numpy as np
import pandas as pd
import xarray as xr

from ..tables.crs import as_crs, crs_name, crs_unit, metric_only, parquet_crs, raster_crs
from ..tables.table import Table
from .knndm_shares import refuse_prediction
from .neighbours import table_parts

#: The prediction area, as messages name it.
AREA = "the prediction area"
#: The raster's spatial dims, as rioxarray and ``soak_dask.raster_table`` name them.
Y, X = "y", "x"


def open_prediction(path: str | os.PathLike) -> dd.DataFrame | xr.Dataset:
    """A prediction area from a path: GeoTIFF (one variable per band, named by the band
    descriptions), Zarr (a Dataset), CSV/TSV or Parquet (a lazy frame)."""
    text = os.fspath(path).rstrip("/")
    lower = text.lower()
    if lower.endswith((".tif", ".tiff")):
        import rioxarray

        raster = rioxarray.open_rasterio(text, chunks={Y: 1024, X: 1024})
        names = raster.attrs.get("long_name")
        names = [names] if isinstance(names, str) else list(names or [])
        if len(set(names)) != raster.sizes["band"]:
            names = [f"band_{b}" for b in raster["band"].values]
        bands = {n: raster.isel(band=i, drop=True) for i, n in enumerate(names)}
        ds = xr.Dataset({n: b.drop_vars("spatial_ref", errors="ignore") for n, b in bands.items()})
        return ds if raster.rio.crs is None else ds.rio.write_crs(raster.rio.crs)
    if lower.endswith(".zarr"):
        return xr.open_zarr(text)
    if lower.endswith((".csv", ".tsv", ".csv.gz", ".tsv.gz")):
        return dd.read_csv(text, sep="\t" if ".tsv" in lower else ",")
    if os.path.exists(text) or "://" in text:
        return dd.read_parquet(text)
    raise FileNotFoundError(f"prediction {text!r} does not exist")


#: How to leave degrees when either input of kNNDM or NNDM carries a geographic CRS.
PROJECT_BOTH = (
    "project the training table and the prediction area to one CRS in metres (e.g. their UTM "
    "zone: a table with pyproj or soak extract's --crs, a raster with rioxarray's "
    "raster.rio.reproject(crs))"
)


def prediction_parts(
    prediction: Any, columns: Sequence[str], space: str, training: Table, what: str
) -> tuple[list[Any], Any]:
    """Delayed point arrays of ``prediction``, one per block, with the values of
    ``columns`` (the training coordinates or features); and the coordinates' CRS where
    either input carries one (geographical space; else None). In geographical space, a CRS
    carried by both ``training`` and ``prediction`` must agree, and a geographic one
    (degrees) is refused, naming ``what`` (the caller)."""
    crs = None
    if space == "geographical":
        crs = same_crs(table_crs(training), prediction_crs(prediction))
        metric_only(crs, what, PROJECT_BOTH)
    if isinstance(prediction, str | os.PathLike):
        prediction = open_prediction(prediction)
    return _parts(prediction, columns, space), crs


def _parts(prediction: Any, columns: Sequence[str], space: str) -> list[Any]:
    """``prediction_parts``'s arrays of an opened prediction area."""
    if isinstance(prediction, xr.Dataset):
        return raster_parts(prediction, columns, space)
    if isinstance(prediction, Table):
        data = prediction.data
        if space == "geographical" and prediction.coords:
            if len(prediction.coords) != len(columns):
                raise ValueError(
                    f"the prediction table's coords {list(prediction.coords)} and the training "
                    f"coords {list(columns)} differ in number"
                )
            return table_parts(data, prediction.coords, AREA)
    elif isinstance(prediction, pd.DataFrame):
        data = dd.from_pandas(prediction, npartitions=max(1, len(prediction) // 500_000))
    elif isinstance(prediction, dd.DataFrame):
        data = prediction
    else:
        refuse_prediction(prediction)
    missing = [c for c in columns if c not in data.columns]
    if missing:
        what = "coordinate" if space == "geographical" else "feature"
        raise ValueError(
            f"the prediction area has no {what} columns {missing} (its columns: "
            f"{list(data.columns)}); name them as in the training table"
        )
    return table_parts(data, columns, AREA)


def table_crs(table: Table) -> Any:
    """The pyproj CRS of a table's coordinates (``Table.crs``: read by ``load_table`` from
    GeoParquet files or given), else None."""
    return None if table.crs is None else as_crs(table.crs)


def prediction_crs(prediction: Any) -> Any:
    """The CRS a prediction area carries: a raster's (rioxarray), a Table's or a GeoParquet
    file's; None when it carries none."""
    if isinstance(prediction, Table):
        return table_crs(prediction)
    if isinstance(prediction, str | os.PathLike):
        text = os.fspath(prediction).rstrip("/")
        if text.lower().endswith((".tif", ".tiff", ".zarr")):
            return prediction_crs(open_prediction(text))
        if text.lower().endswith((".csv", ".tsv", ".csv.gz", ".tsv.gz")):
            return None
        fs, root = fsspec.core.url_to_fs(text)
        if not fs.exists(root):
            return None  # open_prediction names the missing path
        files = [root] if fs.isfile(root) else sorted(fs.glob(f"{root}/**.parquet"))
        return parquet_crs(fs, files[0]) if files else None
    if isinstance(prediction, xr.Dataset):
        wkt = raster_crs(prediction)  # the CF grid-mapping variable rioxarray and GDAL write
        return None if wkt is None else as_crs(wkt)
    return None


def same_crs(training: Any, prediction: Any) -> Any:
    """The CRS of the two inputs' coordinates (None when neither carries one), refusing two
    known CRSs that differ, naming both."""
    if training is None or prediction is None or training == prediction:
        return prediction if training is None else training
    raise ValueError(
        f"the training table's coordinates are in {crs_name(training)} and the prediction "
        f"area's in {crs_name(prediction)}: distances between them mean nothing. Reproject "
        "one onto the other's CRS (e.g. rioxarray's raster.rio.reproject(crs), or transform the "
        "table's coordinates with pyproj) and write it out"
    )


def distance_unit(crs: Any, space: str) -> str:
    """The unit of kNNDM's and NNDM's distances: "standardised feature distance" in feature
    space; else the unit of ``crs``'s first axis (pyproj's name: "metre", "US survey foot",
    "degree") with the CRS, or "coordinate units" where no CRS is known."""
    if space == "feature":
        return "standardised feature distance"
    unit = crs_unit(crs)
    return "coordinate units" if unit is None else f"{unit}, {crs_name(crs)}"


def raster_parts(ds: xr.Dataset, columns: Sequence[str], space: str) -> list[Any]:
    """Delayed point arrays of the valid cells of raster ``ds``, one per chunk: cell centres
    (``x``, ``y``) in geographical space, the variables ``columns`` in feature space.

    A cell is valid where every 2-D variable used (all of them in geographical space) is
    neither NaN nor its ``_FillValue``.
    """
    if Y not in ds.dims or X not in ds.dims:
        raise ValueError(f"the prediction raster has dims {list(ds.dims)}: need 'y' and 'x'")
    grid = [v for v in ds.data_vars if set(ds[v].dims) == {Y, X}]
    if space == "geographical":
        if len(columns) != 2:
            raise ValueError(f"a raster gives 2 coordinates (x, y); the training has {columns}")
        names = grid
    else:
        missing = [c for c in columns if c not in grid]
        if missing:
            raise ValueError(
                f"the prediction raster has no 2-D variables {missing} (it has {grid}); name "
                "its bands as the training features"
            )
        names = list(columns)
    if not names:
        raise ValueError("the prediction raster has no 2-D (y, x) variables")
    stack = xr.concat([_masked(ds[v]).transpose(Y, X) for v in names], dim="var")
    stack = stack.chunk({"var": -1}) if stack.chunks else stack.chunk({"var": -1, Y: 1024, X: 1024})
    ys, xs = ds[Y].values, ds[X].values
    y_edges = np.cumsum((0, *stack.chunks[1]))
    x_edges = np.cumsum((0, *stack.chunks[2]))
    blocks = stack.data.to_delayed()[0]
    parts = []
    for i in range(len(y_edges) - 1):
        for j in range(len(x_edges) - 1):
            yb, xb = ys[y_edges[i] : y_edges[i + 1]], xs[x_edges[j] : x_edges[j + 1]]
            parts.append(dask.delayed(cell_points)(blocks[i, j], xb, yb, space, names))
    return parts


def _masked(var: xr.DataArray) -> xr.DataArray:
    fill = var.attrs.get("_FillValue", var.encoding.get("_FillValue"))
    var = var.astype(np.float64)
    return var if fill is None or np.isnan(fill) else var.where(var != fill)


def cell_points(
    block: np.ndarray, xs: np.ndarray, ys: np.ndarray, space: str, names: Sequence[str]
) -> np.ndarray:
    """The valid cells of one raster chunk ``block`` (var, y, x) as points: (x, y) centres
    in geographical space, the variables' values in feature space, where an infinite value
    of a variable (``names``, in ``block``'s order) is refused, naming it."""
    valid = ~np.isnan(block).any(axis=0)
    if space == "geographical":
        yy, xx = np.meshgrid(ys, xs, indexing="ij")
        return np.column_stack([xx[valid], yy[valid]]).astype(np.float64)
    infinite = np.isinf(block).sum(axis=(1, 2))
    if infinite.any():
        named = ", ".join(f"{v!r} ({n:,})" for v, n in zip(names, infinite, strict=True) if n)
        raise ValueError(
            f"{AREA}: raster variables {named} have cells with an infinite value (±inf; "
            "counted in one chunk): set them to NaN (nodata) or fix them first"
        )
    return block[:, valid].T.astype(np.float64)
