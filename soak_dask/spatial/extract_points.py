"""The points of ``soak_dask.extract``: a table with coordinate columns, a GeoParquet file of
points or a GeoPackage layer of them, and the coordinate reference system (CRS) their
coordinates are in.

The points stay a lazy Dask frame; each task turns its partition's coordinates into the
raster's CRS (pyproj, one transformer per process) when the two CRSs differ. A GeoParquet
file's geometry column (WKB points, with Z or M or not) is decoded with numpy, so shapely
is not needed; its CRS comes from the file's ``geo`` metadata. A GeoPackage layer is read
with pyogrio (``extract_vector``) into the same geometry column and CRS.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

from ..tables.crs import as_crs, geoparquet_crs

#: Bytes of a 2-D WKB point: byte order (1), geometry type (4), x and y (8 each); a Z or M
#: coordinate adds 8 bytes each.
WKB_POINT_SIZE = 21
#: EWKB's (PostGIS) flags of a Z and an M coordinate in the geometry type.
_EWKB_Z, _EWKB_M = 0x80000000, 0x40000000
#: The names of WKB geometry types, for messages.
_WKB_NAMES = {1: "Point", 2: "LineString", 3: "Polygon", 4: "MultiPoint"}
_WKB_NAMES |= {5: "MultiLineString", 6: "MultiPolygon", 7: "GeometryCollection"}


@dataclass(frozen=True)
class Points:
    """How a task reads the points' coordinates (small, picklable).

    Attributes
    ----------
    coords : (str, str)
        The x and y columns (of the table, or made from the geometry column).
    geometry : str or None
        The geometry column (GeoParquet or GeoPackage) holding WKB points, or None for
        coordinate columns.
    source_crs, target_crs : str or None
        The points' CRS and the raster's (WKT); coordinates are transformed where both are
        known and differ.
    """

    coords: tuple[str, str]
    geometry: str | None = None
    source_crs: str | None = None
    target_crs: str | None = None

    @property
    def transformed(self) -> bool:
        return self.source_crs is not None and self.source_crs != self.target_crs

    def xy(self, frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """The points of ``frame`` in the raster's CRS: x and y as float arrays."""
        if self.geometry is not None:
            x, y = decode_wkb_points(frame[self.geometry].to_numpy())
        else:
            x, y = (frame[c].to_numpy(dtype=np.float64, na_value=np.nan) for c in self.coords)
        if self.transformed and len(x):
            x, y = transformer(self.source_crs, self.target_crs).transform(x, y)
        return np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)

    def columns(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` with its coordinates in the raster's CRS, in the ``coords`` columns (a
        geometry column is replaced by them)."""
        if self.geometry is None and not self.transformed:
            return frame
        x, y = self.xy(frame)
        frame = frame.drop(columns=[self.geometry] if self.geometry else [])
        return frame.assign(**{self.coords[0]: x, self.coords[1]: y})


@functools.lru_cache(maxsize=8)
def transformer(source: str, target: str) -> Any:
    """A pyproj transformer from ``source`` to ``target`` (x = easting or longitude first)."""
    from pyproj import Transformer

    return Transformer.from_crs(source, target, always_xy=True)


def decode_wkb_points(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """x and y of WKB-encoded points (either byte order; 2-D, or with Z, M or both, as ISO
    WKB's types 1001, 2001, 3001 or EWKB's flags), as float arrays; Z and M are left out.

    A missing geometry, one that is not a point (a line, a polygon, a multipoint) or an
    empty point is refused, naming its position in ``values`` and its WKB geometry type.

    >>> import struct
    >>> wkb = [struct.pack("<BIdd", 1, 1, 2.5, -1.0), struct.pack(">BIddd", 0, 1001, 3, 4, 9)]
    >>> decode_wkb_points(np.array(wkb, dtype=object))
    (array([2.5, 3. ]), array([-1.,  4.]))
    """
    n = len(values)
    sizes = np.fromiter((len(v) if isinstance(v, bytes) else -1 for v in values), int, n)
    wrong = np.flatnonzero(sizes < WKB_POINT_SIZE)
    if len(wrong):
        raise ValueError(_not_points(values, wrong))
    head = b"".join(v[:WKB_POINT_SIZE] for v in values)  # x and y come first
    raw = np.frombuffer(head, dtype=np.uint8).reshape(n, WKB_POINT_SIZE)
    little = raw[:, 0] == 1
    kinds = np.where(
        little,
        raw[:, 1:5].copy().view("<u4")[:, 0],
        raw[:, 1:5].copy().view(">u4")[:, 0],
    ).astype(np.int64)
    wrong = np.flatnonzero(sizes != _point_size(kinds))
    if len(wrong):
        raise ValueError(_not_points(values, wrong, kinds))
    body = raw[:, 5:].copy()
    xy = np.where(little[:, None], body.view("<f8"), body.view(">f8"))
    empty = np.flatnonzero(np.isnan(xy).all(axis=1))  # WKB's POINT EMPTY
    if len(empty):
        raise ValueError(
            f"{len(empty)} points are empty (the one at position {empty[0]} of its partition "
            "has no coordinates): drop those rows"
        )
    return xy[:, 0].astype(np.float64), xy[:, 1].astype(np.float64)


def _point_size(kinds: np.ndarray) -> np.ndarray:
    """Bytes of a WKB point of each geometry type (-1 where the type is not a point)."""
    plain = kinds & ~(_EWKB_Z | _EWKB_M)
    iso = plain // 1000  # 1: Z, 2: M, 3: ZM
    extra = np.array([0, 1, 1, 2])[np.clip(iso, 0, 3)]
    extra += (kinds & _EWKB_Z > 0).astype(int) + (kinds & _EWKB_M > 0).astype(int)
    point = (plain % 1000 == 1) & (iso <= 3)
    return np.where(point, WKB_POINT_SIZE + 8 * extra, -1)


def _wkb_name(kind: int) -> str:
    return _WKB_NAMES.get((kind & ~(_EWKB_Z | _EWKB_M)) % 1000, "unknown")


def _not_points(values: np.ndarray, wrong: np.ndarray, kinds: np.ndarray | None = None) -> str:
    first = int(wrong[0])
    kind = None if kinds is None else int(kinds[first])
    what = (
        "is missing"
        if not isinstance(values[first], bytes)
        else f"has WKB geometry type {kind} ({_wkb_name(kind)})"
        if kind is not None
        else f"is {len(values[first])} bytes of WKB"
    )
    return (
        f"{len(wrong)} geometries are not points (the one at position {first} of its "
        f"partition {what}); extract reads points only: take the centroids or drop those rows"
    )


def open_points(
    points: Any, coords: tuple[str, str], crs: Any, layer: str | None = None
) -> tuple[dd.DataFrame, Points, Any, str]:
    """The points as a lazy frame, how to read their coordinates, their CRS (pyproj, or None
    when neither given nor in the file) and a name for messages. ``layer``: a GeoPackage's."""
    is_path = isinstance(points, str | os.PathLike)
    if layer is not None and not (is_path and _is_vector(os.fspath(points))):
        raise ValueError(
            f"layer={layer!r} names a layer of a GeoPackage, and the points are not one: "
            "leave layer out (soak extract: --layer)"
        )
    if isinstance(points, pd.DataFrame):
        frame, geo, name = dd.from_pandas(points, npartitions=1, sort=False), None, "points"
    elif isinstance(points, dd.DataFrame):
        frame, geo, name = points, None, "points"
    elif is_path:
        frame, geo, name = _read_points(os.fspath(points), layer)
    else:
        raise TypeError(
            f"points is a {type(points).__name__}: give a pandas or Dask DataFrame, or the "
            "path of a Parquet, GeoParquet or CSV table or of a GeoPackage"
        )
    file_crs, geometry = geo if geo else (None, None)
    given = None if crs is None else as_crs(crs, "crs")
    if file_crs is not None and given is not None and file_crs != given:
        raise ValueError(
            f"{name} says its points are in {file_crs.to_string()} but crs={crs!r} was given: "
            "leave crs out (the file's CRS is used) or fix the file's metadata"
        )
    _check_columns(frame, coords, geometry, name)
    return frame, Points(tuple(coords), geometry), file_crs or given, name


def _is_vector(path: str) -> bool:
    from .extract_vector import VECTOR_ENDINGS

    return path.lower().endswith(VECTOR_ENDINGS)


def _read_points(path: str, layer: str | None) -> tuple[dd.DataFrame, tuple[Any, str] | None, str]:
    """A Parquet or CSV table of points or a GeoPackage layer; for GeoParquet and GeoPackage,
    their (CRS, geometry column); and a name for messages."""
    from ..tables.delimited import is_delimited_source, open_delimited
    from ..tables.parquet import ROWS_PER_PARTITION, open_parquet

    if _is_vector(path):
        from .extract_vector import read_vector_layer

        table, crs, geometry, name = read_vector_layer(path, layer)
        try:
            decode_wkb_points(table[geometry].to_numpy())  # every row a point, before any work
        except ValueError as err:
            raise ValueError(f"{name}: {err}") from None
        parts = max(1, -(-len(table) // ROWS_PER_PARTITION))
        with dask.config.set({"dataframe.convert-string": False}):  # WKB bytes stay bytes
            return dd.from_pandas(table, npartitions=parts, sort=False), (crs, geometry), name
    if is_delimited_source(path, None):
        return open_delimited(path, None, ROWS_PER_PARTITION)[0], None, path
    with dask.config.set({"dataframe.convert-string": False}):  # WKB bytes stay bytes
        frame, files = open_parquet(path, None, ROWS_PER_PARTITION)
    return frame, _geoparquet(files.fs, files.paths[0]), path


def _geoparquet(fs: Any, path: str) -> tuple[Any, str] | None:
    """(CRS, primary geometry column) of a GeoParquet file; None for plain Parquet."""
    import pyarrow.parquet as pq

    with fs.open(path, "rb") as f:
        metadata = pq.read_schema(f).metadata or {}
    if b"geo" not in metadata:
        return None
    geo = json.loads(metadata[b"geo"])
    column = geo.get("primary_column")
    encoding = geo.get("columns", {}).get(column, {}).get("encoding", "WKB")
    if encoding.upper() != "WKB":
        raise ValueError(
            f"{path}: geometry column {column!r} is encoded as {encoding!r}; extract reads "
            "WKB points (GeoParquet's default encoding)"
        )
    return geoparquet_crs(metadata), column


def _check_columns(frame: dd.DataFrame, coords: tuple, geometry: str | None, name: str) -> None:
    if not (isinstance(coords, tuple | list) and len(coords) == 2):
        raise ValueError(f"coords={coords!r}: give the x and y column names, e.g. ('x', 'y')")
    if geometry is not None:
        clash = [c for c in coords if c in frame.columns]
        if clash:
            raise ValueError(
                f"{name} has a geometry column ({geometry!r}) and already has columns "
                f"{clash}, which would hold the points' coordinates: pass coords= with other "
                "names"
            )
        return
    missing = [c for c in coords if c not in frame.columns]
    if missing:
        raise ValueError(
            f"{name} has no coordinate columns {missing} (its columns: {list(frame.columns)}); "
            "name them with coords=(x, y) (--x/--y on the command line)"
        )
    text = [c for c in coords if frame[c].dtype.kind not in "iuf"]
    if text:
        raise ValueError(
            f"coordinate columns {text} of {name} are not numbers "
            f"({', '.join(str(frame[c].dtype) for c in text)}); give numeric coordinates"
        )


def select_points(
    frame: dd.DataFrame, pts: Points, keep: Any, mean_by: str | None, name: str
) -> dd.DataFrame:
    """The points' columns ``keep`` beside their coordinates (None: every column), and with
    ``mean_by`` one point per value of that column: the mean of its rows' numeric columns,
    coordinates included (CAST's examples average the farm's readings per sensor so). Each
    name is checked against the table first, naming what is missing or not numeric."""
    located = [pts.geometry] if pts.geometry else list(pts.coords)
    columns = list(frame.columns) if keep is None else _kept(frame, keep, located, name)
    if mean_by is None:
        return frame[columns] if keep is not None else frame
    if pts.geometry is not None:
        raise ValueError(
            f"mean_by={mean_by!r}: {name} has WKB points, which have no mean; give "
            "a table with coordinate columns"
        )
    if mean_by not in frame.columns:
        raise ValueError(f"mean_by={mean_by!r} is no column of {name}: {list(frame.columns)}")
    values = [c for c in columns if c != mean_by]
    text = [c for c in values if frame[c].dtype.kind not in "iufb"]
    if text:
        raise ValueError(
            f"mean_by={mean_by!r} averages every column kept, and {text} of {name} are not "
            "numbers: leave them out with keep= (soak extract: --keep)"
        )
    grouped = frame[[mean_by, *values]].groupby(mean_by, observed=True, dropna=False)
    return grouped.mean(split_out=1).reset_index()


def _kept(frame: dd.DataFrame, keep: Any, located: list[str], name: str) -> list[str]:
    """``keep``'s columns of ``frame`` after the coordinate (or geometry) columns."""
    names = [keep] if isinstance(keep, str) else list(keep)
    missing = [c for c in names if c not in frame.columns]
    if missing:
        raise ValueError(
            f"keep={names!r}: {name} has no columns {missing} (its columns: {list(frame.columns)})"
        )
    return located + [c for c in names if c not in located]
