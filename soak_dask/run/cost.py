"""What a run would cost, known before any fit: ``dry_run`` and ``PlanCost``.

Every entry point reaches ``Session.run`` with its plan, its strategies and (from the block
counts, or one pass over the key columns) each fit's rows. Under ``dry_run`` the run stops
there, before any fit task is made, and reports the plan's cost instead: the (fit, learner)
pairs, the distinct train sets, the rows per fit, the strategy each learner gets, the
estimated peak of the largest fit that gathers its rows (``memory.fit_bytes``) against the
memory a worker has for a task (the refusal ``memory.check_fit_memory`` would raise, word for word)
and the passes over the data the fits would make.

What ran before the plan still runs: the table's checks, the design's key columns and their
counts (for ``compare_sampling`` with ``"overlap"``, its neighbour search) -- the passes that
make the plan, not the fits. A scoring pass whose AUC pieces would not fit the workers at once
is split into waves (``score_memory.waves``), each one more read of the table: the cost counts
them; a test block no wave can hold (``score_memory.check_score_memory``) is the refusal.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from dask.utils import format_bytes

from ..workers import FitMemoryError, WorkerMemory
from .across_workers import AcrossWorkers, across_bytes, check_across, worker_share
from .memory import check_fit_memory, fit_bytes
from .score_memory import n_workers
from .strategies import (
    Batched,
    Context,
    OnePass,
    PartialFit,
    WholeTrainSet,
    assign,
    by_pass,
    score_budget,
    whole_fits,
)

#: The plans of the dry run under way (None: no dry run).
_PLANS: ContextVar[list | None] = ContextVar("soak_dask_dry_run", default=None)


class DryRunStop(Exception):
    """Ends a run under ``dry_run`` at its first plan, before any fit task is made."""


@dataclass(frozen=True, eq=False)
class PlanCost:
    """The cost of one plan of a run, from ``dry_run``: prints readably.

    Attributes
    ----------
    design : str
        The entry point (``soak``, ``evaluate``, ``transfer``, ``search_subsets``,
        ``split_sensitivity``, ``compare_sampling``).
    part : str or None
        The plan's part of a run of several plans (``search_subsets``' rounds).
    n_fits : int
        (fit, learner) pairs, as the result's ``n_fits`` attr counts them.
    n_train_sets : int
        Distinct train sets (fits), each fitted once per learner.
    n_features : int
    fits : pandas.DataFrame
        One row per (fit, learner) pair: ``fit_id``, ``learner``, ``strategy``, ``train``
        (train rows; a weighted fit's sum of weights), ``test`` (rows of its test blocks),
        ``gathered`` (rows its task holds at once: capped train rows for a whole-train-set
        fit, whose test rows are scored a partition at a time; capped train rows plus test
        rows for a batched fit, scored in its task; 0 for one-pass and incremental fits,
        which hold one partition at a time; each worker's share of the train rows for a fit
        across the workers) and ``peak_bytes`` (``memory.fit_bytes`` of ``gathered``; of an
        across-workers fit, ``across_workers.across_bytes`` on each worker).
    memory : WorkerMemory or None
        What a worker has for a task: its memory limit, what it holds at rest and ``free``,
        the bytes a task may take (None: not known, nothing is refused).
    refusal : str
        The ``FitMemoryError`` the run would raise before any fit ("" if none).
    passes : tuple of (int, str)
        Passes over the data the fits would make, by what makes them (an estimate: each pass
        reads every partition, from cluster memory when the table is persisted).
    score_waves : int
        Waves of the largest scoring pass: 1 when its AUC pieces fit the workers at once,
        else each wave is one more read of the table (counted in ``passes``).
    notes : tuple of str
        What the cost leaves out.
    """

    design: str
    part: str | None
    n_fits: int
    n_train_sets: int
    n_features: int
    fits: pd.DataFrame
    memory: WorkerMemory | None
    refusal: str
    passes: tuple[tuple[int, str], ...]
    notes: tuple[str, ...] = ()
    score_waves: int = 1

    @property
    def refused(self) -> bool:
        """Whether the run would be refused before any fit (``FitMemoryError``)."""
        return bool(self.refusal)

    @property
    def n_passes(self) -> int:
        return sum(n for n, _ in self.passes)

    @property
    def peak_bytes(self) -> int:
        """Estimated peak of the largest fit that gathers its rows (0: none does)."""
        return int(self.fits["peak_bytes"].max()) if len(self.fits) else 0

    @property
    def over_limit(self) -> bool:
        """Whether the largest gathering fit needs more than a worker has for a task."""
        return self.memory is not None and self.peak_bytes > self.memory.free

    def table(self) -> pd.DataFrame:
        """One row per (learner, strategy): its fits, their train rows (min, median, max),
        the largest rows a task gathers and its estimated peak bytes, and whether that is over
        what a worker has for a task."""
        groups = self.fits.groupby(["learner", "strategy"], sort=False)
        out = groups.agg(
            n_fits=("fit_id", "size"),
            train_min=("train", "min"),
            train_median=("train", "median"),
            train_max=("train", "max"),
            test_max=("test", "max"),
            gathered_max=("gathered", "max"),
            peak_bytes=("peak_bytes", "max"),
        ).reset_index()
        memory = self.memory
        out["over_limit"] = memory is not None and out["peak_bytes"] > memory.free
        return out.assign(design=self.design, part=self.part)[["design", "part", *out.columns]]

    def __str__(self) -> str:
        return format_cost(self)


class PlanCosts(list):
    """The ``PlanCost`` of each plan a run reached, from ``dry_run``: a list that prints each
    one and whose ``table()`` stacks theirs."""

    def table(self) -> pd.DataFrame:
        return pd.concat([cost.table() for cost in self], ignore_index=True)

    def __str__(self) -> str:
        return "\n\n".join(map(str, self))


def dry_run(func: Callable[..., Any], /, *args: Any, **kwargs: Any) -> PlanCosts:
    """What ``func(*args, **kwargs)`` would cost, without fitting: a ``PlanCost`` per plan.

    ``func`` is an entry point (``soak``, ``evaluate``, ``transfer``, ``search_subsets``,
    ``split_sensitivity``, ``compare_sampling``) or anything that calls one. It runs as it would
    up to its first plan's fits (the table's checks, the design's keys and their counts, and the
    memory the workers have for a task, from the client of its ``options``), then stops: no fit
    task is made, nothing is written (no checkpoint). ``search_subsets`` plans round by round,
    each round from the last one's scores: its cost is the first round's, and says so.

    Returns
    -------
    PlanCosts
        A list of ``PlanCost`` (one per plan reached); ``print`` it, or ``.table()`` for a
        DataFrame. A dry run inside another adds its costs to the outer one's too.

    Examples
    --------
    >>> import soak_dask as sd
    >>> costs = sd.dry_run(sd.evaluate, table, ["lda"], outer="cv")  # doctest: +SKIP
    >>> print(costs)  # doctest: +SKIP
    >>> costs[0].n_fits, costs[0].refused  # doctest: +SKIP
    (5, False)
    """
    outer = _PLANS.get()
    token = _PLANS.set([])
    try:
        func(*args, **kwargs)
    except DryRunStop:
        pass
    finally:
        plans = PlanCosts(_PLANS.get())
        _PLANS.reset(token)
    if not plans:
        name = getattr(func, "__name__", repr(func))
        raise ValueError(
            f"dry_run({name}, ...) reached no plan: pass a run's entry point (soak, evaluate, "
            "transfer, search_subsets, split_sensitivity or compare_sampling) and its arguments"
        )
    if outer is not None:
        outer.extend(plans)
    return plans


def dry_running() -> bool:
    """Whether a dry run is under way (``Session.run`` then stops before any fit)."""
    return _PLANS.get() is not None


def stop_dry_run(
    ctx: Context, strategies: list[Any], design: str, part: str | None, counted: bool
) -> None:
    """Under ``dry_run``: record the cost of ``ctx.plan`` (its ``fit_rows`` known) and stop
    the run before any fit. ``counted``: the real run would count each fit's rows in a pass
    of its own (no block counts). Does nothing outside a dry run."""
    plans = _PLANS.get()
    if plans is None:
        return
    plans.append(plan_cost(ctx, strategies, design, part, counted))
    raise DryRunStop


def plan_cost(
    ctx: Context, strategies: list[Any], design: str, part: str | None, counted: bool
) -> PlanCost:
    """The cost of running ``ctx.plan`` with ``strategies`` (``ctx.fit_rows`` set), as
    ``strategies.make_tasks`` would assign its pairs."""
    plan, rows = ctx.plan, ctx.fit_rows
    pairs = [(f, name) for f in plan.fits.index for name in ctx.estimators]
    chosen = assign(ctx, pairs, strategies)
    used = [strategies[chosen[p]] for p in pairs]
    frame = pd.DataFrame(pairs, columns=["fit_id", "learner"])
    frame["strategy"] = [strategy_name(s) for s in used]
    frame["train"] = rows.loc[frame["fit_id"], "train"].to_numpy()
    frame["test"] = rows.loc[frame["fit_id"], "test"].to_numpy()
    capped = frame["train"] if ctx.max_rows is None else frame["train"].clip(upper=ctx.max_rows)
    whole = np.array([isinstance(s, WholeTrainSet) for s in used], dtype=bool)
    batched = np.array([isinstance(s, Batched) for s in used], dtype=bool)
    frame["gathered"] = np.select([whole, batched], [capped, capped + frame["test"]], 0)
    n_features = len(ctx.run.features)
    frame["peak_bytes"] = [fit_bytes(n, n_features) if n else 0 for n in frame["gathered"]]
    across = np.array([isinstance(s, AcrossWorkers) for s in used], dtype=bool)
    workers = n_workers(ctx.client)
    if across.any():
        frame.loc[across, "gathered"] = [worker_share(n, workers) for n in capped[across]]
        shares = [across_bytes(n, n_features, workers) for n in capped[across]]
        frame.loc[across, "peak_bytes"] = shares
    refusal, n_waves = "", 1
    try:  # as make_tasks checks
        if across.any():
            check_across(ctx, [p for p, a in zip(pairs, across, strict=True) if a])
        if isinstance(strategies[-1], WholeTrainSet):
            whole = whole_fits(chosen, strategies)
            check_fit_memory(rows, plan, whole, n_features, ctx.memory, ctx.max_rows)
        n_waves = score_budget(ctx, chosen, strategies)[1]
    except FitMemoryError as err:
        refusal = str(err)
    extra = n_waves - 1
    return PlanCost(
        design=design,
        part=part,
        n_fits=len(pairs),
        n_train_sets=len(plan.fits),
        n_features=n_features,
        fits=frame,
        memory=ctx.memory,
        refusal=refusal,
        passes=passes(frame, used, counted, extra),
        notes=_notes(design, part, ctx.memory),
        score_waves=n_waves,
    )


def strategy_name(strategy: Any) -> str:
    """How a cost names a strategy."""
    if isinstance(strategy, OnePass):
        return "one-pass statistics"
    if isinstance(strategy, PartialFit):
        return "incremental"
    if isinstance(strategy, Batched):
        return "batched (whole table per task)"
    if isinstance(strategy, WholeTrainSet):
        return "whole train set"
    if isinstance(strategy, AcrossWorkers):
        return "across the workers"
    return type(strategy).__name__


def passes(
    frame: pd.DataFrame, used: Sequence[Any], counted: bool, waves: int = 0
) -> tuple[tuple[int, str], ...]:
    """The passes over the data of the fits ``frame`` describes (``used``: each pair's
    strategy): a whole-train-set fit reads every partition for its rows, once for all its
    learners; an incremental one once for its train blocks (the same blocks feed every
    epoch); an across-workers fit once for its rows; one-pass learners share one pass of
    statistics (unless made before, as ``search_subsets`` makes them); batched fits share one
    read; and every model of those strategies is scored in one pass (``make_tasks``).
    ``waves``: the scoring pass's reads beyond its first, where its AUC pieces are scored in
    waves."""
    pairs = list(zip(frame["fit_id"], used, strict=True))
    out = [(1, "counting each fit's rows")] if counted else []
    onepass = [s for s in used if isinstance(s, OnePass)]
    if onepass:
        made = getattr(onepass[0], "stats", None) is not None  # search_subsets' KnownStats
        out += [] if made else [(1, "block statistics")]
    else:
        out.append((1, "checking the features are finite"))
    reads = (
        (WholeTrainSet, "the rows of each whole-train-set fit"),
        (PartialFit, "the train blocks of each incremental fit"),
        (AcrossWorkers, "the rows of each across-workers fit, held while it trains"),
    )
    for kind, what in reads:
        if fits := {f for f, s in pairs if isinstance(s, kind)}:
            out.append((len(fits), what))
    if any(isinstance(s, Batched) for s in used):
        out.append((1, "the table, read once for the batched fits"))
    if any(by_pass(s) for s in used):
        out.append((1, "scoring every model"))
    if waves:
        out.append((waves, "more scoring reads, AUC's pieces scored in waves"))
    return tuple(out)


def _notes(design: str, part: str | None, memory: WorkerMemory | None) -> tuple[str, ...]:
    notes = []
    if design == "search_subsets":
        notes.append(
            "the first round of the first learner's greedy search only: each round is planned "
            "from the last one's scores, and each learner searches on its own"
        )
    elif part is not None:
        notes.append(f"one plan (part {part!r}) of a run of several: the first only")
    if design == "evaluate":
        notes.append(
            "not counted: the final models (with a test split, the bootstrap, models= or a "
            "learner that tunes or selects), each fitted on all training rows (from one pass "
            "of statistics, fed block by block, or gathered in one task) and scoring the test "
            "split a partition at a time"
        )
    if memory is None:
        notes.append(
            "no worker memory limit known (no client, Dask's local scheduler, or workers "
            "without one): no fit is refused"
        )
    return tuple(notes)


def _spread(values: pd.Series) -> str:
    return " / ".join(f"{v:,.0f}" for v in (values.min(), values.median(), values.max()))


def format_cost(cost: PlanCost) -> str:
    """``PlanCost`` as text: the plan's size, rows per fit, each learner's strategy, the
    largest gathering fit against the memory a worker has for it, and the passes."""
    fits = cost.fits.drop_duplicates("fit_id")
    part = f" (part {cost.part})" if cost.part else ""
    n_learners = cost.fits["learner"].nunique()
    lines = [
        f"{cost.design}{part}: {cost.n_fits:,} fits ({cost.n_train_sets:,} train sets × "
        f"{n_learners} learner{'s' if n_learners > 1 else ''}), {cost.n_features} features",
        f"  rows per fit (min / median / max): train {_spread(fits['train'])}, "
        f"test {_spread(fits['test'])}",
    ]
    shown = cost.table()[["learner", "strategy", "n_fits", "gathered_max", "peak_bytes"]]
    shown = shown.assign(
        gathered_max=shown["gathered_max"].map(lambda n: f"{n:,}" if n else "one partition"),
        peak_bytes=shown["peak_bytes"].map(lambda b: format_bytes(b) if b else "-"),
    ).rename(columns={"gathered_max": "rows held by a task", "peak_bytes": "est. peak"})
    lines += ["  " + line for line in shown.to_string(index=False).splitlines()]
    lines.append("  " + _memory_line(cost))
    if cost.score_waves > 1:
        lines.append(
            f"  AUC's pieces do not fit the workers at once: scored in {cost.score_waves} "
            "waves, each one more read of the table"
        )
    steps = ", ".join(f"{n} {what}" for n, what in cost.passes)
    lines.append(f"  passes over the data (estimate): {cost.n_passes} ({steps})")
    lines += [f"  note: {note}" for note in cost.notes]
    return "\n".join(lines)


def _memory_line(cost: PlanCost) -> str:
    """The largest gathering fit, then the memory a worker has for it and the verdict."""
    memory = cost.memory
    if not cost.peak_bytes:
        peak = "no fit gathers its rows (each task holds one partition)"
    else:
        top = cost.fits.loc[cost.fits["peak_bytes"].idxmax()]
        peak = (
            f"largest fit that gathers its rows: fit {top['fit_id']} of {top['learner']!r}, "
            f"{top['gathered']:,} rows × {cost.n_features} features, about "
            f"{format_bytes(cost.peak_bytes)} at its peak"
        )
    if memory is None:
        return f"{peak}\n  worker memory limit: not known"
    against = f"{peak}\n  worker memory: {memory}"
    if cost.refused:
        return f"{against}: REFUSED before any fit:\n  {cost.refusal}"
    if cost.over_limit:
        return f"{against}: OVER it, and batched fits are not refused"
    return f"{against}: within it"
