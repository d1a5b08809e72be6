"""The final model: one fit of a learner on all training rows, scored on the reserved test split
(with a bootstrap interval over its rows) and on its own training rows (the resubstitution
score of the .632 estimates). Runs on a worker."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, clone

from ..hashing import salt, seeded_hash
from ..learn.groups import fit_with_groups
from ..learn.measures import finish, partial_scores
from ..learn.tuning import fit_info
from .fitting import RunSpec, fit_arrays, guard, predict_codes, score_arrays

#: Bootstrap resamples of the test split's rows behind its 95 % interval.
N_BOOT = 1000


def fit_final(
    train_parts: list[pd.DataFrame],
    test_parts: list[pd.DataFrame],
    estimator: BaseEstimator,
    run: RunSpec,
    resubstitution: bool,
    name: str = "",
) -> dict[str, Any]:
    """Fit a clone of ``estimator`` (the learner ``name``) on the training rows; score the test
    rows (if any) with an interval, and the training rows with ``resubstitution``.

    A fit or a scoring that raises is handled as ``run.error_score`` says, like any other fit:
    NaN scores, ``model`` None and the error in ``message``; or, with ``"raise"``, an error
    naming the learner.

    Returns
    -------
    dict
        ``model``, ``n_train``, ``fit_seconds``, ``info`` (what it chose: ``fit_info``),
        ``message`` (empty unless it failed); ``test`` (measure -> (estimate, low, high)) and
        ``n_test`` with test rows, and for classification ``test_right`` (which test rows it
        classifies right, ``np.packbits``); ``resubstitution`` (measure -> score) and
        ``no_information`` (the .632+ no-information error, classification) if asked.
    """
    train = pd.concat(train_parts)
    test = pd.concat(test_parts) if test_parts else train.iloc[:0]
    try:
        out, message = guard(run, lambda: _final(train, test, estimator, run, resubstitution))
    except Exception as err:  # error_score="raise": say whose fit it was
        raise ValueError(f"learner {name!r}, final model (all training rows): {err}") from err
    if out is not None:
        return {**out, "message": ""}
    nan = float("nan")
    failed: dict[str, Any] = {"model": None, "n_train": len(train), "fit_seconds": nan}
    failed.update(info={}, message=message)
    if len(test):
        failed.update(test={m: (nan, nan, nan) for m in run.measures}, n_test=len(test))
    if resubstitution:
        failed["resubstitution"] = {m: nan for m in run.measures}
        if run.classes is not None:
            failed["no_information"] = nan
    return failed


def _final(
    train: pd.DataFrame,
    test: pd.DataFrame,
    estimator: BaseEstimator,
    run: RunSpec,
    resubstitution: bool,
) -> dict[str, Any]:
    start = time.perf_counter()
    groups = train[run.group].to_numpy() if run.group else None
    model = fit_with_groups(clone(estimator), *fit_arrays(train, run), groups)
    out: dict[str, Any] = {
        "model": model,
        "n_train": len(train),
        "fit_seconds": time.perf_counter() - start,
        "info": fit_info(model),
    }
    if len(test):
        groups = None if run.group is None else test[run.group].to_numpy()
        out["test"] = interval(model, *score_arrays(test, run), run, groups)
        out["n_test"] = len(test)
        if run.classes is not None:  # McNemar's test pairs the learners' rows (test_right_wrong)
            X, y = score_arrays(test, run)
            out["test_right"] = np.packbits(predict_codes(model, X, run)[0] == y)
    if resubstitution:
        y, pred, proba = _predicted(model, *score_arrays(train, run), run)
        out["resubstitution"] = finish(run.measures, _partial(run, y, pred, proba))
        if run.classes is not None:
            out["no_information"] = no_information_error(y, pred, len(run.classes))
    return out


def interval(
    model: BaseEstimator,
    X: np.ndarray,
    y: np.ndarray,
    run: RunSpec,
    groups: np.ndarray | None = None,
    n_boot: int = N_BOOT,
) -> dict[str, tuple[float, float, float]]:
    """Each measure on the rows, and its bootstrap 95 % percentile interval: rows resampled,
    or whole groups with ``groups`` (rows of a group are not independent, so resampling rows
    would understate the uncertainty). Seeded by the run's seed: same run, same interval."""
    y, pred, proba = _predicted(model, X, y, run)
    estimate = finish(run.measures, _partial(run, y, pred, proba))
    rng = np.random.default_rng(int(seeded_hash(run.seed, salt("test_split_interval"))[0]))
    units = None if groups is None else _group_rows(groups)
    draws = {m: np.empty(n_boot) for m in run.measures}
    for b in range(n_boot):
        if units is None:
            rows = rng.integers(0, len(y), len(y))
        else:
            rows = np.concatenate([units[u] for u in rng.integers(0, len(units), len(units))])
        scores = finish(run.measures, _partial(run, y[rows], pred[rows], _take(proba, rows)))
        for m in run.measures:
            draws[m][b] = scores[m]
    out = {}
    for m in run.measures:
        finite = draws[m][np.isfinite(draws[m])]
        low, high = np.percentile(finite, [2.5, 97.5]) if len(finite) else (np.nan, np.nan)
        out[m] = (float(estimate[m]), float(low), float(high))
    return out


def _group_rows(groups: np.ndarray) -> list[np.ndarray]:
    """The row indices of each group."""
    codes, _ = pd.factorize(groups)
    order = np.argsort(codes, kind="stable")
    return np.split(order, np.flatnonzero(np.diff(codes[order])) + 1)


def no_information_error(y: np.ndarray, pred: np.ndarray, n_classes: int) -> float:
    """Efron and Tibshirani's no-information error rate γ = Σ_k p_k (1 − q_k), in percent: p
    the class shares of the labels, q of the predictions."""
    p = np.bincount(y, minlength=n_classes) / len(y)
    q = np.bincount(pred, minlength=n_classes) / len(pred)
    return float(100 * np.sum(p * (1 - q)))


def _predicted(
    model: BaseEstimator, X: np.ndarray, y: np.ndarray, run: RunSpec
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    pred, proba = predict_codes(model, X, run)
    return y, pred, proba


def _partial(run: RunSpec, y: np.ndarray, pred: np.ndarray, proba: np.ndarray | None) -> Any:
    n_classes = None if run.classes is None else len(run.classes)
    return partial_scores(run.measures, y, pred, proba, n_classes)


def _take(proba: np.ndarray | None, rows: np.ndarray) -> np.ndarray | None:
    return None if proba is None else proba[rows]
