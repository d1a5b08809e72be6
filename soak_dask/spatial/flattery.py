"""How much random folds flatter a model on spatially correlated rows: the distance from each
test row to its nearest training row, under random K-fold and under K-fold of square blocks
(``spatial_range`` reports the share within the range of autocorrelation); and the round
block size ``spatial_range`` proposes.

Folds are seeded hashes (of a row's coordinates for random folds, of its block for block
folds), so they do not depend on the order of the rows. Each fold's test rows are measured
against a k-d tree of the other folds' rows.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.spatial import cKDTree

from ..hashing import salt, seeded_hash
from ..split.neighbours import point_hashes
from .blocks import square_blocks

#: Round multiples of a power of ten a proposed block size is rounded up to.
ROUND = (1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0)


def round_up(value: float) -> float:
    """The smallest round number (``ROUND`` × a power of ten) at least ``value`` (> 0).

    Examples
    --------
    >>> round_up(340.0), round_up(12.1), round_up(0.0042)
    (400.0, 15.0, 0.005)
    """
    power = 10.0 ** math.floor(math.log10(value))
    step = next(r for r in ROUND if r * power >= value * (1 - 1e-12))
    return float(f"{step * power:.12g}")  # 1.2 × 0.001 without its binary tail


def random_folds(xy: np.ndarray, n_folds: int, seed: int) -> np.ndarray:
    """Random K-fold: a seeded hash of each row's coordinates modulo K."""
    return (point_hashes(xy, seed, "spatial_range_random_folds") % np.uint64(n_folds)).astype(
        np.int64
    )


def block_folds(xy: np.ndarray, size: float, n_folds: int, seed: int) -> np.ndarray:
    """K-fold of square blocks ``size`` wide (from the origin, as ``spatial_blocks``): a seeded
    hash of each row's block modulo K."""
    blocks = square_blocks(xy[:, 0], xy[:, 1], size, (0.0, 0.0)).view(np.uint64)
    h = seeded_hash(seed, salt("spatial_range_block_folds"), blocks)
    return (h % np.uint64(n_folds)).astype(np.int64)


def training_distances(xy: np.ndarray, folds: np.ndarray) -> np.ndarray:
    """Distance from each row to its nearest row of another fold: its nearest training row
    when its fold is tested (infinite with a single fold).

    Examples
    --------
    >>> xy = np.array([[0.0, 0.0], [1.0, 0.0], [10.0, 0.0], [12.0, 0.0]])
    >>> training_distances(xy, np.array([0, 1, 0, 0])).tolist()
    [1.0, 1.0, 9.0, 11.0]
    """
    out = np.full(len(xy), np.inf)
    for fold in np.unique(folds):
        test = folds == fold
        if not test.all():
            # An unbalanced tree builds in half the time and queries as fast on 2-D points.
            tree = cKDTree(xy[~test], balanced_tree=False, compact_nodes=False)
            out[test] = tree.query(xy[test], k=1)[0]
    return out
