"""The ways to fit a plan's (fit, learner) pairs, as interchangeable strategies.

Each strategy says which pairs it ``accepts`` and turns a list of them into their models
(``models``: the strategies scoring partition by partition) or into Dask tasks whose results
are score records (``tasks``: ``Batched``). ``assign`` gives each pair to the first strategy
that accepts it, and ``make_tasks`` scores every strategy's models in one scoring pass:

- ``OnePass``: learners whose fit needs only additive statistics (featureless, linear and
  ridge models, LDA, Gaussian naive Bayes) are fitted on the client from one pass of per-cell
  or per-fit (weighted) statistics;
- ``PartialFit``: learners with ``partial_fit`` get one block of train rows per task, so no
  worker holds a whole train set, and are scored partition by partition as ``OnePass``'s are
  (``scoring_pass``);
- ``WholeTrainSet``: any learner, fitted on its train rows gathered in one task (its test rows
  never gathered: the fitted model is scored partition by partition, ``scoring_pass``);
- ``Batched``: many fits per task on a small table, each task gathering the table once and
  scoring its fits there.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property, partial
from typing import Any, ClassVar

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
from dask.base import normalize_token, tokenize
from sklearn.base import BaseEstimator

from ..reduction import is_lazy, list_call, tree_reduce
from ..split.plan import FIT_COLUMNS, Fit, Plan
from ..tables.table import Table
from ..user_warning import warn_user
from ..workers import WorkerMemory
from .closed_form import fit_from_stats, is_additive
from .fit_stats import FitStats, fit_stats
from .fitting import (
    FitSpec,
    FitState,
    RunSpec,
    fit_many,
    fit_parts,
    guard,
    merge_pieces,
    partial_fit_chain,
    score_block,
    score_partition,
    score_selections,
    select_and_fit,
    select_rows,
    takes_weights,
)
from .memory import check_fit_memory
from .onepass import block_stats, train_stats
from .rowcap import keep_rates
from .score_memory import (
    auc_columns,
    block_pieces,
    check_score_memory,
    n_workers,
    wave_budget,
    waves,
)

Pair = tuple[int, str]  # (fit_id, learner)
#: Fan-in of the scoring pass's tree of merges.
SPLIT_EVERY = 8


@dataclass(frozen=True)
class Context:
    """What every strategy reads: the data, the plan, the learners and the run's options."""

    table: Table
    data: dd.DataFrame
    plan: Plan
    estimators: Mapping[str, BaseEstimator]
    run: RunSpec
    client: Any = None
    max_rows: int | None = None
    class_rows: pd.DataFrame | None = None  # rows per class of each fit (with max_rows)
    fit_rows: pd.DataFrame | None = None  # train and test rows of each fit (memory.fit_rows)
    memory: WorkerMemory | None = None  # what a worker has for a task (None: not known)
    label: str = "SOAK"  # how the progress bar and messages name the run (its design)
    score_budget: float | None = None  # bytes of AUC pieces a scoring wave may hold (None: all)

    def spec(self, fit_id: int, learner: str) -> FitSpec:
        """The task description of one (fit, learner) pair."""
        fit = self.plan.fits.loc[fit_id]
        n_groups = int(fit["n_groups"])
        # A capped full-size train set keeps its class shares; a down-sampled one, those it
        # has (and regression, with one column of rows, has no classes to share).
        rows = self.class_rows
        shares = rows is not None and not n_groups and len(rows.columns) > 1
        return FitSpec(
            learner=learner,
            fit_id=int(fit_id),
            train=fit["train"],
            tests=tuple(self._tests[b] for b in fit["blocks"]),
            n_groups=n_groups,
            draw=int(fit["draw"]),
            weights=fit["weights"],
            max_rows=self.max_rows or 0,
            class_rows=tuple(int(n) for n in rows.loc[fit_id]) if shares else (),
        )

    @cached_property
    def _tests(self) -> list[tuple[int, Any, str]]:
        blocks = self.plan.blocks
        return list(zip(blocks.index, blocks["test"], blocks["name"], strict=True))

    def rates(self, fit_id: int, exact: bool) -> tuple[float, ...] | None:
        """Per class, the chance that a partition passes on a train row of this fit (None:
        all; so also for a cap after down-sampling, which needs the train set whole)."""
        if self.class_rows is None or self.plan.fits.loc[fit_id, "n_groups"]:
            return None
        return keep_rates(self.class_rows.loc[fit_id].to_numpy(), self.max_rows, margin=exact)

    def rows(self, spec: FitSpec, *, train: bool = True, test: bool = True, rates=None):
        """The lazy rows of one fit: its train rows (sampled at ``rates``) and/or test blocks.

        Filtering happens next to the data; only these rows, and only the columns the fit
        reads (features, label, group, weights and its selections' keys), reach the worker that
        fits: a design with a key column per repeat or trial would otherwise ship them all.
        """
        data, selection = self.selection(spec, train=train, test=test, rates=rates)
        return data.map_partitions(select_rows, *selection, meta=data._meta)

    def selection(
        self, spec: FitSpec, *, train: bool = True, test: bool = True, rates=None
    ) -> tuple[dd.DataFrame, tuple]:
        """The columns of the data one fit reads (``rows``) and the arguments after the
        partition of ``fitting.select_rows``, which picks the fit's rows in a partition."""
        run = self.run
        train_rows = spec.train if train else None
        tests = tuple(test for _, test, _ in spec.tests) if test else ()
        keys = sorted(set().union(*(s.columns for s in (train_rows, *tests) if s is not None)))
        roles = [*run.features, run.label, *filter(None, (run.group, spec.weights))]
        columns = list(dict.fromkeys([*roles, *keys]))
        data = self.data if len(columns) == len(self.data.columns) else self.data[columns]
        selection = (train_rows, tests, rates, run.seed, run.label, run.classes, spec.weights)
        return data, selection

    def token(self, *parts: Any) -> str:
        """Names tasks for the dashboard; the token keeps runs on one client apart."""
        return dask.base.tokenize(self.data, self.run, *parts)

    def compute(self, lazy: Any) -> Any:
        """``lazy`` computed on the run's client (Dask's local scheduler without one)."""
        return self.client.compute(lazy).result() if self.client is not None else lazy.compute()


