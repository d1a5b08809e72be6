"""Fits from block statistics equal scikit-learn's fits on the materialised train rows."""

from __future__ import annotations

import pickle

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.dummy import DummyClassifier, DummyRegressor
from sklearn.linear_model import (
    Lasso,
    LinearRegression,
    LogisticRegression,
    Ridge,
    RidgeClassifier,
    RidgeClassifierCV,
)
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import MinMaxScaler, StandardScaler

import soak_dask as sd
from soak_dask import Selection, Term
from soak_dask.run.closed_form import fit_from_stats, is_additive
from soak_dask.run.onepass import Moments, block_stats, train_stats

from ..conftest import n_examples

SUBSETS = ["A", "B", "C"]
N_FOLDS = 3
FEATURES = ["x0", "x1", "x2", "x3"]
# Attributes compared with the reference fit whenever the reference has them.
ATTRIBUTES = [
    "coef_",
    "intercept_",
    "constant_",
    "class_prior_",
    "class_count_",
    "theta_",
    "var_",
    "epsilon_",
    "means_",
    "priors_",
    "xbar_",
    "covariance_",
    "explained_variance_ratio_",
    "rank_",
    "singular_",
    "mean_",
    "scale_",
    "n_samples_seen_",
    "n_features_in_",
]

CLASSIFIERS = [
    DummyClassifier(),
    DummyClassifier(strategy="most_frequent"),
    RidgeClassifier(alpha=2.0),
    make_pipeline(StandardScaler(), RidgeClassifier(alpha=3.0)),
    LinearDiscriminantAnalysis(),
    LinearDiscriminantAnalysis(solver="lsqr"),
    LinearDiscriminantAnalysis(solver="eigen", shrinkage=0.2),
    LinearDiscriminantAnalysis(solver="lsqr", shrinkage=0.3, priors=None, store_covariance=True),
    GaussianNB(),
    make_pipeline(StandardScaler(with_mean=False), GaussianNB(var_smoothing=1e-3)),
]
REGRESSORS = [
    DummyRegressor(),
    LinearRegression(),
    Ridge(alpha=5.0),
    make_pipeline(StandardScaler(), Ridge(alpha=5.0)),
    make_pipeline(StandardScaler(with_std=False), LinearRegression()),
]


def _train(subsets: list[str], fold: int) -> Selection:
    """The train set {subset in ``subsets``, fold != ``fold``}."""
    return Selection((Term("subset", tuple(subsets)), Term("fold", (fold,), exclude=True)))


def _frame(n: int = 450, seed: int = 0) -> pd.DataFrame:
    """Features with offsets (1000 ± 1) and scales 0.1..10, labels that depend on them.

    Class "c" never occurs in subset C, so some train sets lack a class.
    """
    rng = np.random.default_rng(seed)
    subset = rng.choice(SUBSETS, size=n)
    klass = np.where(subset == "C", rng.integers(0, 2, n), rng.integers(0, 3, n))
    shift = np.array([1.0, 0.5, -0.5, 0.2])
    z = rng.normal(size=(n, 4)) + klass[:, None] * shift + (subset == "B")[:, None] * 0.3
    x = np.array([1000.0, -50.0, 0.0, 3000.0]) + np.array([1.0, 10.0, 0.1, 3.0]) * z
    df = pd.DataFrame(x, columns=FEATURES)
    df["subset"] = subset
    df["y3"] = np.array(["a", "b", "c"])[klass]
    df["y2"] = np.where(z[:, 0] + z[:, 2] + rng.normal(size=n) > 0.5, "yes", "no")
    df["target"] = x @ np.array([1.0, 0.2, 3.0, -0.1]) + rng.normal(size=n) + 10 * (subset == "A")
    return df


def _table(df: pd.DataFrame, label: str, npartitions: int = 4) -> sd.Table:
    other_labels = [c for c in ("y3", "y2", "target") if c != label]
    ddf = dd.from_pandas(df.drop(columns=other_labels), npartitions=npartitions, sort=False)
    return sd.assign_folds(sd.load_table(ddf, label=label, subset="subset"), N_FOLDS, seed=3)


