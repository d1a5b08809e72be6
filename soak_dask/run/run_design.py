"""``run_design``: any design (``soak_dask.split.design.Design``) run on the engine, the way the
entry points run theirs -- start the session, add the keys, persist, plan, run with the fitting
strategies (``FittingOptions``: one-pass, row cap, incremental), checkpointed, ``error_score``,
and assemble."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

import dask.dataframe as dd
import xarray as xr
from sklearn.base import BaseEstimator

from ..learn.procedure import Procedure
from ..option_checks import checked
from ..run_options import RunOptions
from ..split.design import Design
from ..split.plan import Plan
from ..tables.table import Table
from .entry import entry_point
from .final_models import FinalModels
from .session import (
    Session,
    assemble,
    prepared,
    result_attrs,
    start,
    stratum_rows,
)
from .strategies import Batched


@entry_point
@checked("run")
def run_design(
    table: Table,
    design: Design,
    learners: Mapping[str, Any] | Sequence[Any] | BaseEstimator | str | None = None,
    *,
    measures: Sequence[str] | str | None = None,
    seed: int = 1,
    options: RunOptions | None = None,
) -> xr.Dataset:
    """Fit each learner on each distinct train set of ``design``'s plan and score its test
    blocks, on the cluster.

    Parameters
    ----------
    table : Table
        From ``soak_dask.load_table``.
    design : Design
        Any design: one of the package's or your own (``docs/plans.md`` writes one).
    learners, measures, seed
        As for ``soak_dask.soak``.
    options : RunOptions, optional
        How the run runs (``soak_dask.RunOptions``, default ``RunOptions()``): its client,
        progress bar, checkpoint, ``persist``, ``error_score`` and fitting strategy
        (``onepass``, ``max_train_rows``, ``incremental``, ``epochs``), as for
        ``soak_dask.soak``. The fitting options say how the fits are made: additive learners
        from one pass of statistics (per (subset, fold) cell where the plan is made of them,
        else per fit, weighted by a fit's row weights); a train set over ``max_train_rows`` on a
        seeded, stratified sample of that many rows; ``partial_fit`` learners fed one block of
        train rows per task, ``epochs`` times. Every other fit gathers its train rows in one
        task (many per task for a design of many small fits, ``Design.batch``).
        ``incremental`` beside a design that down-samples its train sets is refused, as ``soak``
        refuses it beside ``sizes``.

    Returns
    -------
    xarray.Dataset
        Dims (learner, *the plan's dims*): one variable per measure plus ``n_train``,
        ``n_test``, ``fit_seconds``, ``predict_seconds``; ``attrs["design"]`` is the
        design's kind of result (``Design.kind``, as the entry point that runs the design
        records it: ``"soak"`` for ``SameOtherAll``, ``"transfer"`` for ``Transfer``,
        ``"evaluate"`` for the outer designs) or else its class name, and
        ``attrs["design_repr"]`` gives it with its parameters; the fitting options, and what
        the design records of its keys (``Design.recorded``: an outer design's ``outer``,
        ``outer_folds`` and ``outer_repeats``, kNNDM's ``knndm_W`` ...) and prints
        (``Design.notes``), are in the attrs too.
    """
    if not isinstance(design, Design):
        raise TypeError(
            f"design={design!r}: need a soak_dask.Design (a class with add_keys and plan)"
        )
    caller = type(design).__name__
    session = start(table, caller, learners, measures=measures, seed=seed, options=options)
    ds, settings = run_on(session, table, design, options.persist)
    return ds.assign_attrs(result_attrs(settings))


#: What a run records of itself (and its checkpoint is identified by): from the keyed table,
#: the plan, the classes and the session (its learners as the procedure wrapped them).
Describe = Callable[[Table, Plan, "list | None", Session], dict[str, Any]]


def run_on(
    session: Session,
    table: Table,
    design: Design,
    persist: bool | None,
    *,
    procedure: Procedure | None = None,
    describe: Describe | None = None,
    finals: FinalModels | None = None,
    loss_pairs: bool = False,
) -> tuple[xr.Dataset, dict[str, Any]]:
    """``run_design``'s path after its session started, and every entry point's that runs one
    design: ``design``'s keys, the columns the run reads persisted as `persist` says, what the
    design counts and checks (``Design.counted``), the learners wrapped by the `procedure`
    (prior correction, calibration, tuning: ``soak``'s and ``evaluate``'s), its plan run by
    `session` with the fitting strategies that apply, checkpointed, and with ``finals`` the
    final models around it (``evaluate``'s: ``FinalModels``, which keeps them). Returns the
    result (its attrs the measures only; ``loss_pairs``: with each pair of learners' sums of
    squared per-row loss differences, for the Wald CV test) and the settings the run is
    identified by and records: ``describe``'s (an entry point's own record of its options), by
    default the design's (``design_settings``)."""
    keyed, data, kept, classes = keyed_and_counted(session, table, design, persist)
    notes = design.notes()
    if procedure is not None:
        estimators, wrapped = procedure.apply(session.estimators, classes, session.measures[0])
        session, notes = session.with_estimators(estimators), [*wrapped, *notes]
    counts = design.counts_
    plan = design.plan(keyed, counts)
    _check_incremental(session, design, plan)
    # A plan of (subset, fold) cells (SOAK's) pools per-cell statistics: the fold is its key.
    ctx = session.context(keyed, data, plan, classes, fold_column=keyed.fold or "")
    settings = (describe or partial(design_settings, design))(keyed, plan, classes, session)
    settings.update({"notes": notes} if notes else {})
    last = Batched(design.batch) if design.batch else None
    counted = {"rows": None if counts is None else stratum_rows(counts, keyed), "counts": counts}
    if finals is None:
        records = session.run(ctx, session.fitting.strategies(last=last), settings, **counted)
    else:
        records = finals.run(session, ctx, last, settings, data if kept else None, **counted)
    learners, measures = list(session.estimators), session.measures
    return assemble(records, plan, learners, measures, {}, loss_pairs=loss_pairs), settings


def keyed_and_counted(
    session: Session, table: Table, design: Design, persist: bool | None
) -> tuple[Table, dd.DataFrame, bool, list | None]:
    """The first steps of every run of a design: ``incremental`` refused where the design's
    own sizes down-sample, its keys added (on the run's client, the current one inside an
    entry point: ``entry.entry_point``; a design that sends work to the workers itself, as
    kNNDM's candidates, sends it there), the columns the run reads persisted as `persist`
    says (``prepared``), and what the design counts and checks (``Design.counted``). Returns
    the keyed table, its data, whether they were persisted, and the classes."""
    _check_incremental(session, design)  # before any pass, where the design says so
    keyed, data, kept = prepared(design.add_keys(table), persist, session, table)
    return keyed, data, kept, design.counted(keyed, table)


def design_settings(
    design: Design, table: Table, plan: Plan, classes: list | None, session: Session
) -> dict[str, Any]:
    """What a run of ``design`` records by default: its kind and parameters, the data's roles,
    the learners and measures, the fitting options and what the design drew
    (``Design.recorded``)."""
    kind = design.kind or session.design
    return {
        "title": f"soak_dask {kind} results",
        "design": kind,
        "design_repr": repr(design),
        "task": table.task,
        "source": table.source,
        **table.roles,
        "seed": session.seed,
        "measures": list(session.measures),
        "learners": {name: repr(est) for name, est in session.estimators.items()},
        "classes": [str(c) for c in classes] if classes else None,
        "n_fits": len(plan.fits) * len(session.estimators),
        "n_distinct_train_sets": len(plan.fits),
        **session.fitting.settings(),
        **design.recorded(),
    }


def _check_incremental(session: Session, design: Design, plan: Plan | None = None) -> None:
    """Refuse ``incremental`` where the fits are down-sampled (a down-sample needs its train
    set whole: ``FittingOptions.check_learners``): before any pass where the design's own
    ``sizes`` say so (``SameOtherAll``'s), and once a ``plan`` whose fits are down-sampled
    shows it (a design of your own that names no sizes)."""
    sizes = design.get_params().get("sizes", -1)
    if plan is not None and sizes < 0 and plan.fits["n_groups"].gt(0).any():
        sizes = 0
    session.fitting.check_learners(session.estimators, sizes=sizes)
