"""``split_sensitivity``: does a K-fold CV estimate on the train part agree with the test part,
and at which train/test ratio?

Each trial is a seeded random train/test split at ratio r (whole groups per side with a group
column, class-stratified otherwise) with K folds inside its train part. Per (ratio, trial) the
plan has K CV fits (train part minus fold k, scored on fold k) and one fit on the whole train
part, scored on the test part; all run as one ``Plan`` on the engine.

Comparing the K fold scores of one trial with its one test score by a variance test (the
seed's sketch) says nothing: one value has no spread. Instead, per ratio, the ``trials`` CV
estimates (each the mean of K folds) and the ``trials`` test scores are two samples of one
size whose variances Levene's and the F test compare; per trial, the test score is checked
against the CV folds' prediction interval for a new score.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import replace
from numbers import Real
from typing import Any

import dask
import numpy as np
import pandas as pd
import xarray as xr
from scipy import stats as sps
from sklearn.base import BaseEstimator

from ..hashing import salt, seeded_hash
from ..learn.builtin import resolve_learners
from ..results.store import build_dataset
from ..run.session import persisted, result_attrs, start
from ..run.strategies import WholeTrainSet
from ..schema import LOWER_IS_BETTER, MEASURE_NAMES, MEASURES
from ..split.folds import check_n_folds, check_seed, group_folds, permuted_block_folds
from ..split.outer import share_folds
from ..split.plan import Fit, Plan, Selection, Term, build_plan
from ..tables.table import Table, category_codes, check_table

#: Title of split_sensitivity's results.
TITLE = "soak_dask split-ratio sensitivity: CV on the train part against the test part"
#: Fewest trials: the variance tests and the correlation compare ``trials`` values per ratio.
MIN_TRIALS = 3
#: How the recommended ratios are chosen, recorded in the results.
RULE = (
    "ratios where neither Levene's test nor the F test rejects equal variances of the CV "
    "estimates and the test scores at alpha, and, among those, the highest share of trials "
    "whose test score lies in the CV prediction interval (ties: all of them)"
)
# A trial's keys: its column, the test share k of n parts, and the seeds of its two draws.
Design = tuple[str, int, int, int, int]


def split_sensitivity(
    table: Table,
    learner: Mapping[str, Any] | BaseEstimator | str,
    *,
    ratios: Sequence[float] = (0.5, 0.7, 0.8, 0.9),
    trials: int = 20,
    n_folds: int = 5,
    measure: str = "accuracy",
    alpha: float = 0.05,
    seed: int = 1,
    client: Any = None,
    progress: bool = True,
    persist: bool = True,
    checkpoint: str | os.PathLike | None = None,
    error_score: float | str = np.nan,
) -> xr.Dataset:
    """Compare K-fold CV on the train part with the test score, over random splits per ratio.

    For each train ratio r and trial t, a seeded random split puts r of the rows in the train
    part (whole groups per side with a group column; class-stratified otherwise) and K folds
    inside it (grouped, stratified, as ``evaluate``'s). The learner is fitted K times (train
    part minus fold k, scored on fold k) and once on the whole train part, scored on the test
    part. The subset and fold columns of the table play no part.

    Parameters
    ----------
    table : Table
        From ``soak_dask.load_table``.
    learner : str, estimator or dict
        One learner: a built-in name, a scikit-learn estimator, or a one-entry dict
        ``{name: estimator or built-in name}``.
    ratios : sequence of float
        Shares of the rows that train, each in (0, 1). Each is drawn as the test share k of n
        equal parts, n ≤ 20 (0.7: 3 of 10 parts test); the share used is ``ratio_used``.
    trials : int
        Random splits per ratio, at least 3.
    n_folds : int
        K of the CV inside each train part.
    measure : str
        One measure of the task (``soak_dask.schema.MEASURES``).
    alpha : float
        Level of the prediction intervals and of the variance tests, in (0, 0.5].
    seed : int
        Seed of every split and of built-in learners: same seed, same results, whatever the
        partitioning or the number of workers.
    client, progress, persist
        As for ``soak_dask.evaluate``. ``persist`` keeps the table and its ``len(ratios) ×
        trials`` one-byte key columns in cluster memory; pass False for a table near the
        cluster's memory.
    checkpoint, error_score
        As for ``soak_dask.soak``: finished fits saved as they arrive, so a run given the same
        checkpoint and settings computes only the missing ones; a fit that raises scores NaN
        with a warning (or stops the run with ``"raise"``).

    Returns
    -------
    xarray.Dataset
        Dims (ratio, trial, fold). ``cv_score`` (ratio, trial, fold) with ``cv_n_train`` and
        ``cv_n_test``; ``test_score``, ``n_train``, ``n_test`` (ratio, trial) of the fit on
        the whole train part; per trial the CV estimate (``cv_estimate``, the mean of the K
        folds), ``cv_sd``, the prediction interval ``pi_low``/``pi_high`` and ``consistent``;
        per ratio the statistics of ``sensitivity_statistics`` and ``recommended``. Settings
        are in ``attrs``.

    Examples
    --------
    >>> table = sd.load_table("aztrees.parquet", label="y", group="polygon")  # doctest: +SKIP
    >>> ds = sd.split_sensitivity(table, "logistic", trials=10)  # doctest: +SKIP
    >>> split_sensitivity_summary(ds)  # doctest: +SKIP
    """
    check_table(table, "split_sensitivity")
    design = SplitTrials(ratios, trials, n_folds, seed)
    alpha = check_alpha(alpha)
    measure = check_measure(measure, table.task)
    session = start(
        table,
        "split_sensitivity",
        one_learner(learner, table.task, design.seed),
        measures=[measure],
        seed=design.seed,
        error_score=error_score,
        client=client,
        progress=progress,
        checkpoint=checkpoint,
    )
    keyed, used = design.add_keys(table, session.client)
    data = persisted(keyed.data, persist, session.client)
    plan = design.plan(keyed, used)
    # No (subset, fold) cells: every fit gathers its rows.
    ctx = session.context(keyed, data, plan, used["classes"], fold_column="")
    estimators = session.estimators
    settings = _settings(table, estimators, measure, design, alpha, used["classes"])
    records = session.run(ctx, [WholeTrainSet()], settings)
    ds = _scores(build_dataset(records, plan.splits, plan.coords, list(estimators), [measure], {}))
    ds = ds.assign_coords(ratio=np.array(design.ratios, dtype=np.float64))
    ds["ratio_used"] = ("ratio", np.array([1 - k / n for k, n in design.shares]))
    ds["ratio_used"].attrs["long_name"] = "share of the rows that train, as drawn (1 − k/n)"
    ds = ds.assign(sensitivity_statistics(ds["cv_score"], ds["test_score"], alpha))
    chosen = [f"{r:g}" for r in ds["ratio"].values[ds["recommended"].values]]
    return ds.assign_attrs(result_attrs({**settings, "recommended": chosen, "rule": RULE}))


def _settings(
    table: Table,
    estimators: dict[str, BaseEstimator],
    measure: str,
    design: SplitTrials,
    alpha: float,
    classes: tuple | None,
) -> dict[str, Any]:
    """What the result records of the run (and its checkpoint is identified by), as
    ``evaluate``'s attrs do."""
    name, estimator = next(iter(estimators.items()))
    return {
        "title": TITLE,
        "design": "split_sensitivity",
        "task": table.task,
        "source": table.source,
        **table.roles,
        "learner": name,
        "learner_repr": repr(estimator),
        "measure": measure,
        "measure_name": MEASURE_NAMES[measure],
        "ratios": [f"{r:g}" for r in design.ratios],
        "trials": design.trials,
        "n_folds": design.n_folds,
        "alpha": alpha,
        "seed": design.seed,
        "classes": [str(c) for c in classes] if classes else None,
        "n_fits": len(design.ratios) * design.trials * (design.n_folds + 1),
    }


