"""Split-ratio trials, the design of ``split_sensitivity``: ``n_repeats`` seeded random
train/test splits per train ratio, with K folds inside each train part.

Each trial is an exact-share draw of ``soak_dask.split.shares`` -- exactly round(r·N) rows to
train, class-stratified (whole groups per side with a group column, r of the rows to within a
group) -- dealt into K folds; per (ratio, trial) the plan has K CV fits (train part minus fold
k, scored on fold k) and one fit on the whole train part, scored on the test part.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from numbers import Real
from typing import Any

import numpy as np
import pandas as pd

from ..hashing import salt, seeded_hash
from ..tables.checks import check_classes
from ..tables.table import Table
from .design import Design
from .fold_options import check_n_folds
from .folds import group_folds
from .plan import Fit, Plan, Selection, Term, build_plan
from .shares import (
    Strata,
    check_sides,
    count_strata,
    draw_groups,
    group_sizes,
    group_strata,
    map_groups,
    ranks,
    share_sizes,
    with_columns,
)

#: Fewest trials: the variance tests and the correlation compare ``n_repeats`` values per ratio.
MIN_TRIALS = 3
#: The train ratios of ``SplitTrials()``.
DEFAULT_RATIOS = (0.5, 0.7, 0.8, 0.9)

# A trial's keys: its column, its ratio, its trial number and the seeds of its two draws.
Trial = tuple[str, float, int, int, int]


def check_ratios(ratios: Any, name: str = "ratios") -> tuple[float, ...]:
    """``ratios`` as sorted floats in (0, 1), refusing duplicates; messages call the option
    ``name``.

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
    twice = sorted({r for r in out if out.count(r) > 1})
    if twice:
        raise ValueError(
            f"{name}={list(ratios)!r}: {twice[0]:g} is given twice; give distinct ratios"
        )
    return out


def check_trials(trials: Any, name: str = "n_repeats") -> int:
    if isinstance(trials, bool) or not isinstance(trials, int | np.integer) or trials < MIN_TRIALS:
        raise ValueError(
            f"{name}={trials!r}: need an integer of at least {MIN_TRIALS}; per ratio the "
            "variance tests and the correlation compare `trials` CV estimates with `trials` "
            "test scores (20 is a good start)"
        )
    return int(trials)


