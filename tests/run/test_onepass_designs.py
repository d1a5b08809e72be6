"""One-pass fits for every design: per-fit (weighted) statistics of any plan give the results of
fits on the rows (``WholeTrainSet``), whatever the partitioning, in one pass over the table."""

from __future__ import annotations

from unittest import mock

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.linear_model import Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import soak_dask as sd
from soak_dask import Selection, Term
from soak_dask.learn.priors import PriorCorrected
from soak_dask.run import executor, strategies
from soak_dask.run import fit_stats as fit_stats_module
from soak_dask.run.closed_form import fit_from_stats, is_additive
from soak_dask.run.fit_stats import fit_stats
from soak_dask.run.onepass import Moments
from soak_dask.run.strategies import OnePass
from soak_dask.split.plan import Fit
from tests.conftest import n_examples, toy_table

CLASSIFIERS = ["lda", "gaussian_nb", "featureless"]
REGRESSORS = {
    "ridge": make_pipeline(StandardScaler(), Ridge(alpha=2.0)),
    "linear": "linear",
    "featureless": "featureless",
}
# Variables that are timings, not results.
TIMINGS = ("fit_seconds", "predict_seconds", "outer_seconds", "final_seconds")


def _classification(n: int = 240, npartitions: int = 3) -> sd.Table:
    df = toy_table(n, seed=4).drop(columns="subset")
    return sd.load_table(dd.from_pandas(df, npartitions=npartitions), label="y")


def _regression(n: int = 240, npartitions: int = 3) -> sd.Table:
    rng = np.random.default_rng(5)
    x = rng.normal(size=(n, 3)) + [0.0, 1000.0, -3.0]  # an offset: no loss to cancellation
    y = x @ [1.0, 0.5, -2.0] + rng.normal(size=n)
    df = pd.DataFrame({"x0": x[:, 0], "x1": x[:, 1], "x2": x[:, 2], "y": y})
    return sd.load_table(dd.from_pandas(df, npartitions=npartitions), label="y")


@pytest.fixture
def made(monkeypatch):
    """Counts the fits made from statistics (so a test sees the one-pass path was taken)."""
    calls = []

    def counted(estimator, stats):
        calls.append(type(estimator).__name__)
        return fit_from_stats(estimator, stats)

    monkeypatch.setattr(strategies, "fit_from_stats", counted)
    return calls


def _on_rows(monkeypatch, call):
    """``call()`` with every fit made on its rows (``WholeTrainSet``)."""
    with monkeypatch.context() as m:
        m.setattr(OnePass, "accepts", lambda *args: False)
        return call()


def _assert_same(got, ref) -> None:
    names = [v for v in ref.data_vars if not v.endswith(TIMINGS) and ref[v].dtype.kind == "f"]
    assert names and set(names) <= set(got.data_vars)
    for name in names:
        np.testing.assert_allclose(got[name].values, ref[name].values, rtol=1e-8, atol=1e-8,
                                   err_msg=name)  # fmt: skip
    for name in ("n_train", "n_test"):
        np.testing.assert_array_equal(got[name].values, ref[name].values)


DESIGNS = [
    ("cv", {"outer_folds": 3}),
    ("repeated_cv", {"outer_folds": 3, "outer_repeats": 2}),
    ("subsampling", {"outer_repeats": 3}),
    ("bootstrap", {"outer_repeats": 3}),
    ("5x2cv", {"outer_repeats": 2}),
    ("cv", {"outer_folds": 3, "test_split": 0.2}),
]


@pytest.mark.parametrize("task", ["classification", "regression"])
@pytest.mark.parametrize(("outer", "options"), DESIGNS, ids=[f"{o}-{len(k)}" for o, k in DESIGNS])
@pytest.mark.usefixtures("few_interval_draws")
def test_evaluate_designs_equal_fits_on_rows(monkeypatch, made, outer, options, task):
    classify = task == "classification"
    table = _classification() if classify else _regression()
    learners = CLASSIFIERS if classify else REGRESSORS
    options = {**options, "prior_correction": False, "options": sd.RunOptions(progress=False)}
    got = sd.evaluate(table, learners, outer=outer, **options)
    assert len(made) == got.attrs["n_fits"]  # every fit from statistics
    made.clear()
    ref = _on_rows(monkeypatch, lambda: sd.evaluate(table, learners, outer=outer, **options))
    assert not made
    _assert_same(got, ref)
    if outer == "bootstrap":  # weighted: n_train is the resample's Σ counts, not its rows
        assert got["n_train"].to_series().nunique() > 1


