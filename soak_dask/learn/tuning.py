"""Tuning inside a train set: ``Search``, a learner with a search space whose ``fit`` ranks the
candidate settings by an inner resampling of its own training rows and refits the winner on
all of them; what a fitted learner chose (``fit_info``); and the non-nested shortcut
(``freeze``: the setting and the feature selection of one fit, refitted elsewhere)."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone, is_classifier
from sklearn.feature_selection import SelectorMixin
from sklearn.model_selection import GridSearchCV, ParameterGrid, RandomizedSearchCV
from sklearn.pipeline import Pipeline
from sklearn.utils import get_tags
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from ..split.inner import Inner

#: Learner families ``inner="auto"`` counts as cheap (module prefixes of the final step): a
#: fit takes milliseconds on thousands of rows, so repeated inner K-fold costs little.
CHEAP_MODULES: tuple[str, ...] = (
    "sklearn.linear_model",
    "sklearn.naive_bayes",
    "sklearn.discriminant_analysis",
    "sklearn.dummy",
    "sklearn.neighbors",
    "sklearn.tree",
    "soak_dask.learn",
)

#: The scikit-learn scorer that ranks settings for each measure (higher is better).
SCORERS: dict[str, str] = {
    "error": "accuracy",
    "accuracy": "accuracy",
    "balanced_accuracy": "balanced_accuracy",
    "auc": "roc_auc_ovr",
    "log_loss": "neg_log_loss",
    "mse": "neg_mean_squared_error",
    "rmse": "neg_root_mean_squared_error",
    "mae": "neg_mean_absolute_error",
    "r2": "r2",
}


def _delegate(method: str):
    return lambda self: hasattr(self.estimator, method)


class Search(MetaEstimatorMixin, BaseEstimator):
    """A learner with a search space, tuned inside each train set it is fitted on.

    ``fit`` draws the inner splits of its training rows (``inner``, kept grouped when ``fit``
    gets ``groups``), ranks the candidate settings by ``scoring`` over them with a grid search
    (or random draws with ``n_iter``), and refits the best setting on all the rows. Inner
    scores only rank: they are never results. A pipeline is searched with dask-ml's searcher,
    which fits a stage shared by candidates once per split; anything else with
    scikit-learn's. Either runs inside the fit's own task.

    Parameters
    ----------
    estimator : estimator
        The learner (a pipeline may hold feature selection, tuned or not).
    space : dict or list of dict
        Parameter name -> candidate values (a grid), or -> lists or scipy distributions with
        ``n_iter`` (a budget of random draws), as scikit-learn's searchers take them.
    n_iter : int, optional
        Random draws from ``space``; None searches the whole grid.
    scoring : str, optional
        A scikit-learn scorer name; None: the scorer of the run's first measure (``SCORERS``),
        set by ``evaluate``/``soak``, or the estimator's ``score``.
    inner, inner_folds, inner_repeats :
        The inner scheme (``soak_dask.split.inner.Inner``), set by ``evaluate``/``soak``.
    random_state : int
        Seed of the inner splits and random draws.

    Attributes
    ----------
    best_estimator_, best_params_, best_score_ :
        As scikit-learn's searchers.
    inner_scheme_ : str
        The inner scheme used, e.g. ``"leave-one-group-out (7 groups)"``.
    n_candidates_ : int

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> Search(LogisticRegression(), {"C": [0.1, 1.0]})
    Search(estimator=LogisticRegression(), space={'C': [0.1, 1.0]})
    """

    def __init__(
        self,
        estimator: Any,
        space: Mapping[str, Any] | Sequence[Mapping[str, Any]],
        *,
        n_iter: int | None = None,
        scoring: str | None = None,
        inner: str = "auto",
        inner_folds: int = 5,
        inner_repeats: int = 1,
        random_state: int = 1,
    ) -> None:
        self.estimator = estimator
        self.space = space
        self.n_iter = n_iter
        self.scoring = scoring
        self.inner = inner
        self.inner_folds = inner_folds
        self.inner_repeats = inner_repeats
        self.random_state = random_state

    def fit(self, X: Any, y: Any, groups: Any = None) -> Search:
        """Rank the settings on inner splits of ``X, y`` (grouped by ``groups``); refit the
        best on all of it."""
        check_space(self.estimator, self.space, self.n_iter)
        inner = Inner(self.inner, self.inner_folds, self.inner_repeats, self.random_state)
        classify = is_classifier(self.estimator)
        self.inner_scheme_, splits = inner.splits(
            y, groups, cheap=is_cheap(self.estimator), classify=classify
        )
        searcher = _searcher(self.estimator, self.space, self.n_iter, self.random_state)
        searcher.set_params(scoring=self.scoring, cv=splits, refit=True)
        searcher.fit(X, y)
        self.best_estimator_ = searcher.best_estimator_
        self.best_params_ = searcher.best_params_
        self.best_score_ = float(searcher.best_score_)
        self.n_candidates_ = len(searcher.cv_results_["params"])
        if classify:
            self.classes_ = self.best_estimator_.classes_
        self.n_features_in_ = self.best_estimator_.n_features_in_
        return self

    def predict(self, X: Any) -> np.ndarray:
        """The best setting's predictions."""
        check_is_fitted(self)
        return self.best_estimator_.predict(X)

    @available_if(_delegate("predict_proba"))
    def predict_proba(self, X: Any) -> np.ndarray:
        """The best setting's class probabilities."""
        check_is_fitted(self)
        return self.best_estimator_.predict_proba(X)

    @available_if(_delegate("decision_function"))
    def decision_function(self, X: Any) -> np.ndarray:
        """The best setting's decision function."""
        check_is_fitted(self)
        return self.best_estimator_.decision_function(X)

    def __sklearn_tags__(self):  # noqa: D105
        return copy.deepcopy(get_tags(self.estimator))