@dataclass(frozen=True)
class WholeTrainSet:
    """Fit each learner on its train rows gathered in one task (any learner, any fit:
    down-sampled, capped or weighted); score the fitted models partition by partition, as
    ``OnePass`` scores its models (``scoring_pass``): a model goes to the blocks, never a
    test set to the model. A fit task holds its train rows alone, and returns its model (a
    task result that stays on its worker until the scoring tasks, which depend on it, read
    it)."""

    scores_by_pass: ClassVar[bool] = True

    def accepts(self, ctx: Context, fit_id: int, learner: str) -> bool:
        return True

    def models(self, ctx: Context, pairs: list[Pair]) -> tuple[dict[Pair, Any], list[Pair]]:
        fitted = {}
        for fit_id, learner in pairs:
            spec = ctx.spec(fit_id, learner)
            rates = ctx.rates(fit_id, exact=True)
            estimator = ctx.estimators[learner]
            key = f"soak-fit-{fit_id}-{learner}-{ctx.token(spec, estimator, 'whole')}"
            if ctx.data.npartitions == 1:
                # The fit's task selects its rows in the partition: a task selecting them
                # apart would run where the (persisted) partition is, behind the fits there,
                # while the other workers waited for their rows.
                data, selection = ctx.selection(spec, test=False, rates=rates)
                parts, args = data.to_delayed(), (selection, estimator, spec, ctx.run)
                state = list_call(select_and_fit, parts, *args, pure=True, dask_key_name=key)
            else:
                # One task per partition reads it and selects this fit's train rows there (a
                # read shared by every fit would be held until the last of them had its rows).
                rows = ctx.rows(spec, test=False, rates=rates).to_delayed()
                args = (estimator, spec, ctx.run)
                state = list_call(fit_parts, rows, *args, pure=True, dask_key_name=key)
            fitted[fit_id, learner] = (state, spec)
        return fitted, []


