"""The resampling designs of ``evaluate``: K-fold, repeated K-fold, subsampling, leave-one-out,
leave-one-group-out, the bootstrap and K-fold on kNNDM folds (``KNNDMFolds``, whose folds
``soak_dask.split.knndm`` chooses), and the reserved test split.

Each builder adds its key columns on the cluster -- fold columns from ``assign_folds`` (class-
stratified, whole groups kept together, exactly balanced), exact-share draws of
``soak_dask.split.shares`` (the test split and subsampling: every repeat in one pass), row
positions, group codes, or bootstrap counts from seeded hashes -- and returns a ``Plan`` over
them with dims (repeat, fold). Key columns are computed partition by partition from small
tables of counts (kNNDM's: from the training points' coordinates, which its search holds on
the client); nothing is repartitioned. The same seed gives the same splits whatever the
partitioning or number of workers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import dask.dataframe as dd
import numpy as np
import pandas as pd
from scipy import stats as sps

from ..hashing import salt, seeded_hash, uniform
from ..tables.arrays import category_codes
from ..tables.table import FOLD_COLUMN, Table
from ..user_warning import warn_user
from .balance import balanced_folds
from .design import Design
from .fold_options import (
    OUTER,
    check_clustering,
    check_group_assignment,
    check_n_folds,
)
from .folds import (
    check_balance,
    check_fold_values,
    counts_are_blocks,
    group_fold_columns,
    groups_hold_one_class,
    row_fold_columns,
    row_fold_counts,
    strata_keys,
    table_group_sizes,
    table_partition_rows,
    table_strata,
)
from .knndm_shares import DEFAULT_SAMPLE, check_knndm_options, check_prediction
from .overlap import degree_frame
from .plan import Fit, Plan, Selection, Term, build_plan
from .shares import add_draws, partition_starts, with_columns

if TYPE_CHECKING:  # numba and k-means: the module loads when folds are drawn
    from .knndm import KNNDMResult

#: Leave-one-out is for very small data: above this many rows it is refused.
LOO_MAX_ROWS = 2000
RESERVED = "__soak_reserved__"
_ASIDE = "__soak_fold_aside__"
#: P(N <= k) of N ~ Poisson(1), k = 0..29: a row's count is the number of these below a uniform.
_POISSON_CDF = sps.poisson.cdf(np.arange(30), 1.0)


def key_name(kind: str, repeat: int) -> str:
    """The column of repeat ``repeat``'s key of ``kind`` (fold, split, boot, ...)."""
    return f"__soak_{kind}_{repeat}__"


def repeat_seed(seed: int, repeat: int) -> int:
    """The seed of repeat ``repeat``: ``seed`` itself for the first (so repeated K-fold's first
    repeat is K-fold), a salted hash of it for the others."""
    if repeat == 1:
        return seed
    return int(seeded_hash(seed, salt("repeat"), np.uint64(repeat))[0] % np.uint64(2**32))


def _with_key(
    table: Table,
    name: str,
    n_folds: int,
    seed: int,
    balance: str = "class",
    group_assignment: str = "rows",
    degrees: dd.DataFrame | None = None,
) -> Table:
    """``table`` plus the key column ``name``: folds 1..K from ``assign_folds`` (stratified by
    class; with a group column, whole groups together, stratified when every group holds one
    class), or balanced by degree of overlap (``degrees``: the rows' ``degree_frame``, one
    search for every repeat), beside the columns it has (folds of an earlier
    ``assign_folds`` included)."""
    data = table.data
    aside = FOLD_COLUMN in data.columns  # the folds assign_folds makes use this name too
    if aside:
        data = data.rename(columns={FOLD_COLUMN: _ASIDE})
    base = replace(table, data=data, fold=None, fold_counts=None)
    stratify = _stratifiable(table)
    folded = balanced_folds(
        base,
        n_folds,
        seed,
        balance,
        stratify=stratify,
        group_assignment=group_assignment,
        degrees=degrees,
    )
    data = folded.data.rename(
        columns={FOLD_COLUMN: name, **({_ASIDE: FOLD_COLUMN} if aside else {})}
    )
    return replace(table, data=data, fold_counts=None, files=None)


def _stratifiable(table: Table) -> bool:
    """Whether folds can be stratified by class: always without groups; with groups, when
    every group holds a single class (else classes cannot be balanced group by group)."""
    return table.group is None or table.task != "classification" or groups_hold_one_class(table)


