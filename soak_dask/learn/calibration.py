"""Platt scaling: a sigmoid fitted on out-of-fold scores of the training rows (so on training
data alone) that moves a binary classifier's probabilities and threshold."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, log_expit
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
from sklearn.utils.validation import check_is_fitted

from ..split.inner import Inner
from .groups import fit_with_groups
from .tuning import Search, is_cheap

#: Why a multiclass fit is left uncalibrated (recorded in the result).
MULTICLASS_NOTE = (
    "calibration='platt' skipped: Platt scaling corrects one positive-class probability, so "
    "it runs on binary tasks only"
)


class PlattCalibrated(MetaEstimatorMixin, ClassifierMixin, BaseEstimator):
    """A binary classifier whose positive-class probability is ``sigmoid(a·s + b)``.

    ``s`` is the classifier's decision function (or the log-odds of its probability). ``a``
    and ``b`` are fitted, with Platt's smoothed targets, on out-of-fold scores: the inner
    splits of the training rows (``inner``, grouped with ``groups``), each fold's model a
    refit of the setting the full fit chose. The returned model is the full fit with the
    sigmoid on top. With other than two classes nothing is calibrated (``calibrated_`` False).

    Parameters
    ----------
    estimator : classifier
    inner, inner_folds, inner_repeats, random_state :
        The inner splits (``soak_dask.split.inner.Inner``).

    Attributes
    ----------
    estimator_ : classifier
        Fitted on all the rows.
    coef_, intercept_ : float
        ``a`` and ``b``.
    calibrated_ : bool
    """

    #: Marks our wrappers for ``soak_dask.learn.tuning.unwrap``.
    wraps_learner = True

    def __init__(
        self,
        estimator: Any,
        *,
        inner: str = "auto",
        inner_folds: int = 5,
        inner_repeats: int = 1,
        random_state: int = 1,
    ) -> None:
        self.estimator = estimator
        self.inner = inner
        self.inner_folds = inner_folds
        self.inner_repeats = inner_repeats
        self.random_state = random_state

    def fit(self, X: Any, y: Any, groups: Any = None) -> PlattCalibrated:
        """Fit the classifier on all rows, and the sigmoid on its out-of-fold scores."""
        X, y = np.asarray(X), np.asarray(y)
        self.estimator_ = fit_with_groups(clone(self.estimator), X, y, groups)
        self.classes_ = self.estimator_.classes_
        self.n_features_in_ = X.shape[1]
        self.calibrated_ = len(self.classes_) == 2
        if not self.calibrated_:
            return self
        chosen = self.estimator_.best_estimator_ if isinstance(self.estimator_, Search) else None
        setting = clone(chosen if chosen is not None else self.estimator)
        inner = Inner(self.inner, self.inner_folds, self.inner_repeats, self.random_state)
        _, splits = inner.splits(y, groups, cheap=is_cheap(setting), classify=True)
        scores, targets = [], []
        for train, test in splits:
            fold = clone(setting).fit(X[train], y[train])
            scores.append(_score(fold, X[test], self.classes_))
            targets.append(y[test] == self.classes_[1])
        self.coef_, self.intercept_ = platt(np.concatenate(scores), np.concatenate(targets))
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        """Calibrated probabilities (the classifier's own if not calibrated)."""
        check_is_fitted(self)
        if not self.calibrated_:
            return self.estimator_.predict_proba(X)
        p = expit(self.coef_ * _score(self.estimator_, X, self.classes_) + self.intercept_)
        return np.column_stack([1 - p, p])

    def predict(self, X: Any) -> np.ndarray:
        """The class of larger calibrated probability."""
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


def _score(model: Any, X: Any, classes: np.ndarray) -> np.ndarray:
    """The positive class's score: the decision function, else the log-odds of its
    probability (clipped away from 0 and 1)."""
    if list(getattr(model, "classes_", classes)) != list(classes):
        # A fold whose training rows lack a class predicts only the other one.
        only = model.classes_[0] == classes[1]
        return np.full(len(X), 10.0 if only else -10.0)
    if hasattr(model, "decision_function"):
        return np.asarray(model.decision_function(X), dtype=np.float64)
    p = np.clip(model.predict_proba(X)[:, 1], 1e-12, 1 - 1e-12)
    return np.log(p) - np.log1p(-p)


def platt(scores: np.ndarray, positive: np.ndarray) -> tuple[float, float]:
    """Platt's (1999) sigmoid fit: ``a, b`` minimising the log loss of ``sigmoid(a·s + b)``
    against the smoothed targets (N₊+1)/(N₊+2) and 1/(N₋+2), which keep it finite on
    separable scores; constant scores give the training share."""
    n_pos = int(positive.sum())
    n_neg = positive.size - n_pos
    if np.ptp(scores) == 0 or n_pos in (0, positive.size):
        # Scores that do not vary (a featureless learner) can only tell the base rate: the
        # training share itself, not the smoothed targets' mean that would tilt it.
        share = np.clip(n_pos / positive.size, 1e-12, 1 - 1e-12)
        return 0.0, float(np.log(share) - np.log1p(-share))
    t = np.where(positive, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))

    def loss(ab: np.ndarray) -> tuple[float, np.ndarray]:
        z = ab[0] * scores + ab[1]
        value = -np.sum(t * log_expit(z) + (1 - t) * log_expit(-z))
        residual = expit(z) - t
        return float(value), np.array([residual @ scores, residual.sum()])

    prior = np.log((n_neg + 1) / (n_pos + 1))
    fit = minimize(loss, np.array([1.0, -prior]), jac=True, method="L-BFGS-B")
    return float(fit.x[0]), float(fit.x[1])
