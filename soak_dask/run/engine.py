"""Run SOAK: one Dask task per (distinct fit, learner), results gathered into a Dataset."""

from __future__ import annotations

import dataclasses
import os
import queue
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from functools import partial
from typing import Any

import dask
import dask.dataframe as dd
import dask.threaded
import numpy as np
import pandas as pd
import xarray as xr
from dask.base import get_scheduler
from dask.system import CPU_COUNT
from sklearn.base import BaseEstimator

from ..hashing import seeded_hash
from ..learn.builtin import resolve_learners
from ..learn.measures import check_measures
from ..results.store import RESULTS_TITLE, build_dataset, encode_attrs, package_versions
from ..schema import DEFAULT_N_FOLDS, TRAIN_TYPES
from ..split import folds as _folds
from ..split.plan import check_train_types, make_plan
from ..split.sizes import check_sizes, size_labels, size_plan
from ..tables.checks import (
    check_blocks,
    check_features,
    check_folds_within_groups,
    one_class_warning,
    unequal_folds_warning,
    warn,
)
from ..tables.fingerprint import data_fingerprint
from ..tables.table import Table, category_codes
from .checkpoint import check_checkpoint_dir, open_checkpoint, run_key, save_task
from .fitting import (
    FitSpec,
    FitState,
    RunSpec,
    fit_and_score,
    guard,
    merge_pieces,
    partial_fit_step,
    score_block,
    score_fitted,
    score_partition,
)
from .onepass import block_stats, fit_from_stats, is_additive, train_stats
from .progress import progress_bar
from .rowcap import keep_rates, train_class_rows
from .tree import tree_reduce


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

    Returns
    -------
    xarray.Dataset
        Dims (learner, test_subset, fold, train_type); one variable per measure plus
        ``n_train``, ``n_test``, ``fit_seconds``, ``predict_seconds``; settings in attrs.
        ``.soak.pvalues()`` and ``.soak.summary()`` compare the train types.
    """
    if not isinstance(table, Table):
        raise TypeError(
            f"soak takes a Table, not a {type(table).__name__}; make one with "
            "soak_dask.load_table(data, label=..., subset=...)"
        )
    seed, n_folds = check_options(
        seed=seed,
        n_folds=n_folds,
        sizes=sizes,
        ratio=ratio,
        size_seeds=size_seeds,
        max_train_rows=max_train_rows,
        epochs=epochs,
    )
    train_types = check_train_types(train_types)
    measures = check_measures(measures, table.task)
    estimators = resolve_learners(learners, table.task, seed)
    streamed = [name for name, est in estimators.items() if hasattr(est, "partial_fit")]
    if incremental and sizes >= 0 and streamed:
        raise ValueError(
            f"incremental=True with sizes={sizes}: down-sampling to a train size needs each train "
            f"set whole, which learners {streamed} are not given when fed block by block; use "
            "sizes=-1, or incremental=False"
        )
    client = _current_client() if client is None else client
    # The data as given (before folds, which depend on the seed) identifies a checkpoint's run.
    data_id = None
    if checkpoint is not None:
        check_checkpoint_dir(checkpoint, table.source)  # refused before any pass over the data
        data_id = data_fingerprint(table)
    user_folds = table.fold is not None
    table, data = _folded_data(table, n_folds, seed, stratify, persist, client)
    counts = _folds.block_counts(table)
    if not counts["n"].sum():
        raise ValueError(f"the table ({table.source}) has no rows")
    n_folds = _folds.check_fold_values(counts, table.fold, n_folds)
    subsets = sorted(counts[table.subset].unique().tolist())
    block_rows = counts.groupby([table.subset, table.fold], observed=True)["n"].sum()
    check_blocks(block_rows, subsets, n_folds)
    warn(unequal_folds_warning(block_rows), stacklevel=2)
    if user_folds:
        check_folds_within_groups(table)
    classes = (
        sorted(counts[table.label].unique().tolist()) if table.task == "classification" else None
    )
    if classes is not None:
        warn(one_class_warning(counts, table.subset, table.label), stacklevel=2)
    splits, fits, extra_coords = _plan(
        table, data, counts, subsets, n_folds, train_types, sizes, ratio, size_seeds
    )
    names = {s: str(s) for s in subsets}
    settings = {
        "title": RESULTS_TITLE,
        "task": table.task,
        "source": table.source,
        **table.roles,
        "seed": seed,
        "n_folds": n_folds,
        "train_types": list(train_types),
        "measures": list(measures),
        "stratify": stratify,
        "classes": [str(c) for c in classes] if classes else None,
        "learners": {name: repr(est) for name, est in estimators.items()},
        "n_fits": len(fits) * len(estimators),
        "n_distinct_train_sets": len(fits),
        "sizes": sizes,
        "ratio": ratio,
        "size_seeds": size_seeds,
        "max_train_rows": max_train_rows,
        "incremental": incremental,
        "epochs": epochs,
        "onepass": onepass,
    }
    done, save = (
        _resume(checkpoint, settings, data_id, counts, table.fold, fits)
        if checkpoint is not None
        else ({}, None)
    )
    todo = [
        (fit_id, name) for fit_id in fits.index for name in estimators if (fit_id, name) not in done
    ]
    if done and progress:
        print(f"SOAK: resuming, {len(done)} of {len(done) + len(todo)} fits already done")
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
    class_rows = (
        train_class_rows(counts, fits, table.subset, table.fold, table.label, classes)
        if max_train_rows
        else None
    )
    from_stats = _fits_from_stats(
        table.with_fold(data, table.fold) if onepass else None,
        [(fit_id, name) for fit_id, name in todo if fits.loc[fit_id, "n_groups"] == 0],
        fits,
        estimators,
        subsets,
        n_folds,
        classes,
        client,
        run,
        skip=max_train_rows is not None,
    )
    if not from_stats:
        # Block statistics need finite values in every feature, so when they were made the
        # check is done; otherwise it is a pass of its own.
        check_features(data, table.features)
    tasks = _score_from_stats(data, fits, from_stats, run) + [
        _fit_task(
            data,
            table,
            fits.loc[fit_id],
            _fit_spec(fits, fit_id, name, max_train_rows, class_rows),
            estimators[name],
            run,
            incremental=incremental and name in streamed,
            epochs=epochs,
            rates=_keep_rates(
                class_rows, fits, fit_id, max_train_rows, not (incremental and name in streamed)
            ),
        )
        for fit_id, name in todo
        if (fit_id, name) not in from_stats
    ]
    records = [r for batch in done.values() for r in batch]
    blocks = {(fit_id, name): len(fits.loc[fit_id, "test_subsets"]) for fit_id, name in todo}
    records += _collect(tasks, client, progress, names, save, blocks)
    _warn_failures(records)
    splits = splits.assign(test_subset=splits["test_subset"].map(names))
    settings["versions"] = package_versions()
    return build_dataset(
        records,
        splits,
        list(estimators),
        [names[s] for s in subsets],
        n_folds,
        measures,
        encode_attrs(settings),
        extra_coords,
    )


def check_options(
    *,
    seed: Any,
    n_folds: Any,
    sizes: Any,
    ratio: Any,
    size_seeds: Any,
    max_train_rows: Any,
    epochs: Any,
    spell: Callable[[str], str] = str,
) -> tuple[int, int | None]:
    """Check the numeric run options, which need no data, before any work (the CLI calls it
    before it starts a cluster); errors name each option as ``spell`` writes it.

    Returns
    -------
    (int, int or None)
        The seed and K (None: from the fold column, or the default) as plain ints.
    """
    seed = _folds.check_seed(seed, spell("seed"))
    if n_folds is not None:
        n_folds = _folds.check_n_folds(n_folds, spell("n_folds"))
    check_sizes(sizes, ratio, size_seeds)
    if max_train_rows is not None and (
        isinstance(max_train_rows, bool)
        or not isinstance(max_train_rows, int)
        or max_train_rows < 1
    ):
        raise ValueError(
            f"{spell('max_train_rows')}={max_train_rows!r}: need a positive integer or None"
        )
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise ValueError(f"{spell('epochs')}={epochs!r}: need a positive integer")
    return seed, n_folds


def _folded_data(
    table: Table, n_folds: int | None, seed: int, stratify: bool, persist: bool, client: Any
) -> tuple[Table, dd.DataFrame]:
    """The table with its fold column (assigned unless the user gave one), and the columns a
    run reads, persisted if asked."""
    if table.fold is None:
        table = _folds.assign_folds(
            table, DEFAULT_N_FOLDS if n_folds is None else n_folds, seed, stratify=stratify
        )
    cols = [*table.features, table.label, table.subset, table.fold]
    if table.group is not None:
        cols.append(table.group)
    data = table.data[cols]
    if persist:
        data = client.persist(data) if client is not None else data.persist()
        table = table.with_fold(data, table.fold, table.fold_counts)
    return table, data


def _plan(
    table: Table,
    data: dd.DataFrame,
    counts: pd.DataFrame,
    subsets: list,
    n_folds: int,
    train_types: Sequence[str],
    sizes: int,
    ratio: float,
    size_seeds: int,
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, list]]:
    """The split table, the distinct fits (with their down-sampled sizes) and extra dims."""
    splits, fits = make_plan(subsets, n_folds, train_types)
    if sizes < 0:
        return splits, fits.assign(n_groups=0, sample=0), {}
    if table.group is not None:
        by_subset = data.groupby(table.subset, observed=True)[table.group]
        subset_groups = by_subset.nunique(split_out=1).compute()
    else:
        subset_groups = counts.groupby(table.subset, observed=True)["n"].sum()
    splits, fits = size_plan(splits, fits, subset_groups, sizes, ratio, size_seeds)
    extra = {"train_size": size_labels(sizes, ratio), "sample": list(range(1, size_seeds + 1))}
    return splits, fits, extra


def _resume(
    checkpoint: str | os.PathLike,
    settings: dict[str, Any],
    data_id: dict[str, Any],
    counts: pd.DataFrame,
    fold: str,
    fits: pd.DataFrame,
) -> tuple[dict[tuple[int, str], list[dict[str, Any]]], Callable[..., None]]:
    """The fits a checkpoint holds in full (refusing one of other settings or data), and the
    function saving a finished fit's records into it: ``save(fit_id, learner, records)``."""
    strata = [c for c in counts.columns if c not in (fold, "n")]
    rows = counts.groupby(strata, observed=True)["n"].sum()
    run = {**settings, "data": {**data_id, "rows": {str(k): int(n) for k, n in rows.items()}}}
    done = open_checkpoint(checkpoint, run)
    save = partial(save_task, checkpoint, key=run_key(run))
    # A fit's test blocks may be scored by separate tasks: done only when all of them are.
    full = {k: v for k, v in done.items() if len(v) == len(fits.loc[k[0], "test_subsets"])}
    return full, save