def reserve(table: Table, share: float, seed: int) -> tuple[Table, dd.DataFrame, float]:
    """Split off a test split of ``share`` of the rows before anything else sees the data.

    An exact-share draw (``soak_dask.split.shares``): round(share·N) rows, class-stratified
    within each subset; whole groups with a group column (the share of rows to within a
    group). Returns the table of the other rows, the reserved rows (lazy) and the share of
    the rows actually reserved. A share that leaves either side empty is refused.
    """
    keyed, used = add_draws(
        table.data,
        share,
        seed,
        names=[RESERVED],
        keys=_strata(table),
        group=table.group,
        roles=table.key_roles,
        purpose="test_split",
        option="test_split",
    )
    held = keyed[RESERVED] == 1
    rest = keyed[~held].drop(columns=RESERVED)
    return replace(table, data=rest, files=None), keyed[held].drop(columns=RESERVED), float(used[0])


def _strata(table: Table) -> list[str]:
    """The columns a draw of rows is stratified by: the subset, and the class."""
    return [table.subset, *([table.label] if table.task == "classification" else [])]


def capped_folds(table: Table, n_folds: int) -> int:
    """K capped as the guide says: never more folds than groups (grouped) or than the rarest
    class has rows (ungrouped classification), nor rows; never fewer than 2 (a warning names
    both numbers when K is lowered)."""
    if table.group is not None and _stratifiable(table) and table.task == "classification":
        # Folds are dealt class by class: a fold needs a group of the rarest class.
        sizes = table_group_sizes(table)
        per_class = sizes.groupby(table.label, observed=True)[table.group].nunique()
        limit = int(per_class.min())
        what = f"groups of the rarest class ({per_class.idxmin()!r})"
    elif table.group is not None:
        limit, what = int(table_group_sizes(table)[table.group].nunique()), "groups"
    else:  # the counts the folds are dealt by (one pass, shared within a run)
        strata = table_strata(table)
        if table.task == "classification":
            counts = strata.totals(table.label)
            limit, what = int(counts.min()), f"rows of the rarest class ({counts.idxmin()!r})"
        else:
            limit, what = int(strata.rows.sum()), "rows"
    if limit < 2:
        raise ValueError(f"the table has {limit} {what}: need at least 2 for any resampling")
    if n_folds > limit:
        warn_user(f"outer_folds={n_folds} is more than the {limit} {what}; using {limit} folds")
        return limit
    return n_folds


#: ``evaluate``'s ``outer`` names -> the design class that builds each from its options
#: (``OuterDesign.from_options``; ``outer_design``), filled as the classes are written: the
#: registry of the outer designs, no table kept by hand.
OUTER_DESIGNS: dict[str, type[OuterDesign]] = {}


class OuterDesign(Design):
    """A design of ``evaluate``'s outer resampling. Run by ``run_design`` as by ``evaluate``,
    its results are of evaluate's kind (``kind``) and record the strategy as evaluate records
    it (``recorded``), so ``ds.soak`` and ``soak report`` read them whichever ran them.

    Attributes
    ----------
    outer : str
        The strategy's name among ``evaluate``'s ``outer`` values.
    n_repeats : int
        Repeats (resamples, splits) of the design: 1 unless the design has more.

    A subclass is registered in ``OUTER_DESIGNS`` under its own ``outer``, or under the names
    of its class keyword ``names`` (``class KFoldDesign(OuterDesign, names=("cv",
    "repeated_cv"))``): a keyword, so a subclass of it does not inherit them.
    """

    kind = "evaluate"
    outer: str
    n_repeats: int = 1

    def __init_subclass__(cls, names: tuple[str, ...] | None = None, **kwargs: Any) -> None:
        # Refused where the class is written, not after its fits (``recorded`` reads it).
        super().__init_subclass__(**kwargs)
        if not hasattr(cls, "outer"):
            raise TypeError(
                f"{cls.__name__}: an OuterDesign names its strategy in a class attribute "
                "`outer` (one of evaluate's outer= values, or a name of your own)"
            )
        own = cls.__dict__.get("outer")
        for name in names or ((own,) if isinstance(own, str) else ()):
            OUTER_DESIGNS.setdefault(name, cls)  # the first class of a name keeps it

    @classmethod
    def from_options(cls, outer: str, seed: int, options: Mapping[str, Any]) -> OuterDesign:
        """The design of ``evaluate(outer=outer, seed=seed, ...)`` from the options it reads
        (``options``, as ``soak_dask.settings.check_design_options`` returns them); a design
        of no option by default."""
        return cls()

    def recorded(self) -> dict[str, Any]:
        """The strategy, K as drawn (1 for a design without folds), the repeats and the share
        of the rows drawn to train (``""`` for a design that draws none); nothing before
        ``add_keys`` drew them."""
        if "learned_" not in vars(self):
            return {}
        used = self.learned_
        return {
            "outer": self.outer,
            "outer_folds": used.get("outer_folds", 1),
            "outer_repeats": self.n_repeats,
            "train_ratio": used.get("train_ratio", ""),
        }


