"""End-to-end SOAK runs on real computation."""

from __future__ import annotations

import json
import threading
import warnings

import dask
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.dummy import DummyClassifier
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.model_selection import PredefinedSplit, cross_val_score, cross_validate

import soak_dask as sd

from ..conftest import AZTREES_FEATURES, toy_table

FITS: list[int] = []


class CountingClassifier(ClassifierMixin, BaseEstimator):
    """Majority-class classifier that counts its fits (threaded scheduler: one process)."""

    def fit(self, X, y):
        FITS.append(len(y))
        self.model_ = DummyClassifier().fit(X, y)
        self.classes_ = self.model_.classes_
        return self

    def predict(self, X):
        return self.model_.predict(X)


@pytest.mark.parametrize(("n_subsets", "expected"), [(3, 70), (2, 30), (1, 10)])
def test_only_distinct_train_sets_are_fitted(n_subsets, expected):
    FITS.clear()
    table = sd.load_table(toy_table(n_subsets=n_subsets), label="y", subset="subset")
    res = sd.soak(
        table, {"count": CountingClassifier()}, n_folds=10, options=sd.RunOptions(progress=False)
    )
    assert len(FITS) == expected
    assert res.attrs["n_distinct_train_sets"] == expected
    assert res.sizes["train_type"] == (1 if n_subsets == 1 else 3)
    assert (
        res.sizes["test_subset"] * 10 * res.sizes["train_type"] == {3: 90, 2: 60, 1: 10}[n_subsets]
    )


def test_one_subset_equals_scikit_learn_cross_val_score():
    df = toy_table(n=400, n_subsets=1, seed=4).drop(columns="subset")
    df["fold"] = np.random.default_rng(1).integers(1, 6, len(df))
    est = LogisticRegression()
    table = sd.load_table(df, label="y", fold="fold")
    res = sd.soak(
        table, {"lr": est}, measures=["accuracy", "error"], options=sd.RunOptions(progress=False)
    )
    assert list(res.train_type.values) == ["same"]
    X, y = df[["x0", "x1", "x2"]].to_numpy(), df["y"].to_numpy()
    expected = cross_val_score(est, X, y, cv=PredefinedSplit(df["fold"] - 1), scoring="accuracy")
    got = res["accuracy"].sel(learner="lr", train_type="same").squeeze("test_subset").values
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(res["error"].values.ravel(), 100 * (1 - expected), atol=1e-9)


@pytest.mark.slow
def test_distinct_fit_plan_equals_naive_loop():
    """The scores of the 3·S·K loop over every split equal the distinct-fit run's."""
    df = toy_table(n=360, n_subsets=3, seed=2)
    table = sd.load_table(df, label="y", subset="subset")
    res = sd.soak(
        table,
        {"lr": LogisticRegression()},
        n_folds=4,
        seed=9,
        options=sd.RunOptions(progress=False),
    )
    cv = sd.SameOtherAllCV(df["subset"], n_splits=4, random_state=9)
    X, y = df[["x0", "x1", "x2"]].to_numpy(), df["y"].to_numpy()
    naive = cross_validate(LogisticRegression(), X, y, cv=cv, scoring="accuracy")
    info = cv.split_info().assign(accuracy=naive["test_score"])
    for r in info.itertuples():
        got = res["accuracy"].sel(
            learner="lr", test_subset=r.test_subset, fold=r.fold, train_type=r.train_type
        )
        assert float(got) == pytest.approx(r.accuracy, abs=1e-12)


def test_regression_measures():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.normal(size=300), "s": np.repeat(["u", "v"], 150)})
    df["target"] = 2 * df["a"] + (df["s"] == "v") + rng.normal(scale=0.1, size=300)
    table = sd.load_table(df, label="target", subset="s")
    assert table.task == "regression"
    res = sd.soak(
        table,
        {"ols": LinearRegression(), "mean": "featureless"},
        n_folds=3,
        options=sd.RunOptions(progress=False),
    )
    assert res.attrs["measures"] == ["mse", "rmse", "mae", "r2"]
    np.testing.assert_allclose(res["rmse"] ** 2, res["mse"])
    same = res.sel(learner="ols", train_type="same")["mse"].mean()
    other = res.sel(learner="ols", train_type="other")["mse"].mean()
    assert same < other  # the intercept differs between subsets
    assert float(res.sel(learner="mean")["r2"].max()) < 0.1


def test_failed_fit_scores_nan_with_one_warning():
    df = toy_table(n=200, n_subsets=2, seed=1)
    df.loc[df["subset"] == "s0", "y"] = "yes"  # one class: "same" fits on s0 cannot be made
    table = sd.load_table(df, label="y", subset="subset")
    with pytest.warns(UserWarning, match="fits failed and score NaN") as record:
        res = sd.soak(
            table, {"lr": LogisticRegression()}, n_folds=3, options=sd.RunOptions(progress=False)
        )
    assert len([w for w in record if "fits failed" in str(w.message)]) == 1
    assert res["error"].sel(test_subset="s0", train_type="same").isnull().all()
    # With two subsets other(s1) is same(s0): the same failed fit.
    assert res["error"].sel(test_subset="s1", train_type="other").isnull().all()
    assert res["error"].sel(test_subset="s1", train_type=["same", "all"]).notnull().all()
    with pytest.raises(ValueError, match="class"):
        sd.soak(
            table,
            {"lr": LogisticRegression()},
            n_folds=3,
            options=sd.RunOptions(progress=False, error_score="raise"),
        )