def _collect(
    tasks: list,
    client: Any,
    progress: bool,
    names: dict[Any, str],
    save: Callable[..., None] | None,
    blocks: Mapping[tuple[int, str], int],
) -> list[dict[str, Any]]:
    """Run ``tasks``; their records (test subsets named), each fit saved as it arrives (by
    ``save``, if given).

    ``blocks`` gives the test blocks of each (fit, learner) to run. The progress bar counts
    these pairs, as ``n_fits`` does, each once all its blocks are scored: one task may score
    several fits (one-pass learners are scored block by block), and one fit several blocks.
    """
    records = []
    left = dict(blocks)
    with progress_bar(len(left), "fits", enabled=progress, client=client) as bar:

        def count(batch: list[dict[str, Any]]) -> None:
            for key, rows in _by_fit(batch).items():
                left[key] -= len(rows)
                if not left[key]:
                    bar.update(1)

        # closing(): however the loop ends, the run stops at once (no fits left running).
        with closing(_run(tasks, client, count)) as batches:
            for batch in batches:
                batch = [{**r, "test_subset": names[r["test_subset"]]} for r in batch]
                if save is not None:
                    for (fit_id, learner), rows in _by_fit(batch).items():
                        save(fit_id, learner, rows)
                records.extend(batch)
    return records


