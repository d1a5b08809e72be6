"""The checks of the fold options every design shares (seed, K, how groups are dealt), and the
outer strategies of ``evaluate``: numpy
alone, so that ``soak_dask.settings`` checks them without loading the engine (a command-line
mistake is refused before Dask and scikit-learn load)."""

from __future__ import annotations

from numbers import Real
from typing import Any

import numpy as np

from ..schema import DEFAULT_N_FOLDS

#: Seeds are below this bound of scikit-learn's ``random_state`` (built-in learners get the
#: seed as theirs); the folds' hash alone would take any 64-bit seed.
SEED_LIMIT = 2**32
#: Folds are stored as int8.
MAX_FOLDS = 127
#: The outer strategies of ``evaluate`` (``soak_dask.split.outer`` builds them). ``knndm``:
#: K-fold on the fold column of ``soak_dask.split.knndm`` (evaluate adds it).
OUTER = ("cv", "repeated_cv", "subsampling", "loo", "lodo", "bootstrap", "5x2cv", "knndm")
#: How whole groups are dealt to folds (``assign_folds(group_assignment=...)``), default first.
GROUP_ASSIGNMENTS = ("rows", "mlr3resampling")
#: kNNDM's clusterings of the candidates (CAST's ``clustering``).
CLUSTERINGS = ("hierarchical", "kmeans")


def check_clustering(clustering: Any, space: str, name: str = "clustering") -> str:
    """The clustering of kNNDM's candidates: ``clustering`` if it is one of ``CLUSTERINGS``;
    None: "hierarchical" in feature space (CAST's default), "kmeans" in geographical space.

    >>> check_clustering(None, "feature"), check_clustering(None, "geographical")
    ('hierarchical', 'kmeans')
    """
    if clustering is None:
        return "hierarchical" if space == "feature" else "kmeans"
    if clustering not in CLUSTERINGS:
        raise ValueError(
            f"{name}={clustering!r}: choose 'hierarchical' (one Ward tree cut at every "
            "cluster count, CAST's default) or 'kmeans' (a k-means fit per count)"
        )
    return clustering


def check_seed(seed: Any, name: str = "seed") -> int:
    """``seed`` as an int, refusing anything but an integer from 0 to 2**32 - 1.

    Floats (even 1.0), strings, booleans and None are refused, never rounded or parsed. One
    range serves the folds' hash (any 64-bit seed) and the learners' ``random_state``
    (scikit-learn takes 0 to 2**32 - 1), so the seed a run records is the one every part used.

    Examples
    --------
    >>> check_seed(np.int64(7))
    7
    >>> check_seed(1.0)
    Traceback (most recent call last):
    ...
    ValueError: seed=1.0: need an integer from 0 to 2**32 - 1
    """
    if (
        isinstance(seed, bool)
        or not isinstance(seed, int | np.integer)
        or not 0 <= seed < SEED_LIMIT
    ):
        raise ValueError(f"{name}={seed!r}: need an integer from 0 to 2**32 - 1")
    return int(seed)


def fold_count(*given: int | None) -> int:
    """K: the first of `given` that is set (a call's K, a builder's, a fold column's), else
    ``DEFAULT_N_FOLDS``, the one default of every design of SOAK's folds.

    >>> fold_count(None, 5), fold_count(None, None)
    (5, 10)
    """
    return next((int(k) for k in given if k), DEFAULT_N_FOLDS)


def check_n_folds(n_folds: Any, name: str = "n_folds") -> int:
    """``n_folds`` as an int, refusing anything but an integer from 2 to 127."""
    if isinstance(n_folds, bool) or not isinstance(n_folds, int | np.integer) or n_folds < 2:
        raise ValueError(f"{name}={n_folds!r}: need an integer of at least 2")
    if n_folds > MAX_FOLDS:
        raise ValueError(f"{name}={n_folds} is more than {MAX_FOLDS} folds; use fewer folds")
    return int(n_folds)


def check_sizes(sizes: Any, name: str = "sizes") -> int:
    """``sizes`` of SOAK's down-sampling: -1 (none), 0 (the smallest train set) or n >= 1."""
    if isinstance(sizes, bool) or not isinstance(sizes, int | np.integer) or sizes < -1:
        raise ValueError(f"{name}={sizes!r}: use -1 (none), 0 (smallest) or n >= 1")
    return int(sizes)


def check_open_ratio(ratio: Any, name: str = "ratio") -> float:
    """A ratio strictly between 0 and 1 (between down-sampled sizes; a share that trains)."""
    if isinstance(ratio, bool) or not isinstance(ratio, Real):
        raise ValueError(f"{name}={ratio!r}: need 0 < ratio < 1")
    if not 0 < ratio < 1:
        raise ValueError(f"{name}={ratio!r}: need 0 < ratio < 1")
    return float(ratio)


def check_size_seeds(size_seeds: Any, name: str = "size_seeds") -> int:
    """Down-samples per size: an integer of at least 1."""
    if (
        isinstance(size_seeds, bool)
        or not isinstance(size_seeds, int | np.integer)
        or size_seeds < 1
    ):
        raise ValueError(f"{name}={size_seeds!r}: need an integer of at least 1")
    return int(size_seeds)


def check_group_assignment(value: Any, name: str = "group_assignment") -> str:
    """``value`` if it names one of `GROUP_ASSIGNMENTS`."""
    if value not in GROUP_ASSIGNMENTS:
        raise ValueError(
            f"{name}={value!r}: choose 'rows' (whole groups dealt so that every fold of a "
            "stratum gets about the same rows) or 'mlr3resampling' (the same number of groups "
            "per fold, rows ignored, as the R package deals them)"
        )
    return value


def check_assignment_groups(group: str | None, value: Any, name: str = "group_assignment") -> None:
    """Refuse a way of dealing groups (`value`, other than the default ``"rows"``) for a table
    without a group column (`group` None): there are no groups to deal."""
    if group is None and value != GROUP_ASSIGNMENTS[0]:
        raise ValueError(
            f"{name}={value!r} says how whole groups are dealt to folds, and the table has no "
            f"group column: load it with group=COLUMN (--group), or leave {name} out"
        )
