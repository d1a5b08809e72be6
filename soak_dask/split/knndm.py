"""kNNDM: k-fold nearest-neighbour distance matching (Linnenbrink et al. 2024, GMD 17:5897),
after CAST's ``knndm`` (R/knndm.R, ``clustering = "kmeans"`` or ``"hierarchical"``).

The folds are chosen so that the distances from each CV test point to its nearest training
point (Gj*) are distributed as the distances from the prediction area to the nearest
training point (Gij). Candidates: clusterings of the training coordinates (or standardised
features) for cluster counts from K up to ``max_clusters`` on a log scale -- k-means fitted
per count, or cuts of one Ward tree (``knndm_ward``) -- each merged into K folds as CAST
does (clusters ordered along the first principal component of the points; clusters holding
at least n/K points get a fold each, the others are dealt to the remaining folds in turn);
a candidate with a fold over ``maxp`` of the rows is discarded; the one of smallest
Wasserstein distance W between the two distributions is kept. When the training points are
no more clustered than the prediction area (Gj is not stochastically larger than Gij:
one-sided KS test, p >= 0.05) random folds are kept, as in CAST.

The training points are held in memory (coordinates or features only); the prediction area
is sampled block by block on the workers and only its sample's distances come back. A
row's fold is a function of its own coordinates (nearest chosen centre -> fold; a Ward cut's
fold looked up by the point's hash; a seeded hash for random folds), so the fold column is
computed partition by partition.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import stats as sps
from scipy.spatial import cKDTree

from ..dask_client import current_client
from ..hashing import salt, seeded_hash
from ..tables.table import Table
from ..user_warning import warn_user
from .fold_options import check_clustering
from .kmeans import fit_centres, nearest_centre
from .knndm_merge import merge_clusters, whole_groups
from .knndm_shares import (
    DEFAULT_SAMPLE,
    SCORED,
    Shares,
    check_knndm_options,
    check_prediction,
)
from .knndm_ward import WardTree, check_ward_size, ward_candidates
from .neighbours import (
    TREE_DIMS,
    coords_of,
    loo_distance,
    nearest_in_groups,
    point_hashes,
    reference_points,
    sampled_distances,
    standardiser,
)
from .prediction_area import distance_unit, prediction_parts

Space = Literal["geographical", "feature"]
Clustering = Literal["hierarchical", "kmeans"]
#: Each candidate's k-means is fitted on at most this many training points, and on at most
#: (second number) / clusters of them (at least 5 per cluster), with R's ``iter.max`` of 10
#: passes: a candidate's clusters are then labelled on every point by nearest centre.
CANDIDATE_FIT = (20_000, 4_000_000)
#: ``warn_if_far``: the median prediction -> training distance, in training extents, above
#: which the prediction area is taken to be somewhere else (another CRS, unit, axis order).
FAR_FACTOR = 10


#: The salt of the point hashes that key a hierarchical clustering's folds.
POINT_FOLDS = "knndm_point_folds"


def point_fold_table(raw: np.ndarray, folds: np.ndarray) -> pd.Series:
    """Each distinct training point's fold, keyed by its hash (``Folding.point_folds``); a
    point held by several rows takes its first row's fold."""
    table = pd.Series(folds.astype(np.int64), index=point_hashes(raw, 0, POINT_FOLDS))
    return table[~table.index.duplicated()]


