"""NNDM leave-one-out (Milà et al. 2022, Methods Ecol. Evol. 13:1304), after CAST's ``nndm``
(R/nndm.R): for small tables, leave-one-out in which each left-out point also excludes its
nearest training points until the CV test -> train distances match prediction -> train.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats as sps
from scipy.spatial.distance import cdist

from ..dask_client import current_client
from ..option_checks import checked
from ..split.knndm import DEFAULT_SAMPLE, Space, warn_if_far
from ..split.knndm_shares import check_count
from ..split.neighbours import coords_of, reference_points, sampled_distances, standardiser
from ..split.prediction_area import distance_unit, prediction_parts
from ..tables.table import Table

#: NNDM holds the training rows' full distance matrix: above this many rows it is refused.
NNDM_MAX_ROWS = 2000


@dataclass(frozen=True)
class NNDMResult:
    """NNDM leave-one-out: row ``i`` is tested by a model trained on ``train[i]``; the rows
    ``exclude[i]`` are left out of that training set (the exclusion buffer).

    Distances, ``phi`` and W are in ``unit`` (the CRS's, "coordinate units", or
    "standardised feature distance", as ``KNNDMResult.unit``).

    ``split()`` yields (train, test) row positions, as scikit-learn's splitters do: pass
    ``list(result.split())`` as ``cv=`` of ``cross_validate`` on the table's rows in order.
    """

    train: list[np.ndarray] = field(repr=False)
    exclude: list[np.ndarray] = field(repr=False)
    Gij: np.ndarray = field(repr=False)
    Gj: np.ndarray = field(repr=False)
    Gjstar: np.ndarray = field(repr=False)
    phi: float
    W: float
    W_loo: float
    unit: str = "coordinate units"

    def split(self, X: Any = None, y: Any = None, groups: Any = None) -> Iterator[tuple]:
        """(train, test) position arrays, one per row."""
        for i, train in enumerate(self.train):
            yield train, np.array([i])

    def get_n_splits(self, X: Any = None, y: Any = None, groups: Any = None) -> int:
        return len(self.train)


@checked("run", only=("seed",))
def nndm_folds(
    table: Table,
    prediction: Any,
    *,
    space: Space = "geographical",
    phi: float | str = "max",
    min_train: float = 0.5,
    sample: int = DEFAULT_SAMPLE,
    seed: int = 1,
    client: Any = None,
) -> NNDMResult:
    """NNDM leave-one-out folds of a small ``table`` (at most ``NNDM_MAX_ROWS`` rows) for
    predicting ``prediction`` (as for ``knndm_folds``).

    CAST's algorithm: starting from the smallest leave-one-out distance, while it is at most
    ``phi``, the pair of that distance is removed from the point's training set when the
    CV ECDF at that distance is at least the prediction ECDF and the point keeps more than
    ``min_train`` of the rows; else the next distance is taken.

    Parameters
    ----------
    table : Table
        The training rows, loaded with ``coords=`` and without a group column; every
        coordinate (feature) finite, not all rows at one place.
    prediction : Table, DataFrame, xarray.Dataset or path
        The prediction area, as for ``knndm_folds`` (CRSs compared the same way).
    space : {"geographical", "feature"}
    phi : float or "max"
        Largest distance considered (a finite distance of at least 0); "max": every one.
    min_train : float
        Share of the rows (0 to 1) each training set keeps at least.
    sample : int
        Prediction points sampled (at least 10).
    seed : int
    client : distributed.Client, optional

    Returns
    -------
    NNDMResult
        With ``W`` (Gij against Gj*) and ``W_loo`` (Gij against plain leave-one-out, Gj).

    Warns
    -----
    FarPredictionWarning
        As ``knndm_folds``: the prediction area lies beyond the training points' extent.
    """
    columns = _check(table, space, phi, min_train, sample)
    client = current_client() if client is None else client
    raw = reference_points(table.data, columns, "the training table")
    if len(raw) > NNDM_MAX_ROWS:
        raise ValueError(
            f"nndm_folds holds the {len(raw):,} x {len(raw):,} distance matrix of the training "
            f"rows (limit {NNDM_MAX_ROWS:,} rows): use knndm_folds"
        )
    transform = standardiser(raw, columns) if space == "feature" else None
    points = raw if transform is None else (raw - transform[0]) / transform[1]
    parts, crs = prediction_parts(prediction, columns, space, table, "nndm_folds")
    gij = sampled_distances(parts, points, sample, seed, transform, client)
    warn_if_far(gij, points, columns, space)
    dist = cdist(points, points)
    np.fill_diagonal(dist, np.nan)
    if phi == "max":
        phi = float(max(gij.max(), np.nanmax(dist))) + 1e-9
    gj = np.nanmin(dist, axis=1)
    star = _match(dist, gj.copy(), np.sort(gij), float(phi), float(min_train))
    n = len(points)
    train = [np.flatnonzero(~np.isnan(dist[i])) for i in range(n)]
    exclude = [np.setdiff1d(np.flatnonzero(np.isnan(dist[i])), [i]) for i in range(n)]
    return NNDMResult(
        train=train,
        exclude=exclude,
        Gij=gij,
        Gj=gj,
        Gjstar=star,
        phi=float(phi),
        W=float(sps.wasserstein_distance(star, gij)),
        W_loo=float(sps.wasserstein_distance(gj, gij)),
        unit=distance_unit(crs, space),
    )


def _check(table: Table, space: str, phi: Any, min_train: Any, sample: Any) -> tuple[str, ...]:
    """The columns distances are measured on; every option refused before anything is read
    unless it is what ``nndm_folds`` documents."""
    coords = coords_of(table, "nndm_folds")
    if table.group is not None:
        raise ValueError(
            f"nndm_folds leaves single rows out, which would split the groups of "
            f"{table.group!r}: use knndm_folds (it keeps groups whole), or load the table "
            "without group="
        )
    if space not in ("geographical", "feature"):
        raise ValueError(f"space={space!r}: choose 'geographical' or 'feature'")
    number = isinstance(phi, int | float | np.number) and not isinstance(phi, bool)
    if phi != "max" and not (number and np.isfinite(phi) and phi >= 0):
        raise ValueError(f"phi={phi!r}: need a finite distance of at least 0, or 'max'")
    bad_share = isinstance(min_train, bool) or not isinstance(min_train, int | float | np.number)
    if bad_share or not 0 <= min_train <= 1:
        raise ValueError(f"min_train={min_train!r}: need a share from 0 to 1")
    check_count(sample, "sample", 10, "prediction points")
    return coords if space == "geographical" else table.features


def _match(dist: np.ndarray, star: np.ndarray, gij: np.ndarray, phi: float, min_train: float):
    """CAST's NNDM loop on ``dist`` (NaN = not in the training set), updating ``star`` (the
    leave-one-out distances) in place; only the row whose pair is removed changes."""
    n = len(star)
    rmin = star.min()
    while rmin <= phi:
        j = int(np.flatnonzero(star == rmin)[0])
        ecdf_cv = (np.count_nonzero(star <= rmin) - 1) / n
        ecdf_pred = np.searchsorted(gij, rmin, side="right") / len(gij)
        kept = np.count_nonzero(~np.isnan(dist[j])) / n
        if ecdf_cv >= ecdf_pred and kept > min_train:
            dist[j, dist[j] == rmin] = np.nan
            star[j] = np.nanmin(dist[j])
            rmin = star[star >= rmin].min()
        elif not (star > rmin).any():
            break
        else:
            rmin = star[star > rmin].min()
    return star