def _searcher(estimator: Any, space: Any, n_iter: int | None, seed: int) -> Any:
    """The searcher that runs inside a fit's task (benchmark g, docs/benchmarks.md): dask-ml's
    for a pipeline, which fits a stage shared by several candidates once per split (2-3 times
    faster on a selector + classifier grid, same choices and scores), scikit-learn's otherwise
    (no shared stages: dask-ml's graph only adds overhead). Both run in this task alone."""
    if isinstance(estimator, Pipeline):
        from dask_ml.model_selection import GridSearchCV as Grid
        from dask_ml.model_selection import RandomizedSearchCV as Random

        # iid=False: the mean over splits, unweighted, as scikit-learn computes it.
        extra: dict[str, Any] = {"scheduler": "sync", "iid": False, "error_score": np.nan}
    else:
        Grid, Random, extra = GridSearchCV, RandomizedSearchCV, {"n_jobs": 1}
    if n_iter is None:
        return Grid(estimator, space, **extra)
    return Random(estimator, space, n_iter=n_iter, random_state=seed, **extra)


def check_space(estimator: Any, space: Any, n_iter: Any, name: str = "") -> None:
    """Refuse a search space scikit-learn would reject mid-run, naming the learner and key."""
    who = f"learner {name!r}" if name else type(estimator).__name__
    grids = [space] if isinstance(space, Mapping) else space
    if (
        not isinstance(grids, Sequence)
        or not grids
        or not all(isinstance(g, Mapping) and g for g in grids)
    ):
        raise ValueError(
            f"{who}: the search space must be a non-empty dict of parameter -> candidate "
            f"values (or a list of such dicts), not {space!r}"
        )
    known = estimator.get_params(deep=True)
    for grid in grids:
        for key, values in grid.items():
            if key not in known:
                close = [k for k in known if k.endswith(str(key).split("__")[-1])][:3]
                hint = f"; did you mean {', '.join(close)}?" if close else ""
                raise ValueError(
                    f"{who}: {type(estimator).__name__} has no parameter {key!r}{hint}"
                )
            random = hasattr(values, "rvs")
            if random and n_iter is None:
                raise ValueError(
                    f"{who}: {key!r} is a distribution; give a budget of random draws "
                    "(n_iter, the tuple's third item)"
                )
            if not random and (isinstance(values, str) or not isinstance(values, Sequence)):
                raise ValueError(f"{who}: {key!r} needs a list of candidate values, not {values!r}")
    if n_iter is not None and (
        isinstance(n_iter, bool) or not isinstance(n_iter, int) or n_iter < 1
    ):
        raise ValueError(f"{who}: n_iter={n_iter!r}: need a positive integer budget")


def search_from_tuple(name: str, item: tuple, make: Any) -> Search:
    """``(learner, space)`` or ``(learner, space, n_iter)`` as a ``Search``; ``make`` turns a
    built-in learner's name into its estimator."""
    if not 2 <= len(item) <= 3:
        raise ValueError(
            f"learner {name!r}: a tuned learner is (learner, space) or (learner, space, n_iter), "
            f"not a tuple of {len(item)}"
        )
    est = make(item[0]) if isinstance(item[0], str) else item[0]
    n_iter = item[2] if len(item) == 3 else None
    check_space(est, item[1], n_iter, name)
    return Search(est, item[1], n_iter=n_iter)


