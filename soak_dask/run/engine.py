"""``soak``: validate, plan, execute, assemble -- one Dask task per (distinct fit, learner),
scores gathered into an ``xarray.Dataset``."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import Any

import dask.dataframe as dd
import numpy as np
import pandas as pd
import xarray as xr
from sklearn.base import BaseEstimator

from ..learn.builtin import resolve_learners
from ..learn.measures import check_measures
from ..learn.procedure import Procedure
from ..results.store import RESULTS_TITLE, build_dataset, encode_attrs, package_versions
from ..schema import TRAIN_TYPES
from ..settings import SETTINGS, check_run_options, identity
from ..split import folds as _folds
from ..split.designs import SameOtherAll
from ..split.plan import Plan
from ..tables.checks import (
    check_blocks,
    check_classes,
    check_folds_within_groups,
    one_class_warning,
    refuse_ignored,
    unequal_folds_warning,
    warn,
)
from ..tables.table import Table, check_table
from .executor import Checkpoint, current_client, data_identity, run_plan
from .fitting import RunSpec
from .rowcap import train_class_rows
from .strategies import Context, OnePass, PartialFit, WholeTrainSet


def soak(
    table: Table,
    learners: Mapping[str, Any] | Sequence[Any] | BaseEstimator | str | None = None,
    *,
    n_folds: int | None = None,
    seed: int = 1,
    train_types: Sequence[str] | str = TRAIN_TYPES,
    measures: Sequence[str] | str | None = None,
    stratify: bool = True,
    persist: bool = True,
    error_score: float | str = np.nan,
    client: Any = None,
    progress: bool = True,
    checkpoint: str | os.PathLike | None = None,
    sizes: int = -1,
    ratio: float = 0.5,
    size_seeds: int = 1,
    max_train_rows: int | None = None,
    incremental: bool = False,
    epochs: int = 1,
    onepass: bool = True,
    prior_correction: bool = False,
    calibration: str | None = None,
    inner: str = "auto",
    inner_folds: int = 5,
    inner_repeats: int = 1,
    balance: str = "class",
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
        K (default 10). With a fold column, K is read from it.
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
    persist : bool
        Keep the table's columns in cluster memory for the fits (one read of the source).
        Set False when the table is larger than the cluster's memory: each fit then reads
        its rows from storage.
    error_score : float or "raise"
        Score of a fit that raises, as in scikit-learn's ``cross_validate``: NaN and one warning
        listing the failures, or ``"raise"`` to stop.
    client : distributed.Client, optional
        Default: the current client, if any; otherwise Dask's local scheduler.
    progress : bool
        Show a progress bar of the fits: (fit, learner) pairs, as counted by ``n_fits``.
    checkpoint : path, optional
        Directory where each finished fit's scores are saved as it arrives. Running again with
        the same checkpoint and settings, in this process or another, computes only the missing
        fits; other settings (data, seed, folds, learners and their parameters, measures…) are
        refused, never mixed. Files are identified by their sizes, modification times and
        Parquet footers (see docs/scaling.md, "Checkpoints"); edited records are refused.
    sizes : int
        Down-sampled train sizes (mlr3resampling's ResamplingSameOtherSizesCV): -1 none;
        0 also every train set down-sampled to the smallest train set of its test subset and
        fold; n >= 1 also that size × ratio¹…ratioⁿ. Sizes count groups (rows without groups);
        whole groups and label shares are kept. Results gain dims ``train_size`` and ``sample``.
    ratio : float
        Ratio between successive down-sampled sizes.
    size_seeds : int
        Independent down-samples of each size (the ``sample`` dim).
    max_train_rows : int, optional
        Fit a train set larger than this on a seeded sample of exactly this many of its rows,
        each class keeping its share of the train set (largest remainder); ``n_train`` records
        the rows used. Each task gathers only slightly more rows than that, so it bounds the
        memory of a fit. Incremental learners get a sample of this size and these shares in
        expectation (each row kept with its class's rate); down-sampled train sizes are capped
        after down-sampling (those fits gather their train set whole).
    incremental : bool
        Feed learners that have ``partial_fit`` (SGDClassifier, MultinomialNB, MLPClassifier…)
        one block of train rows per task, so no worker holds a whole train set.
    epochs : int
        Passes over the train blocks for incremental learners (block order reshuffled, seeded).
    onepass : bool
        Fit learners whose fit needs only additive statistics (featureless, LinearRegression,
        Ridge, RidgeClassifier, LinearDiscriminantAnalysis, GaussianNB, optionally after a
        StandardScaler) from one pass of per-block statistics, instead of one pass per fit.
        Coefficients equal scikit-learn's fit on the rows up to rounding.
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

    Returns
    -------
    xarray.Dataset
        Dims (learner, test_subset, fold, train_type); one variable per measure plus
        ``n_train``, ``n_test``, ``fit_seconds``, ``predict_seconds``; settings in attrs.
        ``.soak.pvalues()`` and ``.soak.summary()`` compare the train types.
    """
    check_table(table, "soak")
    # Every option as declared in soak_dask.settings: checked, then recorded in the results.
    given = {
        k: v for k, v in locals().items() if k in SETTINGS and k not in ("learners", "measures")
    }
    options = check_run_options(given)
    _refuse_ignored(options)
    seed, n_folds = options["seed"], options["n_folds"]
    sized = {k: options[k] for k in ("sizes", "ratio", "size_seeds")}
    design = SameOtherAll(
        n_folds, train_types, seed=seed, stratify=stratify, balance=options["balance"], **sized
    )
    measures = check_measures(measures, table.task)
    estimators = resolve_learners(learners, table.task, seed)
    _check_incremental(estimators, incremental, sizes)
    client = current_client() if client is None else client
    # The data as given (before folds, which depend on the seed) identifies a checkpoint's run.
    data_id = data_identity(checkpoint, table)
    user_folds = table.fold is not None
    table, data = _prepared(design.add_keys(table), persist, client)
    counts, classes = _checked(table, n_folds, user_folds)
    estimators, notes = Procedure.from_options(options).apply(estimators, classes, measures[0])
    plan = design.plan(table, counts)
    settings = _settings(table, options, plan, measures, classes, estimators)
    settings.update({"notes": notes} if notes else {})
    ctx = _context(table, data, plan, estimators, measures, classes, error_score, seed, client)
    strategies = [
        *([OnePass()] if onepass else []),
        *([PartialFit(epochs)] if incremental else []),
        WholeTrainSet(),
    ]
    if checkpoint is not None:
        checkpoint = Checkpoint(checkpoint, settings, {**data_id, "rows": _rows(counts, table)})
    records = run_plan(_capped(ctx, counts, max_train_rows), strategies, progress, checkpoint)
    attrs = encode_attrs({**settings, "versions": package_versions()})
    return assemble(records, plan, list(estimators), measures, attrs)