@dataclass(frozen=True)
class Batched:
    """Many fits per task on a small table: each task gathers the table once and makes
    ``size`` fits on it (leave-one-out's hundreds of fits would otherwise each read it)."""

    size: int = 64
    scores_by_pass: ClassVar[bool] = False

    def accepts(self, ctx: Context, fit_id: int, learner: str) -> bool:
        return True

    def tasks(self, ctx: Context, pairs: list[Pair]) -> tuple[list[Any], list[Pair]]:
        parts = ctx.data.to_delayed()
        out = []
        for start, batch in fit_batches(pairs, self.size):
            jobs = [(ctx.estimators[n], ctx.spec(f, n)) for f, n in batch]
            key = f"soak-batch-{start}-{ctx.token(jobs)}"
            out.append(list_call(fit_many, parts, jobs, ctx.run, pure=True, dask_key_name=key))
        return out, []


def fit_batches(pairs: list[Pair], size: int) -> list[tuple[int, list[Pair]]]:
    """``pairs`` in batches of about ``size`` (and where each starts), the learners of a fit
    kept together and adjacent (``fitting.fit_many`` pairs their per-row losses); a fit with
    more learners than ``size`` makes a batch of its own."""
    by_fit: dict[int, list[Pair]] = {}
    for pair in pairs:
        by_fit.setdefault(pair[0], []).append(pair)
    batches: list[tuple[int, list[Pair]]] = []
    start = 0
    for group in by_fit.values():
        if not batches or len(batches[-1][1]) + len(group) > size:
            batches.append((start, []))
        batches[-1][1].extend(group)
        start += len(group)
    return batches


@dataclass(frozen=True)
class PartialFit:
    """Feed learners with ``partial_fit`` one block of train rows per task, ``epochs`` times
    (block order reshuffled, seeded), so a worker holds one block and the model at a time;
    score the fed models partition by partition, as ``OnePass`` scores its models
    (``scoring_pass``)."""

    epochs: int = 1
    scores_by_pass: ClassVar[bool] = True

    def accepts(self, ctx: Context, fit_id: int, learner: str) -> bool:
        estimator = ctx.estimators[learner]
        # A weighted fit (a bootstrap's) is fed its weights as sample_weight; under a row cap
        # it is left to an exact draw of its weighted rows (a whole-train-set fit).
        weighted = ctx.plan.fits.loc[fit_id, "weights"] is not None
        fed = not weighted or (ctx.max_rows is None and takes_weights(estimator))
        return fed and hasattr(estimator, "partial_fit")

    def models(self, ctx: Context, pairs: list[Pair]) -> tuple[dict[Pair, Any], list[Pair]]:
        return {pair: (self._chain(ctx, *pair), ctx.spec(*pair)) for pair in pairs}, []

    def _chain(self, ctx: Context, fit_id: int, learner: str) -> Any:
        """The delayed ``FitState`` of one pair, fed its train blocks (sampled under a cap)."""
        spec, run = ctx.spec(fit_id, learner), ctx.run
        rates = ctx.rates(fit_id, exact=False)
        parts = ctx.rows(spec, test=False, rates=rates).to_delayed()
        return partial_fit_chain(ctx.estimators[learner], parts, run, self.epochs, spec.weights)