class KFoldDesign(OuterDesign, names=("cv", "repeated_cv")):
    """K-fold cross-validation, ``n_repeats`` times with fresh fold assignments (class-
    stratified; grouped K-fold with a group column). A user fold column is used as is.

    Examples
    --------
    >>> KFoldDesign(10, n_repeats=2)
    KFoldDesign(n_folds=10, n_repeats=2)
    """

    #: The user's fold column ``add_keys`` used as it is (None: folds drawn here).
    given_fold_: str | None = None

    def __init__(
        self,
        n_folds: int = 5,
        n_repeats: int = 1,
        seed: int = 1,
        balance: str = "class",
        group_assignment: str = "rows",
    ) -> None:
        self.n_folds = check_n_folds(n_folds, "outer_folds")
        self.n_repeats = _positive(n_repeats, "outer_repeats")
        self.seed = seed
        self.balance = check_balance(balance)
        self.group_assignment = check_group_assignment(group_assignment)

    def add_keys(self, table: Table) -> Table:
        """``table`` with a fold column per repeat; ``learned_``: K after capping; ``counts_``:
        the rows per fold of one repeat of row folds (from the strata's sizes), or per folds of
        every repeat of group folds (from the groups' sizes): no pass. A user's fold column is
        checked as ``soak`` checks it (folds 1..K, none empty)."""
        self.counts_ = None
        self.given_fold_ = None if table.fold in (None, FOLD_COLUMN) else table.fold
        if table.fold is not None:
            if self.n_repeats > 1:
                raise ValueError(
                    "outer_repeats > 1 needs folds assigned here; load the table without fold="
                )
            folds = table.fold_counts
            if folds is None:  # the values only: one pass, a tree reduction (no shuffle)
                folds = table.data[[table.fold]].drop_duplicates(split_out=1).compute()
            k = check_fold_values(folds, table.fold, None)
            data = table.data.rename(columns={table.fold: key_name("fold", 1)})
            if table.fold_counts is not None:  # assign_folds' own
                self.counts_ = table.fold_counts.rename(columns={table.fold: key_name("fold", 1)})
            self.learned_ = {"outer_folds": k}
            return replace(table, data=data, fold=None, files=None)  # recorded(): its name
        k = capped_folds(table, self.n_folds)
        repeats = range(1, self.n_repeats + 1)
        seeds = {key_name("fold", r): repeat_seed(self.seed, r) for r in repeats}
        if self.balance == "class" and table.group is None:
            # Every repeat's row folds from one function per partition (shared stratum codes).
            folds, strata = row_fold_columns(table, strata_keys(table, True), k, seeds)
            data = table.data.assign(**{key: folds[key] for key in seeds})
            if self.n_repeats == 1:  # (several repeats' joint counts do not follow from each's)
                ((key, seed),) = seeds.items()
                self.counts_ = row_fold_counts(strata, k, seed).rename(columns={FOLD_COLUMN: key})
        elif self.balance == "class":  # every repeat's groups dealt from one count of them
            keys = strata_keys(table, _stratifiable(table))
            data, counts = group_fold_columns(table, keys, k, seeds, self.group_assignment)
            # (every repeat's joint counts: a group's rows share its folds)
            if counts_are_blocks(table, keys):
                self.counts_ = counts
        else:  # overlap levels: every repeat from one (exact, so unseeded) neighbour search
            degrees = degree_frame(table)
            columns = {
                key: _with_key(
                    table, key, k, seed, self.balance, self.group_assignment, degrees
                ).data[key]
                for key, seed in seeds.items()
            }
            data = table.data.assign(**columns)
        self.learned_ = {"outer_folds": k}
        return replace(table, data=data, fold_counts=None, files=None)

    @property
    def outer(self) -> str:
        """``"cv"``, or ``"repeated_cv"`` with more than one repeat."""
        return "cv" if self.n_repeats == 1 else "repeated_cv"

    @classmethod
    def from_options(cls, outer: str, seed: int, options: Mapping[str, Any]) -> OuterDesign:
        """K-fold CV, repeated for ``"repeated_cv"``: ``OuterDesign.from_options``."""
        repeats = options["outer_repeats"] if outer == "repeated_cv" else 1
        dealt = {k: options[k] for k in ("balance", "group_assignment") if k in options}
        return cls(options["outer_folds"], repeats, seed, **dealt)

    def recorded(self) -> dict[str, Any]:
        """As every outer design's (``OuterDesign.recorded``), with the user's fold column
        where ``add_keys`` used one (its keys renamed it)."""
        fold = {} if self.given_fold_ is None else {"fold": self.given_fold_}
        return {**super().recorded(), **fold}

    def plan(self, table: Table, counts: pd.DataFrame | None = None) -> Plan:
        """A fit per (repeat, fold): trained on the other folds of the repeat, scored on the
        fold."""
        k = _learned(self, "outer_folds")
        rows, tests = [], {}
        for r in range(1, self.n_repeats + 1):
            for j in range(1, k + 1):
                column = key_name("fold", r)
                tests[r, j] = Selection((Term(column, (j,)),))
                rows.append(
                    (
                        {"repeat": r, "fold": j},
                        Fit(Selection((Term(column, (j,), exclude=True),))),
                        (r, j),
                    )
                )
        return build_plan(
            rows,
            tests,
            {"repeat": list(range(1, self.n_repeats + 1)), "fold": list(range(1, k + 1))},
        )