def test_prior_correction_over_an_additive_learner_is_one_pass(monkeypatch, made):
    """evaluate's default wraps classifiers in PriorCorrected; its priors are class shares of
    the train set, so the wrapped LDA still fits from statistics, and the same."""
    assert is_additive(PriorCorrected(LinearDiscriminantAnalysis())) == "lda"
    table = _classification()
    options = {"outer": "bootstrap", "outer_repeats": 2, "options": sd.RunOptions(progress=False)}
    got = sd.evaluate(table, ["lda", "featureless"], **options)
    assert made == ["PriorCorrected"] * 4
    ref = _on_rows(monkeypatch, lambda: sd.evaluate(table, ["lda", "featureless"], **options))
    _assert_same(got, ref)


@pytest.mark.slow
def test_split_sensitivity_and_compare_sampling_equal_fits_on_rows(monkeypatch, made):
    table = _classification(300)
    for run in (
        lambda: sd.split_sensitivity(
            table,
            "lda",
            design=sd.SplitTrials(ratios=[0.5, 0.7], n_repeats=3, n_folds=3),
            options=sd.RunOptions(progress=False),
        ),
        lambda: sd.compare_sampling(
            table,
            {"lda": "lda", "nb": "gaussian_nb"},
            design=sd.SamplingSplits(methods=["random", "stratified"], n_repeats=2),
            options=sd.RunOptions(progress=False),
        ),
    ):
        got = run()
        assert made
        made.clear()
        _assert_same(got, _on_rows(monkeypatch, run))


def test_a_learner_that_is_not_additive_still_fits_on_rows(made):
    table = _classification()
    res = sd.evaluate(
        table,
        ["lda", "knn"],
        outer="cv",
        outer_folds=3,
        prior_correction=False,
        options=sd.RunOptions(progress=False),
    )
    assert made == ["LinearDiscriminantAnalysis"] * 3
    assert np.isfinite(res["error"].values).all()


@pytest.mark.filterwarnings("ignore:feature columns", "ignore:3 fits failed")
def test_non_finite_features_hand_the_fits_back():
    df = toy_table(120, seed=1).drop(columns="subset")
    df.loc[5, "x1"] = np.nan
    table = sd.load_table(dd.from_pandas(df, npartitions=2), label="y")
    with pytest.warns(UserWarning, match=r"one-pass statistics unavailable .*\['x1'\]"):
        res = sd.evaluate(
            table,
            "lda",
            outer="cv",
            outer_folds=3,
            prior_correction=False,
            options=sd.RunOptions(progress=False, error_score=np.nan),
        )
    assert res["error"].isnull().any()  # the rows' fit failed on the NaN, as without one pass


def _frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "x0": rng.normal(size=n) + 1000.0,
            "x1": rng.normal(size=n),
            "y": rng.choice(["a", "b", "c"], size=n),
            "k": rng.integers(1, 4, size=n),
            "w": rng.poisson(1.0, size=n),
        }
    )


FITS = {
    3: Fit(Selection((Term("k", (2,), exclude=True),))),
    7: Fit(Selection(), weights="w"),
    9: Fit(Selection((Term("k", (1, 3)),)), weights="w"),
}