def _check_incremental(estimators: Mapping[str, Any], incremental: bool, sizes: int) -> None:
    streamed = [name for name, est in estimators.items() if hasattr(est, "partial_fit")]
    if incremental and sizes >= 0 and streamed:
        raise ValueError(
            f"incremental=True with sizes={sizes}: down-sampling to a train size needs each train "
            f"set whole, which learners {streamed} are not given when fed block by block; use "
            "sizes=-1, or incremental=False"
        )


def _rows(counts: pd.DataFrame, table: Table) -> dict[str, int]:
    """Rows per stratum (subset, and class): the data's shape, whatever the folds."""
    strata = [c for c in counts.columns if c not in (table.fold, "n")]
    rows = counts.groupby(strata, observed=True)["n"].sum()
    return {str(k): int(n) for k, n in rows.items()}


def _prepared(table: Table, persist: bool, client: Any) -> tuple[Table, dd.DataFrame]:
    """The columns a run reads, persisted if asked, and the table over them."""
    cols = [*table.features, table.label, table.subset, table.fold]
    if table.group is not None:
        cols.append(table.group)
    data = table.data[cols]
    if persist:
        data = client.persist(data) if client is not None else data.persist()
        table = table.with_fold(data, table.fold, table.fold_counts)
    return table, data


