"""What runs on a worker: fit a learner on one train set and score its test blocks."""

from __future__ import annotations

import copy
import functools
import inspect
import itertools
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import dask
import numpy as np
import pandas as pd
from dask.dataframe.methods import concat
from sklearn import config_context
from sklearn.base import BaseEstimator, clone

from ..hashing import seeded_hash
from ..learn.groups import fit_with_groups
from ..learn.loss_pairs import merge_pairs, pair_sums, pair_values, row_losses
from ..learn.measures import finish, merge, partial_scores
from ..learn.priors import check_finite_proba
from ..learn.tuning import fit_info
from ..split.plan import Selection
from ..split.sizes import downsample
from ..tables.arrays import category_codes, float_array
from .rowcap import capped, sampled


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
    train: Selection
    tests: tuple[tuple[int, Selection, str], ...]  # each test block: id, rows, name
    n_groups: int = 0  # down-sample the train set to this many groups (0: keep all)
    draw: int = 0  # which down-sample
    weights: str | None = None  # column of integer row weights (each row used that many times)
    max_rows: int = 0  # max_train_rows (0: no cap)
    class_rows: tuple = ()  # the full train set's rows per class: the shares a capped fit keeps


@dataclass
class FitState:
    """A learner being fitted incrementally, passed from one block's task to the next."""

    estimator: BaseEstimator
    n_train: int = 0
    seconds: float = 0.0
    message: str = ""
    started: bool = False
    info: dict[str, Any] = field(default_factory=dict)  # what the fit chose (``fit_info``)
    coded: bool = False  # fitted on class codes (from block statistics): predicts codes
    finite: bool = False  # the features were checked finite: predictions need not check them


def fit_message(state: FitState) -> str:
    """Why ``state``'s model cannot score (its fit's failure, or no train row reached a fed
    learner); empty if it can."""
    return state.message or ("" if state.started else "no train rows reached the learner")


def select_rows(
    part: pd.DataFrame,
    train: Selection | None,
    tests: tuple[Selection, ...],
    rates: tuple[float, ...] | None,
    seed: int,
    label: str,
    classes: tuple | None,
    weights: str | None = None,
) -> pd.DataFrame:
    """Rows of one partition in a fit's train set (sampled at ``rates``) or its test blocks.

    With ``rates`` (one per class of ``classes``, or one for regression) a train row is kept
    if a copy of it (``weights`` copies, else one) ranks below its class's rate
    (``rowcap.sampled``: a seeded hash of the row's values), so the sample is the same
    whatever the partitioning and is never materialised whole first.
    """
    keep = np.zeros(len(part), dtype=bool) if train is None else train.mask(part)
    if rates is not None:
        rows = np.flatnonzero(keep)
        keep[rows] = sampled(part.iloc[rows], rates, seed, label, classes, weights)
    for test in tests:
        keep |= test.mask(part)
    return part.loc[keep]


def split_frame(
    frame: pd.DataFrame, train: Selection | None, tests: Sequence[tuple[int, Selection, str]]
) -> tuple[pd.DataFrame | None, dict[int, pd.DataFrame]]:
    """Split a fit's rows into its train rows (None without ``train``) and its test blocks."""
    blocks = {block: frame.loc[test.mask(frame)] for block, test, _ in tests}
    return (None if train is None else frame.loc[train.mask(frame)]), blocks


def fit_and_score(
    frame: pd.DataFrame,
    estimator: BaseEstimator,
    fit: FitSpec,
    run: RunSpec,
    losses: dict[Any, dict[str, np.ndarray]] | None = None,
) -> list[dict[str, Any]]:
    """Fit a clone of ``estimator`` on the train rows of ``frame`` (``fit_train``); score each
    test block there. Returns one small record per test subset (and puts each block's per-row
    losses in ``losses``, if given, as ``score_blocks`` does)."""
    train, blocks = split_frame(frame, fit.train, fit.tests)
    return score_blocks(fit_train(train, estimator, fit, run), blocks, fit, run, losses)


