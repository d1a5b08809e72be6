"""Measures from merged partial scores equal scikit-learn's metrics on the whole block."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn import metrics

from soak_dask.learn.measures import (
    CLASSIFICATION,
    REGRESSION,
    finish,
    merge,
    partial_scores,
    score,
)


def _pieces(n: int, cuts: list[int]) -> list[slice]:
    edges = sorted({0, n, *(c % (n + 1) for c in cuts)})
    return [slice(a, b) for a, b in zip(edges[:-1], edges[1:], strict=False)]


def _tree_merge(parts: list[dict]) -> dict:
    """Merged as a tree of merges does (merged pieces merged again)."""
    half = len(parts) // 2
    return merge([merge(parts[:half]), merge(parts[half:])]) if half > 1 else merge(parts)


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(2, 300),
    n_classes=st.integers(2, 4),
    seed=st.integers(0, 2**31),
    cuts=st.lists(st.integers(0, 300), max_size=5),
)
def test_classification_pieces_merge_to_sklearn(n, n_classes, seed, cuts):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n)
    proba = rng.dirichlet(np.ones(n_classes), n)
    pred = proba.argmax(axis=1)
    merged = _tree_merge(
        [
            partial_scores(CLASSIFICATION, y[s], pred[s], proba[s], n_classes)
            for s in _pieces(n, cuts)
        ],
    )
    got = finish(CLASSIFICATION, merged)
    labels = list(range(n_classes))
    assert got["error"] == 100 * np.mean(y != pred)  # exactly, as the paper computes it
    assert got["balanced_accuracy"] == pytest.approx(metrics.balanced_accuracy_score(y, pred))
    assert got["log_loss"] == pytest.approx(metrics.log_loss(y, proba, labels=labels), rel=1e-12)
    present = [c for c in labels if 0 < (y == c).sum() < n]
    if n_classes == 2 and present:
        assert got["auc"] == pytest.approx(metrics.roc_auc_score(y, proba[:, 1]), rel=1e-12)
    elif n_classes > 2 and present:
        expected = np.mean([metrics.roc_auc_score(y == c, proba[:, c]) for c in present])
        assert got["auc"] == pytest.approx(expected, rel=1e-12)
    else:
        assert np.isnan(got["auc"])


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(2, 300),
    levels=st.integers(1, 6),
    seed=st.integers(0, 2**31),
    cuts=st.lists(st.integers(0, 300), max_size=5),
)
def test_auc_with_tied_scores_merges_to_sklearn(n, levels, seed, cuts):
    # Few distinct scores (one: a featureless learner), spread over pieces: ties count half.
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    scores = rng.integers(0, levels, n).astype(float).reshape(-1, 1)
    parts = [partial_scores(["auc"], y[s], y[s], scores[s], 2) for s in _pieces(n, cuts)]
    got = finish(["auc"], _tree_merge(parts))["auc"]
    if 0 < y.sum() < n:
        assert got == pytest.approx(metrics.roc_auc_score(y, scores[:, 0]), rel=1e-12)
    else:
        assert np.isnan(got)


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(2, 300),
    seed=st.integers(0, 2**31),
    scale=st.floats(1e-3, 1e6),
    cuts=st.lists(st.integers(0, 300), max_size=5),
)
def test_regression_pieces_merge_to_sklearn(n, seed, scale, cuts):
    rng = np.random.default_rng(seed)
    y = scale * (rng.normal(size=n) + 100)
    pred = y + scale * rng.normal(size=n)
    merged = _tree_merge([partial_scores(REGRESSION, y[s], pred[s]) for s in _pieces(n, cuts)])
    got = finish(REGRESSION, merged)
    mse = metrics.mean_squared_error(y, pred)
    assert got["mse"] == pytest.approx(mse, rel=1e-10)
    assert got["rmse"] == pytest.approx(np.sqrt(mse), rel=1e-10)
    assert got["mae"] == pytest.approx(metrics.mean_absolute_error(y, pred), rel=1e-10)
    assert got["r2"] == pytest.approx(metrics.r2_score(y, pred), rel=1e-8)


def test_edge_cases_follow_sklearn_conventions():
    # A constant truth: r2 is 1 for a perfect prediction and 0 otherwise, as in scikit-learn.
    assert score(["r2"], np.ones(3), np.ones(3)) == {"r2": 1.0}
    assert score(["r2"], np.ones(3), np.array([1.0, 2, 3])) == {"r2": 0.0}
    # One class in the block: AUC undefined; an empty block scores NaN.
    one = score(
        ["auc", "error"],
        np.array(["a", "a"]),
        np.array(["a", "b"]),
        np.array([[0.9, 0.1], [0.4, 0.6]]),
        classes=["a", "b"],
    )
    assert np.isnan(one["auc"]) and one["error"] == 50.0
    assert np.isnan(score(["mse"], np.array([]), np.array([]))["mse"])
    # Decision scores (one column) give AUC but no log loss.
    dec = score(
        ["auc", "log_loss"],
        np.array(["a", "b"]),
        np.array(["a", "b"]),
        np.array([[-1.0], [2.0]]),
        classes=["a", "b"],
    )
    assert dec["auc"] == 1.0 and np.isnan(dec["log_loss"])
