"""The final model: one fit of a learner on all training rows, scored on the reserved test split
(with a bootstrap interval over its rows) and on its own training rows (the resubstitution
score of the .632 estimates). ``final_tasks`` makes its tasks on the client, with the run's
fitting options (a row cap, incremental learners) and a memory check before any fit; the rest
runs on a worker."""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from functools import partial
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, clone

from ..hashing import salt, seeded_hash
from ..learn.groups import fit_with_groups
from ..learn.measures import finish, merge, partial_scores
from ..learn.tuning import fit_info
from ..split.plan import Fit, Plan, Selection
from .closed_form import fit_from_stats, is_additive
from .fit_stats import fit_stats
from .fitting import (
    FitState,
    RunSpec,
    fit_arrays,
    guard,
    partial_fit_chain,
    predict_codes,
    score_arrays,
    select_rows,
)
from .fitting_options import FittingOptions
from .memory import (
    check_final_memory,
    check_test_split_memory,
    count_fit_rows,
    worker_memory_limit,
)
from .rowcap import capped, keep_rates
from .strategies import Context

#: Bootstrap resamples of the test split's rows behind its 95 % interval.
N_BOOT = 1000


def fit_final(
    train_parts: list[pd.DataFrame],
    test_parts: list[pd.DataFrame],
    estimator: BaseEstimator,
    run: RunSpec,
    resubstitution: bool,
    name: str = "",
    cap: tuple[int, tuple] | None = None,
) -> dict[str, Any]:
    """Fit a clone of ``estimator`` (the learner ``name``) on the training rows; score the test
    rows (if any) with an interval, and the training rows with ``resubstitution``.

    ``cap``: (``max_train_rows``, the training rows per class): the rows (sampled by their
    partitions, ``rowcap.sampled``) are capped at exactly that many, each class keeping its
    share (``rowcap.capped``); the resubstitution score is then on that sample, the rows the
    model was fitted on.

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
    if cap is not None:
        train = capped(train, *cap, run.seed, run.label, run.classes)
    test = pd.concat(test_parts) if test_parts else train.iloc[:0]

    def final() -> dict[str, Any]:
        start = time.perf_counter()
        groups = train[run.group].to_numpy() if run.group else None
        model = fit_with_groups(clone(estimator), *fit_arrays(train, run), groups)
        seconds = time.perf_counter() - start
        state = FitState(model, n_train=len(train), seconds=seconds, started=True)
        pieces = [resubstitution_piece(state, train, run)] if resubstitution else None
        return _scored(state, test, pieces, run)

    return _guarded(final, len(train), len(test), run, resubstitution, name)


def score_final(
    state: FitState,
    test_parts: list[pd.DataFrame],
    pieces: list[tuple] | None,
    run: RunSpec,
    name: str = "",
) -> dict[str, Any]:
    """``fit_final``'s record of a model fitted elsewhere (fed block by block: ``state``),
    from its resubstitution ``pieces`` (one per training block, ``resubstitution_piece``;
    None: not asked); only the test split's rows are gathered."""
    test = pd.concat(test_parts) if test_parts else None

    def final() -> dict[str, Any]:
        if state.message:
            raise RuntimeError(state.message)
        if not state.started:
            raise RuntimeError("no train rows reached the learner")
        return _scored(state, test, pieces, run)

    n_test = 0 if test is None else len(test)
    return _guarded(final, state.n_train, n_test, run, pieces is not None, name)


def _guarded(
    final: Any, n_train: int, n_test: int, run: RunSpec, resubstitution: bool, name: str
) -> dict[str, Any]:
    """``final()`` with its failure handled as ``run.error_score`` says."""
    try:
        out, message = guard(run, final)
    except Exception as err:  # error_score="raise": say whose fit it was
        raise ValueError(f"learner {name!r}, final model (all training rows): {err}") from err
    if out is not None:
        return {**out, "message": ""}
    nan = float("nan")
    failed: dict[str, Any] = {"model": None, "n_train": n_train, "fit_seconds": nan}
    failed.update(info={}, message=message)
    if n_test:
        failed.update(test={m: (nan, nan, nan) for m in run.measures}, n_test=n_test)
    if resubstitution:
        failed["resubstitution"] = {m: nan for m in run.measures}
        if run.classes is not None:
            failed["no_information"] = nan
    return failed


