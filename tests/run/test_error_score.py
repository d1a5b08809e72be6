"""``error_score`` means the same in every entry point, as in ``soak``: a learner that fails to
fit scores NaN, with one warning naming it, and the good learners' results are kept; with
``error_score="raise"`` the run stops with the learner's error."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

import soak_dask as sd

from ..conftest import toy_table

MESSAGE = "broken on purpose"


class Broken(ClassifierMixin, BaseEstimator):
    """A classifier whose every fit raises."""

    def fit(self, X, y):
        raise ValueError(MESSAGE)

    def predict(self, X):  # pragma: no cover - never fitted
        raise AssertionError


LEARNERS = {"lda": LinearDiscriminantAnalysis(), "broken": Broken()}


@pytest.fixture(scope="module")
def table() -> sd.Table:
    return sd.load_table(toy_table(n=240, n_subsets=3, seed=2), label="y", subset="subset")


def _check_nan_and_good(res, measure: str, record) -> None:
    failed = [str(w.message) for w in record if "fits failed" in str(w.message)]
    assert failed and all("broken" in text and MESSAGE in text for text in failed)
    assert res[measure].sel(learner="broken").isnull().all()
    assert res[measure].sel(learner="lda").notnull().all()


RUNS = {
    "evaluate": lambda t, **kw: sd.evaluate(
        t, LEARNERS, outer_folds=3, options=sd.RunOptions(progress=False, **kw)
    ),
    "transfer": lambda t, **kw: sd.transfer(
        t, LEARNERS, n_folds=3, options=sd.RunOptions(progress=False, **kw)
    ),
    "search_subsets": lambda t, **kw: sd.search_subsets(
        t, LEARNERS, n_folds=3, options=sd.RunOptions(progress=False, **kw)
    ),
    "compare_sampling": lambda t, **kw: sd.compare_sampling(
        t,
        LEARNERS,
        design=sd.SamplingSplits(methods=["random", "stratified"], n_repeats=3),
        options=sd.RunOptions(progress=False, **kw),
    ),
}
MEASURE = {"evaluate": "error", "transfer": "error", "search_subsets": "error"}


@pytest.mark.parametrize("name", list(RUNS))
def test_a_failing_learner_scores_nan_and_the_others_are_kept(table, name):
    with pytest.warns(UserWarning, match="fits failed and score NaN") as record:
        res = RUNS[name](table)
    _check_nan_and_good(res, MEASURE.get(name, "accuracy"), record)


@pytest.mark.parametrize("name", list(RUNS))
def test_error_score_raise_stops_with_the_learners_error(table, name):
    with pytest.raises(ValueError, match=MESSAGE):
        RUNS[name](table, error_score="raise")


def test_split_sensitivity_error_score(table):
    run = {"design": sd.SplitTrials(ratios=(0.5, 0.7), n_repeats=3, n_folds=3)}
    with pytest.warns(UserWarning, match="fits failed and score NaN") as record:
        res = sd.split_sensitivity(
            table, {"broken": Broken()}, **run, options=sd.RunOptions(progress=False)
        )
    assert any("broken" in str(w.message) for w in record)
    assert res["cv_score"].isnull().all() and res["test_score"].isnull().all()
    with pytest.raises(ValueError, match=MESSAGE):
        sd.split_sensitivity(
            table,
            {"broken": Broken()},
            **run,
            options=sd.RunOptions(progress=False, error_score="raise"),
        )
    good = sd.split_sensitivity(
        table, "lda", **run, options=sd.RunOptions(progress=False, error_score="raise")
    )
    assert np.isfinite(good["cv_score"]).all()


@pytest.mark.parametrize("bad", ["skip", None, [1]])
def test_a_bad_error_score_is_refused_before_any_fit(table, bad):
    for run in RUNS.values():
        with pytest.raises(ValueError, match="^error_score="):
            run(table, error_score=bad)


class FailsOnAllRows(LinearDiscriminantAnalysis):
    """LDA that raises when fitted on more than ``most`` rows: the final model on all training
    rows fails, the outer folds' smaller fits do not."""

    def __init__(self, most: int = 150) -> None:
        super().__init__()
        self.most = most

    def fit(self, X, y):
        if len(X) > self.most:
            raise ValueError(MESSAGE)
        return super().fit(X, y)


@pytest.mark.usefixtures("few_interval_draws")
def test_a_failing_final_model_scores_nan_and_the_good_models_are_saved(table, tmp_path):
    learners = {"lda": LinearDiscriminantAnalysis(), "late": FailsOnAllRows()}
    run = {"outer_folds": 3, "test_split": 0.2}
    with pytest.warns(UserWarning, match="final models of 1 learners failed") as record:
        res = sd.evaluate(
            table,
            learners,
            models=tmp_path / "models",
            **run,
            options=sd.RunOptions(progress=False),
        )
    text = next(str(w.message) for w in record if "final models" in str(w.message))
    assert "late" in text and MESSAGE in text and "lda" not in text.split(":", 1)[1]
    assert res["error"].notnull().all()  # the outer folds' fits are small enough
    assert res["test_error"].sel(learner="late").isnull().all()
    assert res["test_error"].sel(learner="lda").notnull().all()
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == ["lda.skops"]
    with pytest.raises(ValueError, match=f"learner 'late', final model.*{MESSAGE}"):
        sd.evaluate(
            table, learners, **run, options=sd.RunOptions(progress=False, error_score="raise")
        )


@pytest.mark.parametrize("onepass", [True, False])
def test_a_model_that_fails_to_predict_scores_nan_from_statistics_too(onepass):
    """LDA fitted on a one-class train set (scikit-learn's fits too) cannot give
    probabilities: that fit scores NaN with the warning, whether the model came from one pass
    of statistics or from its gathered rows, and the run's other cells are kept."""
    frame = toy_table(n=240, n_subsets=2, seed=4)
    frame["fold"] = np.arange(len(frame)) % 3 + 1
    only = frame["subset"] == "s0"
    # Subset s0's "yes" rows all in fold 1: its same train set of fold 1 holds "no" only.
    frame.loc[only & (frame["fold"] == 1), "y"] = "yes"
    frame.loc[only & (frame["fold"] != 1), "y"] = "no"
    table = sd.load_table(frame, label="y", subset="subset", fold="fold")
    options = sd.RunOptions(progress=False, onepass=onepass)
    with pytest.warns(UserWarning, match=r"fits failed and score NaN .*lda fit .*AxisError"):
        res = sd.soak(table, "lda", measures=["error", "auc"], options=options)
    error = res["error"].sel(learner="lda")
    # That train set is s0's same and s1's other of fold 1: its two cells, no other.
    assert error.sel(test_subset="s0", fold=1, train_type="same").isnull()
    assert error.sel(test_subset="s1", fold=1, train_type="other").isnull()
    assert int(error.isnull().sum()) == 2
    with pytest.raises(ValueError, match="axis 1 is out of bounds"):
        sd.soak(table, "lda", measures=["error", "auc"], options=sd.RunOptions(
            progress=False, onepass=onepass, error_score="raise"))  # fmt: skip
