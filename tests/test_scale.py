"""Memory-bounded paths: one-pass statistics, incremental partial_fit, max_train_rows."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.linear_model import RidgeClassifier, SGDClassifier
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import soak_dask as sd
from soak_dask.demo import make_pixel_table

TIMINGS = ["fit_seconds", "predict_seconds"]


@pytest.fixture(scope="module")
def table():
    df = make_pixel_table(n_pixels=4000, n_regions=3, n_bands=6, seed=2)
    return sd.load_table(df, label="label", subset="region", exclude=["x", "y", "polygon"])


@pytest.mark.parametrize("npartitions", [1, 20])
def test_one_pass_equals_fitting_on_rows(table, npartitions):
    # 20 partitions: the partial scores go through a tree of merges (fan-in 8).
    table = sd.Table(**{**table.__dict__, "data": table.data.repartition(npartitions=npartitions)})
    learners = {
        "featureless": "featureless",
        "lda": LinearDiscriminantAnalysis(),
        "nb": GaussianNB(),
        "ridge": make_pipeline(StandardScaler(), RidgeClassifier(alpha=2.0)),
    }
    fast = sd.soak(table, learners, n_folds=4, progress=False)
    slow = sd.soak(table, learners, n_folds=4, progress=False, onepass=False)
    assert fast.attrs["onepass"] == 1 and slow.attrs["onepass"] == 0
    for name in ["error", "accuracy", "auc", "log_loss", "n_train", "n_test"]:
        np.testing.assert_allclose(fast[name], slow[name], rtol=1e-9, atol=1e-12, err_msg=name)


def test_incremental_partial_fit(table):
    sgd = make_pipeline(StandardScaler(), SGDClassifier(random_state=0))
    assert not hasattr(sgd, "partial_fit")  # a pipeline cannot learn block by block
    learners = {"sgd": SGDClassifier(loss="log_loss", random_state=0), "base": "featureless"}
    data = table.data.repartition(npartitions=4)
    parts = sd.Table(**{**table.__dict__, "data": data})
    one = sd.soak(parts, learners, n_folds=3, incremental=True, progress=False)
    again = sd.soak(parts, learners, n_folds=3, incremental=True, progress=False)
    xr.testing.assert_identical(one.drop_vars(TIMINGS), again.drop_vars(TIMINGS))
    full = sd.soak(parts, learners, n_folds=3, progress=False)
    # Every train row reached partial_fit exactly once per epoch.
    xr.testing.assert_equal(one["n_train"], full["n_train"])
    two = sd.soak(parts, learners, n_folds=3, incremental=True, epochs=2, progress=False)
    xr.testing.assert_equal(two["n_train"], full["n_train"])
    assert not np.allclose(two["log_loss"].sel(learner="sgd"), one["log_loss"].sel(learner="sgd"))
    err = one["error"].sel(train_type="same").mean("fold")
    assert (err.sel(learner="sgd") <= err.sel(learner="base")).all()
    assert err.sel(learner="sgd").mean() < err.sel(learner="base").mean() - 3


def test_max_train_rows_samples_train_sets(table):
    full = sd.soak(table, "featureless", n_folds=4, progress=False)
    capped = sd.soak(table, "featureless", n_folds=4, max_train_rows=500, progress=False)
    assert capped.attrs["max_train_rows"] == 500
    n = capped["n_train"].values
    assert (n > 380).all() and (n < 620).all()
    xr.testing.assert_equal(capped["n_test"], full["n_test"])
    again = sd.soak(table, "featureless", n_folds=4, max_train_rows=500, progress=False)
    xr.testing.assert_identical(capped.drop_vars(TIMINGS), again.drop_vars(TIMINGS))
    with pytest.raises(ValueError, match="max_train_rows=0"):
        sd.soak(table, "featureless", n_folds=4, max_train_rows=0, progress=False)
