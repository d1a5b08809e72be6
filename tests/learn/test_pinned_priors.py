"""Prior correction's decision rule pinned on hand-computed cases (issue 40, item 6).

The rule (``soak_dask.learn.priors.PriorCorrected.predict``): the class of largest p_c / π_c;
among the classes tied there to a relative 1e-9, the one of largest p_c. The featureless
learner predicts p = π, so every class ties and the majority must win -- also when the
majority's label sorts last, where "the first class" and "the majority" part ways.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.dummy import DummyClassifier

import soak_dask as sd
from soak_dask.learn.priors import PriorCorrected


class FixedProba(ClassifierMixin, BaseEstimator):
    """Row i of ``rows`` as the probabilities of a sample whose first feature is i: the
    probabilities a case needs, whatever a real learner would make of its rows."""

    def __init__(self, rows: tuple = ()) -> None:
        self.rows = rows

    def fit(self, X: Any, y: Any) -> FixedProba:
        self.classes_ = np.unique(y)
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        return np.asarray(self.rows, dtype=np.float64)[np.asarray(X)[:, 0].astype(int)]


def _labels(counts: dict[str, int]) -> np.ndarray:
    return np.repeat(list(counts), list(counts.values()))


@pytest.mark.parametrize(
    "counts",
    [
        {"a": 30, "b": 70},  # majority sorts last
        {"a": 20, "b": 30, "c": 50},  # the majority last, the minority first
        {"a": 25, "b": 50, "c": 25},  # the majority in the middle
    ],
)
def test_featureless_keeps_the_majority_whichever_label_sorts_first(counts):
    y = _labels(counts)
    X = np.zeros((len(y), 1))
    model = PriorCorrected(DummyClassifier(strategy="prior")).fit(X, y)
    majority = max(counts, key=counts.get)
    assert model.predict(X[:5]).tolist() == [majority] * 5


def test_integer_labels_majority_last():
    """0 sorts before 1; 1 holds 60 of 100 rows."""
    y = np.r_[np.zeros(40, int), np.ones(60, int)]
    model = PriorCorrected(DummyClassifier(strategy="prior")).fit(np.zeros((100, 1)), y)
    assert model.predict(np.zeros((3, 1))).tolist() == [1, 1, 1]


def test_decisions_by_probability_over_share():
    """π = (0.2, 0.8) for (a, b). Hand-computed ratios p/π, row by row:
    (0.3, 0.7) -> (1.5, 0.875): a, though b is more probable;
    (0.1, 0.9) -> (0.5, 1.125): b;
    (0.2, 0.8) -> (1, 1): a tie, to the larger p: b;
    (0.2 (1 + 1e-12), ...) -> a relative difference of ~1e-12 < 1e-9: still a tie, b;
    (0.2 (1 + 1e-6), ...) -> a: 1 + 1e-6 against 1 - 2.5e-7, no tie at 1e-9."""
    shade = [0.2 * (1 + 1e-12), 0.2 * (1 + 1e-6)]
    rows = ((0.3, 0.7), (0.1, 0.9), (0.2, 0.8), *((p, 1 - p) for p in shade))
    y = _labels({"a": 20, "b": 80})
    X = np.arange(len(rows))[:, None]
    model = PriorCorrected(FixedProba(rows)).fit(np.zeros((len(y), 1)), y)
    np.testing.assert_allclose(model.priors_, [0.2, 0.8], rtol=0, atol=1e-15)
    assert model.predict(X).tolist() == ["a", "b", "b", "b", "a"]


def test_a_tie_is_decided_among_the_tied_classes_only():
    """π = (0.2, 0.3, 0.5) for (a, b, c) and p = (0.24, 0.36, 0.40): ratios (1.2, 1.2, 0.8).
    a and b tie; b has the larger p. c, the most probable class, is not among the tied."""
    y = _labels({"a": 20, "b": 30, "c": 50})
    model = PriorCorrected(FixedProba(((0.24, 0.36, 0.40), (0.30, 0.30, 0.40)))).fit(
        np.zeros((len(y), 1)), y
    )
    # Second row: ratios (1.5, 1.0, 0.8): a alone, the least probable of a, b and c but one.
    assert model.predict(np.array([[0], [1]])).tolist() == ["b", "a"]


def test_evaluate_featureless_with_the_majority_sorting_last():
    """Through evaluate: the corrected featureless learner errs on the minority's rows only,
    as the uncorrected one does (minority 'a', 45 of 150 rows: 30 percent error)."""
    rng = np.random.default_rng(0)
    y = _labels({"a": 45, "b": 105})
    df = pd.DataFrame({"f0": rng.normal(size=len(y)), "y": rng.permutation(y)})
    table = sd.load_table(df, label="y")
    on = sd.evaluate(
        table,
        "featureless",
        measures=["error"],
        outer_folds=3,
        options=sd.RunOptions(progress=False),
    )
    assert on.attrs["prior_correction"] == 1
    np.testing.assert_allclose(on["error"].values, 30.0, rtol=0, atol=1e-9)