def _scored(
    state: FitState, test: pd.DataFrame | None, pieces: list[tuple] | None, run: RunSpec
) -> dict[str, Any]:
    """The record of a fitted final model: the test split scored (each row predicted once),
    and the resubstitution score from its ``pieces``."""
    model = state.estimator
    out: dict[str, Any] = {
        "model": model,
        "n_train": state.n_train,
        "fit_seconds": state.seconds,
        "info": fit_info(model),
    }
    if test is not None and len(test):
        X, y = score_arrays(test, run)
        pred, proba = predict_codes(model, X, run)
        groups = None if run.group is None else test[run.group].to_numpy()
        out["test"] = interval(model, X, y, run, groups, predicted=(pred, proba))
        out["n_test"] = len(test)
        if run.classes is not None:  # McNemar's test pairs the learners' rows (test_right_wrong)
            out["test_right"] = np.packbits(pred == y)
    if pieces is not None:
        out["resubstitution"] = finish(run.measures, merge([p[0] for p in pieces]))
        if run.classes is not None:
            truth, said = (sum(p[i] for p in pieces) for i in (1, 2))
            out["no_information"] = no_information_from_counts(truth, said)
    return out


def resubstitution_piece(
    state: FitState | BaseEstimator, frame: pd.DataFrame, run: RunSpec
) -> tuple[dict[str, Any], np.ndarray | None, np.ndarray | None]:
    """A fitted model's partial scores on rows of its own training set, with the counts of
    their classes and of its predictions (classification; the no-information error's): pieces
    of the resubstitution score, one per block, merged by ``score_final``."""
    model = state.estimator if isinstance(state, FitState) else state
    X, y = score_arrays(frame, run)
    if isinstance(state, FitState) and (state.message or not state.started):
        return partial_scores(run.measures, y[:0], y[:0]), None, None
    pred, proba = predict_codes(model, X, run)
    if run.classes is None:
        return _partial(run, y, pred, proba), None, None
    k = len(run.classes)
    counts = [np.bincount(v[v >= 0], minlength=k) for v in (y, pred)]
    return _partial(run, y, pred, proba), *counts


def interval(
    model: BaseEstimator,
    X: np.ndarray,
    y: np.ndarray,
    run: RunSpec,
    groups: np.ndarray | None = None,
    n_boot: int = N_BOOT,
    predicted: tuple[np.ndarray, np.ndarray | None] | None = None,
) -> dict[str, tuple[float, float, float]]:
    """Each measure on the rows, and its bootstrap 95 % percentile interval: rows resampled,
    or whole groups with ``groups`` (rows of a group are not independent, so resampling rows
    would understate the uncertainty). Seeded by the run's seed: same run, same interval.
    ``predicted``: the model's (predictions, class scores) of ``X``, if made already."""
    pred, proba = predict_codes(model, X, run) if predicted is None else predicted
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
    counts = (np.bincount(v, minlength=n_classes) for v in (y, pred))
    return no_information_from_counts(*counts)


def no_information_from_counts(truth: np.ndarray, predicted: np.ndarray) -> float:
    """``no_information_error`` from the counts of each class among the labels and the
    predictions."""
    p, q = truth / truth.sum(), predicted / predicted.sum()
    return float(100 * np.sum(p * (1 - q)))


def _partial(run: RunSpec, y: np.ndarray, pred: np.ndarray, proba: np.ndarray | None) -> Any:
    n_classes = None if run.classes is None else len(run.classes)
    return partial_scores(run.measures, y, pred, proba, n_classes)


def _take(proba: np.ndarray | None, rows: np.ndarray) -> np.ndarray | None:
    return None if proba is None else proba[rows]


def final_tasks(
    ctx: Context, held: dd.DataFrame | None, fitting: FittingOptions, resubstitution: bool
) -> dict[str, Any]:
    """One delayed final model per learner of ``ctx`` on all of ``ctx.data`` (the training
    rows), scoring ``held`` (the test split, if any) and with ``resubstitution`` its training
    rows: capped at ``fitting.max_train_rows`` (an exact stratified sample, as any fit's) and,
    with ``incremental``, learners with ``partial_fit`` fed block by block (so only the test
    split is gathered). Made before any fit runs, so a final model that cannot fit a worker's
    memory is refused first (``memory.FitMemoryError``), with the outer loop's fits unmade."""
    rows = _final_rows(ctx, held, fitting.max_train_rows)
    from_stats = stats_states(ctx, fitting)
    fed = [
        name
        for name, est in ctx.estimators.items()
        if fitting.incremental and hasattr(est, "partial_fit") and name not in from_stats
    ]
    if rows is not None:
        gathered = [name for name in ctx.estimators if name not in fed and name not in from_stats]
        n_train, n_test = int(sum(rows.class_rows)), rows.n_test
        limit, n_features = rows.limit, len(ctx.run.features)
        check_final_memory(gathered, n_train, n_test, n_features, limit, fitting.max_train_rows)
        scoring = [name for name in ctx.estimators if name not in gathered]
        check_test_split_memory(scoring, n_test, n_features, limit)
    run, max_rows = ctx.run, fitting.max_train_rows
    columns = [*run.features, run.label, *([run.group] if run.group else [])]
    test = held[columns].to_delayed() if held is not None else []
    class_rows = () if rows is None else rows.class_rows
    tasks = {}
    for name, est in ctx.estimators.items():
        exact = name not in fed and name not in from_stats
        parts = _train_parts(ctx, class_rows, max_rows, exact)
        if exact:
            cap = (max_rows, class_rows) if max_rows is not None else None
            tasks[name] = dask.delayed(fit_final, pure=True)(
                parts, test, est, run, resubstitution, name, cap
            )
            continue
        state = from_stats.get(name) or partial_fit_chain(est, parts, run, fitting.epochs)
        pieces = (
            [dask.delayed(resubstitution_piece, pure=True)(state, p, run) for p in parts]
            if resubstitution
            else None
        )
        tasks[name] = dask.delayed(score_final, pure=True)(state, test, pieces, run, name)
    return tasks


