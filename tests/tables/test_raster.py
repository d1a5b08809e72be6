"""raster_table: labelled pixels of a synthetic raster, checked against an in-memory reference."""

from __future__ import annotations

import re
import sys
import warnings
from pathlib import Path

import dask
import dask.array as da
import numpy as np
import pandas as pd
import pytest
import rasterio
import rioxarray
import xarray as xr
from rasterio.transform import from_origin

import soak_dask as sd
from soak_dask.tables.raster import NodataWarning, open_geotiffs, raster_table

H, W = 60, 80
CHUNKS = {"y": 20, "x": 40}  # 3 × 2 = 6 spatial chunks
N_CHUNKS = 6
BANDS = ["B1", "B2", "B3", "B4"]
CELL = 10  # polygons lie inside 10 × 10 cells, so they never cross a tile or region border
TIMES = np.array(["2020-06-01", "2021-06-01"], dtype="datetime64[ns]")


def make_arrays(seed: int = 0) -> dict[str, np.ndarray]:
    """Raw arrays of a raster: blob polygons, labels on ~20% of pixels, a few NaN bands."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:H, 0:W]
    cell = (yy // CELL) * (W // CELL) + xx // CELL
    n_cells = cell.max() + 1
    radius = np.where(rng.random(n_cells) < 0.8, rng.uniform(2.5, 4.0, n_cells), 0)
    centre = rng.uniform(3.5, 6.5, (n_cells, 2))
    inside = np.hypot(yy % CELL - centre[cell, 0], xx % CELL - centre[cell, 1]) < radius[cell]
    polygon = np.where(inside, cell + 1, 0).astype(np.int32)  # 0: no polygon
    polygon_class = rng.integers(0, 2, n_cells + 1)
    label = np.where(inside, polygon_class[polygon], -1).astype(np.int16)  # -1: unlabelled
    outside = np.flatnonzero(~inside.ravel())[[5, 500, 3000]]
    label.flat[outside] = 1  # labelled pixels in no polygon: dropped when polygons are groups
    bands = rng.normal(label * 0.8, 1.0, (4, H, W)).astype(np.float32)
    labelled = np.flatnonzero(inside.ravel())
    bands[1].flat[labelled[[0, 40, 41, 300]]] = np.nan  # dropped, with a warning
    region = (1 + (xx >= 30) + (xx >= 60)).astype(np.int8)
    x = 500_000.0 + 10 * np.arange(W) + 5
    y = 4_000_000.0 - 10 * np.arange(H) - 5
    return {"bands": bands, "label": label, "polygon": polygon, "region": region, "x": x, "y": y}


def make_dataset(raw: dict, layout: str = "variables") -> xr.Dataset:
    """The raster with one variable per band, or one ``refl`` variable with a band dim."""
    grid = ("y", "x")
    data = {
        "label": (grid, raw["label"]),
        "polygon": (grid, raw["polygon"]),
        "region": (grid, raw["region"]),
    }
    if layout == "variables":
        data.update({b: (grid, raw["bands"][i]) for i, b in enumerate(BANDS)})
    else:
        data["refl"] = (("band", "y", "x"), raw["bands"])
    coords = {"y": raw["y"], "x": raw["x"]} | ({} if layout == "variables" else {"band": BANDS})
    return xr.Dataset(data, coords=coords).chunk(CHUNKS)


def reference(
    raw: dict,
    *,
    names: list[str] = BANDS,
    group: bool = False,
    tiles: tuple[int, int] | None = None,
    region: bool = False,
) -> pd.DataFrame:
    """The expected table, built directly in memory from the raw arrays (row-major order)."""
    iy, ix = np.nonzero(raw["label"] >= 0)
    df = pd.DataFrame({"x": raw["x"][ix], "y": raw["y"][iy]})
    for i, name in enumerate(names):
        df[name] = raw["bands"][i, iy, ix]
    df["label"] = raw["label"][iy, ix].astype(np.int64)
    keep = ~np.isnan(raw["bands"][:, iy, ix]).any(axis=0)
    if tiles:
        df["tile"] = [
            f"r{r}c{c}" for r, c in zip(iy * tiles[0] // H, ix * tiles[1] // W, strict=True)
        ]
    if region:
        df["region"] = raw["region"][iy, ix].astype(np.int64)
    if group:
        df["polygon"] = raw["polygon"][iy, ix].astype(np.int64)
        keep &= df["polygon"].to_numpy() != 0
    return df[keep].reset_index(drop=True)


def computed(table: sd.Table, columns: list[str]) -> pd.DataFrame:
    """The table's rows (sync scheduler, nodata warnings silenced) in row-major pixel order."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NodataWarning)
        df = table.data.compute(scheduler="sync")
    return df.sort_values(["y", "x"], ascending=[False, True])[columns].reset_index(drop=True)