@dataclass(frozen=True)
class Folding:
    """How a point's fold follows from its values: the nearest of ``centres`` and that
    cluster's fold; the fold of a training point of a hierarchical clustering
    (``point_folds``: point hash -> fold, as ``point_fold_table`` makes it); or a seeded hash
    modulo K -- for a random train/test split, the test part (2) where the hash is below
    ``test_cut``; in a grouped table, each group's fold (``group_folds``: group value ->
    fold). A split's rows are named "test" (fold ``test_fold``) and "train". Small: sent to
    every partition."""

    n_folds: int
    seed: int
    centres: np.ndarray | None = None
    fold_of_cluster: np.ndarray | None = None
    transform: tuple[np.ndarray, np.ndarray] | None = None
    group_folds: pd.Series | None = None
    test_cut: int | None = None
    test_fold: int | None = None
    point_folds: pd.Series | None = None

    def folds(self, points: np.ndarray) -> np.ndarray:
        """Folds 1..K of raw ``points`` (coordinates or unscaled features)."""
        if self.point_folds is not None:
            found = self.point_folds.reindex(point_hashes(points, 0, POINT_FOLDS))
            if found.isna().any():
                raise ValueError(
                    f"{int(found.isna().sum()):,} points are not training points of these "
                    "kNNDM folds: a hierarchical clustering's folds are known only for the "
                    "rows it clustered"
                )
            return found.to_numpy(dtype=np.int64)
        if self.centres is None:
            h = point_hashes(points, self.seed, "knndm_random_folds")
            if self.test_cut is not None:
                return np.where(h < np.uint64(self.test_cut), 2, 1).astype(np.int64)
            return (h % np.uint64(self.n_folds)).astype(np.int64) + 1
        if self.transform is not None:
            points = (points - self.transform[0]) / self.transform[1]
        return self.fold_of_cluster[nearest_centre(points, self.centres)]

    def named(self, folds: np.ndarray) -> np.ndarray:
        """``folds`` as the column holds them: 1..K, or a split's "train" and "test"."""
        if self.test_fold is None:
            return folds.astype(np.int64)
        return np.where(folds == self.test_fold, "test", "train").astype(object)


@dataclass(frozen=True)
class KNNDMResult:
    """The folds chosen by ``knndm_folds`` and what chose them.

    Attributes
    ----------
    table : Table
        The training table with the fold column (its fold role): pass it to ``soak`` or
        ``evaluate`` (``outer="cv"`` uses the folds as they are). For a train/test split
        (``test_prop``) the column holds "train" and "test" and is no fold role.
    column : str
        The fold (or split) column.
    W, W_random : float
        Wasserstein distance between Gij and Gj* of the chosen folds, and of random folds
        (a random split with ``test_prop``).
    n_clusters : int or None
        The chosen clustering's number of clusters asked (None: random folds kept).
    method : str
        ``clustering``, or "random CV" when the training points are not clustered with
        respect to the prediction area (``ks_pvalue`` >= 0.05).
    clustering : str
        The clustering of the candidates: "kmeans" or "hierarchical".
    unit : str
        The distances' unit: the CRS's ("metre, EPSG:26911"), "coordinate units" where no CRS
        is known, "standardised feature distance" in feature space.
    Gij, Gj, Gjstar, Gjstar_random : ndarray
        Nearest-neighbour distances prediction sample -> training, training -> other
        training (leave one out), CV test -> train of the chosen folds and of random folds.
    candidates : DataFrame
        One row per cluster count tried: ``n_clusters``, ``W`` (NaN unless the candidate may
        be chosen), ``W_folds`` (W of its folds, eligible or not; NaN only where k-means
        found no such clustering), ``largest_fold`` (share of rows) and ``status``
        ("scored", or why it may not be chosen).
    shares : Shares
        The fold sizes allowed (``maxp``, or the split's ``test_prop`` ± ``test_tolerance``).
    asked : dict
        What ``knndm_folds`` was given that the folds do not tell: ``prediction`` (its path,
        or the kind of object), ``sample`` and ``seed`` (recorded by ``save_knndm``).
    fold_sizes, random_fold_sizes : tuple of int
        Rows per fold 1..K of the folds chosen and of random folds (a split: parts 1 and 2;
        ``test_rows`` is the test part's).
    """

    table: Table
    column: str
    W: float
    W_random: float
    n_clusters: int | None
    method: str
    space: str
    n_folds: int
    ks_pvalue: float
    Gij: np.ndarray = field(repr=False)
    Gj: np.ndarray = field(repr=False)
    Gjstar: np.ndarray = field(repr=False)
    Gjstar_random: np.ndarray = field(repr=False)
    candidates: pd.DataFrame = field(repr=False)
    folding: Folding = field(repr=False)
    fold_sizes: tuple[int, ...] = ()
    unit: str = "coordinate units"
    shares: Shares | None = field(default=None, repr=False)
    random_fold_sizes: tuple[int, ...] = ()
    clustering: str = "kmeans"
    asked: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def test_rows(self) -> int | None:
        """Rows of a split's test part (None for CV folds)."""
        test = self.folding.test_fold
        return None if test is None else self.fold_sizes[test - 1]

    def attrs(self) -> dict[str, Any]:
        """What a result records of the folds (``evaluate``'s attrs)."""
        out = {
            "knndm_W": float(self.W),
            "knndm_W_random": float(self.W_random),
            "knndm_n_clusters": -1 if self.n_clusters is None else int(self.n_clusters),
            "knndm_method": self.method,
            "knndm_clustering": self.clustering,
            "knndm_space": self.space,
            "knndm_unit": self.unit,
            "knndm_ks_pvalue": float(self.ks_pvalue),
            "knndm_prediction_sample": len(self.Gij),
        }
        if self.shares is not None and self.shares.split:
            out["knndm_test_prop"] = self.shares.test_prop
            out["knndm_test_bounds"] = [self.shares.minp, self.shares.maxp]
            out["knndm_test_rows"] = self.test_rows
        return out