def _current_client() -> Any:
    try:
        from distributed import default_client

        return default_client()
    except (ImportError, ValueError):
        return None


def _fit_rows(
    data: dd.DataFrame,
    table: Table,
    fit: pd.Series,
    *,
    train: bool = True,
    test: bool = True,
    rates: tuple[float, ...] | None = None,
    classes: tuple | None = None,
    seed: int = 1,
) -> dd.DataFrame:
    """The lazy rows one fit needs: its train blocks and/or the test blocks it predicts.

    Filtering happens next to the data; only these rows reach the worker that fits. With
    ``rates`` (one per class of ``classes``, or one for regression) each train row is kept
    with its class's rate, decided by a seeded hash of its (partition, position), so the sample
    is the same on any worker and never materialised whole first.
    """
    return data.map_partitions(
        select_rows,
        table.subset,
        table.fold,
        int(fit.fold),
        tuple(fit.train_subsets) if train else (),
        tuple(fit.test_subsets) if test else (),
        rates,
        seed,
        table.label,
        classes,
        meta=data._meta,
    )


def select_rows(
    part: pd.DataFrame,
    subset: str,
    fold_column: str,
    fold: int,
    train_subsets: tuple,
    test_subsets: tuple,
    rates: tuple[float, ...] | None,
    seed: int,
    label: str,
    classes: tuple | None,
    partition_info: dict | None = None,
) -> pd.DataFrame:
    """Rows of one partition in the given train and test blocks (train rows sampled)."""
    in_fold = (part[fold_column] == fold).to_numpy()
    sub = part[subset]
    train = ~in_fold & sub.isin(list(train_subsets)).to_numpy()
    if rates is not None:
        number = partition_info["number"] if partition_info else 0
        h = seeded_hash(seed, np.uint64(number), np.arange(len(part), dtype=np.uint64))
        rate = np.asarray(rates)
        rate = rate[category_codes(part[label], pd.Index(classes))] if classes else rate[0]
        below = (np.where(rate < 1.0, rate, 0.0) * 2.0**64).astype(np.uint64)
        train &= (rate >= 1.0) | (h < below)
    return part.loc[train | (in_fold & sub.isin(list(test_subsets)).to_numpy())]