@pytest.fixture(scope="module")
def raw() -> dict:
    return make_arrays()


def test_band_variables_tiles_and_groups_match_reference(raw):
    ds = make_dataset(raw).drop_vars("region")
    ds["polygon"].attrs["nodata"] = 0  # a variable's own nodata attribute is honoured
    table = raster_table(ds, "label", tiles=(2, 2), group="polygon", nodata={"label": -1})
    expected = reference(raw, group=True, tiles=(2, 2))
    assert table.features == tuple(BANDS)  # by default every other variable is a band
    assert (table.label, table.subset, table.group, table.task) == (
        "label",
        "tile",
        "polygon",
        "classification",
    )
    assert 0.15 < len(expected) / (H * W) < 0.3  # labels on about 20% of pixels
    pd.testing.assert_frame_equal(computed(table, list(expected.columns)), expected)
    assert sorted(expected["tile"].unique()) == ["r0c0", "r0c1", "r1c0", "r1c1"]


def test_band_dim_region_subset_and_class_names(raw):
    ds = make_dataset(raw, layout="band_dim")
    table = raster_table(
        ds, "label", subset="region", bands="refl", nodata=-1, classes={0: "other", 1: "tree"}
    )
    names = [f"refl_{b}" for b in BANDS]
    expected = reference(raw, names=names, region=True)
    expected["label"] = pd.array(np.array(["other", "tree"])[expected["label"]], dtype="str")
    assert table.features == tuple(names)
    assert table.subset == "region"
    pd.testing.assert_frame_equal(computed(table, list(expected.columns)), expected)


def test_region_names_from_cf_flags(raw):
    ds = make_dataset(raw)
    ds["region"].attrs.update(flag_values=[1, 2, 3], flag_meanings="west centre east")
    table = raster_table(ds, "label", subset="region", bands=BANDS, nodata={"label": -1})
    got = computed(table, ["region"])["region"]
    expected = reference(raw, region=True)["region"].map({1: "west", 2: "centre", 3: "east"})
    assert got.tolist() == expected.tolist()


def test_lazy_one_partition_per_spatial_chunk(raw):
    calls = []

    def counted(block):
        calls.append(block.shape)
        return block

    ds = make_dataset(raw)
    ds["B1"] = (("y", "x"), da.from_array(raw["bands"][0], chunks=(20, 40)).map_blocks(counted))
    calls.clear()  # map_blocks itself ran `counted` on tiny arrays to learn its output type
    table = raster_table(ds, "label", tiles=(2, 2), bands=BANDS, nodata={"label": -1})
    assert table.data.npartitions == N_CHUNKS
    assert calls == []  # building the table read no pixel
    with pytest.warns(NodataWarning) as record:
        n_rows = len(table.data.compute(scheduler="sync"))
    assert len(calls) == N_CHUNKS  # each chunk read once, by its own task
    assert n_rows == len(reference(raw, tiles=(2, 2)))
    # The warnings name the variable and add up to the labelled pixels with a NaN band.
    counts = [re.search(r"'B2' \((\d+)\)", str(w.message)) for w in record]
    assert sum(int(m.group(1)) for m in counts) == 4
    in_memory = raster_table(ds.compute(), "label", bands=BANDS, nodata={"label": -1})
    assert in_memory.data.npartitions == 1  # 60 × 80 fits in one default chunk


