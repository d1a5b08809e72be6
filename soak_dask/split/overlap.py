"""Degree of overlap: for each row, how many of its k nearest neighbours belong to another class.

Definition 2 of the balanced-sampling paper (``../shared/seeds/004_balanced_sampling.txt``,
section 3.1-3.2; after Lee et al.'s R-value): ``DO(P_i) = #{P_j in KNearest(P_i): C_j != C_i}``,
from 0 (deep inside its class) to k (surrounded by other classes). Balanced sampling groups the
rows by DO into k + 1 levels (``overlap_levels`` can pool the highest degrees into one).

Neighbours are found on the cluster, **exactly**, block by block: every partition's rows are
compared with every partition's rows (one task per pair, holding two partitions), each task
keeps its k best candidates per row, and a tree of merges keeps the k best over all blocks.
Memory stays at two partitions per task; the work is quadratic in rows (see
``docs/balanced_sampling.md`` for the measured cost and the comparison with pynndescent, an
approximate index, which is offered as ``method="nndescent"`` for a table that fits in one
worker's memory). Distances are Euclidean on features standardised by their mean and SD, and
ties are broken by the row's position in the table, so the degrees depend on the data only --
not on the partitioning or the workers.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
from numba import njit

from ..dask_client import current_client
from ..reduction import tree_reduce
from ..tables.arrays import category_codes, float_array
from ..tables.table import Table
from ..workers import worker_memory
from .bucket_neighbours import bucket_neighbour_codes
from .fold_options import check_seed
from .neighbours import insert_best, squares
from .shares import Strata, count_strata, partition_starts, with_columns

#: The column of each row's degree of overlap (int8, 0..k).
DO_COLUMN = "__soak_overlap__"
#: Rows' positions in the table: the key of every seeded choice and of ties between neighbours.
POSITION = "__soak_position__"
#: k of the paper's Figure 6, and the default here.
DEFAULT_K = 5
#: Largest k: degrees are stored as int8.
MAX_K = 100
#: Reference rows per tile of the distance loop (their features stay in cache).
_TILE = 2048
_BIG = np.iinfo(np.int64).max
#: Distances keep 28 of float64's 52 mantissa bits (``block_candidates``).
_FINE = 2**24

Method = Literal["exact", "nndescent", "blockwise"]
#: The neighbour searches of ``overlap_degrees`` (``Method``), for every check of a method name.
SEARCHES = ("exact", "nndescent", "blockwise")


def check_k(k: Any, name: str = "k") -> int:
    """``k`` as an int from 1 to ``MAX_K`` (messages call the option ``name``)."""
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or not 1 <= k <= MAX_K:
        raise ValueError(f"{name}={k!r}: need an integer number of neighbours from 1 to {MAX_K}")
    return int(k)


def check_classification(table: Table, caller: str) -> None:
    """Refuse a regression table: classes are what overlap and accuracy are about."""
    if table.task != "classification":
        raise ValueError(
            f"{caller} compares class labels (overlap of classes, accuracy) and the label "
            f"{table.label!r} of {table.source} is numeric (task='regression'); load a class "
            "label, or pass task='classification' to load_table if its values are classes"
        )


def feature_scaling(table: Table) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean and SD of each feature, from one pass on the cluster; and the row count per
    partition.

    Rounded to 10 significant digits: sums over partitions differ in their last bits with
    the partitioning, and rounding makes every distance, and so every tie between
    neighbours, the same whatever the partitioning. Missing or infinite feature values are
    refused (a distance needs every feature). A constant feature gets SD 1.
    """
    # float64 sums: float32 bands summed in float32 differ by ~1e-7 with the partitioning
    values = table.data[list(table.features)].astype(np.float64)
    bad = (~np.isfinite(values)).sum()
    lengths = table.data.map_partitions(len)
    mean, sd, n_bad, rows = dask.compute(values.mean(), values.std(), bad, lengths)
    missing = {c: int(n) for c, n in n_bad.items() if n}
    if missing:
        raise ValueError(
            f"feature columns {list(missing)} have missing or infinite values "
            f"({list(missing.values())} rows); distances need every feature: drop or fill "
            "those rows, or leave those columns out of features"
        )
    mean = np.array([float(f"{v:.10g}") for v in mean.to_numpy()])
    sd = np.array([float(f"{v:.10g}") if v > 0 else 1.0 for v in sd.fillna(0).to_numpy()])
    return mean, sd, rows.to_numpy()


