"""``extract``: the values of a raster's bands at points, as a table (CAST users know it as
``terra::extract``).

The raster is read only around the points. A first pass over the points' coordinates (small
results: counts, chunk numbers) finds the raster chunks they fall in and the points off the
raster; then one Dask task per touched chunk reads that chunk's window (widened by the
window or buffer around the points) and samples it for the points of every partition that
falls in it, and one task per partition of the points puts its values together, in the
points' row order. Chunks without points are never read.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, replace
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

from ..tables.crs import CRS_KEY
from ..user_warning import warn_user
from .extract_out import KEY, check_extract_out, write_extracted
from .extract_points import Points, open_points, select_points, transformer
from .extract_raster import Grid, grid_of, nodata_of, open_raster

__all__ = ["ExtractSummary", "ExtractWarning", "extract"]

METHODS = ("nearest", "window", "buffer")
OUTSIDE = ("keep", "drop")
#: Status of a point: it has every band's value, it is off the raster, or a band is nodata.
OK, OFF, NODATA = 0, 1, 2
#: Row numbers a message names at most.
_SHOWN = 10


class ExtractWarning(UserWarning):
    """Points off the raster, or on nodata cells, were kept (with NaN values) or dropped."""


@dataclass(frozen=True)
class Sampler:
    """How a chunk task turns cells into values (small, picklable)."""

    bands: tuple[str, ...]
    nodata: tuple[float | None, ...]
    half: int  # cells each side of the point's cell that the window or buffer may reach
    buffer: float | None

    def values(self, block: np.ndarray, origin: tuple[int, int], cells: dict, grid: Grid):
        """Values (points × bands) at ``cells`` from ``block`` (bands × rows × columns of
        the raster, from cell ``origin``): the cell's, or the mean of the valid cells of
        the window or buffer around it (NaN where none is valid)."""
        steps = np.arange(-self.half, self.half + 1)
        oy, ox = (a.ravel() for a in np.meshgrid(steps, steps, indexing="ij"))
        gy, gx = cells["iy"][:, None] + oy, cells["ix"][:, None] + ox
        ok = (gy >= 0) & (gy < grid.ny) & (gx >= 0) & (gx < grid.nx)
        if self.buffer is not None:
            cx, cy = grid.centres(gy, gx)
            near = np.hypot(cx - cells["x"][:, None], cy - cells["y"][:, None]) <= self.buffer
            ok &= near | ((oy == 0) & (ox == 0))  # the point's own cell always counts
        ly = np.clip(gy - origin[0], 0, block.shape[1] - 1)
        lx = np.clip(gx - origin[1], 0, block.shape[2] - 1)
        cube = np.where(ok, block[:, ly, lx], np.nan)  # bands × points × window cells
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a window without valid cells
            return np.nanmean(cube, axis=2).T

    def block(self, arrays: dict[str, np.ndarray]) -> np.ndarray:
        """The bands of one window as floats, nodata cells NaN."""
        out = np.stack([np.asarray(arrays[b], dtype=np.float64) for b in self.bands])
        for i, fill in enumerate(self.nodata):
            if fill is not None:
                out[i][out[i] == fill] = np.nan
        return out


@dataclass(frozen=True)
class ExtractSummary:
    """What ``extract(..., out=...)`` wrote: counts of points and the extraction record."""

    path: str
    points: int
    outside: int
    nodata: int
    written: int
    record: dict

    @property
    def inside(self) -> int:
        return self.points - self.outside

    def text(self) -> str:
        """One paragraph: points, inside, nodata, bands, method, CRS, rows written."""
        r = self.record
        how = r["method"] + (
            f" ({r['window']}×{r['window']} mean)" if r["method"] == "window" else ""
        )
        how += f" (mean within {r['buffer']:g})" if r["method"] == "buffer" else ""
        crs = f"transformed from {r['points_crs']} to " if r["transform"] else "in "
        means = f" (the means per {r['mean_by']})" if r.get("mean_by") else ""
        return (
            f"{self.points} points{means}, {self.inside} on the raster, {self.outside} off it, "
            f"{self.nodata} on nodata cells; {len(r['bands'])} bands ({', '.join(r['bands'])}) "
            f"by {how}; coordinates {crs}{r['raster_crs']}; {self.written} rows written to "
            f"{self.path}."
        )


def extract(
    raster: Any,
    points: Any,
    *,
    coords: tuple[str, str] = ("x", "y"),
    crs: Any = None,
    method: str = "nearest",
    window: int | None = None,
    buffer: float | None = None,
    bands: Any = None,
    outside: str | None = None,
    keep: Any = None,
    mean_by: str | None = None,
    layer: str | None = None,
    chunks: int | None = None,
    out: Any = None,
    overwrite: bool = False,
) -> pd.DataFrame | dd.DataFrame | ExtractSummary:
    """The values of a raster's bands at points: the points' table with one column per band.

    Parameters
    ----------
    raster : path, xarray.Dataset or xarray.DataArray
        A GeoTIFF (one column per band, named by the band descriptions, else ``band_1``...;
        a single band by its description, else the file's name), a Zarr store, a Dataset of
        (y, x) band variables or a rioxarray (band, y, x) DataArray. Opened lazily; only the
        chunks holding points (and the cells around them) are read.
    points : path, pandas or Dask DataFrame
        A table with coordinate columns ``coords`` (Parquet or CSV), a GeoParquet file of
        points (WKB geometry, its CRS from the file's ``geo`` metadata), or a GeoPackage
        (``.gpkg``) layer of points, read with pyogrio (``pip install soak_dask[vector]``),
        its CRS from the layer.
    coords : (str, str)
        The x and y columns. For GeoParquet and GeoPackage, the names of the columns made
        from the geometry.
    crs : str, int or pyproj.CRS, optional
        The points' CRS (e.g. ``"EPSG:4326"``) when not the raster's. Points are transformed
        into the raster's CRS with pyproj. Default: the GeoParquet file's or GeoPackage
        layer's, else the
        raster's (no transform); points then all off the raster are refused, with a hint.
    method : {"nearest", "window", "buffer"}
        The value of the cell holding the point; the mean of the ``window`` × ``window``
        cells centred on it; or the mean of the cells whose centres lie within ``buffer``
        of it (its own cell always counts). Nodata cells are left out of a mean.
    window : int, optional
        Odd window size in cells, for ``method="window"`` (default 3).
    buffer : float, optional
        Radius in the raster CRS's unit (metres for UTM), for ``method="buffer"``.
    bands : str or list of str, optional
        The bands to extract. Default: every numeric (y, x) variable.
    outside : {"keep", "drop"}, optional
        What to do with points off the raster, or whose value is nodata in some band:
        ``"keep"`` (NaN values) or ``"drop"`` them, with an ``ExtractWarning`` counting them
        and naming the first rows. Default: refuse them, naming the rows.
    keep : str or list of str, optional
        The points' columns to carry into the table beside the coordinates (default: all):
        leave out those named like the bands, which are refused.
    mean_by : str, optional
        One point per value of this column: the mean of its rows' numeric columns kept,
        coordinates included (CAST's farm: the readings of each sensor, ``SOURCEID``),
        before the raster is read; recorded as ``mean_by``.
    layer : str, optional
        The GeoPackage's layer of points; needed when it has several (they are listed).
    chunks : int, optional
        Chunk size (cells a side) to read a GeoTIFF or a raster held in memory in; default
        1024. A Zarr store's or Dask-backed raster's own chunks are kept.
    out : path, optional
        Write the table as a Parquet dataset there (new, or an earlier output of extract with
        ``overwrite``; checked before any work) and return an ``ExtractSummary``.
    overwrite : bool
        Replace an earlier extracted table at ``out``.

    Returns
    -------
    pandas.DataFrame, dask.dataframe.DataFrame or ExtractSummary
        The points' columns then one float column per band, in the points' row order
        (pandas points give a pandas frame, computed; others a lazy Dask frame). The
        coordinates are in the raster's CRS (a GeoParquet or GeoPackage geometry column is
        replaced by the ``coords`` columns). The record of what was done (``raster_crs``,
        ``points_crs``, the pyproj ``transform``, method, bands) is in ``attrs[KEY]`` of each
        computed frame and in each Parquet part's metadata under ``KEY``.

    Examples
    --------
    >>> import numpy as np, pandas as pd, xarray as xr
    >>> ds = xr.Dataset({"B1": (("y", "x"), np.arange(12.0).reshape(3, 4))},
    ...                 coords={"x": [0.5, 1.5, 2.5, 3.5], "y": [2.5, 1.5, 0.5]})
    >>> pts = pd.DataFrame({"x": [0.2, 3.9], "y": [2.9, 0.1], "id": ["a", "b"]})
    >>> extract(ds, pts)
         x    y id    B1
    0  0.2  2.9  a   0.0
    1  3.9  0.1  b  11.0
    >>> extract(ds, pts, method="window")["B1"].tolist()  # 3×3 means, cut by the edge
    [2.5, 8.5]
    """
    half = _check_options(method, window, buffer, outside)
    sources = {"raster": raster, "points": points}
    path = None if out is None else check_extract_out(out, overwrite, sources, "overwrite=True")
    ds, names, raster_name = open_raster(raster, bands, chunks)
    grid = grid_of(ds, raster_name)
    frame, pts, points_crs, points_name = open_points(points, coords, crs, layer)
    frame = select_points(frame, pts, keep, mean_by, points_name)
    pts, record = _crs_record(ds, pts, points_crs, raster_name, crs is not None)
    _check_clash(frame, pts, names, points_name)
    if half is None:  # a buffer: the cells its circle may reach
        half = math.ceil(buffer / min(abs(grid.dx), abs(grid.dy)))
    sampler = Sampler(tuple(names), tuple(nodata_of(ds[b]) for b in names), half, buffer)
    located = _locate(frame, pts, grid)
    _check_located(located, pts, grid, points_crs, outside, raster_name)
    record |= {"raster": raster_name, "points": points_name, "coords": list(pts.coords)}
    record |= {"method": method, "window": window or (3 if method == "window" else None)}
    record |= {"buffer": buffer, "bands": names, "outside": outside, "mean_by": mean_by}
    parts, reports = _plan(frame, pts, grid, ds, sampler, located, outside, record)
    result = dd.from_delayed(parts, meta=_meta(frame, pts, sampler, record), verify_meta=False)
    if path is not None:
        counts = write_extracted(result, path, record, reports)
        return _summary(str(path), located, counts, record, outside)
    if isinstance(points, pd.DataFrame):
        computed, counts = dask.compute(parts, reports)
        _summary("", located, counts, record, outside)  # warns of nodata kept or dropped
        return _concat(computed, record)
    return result


def _check_options(
    method: str, window: int | None, buffer: float | None, outside: str | None
) -> int | None:
    """Cells each side of a point that its value reads (None for a buffer: from its radius)."""
    if method not in METHODS:
        raise ValueError(f"method={method!r}: choose one of {METHODS}")
    if outside is not None and outside not in OUTSIDE:
        raise ValueError(
            f"outside={outside!r}: choose 'keep' (NaN values) or 'drop', or leave it out to "
            "refuse points off the raster or on nodata cells"
        )
    if window is not None and method != "window":
        raise ValueError(f"window={window!r} is for method='window' (method={method!r})")
    if buffer is not None and method != "buffer":
        raise ValueError(f"buffer={buffer!r} is for method='buffer' (method={method!r})")
    if method == "buffer":
        if buffer is None or not np.isfinite(buffer) or buffer <= 0:
            raise ValueError(
                f"method='buffer' needs buffer=, a positive radius in the raster CRS's unit; "
                f"got {buffer!r}"
            )
        return None
    if method == "window":
        window = 3 if window is None else window
        ok = isinstance(window, int | np.integer) and not isinstance(window, bool)
        if not ok or window < 1 or window % 2 == 0:
            raise ValueError(f"window={window!r}: give an odd number of cells ≥ 1, e.g. 3")
        return int(window) // 2
    return 0


def _crs_record(
    ds: Any, pts: Points, points_crs: Any, raster_name: str, given: bool
) -> tuple[Points, dict[str, Any]]:
    """``pts`` set to transform from the points' CRS to the raster's, and the record of it."""
    from ..split.prediction_area import prediction_crs

    raster_crs = prediction_crs(ds)
    if points_crs is not None and raster_crs is None:
        how = "crs= was given" if given else "the points' file names one"
        raise ValueError(
            f"{raster_name} has no CRS but {how} ({points_crs.to_string()}): the points cannot "
            "be placed on it. Write the raster's CRS first (e.g. raster.rio.write_crs("
            "'EPSG:32632')) or leave crs out if the points are in the raster's coordinates"
        )
    record = {
        "raster_crs": None if raster_crs is None else raster_crs.to_string(),
        "points_crs": None if points_crs is None else points_crs.to_string(),
        "transform": None,
    }
    if points_crs is None or points_crs == raster_crs:
        return pts, record
    pts = replace(pts, source_crs=points_crs.to_wkt(), target_crs=raster_crs.to_wkt())
    record["transform"] = transformer(pts.source_crs, pts.target_crs).definition
    return pts, record


def _check_clash(frame: dd.DataFrame, pts: Points, names: list[str], points_name: str) -> None:
    columns = [c for c in frame.columns if c != pts.geometry] + list(pts.coords)
    clash = sorted(set(names) & set(map(str, columns)))
    if clash:
        raise ValueError(
            f"{points_name} already has columns {clash}, named like the bands to extract: "
            "rename them, or choose the other bands with bands= (soak extract: --bands)"
        )


def _locate_part(part: pd.DataFrame, pts: Points, grid: Grid) -> dict[str, Any]:
    """Task: where one partition's points fall (counts, chunk numbers, first rows off)."""
    x, y = pts.xy(part)
    bad = ~(np.isfinite(x) & np.isfinite(y))
    iy, ix, inside = grid.cells(x, y)
    off = np.flatnonzero(~inside & ~bad)
    finite = ~bad
    box = (
        (x[finite].min(), y[finite].min(), x[finite].max(), y[finite].max())
        if finite.any()
        else None
    )
    return {
        "n": len(part),
        "bad": (int(bad.sum()), np.flatnonzero(bad)[:_SHOWN]),
        "off": (len(off), off[:_SHOWN]),
        "chunks": _extents(iy[inside], ix[inside], grid),
        "box": box,
    }


def _extents(iy: np.ndarray, ix: np.ndarray, grid: Grid) -> dict[int, tuple[int, ...]]:
    """Per chunk holding points, the cells they span: (first row, last row, first column,
    last column)."""
    chunk = grid.chunk(iy, ix)
    order = np.argsort(chunk, kind="stable")
    chunks, starts = np.unique(chunk[order], return_index=True)
    spans = (
        [
            np.minimum.reduceat(iy[order], starts),
            np.maximum.reduceat(iy[order], starts),
            np.minimum.reduceat(ix[order], starts),
            np.maximum.reduceat(ix[order], starts),
        ]
        if len(chunks)
        else [[]] * 4
    )
    return {int(c): tuple(int(v[i]) for v in spans) for i, c in enumerate(chunks)}


def _merge(a: tuple[int, ...] | None, b: tuple[int, ...]) -> tuple[int, ...]:
    """The cells two extents span together."""
    if a is None:
        return b
    return min(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), max(a[3], b[3])


def _locate(frame: dd.DataFrame, pts: Points, grid: Grid) -> dict[str, Any]:
    """The first pass, computed: per partition where its points fall; row offsets; which
    partitions each touched chunk serves and the cells its points span."""
    found = dask.compute(*[dask.delayed(_locate_part)(p, pts, grid) for p in frame.to_delayed()])
    offsets = np.cumsum([0, *(f["n"] for f in found)])[:-1].tolist()
    serves: dict[int, list[int]] = {}
    spans: dict[int, tuple[int, ...]] = {}
    for p, f in enumerate(found):
        for chunk, span in f["chunks"].items():
            serves.setdefault(chunk, []).append(p)
            spans[chunk] = _merge(spans.get(chunk), span)
    boxes = np.array([f["box"] for f in found if f["box"] is not None]).reshape(-1, 4)
    return {
        "parts": found,
        "offsets": offsets,
        "serves": dict(sorted(serves.items())),
        "spans": spans,
        "n": int(sum(f["n"] for f in found)),
        "off": sum(f["off"][0] for f in found),
        "bad": sum(f["bad"][0] for f in found),
        "box": (*boxes[:, :2].min(axis=0), *boxes[:, 2:].max(axis=0)) if len(boxes) else None,
    }


def _rows(located: dict[str, Any], key: str) -> list[int]:
    """The first rows (0-based, in the points' order) with ``key`` ("off" or "bad")."""
    rows = [
        o + int(r)
        for f, o in zip(located["parts"], located["offsets"], strict=True)
        for r in f[key][1]
    ]
    return rows[:_SHOWN]


def _check_located(
    located: dict, pts: Points, grid: Grid, points_crs: Any, outside: Any, name: str
) -> None:
    """Refuse missing coordinates; points all off the raster when no CRS says where they
    are; points off it without ``outside``. Warn of points kept or dropped."""
    n, off = located["n"], located["off"]
    if located["bad"]:
        raise ValueError(
            f"{located['bad']} points have a missing or infinite coordinate in "
            f"{list(pts.coords)} (or one pyproj could not transform), rows "
            f"{_rows(located, 'bad')}...: fill or drop those rows first"
        )
    if n and off == n and points_crs is None:
        raise ValueError(_all_off(located["box"], grid, name))
    if not off:
        return
    rows = _rows(located, "off")
    where = f"{off} of {n} points lie off {name} (bounds {_box(grid.bounds)}), rows {rows}"
    if outside is None:
        raise ValueError(
            f"{where}: pass outside='keep' to keep them with NaN values, or outside='drop' "
            "(--outside keep|drop)"
        )
    verb = "kept with NaN values" if outside == "keep" else "dropped"
    warn_user(f"{where}; {verb} (outside={outside!r})", ExtractWarning)


def _all_off(box: tuple, grid: Grid, name: str) -> str:
    """Why points that all lie off the raster are refused, with a hint at their CRS."""
    xmin, ymin, xmax, ymax = box
    lonlat = -180 <= xmin and xmax <= 180 and -90 <= ymin and ymax <= 90
    projected = max(map(abs, grid.bounds)) > 360
    hint = (
        "they look like longitude/latitude while the raster's coordinates are projected: "
        "pass crs='EPSG:4326' (--crs EPSG:4326) to transform them"
        if lonlat and projected
        else "if they are in another CRS, pass it as crs= (--crs); or check coords= (--x/--y) "
        "and that x and y are not swapped"
    )
    return (
        f"none of the points lies on {name}: they span {_box(box)} but the raster covers "
        f"{_box(grid.bounds)} in its CRS; {hint}"
    )


def _box(box: tuple) -> str:
    return f"x {box[0]:.6g}..{box[2]:.6g}, y {box[1]:.6g}..{box[3]:.6g}"


def _point_cells(part: pd.DataFrame, pts: Points, grid: Grid) -> dict[str, np.ndarray]:
    """Task: the cells and chunks of one partition's points on the raster, by position."""
    x, y = pts.xy(part)
    iy, ix, inside = grid.cells(x, y)
    pos = np.flatnonzero(inside)
    cells = {"pos": pos, "iy": iy[pos], "ix": ix[pos], "x": x[pos], "y": y[pos]}
    return cells | {"chunk": grid.chunk(cells["iy"], cells["ix"])}


def _sample_chunk(
    arrays: dict[str, np.ndarray],
    origin: tuple[int, int],
    chunk: int,
    cells: list[dict[str, np.ndarray]],
    grid: Grid,
    sampler: Sampler,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Task: the values at the points of each given partition that fall in ``chunk``, from
    the chunk's window ``arrays``: per partition, (positions, values)."""
    block = sampler.block(arrays)
    out = []
    for part in cells:
        mine = part["chunk"] == chunk
        picked = {key: values[mine] for key, values in part.items()}
        out.append((picked["pos"], sampler.values(block, origin, picked, grid)))
    return out


def _assemble(
    part: pd.DataFrame, pieces: list, pts: Points, grid: Grid, sampler: Sampler
) -> tuple[pd.DataFrame, np.ndarray]:
    """Task: one partition with its band columns, and each point's status (OK, OFF, NODATA)."""
    values = np.full((len(part), len(sampler.bands)), np.nan)
    for pos, vals in pieces:
        values[pos] = vals
    inside = grid.cells(*pts.xy(part))[2]
    status = np.where(inside, np.where(np.isnan(values).any(axis=1), NODATA, OK), OFF)
    frame = pts.columns(part)
    bands = pd.DataFrame(values, columns=list(sampler.bands), index=frame.index)
    return pd.concat([frame, bands], axis=1), status.astype(np.int8)


def _finish(
    assembled: tuple[pd.DataFrame, np.ndarray], outside: str | None, offset: int, record: dict
) -> pd.DataFrame:
    """Task: the partition as returned: refused on nodata without ``outside``; those rows
    and the ones off the raster dropped with ``outside="drop"``."""
    frame, status = assembled
    if outside is None and (status == NODATA).any():
        rows = (offset + np.flatnonzero(status == NODATA))[:_SHOWN].tolist()
        raise ValueError(
            f"{int((status == NODATA).sum())} points lie on nodata cells (NaN or the band's "
            f"nodata value in some band), rows {rows}: pass outside='keep' to keep them with "
            "NaN values, or outside='drop' (--outside keep|drop)"
        )
    if outside == "drop":
        frame = frame[status == OK]
    frame.attrs[KEY] = record
    return frame


def _nodata_report(assembled: tuple[pd.DataFrame, np.ndarray], offset: int) -> dict[str, Any]:
    """Task: the points of a partition on nodata cells: their count and first rows."""
    status = assembled[1]
    rows = offset + np.flatnonzero(status == NODATA)
    return {"nodata": len(rows), "rows": rows[:_SHOWN].tolist(), "kept": int((status == OK).sum())}


def _plan(
    frame: dd.DataFrame,
    pts: Points,
    grid: Grid,
    ds: Any,
    sampler: Sampler,
    located: dict,
    outside: str | None,
    record: dict,
) -> tuple[list[Any], list[Any]]:
    """Delayed partitions of the result, and their nodata reports (see the module's doc)."""
    delayed = dask.delayed(pure=True)
    parts = frame.to_delayed()
    cells = [delayed(_point_cells)(p, pts, grid) for p in parts]
    arrays = {b: ds[b].transpose("y", "x").data for b in sampler.bands}
    pieces: list[list[Any]] = [[] for _ in parts]
    for chunk, served in located["serves"].items():
        y0, y1, x0, x1 = grid.window(located["spans"][chunk], sampler.half)
        window = {b: a[y0:y1, x0:x1] for b, a in arrays.items()}
        sampled = delayed(_sample_chunk)(
            window, (y0, x0), chunk, [cells[p] for p in served], grid, sampler
        )
        for i, p in enumerate(served):
            pieces[p].append(sampled[i])
    assembled = [
        delayed(_assemble)(p, got, pts, grid, sampler) for p, got in zip(parts, pieces, strict=True)
    ]
    offsets = located["offsets"]
    finished = [
        delayed(_finish)(a, outside, o, record) for a, o in zip(assembled, offsets, strict=True)
    ]
    reports = [delayed(_nodata_report)(a, o) for a, o in zip(assembled, offsets, strict=True)]
    return finished, reports


def _meta(frame: dd.DataFrame, pts: Points, sampler: Sampler, record: dict) -> pd.DataFrame:
    """The empty frame the result's partitions look like."""
    empty = frame._meta
    assembled = _assemble(empty, [], pts, Grid(0, 1, 0, 1, 1, 1, (0, 1), (0, 1)), sampler)
    return _finish(assembled, "keep", 0, record)


def _summary(
    path: str, located: dict, reports: list[dict], record: dict, outside: str | None
) -> ExtractSummary:
    """The counts of a computed extraction; a warning for points on nodata kept or dropped."""
    nodata = sum(r["nodata"] for r in reports)
    if nodata:  # without ``outside`` a partition with any was refused already
        rows = [row for r in reports for row in r["rows"]][:_SHOWN]
        verb = "kept with NaN values" if outside == "keep" else "dropped"
        warn_user(
            f"{nodata} of {located['n']} points lie on nodata cells (NaN or the band's nodata "
            f"value in some band), rows {rows}; {verb} (outside={outside!r})",
            ExtractWarning,
        )
    kept = sum(r["kept"] for r in reports)
    written = kept if outside == "drop" else located["n"]
    return ExtractSummary(path, located["n"], located["off"], nodata, written, record)


def _concat(frames: list[pd.DataFrame], record: dict) -> pd.DataFrame:
    """The computed partitions as one frame, with the record in its attrs, and the raster's
    CRS, which its coordinates are in, under `CRS_KEY` (``load_table`` reads it)."""
    result = pd.concat(frames) if len(frames) > 1 else frames[0]
    result.attrs[KEY] = record
    if record["raster_crs"] is not None:
        result.attrs[CRS_KEY.decode()] = record["raster_crs"]
    return result
