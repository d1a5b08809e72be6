"""``soak_dask.extract`` and ``soak extract``: band values at points, against cells of known
value; windows and buffers against brute force; CRS transforms; points off the raster or on
nodata reported; chunks read only where points are; CAST's sensors against its raster."""

from __future__ import annotations

import contextlib
import json
import struct
import sys
import warnings

import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

from soak_dask import load_table
from soak_dask.app.cli import main
from soak_dask.spatial.extract import ExtractWarning, extract
from soak_dask.spatial.extract_out import KEY, read_record

from ..conftest import n_examples, shared_file

rioxarray = pytest.importorskip("rioxarray")
pyproj = pytest.importorskip("pyproj")

NY, NX, CELL = 20, 30, 10.0
X0, Y0 = 500_000.0, 5_000_000.0  # top-left corner, EPSG:32632 (UTM 32N)
NODATA = -9999.0
HOLE = (2, 3)  # the nodata cell (row, column)


def cell_values() -> np.ndarray:
    """Two bands of known values: B1 = 100 row + column, B2 = 1000 + row - column."""
    rows, cols = np.mgrid[0:NY, 0:NX].astype(np.float64)
    bands = np.stack([100 * rows + cols, 1000 + rows - cols])
    bands[:, HOLE[0], HOLE[1]] = NODATA
    return bands


def centres() -> tuple[np.ndarray, np.ndarray]:
    return X0 + CELL * (np.arange(NX) + 0.5), Y0 - CELL * (np.arange(NY) + 0.5)


@pytest.fixture
def tif(tmp_path) -> str:
    """A 20 × 30 GeoTIFF of 10 m cells in EPSG:32632, bands described B1 and B2."""
    xs, ys = centres()
    raster = xr.DataArray(
        cell_values().astype(np.float32),
        dims=("band", "y", "x"),
        coords={"band": [1, 2], "y": ys, "x": xs},
    )
    raster = raster.rio.write_crs("EPSG:32632").rio.write_nodata(NODATA)
    raster.attrs["long_name"] = ("B1", "B2")
    path = str(tmp_path / "scene.tif")
    raster.rio.to_raster(path)
    return path


def points_in(rows, cols, seed: int = 0) -> pd.DataFrame:
    """Points at random places inside cells (rows, cols), at least 1 m from their edges."""
    rng = np.random.default_rng(seed)
    rows, cols = np.asarray(rows), np.asarray(cols)
    dx, dy = rng.uniform(1, CELL - 1, (2, len(rows)))
    return pd.DataFrame(
        {"x": X0 + cols * CELL + dx, "y": Y0 - rows * CELL - dy, "id": np.arange(len(rows))}
    )


def test_nearest_gives_each_cells_values(tif):
    rng = np.random.default_rng(1)
    rows, cols = rng.integers(0, NY, 40), rng.integers(0, NX, 40)
    keep = (rows != HOLE[0]) | (cols != HOLE[1])
    pts = points_in(rows[keep], cols[keep])
    got = extract(tif, pts, chunks=8)
    bands = cell_values()
    assert list(got.columns) == ["x", "y", "id", "B1", "B2"]
    np.testing.assert_array_equal(got["B1"], bands[0, rows[keep], cols[keep]])
    np.testing.assert_array_equal(got["B2"], bands[1, rows[keep], cols[keep]])
    pd.testing.assert_frame_equal(got[["x", "y", "id"]], pts)
    record = got.attrs[KEY]
    assert record["raster_crs"] == "EPSG:32632" and record["transform"] is None
    assert record["bands"] == ["B1", "B2"] and record["method"] == "nearest"


def brute_mean(rows, cols, half: int, keep=None) -> np.ndarray:
    """The mean of the valid cells of the (2 half + 1)² window around each cell, by loops."""
    bands = cell_values()
    out = np.full((len(rows), 2), np.nan)
    for i, (r, c) in enumerate(zip(rows, cols, strict=True)):
        cells = [
            bands[:, rr, cc]
            for rr in range(r - half, r + half + 1)
            for cc in range(c - half, c + half + 1)
            if 0 <= rr < NY
            and 0 <= cc < NX
            and bands[0, rr, cc] != NODATA
            and (keep is None or keep(i, rr, cc))
        ]
        out[i] = np.mean(cells, axis=0)
    return out