@settings(max_examples=n_examples(10), deadline=None)
@given(n=st.integers(5, 80), seed=st.integers(0, 2**16), npartitions=st.integers(2, 4))
def test_weighted_fit_stats_are_those_of_the_repeated_rows_whatever_the_partitioning(
    n, seed, npartitions
):
    df = _frame(n, seed)
    stats = [
        fit_stats(dd.from_pandas(df, npartitions=p), FITS, ["x0", "x1"], "y", ["a", "b", "c"])
        for p in (1, npartitions)
    ]
    one, many = dask.compute(*stats, scheduler="sync")
    for fit_id, fit in FITS.items():
        a, b = one.train(fit_id), many.train(fit_id)
        for field in ("count", "mean", "scatter"):
            np.testing.assert_allclose(getattr(b.moments, field), getattr(a.moments, field),
                                       rtol=1e-9, atol=1e-7)  # fmt: skip
        rows = df[fit.train.mask(df)]
        if fit.weights:
            rows = rows.loc[rows.index.repeat(rows[fit.weights])]
        for c, label in enumerate("abc"):
            z = rows.loc[rows["y"] == label, ["x0", "x1"]].to_numpy()
            direct = Moments.of(z)
            assert a.moments.count[c] == len(z)
            np.testing.assert_allclose(a.moments.mean[c], direct.mean, rtol=1e-12)
            np.testing.assert_allclose(a.moments.scatter[c], direct.scatter, rtol=1e-9,
                                       atol=1e-9)  # fmt: skip


#: Unweighted fits (K-fold's, a union of folds, all rows): each row's fits are a bit code.
CODED = {
    **{j: Fit(Selection((Term("k", (j,), exclude=True),))) for j in (1, 2, 3)},
    4: Fit(Selection((Term("k", (1, 3)),))),
    5: Fit(Selection()),
}


@settings(max_examples=n_examples(10), deadline=None)
@given(n=st.integers(5, 80), seed=st.integers(0, 2**16), npartitions=st.integers(1, 4))
def test_cell_sums_equal_the_row_products_and_the_rows_moments(n, seed, npartitions):
    """Rows summed by (class, code) cells give the fits' moments the row products give, and
    those of the fits' rows computed directly."""
    df = _frame(n, seed)

    def stats(rows_per_cell: int):
        with mock.patch.object(fit_stats_module, "ROWS_PER_CELL", rows_per_cell):
            lazy = fit_stats(dd.from_pandas(df, npartitions=npartitions), CODED, ["x0", "x1"],
                             "y", ["a", "b", "c"])  # fmt: skip
            return lazy.compute(scheduler="sync")

    cells, products = stats(0), stats(10**9)  # always cells; never
    for fit_id, fit in CODED.items():
        a, b = cells.train(fit_id).moments, products.train(fit_id).moments
        np.testing.assert_array_equal(a.count, b.count)
        np.testing.assert_allclose(a.mean, b.mean, rtol=1e-12)
        np.testing.assert_allclose(a.scatter, b.scatter, rtol=1e-9, atol=1e-9)
        rows = df[fit.train.mask(df)]
        for c, label in enumerate("abc"):
            direct = Moments.of(rows.loc[rows["y"] == label, ["x0", "x1"]].to_numpy())
            assert a.count[c] == direct.count
            np.testing.assert_allclose(a.mean[c], direct.mean, rtol=1e-12)
            np.testing.assert_allclose(a.scatter[c], direct.scatter, rtol=1e-9, atol=1e-9)


def test_bad_weights_and_down_sampled_fits_are_refused():
    df = _frame(20, 0)
    df.loc[3, "w"] = -1
    lazy = fit_stats(dd.from_pandas(df, npartitions=2), FITS, ["x0"], "y", ["a", "b", "c"])
    with pytest.raises(ValueError, match="weights column 'w' has missing, infinite or negative"):
        lazy.compute(scheduler="sync")
    with pytest.raises(ValueError, match=r"fits \[1\] are down-sampled"):
        fit_stats(dd.from_pandas(df, npartitions=2), {1: Fit(Selection(), 5, 1)}, ["x0"], "y")
    unknown = fit_stats(dd.from_pandas(df, npartitions=2), FITS, ["x0"], "y", ["a", "b"])
    with pytest.raises(ValueError, match=r"label column 'y' has values \['c'\]"):
        unknown.compute(scheduler="sync")


def _read_counted(reads: list[int]) -> sd.Table:
    """A 400-row table of 4 partitions whose every read of a partition appends to ``reads``."""
    frame = toy_table(400, seed=3).drop(columns="subset")
    pieces = [frame.iloc[i * 100 : (i + 1) * 100] for i in range(4)]

    def load(i: int) -> pd.DataFrame:
        reads.append(i)
        return pieces[i]

    data = dd.from_map(load, range(4), meta=frame.iloc[:0], divisions=[0, 100, 200, 300, 399])
    return sd.load_table(data, label="y")