class Subsampling(KFoldDesign):
    """Repeated random train/test splits (``n_repeats``): exactly round(``train_ratio``·N) rows
    to train, class-stratified within each subset (whole groups with a group column, the share
    of rows to within a group); every repeat's key in one pass."""

    outer = "subsampling"

    @classmethod
    def from_options(cls, outer: str, seed: int, options: Mapping[str, Any]) -> OuterDesign:
        """``OuterDesign.from_options``."""
        return cls(options["outer_repeats"], options["train_ratio"], seed)

    def __init__(self, n_repeats: int = 5, train_ratio: float = 0.8, seed: int = 1) -> None:
        if not (isinstance(train_ratio, float | int) and 0 < train_ratio < 1):
            raise ValueError(f"train_ratio={train_ratio!r}: need a number between 0 and 1")
        self.n_repeats = _positive(n_repeats, "outer_repeats")
        self.train_ratio = float(train_ratio)
        self.seed = seed

    def add_keys(self, table: Table) -> Table:
        """``table`` with a train (1) / test (0) key per repeat; ``learned_``: the share of
        the rows drawn to train (the mean over repeats)."""
        names = [key_name("split", r) for r in range(1, self.n_repeats + 1)]
        data, used = add_draws(
            table.data,
            self.train_ratio,
            self.seed,
            names=names,
            keys=_strata(table),
            group=table.group,
            purpose="subsampling",
            option="train_ratio",
        )
        share = round(float(used.mean()), 12)  # the mean over repeats (they differ with groups)
        self.learned_ = {"train_ratio": share}
        return replace(table, data=data, files=None)

    def plan(self, table: Table, counts: pd.DataFrame | None = None) -> Plan:
        """A fit per repeat: trained on its train rows, scored on its test rows."""
        rows, tests = [], {}
        for r in range(1, self.n_repeats + 1):
            column = key_name("split", r)  # 1 trains, 0 tests
            tests[r] = Selection((Term(column, (0,)),))
            rows.append(({"repeat": r, "fold": 1}, Fit(Selection((Term(column, (1,)),))), r))
        return build_plan(rows, tests, {"repeat": list(range(1, self.n_repeats + 1)), "fold": [1]})