def fit_train(
    train: pd.DataFrame, estimator: BaseEstimator, fit: FitSpec, run: RunSpec
) -> FitState:
    """A clone of ``estimator`` fitted on the rows ``train`` (a fit's train rows), as a
    ``FitState`` whose model predicts labels (scored by ``score_blocks``, or partition by
    partition where its test rows are: ``strategies.scoring_pass``).

    With ``fit.n_groups`` > 0 the train rows are first down-sampled to that many groups
    (``soak_dask.split.sizes.downsample``); with ``fit.max_rows`` they are then capped at that
    many rows (``soak_dask.run.rowcap``). A failed fit is the state's ``message``.
    """
    label = run.label if run.classes is not None else None
    if fit.n_groups:
        train = downsample(
            train, fit.n_groups, group=run.group, label=label, seed=run.seed, sample=fit.draw
        )
    if fit.max_rows:  # an exact draw of the copies (rows × weights), in their rank order
        train = capped(
            train, fit.max_rows, fit.class_rows, run.seed, run.label, run.classes, fit.weights
        )
    elif fit.weights is not None:
        train = train.iloc[np.repeat(np.arange(len(train)), train[fit.weights].to_numpy())]
    state = FitState(clone(estimator), n_train=len(train), started=True)
    groups = train[run.group].to_numpy() if run.group else None
    start = time.perf_counter()
    _, state.message = guard(
        run, lambda: fit_with_groups(state.estimator, *fit_arrays(train, run), groups)
    )
    state.seconds = time.perf_counter() - start
    if not state.message:
        state.info = fit_info(state.estimator)
    return state


def fit_parts(
    parts: Sequence[pd.DataFrame], estimator: BaseEstimator, fit: FitSpec, run: RunSpec
) -> FitState:
    """``fit_train`` on the train rows of each partition (``parts``, in order), joined here:
    each partition's task selected them next to its data, so no task held a partition for
    another fit's sake."""
    return fit_train(concat(list(parts)), estimator, fit, run)


def select_and_fit(
    parts: Sequence[pd.DataFrame],
    selection: tuple,
    estimator: BaseEstimator,
    fit: FitSpec,
    run: RunSpec,
) -> FitState:
    """``fit_parts`` on the rows ``select_rows(part, *selection)`` of each partition
    (``parts``), selected in this task."""
    return fit_parts([select_rows(part, *selection) for part in parts], estimator, fit, run)


def fit_many(
    parts: list[pd.DataFrame], jobs: list[tuple[BaseEstimator, FitSpec]], run: RunSpec
) -> list[dict[str, Any]]:
    """``fit_and_score`` of several fits on one small table, gathered once (``parts``). The
    learners of one train set (adjacent in ``jobs``) pair their per-row losses on each block
    (``with_pairs``), as a scoring pass pairs them."""
    frame = pd.concat(parts)
    out = []
    for fit_id, group in itertools.groupby(jobs, key=lambda job: job[1].fit_id):
        losses: dict[str, dict[Any, dict[str, np.ndarray]]] = {}
        records = [
            r
            for estimator, fit in group
            for r in fit_and_score(frame, estimator, fit, run, losses.setdefault(fit.learner, {}))
        ]
        sums = block_pairs(losses)
        by_block: dict[Any, list[dict[str, Any]]] = {}
        for r in records:
            by_block.setdefault(r["block"], []).append(r)
        paired = {
            (r["learner"], r["block"]): r
            for block, mine in by_block.items()
            for r in with_pairs(mine, {fit_id: sums.get(block, {})}, run)
        }
        out += [paired[r["learner"], r["block"]] for r in records]
    return out


def partial_fit_step(
    state: FitState | BaseEstimator,
    part: pd.DataFrame,
    run: RunSpec,
    count_rows: bool = True,
    weights: str | None = None,
) -> FitState:
    """Feed one block of train rows to ``partial_fit`` (the first call starts from a clone).

    ``count_rows`` is False after the first epoch, so ``n_train`` counts each row once.
    ``weights``: the column of the rows' integer weights (a bootstrap resample's), given as
    ``sample_weight`` (rows of weight 0 left out); ``n_train`` then sums them, as a fit on
    the repeated rows counts them.
    """
    # A copy, never the previous task's object: a retried task must see its own input.
    state = FitState(clone(state)) if not isinstance(state, FitState) else copy.deepcopy(state)
    kwargs = {"classes": np.asarray(run.classes)} if run.classes is not None else {}
    if weights is not None:
        w = part[weights].to_numpy(np.float64)
        part, kwargs["sample_weight"] = part.loc[w > 0], w[w > 0]
    if state.message or len(part) == 0:
        return state
    X, y = fit_arrays(part, run)
    start = time.perf_counter()
    _, state.message = guard(run, lambda: state.estimator.partial_fit(X, y, **kwargs))
    state.seconds += time.perf_counter() - start
    rows = len(part) if weights is None else int(kwargs["sample_weight"].sum())
    state.n_train += rows if count_rows else 0
    state.started = True
    return state