def check_ratios(ratios: Any, name: str = "ratios") -> tuple[float, ...]:
    """``ratios`` as sorted floats in (0, 1), refusing duplicates (also after rounding to k/n);
    messages call the option ``name``.

    Examples
    --------
    >>> check_ratios([0.8, 0.5])
    (0.5, 0.8)
    >>> check_ratios([0.5, 1.0])
    Traceback (most recent call last):
    ...
    ValueError: ratios=[0.5, 1.0]: need shares of rows to train, each strictly between 0 and 1
    """
    if isinstance(ratios, Real):
        ratios = [ratios]
    good = isinstance(ratios, Sequence) and not isinstance(ratios, str) and len(ratios) > 0
    if not good or not all(
        isinstance(r, Real) and not isinstance(r, bool) and 0 < r < 1 for r in ratios
    ):
        raise ValueError(
            f"{name}={ratios!r}: need shares of rows to train, each strictly between 0 and 1"
        )
    out = tuple(sorted(float(r) for r in ratios))
    drawn = [share_folds(1 - r) for r in out]
    for i in range(1, len(out)):
        if drawn[i] == drawn[i - 1]:
            k, n = drawn[i]
            raise ValueError(
                f"{name}={list(ratios)!r}: {out[i - 1]:g} and {out[i]:g} are both drawn as the "
                f"test share {k}/{n} (train ratio {1 - k / n:g}); give distinct ratios"
            )
    return out


