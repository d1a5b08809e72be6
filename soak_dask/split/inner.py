"""The inner resampling: splits of one outer training part that only rank candidate settings
(and give Platt scaling its out-of-fold predictions). ``inner="auto"`` picks a scheme the data
can support, as docs/nesting.md tabulates; the choice is recorded with each fit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from sklearn.model_selection import (
    GroupKFold,
    KFold,
    LeaveOneGroupOut,
    LeaveOneOut,
    RepeatedKFold,
    RepeatedStratifiedKFold,
    StratifiedKFold,
)

from ..schema import INNER_SCHEMES
from .fold_options import check_n_folds, check_seed

#: ``auto`` uses leave-one-group-out up to ``max(inner_folds, LOGO_GROUPS)`` groups.
LOGO_GROUPS = 10
#: ``auto``: an ungrouped training part of at most this many rows is small ...
SMALL_ROWS = 2_000
#: ... and with a cheap learner it is ranked by repeated K-fold, at least this many times.
AUTO_REPEATS = 3
#: Most rows ``loo`` accepts: one refit per row for every candidate setting.
MAX_LOO_ROWS = 1_000


@dataclass(frozen=True)
class Inner:
    """How the inner splits are drawn (validated): ``inner``, ``folds``, ``repeats``, ``seed``.

    Examples
    --------
    >>> Inner("auto", 5).splits(np.repeat([0, 1], 50), groups=np.repeat(np.arange(20), 5))[0]
    'group 5-fold (20 groups)'
    """

    inner: str = "auto"
    folds: int = 5
    repeats: int = 1
    seed: int = 1

    def __post_init__(self) -> None:
        if self.inner not in INNER_SCHEMES:
            raise ValueError(f"inner={self.inner!r}: choose one of {', '.join(INNER_SCHEMES)}")
        check_n_folds(self.folds, "inner_folds")
        if isinstance(self.repeats, bool) or not isinstance(self.repeats, int | np.integer):
            raise ValueError(f"inner_repeats={self.repeats!r}: need an integer of at least 1")
        if self.repeats < 1:
            raise ValueError(f"inner_repeats={self.repeats!r}: need an integer of at least 1")
        check_seed(self.seed)

    def splits(
        self, y: Any, groups: Any = None, *, cheap: bool = False, classify: bool = True
    ) -> tuple[str, list[tuple[np.ndarray, np.ndarray]]]:
        """A description of the scheme used and its (train, test) row positions.

        Parameters
        ----------
        y : array
            The training part's labels (classes stratify ungrouped folds when ``classify``).
        groups : array, optional
            Group of each row: every scheme then keeps groups whole.
        cheap : bool
            The learner is cheap (``soak_dask.learn.tuning.is_cheap``): ``auto`` repeats
            K-fold on a small ungrouped training part.
        classify : bool
            Classification labels (stratified folds) rather than numbers.
        """
        y = np.asarray(y)
        if groups is not None:
            return self._grouped(y, np.asarray(groups))
        if self.inner == "loo":
            if len(y) > MAX_LOO_ROWS:
                raise ValueError(
                    f"inner='loo' on a training part of {len(y):,} rows means that many refits "
                    f"per candidate setting (at most {MAX_LOO_ROWS:,}); use inner='cv'"
                )
            return "leave-one-out", list(LeaveOneOut().split(y))
        folds = _capped_folds(self.folds, y) if classify else min(self.folds, len(y))
        repeats = self.repeats
        note = ""
        if self.inner == "auto" and len(y) <= SMALL_ROWS and cheap:
            repeats, note = max(repeats, AUTO_REPEATS), f" (small: {len(y)} rows, cheap learner)"
        if self.inner == "cv":
            repeats = 1
        kind = "stratified " if classify else ""
        if repeats > 1:
            make = RepeatedStratifiedKFold if classify else RepeatedKFold
            cv = make(n_splits=folds, n_repeats=repeats, random_state=self.seed)
            return f"repeated {kind}{folds}-fold × {repeats}{note}", list(cv.split(y, y))
        make = StratifiedKFold if classify else KFold
        cv = make(n_splits=folds, shuffle=True, random_state=self.seed)
        return f"{kind}{folds}-fold", list(cv.split(y, y))

    def _grouped(
        self, y: np.ndarray, groups: np.ndarray
    ) -> tuple[str, list[tuple[np.ndarray, np.ndarray]]]:
        n = pd.unique(groups).size
        if n < 2:
            raise ValueError(
                "the training part holds one group: no inner split keeps groups whole; tune "
                "without a group column or on more groups"
            )
        logo = self.inner == "loo" or (self.inner == "auto" and n <= max(self.folds, LOGO_GROUPS))
        if logo:
            return f"leave-one-group-out ({n} groups)", list(LeaveOneGroupOut().split(y, y, groups))
        folds = min(self.folds, n)
        repeats = self.repeats if self.inner != "cv" else 1
        splits = []
        for r in range(repeats):
            cv = GroupKFold(n_splits=folds, shuffle=True, random_state=(self.seed + r) % 2**32)
            splits += list(cv.split(y, y, groups))
        times = f" × {repeats}" if repeats > 1 else ""
        return f"group {folds}-fold{times} ({n} groups)", splits


def _capped_folds(folds: int, y: np.ndarray) -> int:
    """``folds``, capped by the rarest class's rows (every fold then holds every class)."""
    values, counts = np.unique(y, return_counts=True)
    rarest = int(counts.min())
    if rarest < 2:
        raise ValueError(
            f"class {values[counts.argmin()].item()!r} has {rarest} row in this training part: no "
            "inner split can hold it on both sides, so settings cannot be ranked; drop the class "
            "or use fewer outer folds"
        )
    return min(folds, rarest)