def test_unaligned_chunks_are_unified(raw):
    ds = make_dataset(raw)
    ds["B3"] = ds["B3"].chunk({"y": 30, "x": 80})
    table = raster_table(ds, "label", bands=BANDS, nodata={"label": -1})
    assert table.data.npartitions == 4 * 2  # y chunks at 20, 30, 40 and 60; x at 40
    expected = reference(raw)
    pd.testing.assert_frame_equal(computed(table, list(expected.columns)), expected)


def test_zarr_round_trip(raw, tmp_path):
    ds = make_dataset(raw)
    ds["label"].encoding["_FillValue"] = -1  # stored as int16; read back as float with NaN
    path = tmp_path / "raster.zarr"
    with warnings.catch_warnings():  # zarr v3: consolidated metadata is not in the spec yet
        warnings.simplefilter("ignore", UserWarning)
        ds.to_zarr(path)
    nodata = {"polygon": 0}
    table = raster_table(
        str(path), "label", tiles=(2, 2), group="polygon", bands=BANDS, nodata=nodata
    )
    assert table.task == "classification"  # integer codes on disk, though decoded as floats
    assert table.data.npartitions == N_CHUNKS
    assert table.source == str(path)
    expected = reference(raw, group=True, tiles=(2, 2))
    pd.testing.assert_frame_equal(computed(table, list(expected.columns)), expected)


@pytest.mark.parametrize("label_over_time", [False, True])
def test_time_dimension_rows_per_pixel_and_time(raw, label_over_time):
    grid = ("time", "y", "x")
    bands = np.stack([raw["bands"], raw["bands"] + 10])  # (time, band, y, x)
    label = raw["label"]
    if label_over_time:  # in the second year only even polygons are labelled
        later = np.where(raw["polygon"] % 2 == 0, label, -1)
        label = np.stack([label, later])
    ds = xr.Dataset(
        {b: (grid, bands[:, i]) for i, b in enumerate(BANDS)}
        | {"label": (grid if label_over_time else ("y", "x"), label)},
        coords={"time": TIMES, "y": raw["y"], "x": raw["x"]},
    ).chunk(CHUNKS)
    table = raster_table(ds, "label", nodata=-1)
    parts = []
    for t in range(2):
        step = {**raw, "bands": bands[t], "label": label[t] if label_over_time else label}
        parts.append(reference(step).assign(time=TIMES[t]))
    expected = pd.concat(parts).sort_values(["y", "x", "time"], ascending=[False, True, True])
    expected = expected.reset_index(drop=True)
    got = computed(table, list(expected.columns))
    got = got.sort_values(["y", "x", "time"], ascending=[False, True, True])
    pd.testing.assert_frame_equal(got.reset_index(drop=True), expected)
    assert "time" not in table.features
    assert table.data.npartitions == N_CHUNKS


def test_float_label_is_regression(raw):
    ds = make_dataset(raw)
    ds["label"] = ds["label"].where(ds["label"] >= 0) * 2.5  # NaN: unlabelled
    table = raster_table(ds, "label", bands=BANDS)
    assert table.task == "regression"
    expected = reference(raw)
    expected["label"] = expected["label"] * 2.5
    pd.testing.assert_frame_equal(computed(table, list(expected.columns)), expected)