@dataclass(frozen=True)
class OnePass:
    """Fit additive learners on the client from one pass of statistics; score them partition
    by partition.

    Plans made of (subset, fold) cells (SOAK, transfer) pool per-cell statistics
    (``onepass.block_stats``); any other plan gets each fit's own statistics, weighted by its
    row weights (``fit_stats.fit_stats``: evaluate's designs, bootstrap included, split
    trials, sampling methods). The pass is skipped (its pairs handed back) when the statistics
    cannot be made, e.g. for non-finite values: those fits then run on their rows and report
    their own failures. ``stats``, statistics made before (``shared``), serve in its place
    where they hold every fit asked.
    """

    stats: FitStats | None = None
    scores_by_pass: ClassVar[bool] = True

    def accepts(self, ctx: Context, fit_id: int, learner: str) -> bool:
        return (
            ctx.max_rows is None
            and not ctx.plan.fits.loc[fit_id, "n_groups"]
            and is_additive(ctx.estimators[learner]) is not None
        )

    def models(self, ctx: Context, pairs: list[Pair]) -> tuple[dict[Pair, Any], list[Pair]]:
        if not pairs:
            return {}, []
        fit_ids = sorted({fit_id for fit_id, _ in pairs})
        stats = self.stats
        if stats is None or not set(fit_ids) <= set(stats.fit_ids):
            try:
                stats = ctx.compute(self._stats(ctx, fit_ids))
            except ValueError as err:
                warn_user(f"one-pass statistics unavailable ({err}); fitting on rows")
                return {}, pairs
        return {pair: (self._fit(ctx, stats, *pair), ctx.spec(*pair)) for pair in pairs}, []

    def shared(self, ctx: Context, extra: Mapping[int, Fit]) -> FitStats | None:
        """One pass of the statistics of the fits this strategy takes and of the ``extra``
        fits (ids apart from the plan's: evaluate's final models, all training rows), which
        alone would each make a pass of their own: one more fit adds a bit to the rows' cell
        codes (a row of weights to the bootstrap's products), not a read of the table. None
        where the plan's statistics are per cell, or where they cannot be made (each then
        makes its own pass, and reports why)."""
        plan = ctx.plan
        taken = [f for f in plan.fits.index if any(self.accepts(ctx, f, n) for n in ctx.estimators)]
        if _cells(ctx) or not taken:
            return None
        fits = {int(f): Fit(*plan.fits.loc[f, list(FIT_COLUMNS)]) for f in taken}
        run = ctx.run
        try:
            return ctx.compute(fit_stats(ctx.data, {**fits, **extra}, run.features, run.label,
                                         _classes(ctx)))  # fmt: skip
        except ValueError:
            return None

    @staticmethod
    def _stats(ctx: Context, fit_ids: list[int]) -> Any:
        """Lazy statistics of the fits ``fit_ids``: per cell where the plan has cells and no
        fit weights its rows, else per fit."""
        table, plan = ctx.table, ctx.plan
        if _cells(ctx) and plan.fits.loc[fit_ids, "weights"].isna().all():
            data = table.with_fold(ctx.data, table.fold)
            n_folds = len(plan.coords["fold"])
            return block_stats(data, plan.coords["test_subset"], n_folds, _classes(ctx))
        fits = {f: Fit(*plan.fits.loc[f, list(FIT_COLUMNS)]) for f in fit_ids}
        run = ctx.run
        return fit_stats(ctx.data, fits, run.features, run.label, _classes(ctx))

    @staticmethod
    def _fit(ctx: Context, stats: Any, fit_id: int, learner: str) -> FitState:
        if isinstance(stats, FitStats):
            pooled = stats.train(fit_id)
        else:
            train = ctx.plan.fits.loc[fit_id, "train"]
            pooled = train_stats(stats, train, ctx.table.subset, ctx.table.fold)
        return fit_pooled(ctx, learner, pooled)


def fit_pooled(ctx: Context, learner: str, pooled: Any) -> FitState:
    """The model of ``learner`` fitted on the client from ``pooled`` train statistics (a
    ``TrainStats``), on class codes: it predicts codes, and scoring never handles labels."""
    if pooled.classes is not None:
        pooled = dataclasses.replace(pooled, classes=np.arange(len(pooled.classes)))
    estimator = ctx.estimators[learner]
    start = time.perf_counter()
    fitted, message = guard(ctx.run, partial(fit_from_stats, estimator, pooled))
    return FitState(
        estimator if fitted is None else fitted,
        n_train=int(pooled.n_rows),
        seconds=time.perf_counter() - start,
        message=message,
        started=True,
        coded=True,
        finite=True,  # the statistics checked every feature is finite
    )


class Fitted(dict):
    """Models to score (pair -> (state, spec)), with a token computed from what made them:
    dask then neither walks nor hashes hundreds of models to name the pass's tasks."""

    def __init__(self, models: Mapping[Pair, tuple[Any, FitSpec]], token: str) -> None:
        super().__init__(models)
        self.token = token


normalize_token.register(Fitted)(lambda fitted: ("soak-fitted", fitted.token))


