"""Prior correction: predict the class with the largest probability divided by its share of
the training rows, the decision that maximises balanced accuracy for calibrated probabilities.
Probabilities are left as they are, so probability measures (log loss, AUC) do not change."""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted

from .groups import fit_with_groups

#: Relative difference of ``p_c / π_c`` below which two classes tie.
TIE = 1e-9


class PriorCorrected(MetaEstimatorMixin, ClassifierMixin, BaseEstimator):
    """A classifier whose predicted class is ``argmax_c p_c / π_c``.

    ``π`` is the class shares of the rows it was fitted on, so each outer fold uses its own
    training rows' shares. ``predict_proba`` is the wrapped classifier's, unchanged.

    Parameters
    ----------
    estimator : classifier
        Must have ``predict_proba``. Must not resample its training rows to balance the
        classes (an imbalanced-learn sampler): the two corrections would add up and the small
        classes be over-predicted.

    Attributes
    ----------
    estimator_ : classifier
        The fitted clone.
    classes_ : ndarray
    priors_ : ndarray
        The training rows' class shares, in the order of ``classes_``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.naive_bayes import GaussianNB
    >>> X = np.r_[np.zeros((90, 1)), np.ones((10, 1))] + np.linspace(0, 0.9, 100)[:, None]
    >>> y = np.r_[np.zeros(90), np.ones(10)]
    >>> PriorCorrected(GaussianNB()).fit(X, y).priors_
    array([0.9, 0.1])
    """

    #: Marks our wrappers for ``soak_dask.learn.tuning.unwrap``.
    wraps_learner = True

    def __init__(self, estimator: Any) -> None:
        self.estimator = estimator

    def fit(self, X: Any, y: Any, groups: Any = None) -> PriorCorrected:
        """Fit a clone of ``estimator`` (with ``groups`` if it takes them); record the shares."""
        check_prior_correction(self.estimator)
        self.estimator_ = fit_with_groups(clone(self.estimator), X, y, groups)
        self.classes_ = self.estimator_.classes_
        counts = np.array([np.sum(np.asarray(y) == c) for c in self.classes_], dtype=np.float64)
        self.priors_ = counts / counts.sum()
        self.n_features_in_ = getattr(self.estimator_, "n_features_in_", np.shape(X)[1])
        return self

    @classmethod
    def from_fitted(cls, estimator: Any, fitted: Any, priors: Any) -> PriorCorrected:
        """The correction of ``estimator`` as ``fit`` would make it, from ``fitted`` (its
        fitted clone, trained elsewhere: across the workers) and ``priors`` (the training
        rows' class shares, in the order of ``fitted.classes_``)."""
        out = cls(estimator)
        out.estimator_, out.classes_ = fitted, fitted.classes_
        out.priors_ = np.asarray(priors, dtype=np.float64)
        out.n_features_in_ = fitted.n_features_in_
        return out

    def predict(self, X: Any) -> np.ndarray:
        """The class of largest ``p_c / π_c``; of the classes tied there (to rounding), the one
        of largest ``p_c``, so a learner that predicts the priors (featureless) keeps
        predicting the majority class."""
        check_is_fitted(self)
        proba = check_finite_proba(self.estimator_.predict_proba(X))
        ratio = proba / self.priors_
        tied = ratio >= ratio.max(axis=1, keepdims=True) * (1 - TIE)
        return self.classes_[np.argmax(np.where(tied, proba, -np.inf), axis=1)]

    def predict_proba(self, X: Any) -> np.ndarray:
        """The wrapped classifier's probabilities, unchanged."""
        check_is_fitted(self)
        return self.estimator_.predict_proba(X)

    def __sklearn_tags__(self):  # noqa: D105
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = self.estimator.__sklearn_tags__().input_tags.allow_nan
        return tags


def check_finite_proba(proba: Any) -> np.ndarray:
    """``proba`` as an array, refusing NaN or infinite probabilities: no class can be chosen
    from them (the run scores the fit ``error_score`` and names the learner)."""
    proba = np.asarray(proba, dtype=np.float64)
    bad = ~np.isfinite(proba).all(axis=-1) if proba.ndim > 1 else ~np.isfinite(proba)
    if bad.any():
        raise ValueError(
            f"predict_proba returned NaN or infinite probabilities for {int(bad.sum())} of "
            f"{len(proba)} rows, so no class can be predicted from them; fix the learner "
            "(e.g. features it cannot handle), or drop it"
        )
    return proba


def resampling_steps(estimator: Any) -> list[str]:
    """Names of the steps of ``estimator`` (or of its nested estimators) that resample the
    training rows (imbalanced-learn samplers have ``fit_resample``)."""
    if hasattr(estimator, "fit_resample"):
        return [type(estimator).__name__]
    found = []
    if isinstance(estimator, Pipeline) or hasattr(estimator, "steps"):
        for name, step in estimator.steps:
            found += [f"{name} ({s})" for s in resampling_steps(step)]
    for attr in ("estimator", "base_estimator"):
        inner = getattr(estimator, attr, None)
        if inner is not None and not isinstance(inner, str):
            found += resampling_steps(inner)
    return found


def check_prior_correction(estimator: Any, name: str = "") -> None:
    """Refuse prior correction on a learner that resamples to balance the classes."""
    steps = resampling_steps(estimator)
    if steps:
        who = f"learner {name!r}" if name else type(estimator).__name__
        raise ValueError(
            f"{who} resamples its training rows ({', '.join(steps)}) and prior_correction is "
            "on: both correct for class imbalance, and together they over-predict the small "
            "classes. Set prior_correction=False to keep the sampler, or remove the sampler."
        )


def can_correct(estimator: Any) -> bool:
    """Whether prior correction applies: a classifier with probabilities."""
    return hasattr(estimator, "predict_proba")