def _error_cases(ds: xr.Dataset) -> list:
    bad_band = ds.assign(B5=ds["B1"].expand_dims(season=2))
    labelled_bands = ds.assign(label=ds["label"].expand_dims(band=2))
    return [
        (dict(source=ds, label="lab"), "label variable 'lab' is not in the raster"),
        (dict(source=labelled_bands, label="label"), "label variable 'label' has dims"),
        (dict(source=ds.rename(y="lat"), label="label"), "spatial dims 'y' and 'x'"),
        (dict(source=ds, label="label", subset="region", tiles=(2, 2)), "both subset"),
        (dict(source=ds, label="label", tiles=(100, 2)), "100 tiles along 'y'"),
        (dict(source=ds, label="label", tiles=(0, 2)), r"tiles=\(0, 2\)"),
        (dict(source=ds, label="label", tiles=3), "two positive integers"),
        (dict(source=bad_band, label="label"), "band variable 'B5' has dims"),
        (dict(source=ds, label="label", bands=["B9"]), r"band variables \['B9'\]"),
        (dict(source=ds, label="label", bands=["polygon"], group="polygon"), "cannot be bands"),
        (dict(source=ds, label="label", group="label"), "must differ"),
        (dict(source=ds, label="label", nodata={"B7": 0}), r"variables \['B7'\]"),
        (dict(source=ds.rename(B4="tile"), label="label", tiles=(2, 2)), "columns named"),
        (dict(source=ds, label="label", classes={0: "a"}, task="regression"), "regression"),
        (dict(source=ds, label="label", classes={0.5: "a"}), "non-integer codes"),
        (dict(source=[1, 2], label="label"), "cannot read a raster from list"),
    ]


def test_errors_name_the_problem(raw):
    ds = make_dataset(raw)
    for kwargs, message in _error_cases(ds):
        error = TypeError if isinstance(kwargs["source"], list) else ValueError
        with pytest.raises(error, match=message):
            raster_table(**kwargs)


def test_unnamed_label_code_fails_when_read(raw):
    table = raster_table(make_dataset(raw), "label", bands=BANDS, nodata=-1, classes={0: "other"})
    with pytest.raises(ValueError, match=r"'label' has codes \[1\] without a name"):
        computed(table, ["label"])


@pytest.mark.filterwarnings("ignore::soak_dask.tables.raster.NodataWarning")
def test_soak_end_to_end_on_raster_table(raw):
    nodata = {"label": -1, "polygon": 0}
    ds = make_dataset(raw)
    table = raster_table(ds, "label", tiles=(2, 2), group="polygon", bands=BANDS, nodata=nodata)
    with dask.config.set(scheduler="sync"):
        res = sd.soak(table, "featureless", n_folds=3, options=sd.RunOptions(progress=False))
    assert list(res.test_subset.values) == ["r0c0", "r0c1", "r1c0", "r1c1"]
    expected = reference(raw, group=True, tiles=(2, 2))["tile"].value_counts().sort_index()
    n_test = res["n_test"].sel(learner="featureless", train_type="same").sum("fold")
    assert n_test.to_series().tolist() == expected.tolist()  # every labelled pixel tested once
    assert np.isfinite(res["error"].values).all()


# GeoTIFF inputs: the same arrays written as files, on the grid of make_arrays' x and y.
TRANSFORM = from_origin(500_000.0, 4_000_000.0, 10.0, 10.0)  # pixel centres at x, y above
CRS = "EPSG:32612"


def write_tif(
    path: Path,
    data: np.ndarray,
    *,
    nodata: float | None = None,
    driver: str = "GTiff",
    transform=TRANSFORM,
    crs: str = CRS,
    descriptions: list[str] | None = None,
) -> Path:
    """Write ``data`` (y, x) or (band, y, x) as a GeoTIFF (16 × 16 tiles) or a COG."""
    data = data[np.newaxis] if data.ndim == 2 else data
    count, height, width = data.shape
    layout = {"tiled": True, "blockxsize": 16, "blockysize": 16} if driver == "GTiff" else {}
    profile = dict(count=count, height=height, width=width, dtype=data.dtype, nodata=nodata)
    with rasterio.open(
        path, "w", driver=driver, crs=crs, transform=transform, **profile, **layout
    ) as dst:
        dst.write(data)
        if descriptions:
            dst.descriptions = tuple(descriptions)
    return path


