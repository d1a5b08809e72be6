"""Exact-share seeded draws: a share of the rows (of each stratum), or of the groups' rows.

Every split of a table into two sides at a share -- ``evaluate``'s reserved test split and
subsampling, ``split_sensitivity``'s trials, ``compare_sampling``'s methods -- is this draw:

- Rows: one pass counts each partition's rows per stratum (a small table on the client). Each
  stratum s draws m_s of its N_s rows, m_s by largest remainder so that Σ m_s = round(share·N)
  (``share_sizes``). On the worker, a row's position within its stratum (table order) follows
  from that table, and a seeded random permutation of 0..N_s − 1 (a four-round Feistel network
  with cycle walking, keyed by seed, draw and stratum: ``ranks``) gives its rank; the rows of
  rank below m_s are drawn. So exactly m_s rows per stratum, with no pass but the count, and
  the same rows for a seed whatever the partitioning. A draw's ranks of its drawn rows are a
  random permutation of 0..m_s − 1 too, so ``rank % K`` deals them into K balanced folds.
- Groups: the (small) table of groups is drawn on the client: per stratum, groups in a seeded
  random order, the prefix whose rows come nearest share·N_s (``draw_groups``).

A share that leaves no row (or no group) on a side is refused with the shares this table
allows (``check_sides``).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
from numba import njit

from ..hashing import salt, seeded_hash, uniform
from ..tables.roles import check_one_type

#: Rounds of the Feistel permutation (four make a pseudo-random permutation).
ROUNDS = 4


def share_sizes(rows: np.ndarray, share: float, seed: int) -> np.ndarray:
    """Rows drawn of each stratum: ⌊share·N_s⌋, plus one for the strata with the largest
    remainders (ties broken by a seeded hash) until the total is round(share·N).

    Examples
    --------
    >>> share_sizes(np.array([10, 5, 1]), 0.7, seed=1).tolist()  # 7 + 3.5 + 0.7 -> 11
    [7, 3, 1]
    """
    rows = np.asarray(rows, dtype=np.int64)
    exact = rows * share
    sizes = np.floor(exact + 1e-9).astype(np.int64)  # 0.29 * 100 is 28.999...96
    extra = int(round(rows.sum() * share)) - int(sizes.sum())
    tie = uniform(seeded_hash(seed, salt("sampling:sizes"), np.arange(len(rows))))
    order = np.lexsort((tie, -(exact - sizes)))
    sizes[order[:extra]] += 1
    return sizes


def check_sides(
    total: int, drawn: int, share: float, option: str, unit: str = "rows", smallest: int = 1
) -> None:
    """Refuse a draw of ``drawn`` of ``total`` units that leaves a side empty, saying which
    shares this table allows (``smallest``: the fewest rows one unit of the draw holds)."""
    if 0 < drawn < total:
        return
    low, high = smallest / max(total, 1), 1 - smallest / max(total, 1)
    allowed = (
        f"give a share from {low:.4g} to {high:.4g}"
        if low < high
        else "no share splits it: give more data"
    )
    raise ValueError(
        f"{option}={share:g} draws {drawn:,} of the table's {total:,} {unit}, leaving one side "
        f"of the split empty; for this table {allowed}"
    )


def partition_lengths(data: dd.DataFrame) -> np.ndarray:
    """Rows per partition, from one column (``map_partitions(len)`` would read all), one
    small task per partition (a computed Series would be repartitioned into one first)."""
    parts = column_parts(data, [data.columns[0]])
    return np.array(dask.compute(*[dask.delayed(len)(p) for p in parts]), dtype=np.int64)


def column_parts(data: dd.DataFrame, columns: list[str]) -> list[Any]:
    """Delayed partitions of ``data`` holding ``columns`` only, one per partition of ``data``:
    the projection read, where it keeps ``data``'s partitions; else each whole partition cut
    in its task. Dask's ``read_parquet`` fuses partitions when columns are projected (dask
    #12193), so counts of a projection would not line up with the partitions that number the
    rows (positions, keys) -- a frame handed to ``load_table`` as it comes from
    ``read_parquet``; ``load_table``'s own reads keep their partitions."""
    projected = key_frame(data, columns)
    if projected is not data:
        return projected.to_delayed()
    return [dask.delayed(operator.getitem, pure=True)(p, columns) for p in data.to_delayed()]