class SplitTrials(Design):
    """``n_repeats`` random train/test splits per train ratio, with K folds in each train part.

    Each (ratio, trial) gets one int8 key column: 0 for the test part, 1..K for the fold of a
    train row. Computed on the cluster, every trial in one pass, after one pass counting rows
    per partition and class (or rows per group): exact-share draws of
    ``soak_dask.split.shares``, so the same seed gives the same keys whatever the partitioning
    or the number of workers.

    Parameters
    ----------
    ratios : sequence of float
        Shares of the rows that train, each in (0, 1): round(r·N) rows train (whole groups
        with a group column: r of the rows to within a group). A ratio that leaves no row on
        a side, or fewer train rows than ``n_folds``, is refused when the keys are drawn.
    n_repeats : int
        Random splits per ratio, at least 3 (``split_sensitivity``'s statistics compare them).
    n_folds : int
        K of the CV inside each train part.
    seed : int
        Seed of every split and fold (and, in ``split_sensitivity``, of the learner): the same
        seed draws the same keys whatever the partitioning or the number of workers.

    Examples
    --------
    >>> SplitTrials([0.7, 0.9], n_repeats=10)
    SplitTrials(ratios=(0.7, 0.9), n_repeats=10)
    """

    def __init__(
        self,
        ratios: Sequence[float] = DEFAULT_RATIOS,
        n_repeats: int = 20,
        n_folds: int = 5,
        seed: int = 1,
    ) -> None:
        self.ratios = check_ratios(ratios)
        self.n_repeats = check_trials(n_repeats)
        self.n_folds = check_n_folds(n_folds)
        self.seed = seed

    def draws(self) -> dict[tuple[int, int], Trial]:
        """(ratio index, trial) -> its key column, ratio, trial and the seeds of its split and
        of its folds. Seeds depend on (ratio, trial), not on the other ratios asked for."""
        out = {}
        for i, ratio in enumerate(self.ratios, start=1):
            bits = np.float64(ratio).view(np.uint64)
            for t in range(1, self.n_repeats + 1):
                split = seeded_hash(self.seed, salt("sensitivity split"), bits, np.uint64(t))[0]
                folds = seeded_hash(self.seed, salt("sensitivity folds"), bits, np.uint64(t))[0]
                column = f"__soak_sensitivity_{i}_{t}__"
                out[i, t] = (column, ratio, t, int(split % 2**32), int(folds % 2**32))
        return out

    def columns(self) -> dict[tuple[int, int], str]:
        """The key column of each (ratio index, trial)."""
        return {key: draw[0] for key, draw in self.draws().items()}

    def add_keys(self, table: Table) -> Table:
        """``table`` with a key column per (ratio, trial); ``learned_``: the classes (None for
        regression), the key columns by (ratio index, trial) and each ratio's share of the
        rows that train as drawn (``ratio_used``; the mean over trials with groups)."""
        draws = self.draws()
        keys = _group_keys if table.group is not None else _row_keys
        data, classes, ratio_used = keys(table, draws, self.n_folds)
        self.learned_ = {"classes": classes, "columns": self.columns(), "ratio_used": ratio_used}
        return replace(table, data=data, files=None)

    def plan(self, table: Table, counts: pd.DataFrame | None = None) -> Plan:
        """Per (ratio, trial): fold 0 is the fit on the whole train part scored on the test
        part; folds 1..K the CV fits (train part minus fold k, scored on fold k)."""
        rows, tests = [], {}
        for (i, t), column in self.columns().items():
            for fold in range(self.n_folds + 1):
                tests[i, t, fold] = Selection((Term(column, (fold,)),))
                dropped = (0,) if fold == 0 else (0, fold)
                train = Fit(Selection((Term(column, dropped, exclude=True),)))
                rows.append(({"ratio": i, "trial": t, "fold": fold}, train, (i, t, fold)))
        coords = {
            "ratio": list(range(1, len(self.ratios) + 1)),
            "trial": list(range(1, self.n_repeats + 1)),
            "fold": list(range(self.n_folds + 1)),
        }
        return build_plan(rows, tests, coords)


def _refuse_missing(table: Table) -> None:
    missing = int(table.data[table.label].isna().sum().compute())
    if missing:
        raise ValueError(
            f"label column {table.label!r} has {missing} missing values; drop those rows first"
        )


def _row_keys(
    table: Table, draws: dict[tuple[int, int], Trial], n_folds: int
) -> tuple[Any, tuple | None, np.ndarray]:
    """Key columns of rows without groups: one pass counts rows per (partition, class); then
    each partition draws its rows' keys from their positions within their class."""
    classify = table.task == "classification"
    if not classify:  # a class column's missing values are refused by its count
        _refuse_missing(table)
    strata = count_strata(table.data, [table.label] if classify else [], table.key_roles)
    sizes = {}
    for ratio in sorted({d[1] for d in draws.values()}):
        sizes[ratio] = share_sizes(strata.rows, ratio, 0)
        _check_rows(ratio, strata.rows, sizes[ratio], n_folds, classify)
    classes = tuple(strata.index) if classify else None
    check_classes(classes, table.label)
    names = [d[0] for d in draws.values()]
    meta = with_columns(table.data._meta, {n: np.zeros(0, np.int8) for n in names})
    data = table.data.map_partitions(
        _row_partition_keys, strata, sizes, list(draws.values()), n_folds, meta=meta
    )
    used = np.array([sizes[r].sum() / strata.rows.sum() for r in sorted(sizes)])
    return data, classes, used


def _check_rows(
    ratio: float, rows: np.ndarray, train: np.ndarray, n_folds: int, classify: bool
) -> None:
    """Refuse a ratio whose test part or train folds would be empty: a class's train rows
    are dealt to folds, so some class must train on at least ``n_folds`` rows."""
    check_sides(int(rows.sum()), int(train.sum()), ratio, "ratio")
    if train.max() < n_folds:
        most = f" (at most {int(train.max())} of one class)" if classify else ""
        raise ValueError(
            f"ratio={ratio:g} trains on {int(train.sum())} of the {int(rows.sum())} rows{most} "
            f"and n_folds={n_folds} needs at least {n_folds} train rows"
            f"{' of one class' if classify else ''}: use a smaller n_folds, a larger ratio, "
            "or more data"
        )