def test_ten_fits_from_one_pass(monkeypatch):
    """The statistics of a 10-resample bootstrap read each partition once; the whole one-pass
    run (statistics, then scoring) twice."""
    reads = []
    table = _read_counted(reads)
    passes = {}

    def counting(name, real):
        def wrapper(*args, **kwargs):
            before = len(reads)
            out = real(*args, **kwargs)
            passes[name] = len(reads) - before
            return out

        return wrapper

    # the statistics are made with the final model's (OnePass.shared), so the fits read none
    monkeypatch.setattr(OnePass, "shared", counting("statistics", OnePass.shared))
    monkeypatch.setattr(OnePass, "models", counting("fits", OnePass.models))
    monkeypatch.setattr(executor, "execute", counting("scoring", executor.execute))
    res = sd.evaluate(
        table,
        "lda",
        outer="bootstrap",
        outer_repeats=10,
        prior_correction=False,
        options=sd.RunOptions(persist=False, progress=False),
    )
    assert res.attrs["n_fits"] == 10 and np.isfinite(res["error"].values).all()
    assert passes == {"statistics": 4, "fits": 0, "scoring": 4}  # a read of the 4 partitions


@pytest.mark.slow
@pytest.mark.parametrize("outer", [{"outer": "bootstrap", "outer_repeats": 10},
                                   {"outer": "cv", "test_split": 0.25}])  # fmt: skip
@pytest.mark.usefixtures("few_interval_draws")
def test_the_outer_fits_and_the_final_model_share_one_pass_of_statistics(monkeypatch, outer):
    """Unpersisted, the final model's statistics come with the outer fits' (one more fit in
    their pass): the run reads the table's 4 partitions once less than with a pass apiece,
    and gives the same results."""
    reads = []
    table = _read_counted(reads)
    run = {
        "prior_correction": False,
        **outer,
        "options": sd.RunOptions(persist=False, progress=False),
    }
    shared = sd.evaluate(table, "lda", **run)
    n_shared, reads[:] = len(reads), []
    monkeypatch.setattr(OnePass, "shared", lambda *args: None)
    apart = sd.evaluate(table, "lda", **run)
    assert len(reads) - n_shared == 4
    _assert_same(shared, apart)
    tested = [v for v in apart.data_vars if str(v).startswith(("test_", "error_632"))]
    assert tested
    for name in tested:
        np.testing.assert_allclose(shared[name].values, apart[name].values, rtol=1e-10)


@pytest.mark.slow
@pytest.mark.parametrize("outer", [{"outer": "bootstrap", "outer_repeats": 3},
                                   {"outer": "cv", "test_split": 0.25}])  # fmt: skip
@pytest.mark.usefixtures("few_interval_draws")
def test_final_models_of_additive_learners_come_from_statistics(monkeypatch, tmp_path, outer):
    """The final model (test split, .632 estimates, saved model) of an additive learner is
    fitted from one pass of statistics, not on its gathered rows, and scores as that fit."""
    from soak_dask.run import final

    table = _classification(300)
    whole = []
    fit_final = final.fit_final
    spy = lambda *a, **k: whole.append(a[1]) or fit_final(*a, **k)  # noqa: E731
    monkeypatch.setattr(final, "fit_final", spy)
    learners = ["lda", "gaussian_nb", "logistic"]
    got = sd.evaluate(
        table, learners, models=tmp_path / "m", **outer, options=sd.RunOptions(progress=False)
    )
    assert len(whole) == 1  # only the row learner, logistic regression, fitted on its rows
    rows = sd.evaluate(
        table, learners, **outer, options=sd.RunOptions(progress=False, onepass=False)
    )
    for name in [v for v in got.data_vars if str(v).startswith(("test_", "n_train", "error"))]:
        np.testing.assert_allclose(got[name].values, rows[name].values, atol=1e-8, err_msg=name)
    model = sd.load_model(tmp_path / "m" / "lda.skops")
    frame = table.data.compute()
    assert set(model.predict(frame[list(table.features)])) <= set(frame[table.label])
