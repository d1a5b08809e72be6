"""Issue 42, item 9: the figures and the HTML report of the spatial kinds. The AOA's maps of
equal size sharing the DI's colour bar (below, not between them), the training points drawn,
axes in the CRS's unit; ``soak aoa`` writes ``report.html`` (threshold, share inside, the error
profile, the maps, the settings) on the one page skeleton; ``soak report`` draws it again from
an AOA store or ``soak aoa``'s directory, and the page of ``soak knndm``'s directory."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import rioxarray  # noqa: F401  (the .rio accessor)
import xarray as xr

import soak_dask as sd
from soak_dask.app import cli
from soak_dask.io.outdir import MANIFEST
from soak_dask.results.html import CSP
from soak_dask.results.pages import write_page
from soak_dask.spatial.aoa_page import aoa_page, profile_line
from soak_dask.spatial.aoa_plot import plot_aoa
from soak_dask.spatial.aoa_record import recorded_points, recorded_profile, with_record

from ..conftest import shared_file
from ..results.test_every_kind_report import local, soak  # noqa: F401  # local: a fixture (usefixtures)
from ..results.test_report import probe_page

FEATURES = ["a", "b", "c"]
CRS = "EPSG:26911"


def field(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    """A smooth random field: a few random waves."""
    yy, xx = np.mgrid[0 : shape[0], 0 : shape[1]] / 10
    waves = [
        np.sin(rng.uniform(0.2, 1) * xx + rng.uniform(0.2, 1) * yy + rng.uniform(0, 6))
        for _ in range(3)
    ]
    return sum(waves) + rng.normal(0, 0.05, shape)


@pytest.fixture(scope="module")
def scene() -> tuple[xr.Dataset, pd.DataFrame]:
    """A 24 × 36 raster of three predictors in UTM metres (a corner outside the training
    data's range) and 30 training points on its left two thirds, with folds and noisy CV
    predictions."""
    rng = np.random.default_rng(4)
    shape = (24, 36)
    x = 493_000 + 10 * np.arange(shape[1])
    y = 5_181_000 - 10 * np.arange(shape[0])
    bands = {name: (("y", "x"), field(rng, shape)) for name in FEATURES}
    raster = xr.Dataset(bands, coords={"y": y, "x": x})
    raster["c"][:6, -8:] += 4  # predictors unlike any the training points have
    raster["a"][0, 0] = np.nan  # a cell without data
    raster = raster.rio.write_crs(CRS)
    rows, cols = rng.integers(6, shape[0], 30), rng.integers(0, 24, 30)
    train = pd.DataFrame({name: raster[name].values[rows, cols] for name in FEATURES})
    train["E"], train["N"] = x[cols].astype(float), y[rows].astype(float)
    train["label"] = train["a"] + 0.5 * train["b"] + rng.normal(0, 0.1, len(train))
    train["fold"] = np.arange(len(train)) % 3 + 1
    train["cv_pred"] = train["label"] + rng.normal(0, 0.2, len(train))
    return raster, train


@pytest.fixture(scope="module")
def result(scene) -> tuple[xr.Dataset, sd.ErrorProfile]:
    raster, train = scene
    options = {"features": FEATURES, "folds": "fold"}
    profile = sd.error_profile(train, predictions="cv_pred", label="label", **options)
    ds = sd.aoa(train, raster, **options).compute()
    return ds.assign(expected_error=sd.expected_error(ds, profile)), profile


def points(train: pd.DataFrame) -> np.ndarray:
    return train[["E", "N"]].to_numpy()


# ---------------------------------------------------------------------------- the figure
def test_maps_of_equal_size_share_a_colour_bar_below_them_with_points_and_units(scene, result):
    raster, train = scene
    ds, _ = result
    fig = plot_aoa(ds, points=points(train))
    try:
        fig.canvas.draw()
        maps = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]
        bars = [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]
        assert len(maps) == 3 and len(bars) == 2  # DI (shared with the AOA), expected error
        boxes = [ax.get_position() for ax in maps]
        assert len({(round(b.width, 4), round(b.height, 4)) for b in boxes}) == 1  # equal size
        assert len({round(b.y0, 4) for b in boxes}) == 1  # one row
        for bar in bars:  # below the maps, not between them
            assert bar.get_position().y1 < min(b.y0 for b in boxes)
        di_bar = bars[0].get_position()
        assert di_bar.x0 < boxes[0].x1 and di_bar.x1 > boxes[1].x0  # spans DI and AOA maps
        for ax in maps:
            drawn = [c for c in ax.collections if len(c.get_offsets()) == len(train)]
            assert len(drawn) == 1  # the training points on every map
            assert ax.get_xlabel() == "x (metre)"
        assert maps[0].get_ylabel() == "y (metre)"
        assert bars[0].get_xlabel() == "DI (dimensionless)"
    finally:
        plt.close(fig)
    bare = plot_aoa(ds.drop_vars("spatial_ref"))  # no CRS: the coordinates' own units
    try:
        assert bare.axes[0].get_xlabel() == "x (coordinate units)"
    finally:
        plt.close(bare)


# ---------------------------------------------------------------------------- the page
def page_numbers(page: str) -> str:
    """The page's text without tags (numbers and words as a reader sees them)."""
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


def check_aoa_page(out: Path, ds: xr.Dataset, profile: sd.ErrorProfile | None) -> str:
    """The AOA page in ``out``: self-contained, holding the threshold and the share inside
    (as computed from the layers), the profile's line, the figures it references; every file
    the manifest lists is there."""
    page = (out / "report.html").read_text(encoding="utf-8")
    assert CSP in page and "<script" not in page
    text = page_numbers(page)
    aoa = ds["aoa"].values
    share = np.nanmean(aoa)
    assert f"Threshold {ds.attrs['threshold']:.4g} on the DI" in text
    assert f"{share:.1%} of the {int(np.isfinite(aoa).sum()):,} cells" in text
    figures = ["aoa", "error_profile"] if profile is not None else ["aoa"]
    assert len(re.findall(r'<img [^>]*src="data:image/png;base64,', page)) == len(figures)
    for name in figures:
        assert (out / f"{name}.png").stat().st_size > 0 and (out / f"{name}.svg").is_file()
        assert f"<code>{name}.png</code>" in page
    if profile is not None:
        assert profile_line(profile) in text
    summary = pd.read_csv(out / "aoa_summary.csv").set_index("quantity")["value"]
    assert float(summary["threshold (DI)"]) == pytest.approx(ds.attrs["threshold"], rel=1e-3)
    assert int(summary["inside the AOA"]) == int(np.nansum(aoa))
    listed = json.loads((out / MANIFEST).read_text())["files"]
    assert "report.html" in listed and all((out / name).exists() for name in listed)
    return page


@pytest.fixture(scope="module")
def aoa_report(scene, result, tmp_path_factory) -> Path:
    """The AOA's page of the scene, written once for the module: tests only read it."""
    _, train = scene
    ds, profile = result
    out = tmp_path_factory.mktemp("aoa_report") / "r"
    path = write_page(aoa_page(ds, points=points(train), profile=profile), out)
    assert path == out / "report.html"
    return path


@pytest.mark.slow
def test_aoa_page_holds_the_numbers_figures_and_training_di(scene, result, aoa_report):
    _, train = scene
    ds, profile = result
    out = aoa_report.parent
    check_aoa_page(out, ds, profile)
    written = pd.read_csv(out / "training_di.csv")
    np.testing.assert_allclose(written["train_di"], ds["train_di"].values)
    np.testing.assert_allclose(written[["train_x", "train_y"]], points(train))
    windows = pd.read_csv(out / "error_profile_windows.csv")
    np.testing.assert_allclose(windows.to_numpy(), profile.windows.to_numpy())


def test_the_store_records_the_points_and_profile_to_draw_the_page_again(scene, result, tmp_path):
    _, train = scene
    ds, profile = result
    store = sd.write_aoa(ds, tmp_path / "aoa.zarr", points=points(train), profile=profile)
    back = sd.open_aoa(store)
    np.testing.assert_array_equal(recorded_points(back), points(train))
    again = recorded_profile(back)
    pd.testing.assert_frame_equal(again.windows, profile.windows)
    pd.testing.assert_frame_equal(again.points, profile.points, check_dtype=False)
    assert (again.metric, again.window, again.n_outside) == (
        profile.metric,
        profile.window,
        profile.n_outside,
    )
    grid = np.linspace(0, 2 * profile.threshold, 50)
    np.testing.assert_array_equal(again(grid), profile(grid))
    assert recorded_profile(ds) is None and recorded_points(ds) is None  # nothing recorded
    with pytest.raises(ValueError, match="the AOA has 30 training points"):
        with_record(ds, points(train)[:5])
    with pytest.raises(ValueError, match=r"kept in a Zarr store only; .*aoa.tif is a GeoTIFF"):
        sd.write_aoa(ds, tmp_path / "aoa.tif", points=points(train))
    assert not (tmp_path / "aoa.tif").exists()


# ---------------------------------------------------------------------------- the commands
def refused(argv: list, capsys) -> str:
    code = cli.main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert code != 0
    return err


@pytest.fixture
def inputs(scene, tmp_path) -> tuple[Path, Path]:
    raster, train = scene
    data, grid = tmp_path / "train.csv", tmp_path / "raster.zarr"
    train.to_csv(data, index=False)
    raster.to_zarr(grid, consolidated=False)
    return data, grid


AOA_FLAGS = ["--features", "a,b,c", "--folds", "fold", "--points", "E,N", "--error-profile",
             "--label", "label", "--predictions", "cv_pred"]  # fmt: skip


@pytest.mark.slow
@pytest.mark.usefixtures("local")
def test_soak_aoa_writes_the_page_and_soak_report_draws_it_again(
    result,
    inputs,
    tmp_path,
    capsys,
):
    ds, profile = result
    out = tmp_path / "aoa_out"
    printed = soak(["aoa", *inputs, *AOA_FLAGS, "--out", out], capsys)
    page = check_aoa_page(out, ds, profile)
    assert str(out / "report.html") in printed and profile_line(profile) in printed
    assert f"<code>{inputs[0]}</code>" in page  # the inputs named in the settings
    # the store alone, and the directory, give the same page and print what soak aoa printed
    first = printed.split("\n\nFiles:")[0].strip()
    for name, given in (("from_store", out / "aoa.zarr"), ("from_dir", out)):
        shown = soak(["report", given, "--out", tmp_path / name], capsys)
        assert shown.strip() == f"{first}\n{tmp_path / name / 'report.html'}"
        again = check_aoa_page(tmp_path / name, ds, profile)
        assert page_numbers(again) == page_numbers(page)
    # the report directory's rules: its own earlier page only with --overwrite, never a
    # foreign directory, never inside the store
    err = refused(["report", out / "aoa.zarr", "--out", tmp_path / "from_store"], capsys)
    assert "--overwrite" in err
    soak(["report", out, "--out", tmp_path / "from_store", "--overwrite"], capsys)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    assert "notes.txt" in refused(["report", out, "--out", foreign, "--overwrite"], capsys)
    assert sorted(p.name for p in foreign.iterdir()) == ["notes.txt"]
    refused(["report", out / "aoa.zarr", "--out", out / "aoa.zarr" / "r"], capsys)
    refused(["report", out, "--out", out / "r"], capsys)  # inside soak aoa's directory
    assert not (out / "aoa.zarr" / "r").exists() and not (out / "r").exists()


@pytest.mark.slow
@pytest.mark.usefixtures("local")
def test_a_geotiff_aoa_has_its_page_but_soak_report_says_what_to_give(
    inputs,
    tmp_path,
    capsys,
):
    out = tmp_path / "tif_out"
    soak(["aoa", *inputs, "--features", "a,b,c", "--format", "tif", "--out", out], capsys)
    assert (out / "report.html").is_file() and (out / "aoa.tif").is_file()
    err = refused(["report", out, "--out", tmp_path / "r"], capsys)
    assert "holds no aoa.zarr" in err and str(out / "report.html") in err
    err = refused(["report", out / "aoa.tif", "--out", tmp_path / "r"], capsys)
    assert "AOA GeoTIFF" in err
    assert not (tmp_path / "r").exists()


@pytest.fixture(scope="module")
def knndm_scene() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Training points in two clumps, a prediction area over a square around them."""
    rng = np.random.default_rng(7)
    train = pd.DataFrame(
        np.vstack([rng.normal(20, 4, (40, 2)), rng.normal(70, 4, (40, 2))]), columns=["x", "y"]
    )
    train["f"] = rng.normal(0, 1, len(train))
    train["label"] = train["x"] / 10 + train["f"] + rng.normal(0, 0.3, len(train))
    gx, gy = np.meshgrid(np.linspace(0, 100, 40), np.linspace(0, 100, 40))
    return train, pd.DataFrame({"x": gx.ravel(), "y": gy.ravel()})


@pytest.mark.slow
@pytest.mark.usefixtures("local")
def test_soak_knndm_page_and_soak_report_of_its_directory(knndm_scene, tmp_path, capsys):
    train, area = knndm_scene
    data, pred, out = tmp_path / "train.csv", tmp_path / "area.csv", tmp_path / "kn"
    train.to_csv(data, index=False)
    area.to_csv(pred, index=False)
    argv = ["knndm", data, pred, "--label", "label", "--coords", "x,y", "--n-folds", "4",
            "--candidates", "8", "--seed", "3", "--out", out]  # fmt: skip
    printed = soak(argv, capsys)
    info = json.loads((out / "knndm.json").read_text())
    shown = soak(["report", out, "--out", tmp_path / "rep"], capsys)
    assert shown.split("\n")[:3] == printed.split("\n")[:3]  # W, fold sizes as printed
    for where in (out, tmp_path / "rep"):
        page = (where / "report.html").read_text(encoding="utf-8")
        text = page_numbers(page)
        assert CSP in page and "<script" not in page
        assert f"W = {info['knndm_W']:.4g} against {info['knndm_W_random']:.4g}" in text
        assert (where / "knndm.png").stat().st_size > 0 and "<code>knndm.png</code>" in page
        sizes = pd.read_csv(where / "fold_sizes.csv")
        assert sizes["rows"].tolist() == info["fold_sizes"] and sizes["fold"].tolist() == [
            1,
            2,
            3,
            4,
        ]
        candidates = pd.read_csv(where / "candidates.csv", keep_default_na=False, dtype=str)
        assert len(candidates) == 9 and not (candidates == "").any().any()  # 8 and random
        chosen = candidates[candidates["status"].str.startswith("chosen")]
        assert float(chosen["W"].iloc[0]) == pytest.approx(info["knndm_W"])
    assert "4 CV folds" in page_numbers((tmp_path / "rep" / "report.html").read_text())
    assert "--overwrite" in refused(["report", out, "--out", tmp_path / "rep"], capsys)
    # a directory from before distances.csv: said, and nothing written
    (out / "distances.csv").unlink()
    err = refused(["report", out, "--out", tmp_path / "old"], capsys)
    assert "without distances.csv" in err and "run soak knndm again" in err
    assert not (tmp_path / "old").exists() or not any((tmp_path / "old").iterdir())


# ---------------------------------------------------------------------------- in a browser
@pytest.mark.slow
def test_the_aoa_page_opens_in_chromium_without_errors(aoa_report, tmp_path):
    found, console = probe_page(aoa_report, tmp_path)
    assert found == {"images": 2, "loaded": 2, "errors": []} and console == []


# ---------------------------------------------------------------------------- CAST's farm
@pytest.mark.slow
def test_cast_farm_page_in_metres_with_the_sensors(tmp_path):
    """CAST's farm: its 42 sensors against its raster (EPSG:26911) -- the maps in metres with
    the sensors drawn, the page with its threshold and share."""
    cook = pd.read_parquet(shared_file("cast", "cookfarm.parquet"))
    sensors = cook.groupby("SOURCEID", observed=True)[["Easting", "Northing"]].mean()
    image = rioxarray.open_rasterio(shared_file("cast", "predictors_2012-03-25.tif"))
    raster = image.to_dataset("band").rename(dict(enumerate(image.long_name, 1)))
    features = ["DEM", "TWI", "NDRE.Sd"]
    near = raster[features].sel(
        x=xr.DataArray(sensors["Easting"].values),
        y=xr.DataArray(sensors["Northing"].values),
        method="nearest",
    )
    train = near.to_dataframe()[features].reset_index(drop=True)
    ds = sd.aoa(train, raster[features], features=features).compute()
    xy = sensors.to_numpy()
    fig = plot_aoa(ds, points=xy)
    try:
        assert fig.axes[0].get_xlabel() == "x (metre)"
    finally:
        plt.close(fig)
    write_page(aoa_page(ds, points=xy), tmp_path / "farm")
    check_aoa_page(tmp_path / "farm", ds, None)
