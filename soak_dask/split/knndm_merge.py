"""How kNNDM turns clusters into folds, whichever clustering made them (k-means or a cut of
the Ward tree): CAST's merge of clusters into K folds along the first principal component,
and the move of a group's stray rows into its majority fold."""

from __future__ import annotations

import numpy as np
import pandas as pd


def first_component(points: np.ndarray) -> np.ndarray:
    """The first principal axis of ``points`` (of at most about 200,000 of them, every
    m-th row), as CAST's ``prcomp(rank = 1)`` orders clusters by it."""
    centred = points - points.mean(axis=0)
    return np.linalg.svd(centred[:: max(1, len(points) // 200_000)], full_matrices=False)[2][0]


def merge_clusters(
    points: np.ndarray,
    labels: np.ndarray,
    n_folds: int,
    split: bool = False,
    pc1: np.ndarray | None = None,
) -> np.ndarray | None:
    """Each cluster's fold, as CAST merges clusters into K folds: clusters ordered by their
    centroid's score on the points' first principal component (``pc1``, computed by
    ``first_component`` when not given: give it when merging many clusterings of the same
    points); those of at least n/K points take folds 1, 2, ... in that order; the others
    are dealt in turn to the remaining folds. A train/test ``split`` (CAST's ``test_prop``)
    deals every cluster in turn to parts 1, 2. None when no fold is left for them."""
    n_labels = int(labels.max()) + 1
    counts = np.bincount(labels, minlength=n_labels)
    centred = points - points.mean(axis=0)
    pc1 = first_component(points) if pc1 is None else pc1
    sums = np.stack([np.bincount(labels, weights=c, minlength=n_labels) for c in centred.T], 1)
    present = np.flatnonzero(counts)
    score = (sums[present] / counts[present, None]) @ pc1
    order = present[np.argsort(score, kind="stable")]
    fold_of = np.zeros(n_labels, dtype=np.int64)
    big = order[:0] if split else order[counts[order] >= len(points) / n_folds]
    fold_of[big] = np.arange(1, len(big) + 1)
    rest = order[fold_of[order] == 0]
    left = np.arange(len(big) + 1, n_folds + 1)
    if len(rest) and not len(left):
        return None
    fold_of[rest] = np.resize(left, len(rest))
    return fold_of


def whole_groups(
    folds: np.ndarray, codes: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray | None]:
    """Folds that keep groups whole: each group takes the fold of most of its rows (the
    smallest such fold on a tie); the rows' folds and each group code's fold. CAST's
    ``knndm`` has no groups: this keeps its clusters and moves only a group's stray rows.

    >>> whole_groups(np.array([1, 2, 2, 1, 3]), np.array([0, 0, 0, 1, 1]))[0].tolist()
    [2, 2, 2, 1, 1]
    """
    if codes is None:
        return folds, None
    pairs = pd.DataFrame({"g": codes, "f": folds}).value_counts().reset_index(name="n")
    pairs = pairs.sort_values(["g", "n", "f"], ascending=[True, False, True], kind="stable")
    best = pairs.drop_duplicates("g")
    group_fold = np.zeros(int(codes.max()) + 1, dtype=np.int64)
    group_fold[best["g"].to_numpy()] = best["f"].to_numpy()
    return group_fold[codes], group_fold
