"""Learners that train across the workers (xgboost's Dask estimators): each train set handed to
the learner as a Dask collection, the fitted model scoring its test rows partition by
partition; within noise of the same learner fitted in memory; refused up front without a
cluster, wrapped, down-sampled, or larger than the workers' share of memory."""

from __future__ import annotations

import distributed
import numpy as np
import pandas as pd
import pytest

import soak_dask as sd
from soak_dask.run.across_workers import across_bytes, check_across_memory, check_client
from soak_dask.workers import FitMemoryError
from tests.conftest import task_memory

xgboost = pytest.importorskip("xgboost")

QUIET = {"seed": 3, "options": sd.RunOptions(progress=False)}


def _frame(n: int = 3000, regression: bool = False, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    signal = X[:, 0] - 0.7 * X[:, 1] * X[:, 2] + 0.5 * rng.normal(size=n)
    label = signal if regression else np.where(signal > 0, "yes", "no")
    return pd.DataFrame(X, columns=["a", "b", "c", "d"]).assign(
        y=label, region=np.where(rng.random(n) < 0.5, "N", "S"), fold=rng.integers(1, 4, n)
    )


@pytest.fixture(scope="module")
def client(cluster):
    with distributed.Client(cluster) as client:
        yield client


def _in_memory(frame: pd.DataFrame, test_subset: str, fold: int, regression: bool) -> float:
    """Error (or MSE) of xgboost fitted in memory on the 'all' train set of one SOAK cell."""
    train = frame[frame["fold"] != fold]
    test = frame[(frame["fold"] == fold) & (frame["region"] == test_subset)]
    features = ["a", "b", "c", "d"]
    if regression:
        model = xgboost.XGBRegressor(random_state=3).fit(train[features], train["y"])
        return float(np.mean((model.predict(test[features]) - test["y"]) ** 2))
    codes = (train["y"] == "yes").astype(int)
    model = xgboost.XGBClassifier(random_state=3).fit(train[features], codes)
    return float(100 * np.mean(model.predict(test[features]) != (test["y"] == "yes")))


@pytest.mark.slow
@pytest.mark.parametrize("regression", [False, True])
def test_trained_across_the_workers_within_noise_of_in_memory(client, regression):
    frame = _frame(regression=regression)
    table = sd.load_table(frame, label="y", subset="region", fold="fold")
    res = sd.soak(table, ["featureless", "xgboost"], train_types=["all"], **QUIET)
    measure = "mse" if regression else "error"
    got = res[measure].sel(learner="xgboost", train_type="all")
    gaps = []
    for subset in ("N", "S"):
        for fold in (1, 2, 3):
            here = float(got.sel(test_subset=subset, fold=fold))
            gaps.append(here - _in_memory(frame, subset, fold, regression))
    baseline = float(res[measure].sel(learner="featureless", train_type="all").mean())
    # Quantile sketches merged over two workers split a few bins apart from one in memory:
    # the gap is noise, small beside what the model learns over the featureless baseline.
    assert float(got.mean()) < 0.6 * baseline
    assert np.max(np.abs(gaps)) < 0.1 * baseline
    n_train = res["n_train"].sel(learner="xgboost", train_type="all", test_subset="N")
    assert n_train.values.tolist() == [int((frame["fold"] != k).sum()) for k in (1, 2, 3)]


@pytest.mark.slow
def test_its_final_model_predicts_labels_prior_corrected_and_is_saved(client, tmp_path):
    frame = _frame(n=2000)
    table = sd.load_table(frame.drop(columns="region"), label="y", fold="fold")
    res = sd.evaluate(table, ["xgboost"], outer="cv", test_split=0.2, models=tmp_path, **QUIET)
    assert res.attrs["prior_correction"]  # evaluate's default: the correction of its learner
    assert 5 < float(res["test_error"].sel(learner="xgboost", interval="estimate")) < 30
    xgb_types = ["xgboost.core.Booster", "xgboost.dask.DaskXGBClassifier"]
    xgb_types.append("xgboost.sklearn.XGBClassifier")  # xgboost's own, trusted by the caller
    model = sd.load_model(tmp_path / "xgboost.skops", trusted=xgb_types).estimator
    shares = frame["y"].value_counts(normalize=True)
    assert abs(model.priors_[list(model.classes_).index("yes")] - shares["yes"]) < 0.05
    assert set(model.predict(frame[["a", "b", "c", "d"]].to_numpy()[:50])) <= {"yes", "no"}


@pytest.mark.slow  # the session's cluster of worker processes
def test_the_dry_run_names_where_it_fits_and_its_peak_per_worker(client):
    table = sd.load_table(_frame(), label="y", subset="region", fold="fold")
    cost = sd.dry_run(sd.soak, table, ["featureless", "xgboost"], **QUIET)[0]
    rows = cost.fits[cost.fits["learner"] == "xgboost"]
    assert set(rows["strategy"]) == {"across the workers"}
    top = int(rows["train"].max())
    assert int(rows["peak_bytes"].max()) == across_bytes(top, 4, 2)
    assert "the rows of each across-workers fit" in str(cost)


def test_refused_without_a_cluster():
    # The run's client is the current one (a test of this module may have started one):
    # the check the strategy and the final model make before any fit.
    with pytest.raises(ValueError, match="'xgboost' trains across a Dask cluster's workers"):
        check_client(None, "xgboost")


@pytest.mark.slow  # the session's cluster of worker processes
def test_refused_when_the_run_wraps_it(client):
    table = sd.load_table(_frame(n=300), label="y", fold="fold")
    with pytest.raises(ValueError, match=r"\['xgboost'\] train across the workers"):
        sd.evaluate(table, ["xgboost"], calibration="platt", prior_correction=False, **QUIET)


@pytest.mark.slow  # the session's cluster of worker processes
def test_refused_when_a_train_set_is_down_sampled(client):
    table = sd.load_table(_frame(n=600), label="y", subset="region", fold="fold")
    with pytest.raises(ValueError, match="down-samples its train set to a number of groups"):
        sd.soak(table, ["xgboost"], sizes=0, **QUIET)


def test_refused_when_a_workers_share_does_not_fit():
    rows = pd.Series({0: 1_000, 7: 2_000_000})
    memory = task_memory(free=across_bytes(2_000_000, 20, 4) - 1)
    with pytest.raises(FitMemoryError, match=r"fit 7 of learner 'xgboost' trains across the "
                       r"cluster's 4 workers: its 2,000,000 train rows × 20 features"):  # fmt: skip
        check_across_memory(rows, "xgboost", 20, memory, 4)
    check_across_memory(rows, "xgboost", 20, task_memory(across_bytes(2_000_000, 20, 4)), 4)