def scoring_pass(
    ctx: Context, fitted: Mapping[Pair, tuple[Any, FitSpec]], split_every: int = SPLIT_EVERY
) -> list[Any]:
    """Scoring tasks of the models ``fitted`` (pair -> (``FitState``, concrete or delayed;
    its spec)): each partition is read once and predicted by every fit whose test blocks it
    holds; a tree of merges (fan-in ``split_every``) adds up the partitions' partial scores,
    and one task per test block finishes them. No task holds more than one partition of
    rows, so the pass runs in bounded memory on tables larger than the cluster's. AUC's
    pieces hold every test row's score: where they exceed ``ctx.score_budget``
    (``score_budgets``), the blocks are scored in waves (``pass_waves``), each wave reading
    the table once more after the last wave's scores. Rows find their blocks by (fold,
    subset) cell where the plan has cells, else by each block's ``Selection``. Serves the
    models fitted from statistics (``OnePass``), those fed block by block (``PartialFit``)
    and those fitted on their gathered train rows (``WholeTrainSet``): the partitions are
    read once every model is made, so none is held waiting for a fit."""
    ordered, blocks, columns, score = _pass_blocks(ctx, fitted)
    run, token = ctx.run, ctx.token(fitted, blocks)
    shared = models_node(fitted, f"soak-fitted-{token}")
    out: list[Any] = []
    barrier: Any = shared  # the first wave reads once the models are made (fit tasks' too)
    for w, ids in enumerate(pass_waves(ctx, ordered, [len(b[-1]) for b in blocks])):
        # Reads wait for the models, then for the last wave's scores: never a partition
        # held waiting for them.
        parts = ctx.data[columns]
        parts = parts.map_partitions(after, barrier, meta=parts._meta)
        wave = [blocks[i] for i in ids]
        # The wave's blocks and the run's options as one graph node each, read by every
        # partition's task: passed as they are, dask would walk (and embed) them per partition.
        held = [
            dask.delayed(value, name=f"soak-{what}-{w}-{token}", traverse=False)
            for what, value in [("wave-blocks", wave), ("wave-options", run)]
        ]
        level = [
            dask.delayed(score, nout=len(wave), pure=True)(
                part, shared, *held, dask_key_name=f"soak-predict-{i}-{w}-{token}"
            )
            for i, part in enumerate(parts.to_delayed())
        ]
        # A tree of merges keeps few pieces alive (tasks and keys hold memory on a worker too).
        level = tree_reduce(level, merge_pieces, split_every, keep=split_every, nout=len(wave))
        last = [
            list_call(
                score_block,
                [node[j] for node in level],
                shared,
                ordered[i],
                blocks[i][-1],
                run,
                pure=True,
                dask_key_name=f"soak-score-{i}-{token}",
            )
            for j, i in enumerate(ids)
        ]
        barrier = list_call(len, last, pure=True, dask_key_name=f"soak-wave-{w + 1}-{token}")
        out += last
    return out


def models_node(fitted: Mapping[Pair, tuple[Any, FitSpec]], name: str) -> Any:
    """One graph node holding the models ``fitted`` as a dict, its models made by tasks
    (delayed, futures) handed to dask one by one and the rest passed as they are: dask would
    otherwise walk every model and spec of the dict looking for dask values."""
    lazy = [pair for pair, (state, _) in fitted.items() if is_lazy(state)]
    made = set(lazy)
    plain = {
        pair: (None if pair in made else state, spec) for pair, (state, spec) in fitted.items()
    }
    states = [fitted[pair][0] for pair in lazy]
    return list_call(with_states, states, lazy, plain, pure=True, dask_key_name=name)


def with_states(states: list[Any], pairs: list[Pair], fitted: dict) -> dict:
    """``fitted`` with the models of ``pairs`` made by tasks (``states``) in place."""
    made = dict(zip(pairs, states, strict=True))
    return {pair: (made.get(pair, state), spec) for pair, (state, spec) in fitted.items()}


def after(part: pd.DataFrame, barrier: Any) -> pd.DataFrame:
    """``part``, once ``barrier`` (the models, or the last wave's scores) is done: a wave's
    reads wait."""
    return part