def test_data_warnings_point_at_the_callers_line():
    """A warning about the data, however deep in the run path it was found, names the line
    that called soak, evaluate or transfer (as pvalues' warning does), not package code."""
    df = toy_table(n=200, n_subsets=2, seed=1)
    df.loc[df["subset"] == "s0", "y"] = "yes"  # a subset of one class
    table = sd.load_table(df, label="y", subset="subset")
    quiet = sd.RunOptions(progress=False)
    runs = {
        "soak": lambda: sd.soak(table, "featureless", n_folds=3, options=quiet),
        "transfer": lambda: sd.transfer(table, "featureless", n_folds=3, options=quiet),
    }
    for name, run in runs.items():
        with pytest.warns(UserWarning, match="subsets with one class") as record:
            run()
        found = [w for w in record if "subsets with one class" in str(w.message)]
        assert [w.filename for w in found] == [__file__], name
    # Any warning of the package (``user_warning.warn_user``): evaluate's, of a test split cut
    # out of the user's folds.
    df = toy_table(n=200, n_subsets=1, seed=2).assign(fold=np.arange(200) % 4 + 1)
    folded = sd.load_table(df, label="y", fold="fold")
    with pytest.warns(UserWarning, match="is cut out of") as record:
        sd.evaluate(folded, "featureless", test_split=0.2, options=quiet)
    assert {w.filename for w in record if "is cut out of" in str(w.message)} == {__file__}


@pytest.mark.slow
def test_aztrees_on_local_cluster_round_trips_through_zarr(aztrees, cluster, tmp_path):
    """Two worker processes, groups = polygon; same results as the local scheduler."""
    distributed = pytest.importorskip("distributed")
    table = sd.load_table(
        aztrees, label="y", subset="region3", group="polygon", features=AZTREES_FEATURES
    )
    learners = {"featureless": "featureless", "logistic": "logistic"}
    with distributed.Client(cluster):
        res = sd.soak(table, learners, n_folds=5, seed=1, options=sd.RunOptions(progress=False))
    assert dict(res.sizes) == {"learner": 2, "test_subset": 3, "fold": 5, "train_type": 3}
    assert res.attrs["group"] == "polygon" and res.attrs["n_distinct_train_sets"] == 35
    # Pixels of a polygon never straddle train and test: sizes add up per fold.
    n = res["n_train"].sel(learner="logistic", train_type="all") + res["n_test"].sel(
        learner="logistic", train_type="all"
    ).sum("test_subset")
    assert (n == len(aztrees)).all()
    # Logistic regression clearly beats the majority class where trees are common.
    err = res["error"].sel(train_type="same", test_subset=["NE", "S"]).mean("fold")
    assert (err.sel(learner="logistic") < err.sel(learner="featureless") - 10).all()
    store = tmp_path / "aztrees3.zarr"
    sd.save_results(res, store)
    back = sd.open_results(store)
    xr.testing.assert_identical(back, res)
    sd.save_results(res, tmp_path / "aztrees3.nc")
    xr.testing.assert_identical(sd.open_results(tmp_path / "aztrees3.nc"), res)
    # Same seed, local scheduler instead of two workers: the same scores.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # Real data: region S's polygons make its test folds differ in size, and SOAK says so.
        warnings.filterwarnings("ignore", message=r"test folds differ in size")
        local = sd.soak(table, learners, n_folds=5, seed=1, options=sd.RunOptions(progress=False))
    timing = ["fit_seconds", "predict_seconds"]
    xr.testing.assert_equal(local.drop_vars(timing), res.drop_vars(timing))


def test_pvalues_on_a_run():
    table = sd.load_table(toy_table(n=600, seed=5), label="y", subset="subset")
    res = sd.soak(
        table, {"lr": LogisticRegression()}, n_folds=5, options=sd.RunOptions(progress=False)
    )
    p = res.soak.pvalues(measures=["error"])
    assert len(p) == 3 * 2
    assert p["p"].between(0, 1).all()
    assert set(p["compare"]) == {"other", "all"}
    summary = res.soak.summary("error")
    assert len(summary) == 3 * 3


class ThreadRecorder(CountingClassifier):
    """Records the thread each fit runs in."""

    threads: set = set()

    def fit(self, X, y):
        ThreadRecorder.threads.add(threading.get_ident())
        return super().fit(X, y)