@pytest.fixture(scope="module")
def geotiffs(raw, tmp_path_factory) -> dict[str, Path]:
    """One single-band GeoTIFF per band, a label (nodata -1) and polygons (nodata 0)."""
    folder = tmp_path_factory.mktemp("geotiff")
    files = {b: write_tif(folder / f"{b}.tif", raw["bands"][i]) for i, b in enumerate(BANDS)}
    files["label"] = write_tif(folder / "label.tif", raw["label"], nodata=-1)
    files["polygon"] = write_tif(folder / "polygon.tif", raw["polygon"], nodata=0)
    files["region"] = write_tif(folder / "region.tif", raw["region"])
    return files


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::soak_dask.tables.raster.NodataWarning")
def test_geotiff_bands_give_the_table_and_results_of_the_xarray_path(raw, geotiffs):
    files = {k: geotiffs[k] for k in [*BANDS, "label", "polygon"]}
    from_files = raster_table(files, "label", tiles=(2, 2), group="polygon")  # nodata from files
    nodata = {"label": -1, "polygon": 0}
    ds = make_dataset(raw).drop_vars("region")
    from_xarray = raster_table(ds, "label", tiles=(2, 2), group="polygon", nodata=nodata)
    assert from_files.features == tuple(BANDS)
    assert (from_files.task, from_files.subset, from_files.group) == (
        "classification",
        "tile",
        "polygon",
    )
    assert from_files.source.startswith("GeoTIFFs B1=") and str(geotiffs["label"]) in (
        from_files.source
    )
    expected = reference(raw, group=True, tiles=(2, 2))
    got = computed(from_files, list(expected.columns))
    pd.testing.assert_frame_equal(got, expected)
    pd.testing.assert_frame_equal(got, computed(from_xarray, list(expected.columns)))
    with dask.config.set(scheduler="sync"):
        runs = [
            sd.soak(t, "logistic", n_folds=2, seed=1, options=sd.RunOptions(progress=False))
            for t in (from_files, from_xarray)
        ]
    for measure in ["error", "n_test"]:
        xr.testing.assert_equal(runs[0][measure], runs[1][measure])
    assert np.isfinite(runs[0]["error"].values).all()


def test_multiband_cog_with_band_descriptions(raw, tmp_path):
    refl = write_tif(tmp_path / "refl.tif", raw["bands"], driver="COG", descriptions=BANDS)
    label = write_tif(tmp_path / "label.tif", raw["label"], nodata=-1, driver="COG")
    region = write_tif(tmp_path / "region.tif", raw["region"], driver="COG")
    with rasterio.open(refl) as src:  # GDAL writes a COG as a tiled GeoTIFF with the layout tag
        assert src.profile["tiled"] and src.tags(ns="IMAGE_STRUCTURE")["LAYOUT"] == "COG"
    files = {"refl": refl, "label": label, "region": region}
    table = raster_table(files, "label", subset="region", classes={0: "other", 1: "tree"})
    names = [f"refl_{b}" for b in BANDS]
    assert table.features == tuple(names)
    from_xarray = raster_table(
        make_dataset(raw, layout="band_dim"),
        "label",
        subset="region",
        bands="refl",
        nodata={"label": -1},
        classes={0: "other", 1: "tree"},
    )
    expected = reference(raw, names=names, region=True)
    expected["label"] = pd.array(np.array(["other", "tree"])[expected["label"]], dtype="str")
    got = computed(table, list(expected.columns))
    pd.testing.assert_frame_equal(got, expected)
    pd.testing.assert_frame_equal(got, computed(from_xarray, list(expected.columns)))
    # Without descriptions, the bands are numbered from 1, as rasterio numbers them.
    plain = write_tif(tmp_path / "plain.tif", raw["bands"][:2])
    assert list(open_geotiffs({"refl": plain}).data_vars) == ["refl_1", "refl_2"]


def test_geotiffs_are_read_lazily_chunk_by_chunk(raw, geotiffs, monkeypatch):
    reads = []
    wrapper = rioxarray._io.RasterioArrayWrapper
    original = wrapper._getitem

    def counted(self, key):
        reads.append(key)
        return original(self, key)

    monkeypatch.setattr(wrapper, "_getitem", counted)
    files = {k: geotiffs[k] for k in ["B1", "B2", "label"]}
    ds = open_geotiffs(files, chunks=CHUNKS)
    assert ds["B1"].chunks == ((20, 20, 20), (40, 40))
    assert ds.rio.crs == CRS and ds["label"].attrs["_FillValue"] == -1
    table = raster_table(ds, "label")
    assert reads == []  # opening the files and building the table read no pixel
    assert table.data.npartitions == N_CHUNKS
    with pytest.warns(NodataWarning, match=r"'B2' \(\d+\)"):
        n_rows = len(table.data.compute(scheduler="sync"))
    assert len(reads) == N_CHUNKS * len(files)  # each chunk of each file read once
    assert n_rows == len(reference(raw))


