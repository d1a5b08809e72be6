"""``SameOtherAllCV``: SOAK as an in-memory scikit-learn splitter."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pandas as pd
from sklearn.model_selection import BaseCrossValidator
from sklearn.utils.multiclass import type_of_target

from ..schema import DEFAULT_N_FOLDS, TRAIN_TYPES
from ..tables.roles import check_one_type
from .fold_options import check_n_folds, check_seed
from .folds import group_folds, permuted_block_folds
from .plan import Plan
from .same_other_all import SameOtherAll, check_train_types


class SameOtherAllCV(BaseCrossValidator):
    """Same/Other/All K-fold cross-validator for arrays in memory.

    For each test subset σ and fold κ the test set is the rows with subset σ in fold κ; the
    train set is the rows not in fold κ with subset σ ("same"), another subset ("other"), or any
    subset ("all"). Folds are stratified by subset × class (for a classification ``y``) and
    exactly balanced, with whole groups kept in one fold -- the same folds as
    ``soak_dask.assign_folds`` gives for the same rows and seed.

    A scikit-learn ``BaseCrossValidator``: ``cross_validate(est, X, y, groups=g, cv=cv)``
    passes the groups to ``split``, and so does metadata routing
    (``params={"groups": g}``), as for ``GroupKFold``.

    Parameters
    ----------
    subset : array-like of shape (n_samples,)
        Subset of each row. It is never a feature.
    n_splits : int, default=10
        Number of folds K, 2 to 127 (ignored when ``fold`` is given).
    train_types : sequence of {"same", "other", "all"}, default=("same", "other", "all")
        With one subset only "same" exists (plain K-fold CV).
    fold : array-like of shape (n_samples,), optional
        Predefined folds 1..K to use as is.
    random_state : int, default=1
        Seed of the fold assignment, an integer from 0 to 2**32 - 1.
    stratify : bool, default=True
        Balance folds within subset × class when ``y`` holds classes.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.model_selection import cross_val_score
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(120, 3)); y = (X[:, 0] > 0).astype(int)
    >>> subset = np.repeat(["A", "B"], 60)
    >>> cv = SameOtherAllCV(subset, n_splits=3)
    >>> scores = cross_val_score(LogisticRegression(), X, y, cv=cv)
    >>> len(scores) == cv.get_n_splits()
    True
    >>> cv.split_info(X, y).iloc[0].to_dict()
    {'test_subset': 'A', 'fold': 1, 'train_type': 'same', 'fit_id': 0}
    """

    # Groups are requested by split under metadata routing, as scikit-learn's group splitters do.
    __metadata_request__split = {"groups": True}

    def __init__(
        self,
        subset: Sequence,
        n_splits: int = DEFAULT_N_FOLDS,
        *,
        train_types: Sequence[str] = TRAIN_TYPES,
        fold: Sequence | None = None,
        random_state: int = 1,
        stratify: bool = True,
    ) -> None:
        check_one_type(pd.Series(subset), "subset")  # np.asarray would make 1 and '1' one
        self.subset = np.asarray(subset)
        self.n_splits = n_splits
        self.train_types = check_train_types(train_types)
        self.fold = None if fold is None else np.asarray(fold)
        self.random_state = check_seed(random_state, "random_state")
        self.stratify = stratify
        if self.fold is None:
            check_n_folds(n_splits, "n_splits")
        if self.fold is not None and len(self.fold) != len(self.subset):
            raise ValueError(f"fold has {len(self.fold)} values but subset has {len(self.subset)}")

    def __repr__(self) -> str:
        return (
            f"SameOtherAllCV(n_subsets={len(np.unique(self.subset))}, n_splits={self._k()}, "
            f"train_types={list(self.train_types)}, random_state={self.random_state})"
        )

    def _k(self) -> int:
        return int(self.fold.max()) if self.fold is not None else self.n_splits

    def _plan(self) -> Plan:
        design = SameOtherAll(self._k(), self.train_types)
        return design.plan_for(sorted(np.unique(self.subset).tolist()))

    def get_n_splits(self, X=None, y=None, groups=None) -> int:
        """Number of (test_subset, fold, train_type) splits."""
        return len(self._plan().splits)

    def split_info(self, X=None, y=None, groups=None) -> pd.DataFrame:
        """One row per split, in ``split`` order: test_subset, fold, train_type, fit_id.

        Splits sharing a ``fit_id`` have the same train set.
        """
        return self._plan().splits[["test_subset", "fold", "train_type", "fit_id"]]

    def folds(self, X, y=None, groups=None) -> np.ndarray:
        """The fold (1..K) of every row."""
        n = len(X)
        if n != len(self.subset):
            raise ValueError(f"X has {n} rows but subset has {len(self.subset)} values")
        if self.fold is not None:
            return self.fold.astype(np.int64)
        keys = [pd.Series(self.subset)]
        if self.stratify and y is not None and type_of_target(y) != "continuous":
            keys.append(pd.Series(np.asarray(y)))
        codes = pd.MultiIndex.from_arrays(keys).factorize(sort=True)[0]
        k, seed = self.n_splits, self.random_state
        if groups is None:
            local = pd.Series(codes).groupby(codes).cumcount().to_numpy()
            return permuted_block_folds(codes, local, k, seed).astype(np.int64)
        check_one_type(pd.Series(groups), "groups")
        table = pd.DataFrame({"group": np.asarray(groups), "stratum": codes})
        sizes = table.groupby(["group", "stratum"]).size().rename("n").reset_index()
        if sizes["group"].duplicated().any():
            raise ValueError("a group spans two subsets or classes; a group needs one of each")
        mapping = group_folds(sizes, k, seed)
        return mapping.reindex(table["group"]).to_numpy().astype(np.int64)

    def split(self, X, y=None, groups=None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield (train indices, test indices) for each split, in ``split_info`` order."""
        keys = pd.DataFrame({"subset": self.subset, "fold": self.folds(X, y, groups)})
        plan = self._plan()
        for fit_id, block in zip(plan.splits["fit_id"], plan.splits["block"], strict=True):
            train = np.flatnonzero(plan.fits.at[fit_id, "train"].mask(keys))
            yield train, np.flatnonzero(plan.blocks.at[block, "test"].mask(keys))