#: How ``knndm_note`` names the clusters of each clustering.
CLUSTER_NAMES = {"kmeans": "k-means clusters", "hierarchical": "hierarchical (Ward) clusters"}
#: How a printout or page names the candidates of each clustering.
CANDIDATE_NAMES = {"kmeans": "k-means clusterings", "hierarchical": "cuts of one Ward tree"}


def knndm_note(attrs: dict[str, Any]) -> str:
    """One line on kNNDM's folds from their ``attrs`` (``KNNDMResult.attrs``): the W of the
    folds chosen, and of random folds -- "random folds kept" where they are.

    >>> note = knndm_note({"knndm_W": 35.1, "knndm_W_random": 35.1, "knndm_n_clusters": -1,
    ...                    "knndm_ks_pvalue": 0.31, "knndm_unit": "metre"})
    >>> note.startswith("kNNDM: random folds kept"), note.endswith("W = 35.1 (metre)")
    (True, True)
    """
    unit = attrs.get("knndm_unit", "coordinate units")
    w, w_random = (f"W = {attrs[k]:.4g} ({unit})" for k in ("knndm_W", "knndm_W_random"))
    kind = "split" if "knndm_test_prop" in attrs else "folds"
    if attrs["knndm_n_clusters"] < 0:
        p = attrs["knndm_ks_pvalue"]
        return (
            f"kNNDM: random {kind} kept (training points not clustered against the prediction "
            f"area: KS p = {p:.3g} >= 0.05), {w}"
        )
    clusters = CLUSTER_NAMES[attrs.get("knndm_clustering", "kmeans")]
    return f"kNNDM: {attrs['knndm_n_clusters']} {clusters}, {w}; random {kind}: {w_random}"