def pass_waves(ctx: Context, ordered: list[int], n_pairs: list[int]) -> list[list[int]]:
    """Positions of the blocks ``ordered`` (of a scoring pass, ``n_pairs`` pairs predicting
    each) in the waves whose AUC pieces fit ``ctx.score_budget`` (one wave: all of them)."""
    if ctx.score_budget is None or ctx.fit_rows is None:
        return [list(range(len(ordered)))] if ordered else []
    columns = auc_columns(ctx.run.measures, ctx.run.classes)
    pairs = dict(zip(ordered, n_pairs, strict=True))
    pieces = block_pieces(ctx.fit_rows.attrs["block_rows"], pairs, columns)
    return waves([pieces[b] for b in ordered], ctx.score_budget)


def _pass_blocks(
    ctx: Context, fitted: Mapping[Pair, tuple[Any, FitSpec]]
) -> tuple[list[int], list[tuple], list[str], Any]:
    """The test blocks a scoring pass scores (in order), each with the keys of the fits that
    predict it (by (fold, subset) cell, or by ``Selection``), the columns its partitions
    read and the function that scores a partition."""
    by_block: dict[int, list[Pair]] = {}
    for pair, (_, spec) in fitted.items():
        for block, _, _ in spec.tests:
            by_block.setdefault(block, []).append(pair)
    cells, run = ctx.plan.blocks, ctx.run
    ordered = pass_order(ctx, by_block)
    if _cells(ctx):
        fold, subset = ctx.table.fold, ctx.table.subset
        blocks = [(cells.at[b, fold], cells.at[b, subset], by_block[b]) for b in ordered]
        columns = [*run.features, run.label, run.subset, run.fold_column]
        return ordered, blocks, columns, score_partition
    blocks = [(cells.at[b, "test"], by_block[b]) for b in ordered]
    keys = sorted(set().union(*(test.columns for test, _ in blocks)))
    columns = list(dict.fromkeys([*run.features, run.label, *keys]))
    return ordered, blocks, columns, score_selections


def pass_order(ctx: Context, blocks: Any) -> list[int]:
    """The order a scoring pass scores ``blocks`` in (and splits them into waves): by (fold,
    subset) cell where the plan has cells, else by block."""
    if not _cells(ctx):
        return sorted(blocks)
    cells, fold, subset = ctx.plan.blocks, ctx.table.fold, ctx.table.subset
    return sorted(blocks, key=lambda b: (cells.at[b, fold], cells.at[b, subset]))


def _cells(ctx: Context) -> bool:
    """Whether the plan's test blocks are (subset, fold) cells whose unions make its train
    sets (SOAK's and transfer's plans)."""
    return ctx.plan.cell_columns == (ctx.table.subset, ctx.table.fold)


def _classes(ctx: Context) -> list | None:
    return None if ctx.run.classes is None else list(ctx.run.classes)


def assign(ctx: Context, pairs: list[Pair], strategies: list[Any]) -> dict[Pair, int]:
    """Which of ``strategies`` makes each pair (its index): the first that accepts it, else
    the last."""
    *first, _ = strategies
    return {
        pair: next((i for i, s in enumerate(first) if s.accepts(ctx, *pair)), len(first))
        for pair in pairs
    }


def whole_fits(chosen: dict[Pair, int], strategies: list[Any]) -> dict[int, list[str]]:
    """``{fit_id: learners}`` of the pairs ``assign`` gave the last strategy (the fits made on
    their gathered rows, which ``memory.check_fit_memory`` checks)."""
    return chosen_fits(chosen, {len(strategies) - 1})


def by_pass(strategy: Any) -> bool:
    """Whether ``strategy`` scores its models partition by partition (``scoring_pass``):
    ``OnePass``, ``PartialFit`` and ``WholeTrainSet`` do, ``Batched`` scores in its tasks."""
    return bool(getattr(strategy, "scores_by_pass", False))


def scored_fits(chosen: dict[Pair, int], strategies: list[Any]) -> dict[int, list[str]]:
    """``{fit_id: learners}`` of the pairs ``assign`` gave a strategy scoring partition by
    partition (``by_pass``: ``scoring_pass``, whose AUC pieces
    ``score_memory.check_score_memory`` checks)."""
    passes = {i for i, s in enumerate(strategies) if by_pass(s)}
    return chosen_fits(chosen, passes)


