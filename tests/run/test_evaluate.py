"""``evaluate``: the outer designs against scikit-learn, on real computation."""

from __future__ import annotations

import threading
import warnings

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.dummy import DummyClassifier
from sklearn.model_selection import (
    LeaveOneGroupOut,
    LeaveOneOut,
    PredefinedSplit,
    cross_val_score,
)
from sklearn.tree import DecisionTreeClassifier

import soak_dask as sd
from soak_dask.run.final_scores import interval
from soak_dask.run.fitting import RunSpec, predict_codes

TREE = DecisionTreeClassifier(max_depth=2, random_state=0)
TIMINGS = ["fit_seconds", "predict_seconds"]


def _frame(n: int = 120, seed: int = 0, n_groups: int = 8) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "row_id": np.arange(n, dtype=np.float64),
            "x0": rng.normal(size=n),
            "x1": rng.normal(size=n),
            "g": rng.integers(0, n_groups, n),
        }
    )
    df["y"] = np.where(df["x0"] + rng.normal(scale=0.7, size=n) > 0, "a", "b")
    return df


def _table(df: pd.DataFrame, **roles) -> sd.Table:
    return sd.load_table(df, label="y", features=["x0", "x1"], **roles)


def _accuracy(ds: xr.Dataset) -> np.ndarray:
    return ds["accuracy"].sel(learner="tree", repeat=1).values


@pytest.mark.parametrize("outer", ["loo", "lodo", "cv"])
def test_outer_designs_equal_scikit_learn(outer):
    df = _frame()
    X, y = df[["x0", "x1"]], df["y"]
    if outer == "loo":
        table, cv, groups = _table(df), LeaveOneOut(), None
    elif outer == "lodo":
        table, cv, groups = _table(df, group="g"), LeaveOneGroupOut(), df["g"]
    else:
        df["f"] = np.random.default_rng(1).integers(1, 5, len(df))
        table, cv, groups = _table(df, fold="f"), PredefinedSplit(df["f"] - 1), None
    # Plain predictions, as scikit-learn's (prior correction: tests/learn/test_nesting.py).
    ds = sd.evaluate(
        table,
        {"tree": TREE},
        outer=outer,
        measures=["accuracy"],
        prior_correction=False,
        options=sd.RunOptions(progress=False),
    )
    expected = cross_val_score(TREE, X, y, cv=cv, groups=groups, scoring="accuracy")
    np.testing.assert_allclose(_accuracy(ds), expected, rtol=0, atol=1e-12)
    assert ds.attrs["outer"] == outer and ds.attrs["design"] == "evaluate"


def test_loo_refuses_large_tables():
    table = _table(_frame(n=2100))
    with pytest.raises(ValueError, match=r"2,100 rows \(limit 2,000\); use outer='cv'"):
        sd.evaluate(table, "featureless", outer="loo", options=sd.RunOptions(progress=False))


class Recording(ClassifierMixin, BaseEstimator):
    """Majority class; records the row ids it is fitted on (threaded scheduler: one process)."""

    seen: list[frozenset] = []
    lock = threading.Lock()

    def fit(self, X, y):
        with self.lock:
            Recording.seen.append(frozenset(np.asarray(X)[:, 0].astype(int).tolist()))
        self.model_ = DummyClassifier().fit(X, y)
        self.classes_ = self.model_.classes_
        return self

    def predict(self, X):
        return self.model_.predict(X)


def test_repeated_cv_and_the_test_split():
    df = _frame(n=200)
    table = sd.load_table(df, label="y", features=["row_id", "x0"])
    Recording.seen = []
    ds = sd.evaluate(
        table,
        {"rec": Recording()},
        outer="repeated_cv",
        outer_folds=4,
        outer_repeats=3,
        test_split=0.2,
        measures=["error"],
        options=sd.RunOptions(progress=False),
    )
    assert dict(ds.sizes) == {"learner": 1, "repeat": 3, "fold": 4, "interval": 3}
    assert ds.attrs["test_split"] == 0.2 and int(ds["n_test_split"].item()) == 40
    outer_fits, final = Recording.seen[:-1], Recording.seen[-1]
    assert len(outer_fits) == 12 and len(set(outer_fits)) == 12  # new folds in each repeat
    reserved = set(range(200)) - final
    assert len(reserved) == 40
    assert all(not (reserved & fit) for fit in outer_fits)  # in no outer train set
    low, high = ds["test_error"].sel(interval=["low", "high"]).values[0]
    assert low <= ds["test_error"].sel(interval="estimate").item() <= high


def test_fold_caps_warn_and_record_the_value_used():
    df = _frame(n=60)
    df.loc[:3, "y"] = "rare"
    with pytest.warns(UserWarning, match=r"outer_folds=10 is more than the 4 rows of the rarest"):
        ds = sd.evaluate(
            _table(df), "featureless", outer_folds=10, options=sd.RunOptions(progress=False)
        )
    assert ds.attrs["outer_folds"] == ds.sizes["fold"] == 4
    with pytest.warns(UserWarning, match=r"outer_folds=10 is more than the 3 groups"):
        ds = sd.evaluate(
            _table(_frame(n_groups=3), group="g"),
            "featureless",
            outer_folds=10,
            options=sd.RunOptions(progress=False),
        )
    assert ds.attrs["outer_folds"] == 3


def test_lodo_warns_of_single_class_groups():
    df = _frame()
    df.loc[df["g"] == 2, "y"] = "a"
    with pytest.warns(UserWarning, match=r"1 of 8 groups hold a single class \(2\).*outer='cv'"):
        sd.evaluate(
            _table(df, group="g"),
            "featureless",
            outer="lodo",
            options=sd.RunOptions(progress=False),
        )