def key_frame(data: dd.DataFrame, columns: list[str]) -> dd.DataFrame:
    """``data[columns]`` where that projection keeps ``data``'s partitions, else ``data``
    itself (whose tasks then select ``columns``): the frame to map a function of key columns
    over so that its partition numbers are those ``column_parts`` counted (dask #12193)."""
    projected = data[columns]
    # Each answer costs two optimisations of the expression (~10 ms each, a third of a small
    # run's counting): within ``counts_shared`` it is worked out once per frame and columns.
    keeps = _once(
        ("keeps partitions", data._name, tuple(columns)),
        lambda: projected.optimize().npartitions == data.optimize().npartitions,
    )
    return projected if keeps else data


def partition_starts(lengths: np.ndarray) -> np.ndarray:
    """Each partition's first row position in the table, from its rows ``lengths``."""
    return np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)


@dataclass(frozen=True)
class Strata:
    """Rows per (partition, stratum) of a table: the small table every row draw works from.

    ``index`` holds the strata's key values (sorted); ``counts[p, s]`` the rows of stratum s
    in partition p.
    """

    keys: tuple[str, ...]
    index: pd.Index
    counts: np.ndarray

    @property
    def rows(self) -> np.ndarray:
        """Rows of each stratum."""
        return self.counts.sum(axis=0)

    @property
    def partition_rows(self) -> np.ndarray:
        """Rows of each partition."""
        return self.counts.sum(axis=1)

    @property
    def offsets(self) -> np.ndarray:
        """Rows of each stratum in the partitions before each partition."""
        return np.cumsum(self.counts, axis=0) - self.counts

    def codes(self, part: pd.DataFrame) -> np.ndarray:
        """Each row's stratum code (rows of unknown strata: -1)."""
        if not self.keys:
            return np.zeros(len(part), dtype=np.int64)
        frame = part[list(self.keys)]
        grouped = frame.groupby(list(self.keys), sort=False, observed=True, dropna=False)
        found = grouped.size().index
        number = grouped.ngroup().to_numpy(np.int64)
        return self.index.get_indexer(found)[number].astype(np.int64)

    def positions(self, part: pd.DataFrame, number: int) -> tuple[np.ndarray, np.ndarray]:
        """Each row's stratum code and 0-based position among its stratum's rows (table
        order), refusing a partition whose rows differ from those counted."""
        codes = self.codes(part)
        counts = np.bincount(codes[codes >= 0], minlength=len(self.index))
        if (codes < 0).any() or not np.array_equal(counts, self.counts[number]):
            raise RuntimeError(
                "the table's partitions changed between counting and drawing a split; "
                "persist the table (table.data.persist()) first"
            )
        order = np.argsort(codes, kind="stable")
        starts = np.cumsum(counts) - counts
        local = np.empty(len(codes), dtype=np.int64)
        local[order] = np.arange(len(codes)) - starts[codes[order]]
        return codes, self.offsets[number, codes] + local

    def frame(self) -> pd.DataFrame:
        """The counts as a long frame: the key columns, ``n`` and ``partition``, one row per
        (partition, stratum) with rows."""
        partition, code = np.nonzero(self.counts)
        strata = self.index.take(code)
        if len(self.keys) > 1:
            keys = strata.to_frame(index=False)
        else:  # no key (one stratum), or one
            keys = pd.DataFrame({k: strata for k in self.keys}, index=range(len(code)))
        return keys.assign(n=self.counts[partition, code], partition=partition)

    def totals(self, key: str) -> pd.Series:
        """Rows per value of the key column ``key`` (sorted by value)."""
        if key not in self.keys:
            raise ValueError(f"{key!r} is not among the strata's keys {list(self.keys)}")
        values = self.index.get_level_values(key) if len(self.keys) > 1 else self.index
        return pd.Series(self.rows, index=values).groupby(level=0, sort=True).sum()


#: Within ``counts_shared``: ("strata", data's name, keys) -> its Strata, ("groups", data's
#: name, group, keys) -> its ``group_sizes`` and ("keeps partitions", data's name, columns) ->
#: ``key_frame``'s answer, so a run counts (and optimises) each once.
_SHARED: ContextVar[dict | None] = ContextVar("soak_shared_counts", default=None)


@contextmanager
def counts_shared() -> Iterator[None]:
    """Within the block, ``count_strata`` counts the same data by the same keys once: a run's
    steps that need the same counts (K capped by the rarest class, the folds, the classes, a
    draw) share one pass. Scoped to a run, so data rewritten between runs is counted afresh
    (a frame's name identifies its computation, not the files' contents)."""
    token = _SHARED.set({}) if _SHARED.get() is None else None
    try:
        yield
    finally:
        if token is not None:
            _SHARED.reset(token)