@pytest.fixture(scope="module", params=["y3", "y2", "target"])
def case(request):
    """(table rows with folds, block statistics, label) for 3-class, binary and regression."""
    label = request.param
    table = _table(_frame(), label)
    classes = None if label == "target" else sorted(_frame()[label].unique())
    stats = block_stats(table, SUBSETS, N_FOLDS, classes, split_every=2).compute()
    return table.data.compute(), stats, label, table.fold


def _assert_close(got, ref, name: str) -> None:
    """rtol 1e-8; entries far below the largest (which nearly cancel) get an absolute
    tolerance of 1e-12 × the largest, the rounding level of scikit-learn's own result."""
    ref = np.asarray(ref)
    if ref.dtype.kind in "fc":
        atol = 1e-12 * np.max(np.abs(ref), initial=0.0)
        np.testing.assert_allclose(got, ref, rtol=1e-8, atol=atol, err_msg=name)
    else:
        np.testing.assert_array_equal(got, ref, err_msg=name)


def _steps(est):
    return [s for _, s in est.steps] if isinstance(est, Pipeline) else [est]


def _term_size(est, X: np.ndarray) -> np.ndarray:
    """|X|·|coef|ᵀ + |intercept|: the size of the terms a linear decision value sums.

    With features at 1000 ± 1 those terms are ~1e4 (the lsqr intercept −½μᵀΣ⁻¹μ ~1e6) and
    cancel to values ~1, so scikit-learn's own decision values carry rounding relative to
    the terms, not to the result; they are compared at 1e-10 of the terms.
    """
    *transformers, final = _steps(est)
    for step in transformers:
        X = step.transform(X)
    size = np.abs(X) @ np.abs(np.atleast_2d(final.coef_)).T + np.abs(final.intercept_)
    return size.ravel() if size.shape[1] == 1 else size


def _compare(got, ref, X_test: np.ndarray) -> None:
    for mine, theirs in zip(_steps(got), _steps(ref), strict=True):
        for name in ATTRIBUTES:
            if getattr(theirs, name, None) is not None:
                _assert_close(getattr(mine, name), getattr(theirs, name), name)
        if hasattr(theirs, "classes_"):
            np.testing.assert_array_equal(mine.classes_, theirs.classes_)
    _assert_close(got.predict(X_test), ref.predict(X_test), "predict")
    if hasattr(ref, "predict_proba"):
        proba = got.predict_proba(X_test)
        np.testing.assert_allclose(proba, ref.predict_proba(X_test), rtol=1e-8, atol=1e-10)
    if hasattr(ref, "decision_function"):
        diff = np.abs(got.decision_function(X_test) - ref.decision_function(X_test))
        assert np.all(diff <= 1e-10 * _term_size(ref, X_test)), diff.max()


@pytest.mark.slow
def test_every_learner_on_every_train_set_equals_scikit_learn(case):
    rows, stats, label, fold_col = case
    learners = REGRESSORS if label == "target" else CLASSIFIERS
    fits = sd.SameOtherAll(N_FOLDS).plan_for(SUBSETS, fold=fold_col).fits
    assert len(fits) == 21  # same/other/all for 3 subsets × 3 folds, distinct train sets
    missing_class = 0
    for fit in fits.itertuples():
        in_fold = rows[fold_col] == fit.fold
        train = rows[~in_fold & rows["subset"].isin(fit.train_subsets)]
        test = rows[in_fold & rows["subset"].isin(fit.test_subsets)]
        ts = train_stats(stats, fit.train, "subset", fold_col)
        assert ts.n_rows == len(train)
        X, y = train[FEATURES].to_numpy(np.float64), train[label].to_numpy()
        missing_class += label == "y3" and len(np.unique(y)) < 3
        for est in learners:
            assert is_additive(est) is not None
            _compare(fit_from_stats(est, ts), clone(est).fit(X, y), test[FEATURES].to_numpy())
    if label == "y3":
        assert missing_class > 0  # "same" train sets of subset C have no class "c"


