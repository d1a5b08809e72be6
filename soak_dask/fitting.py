"""What runs on a worker: fit a learner on one train set and score its test blocks."""

from __future__ import annotations

import copy
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, clone

from .measures import score
from .sizes import downsample


@dataclass(frozen=True)
class RunSpec:
    """Settings shared by every task of a run (small: sent with each task)."""

    features: tuple[str, ...]
    label: str
    subset: str
    fold_column: str
    measures: tuple[str, ...]
    classes: tuple | None = None
    group: str | None = None
    error_score: float | str = np.nan
    seed: int = 1


@dataclass(frozen=True)
class FitSpec:
    """One task: a learner on one distinct train set, predicting the test blocks it serves."""

    learner: str
    fit_id: int
    fold: int
    test_subsets: tuple
    n_groups: int = 0  # down-sample the train set to this many groups (0: keep all)
    sample: int = 0


@dataclass
class FitState:
    """A learner being fitted incrementally, passed from one block's task to the next."""

    estimator: BaseEstimator
    n_train: int = 0
    seconds: float = 0.0
    message: str = ""
    started: bool = False


def split_frame(
    frame: pd.DataFrame, fold: int, fold_column: str, subset: str, test_subsets: tuple | list
) -> tuple[pd.DataFrame, dict[Any, pd.DataFrame]]:
    """Split a fit's rows into its train rows and one test block per test subset."""
    in_fold = (frame[fold_column] == fold).to_numpy()
    test = frame.loc[in_fold]
    blocks = {sub: test.loc[(test[subset] == sub).to_numpy()] for sub in test_subsets}
    return frame.loc[~in_fold], blocks


def fit_and_score(
    frame: pd.DataFrame, estimator: BaseEstimator, fit: FitSpec, run: RunSpec
) -> list[dict[str, Any]]:
    """Fit a clone of ``estimator`` on the train rows of ``frame``; score each test block.

    With ``fit.n_groups`` > 0 the train rows are first down-sampled to that many groups
    (``soak_dask.sizes.downsample``). Returns one small record per test subset.
    """
    train, blocks = split_frame(frame, fit.fold, run.fold_column, run.subset, fit.test_subsets)
    if fit.n_groups:
        label = run.label if run.classes is not None else None
        train = downsample(
            train, fit.n_groups, group=run.group, label=label, seed=run.seed, sample=fit.sample
        )
    state = FitState(clone(estimator), n_train=len(train))
    start = time.perf_counter()
    _, state.message = guard(run, lambda: state.estimator.fit(*_xy(train, run)))
    state.seconds = time.perf_counter() - start
    return score_blocks(state, blocks, fit, run)


def partial_fit_step(
    state: FitState | BaseEstimator, part: pd.DataFrame, run: RunSpec, count_rows: bool = True
) -> FitState:
    """Feed one block of train rows to ``partial_fit`` (the first call starts from a clone).

    ``count_rows`` is False after the first epoch, so ``n_train`` counts each row once.
    """
    # A copy, never the previous task's object: a retried task must see its own input.
    state = FitState(clone(state)) if not isinstance(state, FitState) else copy.deepcopy(state)
    if state.message or len(part) == 0:
        return state
    X, y = _xy(part, run)
    kwargs = {"classes": np.asarray(run.classes)} if run.classes is not None else {}
    start = time.perf_counter()
    _, state.message = guard(run, lambda: state.estimator.partial_fit(X, y, **kwargs))
    state.seconds += time.perf_counter() - start
    state.n_train += len(part) if count_rows else 0
    state.started = True
    return state


def score_fitted(
    state: FitState, test: pd.DataFrame, fit: FitSpec, run: RunSpec
) -> list[dict[str, Any]]:
    """Score a learner fitted elsewhere (incrementally, or from block statistics)."""
    _, blocks = split_frame(test, fit.fold, run.fold_column, run.subset, fit.test_subsets)
    if not state.started and not state.message:
        state.message = "no train rows reached the learner"
    return score_blocks(state, blocks, fit, run)


def score_many(
    fitted: list[tuple[FitState, FitSpec]], test: pd.DataFrame, run: RunSpec
) -> list[dict[str, Any]]:
    """Score several fitted learners of one fold on that fold's test rows, read once."""
    return [r for state, fit in fitted for r in score_fitted(state, test, fit, run)]


def score_blocks(
    state: FitState, blocks: dict[Any, pd.DataFrame], fit: FitSpec, run: RunSpec
) -> list[dict[str, Any]]:
    """One record per test block: the measures, counts and timings."""
    records = []
    for sub, block in blocks.items():
        start = time.perf_counter()
        if state.message:
            values = dict.fromkeys(run.measures, run.error_score)
        else:
            values = _predict_and_score(state.estimator, *_xy(block, run), run)
        records.append(
            {
                "learner": fit.learner,
                "fit_id": fit.fit_id,
                "test_subset": sub,
                "n_train": state.n_train,
                "n_test": len(block),
                "fit_seconds": state.seconds,
                **values,
                "predict_seconds": time.perf_counter() - start,
                "message": state.message,
            }
        )
    return records


def _xy(frame: pd.DataFrame, run: RunSpec) -> tuple[np.ndarray, np.ndarray]:
    return frame[list(run.features)].to_numpy(np.float64), frame[run.label].to_numpy()


def guard(run: RunSpec, call: Callable[[], Any]) -> tuple[Any, str]:
    """``call()`` and ``""``; a failure gives ``(None, message)`` (scikit-learn's
    ``error_score``), or raises with ``error_score="raise"``."""
    try:
        return call(), ""
    except Exception as err:  # noqa: BLE001 -- reported like scikit-learn's error_score
        if run.error_score == "raise":
            raise
        return None, "".join(traceback.format_exception_only(err)).strip()


def _predict_and_score(est, X: np.ndarray, y: np.ndarray, run: RunSpec) -> dict[str, float]:
    if len(y) == 0:
        return dict.fromkeys(run.measures, np.nan)
    pred = est.predict(X)
    proba, classes = None, run.classes
    if classes is not None:
        if {"auc", "log_loss"} & set(run.measures):
            proba = _class_scores(est, X, classes)
        # Integer codes: the metrics sort labels many times, and sorting strings is slow.
        index = pd.Index(classes)
        y, pred, classes = index.get_indexer(y), index.get_indexer(pred), range(len(classes))
    with warnings.catch_warnings():
        # A test block may lack some predicted classes; the measures are still well defined.
        warnings.filterwarnings("ignore", message=".*y_pred contains classes not in y_true")
        warnings.filterwarnings("ignore", message="A single label was found")
        return score(run.measures, y, pred, proba, classes)


def _class_scores(est, X: np.ndarray, classes: tuple) -> np.ndarray | None:
    """Probabilities in the table's class order (0 for classes unseen in training)."""
    if hasattr(est, "predict_proba"):
        try:
            raw = est.predict_proba(X)
        except AttributeError:  # e.g. SGDClassifier with hinge loss has no probabilities
            raw = None
        if raw is not None:
            proba = np.zeros((len(X), len(classes)))
            index = {c: i for i, c in enumerate(classes)}
            for j, c in enumerate(est.classes_):
                proba[:, index[c]] = raw[:, j]
            return proba
    if hasattr(est, "decision_function") and len(est.classes_) == 2 == len(classes):
        return est.decision_function(X).reshape(-1, 1)  # AUC only: not probabilities
    return None