def test_a_configured_local_scheduler_is_used():
    table = sd.load_table(toy_table(n=400, n_subsets=2, seed=3), label="y", subset="subset")
    learners = {"rec": ThreadRecorder(), "base": "featureless"}
    threaded = sd.soak(table, learners, n_folds=3, options=sd.RunOptions(progress=False))
    ThreadRecorder.threads.clear()
    with dask.config.set(scheduler="sync"):
        synchronous = sd.soak(table, learners, n_folds=3, options=sd.RunOptions(progress=False))
    assert len(ThreadRecorder.threads) == 1  # every fit in the one scheduler thread
    timings = ["fit_seconds", "predict_seconds"]
    xr.testing.assert_identical(threaded.drop_vars(timings), synchronous.drop_vars(timings))


@pytest.fixture
def bars(monkeypatch):
    """The progress bars the engine opens, recorded (each stays readable once closed)."""
    from contextlib import contextmanager

    from soak_dask.run import executor

    opened = []
    real = executor.progress_bar

    @contextmanager
    def recording(*args, **kwargs):
        with real(*args, **kwargs) as bar:
            opened.append(bar)
            yield bar

    monkeypatch.setattr(executor, "progress_bar", recording)
    return opened


def test_progress_bar_counts_the_fits_of_n_fits(bars, tmp_path, capsys):
    # featureless is fitted from block statistics and scored by one task per test block
    # (several fits per task); the counting learner by one task per fit, which scores the
    # fit's test blocks (three for an "all" fit). The bar counts (fit, learner) pairs.
    table = sd.load_table(toy_table(n=300, n_subsets=3, seed=8), label="y", subset="subset")
    learners = {"count": CountingClassifier(), "base": "featureless"}
    res = sd.soak(
        table, learners, n_folds=4, options=sd.RunOptions(progress=True, checkpoint=tmp_path / "ck")
    )
    (bar,) = bars
    assert bar.total == bar.n == res.attrs["n_fits"] == 2 * 4 * 7
    assert f"{bar.total}/{bar.total}" in capsys.readouterr().err

    # Resumed: only the fits missing from the checkpoint are counted. A one-pass fit that
    # lost one of its test blocks is missing (it runs again whole).
    files = sorted((tmp_path / "ck").glob("task-*.json"))
    lost = {}
    for file in files:
        task = json.loads(file.read_text())
        key = (task["fit_id"], task["learner"])
        if len(lost) < 3 and (task["learner"] == "count" or len(task["records"]) == 1):
            lost.setdefault(key, []).append(file)
    for lost_files in lost.values():
        lost_files[0].unlink()
    resumed = sd.soak(
        table, learners, n_folds=4, options=sd.RunOptions(progress=True, checkpoint=tmp_path / "ck")
    )
    bar = bars[-1]
    # Every learner of a train set that lost one is made again (they are scored together).
    again = len(learners) * len({fit_id for fit_id, _ in lost})
    assert len(lost) == 3 and bar.total == bar.n == again
    out = capsys.readouterr().out
    n_fits = res.attrs["n_fits"]
    assert f"resuming, {n_fits - again} of {n_fits} fits already done" in out
    timing = ["fit_seconds", "predict_seconds"]
    xr.testing.assert_identical(resumed.drop_vars(timing), res.drop_vars(timing))


def test_unequal_test_folds_are_warned_and_summarised():
    # Subset s0 has two big groups (90 % of its rows), so its test folds differ widely.
    df = toy_table(n=600, n_subsets=2, seed=11)
    row = np.arange(len(df))
    big = (df["subset"] == "s0") & (row % 10 < 9)
    df["group"] = df["subset"] + "-" + df["y"] + "-" + np.where(big, "big", (row // 5).astype(str))
    table = sd.load_table(df, label="y", subset="subset", group="group")
    with pytest.warns(UserWarning, match="test folds differ in size") as caught:
        res = sd.soak(
            table, {"lr": LogisticRegression()}, n_folds=3, options=sd.RunOptions(progress=False)
        )
    n_test = res["n_test"].sel(learner="lr", train_type="same")
    s0, s1 = n_test.sel(test_subset="s0").values, n_test.sel(test_subset="s1").values
    assert s0.max() > 3 * s0.min() and s1.max() <= 3 * s1.min()
    (message,) = [str(w.message) for w in caught if "test folds differ" in str(w.message)]
    assert f"(s0: {s0.min():,} to {s0.max():,} rows)" in message
    assert "weighted_mean" in message

    summary = res.soak.summary("error").set_index(["test_subset", "train_type"])
    for train_type in ("same", "other", "all"):
        error = res["error"].sel(learner="lr", test_subset="s0", train_type=train_type).values
        got = summary.loc[("s0", train_type)]
        # The row-weighted mean of fold errors is the pooled error: wrong rows / test rows.
        wrong = np.round(error * s0 / 100)
        assert got["weighted_mean"] == pytest.approx(100 * wrong.sum() / s0.sum(), rel=1e-12)
        assert got["mean"] == pytest.approx(error.mean(), rel=1e-12)
        assert (got["n_test_min"], got["n_test_max"]) == (s0.min(), s0.max())