class FiveByTwoCV(KFoldDesign):
    """Dietterich's (1998) 5×2cv: ``n_repeats`` (5) repeats of 2-fold cross-validation, each
    with fresh class-stratified (grouped) folds -- the design of the 5×2cv t and F tests of
    ``compare`` (``method="5x2cv"``, ``"5x2cv_f"``; with R repeats they take R df).

    Examples
    --------
    >>> FiveByTwoCV(), FiveByTwoCV(seed=2, n_repeats=10)
    (FiveByTwoCV(), FiveByTwoCV(seed=2, n_repeats=10))
    """

    outer = "5x2cv"

    @classmethod
    def from_options(cls, outer: str, seed: int, options: Mapping[str, Any]) -> OuterDesign:
        """``OuterDesign.from_options``."""
        dealt = (options["balance"], options["group_assignment"])
        return cls(seed, options["outer_repeats"], *dealt)

    def __init__(
        self,
        seed: int = 1,
        n_repeats: int = 5,
        balance: str = "class",
        group_assignment: str = "rows",
    ) -> None:
        # One repeat is plain 2-fold CV: the 5x2cv tests would rest on 1 df.
        if _positive(n_repeats, "outer_repeats") < 2:
            raise ValueError(
                f"outer_repeats={n_repeats!r} with outer='5x2cv': 5x2cv repeats 2-fold CV (5 "
                "times unless outer_repeats says otherwise) for its paired tests; give at "
                "least 2 repeats, leave outer_repeats out for 5, or use outer='cv', "
                "outer_folds=2 for a single 2-fold CV"
            )
        super().__init__(2, n_repeats, seed, balance, group_assignment)


class LeaveOneGroupOutDesign(OuterDesign):
    """One fold per group (needs a group column); ``loo`` on a grouped table is this."""

    outer = "lodo"
    batch = 64  # one fit per group: many small fits

    def add_keys(self, table: Table) -> Table:
        """``table`` with each group's number as its fold; ``learned_``: the groups."""
        if table.group is None:
            raise ValueError(
                "outer='lodo' leaves out one group at a time: load the table with group="
            )
        sizes = table_group_sizes(table)
        groups = pd.Index(sorted(sizes[table.group].unique().tolist()))
        if len(groups) < 2:
            raise ValueError(
                f"outer='lodo' leaves out one group at a time and group column "
                f"{table.group!r} has {len(groups)} group: need at least 2 groups"
            )
        if table.task == "classification":
            single = sizes.groupby(table.group, observed=True)[table.label].nunique()
            _warn_single_class(single[single == 1].index.tolist(), len(groups))
        column = key_name("fold", 1)
        data = table.data.map_partitions(_code_column, table.group, groups, column)
        self.learned_ = {"outer_folds": len(groups)}
        return replace(table, data=data, files=None)

    plan = KFoldDesign.plan


class LeaveOneOutDesign(OuterDesign):
    """One fold per row, for very small data (at most ``LOO_MAX_ROWS`` rows)."""

    outer = "loo"
    batch = 64  # one fit per row

    def add_keys(self, table: Table) -> Table:
        """``table`` with each row's position as its fold (each group's number with a group
        column); ``learned_``: the rows (groups)."""
        if table.group is not None:
            groups = LeaveOneGroupOutDesign()
            keyed = groups.add_keys(table)
            self.learned_ = groups.learned_
            return keyed
        lengths = table_partition_rows(table)
        n = int(lengths.sum())
        if n > LOO_MAX_ROWS:
            raise ValueError(
                f"outer='loo' fits one model per row and the table has {n:,} rows (limit "
                f"{LOO_MAX_ROWS:,}); use outer='cv' (e.g. outer_folds=10), which estimates the "
                "same quantity for a fraction of the fits"
            )
        offsets = partition_starts(lengths)
        column = key_name("fold", 1)
        data = table.data.map_partitions(_position_column, offsets, column)
        self.learned_ = {"outer_folds": n}
        return replace(table, data=data, files=None)

    plan = KFoldDesign.plan