def check_trials(trials: Any, name: str = "trials") -> int:
    if isinstance(trials, bool) or not isinstance(trials, int | np.integer) or trials < MIN_TRIALS:
        raise ValueError(
            f"{name}={trials!r}: need an integer of at least {MIN_TRIALS}; per ratio the "
            "variance tests and the correlation compare `trials` CV estimates with `trials` "
            "test scores (20 is a good start)"
        )
    return int(trials)


def check_alpha(alpha: Any, name: str = "alpha") -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, Real) or not 0 < alpha <= 0.5:
        raise ValueError(f"{name}={alpha!r}: need a level in (0, 0.5], e.g. 0.05")
    return float(alpha)


def check_measure(measure: Any, task: str, name: str = "measure") -> str:
    if not isinstance(measure, str):
        raise ValueError(f"{name}={measure!r}: need one measure name, e.g. 'accuracy'")
    known = MEASURES[task]
    if measure not in known:
        raise ValueError(f"{name}={measure!r} is not a {task} measure; choose from {list(known)}")
    return measure


def one_learner(learner: Any, task: str, seed: int) -> dict[str, BaseEstimator]:
    """``{name: estimator}`` of exactly one learner (see ``resolve_learners``)."""
    if learner is None:
        raise ValueError("learner=None: give one learner, e.g. 'logistic'")
    estimators = resolve_learners(learner, task, seed)
    if len(estimators) != 1:
        raise ValueError(
            f"learner: got {len(estimators)} learners ({', '.join(estimators)}); the diagnostic "
            "studies one learner at a time: give a name, an estimator or a one-entry dict"
        )
    return estimators


class SplitTrials:
    """``trials`` random train/test splits per train ratio, with K folds in each train part.

    Each (ratio, trial) gets one int8 key column: 0 for the test part, 1..K for the fold of a
    train row. Computed on the cluster from seeded hashes, after one pass counting rows per
    partition and class (or rows per group): the same seed gives the same keys whatever the
    partitioning or the number of workers.

    Examples
    --------
    >>> SplitTrials([0.7, 0.9], trials=10)
    SplitTrials(ratios=(0.7, 0.9), trials=10, n_folds=5, seed=1)
    >>> SplitTrials([0.7, 0.9], trials=10).shares
    [(3, 10), (1, 10)]
    """

    def __init__(
        self,
        ratios: Sequence[float],
        trials: int = 20,
        n_folds: int = 5,
        seed: int = 1,
        *,
        names: Mapping[str, str] | None = None,
    ) -> None:
        # ``names``: how messages spell the options (the command's flags), if not as here.
        spell = {"ratios": "ratios", "trials": "trials", "n_folds": "n_folds", "seed": "seed"}
        spell.update(names or {})
        self.ratios = check_ratios(ratios, spell["ratios"])
        self.trials = check_trials(trials, spell["trials"])
        self.n_folds = check_n_folds(n_folds, spell["n_folds"])
        self.seed = check_seed(seed, spell["seed"])
        #: Each ratio's test share as k of n equal parts.
        self.shares = [share_folds(1 - r) for r in self.ratios]
        _warn_rounded(self.ratios, self.shares)

    def __repr__(self) -> str:
        return (
            f"SplitTrials(ratios={self.ratios!r}, trials={self.trials}, "
            f"n_folds={self.n_folds}, seed={self.seed})"
        )

    def designs(self) -> dict[tuple[int, int], Design]:
        """(ratio index, trial) -> its key column, test share k of n and the seeds of its split
        and of its folds. Seeds depend on (k, n, trial), not on the other ratios asked for."""
        out = {}
        for i, (k, n) in enumerate(self.shares, start=1):
            for t in range(1, self.trials + 1):
                keys = (np.uint64(n), np.uint64(k), np.uint64(t))
                split = seeded_hash(self.seed, salt("sensitivity split"), *keys)[0]
                folds = seeded_hash(self.seed, salt("sensitivity folds"), *keys)[0]
                column = f"__soak_sensitivity_{i}_{t}__"
                out[i, t] = (column, k, n, int(split % 2**32), int(folds % 2**32))
        return out

    def add_keys(self, table: Table, client: Any = None) -> tuple[Table, dict[str, Any]]:
        """``table`` with a key column per (ratio, trial), and what was learned: the classes
        (None for regression) and the key columns by (ratio index, trial)."""
        designs = self.designs()
        if table.group is not None:
            data, classes = _group_keys(table, designs, self.n_folds, client)
        else:
            data, classes = _row_keys(table, designs, self.n_folds, self.ratios, client)
        used = {"classes": classes, "columns": {key: d[0] for key, d in designs.items()}}
        return replace(table, data=data, files=None), used

    def plan(self, table: Table, used: dict[str, Any]) -> Plan:
        """Per (ratio, trial): fold 0 is the fit on the whole train part scored on the test
        part; folds 1..K the CV fits (train part minus fold k, scored on fold k)."""
        rows, tests = [], {}
        for (i, t), column in used["columns"].items():
            for fold in range(self.n_folds + 1):
                tests[i, t, fold] = Selection((Term(column, (fold,)),))
                dropped = (0,) if fold == 0 else (0, fold)
                train = Fit(Selection((Term(column, dropped, exclude=True),)))
                rows.append(({"ratio": i, "trial": t, "fold": fold}, train, (i, t, fold)))
        coords = {
            "ratio": list(range(1, len(self.ratios) + 1)),
            "trial": list(range(1, self.trials + 1)),
            "fold": list(range(self.n_folds + 1)),
        }
        return build_plan(rows, tests, coords)