def test_bootstrap_out_of_bag_and_632():
    df = _frame(n=2000, seed=3)
    ds = sd.evaluate(
        _table(df),
        {"tree": TREE},
        outer="bootstrap",
        outer_repeats=4,
        measures=["error"],
        options=sd.RunOptions(progress=False),
    )
    oob_share = ds["n_test"].values / len(df)
    np.testing.assert_allclose(oob_share, np.exp(-1), atol=0.03)
    np.testing.assert_allclose(ds["n_train"].values, len(df), rtol=0.05)  # Poisson(1) counts
    resub = ds["error_resubstitution"]
    np.testing.assert_allclose(ds["error_632"], 0.368 * resub + 0.632 * ds["error"], rtol=1e-12)
    assert (ds["error_632plus"] >= ds["error_632"] - 1e-9).all()


@pytest.mark.slow
@pytest.mark.usefixtures("few_interval_draws")
def test_same_seed_same_results_whatever_the_partitioning():
    df = _frame(n=300)
    runs = []
    for parts in (1, 5):
        table = _table(dd.from_pandas(df, npartitions=parts), group="g")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for outer in ("repeated_cv", "bootstrap", "subsampling"):
                ds = sd.evaluate(
                    table,
                    {"tree": TREE},
                    outer=outer,
                    **{"outer_folds": 3} if outer == "repeated_cv" else {},
                    outer_repeats=2,
                    test_split=0.25,
                    seed=5,
                    options=sd.RunOptions(progress=False),
                )
                runs.append(ds.drop_vars([v for v in ds.data_vars if v.endswith("_seconds")]))
    for a, b in zip(runs[:3], runs[3:], strict=True):
        xr.testing.assert_identical(a.drop_attrs(), b.drop_attrs())


def test_bad_options_are_named():
    table = _table(_frame())
    with pytest.raises(ValueError, match="outer='kfold' is not a strategy"):
        sd.evaluate(table, outer="kfold", options=sd.RunOptions(progress=False))
    with pytest.raises(ValueError, match=r"test_split=0.8: need a share from 0"):
        sd.evaluate(table, test_split=0.8, options=sd.RunOptions(progress=False))
    with pytest.raises(ValueError, match="outer_folds=1: need an integer of at least 2"):
        sd.evaluate(table, outer_folds=1, options=sd.RunOptions(progress=False))
    with pytest.raises(ValueError, match="load the table with group="):
        sd.evaluate(table, outer="lodo", options=sd.RunOptions(progress=False))


def test_final_model_is_a_fit_on_all_training_rows_and_saves_safely(tmp_path):
    df = _frame(n=300)
    table = sd.load_table(df, label="y", features=["row_id", "x0", "x1"])
    tree = DecisionTreeClassifier(max_depth=3, random_state=0)
    Recording.seen = []
    ds = sd.evaluate(
        table,
        {"tree": tree, "rec": Recording()},
        test_split=0.2,
        measures=["accuracy"],
        prior_correction=False,
        models=tmp_path / "models",
        options=sd.RunOptions(progress=False),
    )
    train_ids = sorted(Recording.seen[-1])  # the final fit saw every training row
    train = df.set_index("row_id", drop=False).loc[train_ids]
    direct = clone(tree).fit(train[["row_id", "x0", "x1"]].to_numpy(), train["y"])
    saved = sd.load_model(tmp_path / "models" / "tree.skops", trusted=["sklearn.tree._tree.Tree"])
    assert saved.features == ("row_id", "x0", "x1") and saved.label == "y"
    np.testing.assert_array_equal(saved.estimator.tree_.value, direct.tree_.value)
    lazy = dd.from_pandas(df, npartitions=6)
    predicted = sd.predict_table(saved, lazy).compute()
    np.testing.assert_array_equal(
        predicted.to_numpy(), direct.predict(df[["row_id", "x0", "x1"]].to_numpy())
    )
    held = df.drop(index=train_ids)
    accuracy = np.mean(direct.predict(held[["row_id", "x0", "x1"]].to_numpy()) == held["y"])
    assert ds["test_accuracy"].sel(learner="tree", interval="estimate").item() == pytest.approx(
        accuracy
    )


@pytest.mark.slow
@pytest.mark.usefixtures("few_interval_draws")
def test_folds_from_assign_folds_beside_a_test_split():
    table = sd.assign_folds(_table(_frame(n=200), group="g"), 4, stratify=False)
    with pytest.warns(UserWarning, match="cut out of the folds of assign_folds"):
        ds = sd.evaluate(
            table, "featureless", test_split=0.25, options=sd.RunOptions(progress=False)
        )
    assert ds.sizes["fold"] == 4  # whole groups: the share of rows to within a group
    assert abs(ds.attrs["test_split"] - 0.25) * 200 <= _frame(n=200)["g"].value_counts().max()


def test_test_split_interval_resamples_groups():
    df = _frame(n=200)
    X, y = df[["x0", "x1"]].to_numpy(), (df["y"] == "b").to_numpy().astype(np.int64)
    model = clone(TREE).fit(X, y)
    run = RunSpec(("x0", "x1"), "y", "s", "", ("error", "auc"), classes=(0, 1), seed=3)
    predicted = predict_codes(model, X, run)
    rows = interval(y, *predicted, run)
    # groups of one row are rows: the same estimates, bounds within the resampling's noise
    ones = interval(y, *predicted, run, groups=np.arange(len(y)))
    for m in run.measures:
        assert ones[m][0] == rows[m][0]
        np.testing.assert_allclose(ones[m][1:], rows[m][1:], atol=0.1 * np.ptp(rows[m][1:]))
    grouped = interval(y, *predicted, run, groups=pd.factorize(df["g"])[0])
    assert grouped["error"][0] == rows["error"][0]  # the estimate is the same
    assert grouped["error"] != rows["error"]
