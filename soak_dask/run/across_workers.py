"""``AcrossWorkers``: fits of learners that train across the cluster's workers
(``learn.across_workers``: xgboost's Dask estimators), each train set handed to the learner as
a Dask collection selected by the key columns, one fit after another from the client; their
test rows scored partition by partition, as every other model's (``scoring_pass``).

Such a fit holds its train rows spread over every worker (the partitions, then xgboost's
quantised matrix beside them), so it is checked against the cluster, not one worker
(``check_across_memory``): refused before any fit where a worker's share would not fit what it
has for a task, with the numbers.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, ClassVar

import dask.array as da
import dask.dataframe as dd
import pandas as pd
from dask.utils import format_bytes
from sklearn.base import clone

from ..learn.across_workers import across_learner, in_memory_twin, trains_across_workers
from ..learn.priors import PriorCorrected
from ..learn.tuning import fit_info
from ..tables.arrays import category_codes
from ..workers import FitMemoryError, WorkerMemory
from .fitting import FitState, RunSpec, guard
from .score_memory import n_workers
from .strategies import Context, Pair

#: Bytes a worker holds per train value of its share of an across-workers fit, over what it
#: holds at rest: the selected float32 arrays, xgboost's quantised matrix and its training's
#: working memory, measured at its peak by benchmarks/across_workers.py (19.7 and 21.9 bytes
#: a value at 1,000,000 rows × 20 bands a worker); plus per row the label, weight and
#: gradient pairs (``ROW_BYTES``).
FEATURE_BYTES = 20
ROW_BYTES = 32


def worker_share(rows: int, workers: int) -> int:
    """The train rows each of ``workers`` holds of an across-workers fit of ``rows`` rows
    (spread evenly over them)."""
    return math.ceil(rows / max(workers, 1))


def across_bytes(rows: int, n_features: int, workers: int) -> int:
    """Estimated peak bytes on each of ``workers`` of an across-workers fit of ``rows`` train
    rows (``worker_share``)."""
    return worker_share(rows, workers) * (FEATURE_BYTES * n_features + ROW_BYTES)


@dataclass(frozen=True)
class AcrossWorkers:
    """Fit the learners that train across the workers (``trains_across_workers``) on each
    train set as a Dask collection, one fit after another from the client (each uses every
    worker); their models are scored partition by partition with every other strategy's
    (``strategies.make_tasks``' scoring pass)."""

    scores_by_pass: ClassVar[bool] = True

    def accepts(self, ctx: Context, fit_id: int, learner: str) -> bool:
        return trains_across_workers(ctx.estimators[learner])

    def models(self, ctx: Context, pairs: list[Pair]) -> tuple[dict[Pair, Any], list[Pair]]:
        if not pairs:
            return {}, []
        check_across(ctx, pairs)
        fitted = {}
        for fit_id, learner in pairs:
            spec = ctx.spec(fit_id, learner)
            rows = ctx.rows(spec, test=False, rates=ctx.rates(fit_id, exact=False))
            state = fit_across(ctx.client, rows, ctx.estimators[learner], ctx.run, spec.weights)
            fitted[fit_id, learner] = (state, spec)
        return fitted, []


def check_across(ctx: Context, pairs: list[Pair]) -> None:
    """Refuse, before any fit, what an across-workers fit cannot do: run without a cluster,
    down-sample its train set to a number of groups (which needs it whole in one task), or
    hold its share of the train rows on a worker (``check_across_memory``)."""
    learner = pairs[0][1]
    check_client(ctx.client, learner)
    grouped = [(f, n) for f, n in pairs if ctx.plan.fits.loc[f, "n_groups"]]
    if grouped:
        fit_id, name = grouped[0]
        raise ValueError(
            f"learner {name!r} trains across the workers, but fit {fit_id} down-samples its "
            "train set to a number of groups, which needs the train set whole in one task; "
            "use a learner fitted in one task for down-sampled sizes"
        )
    if ctx.fit_rows is not None:
        rows = ctx.fit_rows.loc[sorted({f for f, _ in pairs}), "train"]
        if ctx.max_rows is not None:
            rows = rows.clip(upper=ctx.max_rows)
        check_across_memory(rows, learner, len(ctx.run.features), ctx.memory, n_workers(ctx.client))


def check_client(client: Any, learner: str) -> None:
    """Refuse a run without a distributed client: ``learner`` trains across its workers."""
    if client is None:
        raise ValueError(
            f"learner {learner!r} trains across a Dask cluster's workers and needs a "
            "distributed client: start one (distributed.Client(), or the CLI's --scheduler) "
            "before the run, or use a learner fitted in one task"
        )


def check_across_memory(
    rows: pd.Series, learner: str, n_features: int, memory: WorkerMemory | None, workers: int
) -> None:
    """Refuse (``FitMemoryError``) if the largest of the fits ``rows`` (fit id -> train rows)
    needs more on a worker (``across_bytes``, its share of the rows) than ``memory`` gives a
    task."""
    if memory is None or rows.empty:
        return
    fit_id, n = int(rows.idxmax()), int(rows.max())
    need = across_bytes(n, n_features, workers)
    if need <= memory.free:
        return
    raise FitMemoryError(
        f"fit {fit_id} of learner {learner!r} trains across the cluster's {workers} workers: "
        f"its {n:,} train rows × {n_features} features need about {format_bytes(need)} on "
        f"each worker (its share of the rows, {FEATURE_BYTES} bytes a value and {ROW_BYTES} a "
        f"row), more than the {memory}. Add workers or memory, or cap the train rows "
        "(max_train_rows)"
    )


def fit_across(
    client: Any, rows: dd.DataFrame, estimator: Any, run: RunSpec, weights: str | None = None
) -> FitState:
    """``estimator``'s learner that trains across the workers (``across_learner``: itself,
    or the one its prior correction wraps), cloned and trained across ``client``'s workers on
    the lazy train ``rows`` (held in the workers' memory as arrays while it trains, released
    when this returns), as a ``FitState`` of its in-memory twin (``in_memory_twin``: it
    predicts labels; trained on class codes, as xgboost wants), prior-corrected by the rows'
    class shares where ``estimator`` is. ``weights``: a column of row weights, given as
    ``sample_weight``.
    A failed fit is the state's message (``error_score``)."""
    # Dask arrays of known chunks, not frames: xgboost lists a frame's classes by a shuffle
    # (drop_duplicates) per fit, an array's by a tree reduction. The partitions' lengths cost
    # a read of the rows, and spare holding the selected frame beside xgboost's copy of it.
    lengths = tuple(client.compute(rows.map_partitions(len)).result())
    y = rows[run.label]
    classes = None if run.classes is None else tuple(run.classes)
    if classes is not None:
        y = y.map_partitions(_codes, classes, meta=(run.label, "int64"))
    arrays = [c.to_dask_array(lengths=lengths) for c in (rows[list(run.features)], y)]
    if weights is not None:
        arrays.append(rows[weights].to_dask_array(lengths=lengths))
    X, y, *weight_ = client.persist(arrays)  # one read of each partition for the three
    weight = weight_[0] if weights is not None else None
    n_train = int(client.compute(weight.sum()).result()) if weight is not None else sum(lengths)
    learner = across_learner(estimator)
    est = clone(learner)
    est.client = client
    start = time.perf_counter()
    _, message = guard(run, lambda: est.fit(X, y, sample_weight=weight))
    seconds = time.perf_counter() - start
    if message:
        return FitState(clone(estimator), n_train, seconds, message, started=True)
    model = in_memory_twin(est, classes)
    if learner is not estimator:  # its prior correction: the train rows' class shares
        counts = client.compute(da.bincount(y, weights=weight, minlength=len(classes)))
        shares = counts.result()[model.codes_]
        model = PriorCorrected.from_fitted(learner, model, shares / shares.sum())
    return FitState(model, n_train, seconds, started=True, info=fit_info(model))


def _codes(labels: pd.Series, classes: tuple) -> pd.Series:
    return pd.Series(category_codes(labels, pd.Index(classes)), index=labels.index)