def knndm_folds(
    table: Table,
    prediction: Any,
    *,
    n_folds: int | None = None,
    space: Space = "geographical",
    sample: int = DEFAULT_SAMPLE,
    seed: int = 1,
    maxp: float | None = None,
    test_prop: float | None = None,
    test_tolerance: float | None = None,
    n_candidates: int = 100,
    max_clusters: int = 2000,
    cv_sample: int = 20_000,
    column: str = "knndm_fold",
    client: Any = None,
    clustering: Clustering | None = None,
) -> KNNDMResult:
    """kNNDM folds of ``table`` for predicting ``prediction``.

    Parameters
    ----------
    table : Table
        The training rows, loaded with ``coords=`` (both spaces: the folds are computed from
        the coordinates' or the features' values, row by row). Every coordinate (feature)
        must be finite, and not all rows at one place. With a group column (``group=``)
        groups are kept whole: each takes the fold of most of its rows, in every candidate
        scored and in the folds returned (CAST has no groups).
    prediction : Table, DataFrame, xarray.Dataset or path
        The prediction area: a table (with ``coords`` or columns named as the training
        coordinates; in feature space, as its features) or a raster Dataset of (y, x)
        variables (its valid cells; in feature space its variables named as the features),
        or a Parquet/CSV/GeoTIFF/Zarr path. Larger than memory is fine: it is sampled block
        by block. Where both it and the training table carry a CRS (a raster's, a
        GeoParquet file's ``geo`` metadata) they must be the same.
    n_folds : int, optional
        K (CAST's ``k``, default 10).
    space : {"geographical", "feature"}
        Distances between coordinates, or between features standardised by the training
        mean and SD (n - 1).
    sample : int
        Prediction points sampled (seeded, by smallest hash: the same points whatever the
        partitioning); CAST's ``samplesize``.
    seed : int
    maxp : float, optional
        Largest share of the rows one fold may hold (CAST's ``maxp``, 1/K < maxp < 1,
        default 0.5).
    test_prop, test_tolerance : float, optional
        A train/test split instead of K folds (CAST 1.1.1's): 2 parts, one of which holds
        ``test_prop`` ± ``test_tolerance`` (default 0.1) of the rows, both bounds within
        (0, 1); the part nearer ``test_prop`` is the test part. Clusters are dealt to the
        parts in turn along the first principal component; random split (the training points
        not clustered): floor(test_prop · n) rows of smallest seeded hash are the test part.
        The column then holds "train" and "test". Refused beside ``n_folds`` or ``maxp``.
    n_candidates : int
        Cluster counts tried (CAST's ``nk_len``, 100): log-spaced from K to
        min(n - 2, ``max_clusters``). Every one is scored (its W in ``candidates``), also
        when random folds are kept.
    max_clusters : int
        Largest cluster count tried (CAST goes to n - 2: fine clusterings approach random
        folds, whose W is reported as ``W_random``).
    cv_sample : int
        Training points whose Gj* scores each candidate (a seeded sample above this many;
        the chosen folds' ``Gjstar`` and ``W`` use every point).
    column : str
        Name of the fold column.
    client : distributed.Client, optional
    clustering : {"hierarchical", "kmeans"}, optional
        How the candidates cluster the points (CAST's ``clustering``). "kmeans": a k-means
        fit per cluster count (its candidates are tasks on the client's workers).
        "hierarchical": one Ward tree of the points (CAST's ``ward.D2``), cut at every count
        (scipy's ``fcluster``); it holds the n(n-1)/2 pairwise distances (twice while it is
        built), so it is refused above ``HIERARCHICAL_MAX_ROWS`` (20,000) rows; it runs in
        this process. Default: "hierarchical" in feature space (CAST's default), "kmeans" in
        geographical space (CAST defaults to hierarchical there too; k-means is kept here,
        as the folds pinned by the tests and pixel-scale tables need it).

    Returns
    -------
    KNNDMResult

    Warns
    -----
    FarPredictionWarning
        When the median prediction -> training distance is beyond the training points'
        whole extent (a CRS, unit or axis-order mix-up, see ``warn_if_far``).
    """
    counts = {"sample": sample, "n_candidates": n_candidates, "max_clusters": max_clusters}
    folds_asked = (n_folds, maxp, test_prop, test_tolerance)
    columns, shares, seed = _check(table, space, seed, column, counts, cv_sample, folds_asked)
    method = check_clustering(clustering, space)
    client = current_client() if client is None else client
    raw = reference_points(table.data, columns, "the training table")
    if method == "hierarchical":  # before the prediction area is read
        check_ward_size(len(raw), default=clustering is None)
    check_distinct(raw, columns, shares.n_folds)
    codes, groups = group_codes(table, shares.n_folds)
    transform = standardiser(raw, columns) if space == "feature" else None
    points = raw if transform is None else (raw - transform[0]) / transform[1]
    parts, crs = prediction_parts(prediction, columns, space, table, "knndm_folds")
    gij = sampled_distances(parts, points, sample, seed, transform, client)
    warn_if_far(gij, points, columns, space)
    grid = cluster_grid(shares.n_folds, len(points), n_candidates, max_clusters)
    search = point_search(points, method, grid, shares.n_folds)
    gj = search.loo()
    random = random_folding(raw, shares, seed)
    random_folds = whole_groups(random.folds(raw), codes)[0]
    random_star = search.cv(random_folds)
    random_sizes = np.bincount(random_folds, minlength=shares.n_folds + 1)[1:]
    pvalue = ks_greater(gj, gij)
    done = _candidates(search, gij, grid, shares, seed, cv_sample, codes, client)
    candidates = candidate_frame(done)
    if pvalue >= 0.05:
        folding, nk = random, None
    else:
        folding, nk = _chosen(done, candidates, shares, seed, transform, search, raw)
    folds, group_fold = whole_groups(folding.folds(raw), codes)
    group_folds = None if group_fold is None else pd.Series(group_fold, index=groups)
    folding = replace(folding, group_folds=group_folds, test_fold=shares.test_fold(folds))
    sizes = check_fold_sizes(folds, shares.n_folds, table.group, shares.split)
    star = random_star if nk is None else search.cv(folds)
    data = fold_column(table, columns, folding, column)
    return KNNDMResult(
        table=_with_column(table, data, column, shares),
        column=column,
        W=float(sps.wasserstein_distance(star, gij)),
        W_random=float(sps.wasserstein_distance(random_star, gij)),
        n_clusters=nk,
        method="random CV" if nk is None else method,
        space=space,
        n_folds=shares.n_folds,
        ks_pvalue=pvalue,
        Gij=gij,
        Gj=gj,
        Gjstar=star,
        Gjstar_random=random_star,
        candidates=candidates,
        folding=folding,
        fold_sizes=sizes,
        unit=distance_unit(crs, space),
        shares=shares,
        random_fold_sizes=tuple(random_sizes.tolist()),
        clustering=method,
        asked={"prediction": _named(prediction), "sample": sample, "seed": seed},
    )