def _warn_rounded(ratios: tuple[float, ...], shares: list[tuple[int, int]]) -> None:
    drawn = {r: 1 - k / n for r, (k, n) in zip(ratios, shares, strict=True)}
    moved = {r: u for r, u in drawn.items() if abs(r - u) > 1e-9}
    if moved:
        listed = ", ".join(f"{r:g} as {u:.4g}" for r, u in moved.items())
        warnings.warn(
            f"ratios are drawn as a test share of k out of n ≤ 20 equal parts: {listed} "
            "(ratio_used in the results)",
            UserWarning,
            stacklevel=4,
        )


def _compute(client: Any, lazy: list) -> list:
    if client is not None:
        return list(client.compute(lazy, sync=True))
    return list(dask.compute(*lazy))


def _label_counts(column: pd.Series, classify: bool) -> tuple[pd.Series, int]:
    """Rows of one partition per class (classification) or in all (regression, key 0), and
    its missing labels."""
    missing = int(column.isna().sum())
    if not classify:
        return pd.Series([len(column) - missing], index=[0]), missing
    counts = column.value_counts(dropna=True)
    return counts[counts > 0], missing


def _row_keys(
    table: Table,
    designs: dict[tuple[int, int], Design],
    n_folds: int,
    ratios: tuple[float, ...],
    client: Any,
) -> tuple[Any, tuple | None]:
    """Key columns of rows without groups: one pass counts rows per (partition, class); then
    each partition draws its rows' keys from their positions within their class."""
    classify = table.task == "classification"
    parts = table.data[table.label].to_delayed()
    done = _compute(client, [dask.delayed(_label_counts)(p, classify) for p in parts])
    _refuse_missing(table.label, sum(m for _, m in done))
    values = sorted(set().union(*(c.index for c, _ in done)))
    counts = np.zeros((len(done), len(values)), dtype=np.int64)
    for p, (c, _) in enumerate(done):
        counts[p, pd.Index(values).get_indexer(c.index)] = c.to_numpy()
    largest = int(counts.sum(axis=0).max(initial=0))
    for ratio, (_, k, n, _, _) in zip(ratios, _first_trials(designs), strict=True):
        _check_rows(ratio, k, n, n_folds, largest, classify)
    offsets = np.cumsum(counts, axis=0) - counts  # rows of each class in earlier partitions
    classes = tuple(values) if classify else None
    names = [d[0] for d in designs.values()]
    meta = _with_keys(table.data._meta, np.zeros((0, len(names)), dtype=np.int8), names)
    data = table.data.map_partitions(
        _row_partition_keys,
        table.label,
        classes,
        offsets,
        counts,
        list(designs.values()),
        n_folds,
        meta=meta,
    )
    return data, classes


def _first_trials(designs: dict[tuple[int, int], Design]) -> list[Design]:
    """The design of trial 1 of each ratio, in ratio order."""
    return [d for (_, t), d in designs.items() if t == 1]


def _refuse_missing(label: str, missing: int) -> None:
    if missing:
        raise ValueError(
            f"label column {label!r} has {missing} missing values; drop those rows first"
        )


