"""Learners that train across a Dask cluster's workers: xgboost's Dask estimators
(``xgboost.dask.DaskXGBClassifier`` / ``DaskXGBRegressor``), the built-in ``xgboost``.

A train set larger than one worker's memory cannot be gathered into one task, and a learner
that is neither additive nor incremental (gradient boosting, forests) cannot be fed block by
block. xgboost's Dask interface trains one model over partitions held by every worker (its
workers exchange histograms, not rows), so such a fit is bounded by the cluster's memory, not
a worker's. The run hands each train set to it as a Dask collection selected by the key
columns (``run.across_workers``), then scores its test rows partition by partition with the
in-memory twin of the trained booster (``in_memory_twin``): a task predicts with a model of a
few hundred kilobytes, never with the Dask estimator, which needs the client.

xgboost is an optional dependency (``pip install 'soak_dask[xgboost]'``, the CPU-only
``xgboost-cpu`` wheel): nothing here imports it until such a learner is made or fitted.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .priors import PriorCorrected

#: How to install the learners of this module.
INSTALL = "pip install 'soak_dask[xgboost]' (the CPU-only xgboost-cpu wheel)"

#: Parameters of the Dask estimators that their in-memory twins do not take.
_DASK_ONLY = ("coll_cfg",)


def across_learner(estimator: Any) -> Any:
    """The learner of ``estimator`` that trains across the cluster's workers (one of
    xgboost's Dask estimators, told apart without importing xgboost): ``estimator`` itself,
    or the learner its prior correction wraps (the correction needs only the train rows'
    class shares); None if neither."""
    if type(estimator).__module__.startswith("xgboost.dask"):
        return estimator
    if isinstance(estimator, PriorCorrected) and across_learner(estimator.estimator) is not None:
        return estimator.estimator
    return None


def trains_across_workers(estimator: Any) -> bool:
    """Whether ``estimator`` trains across the cluster's workers (``across_learner``)."""
    return across_learner(estimator) is not None


def xgboost_dask(kind: str, **params: Any) -> Any:
    """``DaskXGBClassifier`` (``kind="classifier"``) or ``DaskXGBRegressor`` with ``params``;
    a clear error naming the install command if xgboost is missing."""
    try:
        from xgboost import dask as xgb_dask
    except ImportError as err:
        raise ImportError(
            f"learner 'xgboost' trains across the workers with xgboost's Dask estimators, "
            f"which are not installed: {INSTALL}"
        ) from err
    cls = xgb_dask.DaskXGBClassifier if kind == "classifier" else xgb_dask.DaskXGBRegressor
    return cls(**params)


def in_memory_twin(fitted: Any, classes: tuple | None = None) -> Any:
    """The in-memory estimator (``XGBClassifier`` / ``XGBRegressor``) holding the booster
    ``fitted`` trained, with its parameters and one thread: a scoring task runs on one of a
    worker's threads, and predicts with it partition by partition. A classifier trained on
    class codes (xgboost wants 0..C-1) of ``classes`` comes back as a ``DecodedClassifier``
    predicting the labels, as every model of a run (and a saved final model) does."""
    import xgboost
    from sklearn.base import is_classifier

    params = {k: v for k, v in fitted.get_params().items() if k not in _DASK_ONLY}
    cls = xgboost.XGBClassifier if is_classifier(fitted) else xgboost.XGBRegressor
    twin = cls(**params)
    twin.load_model(fitted.get_booster().save_raw("ubj"))
    twin.set_params(n_jobs=1)
    return twin if classes is None else DecodedClassifier(twin, classes)


class DecodedClassifier:
    """A classifier fitted on class codes, predicting the labels ``classes`` they code
    (``classes_``: the labels of the codes it saw, in code order)."""

    _estimator_type = "classifier"

    def __init__(self, coded: Any, classes: tuple) -> None:
        self.coded = coded
        self.codes_ = np.asarray(coded.classes_, dtype=int)
        self.classes_ = np.asarray(classes)[self.codes_]
        self.n_features_in_ = coded.n_features_in_

    def predict(self, X: Any) -> np.ndarray:
        return self.classes_[np.asarray(self.coded.predict(X), dtype=int)]

    def predict_proba(self, X: Any) -> np.ndarray:
        return self.coded.predict_proba(X)
