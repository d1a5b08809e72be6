"""kNNDM: k-fold nearest-neighbour distance matching (Linnenbrink et al. 2024, GMD 17:5897),
after CAST's ``knndm`` (R/knndm.R, ``clustering = "kmeans"``).

The folds are chosen so that the distances from each CV test point to its nearest training
point (Gj*) are distributed as the distances from the prediction area to the nearest
training point (Gij). Candidates: k-means clusterings of the training coordinates (or
standardised features) for cluster counts from K up to ``max_clusters`` on a log scale,
each merged into K folds as CAST does (clusters ordered along the first principal component
of the points; clusters holding at least n/K points get a fold each, the others are dealt
to the remaining folds in turn); a candidate with a fold over ``maxp`` of the rows is
discarded; the one of smallest Wasserstein distance W between the two distributions is
kept. When the training points are no more clustered than the prediction area (Gj is not
stochastically larger than Gij: one-sided KS test, p >= 0.05) random folds are kept, as in
CAST.

The training points are held in memory (coordinates or features only); the prediction area
is sampled block by block on the workers and only its sample's distances come back. A
row's fold is a function of its own coordinates (nearest chosen centre -> fold, or a seeded
hash for random folds), so the fold column is computed partition by partition.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import stats as sps
from scipy.spatial import cKDTree

from ..dask_client import current_client
from ..hashing import salt, seeded_hash
from ..tables.table import Table
from .fold_options import check_n_folds, check_seed
from .kmeans import fit_centres, nearest_centre
from .neighbours import (
    coords_of,
    loo_distance,
    point_hashes,
    reference_points,
    sampled_distances,
    standardiser,
)
from .prediction_area import prediction_parts

Space = Literal["geographical", "feature"]
#: Prediction points sampled by default (CAST's ``samplesize`` is 1000).
DEFAULT_SAMPLE = 10_000
#: Each candidate's k-means is fitted on at most this many training points, and on at most
#: (second number) / clusters of them (at least 5 per cluster), with R's ``iter.max`` of 10
#: passes: a candidate's clusters are then labelled on every point by nearest centre.
CANDIDATE_FIT = (20_000, 4_000_000)


@dataclass(frozen=True)
class Folding:
    """How a point's fold follows from its values: the nearest of ``centres`` and that
    cluster's fold, or (``centres`` None) a seeded hash modulo K. Small: sent to every
    partition."""

    n_folds: int
    seed: int
    centres: np.ndarray | None = None
    fold_of_cluster: np.ndarray | None = None
    transform: tuple[np.ndarray, np.ndarray] | None = None

    def folds(self, points: np.ndarray) -> np.ndarray:
        """Folds 1..K of raw ``points`` (coordinates or unscaled features)."""
        if self.centres is None:
            h = point_hashes(points, self.seed, "knndm_random_folds")
            return (h % np.uint64(self.n_folds)).astype(np.int64) + 1
        if self.transform is not None:
            points = (points - self.transform[0]) / self.transform[1]
        return self.fold_of_cluster[nearest_centre(points, self.centres)]


@dataclass(frozen=True)
class KNNDMResult:
    """The folds chosen by ``knndm_folds`` and what chose them.

    Attributes
    ----------
    table : Table
        The training table with the fold column (its fold role): pass it to ``soak`` or
        ``evaluate`` (``outer="cv"`` uses the folds as they are).
    column : str
        The fold column.
    W, W_random : float
        Wasserstein distance between Gij and Gj* of the chosen folds, and of random folds.
    n_clusters : int or None
        The chosen clustering's number of k-means clusters (None: random folds kept).
    method : str
        "kmeans", or "random CV" when the training points are not clustered with respect to
        the prediction area (``ks_pvalue`` >= 0.05).
    Gij, Gj, Gjstar, Gjstar_random : ndarray
        Nearest-neighbour distances prediction sample -> training, training -> other
        training (leave one out), CV test -> train of the chosen folds and of random folds.
    candidates : DataFrame
        One row per cluster count tried: ``n_clusters``, ``W`` (NaN when discarded),
        ``largest_fold`` (share of rows).
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

    def attrs(self) -> dict[str, Any]:
        """What a result records of the folds (``evaluate``'s attrs)."""
        return {
            "knndm_W": float(self.W),
            "knndm_W_random": float(self.W_random),
            "knndm_n_clusters": -1 if self.n_clusters is None else int(self.n_clusters),
            "knndm_method": self.method,
            "knndm_space": self.space,
            "knndm_ks_pvalue": float(self.ks_pvalue),
            "knndm_prediction_sample": len(self.Gij),
        }