def partial_fit_chain(
    state: Any, parts: Sequence[Any], run: RunSpec, epochs: int, weights: str | None = None
) -> Any:
    """The delayed ``FitState`` of ``state`` (an unfitted learner) fed the delayed blocks
    ``parts`` (rows weighted by the column ``weights``, if given) by ``partial_fit_step``,
    ``epochs`` times, the block order of each epoch reshuffled by a seeded hash (the same
    order on any worker)."""
    for epoch in range(epochs):
        order = np.argsort(seeded_hash(run.seed, np.uint64(epoch), np.arange(len(parts))))
        for i in order:
            step = dask.delayed(partial_fit_step, pure=True)
            state = step(state, parts[i], run, epoch == 0, weights)
    return state


def takes_weights(estimator: Any) -> bool:
    """Whether ``estimator.partial_fit`` takes ``sample_weight``."""
    try:
        return "sample_weight" in inspect.signature(estimator.partial_fit).parameters
    except (AttributeError, TypeError, ValueError):
        return False


def score_partition(
    part: pd.DataFrame,
    fitted: dict[tuple[int, str], tuple[FitState, FitSpec]],
    blocks: list[tuple[int, Any, list[tuple[int, str]]]],
    run: RunSpec,
) -> tuple[dict[str, Any], ...]:
    """Partial scores of one partition's rows, for every test block and fit that predicts it.

    ``blocks`` lists (fold, subset, keys of the fits predicting that block): SOAK's cells.
    Features and labels are extracted once for the partition; one item per block is returned,
    to be merged over partitions by ``score_block``, so no task holds more than a partition of
    rows.
    """
    subsets = pd.Index(list(dict.fromkeys(sub for _, sub, _ in blocks)))
    # Code 0 of each fold holds rows of subsets no block tests (category code -1), so they
    # never take the code of another fold's block (as when a resumed run scores a few fits).
    width = len(subsets) + 1
    in_block = category_codes(part[run.subset], subsets) + 1
    key = part[run.fold_column].to_numpy(np.int64) * width + in_block
    # Rows sorted by block once (a radix sort of the small keys), so each block is a contiguous
    # slice rather than a mask.
    order = np.argsort(key.astype(np.min_scalar_type(key.max(initial=0))), kind="stable")
    key = key[order]
    X, y = score_arrays(part, run)
    X, y = X[order], y[order]
    codes = [fold * width + 1 + subsets.get_loc(sub) for fold, sub, _ in blocks]
    starts, stops = np.searchsorted(key, codes), np.searchsorted(key, codes, side="right")
    rows = [slice(int(a), int(b)) for a, b in zip(starts, stops, strict=True)]
    return predict_blocks(X, y, rows, [keys for *_, keys in blocks], fitted, run)


def score_selections(
    part: pd.DataFrame,
    fitted: dict[tuple[int, str], tuple[FitState, FitSpec]],
    blocks: list[tuple[Selection, list[tuple[int, str]]]],
    run: RunSpec,
) -> tuple[dict[str, Any], ...]:
    """``score_partition`` for test blocks of any design: ``blocks`` lists (the block's rows
    as a ``Selection``, keys of the fits predicting it)."""
    X, y = score_arrays(part, run)
    rows = [np.flatnonzero(test.mask(part)) for test, _ in blocks]
    return predict_blocks(X, y, rows, [keys for _, keys in blocks], fitted, run)


def predict_blocks(
    X: np.ndarray,
    y: np.ndarray,
    rows: list[slice | np.ndarray],
    keys: list[list[tuple[int, str]]],
    fitted: dict[tuple[int, str], tuple[FitState, FitSpec]],
    run: RunSpec,
) -> tuple[dict[str, Any], ...]:
    """Partial scores of the blocks whose rows of ``X``, ``y`` are ``rows`` (a slice or
    positions each), predicted by the fits ``keys`` of each block: one prediction per fit over
    all of its blocks' rows here, then split by block. Each block's item maps a fit to (its
    partial scores, seconds, the message of a failed prediction: partial scores None)."""
    sizes = [r.stop - r.start if isinstance(r, slice) else len(r) for r in rows]
    out = [{"n": int(n), "fits": {}, "pairs": {}} for n in sizes]
    served: dict[tuple[int, str], list[int]] = {}
    for i, block_keys in enumerate(keys):
        for k in block_keys if sizes[i] else ():
            served.setdefault(k, []).append(i)
    by_fit: dict[int, list[tuple[int, str]]] = {}
    for k in served:
        by_fit.setdefault(k[0], []).append(k)
    for fit_id, fit_keys in by_fit.items():
        # The learners of one train set, predicted one after the other: their per-row losses
        # (kept for one fit at a time) pair up per block, each learner with itself too.
        losses: dict[str, dict[int, dict[str, np.ndarray]]] = {}
        for k in fit_keys:
            if not fit_message(fitted[k][0]):
                mine = losses.setdefault(k[1], {})
                _predict_fit(out, k, fitted[k][0], (X, y, rows, sizes), served[k], run, mine)
        for i, pairs in block_pairs(losses).items():
            out[i]["pairs"][fit_id] = pairs
    return tuple(out)


