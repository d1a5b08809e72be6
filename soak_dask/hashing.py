"""The package's seeded hash: every random choice (folds, down-samples, row caps, block order)
is a hash of a seed and integer keys, so it is the same on any worker and in any partitioning.

A new random stream takes a salt of its own (``salt("bootstrap")``) as its first key, so two
purposes with one seed never draw the same numbers. The streams of 0.1.0 (folds, train sizes,
row caps, block order) keep their unsalted keys, so their results stay bit-identical.
"""

from __future__ import annotations

import hashlib

import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """Vectorised splitmix64 finaliser: a fast, well-mixed, platform-independent hash."""
    x = x.astype(np.uint64, copy=True)
    x += _GOLDEN
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


def seeded_hash(seed: int, *keys: np.ndarray) -> np.ndarray:
    """Combine integer key arrays (broadcast together) with ``seed`` into uint64 hashes.

    ``seed`` is a non-negative integer below 2**64 (the callers' seeds, from ``check_seed``,
    are below 2**32).

    Examples
    --------
    >>> h = seeded_hash(1, np.arange(3))
    >>> h.dtype, len(set(h.tolist()))
    (dtype('uint64'), 3)
    >>> bool((seeded_hash(1, np.arange(3)) == h).all())
    True
    """
    with np.errstate(over="ignore"):
        h = _splitmix64(np.asarray([seed], dtype=np.uint64))
        for key in keys:
            h = _splitmix64(h ^ np.asarray(key).astype(np.uint64))
    return h


def salt(purpose: str) -> np.uint64:
    """A stable 64-bit key naming a random stream, to pass first to ``seeded_hash``.

    Examples
    --------
    >>> bool(salt("bootstrap") == salt("bootstrap")), bool(salt("bootstrap") == salt("subsample"))
    (True, False)
    """
    digest = hashlib.sha256(f"soak_dask:{purpose}".encode()).digest()
    return np.uint64(int.from_bytes(digest[:8], "little"))


def uniform(h: np.ndarray) -> np.ndarray:
    """Hashes as floats uniform in [0, 1) (their top 53 bits)."""
    return (h >> np.uint64(11)).astype(np.float64) * 2.0**-53