def knndm_folds(
    table: Table,
    prediction: Any,
    *,
    n_folds: int = 10,
    space: Space = "geographical",
    sample: int = DEFAULT_SAMPLE,
    seed: int = 1,
    maxp: float = 0.5,
    n_candidates: int = 100,
    max_clusters: int = 2000,
    cv_sample: int = 20_000,
    column: str = "knndm_fold",
    client: Any = None,
) -> KNNDMResult:
    """kNNDM folds of ``table`` for predicting ``prediction``.

    Parameters
    ----------
    table : Table
        The training rows, loaded with ``coords=`` (both spaces: the folds are computed from
        the coordinates' or the features' values, row by row).
    prediction : Table, DataFrame, xarray.Dataset or path
        The prediction area: a table (with ``coords`` or columns named as the training
        coordinates; in feature space, as its features) or a raster Dataset of (y, x)
        variables (its valid cells; in feature space its variables named as the features),
        or a Parquet/CSV/GeoTIFF/Zarr path. Larger than memory is fine: it is sampled block
        by block.
    n_folds : int
        K (CAST's ``k``, default 10).
    space : {"geographical", "feature"}
        Distances between coordinates, or between features standardised by the training
        mean and SD (n - 1).
    sample : int
        Prediction points sampled (seeded, by smallest hash: the same points whatever the
        partitioning); CAST's ``samplesize``.
    seed : int
    maxp : float
        Largest share of the rows one fold may hold (CAST's ``maxp``, 1/K < maxp < 1).
    n_candidates : int
        Cluster counts tried (CAST's ``nk_len``, 100): log-spaced from K to
        min(n - 2, ``max_clusters``).
    max_clusters : int
        Largest cluster count tried (CAST goes to n - 2: fine clusterings approach random
        folds, whose W is reported as ``W_random``).
    cv_sample : int
        Training points whose Gj* scores each candidate (a seeded sample above this many;
        the chosen folds' ``Gjstar`` and ``W`` use every point).
    column : str
        Name of the fold column.
    client : distributed.Client, optional

    Returns
    -------
    KNNDMResult
    """
    columns, n_folds, seed = _check(table, space, n_folds, seed, maxp, sample, column)
    client = current_client() if client is None else client
    raw = reference_points(table.data, columns, "the training table")
    transform = standardiser(raw, columns) if space == "feature" else None
    points = raw if transform is None else (raw - transform[0]) / transform[1]
    parts, _ = prediction_parts(prediction, columns, space, table)
    gij = sampled_distances(parts, points, sample, seed, transform, client)
    gj = loo_distance(points)
    random = Folding(n_folds, seed)
    random_star = cv_distances(points, random.folds(raw))
    with warnings.catch_warnings():  # ties: the asymptotic p-value, as R's ks.test
        warnings.filterwarnings("ignore", message="ks_2samp: Exact calculation")
        pvalue = float(sps.ks_2samp(gj, gij, alternative="greater").pvalue)
    grid = cluster_grid(n_folds, len(points), n_candidates, max_clusters)
    if pvalue >= 0.05:
        folding, nk, candidates = random, None, pd.DataFrame({"n_clusters": grid, "W": np.nan})
    else:
        folding, nk, candidates = _best(
            points, gij, grid, n_folds, maxp, seed, transform, cv_sample, client
        )
    folds = folding.folds(raw)
    star = random_star if nk is None else cv_distances(points, folds)
    data = table.data.map_partitions(_fold_column, columns, folding, column)
    return KNNDMResult(
        table=table.with_fold(data, column),
        column=column,
        W=float(sps.wasserstein_distance(star, gij)),
        W_random=float(sps.wasserstein_distance(random_star, gij)),
        n_clusters=nk,
        method="random CV" if nk is None else "kmeans",
        space=space,
        n_folds=n_folds,
        ks_pvalue=pvalue,
        Gij=gij,
        Gj=gj,
        Gjstar=star,
        Gjstar_random=random_star,
        candidates=candidates,
        folding=folding,
        fold_sizes=tuple(np.bincount(folds, minlength=n_folds + 1)[1:].tolist()),
    )


def _check(
    table: Table, space: str, n_folds: int, seed: int, maxp: float, sample: int, column: str
) -> tuple[tuple[str, ...], int, int]:
    coords = coords_of(table, "knndm_folds")
    if space not in ("geographical", "feature"):
        raise ValueError(f"space={space!r}: choose 'geographical' or 'feature'")
    n_folds = check_n_folds(n_folds, "n_folds")
    if not isinstance(maxp, float | int) or not 1 / n_folds < maxp < 1:
        raise ValueError(f"maxp={maxp!r}: need 1/n_folds < maxp < 1 (CAST's default 0.5)")
    if isinstance(sample, bool) or not isinstance(sample, int | np.integer) or sample < 10:
        raise ValueError(f"sample={sample!r}: need at least 10 prediction points")
    if column in table.data.columns:
        raise ValueError(f"column {column!r} is already in the table: name another column=")
    return (coords if space == "geographical" else table.features), n_folds, check_seed(seed)


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
    fold (Gj*): one tree per fold, each point measured against the other folds' trees."""
    rows = np.arange(len(points)) if rows is None else rows
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


