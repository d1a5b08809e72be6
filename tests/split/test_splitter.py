"""SameOtherAllCV works with scikit-learn's model selection tools."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_validate

import soak_dask as sd


def _data(n=240, seed=0):
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(n // 4), 4)
    X = rng.normal(size=(n, 3)) + groups[:, None] % 2
    y = groups % 2  # one class per group, as groups must have
    subset = np.repeat(["A", "B", "C"], n // 3)
    return X, y, subset, groups


def test_cross_validate_runs_every_split():
    X, y, subset, _ = _data()
    cv = sd.SameOtherAllCV(subset, n_splits=4)
    out = cross_validate(LogisticRegression(), X, y, cv=cv)
    assert len(out["test_score"]) == cv.get_n_splits() == 36
    info = cv.split_info()
    assert list(info.columns) == ["test_subset", "fold", "train_type", "fit_id"]


def test_split_sets_follow_the_definitions():
    X, y, subset, groups = _data()
    cv = sd.SameOtherAllCV(subset, n_splits=4, random_state=3)
    folds = cv.folds(X, y, groups)
    for r, (train, test) in zip(cv.split_info().itertuples(), cv.split(X, y, groups), strict=True):
        assert set(subset[test]) == {r.test_subset} and set(folds[test]) == {r.fold}
        assert not set(folds[train]) & {r.fold}
        expected = {
            "same": {r.test_subset},
            "other": set("ABC") - {r.test_subset},
            "all": set("ABC"),
        }[r.train_type]
        assert set(subset[train]) == expected
        assert not set(groups[train]) & set(groups[test])


def test_predefined_folds_and_errors():
    X, y, subset, _ = _data(n=12)
    fold = np.tile([1, 2, 3], 4)
    cv = sd.SameOtherAllCV(subset, fold=fold, train_types=["same"])
    assert cv.get_n_splits() == 9
    np.testing.assert_array_equal(cv.folds(X), fold)
    with pytest.raises(ValueError, match="n_splits=1"):
        sd.SameOtherAllCV(subset, n_splits=1)
    with pytest.raises(ValueError, match="X has 5 rows but subset has 12"):
        cv.folds(X[:5])


def test_a_scikit_learn_cross_validator_that_routes_groups():
    import sklearn
    from sklearn.dummy import DummyClassifier
    from sklearn.model_selection import BaseCrossValidator

    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 2))
    y = np.tile([0, 1], 60)
    subset = np.repeat(["A", "B"], 60)
    groups = np.arange(120) // 2 * 2 + y  # pairs of rows of one class
    cv = sd.SameOtherAllCV(subset, n_splits=3)
    assert isinstance(cv, BaseCrossValidator)
    expected = [test.tolist() for _, test in cv.split(X, y, groups)]
    plain = cross_validate(DummyClassifier(), X, y, groups=groups, cv=cv, return_indices=True)
    assert [t.tolist() for t in plain["indices"]["test"]] == expected
    with sklearn.config_context(enable_metadata_routing=True):
        routed = cross_validate(
            DummyClassifier(), X, y, params={"groups": groups}, cv=cv, return_indices=True
        )
    assert [t.tolist() for t in routed["indices"]["test"]] == expected
    # without the groups the folds differ: the groups really reached split
    assert [t.tolist() for _, t in cv.split(X, y)] != expected