def _check_rows(ratio: float, k: int, n: int, n_folds: int, largest: int, classify: bool) -> None:
    """Refuse a ratio whose test part or train folds could be empty: a stratum's whole blocks
    of n rows give k test rows and n − k train rows each."""
    need = n * -(-n_folds // (n - k))
    if largest < need:
        where = "of one class" if classify else "in all"
        raise ValueError(
            f"ratio={ratio:g} (test {k} of {n} parts) with n_folds={n_folds} needs at least "
            f"{need} rows {where}; the table has {largest}. Use a smaller n_folds or a ratio "
            "nearer 0.5, or more data"
        )


def _row_partition_keys(
    part: pd.DataFrame,
    label: str,
    classes: tuple | None,
    offsets: np.ndarray,
    expected: np.ndarray,
    designs: list[Design],
    n_folds: int,
    partition_info: dict | None = None,
) -> pd.DataFrame:
    """One partition with its key columns: a row's part (permuted blocks of n over its
    position in its class) and, for a train row, its fold (permuted blocks of K over its
    position among its class's train rows), as ``assign_folds`` draws folds."""
    number = partition_info["number"] if partition_info else 0
    if classes is None:
        strata = np.zeros(len(part), dtype=np.int64)
    else:
        strata = category_codes(part[label], pd.Index(classes)).astype(np.int64)
    counts = np.bincount(strata, minlength=expected.shape[1])
    if (strata < 0).any() or not np.array_equal(counts, expected[number]):
        raise RuntimeError(
            "the table's partitions changed between counting and assigning the split keys; "
            "persist the table (table.data.persist()) first"
        )
    order = np.argsort(strata, kind="stable")
    starts = np.cumsum(counts) - counts
    local = np.empty(len(part), dtype=np.int64)
    local[order] = np.arange(len(part)) - starts[strata[order]]
    position = offsets[number, strata] + local
    keys = np.empty((len(part), len(designs)), dtype=np.int8)
    for j, (_, k, n, split_seed, fold_seed) in enumerate(designs):
        test = permuted_block_folds(strata, position, n, split_seed) <= k
        before = _train_before(offsets[number], k, n, split_seed)
        rank = _train_rank(strata, order, starts, counts, test, before)
        folds = permuted_block_folds(strata, rank, n_folds, fold_seed)
        keys[:, j] = np.where(test, 0, folds)
    return _with_keys(part, keys, [d[0] for d in designs])


def _train_before(first: np.ndarray, k: int, n: int, seed: int) -> np.ndarray:
    """Train rows of each class among its first ``first`` positions: n − k per whole block of
    n, and those of the partial block its permutation puts after the k test parts."""
    blocks, rest = np.divmod(first, n)
    before = blocks * (n - k)
    for s in np.flatnonzero(rest):
        head = blocks[s] * n + np.arange(rest[s])
        before[s] += int((permuted_block_folds(np.full(rest[s], s), head, n, seed) > k).sum())
    return before


def _train_rank(
    strata: np.ndarray,
    order: np.ndarray,
    starts: np.ndarray,
    counts: np.ndarray,
    test: np.ndarray,
    before: np.ndarray,
) -> np.ndarray:
    """Each row's position among the train rows of its class in the whole table (table order);
    meaningless for test rows."""
    train = (~test[order]).astype(np.int64)
    earlier = np.cumsum(train) - train  # train rows before, in class-sorted order
    at_start = np.zeros(len(counts), dtype=np.int64)
    present = counts > 0
    at_start[present] = earlier[starts[present]]
    sorted_strata = strata[order]
    rank = np.empty(len(strata), dtype=np.int64)
    rank[order] = before[sorted_strata] + earlier - at_start[sorted_strata]
    return rank


def _group_keys(
    table: Table, designs: dict[tuple[int, int], Design], n_folds: int, client: Any
) -> tuple[Any, tuple | None]:
    """Key columns of a grouped table: the (small) table of groups is split on the client --
    groups to parts balancing rows per class as ``assign_folds`` does, then the train part's
    groups to folds -- and the group -> key map is applied to the rows."""
    group, label = table.group, table.label
    classify = table.task == "classification"
    keys = [group, label] if classify else [group]
    sizes, missing = _compute(
        client,
        [
            table.data.groupby(keys, observed=True).size(split_out=1),
            table.data[[group, label]].isna().sum(),
        ],
    )
    sizes = sizes.rename("n").reset_index()
    if missing[group]:
        raise ValueError(f"group column {group!r} has {missing[group]} missing values")
    _refuse_missing(label, int(missing[label]))
    classes = tuple(sorted(sizes[label].unique())) if classify else None
    groups = _group_strata(sizes, group, label, classes)
    index, codes = _group_codes(groups, designs, n_folds, group)
    names = [d[0] for d in designs.values()]
    meta = _with_keys(table.data._meta, np.zeros((0, len(names)), dtype=np.int8), names)
    data = table.data.map_partitions(_group_partition_keys, group, index, codes, names, meta=meta)
    return data, classes


def _group_strata(
    sizes: pd.DataFrame, group: str, label: str, classes: tuple | None
) -> pd.DataFrame:
    """One row per group: ``group``, ``stratum`` (its class's code when every group holds one
    class, else 0) and ``n`` rows, as ``group_folds`` takes them."""
    rows = sizes.groupby(group, observed=True)["n"].sum()
    stratum = np.zeros(len(rows), dtype=np.int64)
    if classes is not None and not sizes[group].duplicated().any():
        by_group = sizes.set_index(group)[label].reindex(rows.index)
        stratum = pd.Index(classes).get_indexer(by_group.to_numpy())
    return pd.DataFrame({"group": rows.index.to_numpy(), "stratum": stratum, "n": rows.to_numpy()})


def _group_codes(
    groups: pd.DataFrame, designs: dict[tuple[int, int], Design], n_folds: int, column: str
) -> tuple[pd.Index, np.ndarray]:
    """The groups and their key (0 test, 1..K train fold) in each design's column."""
    index = pd.Index(sorted(groups["group"]))
    codes = np.zeros((len(index), len(designs)), dtype=np.int8)
    for j, (_, k, n, split_seed, fold_seed) in enumerate(designs.values()):
        parts = group_folds(groups, n, split_seed).reindex(groups["group"]).to_numpy()
        train = groups[parts > k]
        folds = group_folds(train, n_folds, fold_seed) if len(train) else pd.Series()
        used = np.bincount(folds.to_numpy(np.int64), minlength=n_folds + 1)[1:]
        if (parts <= k).sum() == 0 or (used == 0).any():
            ratio = 1 - k / n
            raise ValueError(
                f"ratio={ratio:g} (test {k} of {n} parts) with n_folds={n_folds}: the "
                f"{len(groups)} groups of {column!r} leave the test part or a train fold "
                "without groups; use a smaller n_folds, a ratio nearer 0.5, or smaller groups"
            )
        codes[index.get_indexer(folds.index), j] = folds.to_numpy()
    return index, codes


def _group_partition_keys(
    part: pd.DataFrame, group: str, index: pd.Index, codes: np.ndarray, names: list[str]
) -> pd.DataFrame:
    rows = category_codes(part[group], index)
    if (rows < 0).any():
        raise RuntimeError(f"rows of unknown groups of {group!r}: the table changed; reload it")
    return _with_keys(part, codes[rows], names)


def _with_keys(part: pd.DataFrame, keys: np.ndarray, names: list[str]) -> pd.DataFrame:
    """``part`` with the key columns ``names`` (``keys``' columns) added as one int8 block:
    a column added at a time would fragment the frame, and every later selection of rows
    from it (one per fit) would be slow."""
    block = pd.DataFrame(keys, index=part.index, columns=names)
    return pd.concat([part, block], axis=1)


def _scores(ds: xr.Dataset) -> xr.Dataset:
    """The engine's result (learner, ratio, trial, fold 0..K) as CV scores over folds 1..K
    and the test part's score (fold 0)."""
    ds = ds.isel(learner=0, drop=True).reset_coords("fit_id", drop=True)
    measure = ds.attrs["measures"][0]
    cv, test = ds.sel(fold=ds["fold"] > 0), ds.sel(fold=0, drop=True)
    out = xr.Dataset(
        {
            "cv_score": cv[measure],
            "cv_n_train": cv["n_train"],
            "cv_n_test": cv["n_test"],
            "test_score": test[measure],
            "n_train": test["n_train"],
            "n_test": test["n_test"],
        }
    )
    out["cv_score"].attrs["long_name"] = f"{MEASURE_NAMES[measure]} of CV fold k (train part)"
    out["test_score"].attrs["long_name"] = f"{MEASURE_NAMES[measure]} on the test part"
    out["cv_n_train"].attrs["long_name"] = "rows fitting the CV fold's model"
    out["cv_n_test"].attrs["long_name"] = "rows in the CV fold"
    out["n_train"].attrs["long_name"] = "rows in the train part"
    out["n_test"].attrs["long_name"] = "rows in the test part"
    return out


def prediction_interval(
    scores: np.ndarray, alpha: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Mean, SD (ddof 1) and the 1 − alpha prediction interval of one more score, from K
    scores on the last axis: mean ± t(K−1, 1−alpha/2) · sd · sqrt(1 + 1/K).

    Examples
    --------
    >>> mean, sd, low, high = prediction_interval(np.array([0.8, 0.9, 0.85]), 0.05)
    >>> round(float(mean), 3), round(float(low), 3), round(float(high), 3)
    (0.85, 0.602, 1.098)
    """
    k = scores.shape[-1]
    mean, sd = scores.mean(axis=-1), scores.std(axis=-1, ddof=1)
    half = sps.t.ppf(1 - alpha / 2, k - 1) * sd * np.sqrt(1 + 1 / k)
    return mean, sd, mean - half, mean + half


def f_test(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Two-sided F test of equal variances of two normal samples: var(a)/var(b) and its p.

    Examples
    --------
    >>> f, p = f_test(np.array([1.0, 2.0, 3.0, 4.0]), np.array([1.0, 3.0, 5.0, 7.0]))
    >>> round(f, 3), round(p, 3)
    (0.25, 0.285)
    """
    va, vb = np.var(a, ddof=1), np.var(b, ddof=1)
    if va == vb == 0:
        return np.nan, np.nan
    with np.errstate(divide="ignore"):
        f = va / vb
    dist = sps.f(len(a) - 1, len(b) - 1)
    return float(f), float(min(1.0, 2 * min(dist.cdf(f), dist.sf(f))))


def pitman_morgan(a: np.ndarray, b: np.ndarray) -> float:
    """p of the Pitman–Morgan test of equal variances of paired samples: the correlation of
    a + b with a − b is zero exactly when var(a) = var(b)."""
    return _pearson(a + b, a - b)[1]


def _pearson(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    if len(a) < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return np.nan, np.nan  # undefined: no spread to correlate
    res = sps.pearsonr(a, b)
    return float(res.statistic), float(res.pvalue)


def _levene(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    if np.ptp(a) == 0 and np.ptp(b) == 0:
        return np.nan, np.nan
    res = sps.levene(a, b)  # centred on the medians (Brown-Forsythe): robust to skew
    return float(res.statistic), float(res.pvalue)


#: Per-ratio statistics and their long names, in order.
RATIO_STATISTICS: dict[str, str] = {
    "n_trials_used": "trials with a CV estimate and a test score (no failed fit)",
    "cv_estimate_mean": "mean over trials of the CV estimate",
    "cv_estimate_sd": "SD over trials of the CV estimate",
    "test_score_mean": "mean over trials of the test score",
    "test_score_sd": "SD over trials of the test score",
    "levene_stat": "Levene's W (median-centred): CV estimates vs test scores",
    "levene_p": "p of Levene's test of equal variances",
    "f_stat": "F = var(CV estimates) / var(test scores)",
    "f_p": "p of the two-sided F test of equal variances",
    "pitman_morgan_p": "p of the Pitman–Morgan test of equal variances (paired by trial)",
    "correlation": "Pearson correlation of CV estimate and test score over trials",
    "correlation_p": "p of the correlation (zero correlation as null)",
    "consistent_share": "share of trials whose test score lies in the CV prediction interval",
}


def sensitivity_statistics(
    cv_score: xr.DataArray, test_score: xr.DataArray, alpha: float
) -> dict[str, xr.DataArray]:
    """Per trial the CV estimate, its prediction interval and whether the test score lies in
    it; per ratio the variance tests, the correlation, the share of consistent trials and the
    recommended ratios (``RULE``).

    Parameters
    ----------
    cv_score : DataArray
        Dims (ratio, trial, fold).
    test_score : DataArray
        Dims (ratio, trial).
    alpha : float
        Level of the intervals and tests.
    """
    cv = cv_score.transpose("ratio", "trial", "fold").values
    test = test_score.transpose("ratio", "trial").values
    mean, sd, low, high = prediction_interval(cv, alpha)
    out = {
        "cv_estimate": (mean, "CV estimate: mean of the K fold scores"),
        "cv_sd": (sd, "SD of the K fold scores"),
        "pi_low": (low, f"low end of the {1 - alpha:.0%} prediction interval for a new score"),
        "pi_high": (high, f"high end of the {1 - alpha:.0%} prediction interval"),
        "consistent": ((low <= test) & (test <= high), "test score in the prediction interval"),
    }
    per_trial = {
        name: xr.DataArray(v, dims=("ratio", "trial"), attrs={"long_name": text})
        for name, (v, text) in out.items()
    }
    rows = [_ratio_row(mean[i], test[i], per_trial["consistent"].values[i]) for i in range(len(cv))]
    per_ratio = {
        name: xr.DataArray([r[name] for r in rows], dims="ratio", attrs={"long_name": text})
        for name, text in RATIO_STATISTICS.items()
    }
    per_ratio["n_trials_used"] = per_ratio["n_trials_used"].astype(np.int64)
    per_ratio["recommended"] = xr.DataArray(
        recommend(per_ratio["levene_p"].values, per_ratio["f_p"].values,
                  per_ratio["consistent_share"].values, alpha),
        dims="ratio",
        attrs={"long_name": "recommended ratio", "rule": RULE},
    )  # fmt: skip
    return {**per_trial, **per_ratio}


def _ratio_row(cv: np.ndarray, test: np.ndarray, consistent: np.ndarray) -> dict[str, float]:
    """The per-ratio statistics from the trials' CV estimates and test scores (failed trials,
    NaN, left out)."""
    ok = np.isfinite(cv) & np.isfinite(test)
    a, b = cv[ok], test[ok]
    row = dict.fromkeys(RATIO_STATISTICS, np.nan)
    row["n_trials_used"] = int(ok.sum())
    if ok.sum() < 2:
        return row
    row.update(
        cv_estimate_mean=a.mean(),
        cv_estimate_sd=a.std(ddof=1),
        test_score_mean=b.mean(),
        test_score_sd=b.std(ddof=1),
        consistent_share=consistent[ok].mean(),
    )
    row["levene_stat"], row["levene_p"] = _levene(a, b)
    row["f_stat"], row["f_p"] = f_test(a, b)
    row["correlation"], row["correlation_p"] = _pearson(a, b)
    row["pitman_morgan_p"] = pitman_morgan(a, b)
    return row


def recommend(levene_p: np.ndarray, f_p: np.ndarray, share: np.ndarray, alpha: float) -> np.ndarray:
    """Which ratios ``RULE`` recommends. A test with an undefined p (both samples constant)
    does not reject. None when every ratio fails a variance test.

    Examples
    --------
    >>> recommend(np.array([0.3, 0.01, 0.5]), np.array([0.2, 0.4, 0.6]),
    ...           np.array([0.9, 1.0, 0.9]), 0.05).tolist()
    [True, False, True]
    """
    passes = ~(levene_p <= alpha) & ~(f_p <= alpha) & np.isfinite(share)
    if not passes.any():
        return np.zeros(len(share), dtype=bool)
    return passes & (share == share[passes].max())


def split_sensitivity_summary(ds: xr.Dataset) -> pd.DataFrame:
    """One row per ratio: the ratio used, the per-ratio statistics, the level of the test
    score against the best ratio's, and ``recommended``.

    ``RULE`` looks only at how well the CV estimate agrees with the test score, not at how
    good the model is, and it favours small ratios (a small train part fits worse models whose
    scores vary alike); so beside it, ``test_score_behind_best`` is how much worse the mean
    test score is than the best ratio's (in the measure's units, 0 for the best ratio, which
    ``best_test_score`` marks).
    """
    names = ["ratio_used", *RATIO_STATISTICS, "recommended"]
    table = ds[names].to_dataframe().reset_index()
    mean = table["test_score_mean"]
    lower = ds.attrs["measure"] in LOWER_IS_BETTER
    best = mean.min() if lower else mean.max()
    level = {
        "test_score_behind_best": (mean - best) if lower else (best - mean),
        "best_test_score": mean == best,
    }
    at = table.columns.get_loc("test_score_sd") + 1
    for offset, (name, values) in enumerate(level.items()):
        table.insert(at + offset, name, values)
    return table


def split_sensitivity_trials(ds: xr.Dataset) -> pd.DataFrame:
    """One row per (ratio, trial): the K fold scores (``fold_1``…), the CV estimate, SD and
    prediction interval, the test score, ``consistent`` and the train/test rows."""
    wide = ds["cv_score"].to_dataframe()["cv_score"].unstack("fold")
    wide.columns = [f"fold_{k}" for k in wide.columns]
    names = ["cv_estimate", "cv_sd", "pi_low", "pi_high", "test_score", "consistent"]
    trials = ds[[*names, "n_train", "n_test"]].to_dataframe()
    return wide.join(trials).reset_index()