def test_window_mean_ignores_nodata_and_the_raster_edge(tif):
    rows = np.array([0, 2, 3, 19, 10, 0, 7])
    cols = np.array([0, 3, 4, 29, 15, 29, 7])  # corners, the nodata cell and its neighbour
    pts = points_in(rows, cols, seed=2)
    for window in (3, 5):
        got = extract(tif, pts, method="window", window=window, chunks=7)
        want = brute_mean(rows, cols, window // 2)
        np.testing.assert_allclose(got[["B1", "B2"]].to_numpy(), want, rtol=1e-12)
    corner = extract(tif, pts.iloc[:1], method="window")
    assert corner["B1"].item() == np.mean([0, 1, 100, 101])  # the 2 × 2 cells on the raster


def test_buffer_mean_takes_cells_whose_centres_are_within_the_radius(tif):
    rows, cols = np.array([5, 2, 0, 12]), np.array([5, 4, 0, 20])
    pts = points_in(rows, cols, seed=3)
    xs, ys = centres()

    def within(i, rr, cc):
        near = np.hypot(xs[cc] - pts.x[i], ys[rr] - pts.y[i]) <= 14.0
        return near or (rr, cc) == (rows[i], cols[i])

    got = extract(tif, pts, method="buffer", buffer=14.0, chunks=6)
    want = brute_mean(rows, cols, 2, keep=within)
    np.testing.assert_allclose(got[["B1", "B2"]].to_numpy(), want, rtol=1e-12)


def test_points_in_lon_lat_are_transformed_to_the_rasters_utm(tif, tmp_path):
    rows, cols = np.array([0, 4, 11, 19]), np.array([1, 9, 17, 28])
    utm = points_in(rows, cols, seed=4)
    to_lonlat = pyproj.Transformer.from_crs("EPSG:32632", "EPSG:4326", always_xy=True)
    lon, lat = to_lonlat.transform(utm.x, utm.y)
    pts = pd.DataFrame({"lon": lon, "lat": lat, "id": utm.id})
    with pytest.raises(ValueError, match=r"look like longitude/latitude.*crs='EPSG:4326'"):
        extract(tif, pts, coords=("lon", "lat"))
    got = extract(tif, pts, coords=("lon", "lat"), crs="EPSG:4326")
    np.testing.assert_array_equal(got["B1"], cell_values()[0, rows, cols])
    np.testing.assert_allclose(got["lon"], utm.x, atol=1e-6)  # now in the raster's CRS
    record = got.attrs[KEY]
    assert record["points_crs"] == "EPSG:4326" and record["raster_crs"] == "EPSG:32632"
    assert "proj=utm" in record["transform"] and "zone=32" in record["transform"]
    # The table's coordinates are in the raster's CRS, and a Table of it (in memory or
    # written) says so: degrees would be refused by every distance.
    roles = {"label": "label", "coords": ("lon", "lat"), "exclude": ["id"]}
    labelled = pts.assign(label=[0.1, 0.2, 0.3, 0.4])
    assert load_table(extract(tif, labelled, coords=("lon", "lat"), crs=4326), **roles).crs == (
        "EPSG:32632"
    )
    extract(tif, labelled, coords=("lon", "lat"), crs=4326, out=tmp_path / "t.parquet")
    assert load_table(tmp_path / "t.parquet", **roles).crs == "EPSG:32632"


def geoparquet(path, x, y, crs: str, extra: dict) -> None:
    """A GeoParquet file of points (WKB, little and big endian mixed) with its CRS."""
    wkb = [
        struct.pack("<BIdd", 1, 1, a, b) if i % 2 else struct.pack(">BIdd", 0, 1, a, b)
        for i, (a, b) in enumerate(zip(x, y, strict=True))
    ]
    table = pa.table({**extra, "geometry": pa.array(wkb, pa.binary())})
    column = {"encoding": "WKB", "geometry_types": ["Point"]}
    column["crs"] = pyproj.CRS(crs).to_json_dict()
    geo = {"version": "1.1.0", "primary_column": "geometry", "columns": {"geometry": column}}
    meta = {**(table.schema.metadata or {}), b"geo": json.dumps(geo).encode()}
    pq.write_table(table.replace_schema_metadata(meta), path)


def test_geoparquet_points_with_their_crs(tif, tmp_path):
    rows, cols = np.array([1, 8, 15]), np.array([2, 20, 27])
    utm = points_in(rows, cols, seed=5)
    to_lonlat = pyproj.Transformer.from_crs("EPSG:32632", "EPSG:4326", always_xy=True)
    lon, lat = to_lonlat.transform(utm.x, utm.y)
    path = tmp_path / "sensors.parquet"
    geoparquet(path, lon, lat, "EPSG:4326", {"name": ["a", "b", "c"]})
    got = extract(tif, str(path)).compute()
    assert list(got.columns) == ["name", "x", "y", "B1", "B2"]
    np.testing.assert_array_equal(got["B1"], cell_values()[0, rows, cols])
    np.testing.assert_allclose(got[["x", "y"]].to_numpy(), utm[["x", "y"]].to_numpy(), atol=1e-6)
    assert got.attrs[KEY]["points_crs"] == "EPSG:4326"
    with pytest.raises(ValueError, match="says its points are in EPSG:4326 but crs='EPSG:3857'"):
        extract(tif, str(path), crs="EPSG:3857")


def wkb_points(x, y, z=None) -> list[bytes]:
    """ISO WKB points, 2-D or with Z (type 1001), little and big endian mixed."""
    if z is None:
        return [
            struct.pack("<BIdd", 1, 1, a, b) if i % 2 else struct.pack(">BIdd", 0, 1, a, b)
            for i, (a, b) in enumerate(zip(x, y, strict=True))
        ]
    return [
        struct.pack("<BIddd", 1, 1001, a, b, c)
        if i % 2
        else struct.pack(">BIddd", 0, 1001, a, b, c)
        for i, (a, b, c) in enumerate(zip(x, y, z, strict=True))
    ]


def gpkg_layer(path, layer: str, wkb: list, kind: str, extra: dict, crs: str = "EPSG:4326"):
    """A layer of ``wkb`` geometries (declared ``kind``) written into the GeoPackage ``path``."""
    pyogrio = pytest.importorskip("pyogrio")
    table = pa.table({**extra, "geometry": pa.array(wkb, pa.binary())})
    pyogrio.write_arrow(
        table,
        str(path),
        layer=layer,
        geometry_name="geometry",
        geometry_type=kind,
        crs=pyproj.CRS(crs).to_wkt(),
        append=path.exists(),
    )


@pytest.mark.slow
def test_geopackage_points_give_the_values_of_the_same_points_in_a_csv(tif, tmp_path, monkeypatch):
    rows, cols = np.array([1, 8, 15, 19]), np.array([2, 20, 27, 0])
    utm = points_in(rows, cols, seed=6)
    to_lonlat = pyproj.Transformer.from_crs("EPSG:32632", "EPSG:4326", always_xy=True)
    lon, lat = to_lonlat.transform(utm.x, utm.y)
    names = {"name": ["a", "b", "c", "d"], "n": [1, 2, 3, 4]}
    path = tmp_path / "sensors.gpkg"
    gpkg_layer(path, "sensors", wkb_points(lon, lat, z=[5.0] * 4), "Point Z", names)
    pd.DataFrame({"lon": lon, "lat": lat, **names}).to_csv(tmp_path / "s.csv", index=False)
    want = extract(tif, str(tmp_path / "s.csv"), coords=("lon", "lat"), crs=4326).compute()
    got = extract(tif, str(path), coords=("lon", "lat")).compute()
    assert list(got.columns) == ["name", "n", "lon", "lat", "B1", "B2"]
    pd.testing.assert_frame_equal(got, want[got.columns], check_dtype=False)
    np.testing.assert_array_equal(got["B1"], cell_values()[0, rows, cols])
    np.testing.assert_allclose(got[["lon", "lat"]].to_numpy(), utm[["x", "y"]], atol=1e-6)
    record = got.attrs[KEY]
    assert record["points_crs"] == "EPSG:4326" and record["points"].endswith("(layer 'sensors')")
    with pytest.raises(ValueError, match="says its points are in EPSG:4326 but crs='EPSG:3857'"):
        extract(tif, str(path), crs="EPSG:3857")
    # A second layer: the points' layer must be named, here or on the command line.
    gpkg_layer(path, "roads", [struct.pack("<BIIdddd", 1, 2, 2, 0, 0, 1, 1)], "LineString", {})
    with pytest.raises(ValueError, match=r"has several layers: \['sensors', 'roads'\]; choose"):
        extract(tif, str(path))
    with pytest.raises(ValueError, match=r"layer 'roads' of .* holds LineString geometries"):
        extract(tif, str(path), layer="roads")
    with pytest.raises(ValueError, match=r"has no layer 'sensor': \['sensors', 'roads'\]"):
        extract(tif, str(path), layer="sensor")
    with pytest.raises(ValueError, match="layer='sensors' names a layer of a GeoPackage"):
        extract(tif, str(tmp_path / "s.csv"), layer="sensors")
    monkeypatch.setattr("soak_dask.run.cluster.connect", lambda *a, **k: contextlib.nullcontext())
    argv = ["extract", tif, str(path), "--out", str(tmp_path / "t.parquet")]
    assert main(argv) == 2 and not (tmp_path / "t.parquet").exists()
    assert main([*argv, "--layer", "sensors"]) == 0
    pd.testing.assert_frame_equal(
        pd.read_parquet(tmp_path / "t.parquet")[["x", "B1"]],
        got[["lon", "B1"]].set_axis(["x", "B1"], axis=1),
    )


def test_a_geopackage_of_other_geometries_or_empty_points_is_refused(tif, tmp_path):
    line = struct.pack("<BIIdddd", 1, 2, 2, 0, 0, 1, 1)
    mixed = tmp_path / "mixed.gpkg"  # a layer of no declared type: each row is checked
    gpkg_layer(mixed, "things", [*wkb_points([7.0], [45.0]), line], "Unknown", {"k": [1, 2]})
    with pytest.raises(
        ValueError,
        match=r"layer 'things'\): 1 geometries are not points .*"
        r"position 1 .*type 2 \(LineString\)",
    ):
        extract(tif, str(mixed))
    empty = tmp_path / "empty.gpkg"
    gpkg_layer(empty, "e", wkb_points([7.0, np.nan], [45.0, np.nan]), "Point", {"k": [1, 2]})
    with pytest.raises(ValueError, match=r"1 points are empty \(the one at position 1"):
        extract(tif, str(empty))


def test_wkb_points_with_z_or_m_are_read_as_x_y_and_other_shapes_refused():
    from soak_dask.spatial.extract_points import decode_wkb_points

    wkb = [
        struct.pack("<BIddd", 1, 2001, 1.0, 2.0, 7.0),  # ISO M
        struct.pack(">BIdddd", 0, 3001, 3.0, 4.0, 7.0, 8.0),  # ISO ZM
        struct.pack("<BIddd", 1, 0x80000001, 5.0, 6.0, 7.0),  # EWKB Z
        struct.pack("<BIdddd", 1, 0xC0000001, 7.0, 8.0, 7.0, 8.0),  # EWKB ZM
    ]
    x, y = decode_wkb_points(np.array(wkb, dtype=object))
    assert x.tolist() == [1.0, 3.0, 5.0, 7.0] and y.tolist() == [2.0, 4.0, 6.0, 8.0]
    short_z = struct.pack("<BIdd", 1, 1001, 1.0, 2.0)  # a Z point without its Z
    multi = struct.pack("<BII", 1, 4, 1) + struct.pack("<BIdd", 1, 1, 1.0, 2.0)
    for bad, what in [(short_z, r"type 1001 \(Point\)"), (multi, r"type 4 \(MultiPoint\)")]:
        with pytest.raises(ValueError, match=rf"1 geometries are not points .*position 1 .*{what}"):
            decode_wkb_points(np.array([wkb[0], bad], dtype=object))


def test_a_geopackage_without_pyogrio_says_which_extra_to_install(tif, tmp_path, monkeypatch):
    path = tmp_path / "p.gpkg"
    gpkg_layer(path, "p", wkb_points([7.0], [45.0]), "Point", {"k": [1]})
    monkeypatch.setitem(sys.modules, "pyogrio", None)
    with pytest.raises(ImportError, match=r"pip install soak_dask\[vector\]"):
        extract(tif, str(path))


def test_points_off_the_raster_are_refused_kept_or_dropped_never_silently(tif):
    pts = points_in([0, 5, 6], [0, 5, 6]).assign(x=lambda d: d.x.where(d.id != 1, X0 - 50))
    with pytest.raises(ValueError, match=r"1 of 3 points lie off .*rows \[1\].*outside='keep'"):
        extract(tif, pts)
    with pytest.warns(ExtractWarning, match=r"1 of 3 points lie off .*rows \[1\]; kept"):
        kept = extract(tif, pts, outside="keep")
    assert kept["B1"].tolist()[0] == 0 and np.isnan(kept["B1"][1]) and kept["B1"][2] == 606
    with pytest.warns(ExtractWarning, match="dropped"):
        dropped = extract(tif, pts, outside="drop")
    assert dropped["id"].tolist() == [0, 2]


def test_points_on_nodata_are_refused_kept_or_dropped(tif):
    pts = points_in([0, HOLE[0], 4], [0, HOLE[1], 4])
    with pytest.raises(ValueError, match=r"1 points lie on nodata cells .*rows \[1\]"):
        extract(tif, pts)
    with pytest.warns(ExtractWarning, match=r"1 of 3 points lie on nodata .*rows \[1\]; kept"):
        kept = extract(tif, pts, outside="keep")
    assert np.isnan(kept.loc[1, ["B1", "B2"]].astype(float)).all()
    with pytest.warns(ExtractWarning, match=r"rows \[1\]; dropped"):
        assert extract(tif, pts, outside="drop")["id"].tolist() == [0, 2]
    # A window around the hole has other valid cells: a value, not nodata.
    assert extract(tif, pts, method="window")["B1"][1] == np.mean(
        [v for v in cell_values()[0, 1:4, 2:5].ravel() if v != NODATA]
    )


def test_bad_options_are_refused_before_reading(tif):
    pts = points_in([0], [0])
    cases = [
        ({"method": "mean"}, "method='mean'"),
        ({"window": 4, "method": "window"}, "odd number"),
        ({"window": 3}, "window=3 is for method='window'"),
        ({"method": "buffer"}, "needs buffer="),
        ({"outside": "ignore"}, "outside='ignore'"),
        ({"bands": ["B9"]}, r"\['B9'\]; the bands of .* are \['B1', 'B2'\]"),
        ({"coords": ("lon", "lat")}, r"no coordinate columns \['lon', 'lat'\]"),
        ({"crs": "EPSG:999999"}, "not a coordinate reference system"),
    ]
    for options, message in cases:
        with pytest.raises(ValueError, match=message):
            extract(tif, pts, **options)
    with pytest.raises(ValueError, match=r"already has columns \['B1'\]"):
        extract(tif, pts.assign(B1=1.0))
    with pytest.raises(ValueError, match=r"missing or infinite coordinate .*rows \[0\]"):
        extract(tif, pts.assign(x=np.nan))


def counting_raster(reads: list, chunk: int = 10) -> xr.Dataset:
    """A 40 × 60 raster in 10 × 10 chunks whose every chunk read is logged in ``reads``."""

    def block(empty, block_info=None):
        (y0, y1), (x0, x1) = block_info[None]["array-location"]
        reads.append((y0, x0))
        rows, cols = np.mgrid[y0:y1, x0:x1]
        return 100.0 * rows + cols

    values = da.zeros((40, 60), chunks=chunk).map_blocks(block, dtype=np.float64)
    coords = {"x": np.arange(60) + 0.5, "y": 40 - np.arange(40) - 0.5}
    return xr.Dataset({"B": (("y", "x"), values)}, coords=coords)


def test_only_the_chunks_holding_points_are_read_once_each():
    reads: list = []
    ds = counting_raster(reads)
    # 3 points in chunk (0, 0), one in each of chunks (2, 3) and (3, 5); two partitions
    pts = pd.DataFrame({"x": [1.2, 2.7, 35.5, 55.1, 8.5], "y": [39.1, 38.0, 15.2, 2.2, 31.5]})
    points = dd.from_pandas(pts, npartitions=2, sort=False)
    with dask.config.set(scheduler="sync"):
        for method in ("nearest", "window"):  # no point lies at a chunk's edge
            reads.clear()
            got = extract(ds, points, method=method).compute()
            assert sorted(reads) == [(0, 0), (20, 30), (30, 50)], method
        assert got["B"].tolist() == [51.0, 202.0, 2435.0, 3755.0, 808.0]
    graph = dict(extract(ds, points).__dask_graph__())
    sampled = [k for k in graph if str(k[0] if isinstance(k, tuple) else k).startswith("_sample")]
    assert len(sampled) == 3  # one sampling task per chunk holding points


def test_a_geotiff_is_read_only_at_the_chunks_holding_points(tif):
    pts = dd.from_pandas(points_in([0, 1, 17], [0, 2, 25]), npartitions=2)
    result = extract(tif, pts, chunks=8)  # 3 × 4 chunks; the points are in 2
    names = [str(k[0] if isinstance(k, tuple) else k) for k in dict(result.__dask_graph__())]
    assert sum(n.startswith("open_rasterio") for n in names) == 2  # GDAL window reads
    assert sum(n.startswith("_sample_chunk") for n in names) == 2
    assert result["B1"].compute().tolist() == [0.0, 102.0, 1725.0]


def test_a_window_at_a_chunks_edge_reads_the_neighbour():
    reads: list = []
    ds = counting_raster(reads)
    pts = pd.DataFrame({"x": [9.5], "y": [35.5]})  # cell (4, 9): its window reaches column 10
    with dask.config.set(scheduler="sync"):
        got = extract(ds, pts, method="window")
    assert sorted(set(reads)) == [(0, 0), (0, 10)]
    assert got["B"].item() == np.mean([100 * r + c for r in (3, 4, 5) for c in (8, 9, 10)])


@settings(max_examples=n_examples(10))
@given(
    chunk=st.integers(3, 25),
    parts=st.integers(1, 4),
    method=st.sampled_from(["nearest", "window", "buffer"]),
)
def test_values_do_not_depend_on_chunks_or_partitions(chunk, parts, method):
    rng = np.random.default_rng(7)
    xs, ys = centres()
    ds = xr.Dataset(
        {b: (("y", "x"), cell_values()[i]) for i, b in enumerate(("B1", "B2"))},
        coords={"x": xs, "y": ys},
    )
    ds["B1"].attrs["_FillValue"] = NODATA
    ds["B2"].attrs["_FillValue"] = NODATA
    pts = points_in(rng.integers(0, NY, 25), rng.integers(0, NX, 25), seed=8)
    options = {"method": method, "outside": "keep", "buffer": 17.0 if method == "buffer" else None}
    with dask.config.set(scheduler="sync"), warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtractWarning)
        one = extract(ds, pts, chunks=1024, **options)
        many = extract(ds, dd.from_pandas(pts, npartitions=parts), chunks=chunk, **options)
        pd.testing.assert_frame_equal(many.compute(), one)