def block_pairs(losses: Mapping[str, Mapping[Any, Mapping[str, np.ndarray]]]) -> dict[Any, Any]:
    """Per block, the ``loss_pairs.pair_sums`` of the learners (``losses``: learner -> block ->
    its ``row_losses`` there) that predicted it."""
    blocks = dict.fromkeys(b for by_block in losses.values() for b in by_block)
    return {
        b: pair_sums({name: by_block[b] for name, by_block in losses.items() if b in by_block})
        for b in blocks
    }


def _predict_fit(
    out: list[dict[str, Any]],
    k: tuple[int, str],
    state: FitState,
    data: tuple,
    ids: list[int],
    run: RunSpec,
    losses: dict[int, dict[str, np.ndarray]] | None = None,
) -> None:
    """Add to ``out`` the partial scores of the fit ``k`` on its blocks ``ids`` (``data``:
    the partition's features, labels, each block's rows and sizes), and to ``losses`` (if
    given) each block's per-row losses (``loss_pairs.row_losses``). A failed prediction (a
    fed model meeting a NaN) is tried again block by block, so it fails only the blocks whose
    rows make it fail, as scoring each block on its own would."""
    X, y, rows, sizes = data
    start = time.perf_counter()
    predicted, message = _predict(state, X[_union(rows, ids)], run)
    if message and len(ids) > 1:
        for i in ids:
            _predict_fit(out, k, state, data, [i], run, losses)
        return
    seconds = (time.perf_counter() - start) / max(1, sum(sizes[i] for i in ids))
    at = 0
    for i in ids:
        block = slice(at, at + sizes[i])
        at += sizes[i]
        partial = None
        if not message:
            pred, proba = predicted
            n_classes = None if run.classes is None else len(run.classes)
            proba = None if proba is None else proba[block]
            partial = partial_scores(run.measures, y[rows[i]], pred[block], proba, n_classes)
            if losses is not None:
                losses[i] = row_losses(run.measures, y[rows[i]], pred[block], proba, n_classes)
        out[i]["fits"][k] = (partial, seconds * sizes[i], message)


def _predict(state: FitState, X: np.ndarray, run: RunSpec) -> tuple[Any, str]:
    """``predict_codes`` of ``state``'s model on ``X`` and ``""``; or (it failed) None and the
    message, as ``run.error_score`` says. Features checked finite already (``state.finite``:
    the statistics needed them finite) are not checked again by scikit-learn."""
    predict = functools.partial(predict_codes, state.estimator, X, run, coded=state.coded)
    if state.finite:
        predict = functools.partial(_assuming_finite, predict)
    # A model fitted from statistics can fail to predict too (LDA of a one-class train set).
    return guard(run, predict)


def _assuming_finite(call: Callable[[], Any]) -> Any:
    with config_context(assume_finite=True):
        return call()


def _union(rows: list[slice | np.ndarray], ids: list[int]) -> slice | np.ndarray:
    """The rows of blocks ``ids`` in order: one slice (a view) where they are adjacent slices,
    as blocks sorted by (fold, subset) are unless a fit's subsets are apart."""
    parts = [rows[i] for i in ids]
    if len(parts) == 1:
        return parts[0]
    slices = all(isinstance(r, slice) for r in parts)
    if slices and all(a.stop == b.start for a, b in itertools.pairwise(parts)):
        return slice(parts[0].start, parts[-1].stop)
    return np.concatenate([np.r_[r] if isinstance(r, slice) else r for r in parts])


def merge_pieces(items: list[tuple[dict[str, Any], ...]]) -> tuple[dict[str, Any], ...]:
    """Merge ``score_partition`` outputs of several partitions, block by block."""
    return tuple(_merge_block(pieces) for pieces in zip(*items, strict=True))


