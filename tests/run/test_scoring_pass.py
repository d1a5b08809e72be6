"""One scoring pass (``strategies.scoring_pass``) for every fit not made on its gathered train
set: models fed block by block are scored a partition at a time, as the one-pass fits are, with
the records a model scored on its gathered test blocks gets; no task receives more than one
partition of rows."""

from __future__ import annotations

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from dask.callbacks import Callback
from sklearn.base import BaseEstimator, ClassifierMixin

import soak_dask as sd
from soak_dask import Selection, Term
from soak_dask.run.executor import run_plan
from soak_dask.run.fitting import RunSpec
from soak_dask.run.strategies import Context, PartialFit, WholeTrainSet
from soak_dask.split.plan import Fit, build_plan

from ..conftest import toy_table

MEASURES = ["error", "accuracy", "auc", "log_loss"]
COMPARED = [*MEASURES, "n_train", "n_test"]


class Centroids(ClassifierMixin, BaseEstimator):
    """Nearest class centroid from (weighted) sums: ``partial_fit`` over blocks makes the
    model ``fit`` makes on their rows (up to the sums' rounding), so a fed fit and a gathered
    one must score alike."""

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        if not hasattr(self, "sums_"):
            self.classes_ = np.asarray(classes)
            self.sums_ = np.zeros((len(self.classes_), X.shape[1]))
            self.counts_ = np.zeros(len(self.classes_))
        w = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight, float)
        for i, c in enumerate(self.classes_):
            rows = np.asarray(y) == c
            self.sums_[i] += w[rows] @ X[rows]
            self.counts_[i] += w[rows].sum()
        return self

    def fit(self, X, y, sample_weight=None):
        for attr in ("sums_", "counts_"):
            self.__dict__.pop(attr, None)
        return self.partial_fit(X, y, np.unique(y), sample_weight)

    def predict_proba(self, X):
        if not np.isfinite(X).all():
            raise ValueError("Input X contains NaN.")
        centres = self.sums_ / self.counts_[:, None]
        logits = -((X[:, None, :] - centres[None]) ** 2).sum(-1)
        proba = np.exp(logits - logits.max(1, keepdims=True))
        return proba / proba.sum(1, keepdims=True)

    def predict(self, X):
        return self.classes_[self.predict_proba(X).argmax(1)]


def _table(npartitions):
    df = toy_table(n=300, n_subsets=2, seed=4)
    table = sd.load_table(df, label="y", subset="subset")
    return sd.Table(**{**table.__dict__, "data": table.data.repartition(npartitions=npartitions)})


DESIGNS = {
    "soak": lambda t, **kw: sd.soak(t, {"c": Centroids()}, n_folds=3, **kw),
    "evaluate": lambda t, **kw: sd.evaluate(
        t, {"c": Centroids()}, outer="bootstrap", outer_repeats=2, prior_correction=False, **kw
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("npartitions", [1, 3])
@pytest.mark.parametrize("design", DESIGNS)
def test_a_fed_model_scored_by_partition_scores_as_on_its_gathered_rows(design, npartitions):
    run = DESIGNS[design]
    raising = {"progress": False, "error_score": "raise"}
    fed = run(
        _table(npartitions), measures=MEASURES, options=sd.RunOptions(incremental=True, **raising)
    )
    # fitted and scored on its gathered rows
    whole = run(_table(npartitions), measures=MEASURES, options=sd.RunOptions(**raising))
    assert fed.attrs["incremental"] == 1
    for name in (v for v in COMPARED if v in fed):
        assert np.isfinite(fed[name].values).all(), name
        np.testing.assert_allclose(fed[name], whole[name], rtol=1e-12, atol=1e-12, err_msg=name)


class RowInputs(Callback):
    """The most partitions of the table's rows (DataFrames with its labels, not sums)
    any task of a computation receives."""

    def __init__(self):
        super().__init__()
        self.most, self.gathering = 0, []

    def _pretask(self, key, dsk, state):
        deps = state["dependencies"].get(key, ())
        frames = [d for d in deps if _rows(state["cache"].get(d))]
        if len(frames) > 1:
            self.gathering.append((key, len(frames)))
        self.most = max(self.most, len(frames))


def _rows(value) -> bool:
    return isinstance(value, pd.DataFrame) and {"x0", "y"} <= set(value.columns)  # rows, labelled


def test_no_task_of_an_incremental_run_receives_more_than_one_partition():
    """Before, a fed model was scored on its test blocks gathered in one task."""
    with RowInputs() as inputs, dask.config.set(scheduler="sync"):
        res = DESIGNS["soak"](
            _table(3), measures=MEASURES, options=sd.RunOptions(incremental=True, progress=False)
        )
    assert np.isfinite(res["auc"].values).all()
    assert inputs.most == 1, inputs.gathering


def _plan_run(train, weights=None, nan_row=None, npartitions=3, error_score=np.nan):
    """A hand-made plan of one fit (train rows ``train``, weighted by ``weights``) tested on
    folds 1 and 2, run through the executor with a fed learner (``nan_row``: a missing
    feature there)."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x0": rng.normal(size=90), "s": "all", "fold": np.arange(90) % 3 + 1})
    df["y"] = np.where(df["x0"] > 0, "p", "q")
    df["w"] = 0 if weights == "zero" else 1
    if nan_row is not None:
        df.loc[nan_row, "x0"] = np.nan
    tests = {k: Selection((Term("fold", (k,)),)) for k in (1, 2)}
    fit = Fit(train, weights=weights and "w")
    plan = build_plan([({"fold": k}, fit, k) for k in (1, 2)], tests, {"fold": [1, 2]})
    table = sd.load_table(df, label="y", subset="s", fold="fold", features=["x0"])
    run = RunSpec(("x0",), "y", "s", "fold", ("error", "auc"), ("p", "q"), error_score=error_score)
    data = dd.from_pandas(df, npartitions=npartitions)
    ctx = Context(table, data, plan, {"c": Centroids()}, run)
    return {r["block"]: r for r in run_plan(ctx, [PartialFit(), WholeTrainSet()], progress=False)}


def test_a_fed_fit_without_train_rows_says_so():
    for train, weights in [(Selection((Term("fold", (9,)),)), None), (Selection(), "zero")]:
        with pytest.warns(UserWarning, match="no train rows reached the learner"):
            records = _plan_run(train, weights)
        assert len(records) == 2
        for record in records.values():
            assert record["message"] == "no train rows reached the learner"
            assert record["n_train"] == 0 and record["n_test"] == 30
            assert np.isnan(record["error"]) and np.isnan(record["auc"])


def test_a_nan_in_a_test_row_fails_only_its_block_with_the_message():
    """A fed model's features were never checked finite: scikit-learn's own check stays, and
    the failure is error_score for the block holding the row only (both blocks are predicted
    together in their partition), with the prediction's message."""
    with pytest.warns(UserWarning, match="NaN"):
        records = _plan_run(Selection((Term("fold", (3,)),)), nan_row=0, npartitions=1)
    failed, scored = records[0], records[1]  # row 0 is in fold 1, the first block
    assert failed["message"].startswith("predicting test ") and "NaN" in failed["message"]
    assert np.isnan(failed["error"]) and np.isnan(failed["auc"]) and failed["n_test"] == 30
    assert scored["message"] == "" and np.isfinite([scored["error"], scored["auc"]]).all()
    with pytest.raises(ValueError, match="NaN"):  # error_score="raise" raises it
        _plan_run(Selection((Term("fold", (3,)),)), nan_row=0, npartitions=1, error_score="raise")
