"""Test-set measures: classification error in percent, as in the SOAK paper, and others."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn import metrics

from .table import Task

CLASSIFICATION = ("error", "accuracy", "balanced_accuracy", "auc", "log_loss")
REGRESSION = ("mse", "rmse", "mae", "r2")


def check_measures(measures: Sequence[str] | str | None, task: Task) -> tuple[str, ...]:
    """Validate measure names for ``task``; ``None`` means all of them."""
    known = CLASSIFICATION if task == "classification" else REGRESSION
    if measures is None:
        return known
    if isinstance(measures, str):
        measures = [m.strip() for m in measures.split(",") if m.strip()]
    unknown = [m for m in measures if m not in known]
    if unknown or not measures:
        raise ValueError(
            f"measures {list(measures)} are not all {task} measures; choose from {known}"
        )
    return tuple(dict.fromkeys(measures))


def score(
    measures: Sequence[str],
    y_true: np.ndarray,
    y_pred: np.ndarray,
    proba: np.ndarray | None = None,
    classes: Sequence | None = None,
) -> dict[str, float]:
    """Compute ``measures`` on one test block.

    Parameters
    ----------
    measures : sequence of str
        Names from ``CLASSIFICATION`` or ``REGRESSION``.
    y_true, y_pred : ndarray
        True and predicted labels or values.
    proba : ndarray, optional
        Class probabilities (or binary decision scores, one column), columns in ``classes``
        order; needed for ``auc`` and ``log_loss``, which are NaN without it.
    classes : sequence, optional
        Every class of the table, so log loss counts classes absent from a train set.

    Examples
    --------
    >>> score(["error", "accuracy"], np.array(["a", "b"]), np.array(["a", "a"]))
    {'error': 50.0, 'accuracy': 0.5}
    """
    if len(y_true) == 0:
        return dict.fromkeys(measures, np.nan)
    return {m: float(_MEASURES[m](y_true, y_pred, proba, classes)) for m in measures}


def _auc(y_true, y_pred, proba, classes) -> float:
    if proba is None:
        return np.nan
    classes = list(classes)
    if proba.ndim == 1 or proba.shape[1] == 1:  # binary decision scores for classes[1]
        return _binary_auc(y_true == classes[1], proba.reshape(-1))
    if len(classes) == 2:
        return _binary_auc(y_true == classes[1], proba[:, 1])
    # Multiclass: macro one-vs-rest over the classes present in this test block.
    aucs = [_binary_auc(y_true == c, proba[:, i]) for i, c in enumerate(classes)]
    aucs = [a for a in aucs if not np.isnan(a)]
    return float(np.mean(aucs)) if aucs else np.nan


def _binary_auc(positive: np.ndarray, scores: np.ndarray) -> float:
    if positive.all() or not positive.any():
        return np.nan  # AUC is undefined when the test block has one class
    return metrics.roc_auc_score(positive, scores)


def _log_loss(y_true, y_pred, proba, classes) -> float:
    if proba is None or proba.ndim == 1 or proba.shape[1] != len(classes):
        return np.nan
    return metrics.log_loss(y_true, proba, labels=list(classes))


_MEASURES = {
    "error": lambda t, p, *_: 100.0 * np.mean(t != p),
    "accuracy": lambda t, p, *_: np.mean(t == p),
    "balanced_accuracy": lambda t, p, *_: metrics.balanced_accuracy_score(t, p),
    "auc": _auc,
    "log_loss": _log_loss,
    "mse": lambda t, p, *_: metrics.mean_squared_error(t, p),
    "rmse": lambda t, p, *_: np.sqrt(metrics.mean_squared_error(t, p)),
    "mae": lambda t, p, *_: metrics.mean_absolute_error(t, p),
    "r2": lambda t, p, *_: metrics.r2_score(t, p) if len(t) > 1 else np.nan,
}
