"""``run_design``: any design (``soak_dask.split.design.Design``) run on the engine, the way the
entry points run theirs -- start the session, add the keys, persist, plan, run (checkpointed,
``error_score``), assemble."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import xarray as xr
from sklearn.base import BaseEstimator

from ..split.design import Design
from ..split.folds import table_classes
from ..tables.table import Table
from .entry import entry_point
from .session import assemble, persisted, result_attrs, start
from .strategies import WholeTrainSet


@entry_point
def run_design(
    table: Table,
    design: Design,
    learners: Mapping[str, Any] | Sequence[Any] | BaseEstimator | str | None = None,
    *,
    measures: Sequence[str] | str | None = None,
    seed: int = 1,
    persist: bool = True,
    error_score: float | str = np.nan,
    client: Any = None,
    progress: bool = True,
    checkpoint: str | os.PathLike | None = None,
) -> xr.Dataset:
    """Fit each learner on each distinct train set of ``design``'s plan and score its test
    blocks, on the cluster.

    Parameters
    ----------
    table : Table
        From ``soak_dask.load_table``.
    design : Design
        Any design: one of the package's or your own (``docs/plans.md`` writes one).
    learners, measures, seed, persist, error_score, client, progress, checkpoint
        As for ``soak_dask.soak``. Every fit gathers its train rows in one task (the
        one-pass and incremental strategies are ``soak``'s).

    Returns
    -------
    xarray.Dataset
        Dims (learner, *the plan's dims*): one variable per measure plus ``n_train``,
        ``n_test``, ``fit_seconds``, ``predict_seconds``; ``attrs["design"]`` is the
        design's kind of result (``Design.kind``: ``"soak"`` for ``SameOtherAll``, as
        ``soak()`` records it) or else its class name, and ``attrs["design_repr"]`` gives it
        with its parameters.
    """
    if not isinstance(design, Design):
        raise TypeError(
            f"design={design!r}: need a soak_dask.Design (a class with add_keys and plan)"
        )
    caller = type(design).__name__
    session = start(
        table, caller, learners, measures=measures, seed=seed, error_score=error_score,
        client=client, progress=progress, checkpoint=checkpoint,
    )  # fmt: skip
    keyed = design.add_keys(table)
    data = persisted(keyed.data, persist, session.client)
    plan = design.plan(keyed)
    classes = table_classes(table)
    ctx = session.context(keyed, data, plan, classes, fold_column="")
    settings = {
        "title": f"soak_dask {caller} results",
        "design": design.kind or caller,
        "design_repr": repr(design),
        "task": keyed.task,
        "source": keyed.source,
        **keyed.roles,
        "seed": session.seed,
        "measures": list(session.measures),
        "learners": {name: repr(est) for name, est in session.estimators.items()},
        "classes": [str(c) for c in classes] if classes else None,
        "n_fits": len(plan.fits) * len(session.estimators),
    }
    records = session.run(ctx, [WholeTrainSet()], settings)
    learners = list(session.estimators)
    return assemble(records, plan, learners, session.measures, result_attrs(settings))
