"""Learners: built-in names, user estimators, and their validation."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from importlib import import_module
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from sklearn.base import BaseEstimator

    from ..tables.table import Task


def _new(path: str, **params: Any) -> BaseEstimator:
    """``Class(**params)`` for ``path`` ``module.Class`` (a leading dot: a module of this package).

    Imported when a learner is made, not with this module: ``soak --help`` lists the built-in
    learners and a run file's names are checked without loading scikit-learn.
    """
    module, _, name = path.rpartition(".")
    return getattr(import_module(module, __package__), name)(**params)


def _scaled(estimator: BaseEstimator) -> BaseEstimator:
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), estimator)


Factory = Callable[[int], Any]


class Factories(NamedTuple):
    """A built-in learner's estimator factory per task (None: it does not do that task); each
    takes the random seed."""

    classification: Factory | None
    regression: Factory | None


BUILTIN: dict[str, Factories] = {
    "featureless": Factories(
        lambda seed: _new("sklearn.dummy.DummyClassifier", strategy="prior"),
        lambda seed: _new("sklearn.dummy.DummyRegressor", strategy="mean"),
    ),
    "logistic": Factories(
        lambda seed: _scaled(_new("sklearn.linear_model.LogisticRegression", max_iter=1000)), None
    ),
    "lasso_cv": Factories(
        # The SOAK paper's cv_glmnet: lasso path, internal 10-fold CV, lambda.1se; the
        # estimators standardise the features themselves.
        lambda seed: _new(".lasso.LassoCVClassifier", random_state=seed),
        lambda seed: _new(".lasso.LassoCVRegressor", random_state=seed),
    ),
    "ridge": Factories(
        lambda seed: _scaled(_new("sklearn.linear_model.RidgeClassifierCV")),
        lambda seed: _scaled(_new("sklearn.linear_model.RidgeCV")),
    ),
    "linear": Factories(None, lambda seed: _new("sklearn.linear_model.LinearRegression")),
    "lda": Factories(
        lambda seed: _new("sklearn.discriminant_analysis.LinearDiscriminantAnalysis"), None
    ),
    "gaussian_nb": Factories(lambda seed: _new("sklearn.naive_bayes.GaussianNB"), None),
    "knn": Factories(
        lambda seed: _scaled(_new("sklearn.neighbors.KNeighborsClassifier")),
        lambda seed: _scaled(_new("sklearn.neighbors.KNeighborsRegressor")),
    ),
    "decision_tree": Factories(
        # The SOAK paper's rpart: rpart's rules (partition.c), its defaults, cp = 0.01.
        lambda seed: _new(".pruned_tree.PrunedTreeClassifier", random_state=seed),
        lambda seed: _new(".pruned_tree.PrunedTreeRegressor", random_state=seed),
    ),
    "random_forest": Factories(
        lambda seed: _new(
            "sklearn.ensemble.RandomForestClassifier", n_estimators=100, random_state=seed
        ),
        lambda seed: _new(
            "sklearn.ensemble.RandomForestRegressor", n_estimators=100, random_state=seed
        ),
    ),
    "hist_gradient_boosting": Factories(
        lambda seed: _new("sklearn.ensemble.HistGradientBoostingClassifier", random_state=seed),
        lambda seed: _new("sklearn.ensemble.HistGradientBoostingRegressor", random_state=seed),
    ),
    # Trained across the workers (learn.across_workers): a train set larger than one worker.
    "xgboost": Factories(
        lambda seed: _new(".across_workers.xgboost_dask", kind="classifier", random_state=seed),
        lambda seed: _new(".across_workers.xgboost_dask", kind="regressor", random_state=seed),
    ),
}

#: One line per built-in learner, for ``soak run --help`` and the docs (keys: those of BUILTIN).
DESCRIPTIONS: dict[str, str] = {
    "featureless": "baseline: most frequent class / mean of the train rows, features unused",
    "logistic": "logistic regression (L2, C=1) on standardised features",
    "lasso_cv": "L1 logistic/linear regression, penalty by internal 10-fold CV (glmnet-style, "
    "lambda.1se)",
    "ridge": "ridge on standardised features, penalty by leave-one-out CV",
    "linear": "ordinary least-squares linear regression",
    "lda": "linear discriminant analysis",
    "gaussian_nb": "Gaussian naive Bayes",
    "knn": "5 nearest neighbours on standardised features",
    "decision_tree": "decision tree by rpart's rules and defaults (the SOAK paper's rpart)",
    "random_forest": "random forest of 100 trees",
    "hist_gradient_boosting": "histogram gradient boosting, scikit-learn's defaults",
    "xgboost": "gradient boosting trained across the Dask workers (xgboost.dask, its defaults; "
    "optional: pip install 'soak_dask[xgboost]')",
}


def describe_builtins() -> str:
    """The built-in learners, one line each: name, what it fits, and its task if only one.

    Examples
    --------
    >>> print(describe_builtins().splitlines()[4])
    linear                  ordinary least-squares linear regression (regression only)
    """
    lines = []
    for name, (classify, regress) in BUILTIN.items():
        task = "classification" if classify else "regression"
        only = "" if classify and regress else f" ({task} only)"
        lines.append(f"{name:<23} {DESCRIPTIONS[name]}{only}")
    return "\n".join(lines)


def builtin_learner(name: str, task: Task, seed: int = 1) -> BaseEstimator:
    """A fresh estimator for a built-in learner ``name`` and ``task``.

    Examples
    --------
    >>> builtin_learner("featureless", "classification")
    DummyClassifier()
    """
    if name not in BUILTIN:
        raise ValueError(f"unknown learner {name!r}; built-in learners: {sorted(BUILTIN)}")
    factory = getattr(BUILTIN[name], task)
    if factory is None:
        usable = sorted(n for n, f in BUILTIN.items() if getattr(f, task) is not None)
        raise ValueError(f"learner {name!r} does not do {task}; for {task} use one of {usable}")
    return factory(seed)


def default_learners(task: Task) -> dict[str, str]:
    """Featureless baseline plus a linear model: what ``soak`` fits when given no learners."""
    linear = "logistic" if task == "classification" else "linear"
    return {"featureless": "featureless", linear: linear}


def resolve_learners(
    learners: Mapping[str, Any] | Sequence[Any] | BaseEstimator | str | None,
    task: Task,
    seed: int = 1,
) -> dict[str, BaseEstimator]:
    """Turn the user's ``learners`` into ``{name: unfitted estimator}``.

    Accepts a dict of name -> estimator or built-in name, a list of either (named after the
    built-in name or the estimator's class), or one of them alone. ``seed`` (0 to 2**32 - 1)
    is the ``random_state`` of built-in learners that have one. A tuple ``(learner, space)``
    or ``(learner, space, n_iter)`` is a learner tuned inside each train set
    (``soak_dask.learn.tuning.Search``).
    """
    from sklearn.base import BaseEstimator, clone

    from ..split.fold_options import check_seed
    from .tuning import search_from_tuple

    seed = check_seed(seed)
    if learners is None:
        learners = default_learners(task)
    if isinstance(learners, str | BaseEstimator) or not isinstance(learners, Mapping | Sequence):
        learners = [learners]
    if not isinstance(learners, Mapping):
        named: dict[str, Any] = {}
        for item in learners:
            first = item[0] if isinstance(item, tuple) and item else item
            name = first if isinstance(first, str) else type(first).__name__
            if name in named:
                raise ValueError(f"two learners are named {name!r}; pass a dict to name them")
            named[name] = item
        learners = named
    if not learners:
        raise ValueError(
            "learners is empty; give at least one, e.g. {'featureless': 'featureless'}"
        )
    out = {}
    for name, item in learners.items():
        if isinstance(item, tuple):
            item = search_from_tuple(str(name), item, lambda n: builtin_learner(n, task, seed))
        est = builtin_learner(item, task, seed) if isinstance(item, str) else item
        _check_estimator(str(name), est, task)
        out[str(name)] = clone(est)
    return out


def _check_estimator(name: str, est: Any, task: Task) -> None:
    from sklearn.base import is_classifier, is_regressor

    if not (hasattr(est, "fit") and hasattr(est, "predict")):
        raise TypeError(
            f"learner {name!r} is a {type(est).__name__}, not a scikit-learn estimator with "
            "fit and predict"
        )
    if task == "classification" and is_regressor(est):
        raise ValueError(f"learner {name!r} is a regressor but the label is categorical")
    if task == "regression" and is_classifier(est):
        raise ValueError(
            f"learner {name!r} is a classifier but the label is numeric; load the table "
            "with task='classification' if the label holds classes"
        )