def _named(prediction: Any) -> str:
    """A prediction area as ``knndm.json`` records it: its path, or its kind of object."""
    if isinstance(prediction, str | os.PathLike):
        return os.fspath(prediction)
    return f"(a {type(prediction).__name__} in memory)"


def _check(
    table: Table,
    space: str,
    seed: int,
    column: str,
    counts: dict[str, Any],
    cv_sample: int,
    folds: tuple[Any, Any, Any, Any],
) -> tuple[tuple[str, ...], Shares, int]:
    """The distance columns, the fold sizes allowed (``folds``: n_folds, maxp, test_prop,
    test_tolerance) and the seed; every option refused before anything is read unless it is
    what ``knndm_folds`` documents (``check_knndm_options``)."""
    coords = coords_of(table, "knndm_folds")
    shares, seed = check_knndm_options(space, seed, counts, cv_sample, folds)
    if column in table.data.columns:
        raise ValueError(f"column {column!r} is already in the table: name another column=")
    return (coords if space == "geographical" else table.features), shares, seed


def random_folding(raw: np.ndarray, shares: Shares, seed: int) -> Folding:
    """Random folds, kept when the training points are not clustered (CAST's random CV): a
    seeded hash of each point modulo K; for a split (as CAST's, floor(test_prop · n) test
    rows), the points of the floor(test_prop · n) smallest hashes are the test part."""
    if not shares.split:
        return Folding(shares.n_folds, seed)
    hashes = np.sort(point_hashes(raw, seed, "knndm_random_folds"))
    n_test = int(np.floor(shares.test_prop * len(hashes)))
    return Folding(2, seed, test_cut=int(hashes[n_test]), test_fold=2)


def _with_column(table: Table, data: Any, column: str, shares: Shares) -> Table:
    """``table`` with the fold column as its fold role; a split's column is no fold role."""
    if shares.split:
        return replace(table, data=data, files=None)
    return table.with_fold(data, column)


def check_distinct(raw: np.ndarray, columns: Sequence[str], n_folds: int) -> None:
    """Refuse fewer distinct points than folds: rows at one point share a fold (a fold is a
    function of a row's values), so some fold would be empty."""
    distinct = len(np.unique(point_hashes(raw, 0, "knndm_distinct")))
    if distinct < n_folds:
        raise ValueError(
            f"the training table has {distinct} distinct points (values of {list(columns)}) "
            f"among its {len(raw):,} rows, fewer than n_folds={n_folds}: rows at one point "
            "share a fold, so some fold would be empty; lower n_folds"
        )


def group_codes(table: Table, n_folds: int) -> tuple[np.ndarray | None, pd.Index | None]:
    """Each training row's group code (row order) and the group values, or (None, None)
    without a group column; fewer groups than folds, or a missing group, are refused."""
    if table.group is None:
        return None, None
    codes, uniques = pd.factorize(table.data[table.group].compute(), use_na_sentinel=True)
    if (codes < 0).any():
        raise ValueError(
            f"group column {table.group!r} is missing in {int((codes < 0).sum()):,} rows: "
            "every row needs a group (drop those rows or give them one)"
        )
    if len(uniques) < n_folds:
        raise ValueError(
            f"group column {table.group!r} has {len(uniques)} groups, fewer than "
            f"n_folds={n_folds}: whole groups cannot fill every fold; lower n_folds"
        )
    return codes, pd.Index(uniques)


