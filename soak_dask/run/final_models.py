"""``FinalModels``: ``evaluate``'s final models -- each learner fitted once on all training
rows -- made around a run's outer loop, the hook ``run_on`` takes as ``finals``: scored on the
reserved test split, on their own training rows for the bootstrap's .632 estimates, saved, or
reporting what a tuned learner chose."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from typing import Any

import dask
import dask.dataframe as dd

from ..learn.tuning import freeze, has_selection
from ..split.plan import Fit, Selection
from ..tables.table import Table
from ..user_warning import warn_user
from .cost import dry_running
from .final import FINAL_FIT, final_tasks
from .session import Session
from .strategies import Context, OnePass


class FinalModels:
    """The final models of a run, made with its outer loop (``run_on(..., finals=)``).

    Parameters
    ----------
    train : Table
        The training table, without the design's keys (the rows the final models fit).
    held : dask DataFrame or None
        The reserved test split the final models score, if any.
    resubstitution : bool
        Score each final model on its own training rows (``Design.resubstitution``: the
        bootstrap's .632 estimates).
    save : bool
        The models are saved (``evaluate(models=DIR)``): fitted even without a test split.

    Attributes
    ----------
    fitted_ : dict
        Per learner, its final model and scores (``final.final_tasks``' outcome); empty when
        none was needed.
    seconds_ : dict
        ``outer_seconds`` and ``final_seconds``: the wall seconds of the outer loop and of the
        final models.
    """

    def __init__(
        self, train: Table, held: dd.DataFrame | None, *, resubstitution: bool, save: bool
    ):
        self.train, self.held = train, held
        self.resubstitution, self.save = resubstitution, save
        self.fitted_: dict[str, dict[str, Any]] = {}
        self.seconds_: dict[str, float] = {}

    def run(
        self,
        session: Session,
        ctx: Context,
        strategies_last: Any,
        settings: Mapping[str, Any],
        persisted: dd.DataFrame | None,
        **counted: Any,
    ) -> list[dict[str, Any]]:
        """The outer loop's records (``Session.run`` of ``ctx`` with ``settings`` and the
        ``counted`` rows and counts), the final models made around it. Their tasks are made
        (and their memory checked) before any fit runs, on the training table's own rows
        (``persisted``: the run's columns kept in memory, else read again); where both the
        outer fits and the final models come from statistics, one pass makes them all
        (``OnePass.shared``). With ``nested=False`` and a learner that tunes or selects, the
        final models come first and the outer folds refit their choice.
        ``strategies_last``: the strategy that takes the fits no other does."""
        fitting = session.fitting
        selecting = any(map(has_selection, ctx.estimators.values()))
        needed = self.held is not None or self.resubstitution or self.save or selecting
        stats = None
        if needed and fitting.from_statistics and not dry_running():  # a dry run makes neither
            stats = OnePass().shared(ctx, {FINAL_FIT: Fit(Selection())})
        data = self.train.data if persisted is None else persisted
        final = dataclasses.replace(ctx, table=self.train, data=data)
        tasks = final_tasks(final, self.held, fitting, self.resubstitution, stats) if needed else {}
        strategies = fitting.strategies(onepass=OnePass(stats=stats), last=strategies_last)
        final_seconds = 0.0
        if not settings["nested"] and "optimistic" in settings:
            self.fitted_, final_seconds = _final_fits(ctx, tasks)
            ctx = dataclasses.replace(ctx, estimators=_frozen(ctx.estimators, self.fitted_))
        begun = time.perf_counter()
        records = session.run(ctx, strategies, settings, **counted)
        outer_seconds = time.perf_counter() - begun
        if not self.fitted_ and tasks:
            self.fitted_, final_seconds = _final_fits(ctx, tasks)
        self.seconds_ = {"outer_seconds": outer_seconds, "final_seconds": final_seconds}
        return records


def _final_fits(ctx: Context, tasks: dict[str, Any]) -> tuple[dict[str, dict[str, Any]], float]:
    """The final models of ``tasks`` (``final.final_tasks``: each learner fitted on all
    training rows, one task each), and the wall seconds they took; a model that failed is
    warned of once, with every learner's message."""
    start = time.perf_counter()
    lazy = list(tasks.values())
    done = ctx.client.compute(lazy, sync=True) if ctx.client is not None else dask.compute(*lazy)
    finals = dict(zip(tasks, done, strict=True))
    failed = {name: final["message"] for name, final in finals.items() if final["message"]}
    if failed:
        listed = "; ".join(f"{name}: {message}" for name, message in failed.items())
        warn_user(
            f"the final models of {len(failed)} learners failed to fit or score on all training "
            f"rows and score NaN (error_score), with no model to save: {listed}"
        )
    return finals, time.perf_counter() - start


def _frozen(estimators: Mapping[str, Any], finals: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Each learner with the setting and features its all-rows fit chose (non-nested)."""
    return {
        name: freeze(est, finals[name]["model"])
        if has_selection(est) and finals[name]["model"] is not None
        else est
        for name, est in estimators.items()
    }