def count_strata(
    data: dd.DataFrame,
    keys: list[str] | tuple[str, ...],
    roles: Mapping[str, str] | None = None,
) -> Strata:
    """One pass over the key columns: rows per (partition, stratum), refusing missing keys
    and keys of mixed types, naming each by its role in ``roles`` (column -> "label", ...;
    ``Table.key_roles``). Within ``counts_shared``, once per data and keys."""
    keys = tuple(keys)
    return _once(("strata", data._name, keys), lambda: _count_strata(data, keys, roles or {}))


def _once(key: tuple, compute: Callable[[], Any]) -> Any:
    """``compute()``, worked out once per ``key`` within ``counts_shared`` (every time
    outside it)."""
    shared = _SHARED.get()
    if shared is None:
        return compute()
    if key not in shared:
        shared[key] = compute()
    return shared[key]


def group_sizes(data: dd.DataFrame, group: str, keys: list[str] | tuple[str, ...]) -> pd.DataFrame:
    """Rows ``n`` per combination of ``group`` and ``keys`` with rows, refusing missing groups
    (missing keys are kept, for the caller to refuse by their role): one pass over those
    columns. Within ``counts_shared`` the groups of the same data are counted once: a count by
    more keys gives the count by fewer, so a run's checks of its groups (their classes, their
    number) and its group folds share one pass."""
    keys = tuple(keys)
    shared = _SHARED.get()
    if shared is None:
        return _group_sizes(data, group, keys)
    for key, sizes in shared.items():
        if key[:3] == ("groups", data._name, group) and set(keys) <= set(key[3]):
            by = [group, *keys]
            return sizes.groupby(by, dropna=False, observed=True)["n"].sum().reset_index()
    sizes = shared["groups", data._name, group, keys] = _group_sizes(data, group, keys)
    return sizes


def _group_sizes(data: dd.DataFrame, group: str, keys: tuple[str, ...]) -> pd.DataFrame:
    by = [group, *keys]
    sizes = data.groupby(by, dropna=False, observed=True).size(split_out=1).compute()
    sizes = sizes.rename("n").reset_index()
    n_na = int(sizes.loc[sizes[group].isna(), "n"].sum())
    if n_na:
        raise ValueError(f"group column {group!r} has {n_na} missing values; drop or fill them")
    return sizes


def _count_strata(data: dd.DataFrame, keys: tuple[str, ...], roles: Mapping[str, str]) -> Strata:
    if not keys:
        lengths = partition_lengths(data)
        return Strata((), pd.RangeIndex(1), lengths[:, None])
    parts = column_parts(data, list(keys))
    found = dask.compute(*[dask.delayed(_count_part)(p, list(keys)) for p in parts])
    for key in keys:
        n_na = sum(int(f.loc[f[key].isna(), "n"].sum()) for f in found)
        if n_na:
            role = f"{roles[key]} " if key in roles else ""
            raise ValueError(
                f"{role}column {key!r} has {n_na} missing values; drop those rows or fill them "
                "first"
            )
    frames = [f.assign(partition=p) for p, f in enumerate(found)]
    both = pd.concat(frames, ignore_index=True)
    for key in keys:  # before sorting them: 1 and '1' do not sort
        check_one_type(both[key], key, roles.get(key, ""))
    index = _strata_index(both, keys)
    counts = np.zeros((len(parts), len(index)), dtype=np.int64)
    np.add.at(counts, (both["partition"].to_numpy(), _indexer(index, both, keys)), both["n"])
    return Strata(keys, index, counts)