def is_cheap(estimator: Any) -> bool:
    """Whether the learner (a pipeline's final step) is of a family in ``CHEAP_MODULES``."""
    final = estimator.steps[-1][1] if isinstance(estimator, Pipeline) else estimator
    return type(final).__module__.startswith(CHEAP_MODULES)


def n_candidates(estimator: Any) -> int:
    """Settings a ``Search`` ranks (1 for any other learner)."""
    if not isinstance(estimator, Search):
        return 1
    if estimator.n_iter is not None:
        return int(estimator.n_iter)
    return len(ParameterGrid(estimator.space))


def is_wrapper(estimator: Any) -> bool:
    """Whether ``estimator`` is one of our wrappers that fit one inner learner as
    ``estimator_`` (prior correction, Platt calibration)."""
    return getattr(type(estimator), "wraps_learner", False)


def unwrap(estimator: Any) -> Any:
    """The fitted learner inside our wrappers and searches."""
    while is_wrapper(estimator) or isinstance(estimator, Search):
        search = isinstance(estimator, Search)
        estimator = estimator.best_estimator_ if search else estimator.estimator_
    return estimator


def _searched(estimator: Any) -> Search | None:
    """The fitted ``Search`` inside our wrappers, if any."""
    while is_wrapper(estimator):
        estimator = estimator.estimator_
    return estimator if isinstance(estimator, Search) else None


def fit_info(estimator: Any) -> dict[str, Any]:
    """What a fitted learner chose: ``chosen`` (the search's setting, as JSON) and
    ``inner_scheme`` for a ``Search``; ``n_features_kept`` for a pipeline with a selector."""
    info: dict[str, Any] = {}
    search = _searched(estimator)
    if search is not None:
        info["chosen"] = json.dumps(search.best_params_, sort_keys=True, default=repr)
        info["inner_scheme"] = search.inner_scheme_
    kept = n_features_kept(unwrap(estimator))
    if kept is not None:
        info["n_features_kept"] = kept
    return info


def n_features_kept(fitted: Any) -> int | None:
    """Features the last selector of a fitted pipeline kept (None: no selector)."""
    if not isinstance(fitted, Pipeline):
        return None
    selectors = [step for _, step in fitted.steps if isinstance(step, SelectorMixin)]
    return int(selectors[-1].get_support().sum()) if selectors else None


def has_selection(estimator: Any) -> bool:
    """Whether a learner selects features (a selector step) or tunes (a ``Search``)."""
    if isinstance(estimator, Search):
        return True
    if isinstance(estimator, Pipeline):
        return any(isinstance(step, SelectorMixin) for _, step in estimator.steps)
    return is_wrapper(estimator) and has_selection(estimator.estimator)


class FrozenSelector(SelectorMixin, BaseEstimator):
    """Keeps the columns of a mask chosen elsewhere: the non-nested shortcut's selection.

    Parameters
    ----------
    support : array of bool
        The columns to keep.
    """

    def __init__(self, support: Any) -> None:
        self.support = support

    def fit(self, X: Any, y: Any = None) -> FrozenSelector:
        """Nothing to learn; checks the width."""
        mask = np.asarray(self.support, dtype=bool)
        if np.shape(X)[1] != mask.size:
            raise ValueError(f"FrozenSelector: {np.shape(X)[1]} columns, mask of {mask.size}")
        self.n_features_in_ = mask.size
        return self

    def _get_support_mask(self) -> np.ndarray:
        return np.asarray(self.support, dtype=bool)


def freeze(unfitted: Any, fitted: Any) -> Any:
    """``unfitted`` with the setting a ``Search`` chose and the features each selector kept in
    ``fitted`` (a fit of it on all training rows): folds that refit it only re-rank a
    shortlist, the optimistic non-nested shortcut."""
    if isinstance(unfitted, Search):
        return _frozen_pipeline(fitted.best_estimator_)
    if is_wrapper(unfitted):
        return clone(unfitted).set_params(estimator=freeze(unfitted.estimator, fitted.estimator_))
    return _frozen_pipeline(fitted)


def _frozen_pipeline(fitted: Any) -> Any:
    out = clone(fitted)
    if isinstance(fitted, Pipeline):
        for name, step in fitted.steps:
            if isinstance(step, SelectorMixin):
                out.set_params(**{name: FrozenSelector(step.get_support())})
    return out