def chosen_fits(chosen: dict[Pair, int], indices: set[int]) -> dict[int, list[str]]:
    """``{fit_id: learners}`` of the pairs ``assign`` gave one of the strategies ``indices``."""
    fits: dict[int, list[str]] = {}
    for (fit_id, learner), i in chosen.items():
        if i in indices:
            fits.setdefault(fit_id, []).append(learner)
    return fits


def make_tasks(
    ctx: Context, pairs: list[Pair], strategies: list[Any]
) -> tuple[list[Any], bool, int]:
    """The tasks of ``pairs``, each pair made by the first of ``strategies`` that accepts it,
    and one scoring pass (``scoring_pass``) for the models of every strategy that scores
    partition by partition (``by_pass``): the table is read once for all of them, and a test
    block's learners are predicted side by side (the Wald CV test's per-row differences).

    The last strategy must accept any pair: it also takes the pairs another hands back. Also
    returns whether one-pass statistics were made (which checked every feature is finite),
    and the waves of the scoring pass (``score_budget``: 1 when its AUC pieces fit at once).
    """
    chosen = assign(ctx, pairs, strategies)
    last = len(strategies) - 1
    if ctx.fit_rows is not None and isinstance(strategies[last], WholeTrainSet):
        whole = whole_fits(chosen, strategies)
        n_features = len(ctx.run.features)
        check_fit_memory(ctx.fit_rows, ctx.plan, whole, n_features, ctx.memory, ctx.max_rows)
    budget, n_waves = score_budget(ctx, chosen, strategies)
    tasks, models, back, stats_made = [], [], set(), False
    for i, strategy in enumerate(strategies):
        mine = [p for p in pairs if chosen[p] == i or (i == last and p in back)]
        if by_pass(strategy):
            made, left = strategy.models(ctx, mine)
            models.append(made)
        else:
            made, left = strategy.tasks(ctx, mine)
            tasks += made
        stats_made |= isinstance(strategy, OnePass) and bool(made)
        back.update(left)
    if any(models):
        scoring = dataclasses.replace(ctx, score_budget=budget)
        tasks += scoring_pass(scoring, merged_models(models))
    return tasks, stats_made, n_waves


def merged_models(models: list[Mapping[Pair, Any]]) -> Fitted:
    """The models of several strategies as one ``Fitted``, its token from theirs (a
    ``Fitted``'s own token, or the hash of its models)."""
    out: dict[Pair, Any] = {}
    for made in models:
        out.update(made)
    return Fitted(out, tokenize(*models))


def scoring_pairs(ctx: Context, chosen: dict[Pair, int], strategies: list[Any]) -> dict[int, int]:
    """Each test block the scoring pass scores -> the (fit, learner) pairs predicting it
    (those ``assign`` gave a strategy scoring partition by partition, ``by_pass``)."""
    passes = {i for i, s in enumerate(strategies) if by_pass(s)}
    pairs: dict[int, int] = {}
    for fit_id, names in chosen_fits(chosen, passes).items():
        for block in ctx.plan.fits.loc[fit_id, "blocks"]:
            pairs[block] = pairs.get(block, 0) + len(names)
    return pairs


def score_budget(
    ctx: Context, chosen: dict[Pair, int], strategies: list[Any]
) -> tuple[float | None, int]:
    """The bytes of AUC pieces one wave of the scoring pass may hold (None: no limit) and
    its waves (``score_memory.waves``), refusing first a block no wave can hold
    (``score_memory.check_score_memory``)."""
    run, memory = ctx.run, ctx.memory
    pairs = scoring_pairs(ctx, chosen, strategies)
    columns = auc_columns(run.measures, run.classes)
    if ctx.fit_rows is None or memory is None or not columns or not pairs:
        return None, 1
    block_rows = ctx.fit_rows.attrs["block_rows"]
    pieces = block_pieces(block_rows, pairs, columns)
    check_score_memory(block_rows, pairs, run.measures, run.classes, memory)
    budget = wave_budget(memory, n_workers(ctx.client))
    return budget, len(waves([pieces[b] for b in pass_order(ctx, pairs)], budget))