def test_out_writes_a_table_load_table_reads_and_refuses_others_files(tif, tmp_path):
    pts = points_in([0, 4, 9], [1, 5, 9]).assign(label=[0.2, 0.4, 0.9])
    out = tmp_path / "table.parquet"
    summary = extract(tif, pts, out=out)
    assert (summary.points, summary.inside, summary.nodata, summary.written) == (3, 3, 0, 3)
    table = load_table(out, label="label", coords=("x", "y"), exclude=["id"])
    assert table.features == ("B1", "B2")
    assert table.data["B1"].compute().tolist() == [1.0, 405.0, 909.0]
    assert read_record(out)["bands"] == ["B1", "B2"]
    with pytest.raises(FileExistsError, match="pass overwrite=True"):
        extract(tif, pts, out=out)
    assert extract(tif, pts.iloc[:2], out=out, overwrite=True).written == 2
    (out / "notes.csv").write_text("mine")
    with pytest.raises(FileExistsError, match="notes.csv, which is not a Parquet file"):
        extract(tif, pts, out=out, overwrite=True)
    mine = tmp_path / "mine.parquet"
    pts.to_parquet(mine)
    with pytest.raises(FileExistsError, match="without extract's record"):
        extract(tif, pts, out=mine, overwrite=True)
    assert pd.read_parquet(mine).equals(pts)