def _row_partition_keys(
    part: pd.DataFrame,
    strata: Strata,
    sizes: dict[float, np.ndarray],
    draws: list[Trial],
    n_folds: int,
    partition_info: dict | None = None,
) -> pd.DataFrame:
    """One partition with its key columns: a row trains when its rank in the trial's draw
    (``soak_dask.split.shares.ranks``) is below its class's train rows. The train ranks are
    a random order of the class's train rows, so rank mod K (shifted by a seeded offset per
    class, so the classes' extra rows fall in different folds) deals them into K folds whose
    sizes differ by at most one row per class."""
    number = partition_info["number"] if partition_info else 0
    codes, positions = strata.positions(part, number)
    strata_ids = np.arange(len(strata.rows), dtype=np.uint64)
    columns = {}
    for column, ratio, trial, draw_seed, fold_seed in draws:
        rank = ranks(codes, positions, strata.rows, draw_seed, trial, f"sensitivity:{ratio!r}")
        train = rank < sizes[ratio][codes]
        offset = (seeded_hash(fold_seed, strata_ids) % np.uint64(n_folds)).astype(np.int64)
        folds = (rank + offset[codes]) % n_folds + 1
        columns[column] = np.where(train, folds, 0).astype(np.int8)
    return with_columns(part, columns)


def _group_keys(
    table: Table, draws: dict[tuple[int, int], Trial], n_folds: int
) -> tuple[Any, tuple | None, np.ndarray]:
    """Key columns of a grouped table: the (small) table of groups is drawn on the client --
    groups to the train part (``draw_groups``), then the train part's groups to folds -- and
    the group -> key map is applied to the rows."""
    group, label = table.group, table.label
    classify = table.task == "classification"
    _refuse_missing(table)
    sizes = group_sizes(table.data, group, [label] if classify else [])
    classes = tuple(sorted(sizes[label].unique())) if classify else None
    check_classes(classes, label)
    groups = group_strata(sizes, group, [label] if classify else [])
    index, codes, shares = _group_codes(groups, draws, n_folds, group)
    names = [d[0] for d in draws.values()]
    by_ratio = pd.Series(shares, index=[d[1] for d in draws.values()])
    used = by_ratio.groupby(level=0).mean().sort_index().to_numpy()
    return map_groups(table.data, group, index, codes, names), classes, used


def _group_codes(
    groups: pd.DataFrame, draws: dict[tuple[int, int], Trial], n_folds: int, column: str
) -> tuple[pd.Index, np.ndarray, list[float]]:
    """The groups, their key (0 test, 1..K train fold) in each design's column, and each
    design's share of the rows that train."""
    index = pd.Index(sorted(groups["group"]))
    codes = np.zeros((len(index), len(draws)), dtype=np.int8)
    shares = []
    for j, (_, ratio, trial, draw_seed, fold_seed) in enumerate(draws.values()):
        drawn = draw_groups(groups, ratio, draw_seed, trial, f"sensitivity:{ratio!r}")
        drawn = drawn.reindex(groups["group"]).to_numpy()
        check_sides(len(groups), int(drawn.sum()), ratio, "ratio", f"groups of {column!r}")
        train = groups[drawn]
        folds = group_folds(train, n_folds, fold_seed)
        used = np.bincount(folds.to_numpy(np.int64), minlength=n_folds + 1)[1:]
        if (used == 0).any():
            raise ValueError(
                f"ratio={ratio:g} with n_folds={n_folds}: the {len(train)} train groups of "
                f"{len(groups)} groups of {column!r} leave a train fold without groups; use a "
                "smaller n_folds, a larger ratio, or smaller groups"
            )
        codes[index.get_indexer(folds.index), j] = folds.to_numpy()
        shares.append(train["n"].sum() / groups["n"].sum())
    return index, codes, shares
