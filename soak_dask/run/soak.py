"""``soak``: Same/Other/All K-fold CV -- the ``SameOtherAll`` design run on the run path every
design takes (``run_design.run_on``), with SOAK's procedure (prior correction, calibration,
inner tuning) and its record of its options; scores gathered into an ``xarray.Dataset``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import xarray as xr
from sklearn.base import BaseEstimator

from ..learn.procedure import Procedure
from ..option_checks import checked
from ..run_options import RunOptions
from ..schema import TRAIN_TYPES
from ..settings import SETTINGS, identity, refuse_ignored
from ..split.plan import Plan
from ..split.same_other_all import SameOtherAll
from ..tables.table import Table
from .assemble import RESULTS_TITLE
from .entry import entry_point
from .run_design import run_on
from .session import Session, result_attrs, start


@entry_point
@checked("run")
def soak(
    table: Table,
    learners: Mapping[str, Any] | Sequence[Any] | BaseEstimator | str | None = None,
    *,
    n_folds: int | None = None,
    seed: int = 1,
    train_types: Sequence[str] | str = TRAIN_TYPES,
    measures: Sequence[str] | str | None = None,
    stratify: bool = True,
    sizes: int = -1,
    ratio: float = 0.5,
    size_seeds: int = 1,
    prior_correction: bool = False,
    calibration: str | None = None,
    inner: str = "auto",
    inner_folds: int = 5,
    inner_repeats: int = 1,
    balance: str = "class",
    group_assignment: str = "rows",
    options: RunOptions | None = None,
) -> xr.Dataset:
    """Same/Other/All K-fold cross-validation of ``learners`` on ``table``.

    Folds are assigned on the cluster unless the table has a fold column; every distinct train
    set is fitted once per learner, as one Dask task that builds its train and test rows from the
    lazy table on a worker; scores stream back as fits finish.

    Parameters
    ----------
    table : Table
        From ``soak_dask.load_table``.
    learners : dict, list, estimator or str, optional
        ``{name: estimator or built-in name}``; built-in names include ``"featureless"``
        (majority class / mean of the train rows). Default: featureless plus a linear model.
    n_folds : int, optional
        K (default 10). With a fold column, K is read from it, and ``n_folds``, ``stratify``,
        ``balance`` and ``group_assignment`` (how folds are drawn) are refused.
    seed : int
        Seed of the folds and of built-in learners' randomness: an integer from 0 to
        2**32 - 1 (scikit-learn's range for ``random_state``).
    train_types : sequence of {"same", "other", "all"} or comma-separated str
        Which train sets to compare. With one subset only "same" exists.
    measures : sequence of str, optional
        Default: all for the task (classification: error, accuracy, balanced_accuracy, auc,
        log_loss; regression: mse, rmse, mae, r2).
    stratify : bool
        Balance folds within subset × label (classification).
    sizes : int
        Down-sampled train sizes (mlr3resampling's ResamplingSameOtherSizesCV): -1 none;
        0 also every train set down-sampled to the smallest train set of its test subset and
        fold; n >= 1 also that size × ratio¹…ratioⁿ. Sizes count groups (rows without groups);
        whole groups and label shares are kept. Results gain dims ``train_size`` and ``sample``.
    ratio : float
        Ratio between successive down-sampled sizes.
    size_seeds : int
        Independent down-samples of each size (the ``sample`` dim).
    prior_correction : bool
        Predict the class of largest probability divided by its share of the train set
        (classifiers with ``predict_proba``; see docs/nesting.md). Off by default here: SOAK's
        baselines and published results use the largest probability. Learners it wraps are
        fitted whole (not from block statistics).
    calibration : {None, "platt"}
        Platt scaling fitted on out-of-fold scores of each train set (binary tasks).
    inner, inner_folds, inner_repeats :
        The inner resampling that tunes a learner given with a search space (a
        ``(learner, space)`` tuple or ``soak_dask.Search``) inside each train set, as for
        ``evaluate``.
    balance : {"class", "overlap"}
        ``"overlap"`` assigns the folds with ``soak_dask.overlap_folds``: rows dealt within
        subset × degree-of-overlap level × class, so every fold holds its share of the rows
        where the classes meet (docs/balanced_sampling.md). Classification only.
    group_assignment : {"rows", "mlr3resampling"}
        With a group column, how whole groups are dealt to the folds of each stratum: ``"rows"``
        balances rows per fold (largest group first onto the emptiest fold); ``"mlr3resampling"``
        gives every fold the same number of groups, as the R package does
        (``soak_dask.assign_folds``; docs/method.md, "Grouped folds").

    options : RunOptions, optional
        How the run runs (``soak_dask.RunOptions``, default ``RunOptions()``): its client,
        progress bar, checkpoint, ``persist``, ``error_score`` and fitting strategy
        (``onepass``, ``max_train_rows``, ``incremental``, ``epochs``). Under ``sizes``,
        down-sampled train sets are capped by ``max_train_rows`` after down-sampling (those fits
        gather their train set whole), and ``incremental`` is refused.

    Returns
    -------
    xarray.Dataset
        Dims (learner, test_subset, fold, train_type); one variable per measure plus
        ``n_train``, ``n_test``, ``fit_seconds``, ``predict_seconds``; settings in attrs.
        ``.soak.pvalues()`` and ``.soak.summary()`` compare the train types.
    """
    # Every option checked at the door (option_checks.checked), then recorded in the results.
    given = {k: v for k, v in locals().items() if k in SETTINGS and k != "learners"}
    given.update(options.settings())
    _refuse_ignored(given)
    session = start(
        table, "soak", learners, measures=measures, seed=seed, options=options,
        prior_correction=prior_correction,
    )  # fmt: skip
    sized = {
        k: given[k] for k in ("sizes", "ratio", "size_seeds", "seed", "balance", "group_assignment")
    }
    design = SameOtherAll(n_folds, train_types, stratify=stratify, **sized)
    procedure = Procedure.from_options(given)
    describe = partial(_settings, given)
    ds, settings = run_on(
        session, table, design, options.persist, procedure=procedure, describe=describe
    )
    return ds.assign_attrs(result_attrs(settings))


def _refuse_ignored(options: dict[str, Any]) -> None:
    """Options SOAK would ignore: the down-sampling's without ``sizes`` (``epochs`` without
    ``incremental``: ``RunOptions``)."""
    if options["sizes"] == -1:
        for name in ("ratio", "size_seeds"):
            default = SETTINGS[name].default
            refuse_ignored(name, options[name], default, "sizes=-1", "sizes=0 or more")


def _settings(
    options: dict[str, Any], table: Table, plan: Plan, classes: list | None, session: Session
) -> dict[str, Any]:
    """The run's settings as results record them (and a checkpoint is identified by): the
    identifying options of ``soak_dask.settings``, as resolved for the data (``run_on``'s
    ``describe``)."""
    estimators = session.estimators
    resolved = {
        **options,
        "n_folds": len(plan.coords["fold"]),
        "train_types": list(options["train_types"]),
        "measures": list(session.measures),
        "learners": {name: repr(est) for name, est in estimators.items()},
    }
    return {
        "title": RESULTS_TITLE,
        "design": "soak",
        "task": table.task,
        "source": table.source,
        **table.roles,
        **identity(resolved),
        "classes": [str(c) for c in classes] if classes else None,
        "n_fits": len(plan.fits) * len(estimators),
        "n_distinct_train_sets": len(plan.fits),
    }
