"""Every design gets every fitting option through the one run path (``FittingOptions``):
``max_train_rows`` caps each train set exactly with its class shares, whatever the
partitioning; ``incremental`` feeds ``partial_fit`` learners block by block; ``epochs`` without
``incremental`` is refused; a final model too large for a worker is refused before any fit."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.dummy import DummyClassifier
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.tree import DecisionTreeClassifier

import soak_dask as sd
from soak_dask.run.memory import fit_bytes
from soak_dask.workers import FitMemoryError, WorkerMemory

from ..conftest import toy_table

#: evaluate's runs compare runs, or their test split's sizes: not its interval's width.
pytestmark = pytest.mark.usefixtures("few_interval_draws")

TIMINGS = ["fit_seconds", "predict_seconds"]
CAP = 100  # below every train set of the designs here

RECORDED: list[tuple[int, int]] = []


class ClassCounter(ClassifierMixin, BaseEstimator):
    """Majority-class classifier recording the rows per class it is fitted on (the tests run
    on Dask's threads: one process)."""

    def fit(self, X, y):
        RECORDED.append(tuple(int((np.asarray(y) == c).sum()) for c in ("no", "yes")))
        self.model_ = DummyClassifier().fit(X, y)
        self.classes_ = self.model_.classes_
        return self

    def predict(self, X):
        return self.model_.predict(X)


class PartialOnly(SGDClassifier):
    """An SGD classifier whose ``fit`` raises: with ``error_score="raise"`` a result proves
    every fit went through ``partial_fit``."""

    def fit(self, X, y, **kw):
        raise RuntimeError("fit called: this learner was to be fed block by block")


def _soak(table, learners, **kw):
    return sd.soak(
        table, learners, n_folds=3, measures=["error"], options=sd.RunOptions(progress=False, **kw)
    )


def _evaluate(table, learners, **kw):
    options, kw = sd.RunOptions.among(kw, progress=False)
    kw = {"outer": "bootstrap", "outer_repeats": 2, **kw}
    return sd.evaluate(table, learners, test_split=0.2, measures=["error"], **kw, options=options)


def _transfer(table, learners, **kw):
    return sd.transfer(
        table, learners, n_folds=3, measures=["error"], options=sd.RunOptions(progress=False, **kw)
    )


def _search(table, learners, **kw):
    return sd.search_subsets(
        table, learners, n_folds=3, measures="error", options=sd.RunOptions(progress=False, **kw)
    )


def _sensitivity(table, learners, **kw):
    return sd.split_sensitivity(
        table,
        learners,
        measures="error",
        design=sd.SplitTrials(ratios=(0.5, 0.8), n_repeats=3, n_folds=3),
        options=sd.RunOptions(progress=False, **kw),
    )


def _sampling(table, learners, **kw):
    return sd.compare_sampling(
        table,
        learners,
        design=sd.SamplingSplits(methods=["random", "stratified"], n_repeats=2),
        options=sd.RunOptions(progress=False, **kw),
    )


DESIGNS = {
    "soak": _soak,
    "evaluate": _evaluate,
    "transfer": _transfer,
    "search_subsets": _search,
    "split_sensitivity": _sensitivity,
    "compare_sampling": _sampling,
}
ROWS = ("n_train", "cv_n_train")
#: The designs, the slowest (many fits of many small plans) marked slow.
PARAMS = [
    pytest.param(name, marks=pytest.mark.slow) if name in ("search_subsets", "split_sensitivity")
    else name
    for name in DESIGNS
]  # fmt: skip


@pytest.fixture(scope="module")
def table():
    return sd.load_table(toy_table(n=600, n_subsets=3, seed=4), label="y", subset="subset")


def _partitioned(table, n):
    return sd.Table(**{**table.__dict__, "data": table.data.repartition(npartitions=n)})


def _stratified(counts: tuple[int, ...], total: int) -> tuple[int, ...]:
    """Largest-remainder quotas of ``total`` rows (written out here, independently)."""
    exact = [n * total / sum(counts) for n in counts]
    quota = [int(e) for e in exact]
    for i in sorted(range(len(counts)), key=lambda i: -(exact[i] - quota[i]))[: total - sum(quota)]:
        quota[i] += 1
    return tuple(quota)


@pytest.mark.parametrize("design", DESIGNS)
def test_max_train_rows_caps_every_fit_exactly_with_its_class_shares(table, design):
    run = DESIGNS[design]
    RECORDED.clear()
    full = run(table, {"count": ClassCounter()})
    whole = sorted(RECORDED)
    sizes = sorted(sum(c) for c in whole)
    cap = sizes[len(sizes) // 2] if sizes[0] < sizes[-1] else sizes[0] - 7  # some fits above
    RECORDED.clear()
    capped = run(table, {"count": ClassCounter()}, max_train_rows=cap)
    assert capped.attrs["max_train_rows"] == cap and full.attrs["max_train_rows"] in (None, "")
    # every fit (the evaluation's final models and a bootstrap's weighted fits included): its
    # train set if at most ``cap`` rows, else exactly ``cap`` rows, each class keeping its share
    expected = sorted(_stratified(c, cap) if sum(c) > cap else c for c in whole)
    assert sorted(RECORDED) == expected and any(sum(c) > cap for c in whole)
    for name in (v for v in ROWS if v in full):
        np.testing.assert_array_equal(capped[name], np.minimum(full[name], cap), err_msg=name)


def test_k_fold_caps_its_fits_from_the_fold_counts_without_a_counting_pass(table, monkeypatch):
    """One repeat of K-fold knows each fit's rows per class from the strata's sizes
    (``KFoldDesign.counts_``): capped exactly, with no pass counting the fits' rows."""
    run = {"outer": "cv", "outer_folds": 4, "measures": ["error"]}
    RECORDED.clear()
    sd.evaluate(table, {"count": ClassCounter()}, **run, options=sd.RunOptions(progress=False))
    whole = sorted(RECORDED)
    cap = sorted(sum(c) for c in whole)[0] - 7
    fail = lambda *a, **k: pytest.fail("a pass counted the fits' rows")  # noqa: E731
    monkeypatch.setattr("soak_dask.run.session.count_fit_rows", fail)
    RECORDED.clear()
    sd.evaluate(
        table,
        {"count": ClassCounter()},
        **run,
        options=sd.RunOptions(progress=False, max_train_rows=cap),
    )
    assert sorted(RECORDED) == sorted(_stratified(c, cap) for c in whole)


@pytest.mark.slow
@pytest.mark.parametrize("design", PARAMS)
def test_the_capped_sample_is_the_same_whatever_the_partitioning(table, design):
    run = DESIGNS[design]
    # a tree: its splits depend on which rows it is given, and on their order where they tie
    learner = {"tree": DecisionTreeClassifier(max_depth=4, random_state=0)}
    one = run(_partitioned(table, 1), learner, max_train_rows=CAP)  # every train set capped
    three = run(_partitioned(table, 3), learner, max_train_rows=CAP)
    assert (one["n_train"] == CAP).any()
    timings = [v for v in one.data_vars if "seconds" in v]
    xr.testing.assert_allclose(one.drop_vars(timings), three.drop_vars(timings))


@pytest.mark.slow
@pytest.mark.parametrize("design", PARAMS)
def test_incremental_feeds_partial_fit_learners_every_train_row(table, design):
    run = DESIGNS[design]
    data = _partitioned(table, 3)
    # evaluate's bootstrap: the resamples' weights fed as sample_weight, and the final model
    fed = run(data, {"sgd": PartialOnly(random_state=0)}, incremental=True, epochs=2,
              error_score="raise")  # fmt: skip
    whole = run(data, {"sgd": SGDClassifier(random_state=0)})
    assert fed.attrs["incremental"] == 1 and fed.attrs["epochs"] == 2
    score = next(v for v in ("error", "accuracy", "cv_score") if v in fed)
    assert np.isfinite(fed[score].values).all()
    if "train_set" in fed.dims:  # the search's pools depend on the learner's scores
        fed, whole = (ds.sel(train_set=["same", "all"]) for ds in (fed, whole))
    for name in (v for v in ROWS if v in fed):
        np.testing.assert_array_equal(fed[name], whole[name], err_msg=name)


@pytest.mark.parametrize("design", DESIGNS)
def test_epochs_without_incremental_is_refused(table, design):
    with pytest.raises(ValueError, match="epochs=3 has no effect with incremental=False"):
        DESIGNS[design](table, {"count": ClassCounter()}, epochs=3)
    with pytest.raises(ValueError, match="max_train_rows=0"):
        DESIGNS[design](table, {"count": ClassCounter()}, max_train_rows=0)


def test_incremental_is_refused_for_a_learner_the_run_wraps(table):
    sgd = {"sgd": SGDClassifier(loss="log_loss", random_state=0)}  # prior correction wraps it
    with pytest.raises(ValueError, match=r"learners \['sgd'\] have partial_fit.*prior_correction"):
        sd.evaluate(table, sgd, options=sd.RunOptions(incremental=True, progress=False))


class FailsToFit(LogisticRegression):
    def fit(self, X, y, sample_weight=None):
        raise RuntimeError("this fit ran")


def test_a_final_model_too_large_is_refused_before_any_fit(table, monkeypatch):
    n_train = 480  # 600 rows less the test split of 0.2
    n_features = len(table.features)
    # enough for an outer fit under the cap (300 train rows and a test fold of 120), not for
    # the final model's 480 training rows (its test split is scored a partition at a time)
    limit = int(fit_bytes(n_train - 40, n_features) / 0.8)
    for module in ("session", "final"):
        monkeypatch.setattr(f"soak_dask.run.{module}.worker_memory", lambda c: WorkerMemory(limit))
    run = {"test_split": 0.2, "measures": ["error"]}
    with pytest.raises(FitMemoryError, match=r"final model of learner 'logistic'.*\(480\)") as err:
        sd.evaluate(
            table,
            {"logistic": FailsToFit()},
            **run,
            options=sd.RunOptions(progress=False, error_score="raise"),
        )
    assert "gathers 480 rows" in str(err.value) and "max_train_rows=" in str(err.value)
    # a cap brings the final model under the limit
    res = sd.evaluate(
        table,
        {"logistic": LogisticRegression()},
        **run,
        options=sd.RunOptions(progress=False, max_train_rows=300),
    )
    assert np.isfinite(res["test_error"].values).all()


@pytest.mark.slow
def test_a_test_split_larger_than_a_worker_is_scored_a_partition_at_a_time(table, monkeypatch):
    """A final model scores its test split partition by partition: a split a worker cannot
    hold runs, and only a single partition a worker cannot hold is refused before any fit."""
    n_features = len(table.features)
    limit = int(fit_bytes(100, n_features) / 0.8)  # the 120 test-split rows do not fit
    for module in ("session", "final"):
        monkeypatch.setattr(f"soak_dask.run.{module}.worker_memory", lambda c: WorkerMemory(limit))
    # (no class scores: with 3 features, a row's outcomes would weigh as much as its features)
    run = {
        "test_split": 0.2,
        "measures": ["error", "balanced_accuracy"],
        "options": sd.RunOptions(progress=False),
    }
    res = sd.evaluate(_partitioned(table, 4), ["lda"], **run)
    assert int(res["n_test_split"].item()) == 120 and np.isfinite(res["test_error"].values).all()
    whole = _partitioned(table, 1)  # its one partition holds the 120 rows
    wanted = r"'lda' predicts the test split a partition at a time; its largest partition has 120"
    with pytest.raises(FitMemoryError, match=wanted + r" rows × 3 features") as err:
        sd.evaluate(whole, ["lda"], **run)
    assert "smaller partitions (at most 100 rows each" in str(err.value)
    # the outcomes of the split's rows, joined in one task, are checked too
    monkeypatch.setattr("soak_dask.run.memory.OUTCOME_COPIES", 10_000)
    with pytest.raises(FitMemoryError, match=r"joins the outcomes of the 120 rows"):
        sd.evaluate(_partitioned(table, 4), ["lda"], **run)


@pytest.mark.parametrize("design", ["evaluate", "compare_sampling"])
def test_the_options_identify_a_checkpoint(table, tmp_path, design):
    run, where = DESIGNS[design], tmp_path / "ck"
    first = run(table, {"count": ClassCounter()}, max_train_rows=200, checkpoint=where)
    RECORDED.clear()
    again = run(table, {"count": ClassCounter()}, max_train_rows=200, checkpoint=where)
    # every fit read from the checkpoint (evaluate's final models are fitted again)
    assert len(RECORDED) == (1 if design == "evaluate" else 0)
    timings = [v for v in first.data_vars if "seconds" in v]
    xr.testing.assert_equal(first.drop_vars(timings), again.drop_vars(timings))
    assert again.attrs["max_train_rows"] == 200
    with pytest.raises(ValueError, match="max_train_rows"):  # never mixed with another cap
        run(table, {"count": ClassCounter()}, max_train_rows=300, checkpoint=where)