def test_partitioning_does_not_change_block_statistics():
    df = _frame(seed=5)
    df["fold"] = np.random.default_rng(1).integers(1, N_FOLDS + 1, len(df))
    frame = df.drop(columns=["y2", "target"])
    empty = dd.from_pandas(frame.iloc[:0], npartitions=1)
    stats = []
    for npartitions in (1, 5):
        # An empty partition too, as a filtered Dask frame may have.
        ddf = dd.concat([dd.from_pandas(frame, npartitions=npartitions), empty])
        table = sd.load_table(ddf, label="y3", subset="subset", fold="fold")
        assert table.data.npartitions == npartitions + 1
        stats.append(block_stats(table, SUBSETS, N_FOLDS, ["a", "b", "c"]).compute())
    one, five = (s.moments for s in stats)
    np.testing.assert_array_equal(one.count, five.count)
    np.testing.assert_allclose(five.mean, one.mean, rtol=1e-10)
    scale = np.max(np.abs(one.scatter))
    np.testing.assert_allclose(five.scatter, one.scatter, rtol=1e-10, atol=1e-10 * scale)
    # And the blocks hold exactly the table's rows.
    counts = df.groupby(["subset", "fold", "y3"]).size()
    for (s, k, c), n in counts.items():
        assert one.count[SUBSETS.index(s), k - 1, "abc".index(c)] == n


@settings(max_examples=n_examples(60), deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 60),
    q=st.integers(1, 4),
    n_groups=st.integers(1, 6),
    offset=st.sampled_from([0.0, 1e3, -1e5]),
)
def test_pooled_moments_of_a_random_split_equal_the_direct_ones(seed, n, q, n_groups, offset):
    rng = np.random.default_rng(seed)
    z = offset + rng.normal(size=(n, q)) * rng.uniform(0.1, 10, size=q)
    groups = rng.integers(0, n_groups, size=n)  # some groups may be empty
    parts = [Moments.of(z[groups == g]) for g in range(n_groups)]
    pooled = Moments.stack(parts).pool(0)
    direct = Moments.of(z)
    assert pooled.count == n
    np.testing.assert_allclose(pooled.mean, direct.mean, rtol=1e-12, atol=1e-12)
    scale = np.max(np.abs(direct.scatter), initial=1e-300)
    np.testing.assert_allclose(pooled.scatter, direct.scatter, rtol=1e-9, atol=1e-11 * scale)


@pytest.mark.parametrize(
    ("estimator", "kind"),
    [
        (DummyClassifier(strategy="stratified"), "dummy_classifier"),
        (DummyRegressor(), "dummy_regressor"),
        (LinearRegression(), "linear_regression"),
        (Ridge(alpha=0.0), "ridge"),
        (Ridge(alpha=10.0, solver="svd"), "ridge"),
        (RidgeClassifier(), "ridge_classifier"),
        (LinearDiscriminantAnalysis(), "lda"),
        (LinearDiscriminantAnalysis(solver="eigen", shrinkage=0.5), "lda"),
        (GaussianNB(var_smoothing=0.0), "gaussian_nb"),
        (make_pipeline(StandardScaler(), Ridge()), "ridge"),
        (Pipeline([("skip", "passthrough"), ("lda", LinearDiscriminantAnalysis())]), "lda"),
        (DummyClassifier(strategy="constant", constant="a"), None),
        (DummyRegressor(strategy="median"), None),
        (LinearRegression(fit_intercept=False), None),
        (LinearRegression(positive=True), None),
        (Ridge(solver="sag"), None),
        (Ridge(alpha=[1.0, 2.0]), None),
        (Ridge(fit_intercept=False), None),
        (RidgeClassifier(class_weight="balanced"), None),
        (LinearDiscriminantAnalysis(solver="lsqr", shrinkage="auto"), None),
        (LinearDiscriminantAnalysis(solver="svd", shrinkage=0.1), None),
        (LogisticRegression(), None),
        (Lasso(), None),
        (RidgeClassifierCV(), None),
        (make_pipeline(MinMaxScaler(), Ridge()), None),
        (make_pipeline(StandardScaler(), LogisticRegression()), None),
        (sd.builtin_learner("ridge", "classification"), None),
        (sd.builtin_learner("lda", "classification"), "lda"),
        (sd.builtin_learner("gaussian_nb", "classification"), "gaussian_nb"),
        (sd.builtin_learner("featureless", "regression"), "dummy_regressor"),
    ],
    ids=repr,
)
def test_is_additive_accepts_only_what_fit_from_stats_reproduces(estimator, kind):
    assert is_additive(estimator) == kind


def test_subclasses_are_not_taken_for_their_parent():
    class MyRidge(Ridge):
        def fit(self, X, y, sample_weight=None):
            return super().fit(X, 2 * y, sample_weight)

    assert is_additive(MyRidge()) is None


