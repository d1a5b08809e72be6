"""Issue 42, item 5: ``spatial_range`` (the range of spatial autocorrelation from a sampled
semivariogram, its block-bootstrap interval, the proposed block size and the flattery of
random folds) and ``soak info --spatial``; proved on Gaussian random fields of known range."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import soak_dask as sd
from soak_dask.app.cli import main
from soak_dask.spatial.flattery import block_folds, random_folds, round_up, training_distances

from ..conftest import shared_file

RANGE = 8.0  # effective range of the test fields, in cells


def field_table(shape=(48, 48), range_=RANGE, seed=0, **load) -> sd.Table:
    df = sd.gaussian_random_field(shape, range_, seed=seed)
    df["band"] = np.arange(len(df), dtype=np.float64)
    return sd.load_table(df, label="value", coords=["x", "y"], **load)


@pytest.fixture(scope="module")
def fitted() -> sd.SpatialRange:
    return sd.spatial_range(field_table(seed=4), n_boot=30, seed=4)


def test_the_field_has_the_covariance_it_is_drawn_with():
    """Variance ≈ sill and correlation at lag 4 ≈ exp(-3 · 4 / range), over 12 fields."""
    var, cov = [], []
    for seed in range(12):
        v = sd.gaussian_random_field((40, 40), RANGE, seed=seed, sill=2.0)["value"].to_numpy()
        v = v.reshape(40, 40)
        var.append(v.var())
        cov.append(np.mean((v[:, :-4] - v.mean()) * (v[:, 4:] - v.mean())))
    assert np.mean(var) == pytest.approx(2.0, rel=0.15)
    assert np.mean(cov) / np.mean(var) == pytest.approx(np.exp(-3 * 4 / RANGE), abs=0.08)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 4])
def test_the_proposed_block_size_is_within_a_factor_of_1_5_of_the_true_range(seed):
    res = sd.spatial_range(field_table(seed=seed), n_boot=20, seed=seed)
    assert RANGE / 1.5 <= res.block_size <= RANGE * 1.5
    assert res.range <= res.block_size < 1.34 * res.range
    assert res.kind == "numeric" and res.model == "exponential"
    assert res.nugget == pytest.approx(0.0, abs=0.15)  # no noise in the field


def test_the_interval_holds_the_estimate_and_the_truth(fitted):
    low, high = fitted.range_interval
    assert low < fitted.range < high
    assert low < RANGE < high


def test_random_folds_flatter_more_than_blocks(fitted):
    """Random folds leave every test cell next to a training cell (1 cell away); blocks of
    the range move the median test cell farther from its nearest training cell."""
    assert fitted.share_random == 1.0
    assert fitted.median_random == 1.0
    assert fitted.median_blocks >= 2.0
    assert fitted.share_blocks <= fitted.share_random


def test_the_variogram_frame_and_the_printout(fitted):
    v = fitted.variogram
    assert list(v.columns) == [
        "bin", "low", "high", "distance", "semivariance", "pairs", "rows", "fitted"
    ]  # fmt: skip
    assert (v["low"] <= v["distance"]).all() and (v["distance"] < v["high"]).all()
    assert v["pairs"].min() > 1000 and v["high"].max() == pytest.approx(fitted.max_distance)
    # Short distances are more alike than long ones on a correlated field.
    assert v["semivariance"].iloc[0] < 0.5 * v["semivariance"].iloc[-1]
    text = str(fitted)
    assert f"suggested --blocks {fitted.block_size:g}" in text
    assert "random folds put 100 % of test rows within" in text
    assert "longitude" not in text  # a grid of unit cells is not degrees


@pytest.mark.slow
def test_the_same_seed_gives_the_same_result_whatever_the_partitions():
    shape = (36, 36)
    one = sd.spatial_range(field_table(shape, seed=2), sample=1000, n_boot=10, seed=3)
    many = sd.spatial_range(
        field_table(shape, seed=2, rows_per_partition=300), sample=1000, n_boot=10, seed=3
    )
    assert one == many and one.n_sampled == 1000 and one.n_rows == 36 * 36
    pd.testing.assert_frame_equal(one.variogram, many.variogram)
    other = sd.spatial_range(field_table(shape, seed=2), sample=1000, n_boot=0, seed=4)
    assert not other.variogram.equals(one.variogram)  # another seed, another sample


@pytest.mark.slow
def test_a_class_label_is_the_indicator_semivariogram():
    """Two classes: half the share of differing pairs, which is the 0/1 label's
    semivariogram; its range still finds the field's."""
    df = sd.gaussian_random_field((48, 48), RANGE, seed=1)
    df["band"] = 1.0
    df["cls"] = np.where(df["value"] > 0, "high", "low")
    df["one"] = (df["value"] > 0).astype(np.float64)
    classes = sd.spatial_range(
        sd.load_table(df, label="cls", coords=["x", "y"], features=["band"]), n_boot=0
    )
    numeric = sd.spatial_range(
        sd.load_table(df, label="cls", coords=["x", "y"], features=["one"]), of="one", n_boot=0
    )
    assert classes.kind == "classes" and numeric.kind == "numeric"
    pd.testing.assert_frame_equal(classes.variogram, numeric.variogram)
    assert classes.variogram["semivariance"].max() <= 0.5
    assert RANGE / 2 <= classes.range <= RANGE * 2
    assert np.isnan(classes.range_interval).all()  # n_boot=0: no interval


