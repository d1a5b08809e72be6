"""Fits from additive statistics: scikit-learn estimators whose fitted attributes are set from
the pooled moments of their train set (``run.onepass.train_stats``) instead of their rows.

Fits mirror scikit-learn's own solvers (Cholesky for ridge, the SVD solver of
``LinearDiscriminantAnalysis`` via the eigendecomposition of the scaled within-class scatter,
...), so coefficients and predictions equal those of ``estimator.fit`` on the materialised train
rows up to rounding. ``is_additive`` says which estimators (and parameters) qualify.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from numbers import Real
from typing import Any

import numpy as np
import scipy.linalg
from sklearn.base import BaseEstimator, clone
from sklearn.covariance import shrunk_covariance
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.dummy import DummyClassifier, DummyRegressor
from sklearn.linear_model import LinearRegression, Ridge, RidgeClassifier
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import LabelBinarizer, StandardScaler

from ..learn.priors import PriorCorrected
from ..user_warning import warn_user
from .onepass import Moments, TrainStats

_EPS = np.finfo(np.float64).eps


def _regression_parts(stats: TrainStats) -> tuple[float, np.ndarray, float, np.ndarray, np.ndarray]:
    """n, feature means, label mean, centred XᵀX and Xᵀy of a regression train set."""
    total = stats.total()
    p = stats.n_features
    return total.count, total.mean[:p], total.mean[p], total.scatter[:p, :p], total.scatter[:p, p]


def _classification_parts(stats: TrainStats) -> tuple[np.ndarray, Moments, Moments]:
    """Present classes, their moments, and the moments of all rows."""
    classes, per_class = stats.present()
    return classes, per_class, per_class.pool(0)


def _solve_normal(a: np.ndarray, b: np.ndarray, cond: float) -> tuple[np.ndarray, int, np.ndarray]:
    """Solve a w = b for the centred Gram matrix ``a`` = XᵀX (+ αI): Cholesky when a has full
    rank, else the minimum-norm solution dropping singular values of X below ``cond`` × the
    largest (scipy's ``lstsq`` on X, as scikit-learn does).

    Returns the solution, the rank and the singular values of X (square roots of a's).
    """
    eigen = scipy.linalg.svdvals(a)
    singular = np.sqrt(eigen)
    rank = int(np.sum(singular > cond * singular[0])) if len(singular) else 0
    if rank == len(a):
        try:
            return scipy.linalg.solve(a, b, assume_a="pos"), rank, singular
        except np.linalg.LinAlgError:
            pass  # numerically indefinite: use the minimum-norm solution below
    w = scipy.linalg.lstsq(a, b, cond=cond**2)[0]
    return w, rank, singular


def _fit_dummy_classifier(est: DummyClassifier, stats: TrainStats) -> None:
    classes, per_class, total = _classification_parts(stats)
    est._strategy = est.strategy
    est.sparse_output_ = False
    est.n_outputs_ = 1
    est.classes_ = classes
    est.n_classes_ = len(classes)
    est.class_prior_ = per_class.count / total.count


def _fit_dummy_regressor(est: DummyRegressor, stats: TrainStats) -> None:
    _, _, y_mean, _, _ = _regression_parts(stats)
    est.n_outputs_ = 1
    est.constant_ = np.reshape(y_mean, (1, 1))


def _fit_linear_regression(est: LinearRegression, stats: TrainStats) -> None:
    _, x_mean, y_mean, xx, xy = _regression_parts(stats)
    est.coef_, est.rank_, est.singular_ = _solve_normal(xx, xy, est.tol)
    est.intercept_ = y_mean - x_mean @ est.coef_


def _ridge_coef(est: Ridge | RidgeClassifier, xx: np.ndarray, xy: np.ndarray) -> np.ndarray:
    """Coefficients (targets × p, or p for one target) of ridge on centred moments."""
    gram = xx + est.alpha * np.eye(len(xx))
    # Drop only directions at rounding level (alpha = 0 on rank-deficient data: minimum norm).
    coef = _solve_normal(gram, xy, cond=np.sqrt(len(xx) * _EPS))[0].T
    est.n_iter_ = None
    est.solver_ = "cholesky" if est.solver == "auto" else est.solver
    return np.ravel(coef) if coef.ndim == 2 and coef.shape[0] == 1 else coef


def _fit_ridge(est: Ridge, stats: TrainStats) -> None:
    _, x_mean, y_mean, xx, xy = _regression_parts(stats)
    est.coef_ = _ridge_coef(est, xx, xy)
    est.intercept_ = y_mean - x_mean @ est.coef_


def _fit_ridge_classifier(est: RidgeClassifier, stats: TrainStats) -> None:
    """Ridge on ±1 targets (one column per class, or one for two classes), as scikit-learn.

    With targets T[c] for class c, Σ(x − x̄)yᵀ = Σ_c n_c (x̄_c − x̄) T[c]ᵀ: class means suffice.
    """
    classes, per_class, total = _classification_parts(stats)
    p = stats.n_features
    binarizer = LabelBinarizer(pos_label=1, neg_label=-1).fit(classes)
    targets = binarizer.transform(classes).astype(np.float64)
    dev = per_class.mean[:, :p] - total.mean[:p]
    xy = (dev * per_class.count[:, None]).T @ targets
    y_mean = per_class.count @ targets / total.count
    est._label_binarizer = binarizer
    est.classes_ = binarizer.classes_
    est.coef_ = _ridge_coef(est, total.scatter[:p, :p], xy)
    est.intercept_ = y_mean - total.mean[:p] @ est.coef_.T


def _lda_cov(count: np.ndarray, scatter: np.ndarray, shrinkage: float | None) -> np.ndarray:
    """scikit-learn's ``_cov``: the empirical covariance, optionally shrunk."""
    emp = scatter / count
    return emp if shrinkage is None else shrunk_covariance(emp, shrinkage)


def _lda_class_cov(per_class: Moments, priors: np.ndarray, shrinkage: float | None) -> np.ndarray:
    covs = [
        _lda_cov(per_class.count[c], per_class.scatter[c], shrinkage)
        for c in range(len(per_class.count))
    ]
    return np.einsum("c,cpq->pq", priors, np.stack(covs))


def _lda_priors(est: LinearDiscriminantAnalysis, counts: np.ndarray) -> np.ndarray:
    if est.priors is None:
        return counts / counts.sum()
    priors = np.asarray(est.priors, dtype=np.float64)
    if np.any(priors < 0):
        raise ValueError("priors must be non-negative")
    if abs(priors.sum() - 1.0) > 1e-5:
        warn_user("The priors do not sum to 1. Renormalizing")
        priors = priors / priors.sum()
    return priors


def _fit_lda(est: LinearDiscriminantAnalysis, stats: TrainStats) -> None:
    classes, per_class, total = _classification_parts(stats)
    n, n_classes, p = total.count, len(classes), stats.n_features
    if n < 2:
        raise ValueError(
            f"n_samples={int(n)} while a minimum of 2 is required by LinearDiscriminantAnalysis."
        )
    if n == n_classes:
        raise ValueError("The number of samples must be more than the number of classes.")
    max_components = min(n_classes - 1, p)
    if est.n_components is not None and est.n_components > max_components:
        raise ValueError("n_components cannot be larger than min(n_features, n_classes - 1).")
    est.classes_ = classes
    est.priors_ = _lda_priors(est, per_class.count)
    est._max_components = max_components if est.n_components is None else est.n_components
    est.means_ = per_class.mean
    if est.solver == "svd":
        _lda_svd(est, per_class, n)
    elif est.solver == "lsqr":
        est.covariance_ = _lda_class_cov(per_class, est.priors_, est.shrinkage)
        est.coef_ = scipy.linalg.lstsq(est.covariance_, est.means_.T)[0].T
        est.intercept_ = -0.5 * np.diag(est.means_ @ est.coef_.T) + np.log(est.priors_)
    else:
        _lda_eigen(est, per_class, total)
    if n_classes == 2:  # scikit-learn's binary special case
        est.coef_ = (est.coef_[1, :] - est.coef_[0, :]).reshape(1, -1)
        est.intercept_ = np.reshape(est.intercept_[1] - est.intercept_[0], (1,))
    est._n_features_out = est._max_components


def _lda_svd(est: LinearDiscriminantAnalysis, per_class: Moments, n: float) -> None:
    """scikit-learn's SVD solver. Its first SVD is of X = (rows − class mean) / std / √n; the
    singular values and right vectors of X are the square roots and eigenvectors of XᵀX, the
    scaled within-class scatter. Component signs may differ; coef_ and intercept_ do not."""
    if est.store_covariance:
        est.covariance_ = _lda_class_cov(per_class, est.priors_, None)
    within = per_class.scatter.sum(axis=0)
    std = np.sqrt(np.diag(within) / n)
    std[std == 0] = 1.0
    eigen, vectors = scipy.linalg.eigh(within / n / np.outer(std, std))
    singular = np.sqrt(np.clip(eigen[::-1], 0.0, None))
    vt = vectors[:, ::-1].T
    rank = int(np.sum(singular > est.tol))
    scalings = (vt[:rank, :] / std).T / singular[:rank]
    n_classes = len(est.classes_)
    fac = 1.0 if n_classes == 1 else 1.0 / (n_classes - 1)
    est.xbar_ = est.priors_ @ est.means_
    centres = (np.sqrt(n * est.priors_ * fac) * (est.means_ - est.xbar_).T).T @ scalings
    _, singular, vt = scipy.linalg.svd(centres, full_matrices=False)
    total = np.sum(singular**2)  # 0 for one class, whose ratios are none (no component)
    ratios = singular**2 / total if total > 0 else np.zeros_like(singular)
    est.explained_variance_ratio_ = ratios[: est._max_components]
    rank = int(np.sum(singular > est.tol * singular[0]))
    est.scalings_ = scalings @ vt.T[:, :rank]
    coef = (est.means_ - est.xbar_) @ est.scalings_
    est.intercept_ = -0.5 * np.sum(coef**2, axis=1) + np.log(est.priors_)
    est.coef_ = coef @ est.scalings_.T
    est.intercept_ -= est.xbar_ @ est.coef_.T


def _lda_eigen(est: LinearDiscriminantAnalysis, per_class: Moments, total: Moments) -> None:
    est.covariance_ = _lda_class_cov(per_class, est.priors_, est.shrinkage)
    between = _lda_cov(total.count, total.scatter, est.shrinkage) - est.covariance_
    evals, evecs = scipy.linalg.eigh(between, est.covariance_)
    est.explained_variance_ratio_ = np.sort(evals / np.sum(evals))[::-1][: est._max_components]
    evecs = evecs[:, np.argsort(evals)[::-1]]
    est.scalings_ = evecs
    est.coef_ = est.means_ @ evecs @ evecs.T
    est.intercept_ = -0.5 * np.diag(est.means_ @ est.coef_.T) + np.log(est.priors_)


def _fit_gaussian_nb(est: GaussianNB, stats: TrainStats) -> None:
    classes, per_class, total = _classification_parts(stats)
    est.epsilon_ = est.var_smoothing * np.max(np.diag(total.scatter) / total.count)
    est.classes_ = classes
    est.theta_ = per_class.mean
    variances = np.diagonal(per_class.scatter, axis1=1, axis2=2) / per_class.count[:, None]
    est.var_ = variances + est.epsilon_
    est.class_count_ = per_class.count
    if est.priors is None:
        est.class_prior_ = per_class.count / total.count
        return
    priors = np.asarray(est.priors, dtype=np.float64)
    if priors.shape[0] != len(classes):
        raise ValueError("Number of priors must match number of classes.")
    if not np.isclose(priors.sum(), 1.0):
        raise ValueError("The sum of the priors should be 1.")
    if np.any(priors < 0):
        raise ValueError("Priors must be non-negative.")
    est.class_prior_ = priors


def _fit_standard_scaler(est: StandardScaler, stats: TrainStats) -> TrainStats:
    """Fit the scaler and return the moments of its output."""
    total = stats.total()
    p = stats.n_features
    n = total.count
    est.n_samples_seen_ = np.int64(n)
    est.n_features_in_ = p
    if not (est.with_mean or est.with_std):
        est.mean_ = est.var_ = est.scale_ = None
        return stats
    est.mean_ = total.mean[:p]
    var = np.diag(total.scatter)[:p] / n
    est.var_ = var if est.with_std else None
    est.scale_ = None
    if est.with_std:
        # scikit-learn's _is_constant_feature: such features keep scale 1.
        constant = var <= n * _EPS * var + (n * est.mean_ * _EPS) ** 2
        est.scale_ = np.where(constant, 1.0, np.sqrt(var))
    shift = est.mean_ if est.with_mean else np.zeros(p)
    return stats.scaled(shift, est.scale_ if est.with_std else np.ones(p))


# --- which estimators qualify ---------------------------------------------------------------


def _nonnegative(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool) and value >= 0


def _exact_ridge(params: dict) -> bool:
    return (
        params["fit_intercept"] is True
        and not params["positive"]
        and params["solver"] in ("auto", "cholesky", "svd")
        and _nonnegative(params["alpha"])
    )


def _lda_supported(params: dict) -> bool:
    shrinkage = params["shrinkage"]
    fixed = shrinkage is None or (_nonnegative(shrinkage) and shrinkage <= 1)
    if params["covariance_estimator"] is not None or not _nonnegative(params["tol"]):
        return False
    if params["solver"] == "svd":
        return shrinkage is None
    return params["solver"] in ("lsqr", "eigen") and fixed


@dataclass(frozen=True)
class _Learner:
    kind: str
    task: str
    supports: Callable[[dict], bool]
    fit: Callable[[Any, TrainStats], None]


_LEARNERS: dict[type, _Learner] = {
    DummyClassifier: _Learner(
        "dummy_classifier",
        "classification",
        lambda p: p["strategy"] in ("prior", "most_frequent", "stratified", "uniform"),
        _fit_dummy_classifier,
    ),
    DummyRegressor: _Learner(
        "dummy_regressor", "regression", lambda p: p["strategy"] == "mean", _fit_dummy_regressor
    ),
    LinearRegression: _Learner(
        "linear_regression",
        "regression",
        lambda p: p["fit_intercept"] is True and not p["positive"] and _nonnegative(p["tol"]),
        _fit_linear_regression,
    ),
    Ridge: _Learner("ridge", "regression", _exact_ridge, _fit_ridge),
    RidgeClassifier: _Learner(
        "ridge_classifier",
        "classification",
        lambda p: _exact_ridge(p) and p["class_weight"] is None,
        _fit_ridge_classifier,
    ),
    LinearDiscriminantAnalysis: _Learner("lda", "classification", _lda_supported, _fit_lda),
    GaussianNB: _Learner(
        "gaussian_nb",
        "classification",
        lambda p: _nonnegative(p["var_smoothing"]),
        _fit_gaussian_nb,
    ),
}

#: What ``is_additive`` can answer.
KINDS = tuple(learner.kind for learner in _LEARNERS.values())


def _learner(estimator: Any) -> _Learner | None:
    learner = _LEARNERS.get(type(estimator))  # exact type: a subclass may fit differently
    if learner is None or not learner.supports(estimator.get_params(deep=False)):
        return None
    return learner


def _pipeline_parts(estimator: Any) -> tuple[list, Any]:
    """(transformer steps, final estimator); no transformers for a bare estimator."""
    if type(estimator) is Pipeline:
        steps = [step for _, step in estimator.steps]
        return steps[:-1], steps[-1]
    return [], estimator


def is_additive(estimator: Any) -> str | None:
    """The kind of fit that ``fit_from_stats`` can make for ``estimator``, or None.

    Recognised (by exact class and parameters): ``DummyClassifier`` (any strategy but
    "constant"), ``DummyRegressor(strategy="mean")``, ``LinearRegression`` and ``Ridge`` /
    ``RidgeClassifier`` (any alpha ≥ 0; fit_intercept=True, positive=False, solver "auto",
    "cholesky" or "svd", no class_weight), ``LinearDiscriminantAnalysis`` (solver "svd"; or
    "lsqr"/"eigen" with shrinkage None or a float; no covariance_estimator), ``GaussianNB``;
    each alone or as the last step of a ``Pipeline`` whose other steps are ``StandardScaler``
    or "passthrough"; any of these inside ``PriorCorrected`` (evaluate's prior correction: its
    priors are the train set's class shares, a statistic too). Anything else (iterative
    solvers, sample weights by class, "auto" shrinkage, ...) gives None: fit it on its rows as
    usual.

    Examples
    --------
    >>> from sklearn.linear_model import Ridge, LogisticRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> is_additive(make_pipeline(StandardScaler(), Ridge(alpha=3.0)))
    'ridge'
    >>> is_additive(LogisticRegression()) is None
    True
    """
    if type(estimator) is PriorCorrected:
        return is_additive(estimator.estimator)
    transformers, final = _pipeline_parts(estimator)
    if not all(t is None or t == "passthrough" or type(t) is StandardScaler for t in transformers):
        return None
    learner = _learner(final)
    return None if learner is None else learner.kind


def fit_from_stats(estimator: BaseEstimator, stats: TrainStats) -> BaseEstimator:
    """A clone of ``estimator`` fitted from the pooled moments of its train set.

    The result is a real scikit-learn estimator (or pipeline) with the fitted attributes that
    ``estimator.fit`` on the train rows would set, so its ``predict``, ``predict_proba`` and
    ``decision_function`` are scikit-learn's own. Classes without train rows are left out of
    ``classes_``, as in a fit on the rows.

    Parameters
    ----------
    estimator : estimator
        One for which ``is_additive`` is not None.
    stats : TrainStats
        From ``train_stats``.

    Returns
    -------
    estimator
        Fitted clone; X at predict time is the feature columns in ``BlockStats.features`` order,
        as a float array.
    """
    if is_additive(estimator) is None:
        raise ValueError(
            f"{estimator!r} cannot be fitted from block statistics (is_additive is None); "
            "fit it on its train rows instead"
        )
    if type(estimator) is PriorCorrected:
        return _fit_prior_corrected(estimator, stats)
    fitted = clone(estimator)
    transformers, final = _pipeline_parts(fitted)
    learner = _learner(final)
    task = "regression" if stats.classes is None else "classification"
    if learner.task != task:
        raise ValueError(f"{type(final).__name__} does not fit {task} statistics")
    if stats.n_rows == 0:
        raise ValueError("the train set has no rows: nothing to fit")
    for step in transformers:
        if type(step) is StandardScaler:
            stats = _fit_standard_scaler(step, stats)
    final.n_features_in_ = stats.n_features
    learner.fit(final, stats)
    return fitted


def _fit_prior_corrected(estimator: PriorCorrected, stats: TrainStats) -> PriorCorrected:
    """``PriorCorrected.fit`` from statistics: the wrapped learner's fit, and the train set's
    class shares as its priors."""
    fitted = clone(estimator)
    fitted.estimator_ = fit_from_stats(fitted.estimator, stats)
    fitted.classes_ = fitted.estimator_.classes_
    _, per_class = stats.present()
    fitted.priors_ = per_class.count / per_class.count.sum()
    fitted.n_features_in_ = stats.n_features
    return fitted