def _count_part(part: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    return part.groupby(keys, observed=True, dropna=False).size().rename("n").reset_index()


def _strata_index(frame: pd.DataFrame, keys: tuple[str, ...]) -> pd.Index:
    unique = frame[list(keys)].drop_duplicates()
    if len(keys) == 1:
        return pd.Index(sorted(unique[keys[0]].tolist()))
    return pd.MultiIndex.from_frame(unique).sort_values()


def _indexer(index: pd.Index, frame: pd.DataFrame, keys: tuple[str, ...]) -> np.ndarray:
    if len(keys) == 1:
        return index.get_indexer(frame[keys[0]])
    return index.get_indexer(pd.MultiIndex.from_frame(frame[list(keys)]))


def ranks(
    codes: np.ndarray, positions: np.ndarray, rows: np.ndarray, seed: int, draw: int, purpose: str
) -> np.ndarray:
    """Each row's rank in draw ``draw``: a seeded random permutation of 0..N_s − 1 of its
    stratum (``rows[s]`` = N_s) applied to its position. The stream is
    ``salt(purpose)``; ranks depend on the seed, draw, stratum and position only.

    Examples
    --------
    >>> r = ranks(np.zeros(10, int), np.arange(10), np.array([10]), 1, 1, "doc")
    >>> sorted(r.tolist()) == list(range(10))
    True
    """
    rows = np.asarray(rows, dtype=np.int64)
    bits = np.ceil(np.log2(np.maximum(rows, 4))).astype(np.int64)
    half = ((bits + 1) // 2).astype(np.uint64)
    strata = np.arange(len(rows), dtype=np.uint64)
    keys = np.stack(
        [seeded_hash(seed, salt(purpose), np.uint64(draw), strata, np.uint64(r)) for r in
         range(ROUNDS)], axis=1,
    )  # fmt: skip
    codes = np.asarray(codes, dtype=np.int64)
    x = np.asarray(positions, dtype=np.uint64)
    return _permute(x, codes, rows.astype(np.uint64), half, keys ^ seeded_hash(0))


@njit(cache=True, nogil=True)
def _permute(x, codes, rows, half, keys):  # pragma: no cover - numba
    """A balanced Feistel network on 2·half bits of each stratum (a bijection of
    0..4^half − 1), walked again while the value is not below the stratum's rows."""
    out = np.empty(len(x), dtype=np.int64)
    for i in range(len(x)):
        s = codes[i]
        h = half[s]
        mask = (np.uint64(1) << h) - np.uint64(1)
        y = x[i]
        while True:
            left, right = y >> h, y & mask
            for r in range(keys.shape[1]):
                left, right = right, left ^ (_mix(right ^ keys[s, r]) & mask)
            y = (left << h) | right
            if y < rows[s]:
                break
        out[i] = np.int64(y)
    return out


@njit(cache=True, nogil=True)
def _mix(x):  # pragma: no cover - numba
    """splitmix64's finaliser (``soak_dask.hashing``), on one uint64."""
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def group_strata(sizes: pd.DataFrame, group: str, keys: list[str]) -> pd.DataFrame:
    """One row per group: ``group``, ``stratum`` (its combination of ``keys``, those keys a
    group never spans) and ``n`` rows, from rows ``n`` per (group, keys)."""
    keep = [k for k in keys if not sizes.groupby(group, observed=True)[k].nunique().gt(1).any()]
    rows = sizes.groupby(group, observed=True)["n"].sum()
    stratum = np.zeros(len(rows), dtype=np.int64)
    if keep:
        first = sizes.drop_duplicates(group).set_index(group)[keep].reindex(rows.index)
        stratum = first.groupby(keep, observed=True).ngroup().to_numpy(np.int64)
    return pd.DataFrame({"group": rows.index.to_numpy(), "stratum": stratum, "n": rows.to_numpy()})


def draw_groups(
    groups: pd.DataFrame, share: float, seed: int, draw: int, purpose: str
) -> pd.Series:
    """Whether each group (``group_strata``'s rows) is drawn, indexed by group value.

    Each stratum's groups are put in a seeded random order and each group placed at the
    middle of its rows' span within its stratum (0..1); all groups are then taken in order
    of that place, and the prefix whose rows come nearest share·N is drawn. Every stratum so
    gives a prefix of its own order of about share of its rows, and the total is within half
    a group of share·N.
    """
    hashed = pd.util.hash_array(groups["group"].to_numpy())
    tie = seeded_hash(seed, salt(purpose), np.uint64(draw), hashed)
    order = groups.assign(_tie=tie).sort_values(["stratum", "_tie"])
    n = order["n"].to_numpy(np.float64)
    per = order.groupby("stratum")["n"]
    place = (per.cumsum().to_numpy() - n / 2) / per.transform("sum").to_numpy()
    order = order.assign(_place=place).sort_values(["_place", "_tie"])
    cum = np.concatenate([[0], np.cumsum(order["n"].to_numpy())])
    take = int(np.argmin(np.abs(cum - share * cum[-1])))
    drawn = np.zeros(len(order), dtype=bool)
    drawn[:take] = True
    return pd.Series(drawn, index=order["group"].to_numpy()).sort_index()


def add_draws(
    data: dd.DataFrame,
    share: float,
    seed: int,
    *,
    names: list[str],
    keys: list[str],
    group: str | None = None,
    purpose: str,
    option: str,
    draws: list[int] | None = None,
    roles: Mapping[str, str] | None = None,
) -> tuple[dd.DataFrame, np.ndarray]:
    """``data`` with an int8 column per name of ``names`` (draws 1, 2, ... or ``draws``): 1
    for a drawn row, 0 for the others -- ``share`` of the rows of each stratum of ``keys``
    (of the groups' rows, whole groups, with ``group``) -- and the share of the rows each
    draw took.

    One pass counts the strata (the groups); every column is then added in one pass of the
    workers. ``option`` names the share in a refusal, ``roles`` the key columns (as for
    ``count_strata``).
    """
    draws = list(range(1, len(names) + 1)) if draws is None else draws
    if group is not None:
        return _group_draws(data, share, seed, dict(zip(names, draws, strict=True)), keys,
                            group, purpose, option)  # fmt: skip
    strata = count_strata(data, keys, roles)
    sizes = share_sizes(strata.rows, share, seed)
    total = int(strata.rows.sum())
    check_sides(total, int(sizes.sum()), share, option)
    meta = with_columns(data._meta, {n: np.zeros(0, np.int8) for n in names})
    named = dict(zip(names, draws, strict=True))
    out = data.map_partitions(_draw_part, strata, sizes, seed, purpose, named, meta=meta)
    return out, np.full(len(names), sizes.sum() / total)


def _draw_part(
    part: pd.DataFrame,
    strata: Strata,
    sizes: np.ndarray,
    seed: int,
    purpose: str,
    names: dict[str, int],
    partition_info: dict | None = None,
) -> pd.DataFrame:
    number = partition_info["number"] if partition_info else 0
    masks = drawn_rows(part, number, strata, sizes, seed, purpose, list(names.values()))
    return with_columns(part, dict(zip(names, masks, strict=True)))


def drawn_rows(
    part: pd.DataFrame,
    number: int,
    strata: Strata,
    sizes: np.ndarray,
    seed: int,
    purpose: str,
    draws: list[int],
) -> list[np.ndarray]:
    """For each draw of ``draws``, 1 for partition ``number``'s drawn rows, else 0 (int8)."""
    codes, positions = strata.positions(part, number)
    return [
        (ranks(codes, positions, strata.rows, seed, d, purpose) < sizes[codes]).astype(np.int8)
        for d in draws
    ]


def _group_draws(
    data: dd.DataFrame,
    share: float,
    seed: int,
    names: dict[str, int],
    keys: list[str],
    group: str,
    purpose: str,
    option: str,
) -> tuple[dd.DataFrame, np.ndarray]:
    groups = group_strata(group_sizes(data, group, keys), group, keys)
    index = pd.Index(sorted(groups["group"]))
    codes = np.zeros((len(index), len(names)), dtype=np.int8)
    rows = groups.set_index("group")["n"].reindex(index).to_numpy()
    used = np.zeros(len(names))
    for j, draw in enumerate(names.values()):
        drawn = draw_groups(groups, share, seed, draw, purpose).reindex(index).to_numpy()
        check_sides(len(index), int(drawn.sum()), share, option, f"groups of {group!r}")
        codes[:, j] = drawn
        used[j] = rows[drawn].sum() / rows.sum()
    return map_groups(data, group, index, codes, list(names)), used


def map_groups(
    data: dd.DataFrame, group: str, index: pd.Index, codes: np.ndarray, names: list[str]
) -> dd.DataFrame:
    """``data`` with the columns ``names``: row r of ``codes`` for the rows of group index[r]."""
    meta = with_columns(data._meta, {n: np.zeros(0, codes.dtype) for n in names})
    return data.map_partitions(_group_part, group, index, codes, names, meta=meta)


def _group_part(
    part: pd.DataFrame, group: str, index: pd.Index, codes: np.ndarray, names: list[str]
) -> pd.DataFrame:
    at = index.get_indexer(part[group])
    if (at < 0).any():
        raise RuntimeError(f"rows of unknown groups of {group!r}: the table changed; reload it")
    return with_columns(part, dict(zip(names, codes[at].T, strict=True)))


def with_columns(frame: pd.DataFrame, columns: dict) -> pd.DataFrame:
    """``frame`` with ``columns`` added (or replaced) in one step: one ``assign`` per column
    would fragment a frame given a hundred keys, and every later row selection be slow."""
    new = pd.DataFrame(columns, index=frame.index)
    return pd.concat([frame.drop(columns=[c for c in columns if c in frame]), new], axis=1)
