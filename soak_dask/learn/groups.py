"""Fitting with groups: estimators whose ``fit`` takes ``groups`` (ours that resample inside a
train set, scikit-learn's searchers) get the rows' groups, so inner splits keep groups whole."""

from __future__ import annotations

import inspect
from typing import Any


def accepts_groups(estimator: Any) -> bool:
    """Whether ``estimator.fit`` has a ``groups`` parameter."""
    try:
        return "groups" in inspect.signature(estimator.fit).parameters
    except (TypeError, ValueError):  # builtins without a signature
        return False


def fit_with_groups(estimator: Any, X: Any, y: Any, groups: Any = None) -> Any:
    """``estimator.fit(X, y)``, with ``groups=groups`` if given and ``fit`` takes them."""
    if groups is not None and accepts_groups(estimator):
        return estimator.fit(X, y, groups=groups)
    return estimator.fit(X, y)
