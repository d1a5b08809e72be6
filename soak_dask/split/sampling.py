"""Train/test sampling methods of the balanced-sampling paper, each computed on the cluster.

``../shared/seeds/004_balanced_sampling.txt`` compares ways of cutting a table into a training
set of share t and a test set: random sampling, stratified sampling (section 2), clustering-based
sampling (Algorithm 1), the most descriptive compound method MDC (Algorithm 2), D-optimal
sampling (Algorithm 3) and the proposed balanced sampling by degree of overlap (section 3.2,
Algorithm 4; ``overlap_class`` also balances each class, as its section 5 suggests). Each
function here adds one key column to a ``Table``: 1 for a training row, 0 for a test row (and
``POSITION``, each row's position in the table, which every random choice is keyed on).
``overlap_folds`` deals the same balance into K folds for ``soak`` and ``evaluate``.

Every "randomly choose t·N_s rows of group s" is an exact-size simple random sample: the
exact-share draw of ``soak_dask.split.shares`` (the one draw ``evaluate`` and
``split_sensitivity`` use too), from one pass counting each partition's rows per group. Group
sizes are rounded by largest remainder, so the training set holds round(t·N) rows in all, and
the split depends on the seed and the rows only -- not on the partitioning or the workers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
from numba import njit
from scipy.spatial.distance import cdist

from ..option_checks import checked
from ..reduction import tree_reduce
from ..tables.arrays import category_codes, float_array
from ..tables.checks import check_classes
from ..tables.table import Table, check_table
from ..user_warning import warn_user
from .overlap import (
    DEFAULT_K,
    DO_COLUMN,
    POSITION,
    attach,
    check_classification,
    degree_frame,
    ensure_positions,
    feature_scaling,
    label_counts,
    overlap_levels,
)
from .shares import (
    add_draws,
    check_sides,
    count_strata,
    drawn_rows,
    share_sizes,
)

#: The methods, by the names ``compare_sampling`` takes.
METHODS = ("random", "stratified", "clustering", "mdc", "doptimal", "overlap", "overlap_class")
#: MDC ranks all pairs of rows (cubic work): above this many rows it runs on a sample.
MDC_MAX_ROWS = 2000
#: k-means is fitted on a seeded class-stratified sample of at most this many rows.
KMEANS_MAX_ROWS = 20_000
#: Random candidate training sets of D-optimal sampling (the paper's nRepeat).
D_OPTIMAL_REPEATS = 100
#: The column of a group code 0..S-1 while a split is drawn.
STRATUM = "__soak_stratum__"
_SAMPLED = "__soak_sampled__"


def check_ratio(train_ratio: Any) -> float:
    """``train_ratio`` as a float strictly between 0 and 1."""
    ok = isinstance(train_ratio, float | int) and not isinstance(train_ratio, bool)
    if not ok or not 0 < train_ratio < 1:
        raise ValueError(f"train_ratio={train_ratio!r}: need a share between 0 and 1, e.g. 0.7")
    return float(train_ratio)


def hash_split(
    table: Table,
    train_ratio: float,
    seed: int,
    purpose: str,
    columns: list[str],
    strata: str | None = None,
) -> Table:
    """Add one key column per name of ``columns``: independent exact-size simple random
    samples of share ``train_ratio`` of the rows of each group (``strata``: a column of group
    codes; None: all rows one group), 1 for training rows, 0 for test rows
    (``soak_dask.split.shares.add_draws``), and ``POSITION``.

    ``purpose`` names the random stream (``salt("sampling:" + purpose)``).
    """
    table = ensure_positions(table)
    data, _ = add_draws(
        table.data,
        train_ratio,
        seed,
        names=columns,
        keys=[strata] if strata else [],
        purpose=f"sampling:{purpose}",
        option="train_ratio",
    )
    return replace(table, data=data, files=None)


def _with_codes(table: Table, make: Callable[[pd.DataFrame], np.ndarray]) -> Table:
    """``table`` with ``STRATUM`` = ``make(partition)``."""

    def add(part: pd.DataFrame) -> pd.DataFrame:
        return part.assign(**{STRATUM: np.asarray(make(part), dtype=np.int64)})

    meta = table.data._meta.assign(**{STRATUM: np.int64(0)})
    return replace(table, data=table.data.map_partitions(add, meta=meta), files=None)


def _keep(table: Table, original: Table, column: str) -> Table:
    """``table``'s data reduced to ``original``'s columns, the position and ``column``."""
    keep = [c for c in original.data.columns if c not in (POSITION, column)]
    return replace(table, data=table.data[[*keep, POSITION, column]])


def classes_of(table: Table) -> pd.Index:
    """The sorted class labels of ``table``, from its rows per class (one pass over the label
    column, shared within a run with the draws that count the same; missing labels refused)."""
    classes = pd.Index(label_counts(table).index)
    check_classes(classes, table.label)
    return classes


# --- the methods -------------------------------------------------------------------------------


@checked("compare-sampling", only=("seed",))
def random_split(
    table: Table, train_ratio: float = 0.7, seed: int = 1, *, column: str = "train"
) -> Table:
    """Random sampling (the paper's section 2): round(t·N) training rows drawn at random.

    Examples
    --------
    >>> import pandas as pd, soak_dask as sd
    >>> df = pd.DataFrame({"b1": range(10), "y": list("aabbbbbbbb")})
    >>> split = random_split(sd.load_table(df, label="y"), 0.7, seed=1)
    >>> int(split.data["train"].sum().compute())
    7
    """
    _check(table, "random_split")
    return hash_split(table, check_ratio(train_ratio), seed, "random", [column])


@checked("compare-sampling", only=("seed",))
def random_splits(table: Table, train_ratio: float, seed: int, columns: list[str]) -> Table:
    """``len(columns)`` independent random splits (for the AEV), one key column each."""
    _check(table, "random_splits")
    return hash_split(table, check_ratio(train_ratio), seed, "aev", columns)


@checked("compare-sampling", only=("seed",))
def stratified_split(
    table: Table, train_ratio: float = 0.7, seed: int = 1, *, column: str = "train"
) -> Table:
    """Stratified sampling (section 2): the share t of each class, drawn at random."""
    _check(table, "stratified_split")
    ratio = check_ratio(train_ratio)
    classes = classes_of(table)
    coded = _with_codes(table, lambda part: category_codes(part[table.label], classes))
    split = hash_split(coded, ratio, seed, "stratified", [column], STRATUM)
    return _keep(split, table, column)


@checked("compare-sampling", only=("seed",))
def clustering_split(
    table: Table,
    train_ratio: float = 0.7,
    seed: int = 1,
    *,
    column: str = "train",
    n_clusters: int | None = None,
    max_rows: int = KMEANS_MAX_ROWS,
) -> Table:
    """Clustering-based sampling (Algorithm 1): k-means with k = the number of classes (or
    ``n_clusters``) on the standardised features, then the share t of each cluster at random.

    k-means is fitted (scikit-learn's ``KMeans``, 10 starts) on a seeded class-stratified
    sample of at most ``max_rows`` rows -- all rows of a smaller table -- and each partition's
    rows are then assigned to their nearest centre on the cluster.
    """
    from sklearn.cluster import KMeans

    _check(table, "clustering_split")
    ratio = check_ratio(train_ratio)
    classes = classes_of(table)
    k = len(classes) if n_clusters is None else int(n_clusters)
    mean, sd, _ = feature_scaling(table)
    sample = sample_rows(table, max_rows, seed, classes, "k-means")
    X = (float_array(sample, table.features) - mean) / sd
    model = KMeans(n_clusters=min(k, len(X)), n_init=10, random_state=seed).fit(X)

    def clusters(part: pd.DataFrame) -> np.ndarray:
        return model.predict((float_array(part, table.features) - mean) / sd)

    coded = _with_codes(ensure_positions(table), clusters)
    split = hash_split(coded, ratio, seed, "clustering", [column], STRATUM)
    return _keep(split, table, column)


@checked("compare-sampling", only=("seed",))
def mdc_split(
    table: Table,
    train_ratio: float = 0.7,
    seed: int = 1,
    *,
    column: str = "train",
    max_rows: int = MDC_MAX_ROWS,
) -> Table:
    """Most descriptive compound sampling (Algorithm 2, after Hudson et al.).

    Repeatedly, among the rows not yet chosen, each row ranks the others by distance; a row's
    information value is the sum over the other rows of 1 / (its rank in their list); the row
    of largest value joins the training set, until it holds round(t·N) rows. Distances are
    Euclidean on standardised features; ties go to the earlier row.

    The work is cubic in rows: above ``max_rows`` rows, MDC runs on a seeded class-stratified
    sample of ``max_rows`` rows (with a warning) and every other row takes the side of its
    nearest sampled row. That changes the method (MDC chooses among the sample only, and the
    other rows follow by nearest neighbour), so the split's scores are not those of MDC over
    the whole table; the warning says so, with the sample's size.
    """
    _check(table, "mdc_split")
    ratio = check_ratio(train_ratio)
    classes = classes_of(table)
    mean, sd, lengths = feature_scaling(table)
    rest = (
        "; every other row takes the side of its nearest sampled row. This changes the method: "
        f"the split is MDC's choice among {max_rows:,} sampled rows extended by nearest "
        "neighbour, not MDC over all rows, so its accuracy and MAI are not those of the paper's "
        "MDC (raise max_rows, compare_sampling's mdc_max_rows, to sample more rows: the work is "
        "cubic in rows)"
    )
    sample = sample_rows(table, max_rows, seed, classes, "MDC", rest)
    X = (float_array(sample, table.features) - mean) / sd
    chosen = mdc_select(cdist(X, X, "sqeuclidean"), int(round(ratio * len(X))))
    side = np.zeros(len(X), dtype=np.int8)
    side[chosen] = 1
    sampled = len(sample) < int(lengths.sum())
    table = ensure_positions(table)
    meta = table.data._meta.assign(**{column: np.int8(0)})
    data = table.data.map_partitions(
        _nearest_side,
        sample[POSITION].to_numpy(),
        X,
        side,
        sampled,
        mean,
        sd,
        table.features,
        column,
        meta=meta,
    )
    return replace(table, data=data, files=None)


def _nearest_side(
    part: pd.DataFrame,
    positions: np.ndarray,
    X: np.ndarray,
    side: np.ndarray,
    sampled: bool,
    mean: np.ndarray,
    sd: np.ndarray,
    features: tuple[str, ...],
    column: str,
) -> pd.DataFrame:
    """The side of each row: its own if it was in MDC's rows, else its nearest sampled row's."""
    at = np.searchsorted(positions, part[POSITION].to_numpy())
    at = np.minimum(at, len(positions) - 1)
    own = positions[at] == part[POSITION].to_numpy()
    out = np.where(own, side[at], 0).astype(np.int8)
    if sampled and not own.all():
        from sklearn.neighbors import NearestNeighbors

        rest = (float_array(part.loc[~own], features) - mean) / sd
        nearest = NearestNeighbors(n_neighbors=1).fit(X).kneighbors(rest, return_distance=False)
        out[~own] = side[nearest[:, 0]]
    return part.assign(**{column: out})


def mdc_select(distances: np.ndarray, n_take: int) -> np.ndarray:
    """Indices of the rows MDC chooses, in order (Algorithm 2), from squared distances.

    Examples
    --------
    >>> x = np.array([0.0, 1.0, 2.0, 10.0])
    >>> mdc_select((x[:, None] - x[None, :]) ** 2, 2).tolist()
    [1, 2]
    """
    # rank[i, j]: rank of row i's distance in column j (1 = j itself), ties by index.
    order = np.argsort(distances, axis=0, kind="stable")
    rank = np.empty(distances.shape, dtype=np.int64)
    np.put_along_axis(rank, order, np.arange(1, len(distances) + 1)[:, None], axis=0)
    return _mdc_loop(rank, int(n_take))


@njit(cache=True, nogil=True)
def _mdc_loop(rank: np.ndarray, n_take: int) -> np.ndarray:  # pragma: no cover - numba
    """Choose ``n_take`` rows, updating ranks and information values as rows leave."""
    m = rank.shape[0]
    value = np.zeros(m)
    for i in range(m):
        for j in range(m):
            value[i] += 1.0 / rank[i, j]
    active = np.ones(m, dtype=np.bool_)
    chosen = np.empty(n_take, dtype=np.int64)
    for step in range(n_take):
        best = -1
        for i in range(m):
            if active[i] and (best < 0 or value[i] > value[best]):
                best = i
        chosen[step] = best
        active[best] = False
        for j in range(m):
            if not active[j] and j != best:
                continue
            cut = rank[best, j]
            for i in range(m):
                if not active[i]:
                    continue
                if j == best:  # its column leaves: it ranks nobody any more
                    value[i] -= 1.0 / rank[i, j]
                elif rank[i, j] > cut:  # the row that left was closer to j than i is
                    value[i] += 1.0 / (rank[i, j] - 1) - 1.0 / rank[i, j]
                    rank[i, j] -= 1
    return chosen


@checked("compare-sampling", only=("seed",))
def doptimal_split(
    table: Table,
    train_ratio: float = 0.7,
    seed: int = 1,
    *,
    column: str = "train",
    n_repeats: int = D_OPTIMAL_REPEATS,
) -> Table:
    """D-optimal sampling as the paper's Algorithm 3 defines it: of ``n_repeats`` random
    training sets of round(t·N) rows, the one whose features X maximise det(XᵀX).

    XᵀX of every candidate is summed over the partitions in one pass, so the method is linear
    in rows and runs on the whole table (features are divided by their SD first, which scales
    every determinant alike). The log-determinant is compared, so large tables do not overflow.
    """
    _check(table, "doptimal_split")
    ratio = check_ratio(train_ratio)
    if isinstance(n_repeats, bool) or not isinstance(n_repeats, int) or n_repeats < 1:
        raise ValueError(f"n_repeats={n_repeats!r}: need a positive integer")
    _, sd, _ = feature_scaling(table)
    table = ensure_positions(table)
    strata = count_strata(table.data, [])
    sizes = share_sizes(strata.rows, ratio, seed)
    check_sides(int(strata.rows.sum()), int(sizes.sum()), ratio, "train_ratio")
    purpose = "sampling:doptimal"
    grams = [
        dask.delayed(_grams, pure=True)(
            part, number, strata, sizes, seed, purpose, n_repeats, sd, table.features
        )
        for number, part in enumerate(table.data[list(table.features)].to_delayed())
    ]
    (total,) = tree_reduce(grams, _sum, 8)
    sign, logdet = np.linalg.slogdet(dask.compute(total)[0])
    best = int(np.argmax(np.where(sign > 0, logdet, -np.inf)))
    data, _ = add_draws(
        table.data, ratio, seed, names=[column], keys=[], purpose=purpose,
        option="train_ratio", draws=[best + 1],
    )  # fmt: skip
    return replace(table, data=data, files=None)


def _grams(
    part: pd.DataFrame,
    number: int,
    strata: Any,
    sizes: np.ndarray,
    seed: int,
    purpose: str,
    n_repeats: int,
    sd: np.ndarray,
    features: tuple[str, ...],
) -> np.ndarray:
    """XᵀX of the partition's training rows of every candidate split: (splits, p, p)."""
    X = float_array(part, features) / sd
    masks = drawn_rows(part, number, strata, sizes, seed, purpose, list(range(1, n_repeats + 1)))
    return np.stack([X[m == 1].T @ X[m == 1] for m in masks])


def _sum(items: list[np.ndarray]) -> np.ndarray:
    return np.sum(items, axis=0)


@checked("compare-sampling", only=("seed",))
def overlap_split(
    table: Table,
    train_ratio: float = 0.7,
    seed: int = 1,
    *,
    column: str = "train",
    k: int = DEFAULT_K,
    n_levels: int | None = None,
    by_class: bool = False,
    method: str = "exact",
    degrees: dd.DataFrame | None = None,
) -> Table:
    """Balanced sampling by degree of overlap (section 3.2, Algorithm 4).

    Each row's degree of overlap (how many of its k nearest neighbours are of another class,
    ``soak_dask.split.overlap``) puts it in one of k + 1 levels (or ``n_levels``, the top
    degrees pooled: ``overlap_levels``); the share t of each level -- of each level × class
    with ``by_class``, the combination with stratified sampling of the paper's section 5 -- is
    drawn at random. ``degrees``: the ``POSITION`` and ``DO_COLUMN`` of the table's rows,
    partition by partition, from ``overlap_degrees`` with the same ``k`` (then not searched
    again; ``method`` is ignored).
    """
    _check(table, "overlap_split")
    ratio = check_ratio(train_ratio)
    table = ensure_positions(table)
    if degrees is None:
        degrees = degree_frame(table, k, method, seed)
    small = attach(replace(table, data=table.data[[table.label]]), degrees)
    coded, n_groups = overlap_strata(small, k, n_levels, by_class)
    purpose = "overlap_class" if by_class else "overlap"
    split = hash_split(coded, ratio, seed, purpose, [column], STRATUM)
    return attach(table, split.data[[column]])


def overlap_strata(table: Table, k: int, n_levels: int | None, by_class: bool) -> tuple[Table, int]:
    """``table`` (holding ``DO_COLUMN``) with ``STRATUM`` = its overlap level (× class with
    ``by_class``), and the number of strata."""
    level = overlap_levels(k, n_levels)
    n_level = int(level.max()) + 1
    classes = classes_of(table) if by_class else pd.Index([0])

    def codes(part: pd.DataFrame) -> np.ndarray:
        own = level[part[DO_COLUMN].to_numpy(np.int64)]
        return own * len(classes) + (category_codes(part[table.label], classes) if by_class else 0)

    return _with_codes(table, codes), n_level * len(classes)


#: Each method's function, by name.
SPLITTERS: dict[str, Callable[..., Table]] = {
    "random": random_split,
    "stratified": stratified_split,
    "clustering": clustering_split,
    "mdc": mdc_split,
    "doptimal": doptimal_split,
    "overlap": overlap_split,
    "overlap_class": lambda table, ratio, seed, **kw: overlap_split(
        table, ratio, seed, by_class=True, **kw
    ),
}


def sample_rows(
    table: Table, n: int, seed: int, classes: pd.Index, what: str, rest: str = ""
) -> pd.DataFrame:
    """All rows of ``table`` when it has at most ``n``, else a seeded class-stratified sample
    of ``n`` rows, in table order, on the client; the warning then says that ``what`` runs on
    the sample (and ``rest``: what becomes of the other rows)."""
    total = int(label_counts(table).partition_rows.sum())
    table = ensure_positions(table)
    columns = [*table.features, table.label, POSITION]
    if total <= n:
        return table.data[columns].compute().sort_values(POSITION)
    warn_user(
        f"{what} needs all rows in one place and the table has {total:,} rows: it runs on a "
        f"seeded class-stratified sample of {n:,} rows (max_rows={n}){rest}"
    )
    coded = _with_codes(table, lambda part: category_codes(part[table.label], classes))
    picked = hash_split(coded, n / total, seed, f"sample:{what}", [_SAMPLED], STRATUM)
    rows = picked.data.loc[picked.data[_SAMPLED] == 1, columns]
    return rows.compute().sort_values(POSITION)


def _check(table: Table, caller: str) -> None:
    check_table(table, caller)
    check_classification(table, caller)
