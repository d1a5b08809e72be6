"""The split plan: which train sets SOAK fits, as data, before anything runs."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd

from ..schema import TRAIN_TYPES


def check_train_types(train_types: Iterable[str] | str) -> tuple[str, ...]:
    """Validate ``train_types`` and return them in canonical order (same, other, all).

    A string such as ``"same,all"`` is split on commas.
    """
    if isinstance(train_types, str):
        train_types = [t.strip() for t in train_types.split(",") if t.strip()]
    chosen = set(train_types)
    unknown = sorted(chosen - set(TRAIN_TYPES))
    if unknown:
        raise ValueError(f"unknown train_types {unknown}; choose from {list(TRAIN_TYPES)}")
    if not chosen:
        raise ValueError(f"train_types is empty; choose one or more of {list(TRAIN_TYPES)}")
    return tuple(t for t in TRAIN_TYPES if t in chosen)


def make_plan(
    subsets: Sequence, n_folds: int, train_types: Iterable[str] | str = TRAIN_TYPES
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Splits and the distinct fits that serve them.

    Every train set is a union of (subset, fold) blocks, so a fit is identified by its fold and
    its set of train subsets: ``all`` for fold k is one fit whatever the test subset, and with two
    subsets other(A) is same(B). With one subset only ``same`` exists (plain K-fold CV).

    Parameters
    ----------
    subsets : sequence
        The distinct subset values, in the order results should use.
    n_folds : int
        K; folds are numbered 1..K.
    train_types : iterable of {"same", "other", "all"}
        Any non-empty selection (mlr3resampling's S, O, A, SO, SA, SOA).

    Returns
    -------
    splits : DataFrame
        One row per split: ``test_subset, fold, train_type, fit_id``.
    fits : DataFrame
        One row per distinct fit, indexed by ``fit_id``: ``fold``, ``train_subsets`` (tuple),
        ``test_subsets`` (tuple of the subsets whose test block this fit predicts).

    Examples
    --------
    >>> splits, fits = make_plan(["A", "B", "C"], n_folds=10)
    >>> len(splits), len(fits)
    (90, 70)
    >>> len(make_plan(["A", "B"], n_folds=10)[1])
    30
    """
    train_types = check_train_types(train_types)
    subsets = list(subsets)
    if len(set(subsets)) != len(subsets):
        raise ValueError(f"subsets must be distinct, got {subsets}")
    if len(subsets) == 1:
        train_types = ("same",)
    rows = []
    for test in subsets:
        for fold in range(1, n_folds + 1):
            members = {
                "same": (test,),
                "other": tuple(s for s in subsets if s != test),
                "all": tuple(subsets),
            }
            for train_type in train_types:
                rows.append((test, fold, train_type, members[train_type]))
    splits = pd.DataFrame(rows, columns=["test_subset", "fold", "train_type", "train_subsets"])
    keys = list(zip(splits["fold"], splits["train_subsets"], strict=True))
    fit_keys = list(dict.fromkeys(keys))
    fit_ids = {key: i for i, key in enumerate(fit_keys)}
    splits["fit_id"] = [fit_ids[k] for k in keys]
    fits = pd.DataFrame(fit_keys, columns=["fold", "train_subsets"])
    fits["test_subsets"] = [
        tuple(dict.fromkeys(splits.loc[splits["fit_id"] == i, "test_subset"]))
        for i in range(len(fits))
    ]
    fits.index.name = "fit_id"
    return splits[["test_subset", "fold", "train_type", "fit_id"]], fits