def _fit_task(
    data: dd.DataFrame,
    table: Table,
    fit_row: pd.Series,
    fit: FitSpec,
    estimator: BaseEstimator,
    run: RunSpec,
    *,
    incremental: bool,
    epochs: int,
    rates: tuple[float, ...] | None,
) -> Any:
    """The delayed result of one (fit, learner): one task, or a chain for ``partial_fit``."""
    # Named for the task stream and dashboard; the token keeps runs on one client apart.
    token = dask.base.tokenize(data, fit_row, fit, estimator, run, incremental, epochs, rates)
    key = f"soak-fit-{fit.fit_id}-{fit.learner}-{token}"
    if not incremental:
        rows = _fit_rows(data, table, fit_row, rates=rates, classes=run.classes, seed=run.seed)
        return dask.delayed(fit_and_score, pure=True)(rows, estimator, fit, run, dask_key_name=key)
    # One task per block of train rows: a worker holds one block and the model at a time.
    parts = _fit_rows(
        data, table, fit_row, test=False, rates=rates, classes=run.classes, seed=run.seed
    ).to_delayed()
    state = estimator
    for epoch in range(epochs):
        order = np.argsort(seeded_hash(run.seed, np.uint64(epoch), np.arange(len(parts))))
        for i in order:
            state = dask.delayed(partial_fit_step, pure=True)(state, parts[i], run, epoch == 0)
    test = _fit_rows(data, table, fit_row, train=False)
    return dask.delayed(score_fitted, pure=True)(state, test, fit, run, dask_key_name=key)


