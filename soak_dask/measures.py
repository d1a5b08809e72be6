"""Test-set measures: classification error in percent, as in the SOAK paper, and others.

Each measure is computed from additive pieces (counts, sums, a confusion matrix; labels and
scores for AUC), so the rows of a test block can be scored partition by partition."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

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
        Every class of the table (classification), so log loss counts classes absent from a
        train set. Default: the classes in ``y_true`` and ``y_pred``, if they are not numbers.

    Examples
    --------
    >>> score(["error", "accuracy"], np.array(["a", "b"]), np.array(["a", "a"]))
    {'error': 50.0, 'accuracy': 0.5}
    """
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if classes is None and set(measures) <= set(CLASSIFICATION):
        classes = np.unique(np.concatenate([y_true, y_pred]))
    if classes is not None:
        index = pd.Index(classes)
        y_true, y_pred = index.get_indexer(y_true), index.get_indexer(y_pred)
    n_classes = None if classes is None else len(classes)
    return finish(measures, partial_scores(measures, y_true, y_pred, proba, n_classes))


def partial_scores(
    measures: Sequence[str],
    y_true: np.ndarray,
    y_pred: np.ndarray,
    proba: np.ndarray | None = None,
    n_classes: int | None = None,
) -> dict[str, Any]:
    """Additive pieces of ``measures`` on some rows of a test block.

    Pieces of the same block from different partitions combine with ``merge``, and ``finish``
    turns them into the measures, so a block is scored without gathering its rows.

    Parameters
    ----------
    measures : sequence of str
        Names from ``CLASSIFICATION`` or ``REGRESSION``.
    y_true, y_pred : ndarray
        Classification: class codes 0..n_classes-1. Regression: values.
    proba : ndarray, optional
        Class probabilities (n_classes columns) or binary decision scores (one column).
    n_classes : int, optional
        Number of classes (classification); None for regression.
    """
    n = len(y_true)
    if n_classes is None:
        mean = float(np.mean(y_true)) if n else 0.0
        return {
            "n": n,
            "sse": float(np.sum((y_true - y_pred) ** 2)),
            "sae": float(np.sum(np.abs(y_true - y_pred))),
            "mean": mean,
            "m2": float(np.sum((y_true - mean) ** 2)),
        }
    cells = np.bincount(y_true * n_classes + y_pred, minlength=n_classes * n_classes)
    out: dict[str, Any] = {"n": n, "confusion": cells.reshape(n_classes, n_classes)}
    if "log_loss" in measures:
        out["log_loss"] = _log_loss_sum(y_true, proba, n_classes)
    if "auc" in measures:
        out["auc"] = None if proba is None else (y_true.astype(np.int16), proba)
    return out


def merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Combine the ``partial_scores`` of two disjoint sets of rows of one block."""
    n = a["n"] + b["n"]
    if "confusion" not in a:
        # Chan et al.'s pairwise update of the sum of squared deviations from the mean.
        delta = b["mean"] - a["mean"]
        share = b["n"] / n if n else 0.0
        return {
            "n": n,
            "sse": a["sse"] + b["sse"],
            "sae": a["sae"] + b["sae"],
            "mean": a["mean"] + delta * share,
            "m2": a["m2"] + b["m2"] + delta**2 * a["n"] * share,
        }
    out = {"n": n, "confusion": a["confusion"] + b["confusion"]}
    if "log_loss" in a:
        out["log_loss"] = a["log_loss"] + b["log_loss"]
    if "auc" in a:
        both = [a["auc"], b["auc"]]
        out["auc"] = (
            None
            if None in both
            else (np.concatenate([p[0] for p in both]), np.concatenate([p[1] for p in both]))
        )
    return out


def finish(measures: Sequence[str], pieces: dict[str, Any]) -> dict[str, float]:
    """The measures of a block from its merged ``partial_scores``."""
    if pieces["n"] == 0:
        return dict.fromkeys(measures, np.nan)
    return {m: float(_FINISH[m](pieces)) for m in measures}


def _log_loss_sum(y_true: np.ndarray, proba: np.ndarray | None, n_classes: int) -> float:
    """Summed log loss, clipped as scikit-learn's ``log_loss`` does."""
    if proba is None or proba.ndim == 1 or proba.shape[1] != n_classes:
        return np.nan
    eps = np.finfo(proba.dtype).eps
    p = np.clip(proba[np.arange(len(y_true)), y_true], eps, 1 - eps)
    return float(-np.sum(np.log(p)))


def _balanced_accuracy(pieces: dict[str, Any]) -> float:
    """Mean recall over the classes present in the block, as scikit-learn computes it."""
    cm = pieces["confusion"]
    present = cm.sum(axis=1) > 0
    return float(np.mean(np.diag(cm)[present] / cm.sum(axis=1)[present]))


def _auc(pieces: dict[str, Any]) -> float:
    if pieces["auc"] is None:
        return np.nan
    y_true, proba = pieces["auc"]
    n_classes = len(pieces["confusion"])
    if proba.ndim == 1 or proba.shape[1] == 1:  # binary decision scores for class 1
        return _binary_auc(y_true == 1, proba.reshape(-1))
    if n_classes == 2:
        return _binary_auc(y_true == 1, proba[:, 1])
    # Multiclass: macro one-vs-rest over the classes present in this test block.
    aucs = [_binary_auc(y_true == c, proba[:, c]) for c in range(n_classes)]
    aucs = [a for a in aucs if not np.isnan(a)]
    return float(np.mean(aucs)) if aucs else np.nan


def _binary_auc(positive: np.ndarray, scores: np.ndarray) -> float:
    """ROC AUC as the Mann-Whitney statistic (ties count half): equal to scikit-learn's
    ``roc_auc_score`` and one sort instead of a ROC curve."""
    n_pos = int(positive.sum())
    n_neg = len(positive) - n_pos
    if n_pos == 0 or n_neg == 0:
        return np.nan  # AUC is undefined when the test block has one class
    ranks = stats.rankdata(scores)
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def _r2(pieces: dict[str, Any]) -> float:
    if pieces["n"] < 2:
        return np.nan
    if pieces["m2"] == 0:  # constant truth: scikit-learn's force_finite convention
        return 1.0 if pieces["sse"] == 0 else 0.0
    return 1.0 - pieces["sse"] / pieces["m2"]


def _wrong(pieces: dict[str, Any]) -> int:
    return pieces["n"] - int(np.trace(pieces["confusion"]))


_FINISH = {
    # Counts divided last, so the values equal numpy's means of the comparisons exactly.
    "error": lambda p: 100.0 * (_wrong(p) / p["n"]),
    "accuracy": lambda p: (p["n"] - _wrong(p)) / p["n"],
    "balanced_accuracy": _balanced_accuracy,
    "auc": _auc,
    "log_loss": lambda p: p["log_loss"] / p["n"],
    "mse": lambda p: p["sse"] / p["n"],
    "rmse": lambda p: np.sqrt(p["sse"] / p["n"]),
    "mae": lambda p: p["sae"] / p["n"],
    "r2": _r2,
}
