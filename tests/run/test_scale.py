"""Memory-bounded paths: one-pass statistics, incremental partial_fit, max_train_rows."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.dummy import DummyClassifier
from sklearn.linear_model import RidgeClassifier, SGDClassifier
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import soak_dask as sd
from soak_dask.tables.generated import make_pixel_table

TIMINGS = ["fit_seconds", "predict_seconds"]


@pytest.fixture(scope="module")
def table():
    df = make_pixel_table(n_pixels=4000, n_regions=3, n_bands=6, seed=2)
    return sd.load_table(df, label="label", subset="region", exclude=["x", "y", "polygon"])


ONE_PASS_LEARNERS = {
    "featureless": "featureless",
    "lda": LinearDiscriminantAnalysis(),
    "nb": GaussianNB(),
    "ridge": make_pipeline(StandardScaler(), RidgeClassifier(alpha=2.0)),
}


def partitioned(table: sd.Table, npartitions: int) -> sd.Table:
    return sd.Table(**{**table.__dict__, "data": table.data.repartition(npartitions=npartitions)})


@pytest.fixture(scope="module")
def fitted_on_rows(table):
    """The learners fitted on their rows, one partition (scores do not depend on the
    partitions: tests/run/test_score_where_rows_are.py)."""
    return sd.soak(
        partitioned(table, 1),
        ONE_PASS_LEARNERS,
        n_folds=4,
        options=sd.RunOptions(progress=False, onepass=False),
    )


@pytest.fixture(scope="module")
def unfitted(table):
    """A run of the featureless learner: the train and test sets' sizes (read only)."""
    return sd.soak(table, "featureless", n_folds=4, options=sd.RunOptions(progress=False))


@pytest.mark.slow
@pytest.mark.parametrize("npartitions", [1, 20])
def test_one_pass_equals_fitting_on_rows(table, fitted_on_rows, npartitions):
    # 20 partitions: the partial scores go through a tree of merges (fan-in 8).
    fast = sd.soak(
        partitioned(table, npartitions),
        ONE_PASS_LEARNERS,
        n_folds=4,
        options=sd.RunOptions(progress=False),
    )
    slow = fitted_on_rows
    assert fast.attrs["onepass"] == 1 and slow.attrs["onepass"] == 0
    for name in ["error", "accuracy", "auc", "log_loss", "n_train", "n_test"]:
        np.testing.assert_allclose(fast[name], slow[name], rtol=1e-9, atol=1e-12, err_msg=name)


@pytest.mark.slow
def test_incremental_partial_fit(table):
    sgd = make_pipeline(StandardScaler(), SGDClassifier(random_state=0))
    assert not hasattr(sgd, "partial_fit")  # a pipeline cannot learn block by block
    learners = {"sgd": SGDClassifier(loss="log_loss", random_state=0), "base": "featureless"}
    data = table.data.repartition(npartitions=4)
    parts = sd.Table(**{**table.__dict__, "data": data})
    one = sd.soak(
        parts, learners, n_folds=3, options=sd.RunOptions(incremental=True, progress=False)
    )
    again = sd.soak(
        parts, learners, n_folds=3, options=sd.RunOptions(incremental=True, progress=False)
    )
    xr.testing.assert_identical(one.drop_vars(TIMINGS), again.drop_vars(TIMINGS))
    full = sd.soak(parts, learners, n_folds=3, options=sd.RunOptions(progress=False))
    # Every train row reached partial_fit exactly once per epoch.
    xr.testing.assert_equal(one["n_train"], full["n_train"])
    two = sd.soak(
        parts,
        learners,
        n_folds=3,
        options=sd.RunOptions(incremental=True, epochs=2, progress=False),
    )
    xr.testing.assert_equal(two["n_train"], full["n_train"])
    assert not np.allclose(two["log_loss"].sel(learner="sgd"), one["log_loss"].sel(learner="sgd"))
    err = one["error"].sel(train_type="same").mean("fold")
    assert (err.sel(learner="sgd") <= err.sel(learner="base")).all()
    assert err.sel(learner="sgd").mean() < err.sel(learner="base").mean() - 3