class Bootstrap(OuterDesign):
    """``n_repeats`` bootstrap resamples: each row (each group, with a group column) is used
    Poisson(1) times -- the row weights of an unbounded bootstrap, drawn row by row from a
    seeded hash, so no task needs the whole table; models are scored out of bag."""

    outer = "bootstrap"
    resubstitution = True  # the .632 estimates weigh the out-of-bag scores with these

    @classmethod
    def from_options(cls, outer: str, seed: int, options: Mapping[str, Any]) -> OuterDesign:
        """``OuterDesign.from_options``."""
        return cls(options["outer_repeats"], seed)

    def __init__(self, n_repeats: int = 10, seed: int = 1) -> None:
        self.n_repeats = _positive(n_repeats, "outer_repeats")
        self.seed = seed

    def add_keys(self, table: Table) -> Table:
        """``table`` with each row's (each group's) Poisson(1) count per resample."""
        # Positions from the run's shared counts; with groups the counts are keyed by group alone.
        lengths = table_partition_rows(table) if table.group is None else None
        offsets = partition_starts(lengths) if lengths is not None else None
        names = [key_name("boot", r) for r in range(1, self.n_repeats + 1)]
        data = table.data.map_partitions(_poisson_columns, offsets, table.group, names, self.seed)
        self.learned_ = {}
        return replace(table, data=data, files=None)

    def plan(self, table: Table, counts: pd.DataFrame | None = None) -> Plan:
        """A fit per resample: its rows weighted by their counts, scored out of bag."""
        rows, tests = [], {}
        for r in range(1, self.n_repeats + 1):
            column = key_name("boot", r)
            tests[r] = Selection((Term(column, (0,)),))
            rows.append(({"repeat": r, "fold": 1}, Fit(Selection(), weights=column), r))
        return build_plan(rows, tests, {"repeat": list(range(1, self.n_repeats + 1)), "fold": [1]})


class KNNDMFolds(OuterDesign):
    """K-fold cross-validation on kNNDM folds (Linnenbrink et al. 2024): folds whose test
    -> train nearest-neighbour distances match those from ``prediction``, the area the
    model will predict, to the training points (``soak_dask.knndm_folds`` chooses them in
    ``add_keys``: same seed, same folds, whatever the partitioning). Needs a table loaded
    with ``coords=``; a group column's groups are kept whole. ``evaluate(outer="knndm")``
    runs this design.

    Parameters
    ----------
    prediction : Table, DataFrame, xarray.Dataset or path
        The prediction area (see ``soak_dask.knndm_folds``); read in ``add_keys``.
    n_folds : int
        K (default 5, as ``evaluate``'s ``outer_folds``).
    seed : int
        Seed of the prediction sample, the k-means candidates and random folds.
    space, sample, maxp, n_candidates, max_clusters, cv_sample, clustering
        As for ``soak_dask.knndm_folds`` (the clustering used is recorded as
        ``knndm_clustering``). The candidates are scored on the run's client
        (``run_design``'s, ``evaluate``'s; else the current client, if any).

    Attributes
    ----------
    W_, W_random_ : float
        After ``add_keys``: the Wasserstein distance between the prediction area's and the
        folds' nearest-neighbour distances, of the folds chosen and of random folds.
    result_ : KNNDMResult
        After ``add_keys``: everything ``knndm_folds`` returned (candidates, distances).

    Examples
    --------
    >>> KNNDMFolds("area.parquet", n_folds=4, maxp=0.4)
    KNNDMFolds(prediction='area.parquet', n_folds=4, maxp=0.4)
    >>> KNNDMFolds("area.parquet", maxp=0.1)
    Traceback (most recent call last):
    ...
    ValueError: maxp=0.1: need 1/n_folds < maxp < 1 (CAST's default 0.5)
    """

    outer = "knndm"
    W_: float
    W_random_: float
    result_: KNNDMResult | None = None

    @classmethod
    def from_options(cls, outer: str, seed: int, options: Mapping[str, Any]) -> OuterDesign:
        """``OuterDesign.from_options``."""
        knndm = (options["prediction"], options["outer_folds"], seed)
        return cls(*knndm, clustering=options["clustering"])

    def __init__(
        self,
        prediction: Any,
        n_folds: int = 5,
        seed: int = 1,
        *,
        space: str = "geographical",
        sample: int = DEFAULT_SAMPLE,
        maxp: float | None = None,
        n_candidates: int = 100,
        max_clusters: int = 2000,
        cv_sample: int = 20_000,
        clustering: str | None = None,
    ) -> None:
        self.prediction = check_prediction(prediction, "KNNDMFolds")
        counts = {"sample": sample, "n_candidates": n_candidates, "max_clusters": max_clusters}
        folds = (n_folds, maxp, None, None)
        shares, self.seed = check_knndm_options(space, seed, counts, cv_sample, folds)
        check_clustering(clustering, space)
        self.clustering = clustering
        self.n_folds, self.maxp = shares.n_folds, maxp
        self.space, self.sample, self.cv_sample = space, sample, cv_sample
        self.n_candidates, self.max_clusters = n_candidates, max_clusters

    def add_keys(self, table: Table) -> Table:
        """``table`` with its kNNDM fold column (``knndm_folds``: geographical or feature
        space); ``learned_``: K; ``W_``, ``W_random_`` and ``result_`` set. A table with a fold
        column is refused (these folds would replace it)."""
        from .knndm import knndm_keys  # numba and k-means: loaded when folds are drawn

        options = {k: v for k, v in self.get_params().items() if k != "prediction"}
        res = knndm_keys(table, self.prediction, key_name("fold", 1), **options)
        self.result_, self.W_, self.W_random_ = res, res.W, res.W_random
        self.learned_ = {"outer_folds": res.n_folds}
        return replace(res.table, fold=None, fold_counts=None, files=None)

    plan = KFoldDesign.plan

    def recorded(self) -> dict[str, Any]:
        """As every outer design's (``OuterDesign.recorded``), with the folds' ``knndm_*``
        attrs (``KNNDMResult.attrs``: W, W of random folds, the clusters, the unit ...), once
        ``add_keys`` drew them."""
        return {**super().recorded(), **({} if self.result_ is None else self.result_.attrs())}

    def notes(self) -> list[str]:
        """The W of the folds chosen beside random folds' (``knndm_note``)."""
        if self.result_ is None:
            return []
        from .knndm import knndm_note

        return [knndm_note(self.recorded())]


