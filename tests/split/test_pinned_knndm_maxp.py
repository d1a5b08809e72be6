"""kNNDM's ``maxp`` pinned (issue 40, item 6): a candidate clustering is discarded exactly when
its largest fold holds more than ``maxp`` of the rows (CAST's ``knndm``: ``max(table(folds)) /
n > maxp``); at ``maxp`` itself it is kept."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import soak_dask as sd
from soak_dask.split.knndm import score_candidate


def _two_clumps(big: int, small: int) -> np.ndarray:
    """``big`` points around (0, 0) and ``small`` around (100, 0): k-means with two clusters
    finds the two clumps."""
    rng = np.random.default_rng(0)
    return np.r_[rng.normal(size=(big, 2)), rng.normal(size=(small, 2)) + [100.0, 0.0]]


GIJ = np.array([0.5, 1.0, 2.0])


@pytest.mark.parametrize(
    ("maxp", "kept"),
    [(0.6, True), (0.6 - 1e-9, False), (0.59, False), (0.75, True)],
)
def test_a_candidate_is_discarded_only_above_maxp(maxp, kept):
    """6 + 4 points, K = 2, two clusters: the clump of 6 (>= n / K = 5) is fold 1, the other
    fold 2, so the largest fold holds 6 / 10 = 0.6 of the rows."""
    points = _two_clumps(6, 4)
    nk, w, largest, centres, fold_of = score_candidate(points, GIJ, 2, 2, maxp, 1, None)
    assert nk == 2 and largest == pytest.approx(0.6, rel=0, abs=1e-15)
    assert bool(np.isfinite(w)) is kept
    assert (centres is not None) is kept and (fold_of is not None) is kept


def test_three_folds_share_of_the_largest():
    """5 + 3 + 2 points, K = 3, three clusters: only the clump of 5 reaches n / K = 10 / 3 and
    takes a fold of its own; the clumps of 3 and 2 are dealt one to each remaining fold. The
    largest fold holds 5 / 10: kept at maxp 0.5, discarded at 0.49."""
    rng = np.random.default_rng(1)
    points = np.r_[
        rng.normal(size=(5, 2)),
        rng.normal(size=(3, 2)) + [100, 0],
        rng.normal(size=(2, 2)) + [0, 100],
    ]
    kept = score_candidate(points, GIJ, 3, 3, 0.5, 1, None)
    dropped = score_candidate(points, GIJ, 3, 3, 0.49, 1, None)
    assert kept[2] == dropped[2] == pytest.approx(0.5, rel=0, abs=1e-15)
    assert np.isfinite(kept[1]) and np.isnan(dropped[1])
    assert sorted(np.bincount(kept[4])[1:].tolist()) == [1, 1, 1]  # a fold per cluster


def _clustered(
    n_clusters: int = 6, per: int = 30, seed: int = 2
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Training points in tight clumps of unequal sizes, a prediction grid over the square."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0, 100, (n_clusters, 2))
    sizes = per * np.arange(1, n_clusters + 1) // 2
    xy = np.concatenate(
        [c + rng.normal(scale=3, size=(k, 2)) for c, k in zip(centres, sizes, strict=True)]
    )
    df = pd.DataFrame({"x": xy[:, 0], "y": xy[:, 1], "f": rng.normal(size=len(xy))})
    df["label"] = df.f + rng.normal(scale=0.3, size=len(df))
    g = np.stack(np.meshgrid(np.arange(1, 100, 4.0), np.arange(1, 100, 4.0)), -1).reshape(-1, 2)
    return df, pd.DataFrame({"x": g[:, 0], "y": g[:, 1]})


def test_knndm_folds_discards_exactly_the_candidates_over_maxp():
    """Through ``knndm_folds``: every candidate whose largest fold is over maxp has no W, every
    one at or under it has its W of a loose maxp (0.9, which discards none here), and the folds
    chosen are those of smallest W among the kept -- not the loose run's best, over maxp."""
    df, pred = _clustered()
    table = sd.load_table(df, label="label", coords=["x", "y"])
    kw = {"n_folds": 3, "sample": 500, "seed": 3, "n_candidates": 12}
    maxp = 0.35
    res = sd.knndm_folds(table, pred, maxp=maxp, **kw)
    loose = sd.knndm_folds(table, pred, maxp=0.9, **kw).candidates
    assert res.method == "kmeans" and loose["W"].notna().all()
    cand = res.candidates
    pd.testing.assert_series_equal(cand["largest_fold"], loose["largest_fold"])
    over = cand["largest_fold"] > maxp
    assert cand.loc[over, "W"].isna().all()
    pd.testing.assert_series_equal(cand.loc[~over, "W"], loose.loc[~over, "W"])
    best_loose = loose.loc[loose["W"].idxmin()]
    assert best_loose["largest_fold"] > maxp  # the constraint binds in this scene
    assert res.n_clusters == loose.loc[~over].loc[lambda c: c["W"].idxmin(), "n_clusters"]
    assert max(res.fold_sizes) / len(df) <= maxp