def _score_from_stats(
    data: dd.DataFrame,
    fits: pd.DataFrame,
    from_stats: Mapping[tuple[int, str], FitState],
    run: RunSpec,
    split_every: int = 8,
) -> list[Any]:
    """Scoring tasks of the learners fitted from statistics: partition by partition.

    Their fits are made already (small models), so each partition is read once and predicted by
    every fit whose test blocks it holds; a tree of merges (fan-in ``split_every``) adds up the
    partitions' partial scores, and one task per (fold, subset) test block finishes them. No
    task holds more than one partition of rows, so the pass runs in bounded memory on tables
    larger than the cluster's (AUC excepted: it needs every test row's scores).
    """
    if not from_stats:
        return []
    fitted = {key: (state, _fit_spec(fits, *key)) for key, state in from_stats.items()}
    by_block: dict[tuple, list[tuple[int, str]]] = {}
    for key, (_, spec) in fitted.items():
        for sub in spec.test_subsets:
            by_block.setdefault((spec.fold, sub), []).append(key)
    blocks = [(fold, sub, keys) for (fold, sub), keys in sorted(by_block.items())]
    token = dask.base.tokenize(data, fitted, blocks, run)
    shared = dask.delayed(fitted, name=f"soak-fitted-{token}", pure=True)
    columns = [*run.features, run.label, run.subset, run.fold_column]
    level = [
        dask.delayed(score_partition, nout=len(blocks), pure=True)(
            part, shared, blocks, run, dask_key_name=f"soak-predict-{i}-{token}"
        )
        for i, part in enumerate(data[columns].to_delayed())
    ]
    # A tree of merges keeps few pieces alive (tasks and keys hold memory on a worker too).
    level = tree_reduce(level, merge_pieces, split_every, keep=split_every, nout=len(blocks))
    return [
        dask.delayed(score_block, pure=True)(
            [node[i] for node in level],
            shared,
            sub,
            keys,
            run,
            dask_key_name=f"soak-score-{i}-{token}",
        )
        for i, (_, sub, keys) in enumerate(blocks)
    ]


def _by_fit(records: list[dict[str, Any]]) -> dict[tuple[int, str], list[dict[str, Any]]]:
    out: dict[tuple[int, str], list[dict[str, Any]]] = {}
    for r in records:
        out.setdefault((r["fit_id"], r["learner"]), []).append(r)
    return out


def _fit_spec(
    fits: pd.DataFrame,
    fit_id: int,
    learner: str,
    max_rows: int | None = None,
    class_rows: pd.DataFrame | None = None,
) -> FitSpec:
    fit = fits.loc[fit_id]
    n_groups = int(fit["n_groups"])
    # A capped full-size train set keeps its class shares; a down-sampled one, those it has
    # (and regression, with one column of rows, has no classes to share).
    shares = class_rows is not None and not n_groups and len(class_rows.columns) > 1
    return FitSpec(
        learner=learner,
        fit_id=int(fit_id),
        fold=int(fit["fold"]),
        test_subsets=tuple(fit["test_subsets"]),
        n_groups=n_groups,
        sample=int(fit["sample"]),
        max_rows=max_rows or 0,
        class_rows=tuple(int(n) for n in class_rows.loc[fit_id]) if shares else (),
    )


def _keep_rates(
    class_rows: pd.DataFrame | None, fits: pd.DataFrame, fit_id: int, max_rows: int, exact: bool
) -> tuple[float, ...] | None:
    """Per class, the chance that a partition passes on a train row of this fit (None: all)."""
    if class_rows is None or fits.loc[fit_id, "n_groups"]:
        return None  # no cap, or a cap after down-sampling (which needs the train set whole)
    return keep_rates(class_rows.loc[fit_id].to_numpy(), max_rows, margin=exact)