def ks_greater(gj: np.ndarray, gij: np.ndarray) -> float:
    """CAST's test: the p-value of the one-sided KS test that Gj is stochastically larger
    than Gij (ties: the asymptotic p-value, as R's ``ks.test``)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="ks_2samp: Exact calculation")
        return float(sps.ks_2samp(gj, gij, alternative="greater").pvalue)


def warn_if_far(gij: np.ndarray, points: np.ndarray, columns: Sequence[str], space: str) -> None:
    """Warn when the typical prediction point (the median of Gij) lies more than
    ``FAR_FACTOR`` times the training points' whole extent (their bounding box's diagonal)
    from every training point.

    Interpolating, or extrapolating around the training area, stays within about one
    extent (training points on a line across a square area: 1.1); a prediction area in
    another CRS or unit, or with x and y swapped, is off by factors of 10^3 to 10^7 (CAST's
    farm: 5,000 to 6,500) -- and kNNDM then matches folds to distances that no split of the
    training points can reach.
    """
    extent = float(np.linalg.norm(np.ptp(points, axis=0)))
    typical = float(np.median(gij))
    if typical <= FAR_FACTOR * extent:
        return
    causes = (
        "coordinates in another CRS or unit than the prediction area's (e.g. lon/lat against "
        "metres), or x and y in the other order (N, E)"
        if space == "geographical"
        else "the prediction area's features in other units than the training table's"
    )
    warn_user(
        f"the prediction area is far from the training points: the median distance from a "
        f"prediction point to its nearest training point is {typical:.4g}, over "
        f"{FAR_FACTOR} times the {extent:.4g} across all training points (their bounding "
        f"box's diagonal, columns {list(columns)}). Likely causes: {causes}. The folds "
        "match those distances only as well as W says: check both inputs",
        FarPredictionWarning,
    )


class FarPredictionWarning(UserWarning):
    """The prediction area lies far beyond the training points (``warn_if_far``)."""


def check_fold_sizes(
    folds: np.ndarray, n_folds: int, group: str | None, split: bool = False
) -> tuple[int, ...]:
    """Rows per fold 1..K, refusing a fold with none (too few distinct locations or groups
    for K folds, or for a ``split``'s test share) before any score is computed from it."""
    sizes = np.bincount(folds, minlength=n_folds + 1)[1:]
    if not sizes.all():
        empty = (np.flatnonzero(sizes == 0) + 1).tolist()
        held = f"groups of {group!r}" if group is not None else "distinct locations"
        fix = "raise test_prop" if split else "lower n_folds"
        raise ValueError(
            f"kNNDM left folds {empty} without rows (rows per fold: {sizes.tolist()}): the "
            f"training rows hold too few {held} to fill n_folds={n_folds} folds; {fix}"
        )
    return tuple(sizes.tolist())


def cluster_grid(n_folds: int, n: int, n_candidates: int, max_clusters: int) -> np.ndarray:
    """Cluster counts tried, as CAST's ``clustgrid``: ``n_candidates`` log-spaced from K to
    min(n - 2, ``max_clusters``), rounded, without repeats.

    >>> cluster_grid(10, 42, 100, 2000)[:5].tolist(), int(cluster_grid(10, 42, 100, 2000)[-1])
    ([10, 11, 12, 13, 14], 40)
    """
    top = min(n - 2, max_clusters)
    if top < n_folds:
        return np.array([], dtype=np.int64)
    grid = np.round(np.exp(np.linspace(np.log(n_folds), np.log(top), n_candidates)))
    return np.unique(grid.astype(np.int64))


def cv_distances(
    points: np.ndarray, folds: np.ndarray, rows: np.ndarray | None = None
) -> np.ndarray:
    """Distance from each point (of ``rows``, default all) to its nearest point of another
    fold (Gj*): one tree per fold, each point measured against the other folds' trees; in
    more than ``TREE_DIMS`` dimensions one exact matrix search (``nearest_in_groups``)."""
    rows = np.arange(len(points)) if rows is None else rows
    if points.shape[1] > TREE_DIMS:  # one exact matrix search, each row's own fold left out
        return nearest_in_groups(points, folds, points[rows], folds[rows])
    out = np.full(len(rows), np.inf)
    workers = -1 if len(rows) > 50_000 else 1  # threads cost more than small queries
    for f in np.unique(folds):
        tree = cKDTree(points[folds == f])
        other = folds[rows] != f
        d = tree.query(points[rows[other]], k=1, workers=workers)[0]
        out[other] = np.minimum(out[other], d)
    return out


def cv_rows(n: int, size: int, seed: int) -> np.ndarray | None:
    """The training points whose Gj* scores the candidates: all (None) up to ``size``, else
    a seeded sample of ``size`` positions."""
    if n <= size:
        return None
    h = seeded_hash(seed, salt("knndm_cv_rows"), np.arange(n, dtype=np.uint64))
    return np.sort(np.argsort(h, kind="stable")[:size])


def assess_candidate(
    points: np.ndarray,
    gij: np.ndarray,
    nk: int,
    shares: Shares,
    seed: int,
    rows: np.ndarray | None,
    codes: np.ndarray | None = None,
) -> tuple[int, float, float, str, np.ndarray | None, np.ndarray | None]:
    """One candidate: ``nk`` k-means clusters merged into the folds of ``shares`` (groups,
    ``codes``, kept whole); (nk, W of its folds, largest fold's share, ``SCORED`` or why it
    may not be chosen, centres, each cluster's fold). W is NaN, and centres None, only where
    k-means finds no ``nk`` clusters or no fold is left for the small ones."""
    nk_seed = int(seeded_hash(seed, salt("knndm_kmeans"), np.uint64(nk))[0] % 2**32)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # k-means on few distinct points: skipped
            centres = fit_centres(points, int(nk), nk_seed, 10, *CANDIDATE_FIT)
    except ValueError:
        return int(nk), np.nan, np.nan, f"k-means found no {nk} clusters", None, None
    labels = nearest_centre(points, centres)
    fold_of = merge_clusters(points, labels, shares.n_folds, shares.split)
    if fold_of is None:
        return int(nk), np.nan, np.nan, "no fold left for the small clusters", None, None
    folds = whole_groups(fold_of[labels], codes)[0]
    largest, status = shares.verdict(folds)
    w = float(sps.wasserstein_distance(cv_distances(points, folds, rows), gij))
    return int(nk), w, largest, status, centres, fold_of


def score_candidate(
    points: np.ndarray,
    gij: np.ndarray,
    nk: int,
    n_folds: int,
    maxp: float,
    seed: int,
    rows: np.ndarray | None,
    codes: np.ndarray | None = None,
) -> tuple[int, float, float, np.ndarray | None, np.ndarray | None]:
    """One candidate of K folds as CAST's loop keeps it: (nk, W, largest fold's share,
    centres, each cluster's fold), W NaN and no centres when it is discarded (a fold over
    ``maxp`` or without rows; see ``assess_candidate``)."""
    shares = Shares(n_folds, maxp)
    nk, w, largest, status, centres, fold_of = assess_candidate(
        points, gij, nk, shares, seed, rows, codes
    )
    if status != SCORED:
        return nk, np.nan, largest, None, None
    return nk, w, largest, centres, fold_of


@dataclass(frozen=True)
class PointSearch:
    """Nearest-neighbour distances among the training ``points`` by k-d trees or the matrix
    search (``loo_distance``, ``cv_distances``): the k-means path, which holds nothing but
    the points (``WardTree`` answers the same questions from its distance matrix)."""

    points: np.ndarray = field(repr=False)

    def loo(self) -> np.ndarray:
        """Distance from each point to its nearest other point (CAST's Gj)."""
        return loo_distance(self.points)

    def cv(self, folds: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Gj* of ``folds`` (``cv_distances``)."""
        return cv_distances(self.points, folds, rows)


def point_search(
    points: np.ndarray, method: str, grid: np.ndarray, n_folds: int
) -> PointSearch | WardTree:
    """What measures the candidates' distances: for "hierarchical", the Ward tree of
    ``points`` with its finest cut (the largest count of ``grid``, K if none)."""
    if method != "hierarchical":
        return PointSearch(points)
    return WardTree.fit(points, int(grid.max()) if len(grid) else n_folds)


def _candidates(
    search: PointSearch | WardTree,
    gij: np.ndarray,
    grid: np.ndarray,
    shares: Shares,
    seed: int,
    cv_sample: int,
    codes: np.ndarray | None = None,
    client: Any = None,
) -> list[tuple]:
    """``assess_candidate`` of every cluster count of ``grid``, or the cuts of a Ward tree
    (``ward_candidates``, in this process). With a distributed client the k-means
    candidates are tasks on the workers (the points sent to each once)."""
    rows = cv_rows(len(search.points), cv_sample, seed)
    if isinstance(search, WardTree):
        return ward_candidates(search, gij, grid, shares, rows, codes)
    points = search.points
    if client is None:
        return [assess_candidate(points, gij, nk, shares, seed, rows, codes) for nk in grid]
    sent = client.scatter([points, gij], broadcast=True, hash=False)
    rows, codes = (
        a if a is None else client.scatter(a, broadcast=True, hash=False) for a in (rows, codes)
    )
    futures = [client.submit(assess_candidate, *sent, nk, shares, seed, rows, codes) for nk in grid]
    return client.gather(futures)


def candidate_frame(done: Sequence[tuple]) -> pd.DataFrame:
    """The candidates of ``assess_candidate`` as ``KNNDMResult.candidates``: ``n_clusters``,
    ``W`` (of those that may be chosen), ``W_folds``, ``largest_fold``, ``status``."""
    columns = ["n_clusters", "W_folds", "largest_fold", "status"]
    frame = pd.DataFrame([d[:4] for d in done], columns=columns)
    frame = frame.astype({"n_clusters": np.int64, "W_folds": float, "largest_fold": float})
    frame.insert(1, "W", frame["W_folds"].where(frame["status"] == SCORED))
    return frame


def _chosen(
    done: Sequence[tuple],
    candidates: pd.DataFrame,
    shares: Shares,
    seed: int,
    transform: tuple[np.ndarray, np.ndarray] | None,
    search: PointSearch | WardTree,
    raw: np.ndarray,
) -> tuple[Folding, int]:
    """The candidate of smallest W (the first on a tie) and its cluster count; a Ward cut's
    folds are kept per training point (``raw``: its values as the table holds them)."""
    if candidates["W"].isna().all():
        fix = (
            f"{shares.minp:g} to {shares.maxp:g} of the rows (test_prop ± test_tolerance): "
            "raise test_tolerance"
            if shares.split
            else f"at most maxp={shares.maxp:g} of the rows: raise maxp or lower n_folds"
        )
        raise ValueError(f"no clustering gives {shares.n_folds} folds of {fix}")
    nk, _, _, _, centres, fold_of = done[int(np.nanargmin(candidates["W"].to_numpy()))]
    if isinstance(search, WardTree):
        table = point_fold_table(raw, fold_of[search.cut(nk)])
        return Folding(shares.n_folds, seed, point_folds=table), nk
    return Folding(shares.n_folds, seed, centres, fold_of, transform), nk


def fold_column(table: Table, columns: tuple, folding: Folding, column: str) -> Any:
    """``table.data`` with ``column``, each row's fold by ``folding``, partition by partition
    (the meta given: a Ward cut's folds are known only for the training points)."""
    dtype = pd.Series(folding.named(np.ones(1, dtype=np.int64))).dtype  # as a partition's
    meta = table.data._meta.assign(**{column: pd.Series([], dtype=dtype)})
    return table.data.map_partitions(_fold_column, columns, folding, column, table.group, meta=meta)


def _fold_column(
    part: pd.DataFrame, columns: tuple, folding: Folding, column: str, group: str | None
) -> pd.DataFrame:
    if folding.group_folds is not None:  # a group's fold, wherever its rows are
        folds = part[group].map(folding.group_folds).to_numpy(dtype=np.int64)
    else:
        folds = folding.folds(part[list(columns)].to_numpy(dtype=np.float64))
    return part.assign(**{column: folding.named(folds)})


def knndm_keys(table: Table, prediction: Any, column: str, **options: Any) -> KNNDMResult:
    """``knndm_folds`` of a table that has no folds yet, as a design's keys (``KNNDMFolds``,
    ``knndm_outer``): the folds in ``column``; ``options`` as ``knndm_folds`` takes them. A
    table with a fold column is refused: these folds would replace it."""
    if table.fold is not None:
        raise ValueError(
            f"kNNDM assigns the folds, and the table has the fold column {table.fold!r}: "
            "load it without fold="
        )
    return knndm_folds(table, prediction, column=column, **options)


def knndm_outer(
    table: Table, prediction: Any, n_folds: int, seed: int, client: Any = None
) -> tuple[Table, dict[str, Any]]:
    """The table with its kNNDM fold column ``knndm_fold`` (geographical space; a group
    column's groups kept whole) and the attrs a result records of them (``knndm_W``,
    ``knndm_W_random``, ...): the folds of ``evaluate(outer="knndm")`` (its design,
    ``KNNDMFolds``, draws them with ``knndm_keys``)."""
    check_prediction(prediction, "outer='knndm'")
    res = knndm_keys(table, prediction, "knndm_fold", n_folds=n_folds, seed=seed, client=client)
    return res.table, res.attrs()