def _merge_block(pieces: Sequence[dict[str, Any]]) -> dict[str, Any]:
    by_fit: dict[tuple[int, str], list[tuple[dict[str, Any], float]]] = {}
    for piece in pieces:
        for k, item in piece["fits"].items():
            by_fit.setdefault(k, []).append(item)
    fits = {}
    for k, items in by_fit.items():
        message = next((m for *_, m in items if m), "")
        partial = None if message else merge([partial for partial, _, _ in items])
        fits[k] = (partial, sum(s for _, s, _ in items), message)
    pairs: dict[int, list[Any]] = {}
    for piece in pieces:
        for fit_id, sums in piece["pairs"].items():
            pairs.setdefault(fit_id, []).append(sums)
    merged = {fit_id: merge_pairs(sums) for fit_id, sums in pairs.items()}
    return {"n": sum(piece["n"] for piece in pieces), "fits": fits, "pairs": merged}


def score_block(
    pieces: list[dict[str, Any]],
    fitted: dict[tuple[int, str], tuple[FitState, FitSpec]],
    block: int,
    keys: list[tuple[int, str]],
    run: RunSpec,
) -> list[dict[str, Any]]:
    """Records of one test block from its ``score_partition`` (or ``merge_pieces``) items.

    A failed fit, or a failed prediction of the block's rows, scores ``run.error_score``
    with the error as the record's message, as ``score_blocks`` does."""
    merged = _merge_block(pieces)
    records = []
    for k in keys:
        state, fit = fitted[k]
        partial, seconds, failure = merged["fits"].get(k, (None, 0.0, ""))
        name = next(name for b, _, name in fit.tests if b == block)
        message = fit_message(state) or (failure and f"predicting test {name}: {failure}")
        if message or partial is None:
            values = dict.fromkeys(run.measures, run.error_score if message else np.nan)
        else:
            values = finish(run.measures, partial)
        record = _record(state, fit, block, merged["n"], values, seconds)
        records.append({**record, "message": message})
    return with_pairs(records, merged["pairs"], run)


def with_pairs(
    records: list[dict[str, Any]], sums: Mapping[int, Any], run: RunSpec
) -> list[dict[str, Any]]:
    """``records`` of one block, each with ``loss_pairs``: ``loss_pairs.pair_values`` of its
    fit's pair ``sums`` (fit -> ``pair_sums``) with the learners of that fit (itself
    included: its ``Σ l²``), for each measure both scored (no failure, not NaN)."""
    values = {
        (r["fit_id"], r["learner"]): {} if r["message"] else {m: r[m] for m in run.measures}
        for r in records
    }
    out = []
    for r in records:
        fit_id, mine = r["fit_id"], values[r["fit_id"], r["learner"]]
        others = [name for f, name in values if f == fit_id]
        found = pair_values(sums.get(fit_id, {}), r["learner"], run.measures, others)
        kept = {
            m: {o: v for o, v in by_other.items() if _finite(mine, m, values[fit_id, o])}
            for m, by_other in found.items()
        }
        out.append({**r, "loss_pairs": {m: d for m, d in kept.items() if d}})
    return out


def _finite(mine: Mapping[str, Any], m: str, other: Mapping[str, Any]) -> bool:
    """Whether both learners scored measure ``m`` (a failed one has no values)."""
    return m in mine and m in other and np.isfinite(float(mine[m])) and np.isfinite(float(other[m]))


def score_blocks(
    state: FitState,
    blocks: dict[Any, pd.DataFrame],
    fit: FitSpec,
    run: RunSpec,
    losses: dict[Any, dict[str, np.ndarray]] | None = None,
) -> list[dict[str, Any]]:
    """One record per test block: the measures, counts and timings; with ``losses``, each
    block's per-row losses put there (``loss_pairs.row_losses``, by block).

    A failed fit, or a failed prediction of a block, scores ``run.error_score`` with the error
    as the record's message (or raises with ``error_score="raise"``).
    """
    records = []
    names = {block: name for block, _, name in fit.tests}
    for block, rows in blocks.items():
        start = time.perf_counter()
        message = state.message
        if not message:
            # A learner fitted may still fail to predict (e.g. NaN in a test row): error_score.
            mine = None if losses is None else losses.setdefault(block, {})
            predict = functools.partial(
                predict_partial, state.estimator, *score_arrays(rows, run), run, mine
            )
            scores, failure = guard(run, predict)
            message = failure and f"predicting test {names[block]}: {failure}"
        if message:
            values = dict.fromkeys(run.measures, run.error_score)
        else:
            values = finish(run.measures, scores)
        record = _record(state, fit, block, len(rows), values, time.perf_counter() - start)
        records.append({**record, "message": message})
    return records


