"""Error profiles (soak_dask.spatial.error_profile): the moving-window errors by hand, the
monotone spline against isotonic regression, CV predictions against scikit-learn's, the DI of
each fold against its training points, the expected-error map lazy and in memory, writing, the
figures, CAST's farm and the CLI."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.isotonic import IsotonicRegression

import soak_dask as sd
from soak_dask.spatial.aoa_plot import axis_unit, plot_aoa, plot_error_profile
from soak_dask.spatial.error_profile import (
    error_profile,
    expected_error,
    monotone_spline,
    profile_values,
    window_errors,
)

from ..conftest import n_examples, shared_file
from .test_aoa import CAST_FEATURES, brute_force, cast_raster, cast_train


def synthetic(n: int = 90, seed: int = 0) -> pd.DataFrame:
    """Two predictors, a curved response (a linear model errs more far from the centre) and
    three folds."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2))
    y = x[:, 0] ** 2 + 0.5 * x[:, 1] + rng.normal(scale=0.1, size=n)
    return pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "y": y, "fold": np.arange(n) % 3})


def test_window_errors_by_hand():
    points = pd.DataFrame(
        {
            "di": [0.1, 0.2, 0.3, 0.4, 0.5],
            "observed": [1.0, 2.0, 3.0, 4.0, 5.0],
            "predicted": [1.0, 4.0, 3.0, 1.0, 5.0],  # errors 0, -2, 0, 3, 0
        }
    )
    rmse = window_errors(points, 3, "rmse")
    assert rmse["di"].tolist() == [0.2, 0.3, 0.4]  # each window's centre (zoo's "center")
    assert rmse["error"].to_numpy() == pytest.approx(np.sqrt([4 / 3, 13 / 3, 9 / 3]))
    mae = window_errors(points, 3, "mae")
    assert mae["error"].to_numpy() == pytest.approx([2 / 3, 5 / 3, 1.0])
    # An even window is centred as zoo centres one: on the lower middle.
    assert window_errors(points, 4, "mae")["di"].tolist() == [0.2, 0.3]
    classes = points.assign(observed=list("aabba"), predicted=list("abbaa"))
    assert window_errors(classes, 3, "error_rate")["error"].tolist() == pytest.approx(
        [1 / 3, 2 / 3, 1 / 3]
    )


def test_spline_reproduces_an_increasing_line_and_flattens_a_decreasing_one():
    x = np.linspace(0.1, 0.9, 20)
    knots, coef = monotone_spline(x, 2 * x + 1, 6)
    assert profile_values(x, knots, coef) == pytest.approx(2 * x + 1, abs=1e-9)
    # Held at the end values outside the fitted range; NaN stays NaN.
    ends = profile_values(np.array([0.0, 5.0, np.nan]), knots, coef)
    assert ends[:2] == pytest.approx([1.2, 2.8]) and np.isnan(ends[2])
    knots, coef = monotone_spline(x, 3 - x, 6)  # decreasing: the best monotone fit is flat
    assert profile_values(x, knots, coef) == pytest.approx(np.full(20, np.mean(3 - x)), abs=1e-9)


@settings(max_examples=n_examples(40), deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(6, 40), st.integers(4, 8))
def test_spline_is_monotone_and_between_isotonic_and_constant(seed, n, n_basis):
    """Every fit is non-decreasing; its squared error is no better than isotonic regression's
    (the best of all non-decreasing functions) and no worse than the mean's (a flat spline)."""
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(0, 2, n))
    y = np.sin(3 * x) + x + rng.normal(scale=0.3, size=n)
    n_basis = min(n_basis, n)
    knots, coef = monotone_spline(x, y, n_basis)
    fit = profile_values(x, knots, coef)
    grid = profile_values(np.linspace(-1, 3, 400), knots, coef)
    assert (np.diff(grid) >= -1e-12).all()
    sse = ((y - fit) ** 2).sum()
    iso = IsotonicRegression().fit_transform(x, y)
    assert ((y - iso) ** 2).sum() <= sse + 1e-9
    assert sse <= ((y - y.mean()) ** 2).sum() + 1e-9


def test_learner_predictions_are_scikit_learns_cross_val_predict():
    from sklearn.linear_model import LinearRegression
    from sklearn.model_selection import PredefinedSplit, cross_val_predict

    train = synthetic()
    profile = error_profile(train, folds="fold", learner="linear", features=["a", "b"], label="y")
    x, y = train[["a", "b"]].to_numpy(), train["y"].to_numpy()
    cv = PredefinedSplit(train["fold"].to_numpy())
    expected = cross_val_predict(LinearRegression(), x, y, cv=cv)
    rows = profile.points["row"].to_numpy()
    np.testing.assert_allclose(profile.points["predicted"].to_numpy(float), expected[rows])
    # Given those predictions (a column, as from a caret model's CV), the same profile.
    given_ = error_profile(
        train.assign(cv=expected), folds="fold", predictions="cv", features=["a", "b"], label="y"
    )
    np.testing.assert_array_equal(given_.coefficients, profile.coefficients)
    assert profile.metric == "rmse" and (np.diff(profile.points["di"]) >= 0).all()