def outer_design(outer: str, seed: int, options: Mapping[str, Any]) -> OuterDesign:
    """The design of ``evaluate``'s ``outer`` strategy from the options it reads: as
    ``soak_dask.settings.check_design_options(outer, ...)`` returns them (it refuses those the
    strategy would ignore and gives those not given the strategy's value), built by the class
    registered under that name (``OUTER_DESIGNS``)."""
    if outer not in OUTER_DESIGNS:
        raise ValueError(f"outer={outer!r} is not a strategy; choose from {list(OUTER)}")
    return OUTER_DESIGNS[outer].from_options(outer, seed, options)


def _learned(design: Design, name: str) -> Any:
    """What ``design.add_keys`` learned as ``name``; a clear error before it ran."""
    if name not in design.learned_:
        raise ValueError(f"{design!r}.plan needs the table its add_keys returned: call it first")
    return design.learned_[name]


def _positive(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"{name}={value!r}: need a positive integer")
    return int(value)


def _warn_single_class(groups: list, n_groups: int) -> None:
    if not groups:
        return
    listed = ", ".join(map(repr, groups[:10])) + (" …" if len(groups) > 10 else "")
    warn_user(
        f"{len(groups)} of {n_groups} groups hold a single class ({listed}): leaving one of "
        "them out scores one class only, so balanced accuracy is that class's recall and AUC is "
        "undefined (NaN). Use outer='cv' with outer_folds at most the rarest class's number of "
        "groups: grouped folds keep whole groups together and then hold every class"
    )


def _code_column(part: pd.DataFrame, group: str, groups: pd.Index, column: str) -> pd.DataFrame:
    return part.assign(**{column: category_codes(part[group], groups) + 1})


def _position_column(
    part: pd.DataFrame, offsets: np.ndarray, column: str, partition_info: dict | None = None
) -> pd.DataFrame:
    start = offsets[partition_info["number"]] if partition_info else 0
    return part.assign(**{column: np.arange(start + 1, start + 1 + len(part), dtype=np.int64)})


def _poisson_columns(
    part: pd.DataFrame,
    offsets: np.ndarray,
    group: str | None,
    names: list[str],
    seed: int,
    partition_info: dict | None = None,
) -> pd.DataFrame:
    """Poisson(1) counts per row (per group: one count for all its rows), one column per
    resample, from a seeded hash of the row's position in the table (or of its group)."""
    if group is None:
        start = offsets[partition_info["number"]] if partition_info else 0
        keys = np.arange(start, start + len(part), dtype=np.uint64)
    else:
        keys = pd.util.hash_array(part[group].to_numpy())
    columns = {}
    for r, name in enumerate(names, start=1):
        u = uniform(seeded_hash(seed, salt("bootstrap"), np.uint64(r), keys))
        # int8: a count is at most 29, and a hundred resamples' columns stay small
        columns[name] = np.searchsorted(_POISSON_CDF, u, side="right").astype(np.int8)
    return with_columns(part, columns)