@pytest.mark.parametrize(
    ("change", "differs"),
    [
        (dict(transform=from_origin(500_005.0, 4_000_000.0, 10.0, 10.0)), "transform"),
        (dict(crs="EPSG:32613"), "CRS EPSG:32613 against EPSG:32612"),
        (dict(shape=(H, W - 1)), r"shape \(60, 79\) against \(60, 80\)"),
    ],
)
def test_geotiff_off_the_grid_is_named(raw, geotiffs, tmp_path, change, differs):
    shape = change.pop("shape", (H, W))
    odd = write_tif(tmp_path / "odd.tif", raw["bands"][2][: shape[0], : shape[1]], **change)
    files = {"B1": geotiffs["B1"], "B3": odd, "label": geotiffs["label"]}
    message = (
        rf"GeoTIFF 'B3' \({re.escape(str(odd))}\) is not on the grid of 'B1' .*{differs}.*"
        r"reproject or resample 'B3' onto that grid first"
    )
    with pytest.raises(ValueError, match=message):
        raster_table(files, "label")


def test_geotiff_input_errors(geotiffs, monkeypatch):
    with pytest.raises(ValueError, match="one GeoTIFF, but a raster table needs the label"):
        raster_table(geotiffs["B1"], "label")
    with pytest.raises(ValueError, match="storage_options is for Zarr stores"):
        raster_table(dict(geotiffs), "label", storage_options={"anon": True})
    with pytest.raises(ValueError, match="non-empty dict"):
        open_geotiffs({})
    with pytest.raises(TypeError, match="map variable names to paths"):
        open_geotiffs({"B1": 3})
    monkeypatch.setitem(sys.modules, "rioxarray", None)  # as if the extra were not installed
    with pytest.raises(ImportError, match=r"pip install 'soak_dask\[raster\]'"):
        raster_table(dict(geotiffs), "label")


def test_multiband_name_clash(raw, tmp_path):
    two = write_tif(tmp_path / "two.tif", raw["bands"][:2])
    one = write_tif(tmp_path / "one.tif", raw["bands"][0])
    with pytest.raises(ValueError, match="two rasters give a variable named 'refl_1'"):
        open_geotiffs({"refl": two, "refl_1": one})


def test_geotiff_crs_and_coordinates_carried_into_the_table(raw, geotiffs):
    """The raster's CRS becomes the table's (``Table.crs``, as load_table reads GeoParquet's)
    and x, y its coordinates role, so --blocks, kNNDM and spatial_range read distances in the
    raster's unit; a Dataset without a CRS gives none."""
    files = {k: geotiffs[k] for k in [*BANDS, "label"]}
    table = raster_table(files, "label", tiles=(2, 2))
    assert (table.coords, table.crs) == (("x", "y"), CRS)
    assert table.data.columns.tolist()[-2:] == ["x", "y"] and "x" not in table.features
    plain = raster_table(make_dataset(raw).drop_vars("region"), "label", nodata={"label": -1})
    assert (plain.coords, plain.crs) == (("x", "y"), None)


def test_variables_on_two_crss_are_refused_naming_them(raw):
    ds = make_dataset(raw).drop_vars("region")
    for var, epsg in (("B1", 32632), ("label", 32633)):
        ds[f"crs_{var}"] = xr.DataArray(0, attrs={"crs_wkt": f"EPSG:{epsg}"})
        ds[var].attrs["grid_mapping"] = f"crs_{var}"
    with pytest.raises(ValueError, match=r"different CRSs \(label: EPSG:32633; B1: EPSG:32632\)"):
        raster_table(ds, "label", nodata={"label": -1})