def test_di_is_measured_against_each_folds_training_points():
    train = synthetic()
    profile = error_profile(train, folds="fold", learner="linear", features=["a", "b"], label="y")
    tdi, threshold, _ = brute_force(train, np.empty((0, 2)), ["a", "b"], train["fold"].to_numpy())
    rows = profile.points["row"].to_numpy()
    np.testing.assert_allclose(profile.points["di"].to_numpy(), tdi[rows], rtol=1e-12)
    assert profile.threshold == pytest.approx(threshold, rel=1e-12)
    # CAST keeps the points inside the AOA only.
    assert sorted(rows.tolist()) == np.flatnonzero(tdi <= threshold).tolist()
    assert profile.n_outside == int((tdi > threshold).sum())


def test_a_table_with_a_fold_column_and_classes():
    frame = synthetic(120).assign(cls=lambda d: np.where(d["y"] > 1, "high", "low"))
    table = sd.load_table(frame.drop(columns="y"), label="cls", features=["a", "b"], fold="fold")
    profile = error_profile(table, learner="logistic")
    assert profile.metric == "error_rate"
    assert set(profile.points["predicted"]) <= {"high", "low"}
    assert ((profile.windows["error"] >= 0) & (profile.windows["error"] <= 1)).all()


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"folds": None}, "folds is missing"),
        ({"learner": None}, "give either predictions .* not neither"),
        ({"predictions": [1.0] * 90}, "not both"),
        ({"learner": None, "predictions": [1.0] * 5}, "predictions has 5 values but train has 90"),
        ({"learner": None, "predictions": [np.nan] * 90}, "predictions has 90 missing values"),
        ({"window": 1}, "window=1: need an integer of at least 2"),
        ({"window": 80}, r"windows of 80, fewer than the n_basis=6"),
        ({"metric": "r2"}, r"metric='r2': choose one of"),
        ({"label": "nope"}, r"label columns \['nope'\] not in train"),
        ({"label": None}, "label is missing"),
    ],
)
def test_bad_input_is_refused(kwargs, match):
    options = {"folds": "fold", "learner": "linear", "features": ["a", "b"], "label": "y"}
    with pytest.raises(ValueError, match=match):
        error_profile(synthetic(), **{**options, **kwargs})


def test_numeric_metric_of_classes_is_refused():
    frame = synthetic().assign(cls=lambda d: np.where(d["y"] > 1, "high", "low"))
    with pytest.raises(ValueError, match="metric='rmse' needs a numeric label; 'cls' is"):
        error_profile(
            frame, folds="fold", learner="logistic", features=["a", "b"], label="cls", metric="rmse"
        )


# --- CAST's farm: the map, writing, figures ------------------------------------------------


@pytest.fixture(scope="module")
def farm():
    raster = cast_raster()
    train = cast_train(raster).assign(fold=lambda d: np.arange(len(d)) % 5)
    profile = error_profile(
        train, folds="fold", learner="random_forest", features=CAST_FEATURES, label="VW"
    )
    return raster, train, profile


@pytest.mark.slow
def test_cast_farm_profile_is_monotone(farm):
    """CAST records no error profile for its farm (its test uses splotdata): the shape is
    checked -- non-decreasing, within the windows' range, rising from the lowest DI to the
    threshold -- and the numbers are in the report."""
    _, train, profile = farm
    assert len(profile.points) + profile.n_outside == len(train) == 30
    grid = np.linspace(0, profile.threshold, 200)
    values = profile(grid)
    assert (np.diff(values) >= -1e-12).all() and values[-1] > values[0]
    errors = profile.windows["error"]
    assert errors.min() - 1e-9 <= values.min() and values.max() <= errors.max() + 1e-9


@pytest.mark.slow
def test_expected_error_map_lazy_equals_in_memory(farm):
    raster, train, profile = farm
    lazy = sd.aoa(train, raster.chunk({"y": 20, "x": 50}), features=CAST_FEATURES, folds="fold")
    error = expected_error(lazy, profile)
    assert error.chunks == lazy["di"].chunks and error.data.npartitions == 3 * 3
    whole = sd.aoa(train, raster, features=CAST_FEATURES, folds="fold").compute()
    in_memory = expected_error(whole["di"], profile)
    assert isinstance(in_memory.data, np.ndarray)
    xr.testing.assert_identical(error.compute(), in_memory)
    di = whole["di"].values
    np.testing.assert_array_equal(np.isnan(in_memory.values), np.isnan(di))
    np.testing.assert_array_equal(in_memory.values, profile(di))
    assert in_memory.attrs["metric"] == "rmse" and len(in_memory.attrs["coefficients"]) == 6


