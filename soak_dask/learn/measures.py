"""Test-set measures: classification error in percent, as in the SOAK paper, and others.

Each measure is computed from additive pieces (counts, sums, a confusion matrix; for AUC the
positive and negative rows at each distinct score), so the rows of a test block can be scored
partition by partition."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..schema import MEASURES
from ..tables.table import Task
from .exact_sum import ExactSum

CLASSIFICATION = MEASURES["classification"]
REGRESSION = MEASURES["regression"]
#: The measures that depend on a block's rows only through its confusion matrix.
FROM_CONFUSION: tuple[str, ...] = ("error", "accuracy", "balanced_accuracy")


def check_measures(
    measures: Sequence[str] | str | None, task: Task, *, prior_correction: bool = False
) -> tuple[str, ...]:
    """Validate measure names for ``task``; ``None`` means all of them.

    The first measure is the headline (printed by ``soak run``, opened first in a report,
    ranking a tuned learner's settings). With the prior correction, which predicts the
    decision that maximises balanced accuracy, the default list starts with
    ``balanced_accuracy``; names given are kept in their order.

    >>> check_measures(None, "classification", prior_correction=True)[:2]
    ('balanced_accuracy', 'error')
    """
    known = CLASSIFICATION if task == "classification" else REGRESSION
    if measures is None:
        if prior_correction and task == "classification":
            return ("balanced_accuracy", *(m for m in known if m != "balanced_accuracy"))
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
    if n_classes is None:  # exact sums: the same whatever rows each piece holds
        y_true = np.asarray(y_true, dtype=np.float64)
        return {
            "n": n,
            "sse": ExactSum.of((y_true - y_pred) ** 2),
            "sae": ExactSum.of(np.abs(y_true - y_pred)),
            "sum": ExactSum.of(y_true),
            "squares": ExactSum.of_squares(y_true),
        }
    cells = np.bincount(y_true * n_classes + y_pred, minlength=n_classes * n_classes)
    out: dict[str, Any] = {"n": n, "confusion": cells.reshape(n_classes, n_classes)}
    if "log_loss" in measures:
        out["log_loss"] = _log_loss_sum(y_true, proba, n_classes)
    if "auc" in measures:
        out["auc"] = None if proba is None else _auc_columns(y_true, proba, n_classes)
    return out


def auc_columns(
    y_true: np.ndarray, proba: np.ndarray, n_classes: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """The (positive rows, scores) AUC compares: of the positive class (two classes), or of
    each class against the rest."""
    if proba.ndim == 1 or proba.shape[1] == 1:  # binary decision scores for class 1
        return [(y_true == 1, proba.reshape(-1))]
    if n_classes == 2:
        return [(y_true == 1, proba[:, 1])]
    return [(y_true == c, proba[:, c]) for c in range(n_classes)]


def _auc_columns(y_true: np.ndarray, proba: np.ndarray, n_classes: int) -> list[tuple]:
    """AUC's pieces: for each of ``auc_columns``, the distinct scores in order with the
    positive and negative rows at each."""
    return [
        # int32 counts: 16 bytes a distinct score (a block's ties stay below 2**31 rows).
        _distinct(scores, positive.astype(np.int32), (~positive).astype(np.int32), "quicksort")
        for positive, scores in auc_columns(y_true, proba, n_classes)
    ]


def _distinct(values: np.ndarray, pos: np.ndarray, neg: np.ndarray, kind: str) -> tuple:
    """Distinct ``values`` in order, with the ``pos`` and ``neg`` counts summed over each."""
    if not len(values):
        return values, pos, neg
    order = np.argsort(values, kind=kind)
    values = values[order]
    pos, neg = pos[order], neg[order]
    starts = np.flatnonzero(np.r_[True, values[1:] != values[:-1]])
    if len(starts) == len(values):  # no ties (continuous scores): nothing to sum
        return values, pos, neg
    return values[starts], np.add.reduceat(pos, starts), np.add.reduceat(neg, starts)


def _merge_auc(parts: Sequence[tuple]) -> tuple:
    # "stable" is timsort for floats: it merges the sorted runs in O(n log(runs)).
    return _distinct(*(np.concatenate(arrays) for arrays in zip(*parts, strict=True)), "stable")


def merge(pieces: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Combine the ``partial_scores`` of disjoint sets of rows of one block (all at once, so
    AUC's sorted pieces are merged in one go)."""
    if len(pieces) == 1:
        return pieces[0]
    if "confusion" not in pieces[0]:
        return {k: sum((p[k] for p in pieces[1:]), pieces[0][k]) for k in pieces[0]}
    out = {"n": sum(p["n"] for p in pieces), "confusion": sum(p["confusion"] for p in pieces)}
    if "log_loss" in pieces[0]:
        out["log_loss"] = sum(p["log_loss"] for p in pieces)
    if "auc" in pieces[0]:
        columns = [p["auc"] for p in pieces]
        out["auc"] = (
            None
            if any(c is None for c in columns)
            else [_merge_auc(parts) for parts in zip(*columns, strict=True)]
        )
    return out


def finish(measures: Sequence[str], pieces: dict[str, Any]) -> dict[str, float]:
    """The measures of a block from its merged ``partial_scores``."""
    if pieces["n"] == 0:
        return dict.fromkeys(measures, np.nan)
    return {m: float(_FINISH[m](pieces)) for m in measures}


def _log_loss_sum(y_true: np.ndarray, proba: np.ndarray | None, n_classes: int) -> ExactSum | float:
    """Summed log loss (exactly; NaN without class scores), clipped as scikit-learn's
    ``log_loss`` does."""
    loss = row_log_loss(y_true, proba, n_classes)
    return np.nan if loss is None else ExactSum.of(loss)


def row_log_loss(y_true: np.ndarray, proba: np.ndarray | None, n_classes: int) -> np.ndarray | None:
    """Each row's log loss, clipped as scikit-learn's ``log_loss`` does (None without class
    probabilities)."""
    if proba is None or proba.ndim == 1 or proba.shape[1] != n_classes:
        return None
    eps = np.finfo(proba.dtype).eps
    return -np.log(np.clip(proba[np.arange(len(y_true)), y_true], eps, 1 - eps))


def _balanced_accuracy(pieces: dict[str, Any]) -> float:
    """Mean recall over the classes present in the block, as scikit-learn computes it."""
    cm = pieces["confusion"]
    present = cm.sum(axis=1) > 0
    return float(np.mean(np.diag(cm)[present] / cm.sum(axis=1)[present]))


def _auc(pieces: dict[str, Any]) -> float:
    """Binary AUC, or (more classes) the macro one-vs-rest mean over the classes present in
    the block."""
    if pieces["auc"] is None:
        return np.nan
    aucs = [_binary_auc(*column) for column in pieces["auc"]]
    aucs = [a for a in aucs if not np.isnan(a)]
    return float(np.mean(aucs)) if aucs else np.nan


def _binary_auc(values: np.ndarray, pos: np.ndarray, neg: np.ndarray) -> float:
    """ROC AUC as the Mann-Whitney statistic (ties count half), equal to scikit-learn's
    ``roc_auc_score``: counted in integers, so rounded once, by the final division."""
    pos, neg = pos.astype(np.int64), neg.astype(np.int64)
    n_pos, n_neg = int(pos.sum()), int(neg.sum())
    if n_pos == 0 or n_neg == 0 or np.isnan(values).any():
        return np.nan  # undefined with one class in the block (or scores that are NaN)
    below = np.cumsum(neg) - neg  # negatives scored lower than each distinct score
    return (2 * int(pos @ below) + int(pos @ neg)) / (2 * n_pos * n_neg)


def _r2(pieces: dict[str, Any]) -> float:
    if pieces["n"] < 2:
        return np.nan
    if pieces["sum"].special is not None or pieces["squares"].special is not None:
        return np.nan
    # The squared deviations from the mean, exactly, from the exact sums: rounded once.
    m2 = pieces["squares"].fraction() - pieces["sum"].fraction() ** 2 / pieces["n"]
    sse = float(pieces["sse"])
    if m2 == 0:  # constant truth: scikit-learn's force_finite convention
        return 1.0 if sse == 0 else 0.0
    return 1.0 - sse / float(m2)


def _wrong(pieces: dict[str, Any]) -> int:
    return pieces["n"] - int(np.trace(pieces["confusion"]))


_FINISH = {
    # Counts divided last, so the values equal numpy's means of the comparisons exactly.
    "error": lambda p: 100.0 * (_wrong(p) / p["n"]),
    "accuracy": lambda p: (p["n"] - _wrong(p)) / p["n"],
    "balanced_accuracy": _balanced_accuracy,
    "auc": _auc,
    "log_loss": lambda p: float(p["log_loss"]) / p["n"],
    "mse": lambda p: float(p["sse"]) / p["n"],
    "rmse": lambda p: np.sqrt(float(p["sse"]) / p["n"]),
    "mae": lambda p: float(p["sae"]) / p["n"],
    "r2": _r2,
}