def _checked(
    table: Table, n_folds: int | None, user_folds: bool
) -> tuple[pd.DataFrame, list | None]:
    """The table's block counts and classes, after the checks and warnings about its data."""
    counts = _folds.block_counts(table)
    if not counts["n"].sum():
        raise ValueError(f"the table ({table.source}) has no rows")
    k = _folds.check_fold_values(counts, table.fold, n_folds)
    subsets = sorted(counts[table.subset].unique().tolist())
    block_rows = counts.groupby([table.subset, table.fold], observed=True)["n"].sum()
    check_blocks(block_rows, subsets, k)
    warn(unequal_folds_warning(block_rows), stacklevel=3)
    if user_folds:
        check_folds_within_groups(table)
    if table.task != "classification":
        return counts, None
    classes = sorted(counts[table.label].unique().tolist())
    check_classes(classes, table.label)  # before the subsets' one-class warning
    warn(one_class_warning(counts, table.subset, table.label), stacklevel=3)
    return counts, classes


def _refuse_ignored(options: dict[str, Any]) -> None:
    """Options SOAK would ignore: the down-sampling's without ``sizes``, ``epochs`` without
    ``incremental``."""
    if options["sizes"] == -1:
        for name, default in (("ratio", 0.5), ("size_seeds", 1)):
            refuse_ignored(name, options[name], default, "sizes=-1", "sizes=0 or more")
    if not options["incremental"]:
        refuse_ignored("epochs", options["epochs"], 1, "incremental=False", "incremental=True")


def _settings(
    table: Table,
    options: dict[str, Any],
    plan: Plan,
    measures: Sequence[str],
    classes: list | None,
    estimators: Mapping[str, Any],
) -> dict[str, Any]:
    """The run's settings as results record them (and a checkpoint is identified by): the
    identifying options of ``soak_dask.settings``, as resolved for the data."""
    resolved = {
        **options,
        "n_folds": len(plan.coords["fold"]),
        "train_types": list(options["train_types"]),
        "measures": list(measures),
        "learners": {name: repr(est) for name, est in estimators.items()},
    }
    return {
        "title": RESULTS_TITLE,
        "task": table.task,
        "source": table.source,
        **table.roles,
        **identity(resolved),
        "classes": [str(c) for c in classes] if classes else None,
        "n_fits": len(plan.fits) * len(estimators),
        "n_distinct_train_sets": len(plan.fits),
    }


def _context(
    table: Table,
    data: dd.DataFrame,
    plan: Plan,
    estimators: Mapping[str, Any],
    measures: Sequence[str],
    classes: list | None,
    error_score: float | str,
    seed: int,
    client: Any,
) -> Context:
    run = RunSpec(
        features=table.features,
        label=table.label,
        subset=table.subset,
        fold_column=table.fold,
        measures=tuple(measures),
        classes=tuple(classes) if classes else None,
        group=table.group,
        error_score=error_score,
        seed=seed,
    )
    return Context(table, data, plan, estimators, run, client)


def _capped(ctx: Context, counts: pd.DataFrame, max_rows: int | None) -> Context:
    """``ctx`` with the row cap and, under one, each fit's rows per class."""
    if max_rows is None:
        return ctx
    classes = None if ctx.run.classes is None else list(ctx.run.classes)
    class_rows = train_class_rows(counts, ctx.plan.fits, ctx.table.label, classes)
    return dataclasses.replace(ctx, max_rows=max_rows, class_rows=class_rows)


def assemble(
    records: list[dict[str, Any]],
    plan: Plan,
    learners: list[str],
    measures: Sequence[str],
    attrs: Mapping[str, Any],
) -> xr.Dataset:
    """The results Dataset of ``plan``'s records, its subset coordinates (``test_subset``,
    and ``train_subset`` of a transfer plan) named as strings."""
    splits = plan.splits.copy()
    coords = dict(plan.coords)
    for dim in ("train_subset", "test_subset"):
        if dim in coords:
            splits[dim] = splits[dim].map(str)
            coords[dim] = [str(s) for s in coords[dim]]
    return build_dataset(records, splits, coords, learners, measures, attrs)