def merge_clusters(points: np.ndarray, labels: np.ndarray, n_folds: int) -> np.ndarray | None:
    """Each cluster's fold, as CAST merges clusters into K folds: clusters ordered by their
    centroid's score on the points' first principal component; those of at least n/K points
    take folds 1, 2, ... in that order; the others are dealt in turn to the remaining folds.
    None when no fold is left for them."""
    n_labels = int(labels.max()) + 1
    counts = np.bincount(labels, minlength=n_labels)
    centred = points - points.mean(axis=0)
    pc1 = np.linalg.svd(centred[:: max(1, len(points) // 200_000)], full_matrices=False)[2][0]
    sums = np.stack([np.bincount(labels, weights=c, minlength=n_labels) for c in centred.T], 1)
    present = np.flatnonzero(counts)
    score = (sums[present] / counts[present, None]) @ pc1
    order = present[np.argsort(score, kind="stable")]
    fold_of = np.zeros(n_labels, dtype=np.int64)
    big = order[counts[order] >= len(points) / n_folds]
    fold_of[big] = np.arange(1, len(big) + 1)
    rest = order[fold_of[order] == 0]
    left = np.arange(len(big) + 1, n_folds + 1)
    if len(rest) and not len(left):
        return None
    fold_of[rest] = np.resize(left, len(rest))
    return fold_of


def score_candidate(
    points: np.ndarray,
    gij: np.ndarray,
    nk: int,
    n_folds: int,
    maxp: float,
    seed: int,
    rows: np.ndarray | None,
) -> tuple[int, float, float, np.ndarray | None, np.ndarray | None]:
    """One candidate: ``nk`` k-means clusters merged into K folds; (nk, W, largest fold's
    share, centres, each cluster's fold), W NaN when it is discarded."""
    nk_seed = int(seeded_hash(seed, salt("knndm_kmeans"), np.uint64(nk))[0] % 2**32)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # k-means on few distinct points: skipped
            centres = fit_centres(points, int(nk), nk_seed, 10, *CANDIDATE_FIT)
    except ValueError:
        return int(nk), np.nan, np.nan, None, None
    labels = nearest_centre(points, centres)
    fold_of = merge_clusters(points, labels, n_folds)
    folds = None if fold_of is None else fold_of[labels]
    largest = np.nan if folds is None else np.bincount(folds).max() / len(points)
    if folds is None or largest > maxp or len(np.unique(folds)) < n_folds:
        return int(nk), np.nan, largest, None, None
    w = float(sps.wasserstein_distance(cv_distances(points, folds, rows), gij))
    return int(nk), w, largest, centres, fold_of


def _best(
    points: np.ndarray,
    gij: np.ndarray,
    grid: np.ndarray,
    n_folds: int,
    maxp: float,
    seed: int,
    transform: tuple[np.ndarray, np.ndarray] | None,
    cv_sample: int,
    client: Any = None,
) -> tuple[Folding, int, pd.DataFrame]:
    """The candidate of smallest W (the first on a tie), its cluster count, and every
    candidate's W. With a distributed client the candidates are tasks on the workers (the
    points sent to each once)."""
    rows = cv_rows(len(points), cv_sample, seed)
    args = (n_folds, maxp, seed)
    if client is not None:
        sent = client.scatter([points, gij], broadcast=True, hash=False)
        rows = rows if rows is None else client.scatter(rows, broadcast=True, hash=False)
        futures = [client.submit(score_candidate, *sent, nk, *args, rows) for nk in grid]
        done = client.gather(futures)
    else:
        done = [score_candidate(points, gij, nk, *args, rows) for nk in grid]
    candidates = pd.DataFrame([d[:3] for d in done], columns=["n_clusters", "W", "largest_fold"])
    if candidates["W"].isna().all():
        raise ValueError(
            f"no clustering gives {n_folds} folds of at most maxp={maxp} of the rows: raise "
            "maxp or lower n_folds"
        )
    nk, _, _, centres, fold_of = done[int(np.nanargmin(candidates["W"].to_numpy()))]
    return Folding(n_folds, seed, centres, fold_of, transform), nk, candidates


def _fold_column(part: pd.DataFrame, columns: tuple, folding: Folding, column: str) -> pd.DataFrame:
    points = part[list(columns)].to_numpy(dtype=np.float64)
    return part.assign(**{column: folding.folds(points).astype(np.int64)})


def knndm_outer(
    table: Table, prediction: Any, n_folds: int, seed: int, client: Any = None
) -> tuple[Table, dict[str, Any]]:
    """``evaluate``'s ``outer="knndm"``: the table with its kNNDM fold column (geographical
    space) and the attrs the result records (``knndm_W``, ``knndm_W_random``, ...)."""
    if prediction is None:
        raise ValueError(
            "outer='knndm' needs prediction= (the prediction area; soak: --prediction)"
        )
    if table.fold is not None:
        raise ValueError(
            f"outer='knndm' assigns the folds, and the table has the fold column "
            f"{table.fold!r}: load it without fold="
        )
    if table.group is not None:
        raise ValueError(
            f"outer='knndm' assigns folds by location, which would split the groups of "
            f"{table.group!r} across folds: load the table without group="
        )
    res = knndm_folds(table, prediction, n_folds=n_folds, seed=seed, client=client)
    return res.table, res.attrs()