def test_bad_input_raises_clear_errors():
    df = _frame(n=60, seed=2).drop(columns=["y2", "target"])
    df["fold"] = np.arange(len(df)) % N_FOLDS + 1
    table = sd.load_table(df, label="y3", subset="subset", fold="fold")
    with pytest.raises(ValueError, match=r"label column 'y3' has values \['c'\]"):
        block_stats(table, SUBSETS, N_FOLDS, ["a", "b"]).compute()
    with pytest.raises(ValueError, match=r"subset column 'subset' has values"):
        block_stats(table, ["A", "B"], N_FOLDS, ["a", "b", "c"]).compute()
    with pytest.raises(ValueError, match=r"fold column 'fold' has values \[3\]"):
        block_stats(table, SUBSETS, 2, ["a", "b", "c"]).compute()
    with pytest.raises(ValueError, match="classes=None for a classification table"):
        block_stats(table, SUBSETS, N_FOLDS)
    df.loc[5, "x2"] = np.nan
    nan_table = sd.load_table(df, label="y3", subset="subset", fold="fold")
    with pytest.raises(ValueError, match=r"columns \['x2'\] have missing or infinite values"):
        block_stats(nan_table, SUBSETS, N_FOLDS, ["a", "b", "c"]).compute()
    no_folds = sd.load_table(df.drop(columns="fold"), label="y3", subset="subset")
    with pytest.raises(ValueError, match="no fold column"):
        block_stats(no_folds, SUBSETS, N_FOLDS, ["a", "b", "c"])
    stats = block_stats(table, SUBSETS, N_FOLDS, ["a", "b", "c"]).compute()
    with pytest.raises(ValueError, match=r"subset values \['D'\] are not among"):
        train_stats(stats, _train(["A", "D"], 1), "subset", "fold")
    with pytest.raises(ValueError, match=r"fold values \[4\] are not among \[1, 2, 3\]"):
        train_stats(stats, _train(["A"], 4), "subset", "fold")
    with pytest.raises(ValueError, match=r"reads \['reserved'\]: statistics are per"):
        train_stats(
            stats, _train(["A"], 1) & Selection((Term("reserved", (0,)),)), "subset", "fold"
        )
    ts = train_stats(stats, _train(["A"], 1), "subset", "fold")
    with pytest.raises(ValueError, match="cannot be fitted from block statistics"):
        fit_from_stats(LogisticRegression(), ts)
    with pytest.raises(ValueError, match="Ridge does not fit classification"):
        fit_from_stats(Ridge(), ts)


def test_fit_errors_match_scikit_learn():
    """A fit that scikit-learn refuses is refused the same way (the engine scores it NaN)."""
    df = _frame(n=90, seed=4).drop(columns=["y2", "target"])
    df["fold"] = np.arange(len(df)) % N_FOLDS + 1
    table = sd.load_table(df, label="y3", subset="subset", fold="fold")
    stats = block_stats(table, SUBSETS, N_FOLDS, ["a", "b", "c"]).compute()
    ts = train_stats(stats, _train(["C"], 1), "subset", "fold")
    train = df[(df["subset"] == "C") & (df["fold"] != 1)]  # classes a and b only
    est = GaussianNB(priors=[0.2, 0.3, 0.5])
    with pytest.raises(ValueError, match="Number of priors must match") as ref:
        clone(est).fit(train[FEATURES].to_numpy(), train["y3"].to_numpy())
    with pytest.raises(ValueError, match=str(ref.value)):
        fit_from_stats(est, ts)


def test_lazy_statistics_survive_pickling_as_on_a_cluster():
    """What a distributed scheduler ships (the graph) and returns (BlockStats) pickles."""
    table = _table(_frame(n=200, seed=8), "target", npartitions=3)
    lazy = block_stats(table, SUBSETS, N_FOLDS)
    local = lazy.compute(scheduler="sync")
    shipped = pickle.loads(pickle.dumps(lazy)).compute(scheduler="sync")
    back = pickle.loads(pickle.dumps(shipped))
    assert back.subsets == tuple(SUBSETS) and back.features == tuple(FEATURES)
    assert back.classes is None and back.n_folds == N_FOLDS
    for name in ("count", "mean", "scatter"):
        np.testing.assert_array_equal(getattr(back.moments, name), getattr(local.moments, name))