def stats_states(ctx: Context, fitting: FittingOptions) -> dict[str, FitState]:
    """The final models of the additive learners fitted from one pass of statistics of all
    training rows (as their outer fits are, ``strategies.OnePass``): no task gathers those rows,
    and the models predict the class labels, as saved models must. Empty without one-pass fits
    (``onepass=False``, a row cap), or when the statistics cannot be made (non-finite values:
    those models are then fitted on their rows and report their own failures)."""
    names = [n for n, est in ctx.estimators.items() if is_additive(est) is not None]
    if not (fitting.from_statistics and names):
        return {}
    run = ctx.run
    classes = None if run.classes is None else list(run.classes)
    lazy = fit_stats(ctx.data, {0: Fit(Selection())}, run.features, run.label, classes)
    try:
        stats = ctx.client.compute(lazy).result() if ctx.client is not None else lazy.compute()
    except ValueError as err:
        warnings.warn(f"one-pass statistics unavailable ({err}); final models fitted on rows",
                      stacklevel=4)  # fmt: skip
        return {}
    pooled, out = stats.train(0), {}
    for name in names:
        start = time.perf_counter()
        fitted, message = guard(run, partial(fit_from_stats, ctx.estimators[name], pooled))
        model = ctx.estimators[name] if fitted is None else fitted
        seconds = time.perf_counter() - start
        out[name] = FitState(model, int(pooled.n_rows), seconds, message, started=True)
    return out


@dataclass(frozen=True)
class FinalRows:
    """The rows a final model reads: training rows per class, test split rows, and the
    workers' memory limit (bytes, None if unknown)."""

    class_rows: tuple[int, ...]
    n_test: int
    limit: int | None


def _final_rows(ctx: Context, held: dd.DataFrame | None, max_rows: int | None) -> FinalRows | None:
    """The final models' rows, counted (one pass over the label, one over the test split)
    when a row cap needs the class shares or a worker limit is known; else None."""
    limit = worker_memory_limit(ctx.client)
    if max_rows is None and limit is None:
        return None
    fits = pd.DataFrame({"train": [Selection()], "weights": [None], "blocks": [()]})
    blocks = pd.DataFrame({"test": pd.Series([], dtype=object)})
    plan = Plan(fits, blocks, pd.DataFrame())
    classes = list(ctx.run.classes) if ctx.run.classes else None
    class_rows, _ = count_fit_rows(ctx.data, plan, ctx.client, ctx.run.label, classes)
    n_test = 0
    if held is not None and limit is not None:
        lazy = held.map_partitions(len).sum()
        n_test = int(ctx.client.compute(lazy).result() if ctx.client else lazy.compute())
    return FinalRows(tuple(int(n) for n in class_rows.iloc[0]), n_test, limit)


def _train_parts(ctx: Context, class_rows: tuple, max_rows: int | None, exact: bool) -> list:
    """The delayed training blocks of a final model: under a cap, each block's rows sampled
    as a capped fit's (``rowcap.keep_rates``; ``exact``: with the margin of an exact draw)."""
    rates = None if max_rows is None else keep_rates(class_rows, max_rows, margin=exact)
    if rates is None:
        return ctx.data.to_delayed()
    run, data = ctx.run, ctx.data
    args = (Selection(), (), rates, run.seed, run.label, run.classes, None)
    return data.map_partitions(select_rows, *args, meta=data._meta).to_delayed()