def test_write_expected_error_beside_di_and_aoa(farm, tmp_path):
    pytest.importorskip("rioxarray")
    import rioxarray

    raster, train, profile = farm
    ds = sd.aoa(train, raster.chunk({"y": 20, "x": 50}), features=CAST_FEATURES, folds="fold")
    ds = ds.assign(expected_error=expected_error(ds, profile))
    computed = ds.compute()
    back = sd.open_aoa(sd.write_aoa(ds, tmp_path / "aoa.zarr")).compute()
    xr.testing.assert_equal(back["expected_error"], computed["expected_error"])
    assert back["expected_error"].attrs["knots"] == profile.attrs()["knots"]
    image = rioxarray.open_rasterio(sd.write_aoa(ds, tmp_path / "aoa.tif"))
    assert image.attrs["long_name"] == ("di", "aoa", "expected_error")
    np.testing.assert_allclose(
        image.sel(band=3).values, computed["expected_error"].values, rtol=1e-6
    )


@pytest.mark.slow
def test_figures(farm):
    import matplotlib.pyplot as plt

    raster, train, profile = farm
    ds = sd.aoa(train, raster, features=CAST_FEATURES, folds="fold")
    ds = ds.assign(expected_error=expected_error(ds, profile))
    xy = np.c_[raster["x"].values[train["col"]], raster["y"].values[train["row"]]]
    fig = plot_aoa(ds, points=xy)
    fig.canvas.draw()
    maps = [ax for ax in fig.axes if ax.get_title()]
    assert len(maps) == 3 and "expected rmse" in maps[2].get_title()
    sizes = {tuple(np.round(ax.get_position().bounds[2:], 3)) for ax in maps}
    assert len(sizes) == 1  # three maps of one size
    assert len(fig.axes) == 5  # and two colour bars: DI (shared with the mask), expected error
    assert axis_unit(ds) == "metre" and maps[0].get_xlabel() == "x (metre)"
    assert all(len(ax.collections[0].get_offsets()) == 30 for ax in maps)  # the training points
    plt.close(fig)
    bare = plot_aoa(ds.drop_vars("expected_error").drop_vars("spatial_ref"))
    assert bare.axes[0].get_xlabel() == "x (coordinate units)" and len(bare.axes) == 3
    plt.close(bare)
    with pytest.raises(ValueError, match=r"points has shape \(30,\)"):
        plot_aoa(ds, points=xy[:, 0])
    fig = plot_error_profile(profile)
    line = fig.axes[0].lines[0].get_ydata()
    assert (np.diff(line) >= -1e-12).all() and fig.axes[0].get_xlabel() == "DI (dimensionless)"
    plt.close(fig)


# --- the command line ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "flags, match",
    [
        (["--error-profile", "--learner", "linear"], "--error-profile needs --folds and --label"),
        (["--error-profile", "--folds", "fold", "--label", "VW"], "not neither"),
        (["--label", "VW", "--window", "7"], "--label, --window only serve --error-profile"),
        (["--window", "1"], "'1': need an integer of at least 2"),
    ],
)
def test_cli_refuses_profile_flags_before_any_work(flags, match, tmp_path, capsys):
    from soak_dask.app import cli

    argv = [
        "aoa",
        "train.parquet",
        "raster.zarr",
        "--features",
        "DEM",
        "--out",
        str(tmp_path / "o"),
    ]
    assert cli.main([*argv, *flags]) != 0
    assert match in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_cli_error_profile_end_to_end(farm, tmp_path, capsys):
    import json

    from distributed import LocalCluster

    from soak_dask.app import cli

    raster, train, _ = farm
    train = train.assign(E=raster["x"].values[train["col"]], N=raster["y"].values[train["row"]])
    train.to_parquet(tmp_path / "train.parquet")
    tif = str(shared_file("cast", "predictors_2012-03-25.tif"))
    expected = error_profile(
        train, folds="fold", learner="linear", features=CAST_FEATURES, label="VW"
    )
    with LocalCluster(n_workers=1, processes=False, dashboard_address=":0") as cluster:
        argv = ["aoa", str(tmp_path / "train.parquet"), tif, "--features", ",".join(CAST_FEATURES)]
        argv += ["--folds", "fold", "--error-profile", "--label", "VW", "--learner", "linear"]
        argv += ["--points", "E,N", "--scheduler", cluster.scheduler_address]
        assert cli.main([*argv, "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert "error profile: expected rmse" in printed and "windows of 5 CV predictions" in printed
    out = tmp_path / "out"
    assert {"aoa.zarr", "aoa.png", "error_profile.png", "aoa.json"} <= {
        p.name for p in out.iterdir()
    }
    store = sd.open_aoa(out / "aoa.zarr").compute()
    np.testing.assert_array_equal(store["expected_error"].values, expected(store["di"].values))
    settings_ = json.loads((out / "aoa.json").read_text())
    assert settings_["error_profile"]["coefficients"] == expected.attrs()["coefficients"]