def _record(
    state: FitState, fit: FitSpec, block: int, n_test: int, values: dict, seconds: float
) -> dict[str, Any]:
    return {
        "learner": fit.learner,
        "fit_id": fit.fit_id,
        "block": block,
        "n_train": state.n_train,
        "n_test": n_test,
        "fit_seconds": state.seconds,
        **values,
        "predict_seconds": seconds,
        "message": state.message,
        **state.info,
    }


def fit_arrays(frame: pd.DataFrame, run: RunSpec) -> tuple[np.ndarray, np.ndarray]:
    """Features as float64 and the label as it is (for fitting; a copy the learner may change)."""
    return frame[list(run.features)].to_numpy(np.float64), frame[run.label].to_numpy()


def score_arrays(frame: pd.DataFrame, run: RunSpec) -> tuple[np.ndarray, np.ndarray]:
    """Features, and the label as class codes (classification) or float64 (regression).

    Codes because the measures count and compare labels, and strings are slow to compare."""
    X = float_array(frame, run.features)
    if run.classes is None:
        return X, frame[run.label].to_numpy(np.float64)
    return X, category_codes(frame[run.label], _class_index(run.classes))


def guard(run: RunSpec, call: Callable[[], Any]) -> tuple[Any, str]:
    """``call()`` and ``""``; a failure gives ``(None, message)`` (scikit-learn's
    ``error_score``), or raises with ``error_score="raise"``."""
    try:
        return call(), ""
    except Exception as err:  # noqa: BLE001 -- reported like scikit-learn's error_score
        if run.error_score == "raise":
            raise
        return None, "".join(traceback.format_exception_only(err)).strip()


def predict_partial(
    est, X: np.ndarray, y: np.ndarray, run: RunSpec, losses: dict[str, Any] | None = None
) -> dict[str, Any]:
    """``measures.partial_scores`` of ``est``'s predictions of rows ``X`` (labels ``y`` from
    ``score_arrays``); their ``loss_pairs.row_losses`` put in ``losses``, if given."""
    n_classes = None if run.classes is None else len(run.classes)
    pred, proba = predict_codes(est, X, run)
    if losses is not None:
        losses.update(row_losses(run.measures, y, pred, proba, n_classes))
    return partial_scores(run.measures, y, pred, proba, n_classes)


def predict_codes(
    est, X: np.ndarray, run: RunSpec, coded: bool = False
) -> tuple[np.ndarray, np.ndarray | None]:
    """Predictions (class codes for classification) and, if a measure needs them, class
    scores in the table's class order.

    ``coded``: ``est`` was fitted on the class codes (as fits from block statistics are), so it
    predicts codes already.
    """
    if not len(X):
        return np.zeros(0, dtype=np.int64 if run.classes else np.float64), None
    if run.classes is None:
        return est.predict(X), None
    pred = est.predict(X)
    classes = tuple(range(len(run.classes))) if coded else run.classes
    if not coded:
        pred = category_codes(pred, _class_index(classes))
    proba = None
    if {"auc", "log_loss"} & set(run.measures):
        proba = _class_scores(est, X, classes)
        proba = None if proba is None else check_finite_proba(proba)  # never a score of NaN
    return pred, proba


@cache
def _class_index(classes: tuple) -> pd.Index:
    return pd.Index(classes)


def _class_scores(est, X: np.ndarray, classes: tuple) -> np.ndarray | None:
    """Probabilities in the table's class order (0 for classes unseen in training)."""
    if hasattr(est, "predict_proba"):
        try:
            raw = est.predict_proba(X)
        except AttributeError:  # e.g. SGDClassifier with hinge loss has no probabilities
            raw = None
        if raw is not None:
            columns = _class_index(classes).get_indexer(est.classes_)
            if np.array_equal(columns, np.arange(len(classes))):
                return raw
            proba = np.zeros((len(X), len(classes)))
            proba[:, columns] = raw
            return proba
    if hasattr(est, "decision_function") and len(est.classes_) == 2 == len(classes):
        return est.decision_function(X).reshape(-1, 1)  # AUC only: not probabilities
    return None