def test_a_residual_column_kept_as_a_feature_can_be_measured():
    df = sd.gaussian_random_field((30, 30), RANGE, seed=5, name="residual")
    df["label"] = np.arange(len(df)) % 2
    t = sd.load_table(df, label="label", coords=["x", "y"], features=["residual"])
    res = sd.spatial_range(t, of="residual", n_boot=0)
    assert res.of == "residual" and res.kind == "numeric"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"of": "nope"}, r"of='nope': not a column of the table \(it holds"),
        ({"of": "x"}, "of='x' is a coordinate column"),
        ({"model": "cubic"}, "model='cubic': choose one of"),
        ({"sample": 5}, "sample=5: need an integer of at least 10"),
        ({"n_bins": 2.5}, "n_bins=2.5: need an integer of at least 3"),
        ({"max_distance": -1.0}, "max_distance=-1.0: need a positive number"),
        ({"seed": -1}, "seed=-1: need an integer"),
        ({"n_folds": 1}, "n_folds=1: need an integer of at least 2"),
    ],
)
def test_bad_options_are_refused_naming_them(options, message):
    with pytest.raises(ValueError, match=message):
        sd.spatial_range(field_table(shape=(6, 6)), **options)


def test_a_table_without_coordinates_or_with_gaps_is_refused():
    df = sd.gaussian_random_field((6, 6), 2.0)
    df["band"] = 1.0
    with pytest.raises(ValueError, match="needs the table's coordinates: load it with coords="):
        sd.spatial_range(sd.load_table(df, label="value", features=["band"]))
    with pytest.raises(TypeError, match="takes a Table, not a DataFrame"):
        sd.spatial_range(df)
    df.loc[3, "x"] = np.nan
    df.loc[[4, 5], "band"] = np.nan
    t = sd.load_table(df, label="value", coords=["x", "y"], features=["band"])
    with pytest.raises(ValueError, match=r"1 rows have a coordinate \(x, y\) that is not finite "
                       "and 2 rows miss 'band'"):  # fmt: skip
        sd.spatial_range(t, of="band")


def test_degrees_are_noted():
    df = sd.gaussian_random_field((20, 20), 5.0, spacing=0.001, seed=1)
    df["x"] -= 111.6
    df["y"] += 35.2
    df["band"] = 1.0
    res = sd.spatial_range(sd.load_table(df, label="value", coords=["x", "y"]), n_boot=0)
    assert any("longitude and latitude" in note for note in res.notes)
    unit = sd.spatial_range(
        sd.load_table(df, label="value", coords=["x", "y"]), n_boot=0, unit="degrees"
    )
    assert not any("longitude" in note for note in unit.notes)
    assert "degrees" in str(unit)