CLASS_COUNTS: list[tuple[int, ...]] = []


class ClassCounter(ClassifierMixin, BaseEstimator):
    """Majority-class classifier that records its train rows per class (threads: one process)."""

    def fit(self, X, y):
        CLASS_COUNTS.append(tuple(int((y == c).sum()) for c in ("other", "tree")))
        self.model_ = DummyClassifier().fit(X, y)
        self.classes_ = self.model_.classes_
        return self

    def predict(self, X):
        return self.model_.predict(X)


def _stratified(counts: tuple[int, ...], total: int) -> tuple[int, ...]:
    """Largest-remainder quotas of ``total`` rows (written out here, independently)."""
    exact = [n * total / sum(counts) for n in counts]
    quota = [int(e) for e in exact]
    by_remainder = sorted(range(len(counts)), key=lambda i: -(exact[i] - quota[i]))
    for i in by_remainder[: total - sum(quota)]:
        quota[i] += 1
    return tuple(quota)


@pytest.mark.parametrize("npartitions", [1, pytest.param(7, marks=pytest.mark.slow)])
def test_max_train_rows_is_an_exact_stratified_sample(table, unfitted, npartitions):
    full = unfitted  # its sizes at any partitioning
    table = partitioned(table, npartitions)
    CLASS_COUNTS.clear()
    capped = sd.soak(
        table,
        {"count": ClassCounter()},
        n_folds=4,
        options=sd.RunOptions(max_train_rows=500, progress=False),
    )
    assert capped.attrs["max_train_rows"] == 500
    # Every train set here has more than 500 rows: each is fitted on exactly 500, each class
    # keeping its share of the full train set.
    assert (full["n_train"] > 500).all()
    assert (capped["n_train"] == 500).all()
    np.testing.assert_array_equal(capped["n_test"], full["n_test"])
    folded = sd.assign_folds(table, 4, seed=1)  # the folds soak makes with the same seed
    rows = folded.data.compute()
    _, fits = sd.make_plan(sorted(rows["region"].unique()), 4)
    expected = []
    for _, fit in fits.iterrows():
        train = rows[rows["region"].isin(fit.train_subsets) & (rows[folded.fold] != fit.fold)]
        counts = tuple(int((train["label"] == c).sum()) for c in ("other", "tree"))
        expected.append(_stratified(counts, 500))
    assert sorted(CLASS_COUNTS) == sorted(expected)
    again = sd.soak(
        table,
        {"count": ClassCounter()},
        n_folds=4,
        options=sd.RunOptions(max_train_rows=500, progress=False),
    )
    xr.testing.assert_identical(capped.drop_vars(TIMINGS), again.drop_vars(TIMINGS))
    with pytest.raises(ValueError, match="max_train_rows=0"):
        sd.soak(
            table, "featureless", n_folds=4, options=sd.RunOptions(max_train_rows=0, progress=False)
        )


@pytest.mark.slow
def test_max_train_rows_with_incremental_learners_and_sizes(table):
    sgd = {"sgd": SGDClassifier(random_state=0)}
    res = sd.soak(
        table,
        sgd,
        n_folds=4,
        options=sd.RunOptions(incremental=True, max_train_rows=500, progress=False),
    )
    n = res["n_train"].values  # each row kept with its class's rate: 500 in expectation
    assert (n > 400).all() and (n < 600).all()
    with pytest.raises(ValueError, match=r"RunOptions\(incremental=True\) with sizes=0"):
        sd.soak(
            table, sgd, n_folds=4, sizes=0, options=sd.RunOptions(incremental=True, progress=False)
        )
    # Down-sampled train sets are capped after down-sampling (and never above their size).
    sized = sd.soak(
        table,
        "featureless",
        n_folds=4,
        sizes=0,
        options=sd.RunOptions(max_train_rows=300, progress=False),
    )
    n = sized["n_train"]
    assert (n.sel(train_size="full") == 300).all() and (n <= 300).all()
