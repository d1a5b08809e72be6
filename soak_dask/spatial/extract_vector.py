"""A GeoPackage layer of points for ``soak_dask.extract``, read with pyogrio (GDAL's OGR GPKG
driver, bundled in pyogrio's wheel; the ``vector`` extra).

The layer is read whole into memory as Arrow, its geometry as WKB, which
``extract_points`` decodes with numpy as it does a GeoParquet file's; the layer's CRS and
geometry column take the place of a GeoParquet file's ``geo`` metadata.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..tables.crs import as_crs

#: Endings of the vector files read with pyogrio.
VECTOR_ENDINGS = (".gpkg",)


def read_vector_layer(path: str, layer: str | None) -> tuple[pd.DataFrame, Any, str, str]:
    """``layer`` (default: the file's only layer) of a GeoPackage: the frame of its attribute
    columns and WKB geometry column, its CRS (pyproj, or None), the geometry column and a
    name for messages. A layer whose declared geometry type is not a point is refused."""
    pyogrio = _pyogrio()
    layer = _layer(pyogrio, path, layer)
    name = f"{path} (layer {layer!r})"
    meta, table = pyogrio.read_arrow(path, layer=layer)
    kind, column = meta["geometry_type"], meta["geometry_name"]
    if column is None or not (kind == "Unknown" or kind.startswith("Point")):
        raise ValueError(
            f"layer {layer!r} of {path} holds {kind or 'no'} geometries; extract reads points "
            "only: take the centroids (e.g. ogr2ogr -dialect SQLite -sql 'SELECT "
            "ST_Centroid(geom), ...') or choose a point layer with layer= (--layer)"
        )
    crs = None if meta["crs"] is None else as_crs(meta["crs"], f"the CRS of {name}")
    return table.to_pandas(), crs, column, name


def _pyogrio() -> Any:
    try:
        import pyogrio
    except ImportError as err:
        raise ImportError(
            "reading a GeoPackage needs pyogrio: pip install soak_dask[vector] (or "
            "pip install pyogrio), or give the points as GeoParquet or a table with "
            "coordinate columns"
        ) from err
    return pyogrio


def _layer(pyogrio: Any, path: str, layer: str | None) -> str:
    """``layer``, checked against the file's layers; by default the only one."""
    layers = [str(row[0]) for row in pyogrio.list_layers(path)]
    if layer is None and len(layers) == 1:
        return layers[0]
    if layer is not None and layer in layers:
        return layer
    what = "has several layers" if layer is None else f"has no layer {layer!r}"
    raise ValueError(
        f"{path} {what}: {layers}; choose one with layer= (soak extract: --layer NAME)"
    )
