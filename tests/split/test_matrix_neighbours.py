"""Nearest neighbours in many dimensions (kNNDM in feature space): above ``TREE_DIMS`` the
exact matrix search replaces k-d trees, and gives the trees' distances -- to each reference
point, to the nearest other point, to the nearest point of another fold -- duplicates (0)
and a lone fold (inf) included."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial import cKDTree

from soak_dask.split.kmeans import nearest_centre
from soak_dask.split.knndm import cv_distances
from soak_dask.split.neighbours import TREE_DIMS, loo_distance, nn_distance


def by_trees(points: np.ndarray, folds: np.ndarray) -> np.ndarray:
    out = np.full(len(points), np.inf)
    for f in np.unique(folds):
        other = folds != f
        out[other] = np.minimum(out[other], cKDTree(points[folds == f]).query(points[other])[0])
    return out


@settings(max_examples=25)
@given(
    n=st.integers(2, 60),
    d=st.integers(TREE_DIMS + 1, 40),
    k=st.integers(1, 5),
    seed=st.integers(0, 2**32 - 1),
    dupes=st.booleans(),
)
def test_matrix_search_gives_the_trees_distances(n, d, k, seed, dupes):
    rng = np.random.default_rng(seed)
    points = rng.normal(size=(n, d))
    if dupes:
        points[-1] = points[0]  # a duplicate: distance 0, as the tree says
    query = rng.normal(size=(7, d))
    folds = rng.integers(1, k + 1, n)
    np.testing.assert_allclose(nn_distance(points, query), cKDTree(points).query(query)[0])
    np.testing.assert_allclose(loo_distance(points), cKDTree(points).query(points, k=2)[0][:, 1])
    np.testing.assert_allclose(cv_distances(points, folds), by_trees(points, folds))
    rows = np.sort(rng.choice(n, size=min(n, 5), replace=False))
    np.testing.assert_allclose(cv_distances(points, folds, rows), by_trees(points, folds)[rows])


def test_duplicates_and_a_lone_fold():
    rng = np.random.default_rng(3)
    points = rng.normal(size=(50, 20))
    points[7] = points[3]
    assert loo_distance(points)[3] == 0.0 and loo_distance(points)[7] == 0.0
    assert np.isinf(cv_distances(points, np.ones(50, dtype=np.int64))).all()


@pytest.mark.parametrize("d", [2, 30])
def test_nearest_centre_is_the_nearest(d):
    rng = np.random.default_rng(d)
    points, centres = rng.normal(size=(400, d)), rng.normal(size=(9, d))
    expected = ((points[:, None, :] - centres[None]) ** 2).sum(axis=2).argmin(axis=1)
    np.testing.assert_array_equal(nearest_centre(points, centres), expected)
