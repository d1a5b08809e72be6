"""The final model: one fit of a learner on all training rows, scored on the reserved test split
(with a bootstrap interval over its rows) and on its own training rows (the resubstitution
score of the .632 estimates). ``final_tasks`` makes its tasks on the client, with the run's
fitting options (a row cap, incremental learners) and a memory check before any fit; the rest
runs on a worker. However the model is fitted (from statistics, fed block by block, capped or
on its gathered rows), the test split is scored partition by partition (``final_scores``)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, clone

from ..learn.across_workers import trains_across_workers
from ..learn.groups import fit_with_groups
from ..learn.measures import finish, merge, partial_scores
from ..learn.tuning import fit_info
from ..reduction import list_call
from ..split.folds import table_class_rows
from ..split.plan import Fit, Selection
from ..user_warning import warn_user
from ..workers import WorkerMemory, worker_memory
from .across_workers import check_across_memory, check_client, fit_across
from .closed_form import fit_from_stats, is_additive
from .final_scores import (
    counts_only,
    final_error,
    partial_of,
    partition_outcome,
    split_scores,
)
from .fit_stats import FitStats, fit_stats
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
from .memory import check_final_memory, check_test_split_memory
from .rowcap import capped, keep_rates
from .score_memory import check_resubstitution_memory, n_workers
from .strategies import Context

#: The final models' fit (all training rows) among statistics made with the outer fits':
#: an id no plan's fit has.
FINAL_FIT = -1


def fit_final(
    train_parts: list[pd.DataFrame],
    estimator: BaseEstimator,
    run: RunSpec,
    resubstitution: bool,
    name: str = "",
    cap: tuple[int, tuple] | None = None,
) -> tuple[FitState, tuple | None]:
    """Fit a clone of ``estimator`` (the learner ``name``) on the gathered training rows; with
    ``resubstitution``, its ``resubstitution_piece`` of those rows (else None).

    ``cap``: (``max_train_rows``, the training rows per class): the rows (sampled by their
    partitions, ``rowcap.sampled``) are capped at exactly that many, each class keeping its
    share (``rowcap.capped``); the resubstitution score is then on that sample, the rows the
    model was fitted on.

    A fit (or its resubstitution scoring) that raises is handled as ``run.error_score`` says,
    like any other fit: the message in the state (its record scores NaN, ``score_final``), or
    with ``"raise"`` an error naming the learner. The test split is scored partition by
    partition (``final_scores``), never here.
    """
    train = pd.concat(train_parts)
    if cap is not None:
        train = capped(train, *cap, run.seed, run.label, run.classes)
    groups = train[run.group].to_numpy() if run.group else None
    start = time.perf_counter()
    try:
        fit = partial(fit_with_groups, clone(estimator), *fit_arrays(train, run), groups)
        model, message = guard(run, fit)
        state = FitState(estimator if model is None else model, len(train), message=message)
        state.seconds, state.started = time.perf_counter() - start, True
        piece, failure = (
            guard(run, partial(resubstitution_piece, state, train, run))
            if resubstitution and not message
            else (None, "")
        )
    except Exception as err:  # error_score="raise": say whose fit it was
        raise final_error(name, err) from err
    state.message = message or failure
    return state, piece


def score_final(
    state: FitState,
    split: dict[str, Any],
    resubstitution: dict[str, Any] | None,
    run: RunSpec,
    name: str = "",
) -> dict[str, Any]:
    """The record of a final model however it was fitted (on gathered rows, from statistics
    or fed block by block: ``state``), from its test split's scores (``split``:
    ``final_scores.split_scores``, empty without a test split) and its resubstitution scores
    (``resubstitution_scores``; None: not asked), each made in its own task so that their
    peaks of memory do not add up.

    Returns
    -------
    dict
        ``model``, ``n_train``, ``fit_seconds``, ``info`` (what it chose: ``fit_info``),
        ``message`` (empty unless it failed); ``test`` (measure -> (estimate, low, high)) and
        ``n_test`` with test rows, and for classification ``test_right`` (which test rows it
        classifies right, ``np.packbits``); ``resubstitution`` (measure -> score) and
        ``no_information`` (the .632+ no-information error, classification) if asked. A
        failed fit or prediction scores NaN, with no model, as ``run.error_score`` says.
    """
    message = state.message or ("" if state.started else "no train rows reached the learner")
    parts = [split, resubstitution or {}]
    message = message or next((p["message"] for p in parts if p.get("message")), "")

    def final() -> dict[str, Any]:
        model = state.estimator
        out = {"model": model, "n_train": state.n_train, "fit_seconds": state.seconds}
        out["info"] = fit_info(model)
        for part in parts:
            out.update((k, v) for k, v in part.items() if k != "message")
        return out

    n_test = split.get("n_test", 0)
    failed = dict(n_train=state.n_train, n_test=n_test, resubstitution=resubstitution is not None)
    return _guarded(final, run, name, message, **failed)


def resubstitution_scores(pieces: list[tuple], run: RunSpec, name: str = "") -> dict[str, Any]:
    """The resubstitution score (measure -> score) and, for classification, the .632+
    no-information error of a final model, from its ``resubstitution_piece`` of each training
    block: ``resubstitution`` and ``no_information``; or (a failure, as ``run.error_score``
    says) its ``message``."""

    def scores() -> dict[str, Any]:
        out: dict[str, Any] = {
            "resubstitution": finish(run.measures, merge([p[0] for p in pieces]))
        }
        if run.classes is not None:
            truth, said = (sum(p[i] for p in pieces) for i in (1, 2))
            out["no_information"] = no_information_from_counts(truth, said)
        return out

    try:
        out, message = guard(run, scores)
    except Exception as err:  # error_score="raise"
        raise final_error(name, err) from err
    return {"message": message} if message else out


def _guarded(
    final: Any,
    run: RunSpec,
    name: str,
    message: str,
    *,
    n_train: int,
    n_test: int,
    resubstitution: bool,
) -> dict[str, Any]:
    """``final()``, or (it raised, or the fit had failed: ``message``) the failed record, as
    ``run.error_score`` says."""
    if not message:
        try:
            out, message = guard(run, final)
        except Exception as err:  # error_score="raise": say whose fit it was
            raise final_error(name, err) from err
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
        return partial_of(run, y, pred, proba), None, None
    k = len(run.classes)
    counts = [np.bincount(v[v >= 0], minlength=k) for v in (y, pred)]
    return partial_of(run, y, pred, proba), *counts


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


def final_tasks(
    ctx: Context,
    held: dd.DataFrame | None,
    fitting: FittingOptions,
    resubstitution: bool,
    stats: FitStats | None = None,
) -> dict[str, Any]:
    """One delayed final model per learner of ``ctx`` on all of ``ctx.data``, the rows of
    the training table ``ctx.table`` (without a design's key columns, which no final model
    reads), scoring ``held`` (the test split, if any) and with ``resubstitution`` its
    training rows: additive learners from one pass of statistics (``stats_states``), with
    ``incremental`` learners with ``partial_fit`` fed block by block, those that train
    across the workers there (``across_workers.fit_across``), the others on their gathered
    rows, capped at ``fitting.max_train_rows`` (an exact stratified sample, as any fit's).
    Every model scores the test split a partition at a time (``final_scores``). Made before
    any fit runs, so a final model that cannot fit a worker's memory is refused first
    (``workers.FitMemoryError``), with the outer loop's fits unmade. ``stats``: statistics
    made with the outer fits' (``strategies.OnePass.shared``), holding ``FINAL_FIT``'s."""
    rows = _final_rows(ctx, held, fitting.max_train_rows)
    from_stats = stats_states(ctx, fitting, stats)
    fed = [
        name
        for name, est in ctx.estimators.items()
        if fitting.incremental and hasattr(est, "partial_fit") and name not in from_stats
    ]
    run, max_rows = ctx.run, fitting.max_train_rows
    across = [name for name, est in ctx.estimators.items() if trains_across_workers(est)]
    if across:
        check_client(ctx.client, across[0])
    if rows is not None:
        gathered = [n for n in ctx.estimators if n not in (*fed, *from_stats, *across)]
        n_features = len(run.features)
        n_train, memory = int(sum(rows.class_rows)), rows.memory
        check_final_memory(gathered, n_train, n_features, memory, max_rows)
        if across:
            train = pd.Series({FINAL_FIT: n_train if max_rows is None else min(n_train, max_rows)})
            workers = n_workers(ctx.client)
            check_across_memory(train, across[0], n_features, memory, workers)
        check_test_split_memory(
            list(ctx.estimators),
            rows.test_parts,
            n_features,
            score_columns(run),
            memory,
            counts_only(run),
        )
        if resubstitution:  # every training row's AUC piece, merged in one task
            scored = n_train if max_rows is None else min(n_train, max_rows)
            for name in ctx.estimators:
                check_resubstitution_memory(name, scored, run.measures, run.classes, memory)
    columns = [*run.features, run.label, *([run.group] if run.group else [])]
    test = held[columns].to_delayed() if held is not None else []
    class_rows = () if rows is None else rows.class_rows
    tasks = {}
    for name, est in ctx.estimators.items():
        exact = name not in (*fed, *from_stats, *across)
        train = _train_rows(ctx, class_rows, max_rows, exact)
        parts = train.to_delayed()
        if exact:
            cap = (max_rows, class_rows) if max_rows is not None else None
            args = (est, run, resubstitution, name, cap)
            state, piece = list_call(fit_final, parts, *args, pure=True, nout=2)
            pieces = [piece] if resubstitution else None
        else:
            state = (
                fit_across(ctx.client, train, est, run)
                if name in across
                else from_stats.get(name) or partial_fit_chain(est, parts, run, fitting.epochs)
            )
            pieces = (
                [dask.delayed(resubstitution_piece, pure=True)(state, p, run) for p in parts]
                if resubstitution
                else None
            )
        tasks[name] = _scored(state, test, pieces, run, name)
    return tasks


def _scored(state: Any, test: list, pieces: list | None, run: RunSpec, name: str) -> Any:
    """The delayed record of a final model (``state``: delayed, or fitted on the client):
    one ``partition_outcome`` task per partition of the test split, reading the model by
    its key (never a copy embedded in each task), one task scoring their outcomes
    (``split_scores``), one the resubstitution pieces, and ``score_final`` the record."""
    state = dask.delayed(state, pure=True)  # a fitted state becomes one key; a delayed stays
    outcome = dask.delayed(partition_outcome, pure=True)
    outcomes = [outcome(state, part, run, name) for part in test]
    split = list_call(split_scores, outcomes, run, name, pure=True)
    resub = None
    if pieces is not None:
        resub = list_call(resubstitution_scores, pieces, run, name, pure=True)
    return dask.delayed(score_final, pure=True)(state, split, resub, run, name)


def score_columns(run: RunSpec) -> int:
    """Class scores kept a row of the test split: one per class if a measure needs them."""
    needed = run.classes is not None and {"auc", "log_loss"} & set(run.measures)
    return len(run.classes) if needed else 0


def stats_states(
    ctx: Context, fitting: FittingOptions, stats: FitStats | None = None
) -> dict[str, FitState]:
    """The final models of the additive learners fitted from one pass of statistics of all
    training rows (as their outer fits are, ``strategies.OnePass``): no task gathers those rows,
    and the models predict the class labels, as saved models must. Empty without one-pass fits
    (``onepass=False``, a row cap), or when the statistics cannot be made (non-finite values:
    those models are then fitted on their rows and report their own failures). ``stats``
    holding ``FINAL_FIT``'s (made with the outer fits') spare the pass."""
    names = [n for n, est in ctx.estimators.items() if is_additive(est) is not None]
    if not (fitting.from_statistics and names):
        return {}
    run = ctx.run
    if stats is None or FINAL_FIT not in stats.fit_ids:
        classes = None if run.classes is None else list(run.classes)
        lazy = fit_stats(ctx.data, {FINAL_FIT: Fit(Selection())}, run.features, run.label, classes)
        try:
            stats = ctx.compute(lazy)
        except ValueError as err:
            warn_user(f"one-pass statistics unavailable ({err}); final models fitted on rows")
            return {}
    pooled, out = stats.train(FINAL_FIT), {}
    for name in names:
        start = time.perf_counter()
        fitted, message = guard(run, partial(fit_from_stats, ctx.estimators[name], pooled))
        model = ctx.estimators[name] if fitted is None else fitted
        seconds = time.perf_counter() - start
        out[name] = FitState(model, int(pooled.n_rows), seconds, message, started=True)
    return out


@dataclass(frozen=True)
class FinalRows:
    """The rows a final model reads: training rows per class, the rows of each partition of
    the test split, and the memory a worker has for a task (None if unknown)."""

    class_rows: tuple[int, ...]
    test_parts: tuple[int, ...]
    memory: WorkerMemory | None


def _final_rows(ctx: Context, held: dd.DataFrame | None, max_rows: int | None) -> FinalRows | None:
    """The final models' rows when a row cap needs the class shares or the workers' memory
    is known (else None): the training rows per class from the counts the run's folds were drawn
    from (``ctx.table``, the training table: no pass), the rows of each partition of the test
    split from one pass over it."""
    memory = worker_memory(ctx.client)
    if max_rows is None and memory is None:
        return None
    test_parts: tuple[int, ...] = ()
    if held is not None and memory is not None:
        test_parts = tuple(int(n) for n in ctx.compute(held.map_partitions(len)))
    return FinalRows(table_class_rows(ctx.table), test_parts, memory)


def _train_rows(ctx: Context, class_rows: tuple, max_rows: int | None, exact: bool) -> dd.DataFrame:
    """The lazy training rows of a final model: under a cap, each block's rows sampled as a
    capped fit's (``rowcap.keep_rates``; ``exact``: with the margin of an exact draw)."""
    rates = None if max_rows is None else keep_rates(class_rows, max_rows, margin=exact)
    if rates is None:
        return ctx.data
    run, data = ctx.run, ctx.data
    args = (Selection(), (), rates, run.seed, run.label, run.classes, None)
    return data.map_partitions(select_rows, *args, meta=data._meta)