@pytest.mark.slow  # the shared cluster's workers import rioxarray on first use
def test_soak_extract_writes_the_table_and_prints_a_summary(tif, tmp_path, cluster, capsys):
    rows, cols = np.array([0, 2, 7]), np.array([0, 3, 8])
    pts = points_in(rows, cols).rename(columns={"x": "E", "y": "N"})
    pts.to_csv(tmp_path / "points.csv", index=False)
    out = tmp_path / "table.parquet"
    argv = ["extract", tif, str(tmp_path / "points.csv"), "--x", "E", "--y", "N"]
    argv += ["--out", str(out), "--scheduler", cluster.scheduler_address]
    assert main(argv) != 0  # the point on the nodata cell is refused
    assert "rows [1]" in capsys.readouterr().err and not out.exists()
    assert main([*argv, "--outside", "drop", "--method", "window", "--window", "1"]) == 0
    text = capsys.readouterr().out
    assert "3 points, 3 on the raster, 0 off it, 1 on nodata cells; 2 bands (B1, B2)" in text
    assert "2 rows written" in text
    got = pd.read_parquet(out)
    assert got["B1"].tolist() == [0.0, 708.0] and got["id"].tolist() == [0, 2]
    assert main([*argv, "--outside", "drop"]) != 0  # an earlier output, without --overwrite
    assert "--overwrite" in capsys.readouterr().err


def test_cast_sensors_reproduce_their_predictors_from_the_raster():
    """CAST's 42 sensor locations on its farm raster give the predictor values its table holds
    (the static ones: DEM, TWI, NDRE.M, NDRE.Sd; BLD and Bt vary with depth)."""
    farm = pd.read_parquet(shared_file("cast", "cookfarm.parquet"))
    tif = str(shared_file("cast", "predictors_2012-03-25.tif"))
    bands = ["DEM", "TWI", "NDRE.M", "NDRE.Sd"]
    sensors = farm.groupby("SOURCEID", as_index=False).first()
    got = extract(
        tif,
        sensors[["SOURCEID", "Easting", "Northing"]],
        coords=("Easting", "Northing"),
        bands=bands,
    )
    assert len(got) == 42 and got.attrs[KEY]["raster_crs"] == "EPSG:26911"
    for band in bands:  # the raster is float32
        np.testing.assert_allclose(got[band], sensors[band], rtol=1e-6, err_msg=band)
