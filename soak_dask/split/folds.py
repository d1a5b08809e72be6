"""Assign folds on the cluster: stratified, exactly balanced, deterministic.

Rows without groups get *permuted-block* folds: within each stratum (subset × label), rows are
taken in table order and cut into consecutive blocks of K; each block receives a random
permutation of the folds 1..K drawn from a hash of (seed, stratum, block). Every complete block
holds each fold once, so fold sizes in a stratum differ by at most one, and a row's fold depends
only on the seed and its position within its stratum -- not on how the rows are split into files,
partitions or workers. Only a tiny table of per-partition stratum counts comes to the client.

Groups are assigned on the (small) table of groups gathered from the cluster (one row per
group: its stratum and rows), then group -> fold is mapped onto the rows. Two assignments
(``group_assignment``):

- ``"rows"`` (the default): largest group first, each to the fold with the fewest rows of its
  stratum so far, ties broken by a seeded hash. Rows per fold of a stratum then differ by at
  most its largest group; the group counts per fold may differ more.
- ``"mlr3resampling"``: the R package's rule (``ResamplingBase$.sample``): the groups of a
  stratum, in a seeded random order, are dealt to folds 1, 2, ..., K, 1, 2, ... so every fold
  gets the same number of groups (within one), whatever their rows. It is R's algorithm, not
  R's random stream: to reproduce R's own folds, load them as a fold column.

Both keep whole groups, balance each stratum (subset × label) on its own, and depend only on
the seed and the groups' values and sizes, not on partitions or workers.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from typing import Any

import dask.dataframe as dd
import numpy as np
import pandas as pd

from ..hashing import seeded_hash
from ..schema import DEFAULT_N_FOLDS
from ..tables.checks import small_strata_warning, warn
from ..tables.roles import check_one_type
from ..tables.table import FOLD_COLUMN, Table
from .fold_options import (
    MAX_FOLDS,
    check_group_assignment,
    check_n_folds,
    check_seed,
)
from .shares import Strata, count_strata, group_sizes, key_frame


def permuted_block_folds(
    codes: np.ndarray, index_in_stratum: np.ndarray, n_folds: int, seed: int
) -> np.ndarray:
    """Folds 1..K for rows given their stratum code and their position within the stratum.

    Parameters
    ----------
    codes : ndarray of int
        Stratum code of each row.
    index_in_stratum : ndarray of int
        0-based position of each row among the rows of its stratum, in table order.
    n_folds : int
        K.
    seed : int
        Seed of the random permutations.

    Returns
    -------
    ndarray of int8
        The fold of each row, 1..K.

    Examples
    --------
    >>> folds = permuted_block_folds(np.zeros(10, int), np.arange(10), n_folds=5, seed=1)
    >>> sorted(np.bincount(folds)[1:].tolist())
    [2, 2, 2, 2, 2]
    """
    codes = np.asarray(codes, dtype=np.int64)
    index_in_stratum = np.asarray(index_in_stratum, dtype=np.int64)
    if not len(codes):
        return np.zeros(0, dtype=np.int8)
    block = index_in_stratum // n_folds
    width = int(codes.max()) + 1
    # Number the (stratum, block) pairs. Rows of a stratum usually hold consecutive positions
    # (a partition's, or a stratum's last block), so its blocks form a range: no sort needed.
    first = np.full(width, np.iinfo(np.int64).max)
    last = np.full(width, -1)
    np.minimum.at(first, codes, block)
    np.maximum.at(last, codes, block)
    span = np.maximum(last - first + 1, 0)
    if span.sum() <= 2 * len(codes) + width:
        start = np.cumsum(span) - span
        pair = start[codes] + block - first[codes]
        stratum = np.repeat(np.arange(width), span)
        pair_block = np.arange(span.sum()) - np.repeat(start - np.minimum(first, last), span)
    else:  # positions far apart: only the pairs present
        keys, pair = np.unique(block * width + codes, return_inverse=True)
        stratum, pair_block = keys % width, keys // width
    # One row of K hashes per (stratum, block); the rank of position j in that row is its fold.
    hashes = seeded_hash(seed, stratum[:, None], pair_block[:, None], np.arange(n_folds)[None, :])
    ranks = np.argsort(np.argsort(hashes, axis=1), axis=1)
    return (ranks[pair, index_in_stratum % n_folds] + 1).astype(np.int8)


def group_folds(
    groups: pd.DataFrame, n_folds: int, seed: int, assignment: str = "rows"
) -> pd.Series:
    """Assign whole groups to folds within each stratum.

    Parameters
    ----------
    groups : DataFrame
        One row per group with columns ``group`` (the group value), ``stratum`` (int code) and
        ``n`` (rows in the group).
    n_folds : int
        K.
    seed : int
        Seed of the hashes that order the groups and break ties.
    assignment : {"rows", "mlr3resampling"}
        ``"rows"``: largest group first onto the fold with the fewest rows of the stratum so
        far (rows per fold then differ by at most the stratum's largest group).
        ``"mlr3resampling"``: groups in seeded random order dealt to folds 1..K in turn (groups
        per fold differ by at most one; rows ignored), as the R package deals them.

    Returns
    -------
    Series
        Fold 1..K indexed by group value.

    Examples
    --------
    >>> groups = pd.DataFrame({"group": list("abcde"), "stratum": 0, "n": [50, 1, 1, 1, 1]})
    >>> group_folds(groups, 2, seed=1).groupby(lambda g: g == "a").size().to_dict()
    {False: 4, True: 1}
    >>> group_folds(groups, 2, seed=1, assignment="mlr3resampling").value_counts().tolist()
    [3, 2]
    """
    tie = seeded_hash(seed, pd.util.hash_array(groups["group"].to_numpy()))
    by_rows = check_group_assignment(assignment) == "rows"
    # "rows": by stratum, largest group first; "mlr3resampling": by stratum, seeded order.
    keys = ["stratum", "n", "_tie"] if by_rows else ["stratum", "_tie"]
    ascending = [True, False, True] if by_rows else True
    order = groups.assign(_tie=tie).sort_values(keys, ascending=ascending)
    strata = order["stratum"].to_numpy()
    if by_rows:
        folds = _emptiest_first(strata, order["n"].to_numpy(), n_folds, seed)
    else:  # position within the stratum, in the seeded order, modulo K
        starts = np.searchsorted(strata, strata, side="left")
        folds = ((np.arange(len(strata)) - starts) % n_folds + 1).astype(np.int8)
    return pd.Series(folds, index=order["group"].to_numpy(), name="fold").sort_index()


def _emptiest_first(strata: np.ndarray, sizes: np.ndarray, n_folds: int, seed: int) -> np.ndarray:
    """Folds of groups sorted by stratum then size (largest first): each group to the fold
    with the fewest rows of its stratum so far."""
    folds = np.empty(len(strata), dtype=np.int8)
    start = 0
    for stratum, count in zip(*np.unique(strata, return_counts=True), strict=True):
        # Heap of (rows so far, seeded fold priority, fold): the emptiest fold takes the next group.
        priority = np.argsort(seeded_hash(seed, np.int64(stratum), np.arange(n_folds)))
        heap = [(0, int(p), k + 1) for p, k in zip(priority, range(n_folds), strict=True)]
        heapq.heapify(heap)
        for i in range(start, start + count):
            rows, p, k = heapq.heappop(heap)
            folds[i] = k
            heapq.heappush(heap, (rows + int(sizes[i]), p, k))
        start += count
    return folds


def assign_folds(
    table: Table,
    n_folds: int = DEFAULT_N_FOLDS,
    seed: int = 1,
    *,
    stratify: bool = True,
    group_assignment: str = "rows",
) -> Table:
    """Add a fold column (1..K) to ``table``, computed on the cluster.

    Parameters
    ----------
    table : Table
        From ``soak_dask.load_table``. If it has a group column, whole groups go to one fold.
    n_folds : int
        K, from 2 to 127.
    seed : int
        From 0 to 2**32 - 1. Same seed and same rows give the same folds, whatever the
        partitioning or workers.
    stratify : bool
        Balance folds within subset × label (classification). With False, or for regression,
        strata are the subsets only.
    group_assignment : {"rows", "mlr3resampling"}
        With a group column, how whole groups are dealt to the folds of each stratum:
        balancing rows (largest group first onto the emptiest fold), or the same number of
        groups per fold, as mlr3resampling deals them (``group_folds``). Without groups,
        unused.

    Returns
    -------
    Table
        A copy whose ``fold`` names the new column.
    """
    if table.fold is not None:
        raise ValueError(
            f"the table already has the fold column {table.fold!r}; load it without fold= to "
            "assign new folds"
        )
    n_folds = check_n_folds(n_folds)
    seed = check_seed(seed)
    assignment = check_group_assignment(group_assignment)
    keys = strata_keys(table, stratify)
    if table.group is not None:
        data, counts = assign_group_folds(table, keys, n_folds, seed, assignment)
    else:
        data, strata = assign_row_folds(table, keys, n_folds, seed)
        counts = row_fold_counts(strata, n_folds, seed)
    # Folds follow from the strata's (or the groups') counts: the block counts need no pass.
    if not counts_are_blocks(table, keys):
        return table.with_fold(data, FOLD_COLUMN)
    return table.with_fold(data, FOLD_COLUMN, counts[[table.subset, FOLD_COLUMN, *keys[1:], "n"]])


def check_balance(balance: Any) -> str:
    """``balance`` if it is ``"class"`` or ``"overlap"``."""
    if balance not in ("class", "overlap"):
        raise ValueError(
            f"balance={balance!r}: choose 'class' (folds balanced by class) or 'overlap' (also "
            "by each row's degree of overlap with other classes)"
        )
    return balance


def counts_are_blocks(table: Table, keys: list[str]) -> bool:
    """Whether counts by the strata ``keys`` (and folds) are by the blocks' keys, as a run's
    block counts must be: the subset, and the label for classification."""
    return (table.label in keys) == (table.task == "classification")


def strata_keys(table: Table, stratify: bool) -> list[str]:
    """The columns whose value combinations ``assign_folds`` balances across folds: the subset,
    and the label for stratified classification."""
    stratified = stratify and table.task == "classification"
    return [table.subset, *([table.label] if stratified else [])]


def table_group_sizes(table: Table) -> pd.DataFrame:
    """Rows ``n`` per (group, subset, and class for classification) of a grouped table: the
    one count of its groups that a run's checks of them and its group folds share
    (``shares.group_sizes``)."""
    return group_sizes(table.data, table.group, strata_keys(table, True))


def groups_hold_one_class(table: Table) -> bool:
    """Whether every group of a grouped classification table holds rows of one class only
    (its folds can then be stratified by class group by group)."""
    sizes = table_group_sizes(table)
    classes = sizes.groupby(table.group, dropna=False, observed=True)[table.label].nunique()
    return bool(classes.max() == 1)


def table_classes(table: Table) -> tuple | None:
    """The classes of a classification table, sorted (None for regression), from the counts
    its folds are dealt by (``table_strata``; one pass, shared within a run)."""
    if table.task != "classification":
        return None
    return tuple(table_strata(table).totals(table.label).index.tolist())


def table_class_rows(table: Table) -> tuple[int, ...]:
    """Rows of each class in ``table_classes``' order (regression: one number, all rows),
    from the same shared counts: no pass of its own within a run."""
    strata = table_strata(table)
    if table.task != "classification":
        return (int(strata.rows.sum()),)
    return tuple(int(n) for n in strata.totals(table.label))


def table_partition_rows(table: Table) -> np.ndarray:
    """Rows of each partition of ``table``, from the same shared counts (a design that numbers
    rows, e.g. a bootstrap's, needs no pass of its own for them)."""
    return table_strata(table).partition_rows


def table_strata(table: Table) -> Strata:
    """The rows per (partition, stratum) the table's folds are dealt by (``strata_keys``):
    one pass over the key columns, shared within a run (``shares.count_strata``)."""
    return count_strata(table.data, strata_keys(table, True), table.key_roles)


def fold_rows(
    sizes: pd.DataFrame,
    keys: list[str],
    n_folds: int,
    seed: int,
    group: str | None = None,
    group_assignment: str = "rows",
) -> pd.Series:
    """Rows per (subset, fold) that ``assign_folds`` gives, from counts alone (no pass).

    Parameters
    ----------
    sizes : DataFrame
        Rows ``n`` per combination of ``keys`` (subset first; see ``strata_keys``), or with
        ``group``, per group and combination (each group in one combination).
    keys : list of str
    n_folds, seed : int
        As given to ``assign_folds``.
    group : str, optional
        The group column: whole groups go to one fold.
    group_assignment : {"rows", "mlr3resampling"}
        As given to ``assign_folds``.
    """
    if group is None:
        strata = sizes.groupby(keys, observed=True)["n"].sum().sort_index()
        counts = row_fold_counts(strata, n_folds, seed)
    else:
        mapping = _group_mapping(sizes, group, keys, n_folds, seed, group_assignment)
        folds = mapping.reindex(sizes[group].to_numpy()).to_numpy()
        counts = sizes.assign(**{FOLD_COLUMN: folds})
    return counts.groupby([keys[0], FOLD_COLUMN], observed=True)["n"].sum()


def _key_index(part: pd.DataFrame, keys: list[str]) -> pd.MultiIndex:
    return pd.MultiIndex.from_arrays([part[k].to_numpy() for k in keys], names=keys)


def _key_codes(part: pd.DataFrame, keys: list[str]) -> tuple[np.ndarray, pd.MultiIndex]:
    """Each row's code among the partition's distinct key combinations, and those combinations.

    Columns are factorised one by one (hashing, no Python objects per row), which is much faster
    than building a MultiIndex of the rows when keys are strings.
    """
    combined = np.zeros(len(part), dtype=np.int64)
    levels = []
    for key in keys:
        codes, uniques = pd.factorize(part[key], use_na_sentinel=False)
        combined = combined * max(len(uniques), 1) + codes
        levels.append(uniques)
    inverse, found = pd.factorize(combined)
    arrays = []
    for uniques in reversed(levels):
        arrays.append(np.asarray(uniques).take(found % max(len(uniques), 1)))
        found = found // max(len(uniques), 1)
    return inverse, pd.MultiIndex.from_arrays(arrays[::-1], names=keys)


def _check_keys(strata: pd.DataFrame, keys: list[str]) -> None:
    """Refuse missing values, and values of mixed types (e.g. 1 and '1'), in the key columns
    of ``strata`` (distinct key combinations, counted on the cluster, with their rows ``n``)."""
    for key in keys:
        n_na = int(strata.loc[strata[key].isna(), "n"].sum())
        if n_na:
            raise ValueError(
                f"column {key!r} has {n_na} missing values; drop those rows or fill them "
                "before running SOAK"
            )
        check_one_type(strata[key], key)


def assign_row_folds(
    table: Table, keys: list[str], n_folds: int, seed: int
) -> tuple[dd.DataFrame, pd.Series]:
    """The table with its fold column, and the rows of each stratum."""
    folds, strata = row_fold_columns(table, keys, n_folds, {FOLD_COLUMN: seed})
    return table.data.assign(**{FOLD_COLUMN: folds[FOLD_COLUMN]}), strata


def row_fold_columns(
    table: Table, keys: list[str], n_folds: int, seeds: Mapping[str, int]
) -> tuple[dd.DataFrame, pd.Series]:
    """Permuted-block folds 1..K of the rows within the strata ``keys``: one int8 column per
    name of ``seeds``, dealt with its seed, and the rows of each stratum. One count and one
    function per partition serve every column: a design's repeats share the rows' stratum
    codes and positions, and each repeat costs one draw of permutations."""
    data = table.data
    # Only the key columns are read for the counts, once in a run (``shares.counts_shared``).
    counted = count_strata(data, keys, table.key_roles)
    counts = counted.frame()
    strata = counts.groupby(keys, observed=True)["n"].sum().sort_index()
    _warn_small_strata(strata, keys, n_folds)
    index = strata.index if len(keys) > 1 else pd.MultiIndex.from_arrays([strata.index])
    codes = index.get_indexer(_key_index(counts, keys))
    table_counts = np.zeros((len(counted.counts), len(strata)), dtype=np.int64)
    np.add.at(table_counts, (counts["partition"].to_numpy(), codes), counts["n"].to_numpy())
    # Rows of each stratum before each partition: the partition's offset in the stratum.
    offsets = np.cumsum(table_counts, axis=0) - table_counts
    # Folds are computed from the key columns alone, so a query of the folds reads only those
    # -- unless reading only those would change the partitions the rows were counted in.
    meta = pd.DataFrame({name: pd.Series([], dtype="int8") for name in seeds})
    folds = key_frame(data, keys).map_partitions(
        _fold_part,
        keys,
        index,
        offsets,
        table_counts,
        n_folds,
        tuple(seeds.items()),
        meta=meta,
    )
    return folds, strata


def row_fold_counts(strata: pd.Series, n_folds: int, seed: int) -> pd.DataFrame:
    """Rows per (stratum, fold) of permuted-block folds, from the strata's sizes alone.

    Each complete block of K rows gives every fold one row; the last, partial block of each
    stratum gives one row to each of the first folds of its permutation.
    """
    sizes = strata.to_numpy()
    full, rest = np.divmod(sizes, n_folds)
    counts = np.repeat(full[:, None], n_folds, axis=1)
    codes = np.repeat(np.arange(len(sizes)), rest)
    first = np.repeat(np.cumsum(rest) - rest, rest)  # where each stratum's partial block starts
    position = full[codes] * n_folds + np.arange(len(codes)) - first
    np.add.at(counts, (codes, permuted_block_folds(codes, position, n_folds, seed) - 1), 1)
    frame = strata.index.to_frame(index=False).loc[np.repeat(np.arange(len(sizes)), n_folds)]
    frame = frame.assign(
        **{FOLD_COLUMN: np.tile(np.arange(1, n_folds + 1, dtype=np.int8), len(sizes))},
        n=counts.reshape(-1),
    )
    return frame.loc[frame["n"] > 0].reset_index(drop=True)


def _fold_part(
    part: pd.DataFrame,
    keys: list[str],
    index: pd.MultiIndex,
    offsets: np.ndarray,
    expected: np.ndarray,
    n_folds: int,
    seeds: tuple[tuple[str, int], ...],
    partition_info=None,
) -> pd.DataFrame:
    number = partition_info["number"] if partition_info else 0
    inverse, found = _key_codes(part, keys)
    codes = index.get_indexer(found)[inverse]
    if not np.array_equal(np.bincount(codes, minlength=len(index)), expected[number]):
        raise RuntimeError(
            "the table's partitions changed between counting and assigning folds; "
            "persist the table (table.data.persist()) before assign_folds"
        )
    # Position of each row among the partition's rows of its stratum (a radix sort on the
    # smallest integer type of the codes).
    order = np.argsort(codes.astype(np.min_scalar_type(len(index))), kind="stable")
    starts = np.cumsum(expected[number]) - expected[number]
    local = np.empty(len(codes), dtype=np.int64)
    local[order] = np.arange(len(codes)) - starts[codes[order]]
    position = offsets[number, codes] + local
    columns = {name: permuted_block_folds(codes, position, n_folds, s) for name, s in seeds}
    return pd.DataFrame(columns, index=part.index)


def _warn_small_strata(
    strata: pd.Series,
    keys: list[str],
    n_folds: int,
    unit: str = "rows",
    rows: pd.Series | None = None,
) -> None:
    warn(small_strata_warning(strata, keys, n_folds, unit, rows))


def assign_group_folds(
    table: Table, keys: list[str], n_folds: int, seed: int, assignment: str = "rows"
) -> tuple[dd.DataFrame, pd.DataFrame]:
    """``table.data`` with the fold column of whole groups, and its rows per key combination
    and fold (``group_fold_columns``)."""
    return group_fold_columns(table, keys, n_folds, {FOLD_COLUMN: seed}, assignment)


def group_fold_columns(
    table: Table, keys: list[str], n_folds: int, seeds: Mapping[str, int], assignment: str = "rows"
) -> tuple[dd.DataFrame, pd.DataFrame]:
    """``table.data`` with a column of whole-group folds 1..K per seed (``seeds``: column ->
    seed), stratified by ``keys``: the groups' rows per key combination counted once, each
    seed's folds dealt from them (``group_folds``), and one task a partition adding every
    column (a repeat's folds are those ``assign_folds`` gives with its seed alone).

    Also the rows per combination of ``keys`` and every fold column (``n``): a group's rows
    share its folds, so the counts follow from the groups' without a pass, every repeat's
    jointly."""
    group = table.group
    data = table.data
    sizes = group_sizes(data, group, keys)
    _check_keys(sizes, [group, *keys])
    for key in keys:
        spans = sizes.groupby(group, observed=True)[key].nunique()
        spanning = spans[spans > 1]
        if len(spanning):
            examples = ", ".join(map(repr, spanning.index[:5].tolist()))
            fix = (
                "or pass stratify=False to stratify by subset only"
                if key == table.label
                else "give each such group its own id per subset"
            )
            raise ValueError(
                f"{len(spanning)} groups of column {group!r} span more than one value of "
                f"{key!r} (e.g. {examples}); a group must have one {key} value: fix the data "
                f"{fix}"
            )
    per_subset = sizes.groupby(table.subset, observed=True)[group].nunique()
    few = per_subset[per_subset < n_folds]
    if len(few):
        raise ValueError(
            f"subsets {few.to_dict()} have fewer groups of {group!r} than n_folds={n_folds}, "
            "so some test folds would be empty; use fewer folds or smaller groups"
        )
    # With groups, what a fold can hold of a stratum is counted in groups, not rows.
    by_stratum = sizes.groupby(keys, observed=True)
    _warn_small_strata(
        by_stratum[group].nunique(), keys, n_folds, f"groups of {group!r}", by_stratum["n"].sum()
    )
    mapping = pd.DataFrame(
        {name: _group_mapping(sizes, group, keys, n_folds, at, assignment)
         for name, at in seeds.items()}
    )  # fmt: skip
    meta = data._meta.assign(**dict.fromkeys(seeds, np.int8(0)))
    folded = sizes.join(mapping.astype(np.int8), on=group)
    counts = folded.groupby([*keys, *seeds], observed=True)["n"].sum().reset_index()
    return data.map_partitions(_map_group_folds, group, mapping, meta=meta), counts


def _group_mapping(
    sizes: pd.DataFrame,
    group: str,
    keys: list[str],
    n_folds: int,
    seed: int,
    assignment: str = "rows",
) -> pd.Series:
    """The fold of each group (``group_folds``), from its rows ``n`` per key combination."""
    strata = sizes.groupby(keys, observed=True)["n"].sum().sort_index()
    index = strata.index if len(keys) > 1 else pd.MultiIndex.from_arrays([strata.index])
    groups = pd.DataFrame(
        {
            "group": sizes[group].to_numpy(),
            "stratum": index.get_indexer(_key_index(sizes, keys)),
            "n": sizes["n"].to_numpy(),
        }
    )
    return group_folds(groups, n_folds, seed, assignment)


def _map_group_folds(part: pd.DataFrame, group: str, mapping: pd.DataFrame) -> pd.DataFrame:
    """``part`` with each of ``mapping``'s columns of folds (by group) for its rows' groups:
    one lookup of the groups for every column."""
    at = mapping.index.get_indexer(part[group].to_numpy())
    if (at < 0).any():  # the rows changed since their groups were counted
        unknown = pd.unique(part[group].to_numpy()[at < 0])[:5].tolist()
        raise ValueError(f"groups {unknown} of column {group!r} were not counted")
    folds = mapping.to_numpy(np.int8)[at]
    return part.assign(**{name: folds[:, i] for i, name in enumerate(mapping.columns)})


def block_counts(table: Table) -> pd.DataFrame:
    """Rows per (subset, fold[, label]) block, computed on the cluster.

    The label is included for classification so the classes are known; missing values of the
    subset, fold or label raise a clear error.
    """
    if table.fold is None:
        raise ValueError("the table has no fold column yet; call assign_folds first")
    keys = [table.subset, table.fold]
    if table.task == "classification":
        keys.append(table.label)
    if table.fold_counts is not None:
        counts = table.fold_counts
    else:
        sizes = table.data.groupby(keys, dropna=False, observed=True).size(split_out=1).compute()
        counts = sizes.rename("n").reset_index()
    _check_keys(counts, keys)
    if table.task == "regression":
        n_na = int(table.data[table.label].isna().sum().compute())
        if n_na:
            raise ValueError(
                f"label column {table.label!r} has {n_na} missing values; drop those rows first"
            )
    return counts


def check_fold_values(counts: pd.DataFrame, fold: str, n_folds: int | None) -> int:
    """Validate a user's fold column (values 1..K, K at most ``MAX_FOLDS``, every fold
    present) and return K; the largest value is checked before any range is built from it."""
    values = pd.Series(counts[fold].unique())
    numeric = pd.to_numeric(values, errors="coerce").astype(np.float64)
    bad = values[~np.isfinite(numeric) | (numeric != numeric.round()) | (numeric < 1)]
    if len(bad):
        raise ValueError(
            f"fold column {fold!r} has values {sorted(map(str, bad))[:10]}; folds must be "
            "integers 1..K"
        )
    # K is checked before anything is sized by it: a stray 10**9 would ask for 10**9 folds.
    if numeric.max() > MAX_FOLDS:
        raise ValueError(
            f"fold column {fold!r} has values up to {numeric.max():,.0f} ({len(values)} "
            f"distinct); folds must be numbered 1..K with K at most {MAX_FOLDS}: renumber "
            f"them 1..K (e.g. df[{fold!r}] = df[{fold!r}].rank(method='dense').astype(int))"
        )
    k = int(numeric.max())
    missing = sorted(set(range(1, k + 1)) - set(numeric.astype(int)))
    if missing:
        raise ValueError(
            f"fold column {fold!r} has no rows in folds {missing}; folds must be 1..K with "
            "every fold used (renumber them)"
        )
    if n_folds is not None and n_folds != k:
        raise ValueError(
            f"n_folds={n_folds} but fold column {fold!r} has folds 1..{k}; leave n_folds out "
            "to use the column's folds"
        )
    return check_n_folds(k, f"fold column {fold!r}: K")
