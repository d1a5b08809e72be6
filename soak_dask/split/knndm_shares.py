"""The fold sizes a kNNDM candidate may have, after CAST's ``knndm``: K folds, none over
``maxp`` of the rows; or (CAST 1.1.1's ``test_prop``, ``test_tolerance``) a train/test split
in two parts, one of which holds ``test_prop`` ± ``test_tolerance`` of the rows, the part
nearer ``test_prop`` being the test part. And the checks of kNNDM's other options that need
no table (``check_knndm_options``), shared by ``knndm_folds`` and the ``KNNDMFolds`` design
(the clustering's, ``fold_options.check_clustering``, is the option declarations' too)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import dask.dataframe as dd
import numpy as np
import pandas as pd
import xarray as xr

from ..tables.table import Table
from .fold_options import check_n_folds, check_seed

#: A candidate whose folds may be chosen (its W is compared with the others').
SCORED = "scored"
#: CAST's defaults: K, the largest share of one fold, a split's tolerance.
DEFAULT_FOLDS, DEFAULT_MAXP, DEFAULT_TOLERANCE = 10, 0.5, 0.1
#: Prediction points kNNDM samples by default (CAST's ``samplesize`` is 1000).
DEFAULT_SAMPLE = 10_000
#: Slack of a split's bounds: test_prop ± test_tolerance in floats (0.3 + 0.1 is
#: 0.39999...) must keep a part of exactly 0.4 (CAST adds such a slack where maxp is 1/2).
SLACK = 1e-9


@dataclass(frozen=True)
class Shares:
    """The fold sizes allowed: ``n_folds`` folds of at most ``maxp`` of the rows each, or,
    with ``test_prop``, a split in 2 parts one of which holds ``minp`` to ``maxp`` of them."""

    n_folds: int
    maxp: float
    minp: float = 0.0
    test_prop: float | None = None

    @property
    def split(self) -> bool:
        """Whether the folds are a train/test split."""
        return self.test_prop is not None

    def verdict(self, folds: np.ndarray) -> tuple[float, str]:
        """The largest fold's share of ``folds`` (values 1..K) and ``SCORED``, or why those
        folds may not be chosen.

        >>> Shares(2, 0.6).verdict(np.array([1, 1, 1, 2, 2]))
        (0.6, 'scored')
        >>> Shares(2, 0.4, 0.2, 0.3).verdict(np.array([1] * 9 + [2]))[1]
        'no part of 0.2 to 0.4 of the rows (test_prop ± test_tolerance)'
        """
        sizes = np.bincount(folds, minlength=self.n_folds + 1)[1:]
        largest = float(sizes.max() / len(folds))
        if not sizes.all():
            return largest, "a fold without rows"
        if not self.split:
            return largest, SCORED if largest <= self.maxp else f"a fold over maxp={self.maxp:g}"
        share = sizes / len(folds)
        if ((share >= self.minp - SLACK) & (share <= self.maxp + SLACK)).any():
            return largest, SCORED
        bounds = f"{self.minp:g} to {self.maxp:g}"
        return largest, f"no part of {bounds} of the rows (test_prop ± test_tolerance)"

    def test_fold(self, folds: np.ndarray) -> int | None:
        """The test part of a split: the part whose share is nearer ``test_prop`` (part 1 on
        a tie, as CAST); None for CV folds."""
        if not self.split:
            return None
        share = np.bincount(folds, minlength=3)[1:3] / len(folds)
        deviation = np.abs(share - self.test_prop)
        return 2 if deviation[0] > deviation[1] else 1


def fold_shares(n_folds: Any, maxp: Any, test_prop: Any, test_tolerance: Any) -> Shares:
    """The ``Shares`` of ``knndm_folds``' options, checked: K (default 10) and ``maxp``
    (default 0.5, 1/K < maxp < 1); or ``test_prop`` (0 to 1) and ``test_tolerance``
    (default 0.1), whose bounds must lie within (0, 1) -- CAST resets a bound outside to 0.1
    or 0.9 with a warning, which can leave test_prop outside its own bounds: refused here.
    ``n_folds`` or ``maxp`` beside ``test_prop`` is refused: the split sets both."""
    if test_prop is None:
        if test_tolerance is not None:
            raise ValueError(
                f"test_tolerance={test_tolerance!r} without test_prop: it is the allowed "
                "deviation of a train/test split's test share; give test_prop= too"
            )
        n_folds = check_n_folds(DEFAULT_FOLDS if n_folds is None else n_folds, "n_folds")
        maxp = DEFAULT_MAXP if maxp is None else maxp
        if not _number(maxp) or not 1 / n_folds < maxp < 1:
            raise ValueError(f"maxp={maxp!r}: need 1/n_folds < maxp < 1 (CAST's default 0.5)")
        return Shares(n_folds, float(maxp))
    given = [f"{k}={v!r}" for k, v in (("n_folds", n_folds), ("maxp", maxp)) if v is not None]
    if given:
        raise ValueError(
            f"{', '.join(given)} with test_prop={test_prop!r}: a train/test split has 2 parts, "
            "one of test_prop ± test_tolerance of the rows; leave n_folds and maxp out"
        )
    if not _number(test_prop) or not 0 < test_prop < 1:
        raise ValueError(f"test_prop={test_prop!r}: need a share between 0 and 1 (e.g. 0.3)")
    tolerance = DEFAULT_TOLERANCE if test_tolerance is None else test_tolerance
    if not _number(tolerance) or not tolerance >= 0:
        raise ValueError(f"test_tolerance={tolerance!r}: need a share of at least 0 (e.g. 0.1)")
    low, high = test_prop - tolerance, test_prop + tolerance
    if low <= 0 or high >= 1:
        raise ValueError(
            f"test_prop={test_prop:g} ± test_tolerance={tolerance:g} is {low:g} to {high:g}: "
            f"both bounds must lie within (0, 1); give a test_tolerance below "
            f"{min(test_prop, 1 - test_prop):g}"
        )
    return Shares(2, float(high), float(low), float(test_prop))


def check_knndm_options(
    space: Any,
    seed: Any,
    counts: Mapping[str, Any],
    cv_sample: Any,
    folds: tuple[Any, Any, Any, Any],
) -> tuple[Shares, int]:
    """The fold sizes allowed (``folds``: n_folds, maxp, test_prop, test_tolerance) and the
    seed, after refusing, by name, any option of ``knndm_folds`` that needs no table and is
    not what it documents: ``space``, ``seed``, ``counts`` (``sample``, ``n_candidates``,
    ``max_clusters``) and ``cv_sample``."""
    if space not in ("geographical", "feature"):
        raise ValueError(f"space={space!r}: choose 'geographical' or 'feature'")
    shares = fold_shares(*folds)
    check_count(counts["sample"], "sample", 10, "prediction points")
    check_count(counts["n_candidates"], "n_candidates", 1, "cluster counts tried")
    least = shares.n_folds
    check_count(counts["max_clusters"], "max_clusters", least, "clusters (n_folds or more)")
    check_count(cv_sample, "cv_sample", 10, "training points")
    return shares, check_seed(seed)


def check_prediction(prediction: Any, caller: str) -> Any:
    """``prediction`` if it can be a prediction area (a Table, a pandas or Dask DataFrame,
    an xarray Dataset raster or a path), checked before it is read; else an error naming
    ``prediction`` and what ``caller`` takes."""
    if prediction is None:
        raise ValueError(
            f"{caller} needs prediction= (the prediction area; soak evaluate: --prediction)"
        )
    areas = Table | pd.DataFrame | dd.DataFrame | xr.Dataset | str | os.PathLike
    if not isinstance(prediction, areas):
        refuse_prediction(prediction)
    return prediction


def refuse_prediction(prediction: Any) -> None:
    """The error of a ``prediction`` of a type no prediction area has."""
    raise TypeError(
        f"prediction is a {type(prediction).__name__}: give a Table, a pandas/Dask "
        "DataFrame, an xarray Dataset raster or a path"
    )


def check_count(value: Any, name: str, least: int, what: str) -> int:
    """``value`` as an int of at least ``least``; anything else (floats, booleans, NaN)
    refused, naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < least:
        raise ValueError(f"{name}={value!r}: need an integer of at least {least} ({what})")
    return int(value)


def _number(value: Any) -> bool:
    """A finite real number, not a boolean."""
    real = isinstance(value, int | float | np.integer | np.floating)
    return real and not isinstance(value, bool) and bool(np.isfinite(value))