def with_positions(table: Table, lengths: np.ndarray) -> Table:
    """``table`` with ``POSITION``: each row's 0-based position in the table (from the rows per
    partition ``lengths``)."""
    offsets = partition_starts(lengths)
    data = table.data.map_partitions(
        _position_part, offsets, meta=table.data._meta.assign(**{POSITION: np.int64(0)})
    )
    return replace(table, data=data, files=None)


def _position_part(
    part: pd.DataFrame, offsets: np.ndarray, partition_info: dict | None = None
) -> pd.DataFrame:
    start = offsets[partition_info["number"]] if partition_info else 0
    return part.assign(**{POSITION: np.arange(start, start + len(part), dtype=np.int64)})


def block_arrays(
    part: pd.DataFrame,
    features: tuple[str, ...],
    label: str,
    classes: pd.Index,
    mean: np.ndarray,
    sd: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One partition as (standardised features, class codes, positions)."""
    X = (float_array(part, features) - mean) / sd
    return X, category_codes(part[label], classes), part[POSITION].to_numpy(np.int64)


def block_candidates(
    query: tuple[np.ndarray, ...], ref: tuple[np.ndarray, ...], k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The k nearest rows of ``ref`` to each row of ``query`` (a row is never its own
    neighbour): squared distances, positions and class codes, each (n_query, k), ordered by
    (distance, position); missing candidates (``ref`` too small) have distance inf.

    Every distance is computed exactly, Σ (q − r)² in feature order, by a compiled loop over
    tiles of ``ref`` (no rounded shortcut such as |q|² + |r|² − 2 q·r, whose errors would make
    the neighbours depend on the blocks), then cut to 28 significant bits: distances that
    differ only by rounding (ties of the unscaled data, after standardising) are equal, and
    ordered by position.
    """
    Xq, _, Pq = query
    Xr, Cr, Pr = ref
    found, dist = _nearest(np.ascontiguousarray(Xq), Pq, np.ascontiguousarray(Xr.T), Pr, k, _TILE)
    missing = found < 0
    pos = np.where(missing, _BIG, Pr[np.maximum(found, 0)] if len(Pr) else _BIG)
    codes = np.where(missing, -1, Cr[np.maximum(found, 0)] if len(Cr) else -1)
    return dist, pos, codes


@njit(cache=True, nogil=True, fastmath={"contract"})
def _nearest(
    Xq: np.ndarray, Pq: np.ndarray, XrT: np.ndarray, Pr: np.ndarray, k: int, tile: int
) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - numba
    """Indices (into ``ref``; -1: none) and distances of each query row's k nearest."""
    nq = Xq.shape[0]
    nr = XrT.shape[1]
    best = np.full((nq, k), -1, dtype=np.int64)
    dist = np.full((nq, k), np.inf)
    key = np.full((nq, k), _BIG, dtype=np.int64)  # the candidates' positions: ties
    s = np.empty(tile)
    bits = s.view(np.uint64)
    mask = ~np.uint64(_FINE - 1)
    for start in range(0, nr, tile):  # a tile of ref rows stays in cache for every query row
        stop = min(start + tile, nr)
        for i in range(nq):
            squares(Xq[i], XrT, start, stop, s)
            for jj in range(stop - start):
                bits[jj] &= mask
                j = start + jj
                if s[jj] <= dist[i, k - 1] and Pr[j] != Pq[i]:  # most fail here, without a call
                    insert_best(dist, key, best, i, s[jj], Pr[j], j)
    return best, dist


def merge_candidates(items: list[tuple[np.ndarray, ...]]) -> tuple[np.ndarray, ...]:
    """The k best of several blocks' candidates, by (distance, position)."""
    d, p, c = (np.hstack(parts) for parts in zip(*items, strict=True))
    k = items[0][0].shape[1]
    order = np.lexsort((p, d), axis=-1)[:, :k]
    return tuple(np.take_along_axis(a, order, axis=1) for a in (d, p, c))


def degrees(codes: np.ndarray, neighbour_codes: np.ndarray) -> np.ndarray:
    """Degree of overlap: neighbours (columns of ``neighbour_codes``) of another class.

    Examples
    --------
    >>> degrees(np.array([0, 1]), np.array([[0, 1, 1], [1, 1, 1]])).tolist()
    [2, 0]
    """
    return (neighbour_codes != codes[:, None]).sum(axis=1).astype(np.int8)


def overlap_degrees(
    table: Table,
    k: int = DEFAULT_K,
    *,
    method: Method = "exact",
    seed: int = 1,
    split_every: int = 8,
) -> Table:
    """Add each row's degree of overlap (``DO_COLUMN``, int8 0..k) to ``table``, on the cluster.

    Parameters
    ----------
    table : Table
        A classification table from ``soak_dask.load_table``, without missing features.
    k : int
        Neighbours per row (the paper's Figure 6 uses 5). At most the rows minus one.
    method : {"exact", "nndescent", "blockwise"}
        "exact" (default): block-by-block exact k-NN, quadratic work, memory of two partitions
        per task, the same result whatever the partitioning. "blockwise": approximate k-NN in
        seeded k-means buckets (``split.bucket_neighbours``), linear work, memory of two
        partitions per task, the same result whatever the partitioning (for a large table).
        "nndescent": pynndescent's approximate index, built in one task holding every row (for
        a table that fits in one worker; needs ``pip install pynndescent``).
    seed : int
        Seed of the buckets ("blockwise") or of pynndescent's random projections ("nndescent").
    split_every : int
        Fan-in of the merges of candidates ("exact").

    Returns
    -------
    Table
        A copy whose data also holds ``DO_COLUMN`` and ``POSITION`` (0-based row position).
        Compute or persist it once: every use of the lazy column otherwise searches again.

    Examples
    --------
    >>> import pandas as pd, soak_dask as sd
    >>> df = pd.DataFrame({"b1": [0.0, 0.1, 0.2, 1.0, 1.1, 0.15], "y": list("aaabbb")})
    >>> out = overlap_degrees(sd.load_table(df, label="y"), k=2)
    >>> out.data[DO_COLUMN].compute().tolist()
    [1, 1, 1, 1, 1, 2]
    """
    table, found, _ = neighbour_codes(table, k, method, seed, split_every)
    frames = [
        dask.delayed(_attach, pure=True)(part, neighbours)
        for part, neighbours in zip(table.data.to_delayed(), found, strict=True)
    ]
    meta = table.data._meta.assign(**{DO_COLUMN: np.int8(0)})
    data = dd.from_delayed(frames, meta=meta, verify_meta=False)
    return replace(table, data=data, files=None)


def neighbour_codes(
    table: Table, k: int, method: Method, seed: int, split_every: int = 8
) -> tuple[Table, list[Any], np.ndarray]:
    """The search of ``overlap_degrees`` (its parameters): ``table`` with ``POSITION``, per
    partition delayed (class codes, the k neighbours' class codes), and the partitions' rows."""
    check_classification(table, "overlap_degrees")
    k = check_k(k)
    seed = check_seed(seed)
    if method not in SEARCHES:
        raise ValueError(f"method={method!r}: choose one of {', '.join(map(repr, SEARCHES))}")
    mean, sd, lengths = feature_scaling(table)
    if int(lengths.sum()) <= k:
        raise ValueError(
            f"k={k} neighbours need more than {k} rows; the table has {int(lengths.sum())}"
        )
    table = with_positions(table, lengths)
    classes = _classes(table)
    parts = table.data.to_delayed()
    blocks = [
        dask.delayed(block_arrays, pure=True)(part, table.features, table.label, classes, mean, sd)
        for part in parts
    ]
    if method == "exact":
        found = _exact(blocks, k, split_every)
    elif method == "blockwise":
        memory = worker_memory(current_client())  # the groups sized to fit a worker
        found = bucket_neighbour_codes(blocks, lengths, k, seed, memory=memory)
    else:
        found = _nndescent(blocks, lengths, k, seed)
    return table, found, lengths


def _classes(table: Table) -> pd.Index:
    values = table.data[table.label].unique(split_out=1).compute()
    if values.isna().any():
        raise ValueError(f"label column {table.label!r} has missing values; drop those rows")
    return pd.Index(sorted(values.tolist()))


def _exact(blocks: list, k: int, split_every: int) -> list:
    """Per partition, (own codes, neighbours' codes) from the pairwise block tasks."""
    out = []
    for query in blocks:
        level = [dask.delayed(block_candidates, pure=True)(query, ref, k) for ref in blocks]
        (best,) = tree_reduce(level, merge_candidates, split_every)
        out.append(dask.delayed(_codes, pure=True)(query, best))
    return out


def _codes(query: tuple[np.ndarray, ...], best: tuple[np.ndarray, ...]) -> tuple:
    return query[1], best[2]


def _nndescent(blocks: list, lengths: np.ndarray, k: int, seed: int) -> list:
    """Per partition, (own codes, neighbours' codes) from one pynndescent index of every row."""
    graph = dask.delayed(approximate_neighbours, pure=True)(blocks, k, seed)
    ends = np.cumsum(lengths)
    return [
        dask.delayed(_slice_codes, pure=True)(graph, int(end - n), int(end))
        for n, end in zip(lengths, ends, strict=True)
    ]


def approximate_neighbours(
    blocks: list[tuple[np.ndarray, ...]], k: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Every row's class code and its k approximate nearest neighbours' codes (pynndescent).

    The query row is dropped from its own list (or, when duplicates crowd it out, the last
    neighbour is)."""
    try:
        from pynndescent import NNDescent
    except ImportError as err:  # optional: only this method needs it
        raise ImportError(
            "method='nndescent' needs pynndescent: pip install pynndescent (or use the "
            "default method='exact')"
        ) from err
    X = np.vstack([b[0] for b in blocks])
    codes = np.concatenate([b[1] for b in blocks])
    index = NNDescent(X, n_neighbors=k + 1, random_state=seed, n_jobs=1)
    neighbours, _ = index.neighbor_graph
    return codes, codes[without_self(neighbours, k)]


def without_self(neighbours: np.ndarray, k: int) -> np.ndarray:
    """k neighbours per row from k + 1 that may include the row itself.

    Examples
    --------
    >>> without_self(np.array([[0, 2, 1], [2, 0, 1]]), 2).tolist()
    [[2, 1], [2, 0]]
    """
    own = neighbours == np.arange(len(neighbours))[:, None]
    # Drop the row itself where listed, else the farthest neighbour.
    drop = np.where(own.any(axis=1), own.argmax(axis=1), neighbours.shape[1] - 1)
    keep = np.ones(neighbours.shape, dtype=bool)
    keep[np.arange(len(neighbours)), drop] = False
    return neighbours[keep].reshape(len(neighbours), k)


def _slice_codes(graph: tuple[np.ndarray, np.ndarray], start: int, stop: int) -> tuple:
    return graph[0][start:stop], graph[1][start:stop]


def _attach(part: pd.DataFrame, found: tuple[np.ndarray, np.ndarray]) -> pd.DataFrame:
    return part.assign(**{DO_COLUMN: degrees(*found)})


def overlap_levels(k: int, n_levels: int | None = None) -> np.ndarray:
    """The level of each degree of overlap 0..k: the paper's k + 1 groups (``n_levels`` None),
    or ``n_levels`` = L groups 0, 1, ..., L − 2 and "L − 1 or more".

    Pooling the top degrees keeps the levels apart where the rows are (most rows have degree
    0 or 1 on any data set a classifier can learn) and merges the rare, most overlapped rows
    into one level large enough to be split. (Quantile bins of the degrees would do the
    opposite on such a skewed, discrete distribution: merge everything above 0.)

    Parameters
    ----------
    k : int
        Neighbours: the degrees are 0..k.
    n_levels : int, optional
        Number of levels L, from 1 to k + 1.

    Returns
    -------
    ndarray of int
        Level (0-based) of each degree 0..k.

    Examples
    --------
    >>> overlap_levels(5).tolist(), overlap_levels(5, n_levels=3).tolist()
    ([0, 1, 2, 3, 4, 5], [0, 1, 2, 2, 2, 2])
    """
    degrees = np.arange(check_k(k) + 1)
    if n_levels is None:
        return degrees
    if isinstance(n_levels, bool) or not isinstance(n_levels, int | np.integer) or n_levels < 1:
        raise ValueError(f"n_levels={n_levels!r}: need a positive integer, or None")
    return np.minimum(degrees, n_levels - 1)


def ensure_positions(table: Table) -> Table:
    """``table`` with ``POSITION`` (each row's position in the table), added if missing."""
    if POSITION in table.data.columns:
        return table
    return with_positions(table, label_counts(table).partition_rows)


def label_counts(table: Table) -> Strata:
    """Rows per (partition, class) of ``table``: one pass over the label, shared within a run
    by the steps that need its classes, row total or partition lengths."""
    return count_strata(table.data, [table.label], table.key_roles)


def degree_frame(table: Table, k: int = DEFAULT_K, method: str = "exact", seed: int = 1):
    """The rows' positions and degrees of overlap (``POSITION``, ``DO_COLUMN``), computed once
    and kept in cluster memory (a few bytes per row), partition by partition as ``table``'s:
    for ``overlap_split`` and ``overlap_folds`` to share one search (``degrees=``). Made from
    the search's results alone, so the table's partitions are not held until it ends (at 42M
    rows, 4 GB of frames that sat in Dask's spill beside the search's pieces)."""
    _, found, lengths = neighbour_codes(ensure_positions(table), k, method, seed)
    starts = partition_starts(lengths)
    frames = [
        dask.delayed(_degree_part, pure=True)(neighbours, int(start))
        for neighbours, start in zip(found, starts, strict=True)
    ]
    meta = pd.DataFrame({POSITION: np.array([], np.int64), DO_COLUMN: np.array([], np.int8)})
    return dd.from_delayed(frames, meta=meta, verify_meta=False).persist()


def _degree_part(found: tuple[np.ndarray, np.ndarray], start: int) -> pd.DataFrame:
    do = degrees(*found)
    return pd.DataFrame(
        {POSITION: np.arange(start, start + len(do), dtype=np.int64), DO_COLUMN: do}
    )


def attach(table: Table, columns: dd.DataFrame) -> Table:
    """``table`` with the columns of ``columns``, a frame of the same partitions and rows
    (computed from ``table``), joined partition by partition."""
    meta = with_columns(table.data._meta, {c: columns._meta[c] for c in columns.columns})
    data = dd.map_partitions(_attach_part, table.data, columns, align_dataframes=False, meta=meta)
    return replace(table, data=data, files=None)


def _attach_part(part: pd.DataFrame, columns: pd.DataFrame) -> pd.DataFrame:
    if len(part) != len(columns):
        raise RuntimeError(
            "the table's partitions changed while a split was drawn; persist the table "
            "(table.data.persist()) first"
        )
    return with_columns(part, {c: columns[c].to_numpy() for c in columns.columns})