@given(st.floats(min_value=1e-6, max_value=1e9, allow_nan=False))
def test_round_up_is_a_round_number_at_most_a_third_above(value):
    r = round_up(value)
    assert value * (1 - 1e-9) <= r <= value * 4 / 3 * (1 + 1e-9)
    mantissa = r / 10 ** np.floor(np.log10(r) + 1e-9)
    assert min(abs(mantissa - m) for m in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10)) < 1e-6


def test_folds_and_training_distances():
    xy = np.column_stack([np.arange(100.0), np.zeros(100)])
    folds = random_folds(xy, 5, 1)
    assert set(folds) == set(range(5))
    assert (random_folds(xy[::-1], 5, 1) == folds[::-1]).all()  # by coordinates, not order
    blocks = block_folds(xy, 10.0, 5, 1)
    assert all(len(set(blocks[i : i + 10])) == 1 for i in range(0, 100, 10))  # a block, a fold
    assert (training_distances(xy, folds) >= 1).all()
    assert np.isinf(training_distances(xy, np.zeros(100, dtype=np.int64))).all()


def test_plot_marks_the_range_and_the_block_size(fitted):
    import matplotlib

    matplotlib.use("Agg")
    fig = sd.plot_variogram(fitted)
    ax = fig.axes[0]
    assert ax.get_xlabel() == "distance (coordinate units)"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert f"block size {fitted.block_size:g}" in labels
    assert any(label.startswith("range ") for label in labels)
    with pytest.raises(TypeError, match="takes a SpatialRange"):
        sd.plot_variogram(fitted.variogram)


@pytest.mark.slow
def test_soak_info_spatial_prints_the_range_and_the_blocks(tmp_path, capsys):
    df = sd.gaussian_random_field((40, 40), RANGE, seed=3)
    df["band"] = 1.0
    path = tmp_path / "field.parquet"
    df.to_parquet(path)
    argv = ["info", str(path), "--label", "value", "--coords", "x,y"]
    assert main([*argv, "--spatial", "--unit", "m"]) == 0
    out = capsys.readouterr().out
    assert "rows:     1,600" in out and "spatial range of 'value'" in out
    assert "suggested --blocks" in out and " m of a training row" in out
    # The note a short semivariogram gives names the flag that lengthens it.
    assert main([*argv, "--spatial", "--spatial-max-distance", "5", "--unit", "m"]) == 0
    out = capsys.readouterr().out
    assert "largest distance measured (5 m)" in out and "--spatial-max-distance" in out
    assert main([*argv, "--spatial-model", "gaussian"]) == 2
    assert "--spatial-model without --spatial does nothing" in capsys.readouterr().err
    assert main(["info", str(path), "--label", "value", "--spatial"]) == 2
    assert "needs the table's coordinates" in capsys.readouterr().err


@pytest.mark.slow
def test_aztrees_runs_and_notes_its_degrees():
    df = pd.read_parquet(shared_file("aztrees.parquet"))
    features = [c for c in df.columns if c.startswith("SAMPLE_")]
    t = sd.load_table(df, label="y", coords=["xcoord", "ycoord"], features=features)
    res = sd.spatial_range(t, n_boot=30)
    assert res.kind == "classes" and res.n_rows == res.n_sampled == len(df)
    assert 0 < res.range < 1 and res.block_size >= res.range  # degrees: a few km to ~50 km
    assert res.median_blocks > 100 * res.median_random  # pixels touch; blocks move them apart
    assert any("longitude and latitude" in note for note in res.notes)
    spherical = sd.spatial_range(t, model="spherical", n_boot=0)
    # The sill of a 0/1 label levels off at its variance, p (1 - p), here about 0.1.
    p = (df["y"] == "Tree").mean()
    assert spherical.sill == pytest.approx(p * (1 - p), rel=0.2)
    assert spherical.range < res.range
