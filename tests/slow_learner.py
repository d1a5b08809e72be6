"""A deliberately slow learner, importable by Dask worker processes (tests pickle it by name)."""

from __future__ import annotations

import time

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression


class SlowClassifier(ClassifierMixin, BaseEstimator):
    """Logistic regression that sleeps ``seconds`` before each fit, so fits overlap a fault.

    Parameters
    ----------
    seconds : float
        Time slept at the start of every ``fit``.
    """

    def __init__(self, seconds: float = 0.3) -> None:
        self.seconds = seconds

    def fit(self, X: np.ndarray, y: np.ndarray) -> SlowClassifier:
        """Sleep, then fit a (deterministic, lbfgs) logistic regression."""
        time.sleep(self.seconds)
        self.model_ = LogisticRegression().fit(X, y)
        self.classes_ = self.model_.classes_
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Predicted classes."""
        return self.model_.predict(X)

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """Class probabilities, columns in ``classes_`` order."""
        return self.model_.predict_proba(X)


def register(seconds: float = 0.1) -> None:
    """Make ``slow`` a built-in learner name (in this process only), so that commands whose
    ``--learner`` takes built-in names alone can run it."""
    from soak_dask.learn import builtin

    builtin.BUILTIN["slow"] = builtin.Factories(lambda seed: SlowClassifier(seconds), None)
    builtin.DESCRIPTIONS["slow"] = "logistic regression that sleeps before each fit (tests)"


if __name__ == "__main__":  # python -m tests.slow_learner ARGS: ``soak ARGS`` knowing ``slow``
    import sys

    from soak_dask.app.cli import main

    register()
    sys.exit(main(sys.argv[1:]))