def _fits_from_stats(
    table: Table | None,
    todo: list[tuple[int, str]],
    fits: pd.DataFrame,
    estimators: Mapping[str, BaseEstimator],
    subsets: list,
    n_folds: int,
    classes: list | None,
    client: Any,
    run: RunSpec,
    *,
    skip: bool,
) -> dict[tuple[int, str], FitState]:
    """Fitted states of the additive learners' fits, from one pass of block statistics.

    Empty when one-pass is off, no learner is additive, or the statistics cannot be made (e.g.
    non-finite values): those fits then run on their rows and report their own failures.
    """
    todo = [(f, n) for f, n in todo if is_additive(estimators[n]) is not None]
    if table is None or skip or not todo:
        return {}
    lazy = block_stats(table, subsets, n_folds, classes)
    try:
        stats = client.compute(lazy).result() if client is not None else lazy.compute()
    except ValueError as err:
        warnings.warn(f"one-pass statistics unavailable ({err}); fitting on rows", stacklevel=3)
        return {}
    out = {}
    for fit_id, name in todo:
        pooled = train_stats(stats, fits.loc[fit_id, "train_subsets"], fits.loc[fit_id, "fold"])
        if pooled.classes is not None:
            # Fitted on class codes, the models predict codes: scoring never handles labels.
            pooled = dataclasses.replace(pooled, classes=np.arange(len(pooled.classes)))
        start = time.perf_counter()
        fitted, message = guard(run, partial(fit_from_stats, estimators[name], pooled))
        state = FitState(
            estimators[name] if fitted is None else fitted,
            n_train=int(pooled.n_rows),
            seconds=time.perf_counter() - start,
            message=message,
            started=True,
        )
        out[fit_id, name] = state
    return out


def _run(tasks: list, client: Any, arrived: Callable[[Any], None]) -> Iterator[Any]:
    """Yield task results as they finish, releasing each future once its result is here.

    ``arrived(result)`` is called with each result as it arrives, before it is yielded.
    """
    if client is None:
        yield from _run_local(tasks, arrived)
        return
    from distributed import as_completed

    futures = client.compute(tasks)
    for future in as_completed(futures):
        result = future.result()
        future.release()
        arrived(result)
        yield result


def _run_local(tasks: list, arrived: Callable[[Any], None]) -> Iterator[Any]:
    """Compute ``tasks`` as one graph on Dask's local scheduler, yielding results as they finish.

    One graph, so tasks share what they read; a scheduler callback streams each task's result
    (and so its checkpoint) as soon as it is computed, rather than when all are done.
    """
    from dask.callbacks import Callback

    wanted = {task.key for task in tasks}
    finished: queue.Queue = queue.Queue()
    stop = threading.Event()
    end = object()

    class Stream(Callback):
        def _pretask(self, key, dsk, state):
            if stop.is_set():  # the caller went away: start nothing more
                raise _Stopped

        def _posttask(self, key, result, dsk, state, worker_id):
            if key in wanted:
                finished.put(result)

    def compute() -> None:
        # The threaded scheduler (the default) gets a pool of our own, unless the user set one,
        # so that stopping can wait for the tasks still running: Dask's scheduler returns on
        # the first error while its pool goes on. Other schedulers are used as configured.
        threaded = get_scheduler(collections=tasks) is dask.threaded.get
        own = threaded and dask.config.get("pool", None) is None
        workers = dask.config.get("num_workers", None) or CPU_COUNT
        pool = ThreadPoolExecutor(workers) if own else None
        try:
            with Stream():
                dask.compute(*tasks, **({"pool": pool} if own else {}))
        except _Stopped:
            pass
        except BaseException as err:  # noqa: BLE001 -- re-raised in the caller's thread
            finished.put(err)
        finally:
            if own:
                pool.shutdown(wait=True)
        finished.put(end)

    worker = threading.Thread(target=compute, daemon=True)
    worker.start()
    try:
        for item in iter(finished.get, end):
            if isinstance(item, BaseException):
                raise item
            arrived(item)
            yield item
    finally:
        stop.set()
        worker.join()  # tasks already running finish; none start after the caller stops


class _Stopped(Exception):
    """Ends a local computation whose results are no longer wanted."""


def _warn_failures(records: list[dict[str, Any]]) -> None:
    failed = {(r["learner"], r["fit_id"]): r["message"] for r in records if r["message"]}
    if failed:
        listed = "; ".join(
            f"{lrn} fit {fid}: {msg}" for (lrn, fid), msg in list(failed.items())[:10]
        )
        warnings.warn(
            f"{len(failed)} fits failed and score NaN (error_score): {listed}",
            UserWarning,
            stacklevel=3,
        )
