"""Tests of the generated pixel table (soak_dask.tables.generated)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from scipy import ndimage
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from soak_dask.tables.generated import make_pixel_table, write_pixel_parquet

PIXEL = 10.0  # metres per pixel in the generated scene


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return make_pixel_table(n_pixels=20_000, seed=0)


def band_columns(df: pd.DataFrame) -> list[str]:
    return [c for c in df.columns if c.startswith("B")]


# --- determinism ------------------------------------------------------------------------------


def test_same_seed_gives_identical_frame(table):
    pd.testing.assert_frame_equal(make_pixel_table(n_pixels=20_000, seed=0), table)


def test_different_seed_gives_different_frame(table):
    other = make_pixel_table(n_pixels=20_000, seed=1)
    assert not other.equals(table)
    assert not np.allclose(other["B01"].to_numpy(), table["B01"].to_numpy())


def test_region_shift_and_task_change_only_what_they_should(table):
    # Same seed: geometry, labels and noise are shared, so runs differ only by the setting.
    fixed = ["x", "y", "region", "polygon", "label"]
    shifted = make_pixel_table(n_pixels=20_000, seed=0, region_shift=3.0)
    pd.testing.assert_frame_equal(shifted[fixed], table[fixed])
    assert not np.allclose(shifted["B05"], table["B05"])
    regression = make_pixel_table(n_pixels=20_000, seed=0, task="regression")
    same = [c for c in table.columns if c != "label"]
    pd.testing.assert_frame_equal(regression[same], table[same])


# --- schema -----------------------------------------------------------------------------------


def test_columns_and_dtypes(table):
    assert list(table.columns) == ["x", "y", "region", "polygon", "label"] + [
        f"B{j:02d}" for j in range(1, 13)
    ]
    assert len(table) == 20_000
    assert table["x"].dtype == np.float64 and table["y"].dtype == np.float64
    assert table["polygon"].dtype == np.int64
    assert pd.api.types.is_string_dtype(table["region"])
    assert pd.api.types.is_string_dtype(table["label"])
    assert set(table["label"]) == {"tree", "other"}
    assert all(table[c].dtype == np.float32 for c in band_columns(table))
    bands = table[band_columns(table)].to_numpy()
    assert np.isfinite(bands).all() and bands.min() >= 0 and bands.max() < 1
    # Pixel centres lie on a 10 m grid.
    assert np.allclose((table["x"] / PIXEL - 0.5) % 1, 0)
    assert np.allclose((table["y"] / PIXEL - 0.5) % 1, 0)
    # Rows are ordered by polygon id.
    assert table["polygon"].is_monotonic_increasing


def test_bands_are_correlated(table):
    corr = np.corrcoef(table[band_columns(table)].to_numpy(), rowvar=False)
    neighbours = np.diag(corr, k=1)
    assert np.median(neighbours) > 0.8


def test_band_names_widen_with_many_bands():
    df = make_pixel_table(n_pixels=300, n_bands=120, seed=0)
    assert band_columns(df)[:2] == ["B001", "B002"] and band_columns(df)[-1] == "B120"
    assert band_columns(make_pixel_table(n_pixels=300, n_bands=1))[0] == "B01"


def test_regression_label_is_canopy_cover():
    df = make_pixel_table(n_pixels=10_000, seed=3, task="regression")
    assert df["label"].dtype == np.float64
    assert df["label"].between(0, 1).all()
    classes = make_pixel_table(n_pixels=10_000, seed=3)["label"]
    assert (
        df["label"][classes == "tree"].mean() > 0.5 > 0.2 > df["label"][classes == "other"].mean()
    )
    X = df[band_columns(df)].to_numpy()
    assert LinearRegression().fit(X, df["label"]).score(X, df["label"]) > 0.7


# --- geometry ---------------------------------------------------------------------------------


def test_polygons_never_span_two_regions_or_labels(table):
    per_polygon = table.groupby("polygon")[["region", "label"]].nunique()
    assert (per_polygon == 1).all().all()
    assert table["polygon"].nunique() == round(20_000 / 32)


def test_pixels_unique_and_polygons_compact_blobs():
    df = make_pixel_table(n_pixels=3_000, seed=4)
    assert not df.duplicated(["x", "y"]).any()
    for _, pix in df.groupby("polygon"):
        col = np.rint((pix["x"] - pix["x"].min()) / PIXEL).astype(int)
        row = np.rint((pix["y"].max() - pix["y"]) / PIXEL).astype(int)
        grid = np.zeros((row.max() + 1, col.max() + 1), dtype=bool)
        grid[row, col] = True
        # One piece (8-connected), and filling much of its bounding box: a blob, not a scatter.
        assert ndimage.label(grid, structure=np.ones((3, 3)))[1] == 1
        assert grid.size <= 4 * len(pix) + 4


def test_regions_are_spatial_tiles(table):
    box = table.groupby("region").agg(
        xmin=("x", "min"), xmax=("x", "max"), ymin=("y", "min"), ymax=("y", "max")
    )
    # Layout for 3 regions: NW and NE side by side in the north, S across the south.
    assert box.loc["NW", "xmax"] < box.loc["NE", "xmin"]
    assert box.loc["S", "ymax"] < min(box.loc["NW", "ymin"], box.loc["NE", "ymin"])
    # S covers half of the scene, so holds about half of the polygons.
    share = table.groupby("region")["polygon"].nunique() / table["polygon"].nunique()
    assert 0.45 < share["S"] < 0.55


@pytest.mark.parametrize(
    ("n_regions", "names"),
    [
        (1, ["R1"]),
        (2, ["N", "S"]),
        (3, ["NE", "NW", "S"]),
        (4, ["NE", "NW", "SE", "SW"]),
        (7, [f"R{i}" for i in range(1, 8)]),
    ],
)
def test_region_names_and_both_labels_in_every_region(n_regions, names):
    df = make_pixel_table(n_pixels=4_000, n_regions=n_regions, seed=5)
    assert sorted(df["region"].unique()) == sorted(names)
    labels_per_region = df.groupby("region")["label"].nunique()
    assert (labels_per_region == 2).all()


def test_smallest_possible_table_has_both_labels_in_every_region():
    df = make_pixel_table(n_pixels=6, n_regions=3)
    assert len(df) == 6 and df["polygon"].nunique() == 6
    assert (df.groupby("region")["label"].nunique() == 2).all()


@pytest.mark.parametrize("tree_fraction", [0.05, 0.12, 0.5])
def test_tree_fraction_near_target(tree_fraction):
    df = make_pixel_table(n_pixels=20_000, tree_fraction=tree_fraction, seed=2)
    is_tree = df["label"] == "tree"
    assert abs(is_tree.mean() - tree_fraction) < 0.01
    per_region = is_tree.groupby(df["region"]).mean()
    assert (abs(per_region - tree_fraction) < 0.03).all()


# --- region structure: what SOAK should detect ------------------------------------------------


def transfer_gaps(df: pd.DataFrame) -> np.ndarray:
    """Error on another region minus error on held-out polygons of the training region.

    Every third polygon is held out of training, in every region, so both test sets are
    unseen polygons and the gap measures the region difference alone.
    """
    X = df[band_columns(df)].to_numpy()
    y = (df["label"] == "tree").to_numpy()
    held_out = (df["polygon"] % 3 == 0).to_numpy()
    region = df["region"].to_numpy()
    gaps = []
    for train_region in np.unique(region):
        here = region == train_region
        model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
        model.fit(X[here & ~held_out], y[here & ~held_out])
        same = 1 - model.score(X[here & held_out], y[here & held_out])
        for test_region in np.unique(region):
            there = region == test_region
            if test_region != train_region:
                gaps.append(1 - model.score(X[there & held_out], y[there & held_out]) - same)
    return np.array(gaps)


def test_large_region_shift_makes_other_regions_worse():
    gaps = transfer_gaps(make_pixel_table(n_pixels=20_000, region_shift=3.0, seed=0))
    assert gaps.mean() > 0.1
    assert gaps.max() > 0.3


def test_no_region_shift_makes_regions_exchangeable():
    gaps = transfer_gaps(make_pixel_table(n_pixels=20_000, region_shift=0.0, seed=0))
    assert abs(gaps.mean()) < 0.015
    assert np.abs(gaps).max() < 0.04


def test_within_region_task_is_learnable_but_not_trivial(table):
    # Error on held-out polygons of the same region: well below the 12 % of always "other".
    X = table[band_columns(table)].to_numpy()
    y = (table["label"] == "tree").to_numpy()
    held_out = (table["polygon"] % 3 == 0).to_numpy()
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    model.fit(X[~held_out], y[~held_out])
    assert 0.002 < 1 - model.score(X[held_out], y[held_out]) < 0.06


# --- Parquet ----------------------------------------------------------------------------------


def test_write_pixel_parquet_round_trips(tmp_path):
    kwargs = {"n_pixels": 3_000, "n_regions": 4, "seed": 7}
    out = write_pixel_parquet(tmp_path / "pixels", n_files=3, **kwargs)
    assert out == tmp_path / "pixels"
    files = sorted(p.name for p in out.iterdir())
    assert files == ["part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]
    back = pd.read_parquet(out)
    pd.testing.assert_frame_equal(back, make_pixel_table(**kwargs), check_dtype=False)
    assert back["polygon"].dtype == np.int64 and back["B01"].dtype == np.float32
    meta = pq.read_schema(out / "part-00001.parquet").metadata[b"soak_dask.demo"]
    assert json.loads(meta) == kwargs


def test_write_pixel_parquet_refuses_to_overwrite(tmp_path):
    out = write_pixel_parquet(tmp_path / "pixels", n_files=4, n_pixels=500)
    before = pd.read_parquet(out)
    with pytest.raises(FileExistsError, match="pixels.*overwrite=True"):
        write_pixel_parquet(out, n_pixels=500, seed=1)
    pd.testing.assert_frame_equal(pd.read_parquet(out), before)
    # A bad argument fails before anything is deleted, even with overwrite=True.
    with pytest.raises(ValueError, match="n_regions"):
        write_pixel_parquet(out, n_pixels=500, n_regions=0, overwrite=True)
    pd.testing.assert_frame_equal(pd.read_parquet(out), before)
    # overwrite=True replaces the old files, fewer files included.
    write_pixel_parquet(out, n_files=2, n_pixels=400, seed=1, overwrite=True)
    assert len(list(out.glob("*.parquet"))) == 2
    pd.testing.assert_frame_equal(
        pd.read_parquet(out), make_pixel_table(n_pixels=400, seed=1), check_dtype=False
    )


def test_write_pixel_parquet_into_empty_dir_and_not_onto_a_file(tmp_path):
    (tmp_path / "empty").mkdir()
    assert len(pd.read_parquet(write_pixel_parquet(tmp_path / "empty", n_pixels=100))) == 100
    (tmp_path / "file").write_text("x")
    with pytest.raises(FileExistsError, match="not a directory"):
        write_pixel_parquet(tmp_path / "file", n_pixels=100)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"n_files": 0}, "n_files"),
        ({"n_files": 2.0}, "n_files"),
        ({"n_files": 11, "n_pixels": 10}, "n_files"),
    ],
)
def test_write_pixel_parquet_bad_n_files(tmp_path, kwargs, name):
    with pytest.raises(ValueError, match=name):
        write_pixel_parquet(tmp_path / "out", **kwargs)
    assert not (tmp_path / "out").exists()


# --- argument checks --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_regions": 0}, "n_regions=0"),
        ({"n_regions": 2.5}, "n_regions=2.5"),
        ({"n_regions": True}, "n_regions=True"),
        ({"n_pixels": 0}, "n_pixels=0"),
        ({"n_pixels": 5, "n_regions": 3}, r"n_pixels=5 is too small.*n_pixels >= 6"),
        ({"n_bands": 0}, "n_bands=0"),
        ({"n_polygons": 5, "n_regions": 3}, r"n_polygons=5.*n_polygons >= 6"),
        ({"n_polygons": 101, "n_pixels": 100}, r"n_pixels=100 is too small.*n_polygons=101"),
        ({"n_polygons": "many"}, "n_polygons='many'"),
        ({"tree_fraction": 0.0}, "tree_fraction=0.0"),
        ({"tree_fraction": 1.0}, "tree_fraction=1.0"),
        ({"tree_fraction": 12}, "tree_fraction=12"),
        ({"region_shift": -1.0}, "region_shift=-1.0"),
        ({"region_shift": float("nan")}, "region_shift=nan"),
        ({"seed": -1}, "seed=-1"),
        ({"seed": "0"}, "seed='0'"),
        ({"task": "segmentation"}, "task='segmentation'"),
    ],
)
def test_bad_arguments_raise_naming_the_parameter(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_pixel_table(**kwargs)
