"""The glmnet-style lasso estimators and the rpart-like pruned tree (the SOAK paper's learners)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Lasso, LogisticRegression
from sklearn.model_selection import cross_validate
from sklearn.utils.estimator_checks import parametrize_with_checks

import soak_dask as sd
from soak_dask.learn.lasso import LOGIT_MAX, _exp_log1p, _fold_ids, _held_out_deviance

from ..conftest import AZTREES_FEATURES, toy_table

# Internal CV assigns folds to rows, so a weight of 2 is not the same as a repeated row (the
# repeated row may land in another fold); the tree's minimum node sizes count rows too.
WEIGHTS_ARE_NOT_REPEATS = {
    "check_sample_weight_equivalence_on_dense_data": "folds and node sizes count rows"
}


def classification_data(n: int = 400, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Six features on different scales and offsets, three of them informative."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6)) * [1, 2, 0.5, 1, 3, 1] + [1, -2, 0, 3, 0, 1]
    eta = (X - X.mean(0)) @ np.array([1.0, -0.5, 0.0, 0.0, 0.3, 0.0])
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-eta)), "yes", "no")
    return X, y


def regression_data(n: int = 300, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6)) * [1, 2, 0.5, 1, 3, 1] + 5
    y = X @ np.array([1.0, -0.5, 0.0, 0.0, 0.3, 0.0]) + rng.normal(size=n)
    return X, y


@parametrize_with_checks(
    [
        sd.LassoCVClassifier(random_state=0),
        sd.LassoCVRegressor(random_state=0),
        sd.PrunedTreeClassifier(random_state=0),
        sd.PrunedTreeRegressor(random_state=0),
    ],
    expected_failed_checks=lambda est: WEIGHTS_ARE_NOT_REPEATS,
)
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)


def test_classifier_api():
    X, y = classification_data()
    model = sd.LassoCVClassifier(n_folds=5, random_state=1)
    assert clone(model).get_params() == model.get_params()
    assert model.set_params(selection="min").selection == "min"
    model.fit(X, y)
    assert list(model.classes_) == ["no", "yes"]
    assert model.coef_.shape == (1, 6) and model.intercept_.shape == (1,)
    assert model.n_features_in_ == 6 and model.n_iter_ >= 1
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    scores = model.decision_function(X)
    np.testing.assert_allclose(proba[:, 1], 1 / (1 + np.exp(-scores)))
    np.testing.assert_array_equal(model.predict(X), np.where(scores > 0, "yes", "no"))
    assert model.lambda_ == model.lambda_min_  # selection="min"
    assert model.lambda_path_.shape == model.cv_deviance_.shape == model.cv_deviance_se_.shape
    assert {0, 1, 4} <= set(np.flatnonzero(model.coef_[0]))  # the informative features


def test_multiclass_is_one_vs_rest():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(450, 4))
    y = np.array(["a", "b", "c"])[np.argmax(X[:, :3] * 2 + rng.normal(size=(450, 3)), axis=1)]
    model = sd.LassoCVClassifier(n_folds=5, random_state=0).fit(X, y)
    assert model.coef_.shape == (3, 4) and model.lambda_.shape == (3,)
    assert len(model.lambda_path_) == 3
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert np.mean(model.predict(X) == y) > 0.7
    # Each class's model is "this class or not": its own feature raises its score.
    assert np.all(np.diag(model.coef_[:, :3]) > 0)
    assert model.coef_[0, 3] == model.coef_[1, 3] == model.coef_[2, 3] == 0  # noise feature


@pytest.mark.parametrize("standardize", [False, True])
def test_classifier_equals_scikit_learn_at_a_fixed_penalty(standardize):
    """glmnet's binomial objective (1/n) Σ logloss + λ‖β‖₁ is LogisticRegression's with
    C = 1/(nλ); with standardize, on the standardised features."""
    X, y = classification_data()
    n, lam = len(y), 0.02
    ours = sd.LassoCVClassifier(lambdas=[lam], standardize=standardize, tol=1e-16, n_folds=3)
    ours.fit(X, y)
    Z = (X - X.mean(0)) / X.std(0) if standardize else X
    theirs = LogisticRegression(l1_ratio=1.0, C=1 / (n * lam), solver="saga", tol=1e-12)
    theirs.set_params(max_iter=100_000).fit(Z, y)
    coef = ours.coef_ * X.std(0) if standardize else ours.coef_
    np.testing.assert_allclose(coef, theirs.coef_, atol=1e-6)
    assert np.count_nonzero(coef) < 6  # the penalty is active: some coefficients are 0
    np.testing.assert_allclose(ours.decision_function(X), theirs.decision_function(Z), atol=1e-6)


@pytest.mark.parametrize("standardize", [False, True])
def test_regressor_equals_scikit_learn_at_a_fixed_penalty(standardize):
    """glmnet's gaussian objective (1/2n)‖y − Xβ‖² + λ‖β‖₁ is Lasso(alpha=λ)'s."""
    X, y = regression_data()
    lam = 0.1
    ours = sd.LassoCVRegressor(lambdas=[lam], standardize=standardize, tol=1e-16, n_folds=3)
    ours.fit(X, y)
    Z = (X - X.mean(0)) / X.std(0) if standardize else X
    theirs = Lasso(alpha=lam, tol=1e-14, max_iter=100_000).fit(Z, y)
    coef = ours.coef_ * X.std(0) if standardize else ours.coef_
    np.testing.assert_allclose(coef, theirs.coef_, atol=1e-6)
    assert np.count_nonzero(coef) < 6
    np.testing.assert_allclose(ours.predict(X), theirs.predict(Z), atol=1e-6)


@pytest.mark.parametrize("Model", [sd.LassoCVClassifier, sd.LassoCVRegressor])
def test_sample_weight_equals_repeated_rows(Model):
    """At fixed penalties (the CV's folds count rows, so only the path is comparable)."""
    X, y = classification_data() if Model is sd.LassoCVClassifier else regression_data()
    counts = np.random.default_rng(5).integers(1, 4, size=len(y))
    params = {"lambdas": [0.02], "tol": 1e-16, "n_folds": 3}
    weighted = Model(**params).fit(X, y, sample_weight=counts)
    repeated = Model(**params).fit(np.repeat(X, counts, 0), np.repeat(y, counts))
    np.testing.assert_allclose(weighted.coef_, repeated.coef_, atol=1e-8)
    np.testing.assert_allclose(weighted.intercept_, repeated.intercept_, atol=1e-8)


@pytest.mark.parametrize("Model", [sd.LassoCVClassifier, sd.LassoCVRegressor])
def test_path_starts_at_lambda_max(Model):
    """λ_max is the smallest penalty with every coefficient zero."""
    X, y = classification_data() if Model is sd.LassoCVClassifier else regression_data()
    top = Model(n_folds=3, random_state=0).fit(X, y).lambda_path_[0]
    assert not np.any(Model(lambdas=[top], n_folds=3).fit(X, y).coef_)
    assert np.count_nonzero(Model(lambdas=[0.999 * top], n_folds=3).fit(X, y).coef_) == 1


@pytest.mark.parametrize("Model", [sd.LassoCVClassifier, sd.LassoCVRegressor])
def test_lambda_1se_rule(Model):
    X, y = (
        classification_data(n=600, seed=2)
        if Model is sd.LassoCVClassifier
        else (regression_data(n=600, seed=2))
    )
    model = Model(random_state=4).fit(X, y)
    lambdas, cvm, se = model.lambda_path_, model.cv_deviance_, model.cv_deviance_se_
    assert np.all(np.diff(lambdas) < 0)
    best = np.argmin(cvm)
    assert model.lambda_min_ == lambdas[best]
    assert model.lambda_1se_ == lambdas[cvm <= cvm[best] + se[best]].max()
    assert model.lambda_ == model.lambda_1se_ > model.lambda_min_
    # lambda.1se is sparser than lambda.min
    at_min = clone(model).set_params(selection="min").fit(X, y)
    assert at_min.lambda_ == model.lambda_min_
    assert np.count_nonzero(model.coef_) <= np.count_nonzero(at_min.coef_)


def test_cv_deviance_is_the_held_out_binomial_deviance():
    """Under a penalty that zeroes every coefficient, cv_deviance_ is the mean held-out
    −2 log-likelihood of each fold's intercept-only model (its train rows' class share),
    averaged over the folds by weight."""
    X, y = classification_data(n=300)
    model = sd.LassoCVClassifier(lambdas=[1e3], n_folds=4, random_state=7).fit(X, y)
    folds = _fold_ids(len(y), 4, 7, np.unique(y, return_inverse=True)[1])
    positive = y == "yes"
    per_fold = []
    for f in range(4):
        share = positive[folds != f].mean()
        held = positive[folds == f]
        per_fold.append(-2 * np.mean(np.where(held, np.log(share), np.log(1 - share))))
    weights = np.bincount(folds)
    assert model.cv_deviance_[0] == pytest.approx(np.average(per_fold, weights=weights))


def test_vectorised_exp_and_log1p_match_numpy():
    """The pass's own exp(−|e|) and log(1 + exp(−|e|)) agree with numpy's to rounding, from
    0 to beyond the underflow of exp."""
    rng = np.random.default_rng(0)
    e = np.concatenate([rng.normal(scale=5, size=2000), [0.0, -0.0, 1e-300, 0.3465, 700, -750]])
    z, log1p_z = np.empty(e.size), np.empty(e.size)
    _exp_log1p(e, z, log1p_z, np.empty(e.size, dtype=np.int64))
    np.testing.assert_allclose(z, np.exp(-np.abs(e)), rtol=1e-14, atol=1e-300)
    np.testing.assert_allclose(log1p_z, np.log1p(np.exp(-np.abs(e))), rtol=1e-14, atol=1e-300)


def test_held_out_deviance_is_the_clipped_binomial_deviance():
    """The compiled held-out deviance of a path's fits equals numpy's weighted sum of
    2 log(1 + e^(sη)), η clipped to ±logit(1 − 1e-5), over blocks of rows and fits (600
    rows: a partial last block), large coefficients included (the clipping)."""
    rng = np.random.default_rng(3)
    XT = np.vstack([np.ones(600), rng.normal(size=(5, 600))])
    coefs = rng.normal(scale=[[0.3], [3.0], [30.0]], size=(3, 6))
    sign = 1.0 - 2.0 * (rng.random(600) < 0.4)
    w = rng.random(600) / 600
    out = np.empty(3)
    _held_out_deviance(XT, coefs, sign, w, out)
    eta = np.clip(XT.T @ coefs.T, -LOGIT_MAX, LOGIT_MAX)
    expected = w @ (2.0 * np.log1p(np.exp(sign[:, None] * eta)))
    np.testing.assert_allclose(out, expected, rtol=1e-13)
    assert np.mean(np.abs(XT.T @ coefs[2]) > LOGIT_MAX) > 0.5  # the clip matters


def test_folds_are_stratified_and_seeded():
    strata = np.repeat([0, 1, 2], [50, 31, 9])
    folds = _fold_ids(90, 10, 3, strata)
    for k in range(3):
        counts = np.bincount(folds[strata == k], minlength=10)
        assert counts.max() - counts.min() <= 1
    assert np.bincount(folds).tolist() == [9] * 10
    np.testing.assert_array_equal(folds, _fold_ids(90, 10, 3, strata))
    assert not np.array_equal(folds, _fold_ids(90, 10, 4, strata))


@pytest.mark.parametrize("Model", [sd.LassoCVClassifier, sd.LassoCVRegressor])
def test_same_seed_same_fit(Model):
    X, y = classification_data() if Model is sd.LassoCVClassifier else regression_data()
    a, b = Model(random_state=11).fit(X, y), Model(random_state=11).fit(X, y)
    np.testing.assert_array_equal(a.cv_deviance_, b.cv_deviance_)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    c = Model(random_state=12).fit(X, y)
    assert not np.array_equal(a.cv_deviance_, c.cv_deviance_)


def test_path_stops_when_the_deviance_stops_improving():
    """glmnet's rule: R² above 0.999 ends the path (here: y is nearly a linear function)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = X @ [1.0, 2.0, 0.0] + rng.normal(scale=0.01, size=200)
    model = sd.LassoCVRegressor(random_state=0).fit(X, y)
    assert model.lambda_path_.size < 100


def test_convergence_warning_only_when_not_converged():
    X, y = classification_data()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sd.LassoCVClassifier(random_state=0).fit(X, y)
    with pytest.warns(ConvergenceWarning, match="max_iter=1 "):
        sd.LassoCVClassifier(max_iter=1, random_state=0).fit(X, y)


def test_correlated_bands_converge_without_warnings(aztrees):
    """aztrees' 21 bands are nearly collinear (correlation eigenvalues down to 5e-4)."""
    part = aztrees.iloc[::6]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = sd.LassoCVClassifier(random_state=1).fit(part[AZTREES_FEATURES], part["y"])
    assert np.mean(model.predict(part[AZTREES_FEATURES]) == part["y"]) > 0.95


def test_bad_input_is_named():
    X, y = classification_data(n=40)
    with pytest.raises(ValueError, match="n_folds=10 folds need at least 10 rows"):
        sd.LassoCVClassifier().fit(X[:6], y[:6])
    with pytest.raises(ValueError, match="one class only: 'no'"):
        sd.LassoCVClassifier(n_folds=3).fit(X, np.full(40, "no"))
    with pytest.raises(ValueError, match="lambdas must be finite and >= 0"):
        sd.LassoCVRegressor(lambdas=[0.1, -1.0], n_folds=3).fit(*regression_data(n=30))
    with pytest.raises(ValueError, match="selection"):
        sd.LassoCVClassifier(selection="best").fit(X, y)


@pytest.mark.slow
def test_soak_runs_lasso_cv_end_to_end():
    """lasso_cv in soak scores what cross_validate scores on the same splits."""
    df = toy_table(n=360, n_subsets=3, seed=2)
    table = sd.load_table(df, label="y", subset="subset")
    res = sd.soak(
        table, ["lasso_cv", "featureless"], n_folds=4, seed=9, options=sd.RunOptions(progress=False)
    )
    cv = sd.SameOtherAllCV(df["subset"], n_splits=4, random_state=9)
    X, y = df[["x0", "x1", "x2"]].to_numpy(), df["y"].to_numpy()
    naive = cross_validate(sd.LassoCVClassifier(random_state=9), X, y, cv=cv, scoring="accuracy")
    info = cv.split_info().assign(accuracy=naive["test_score"])
    for r in info.itertuples():
        got = res["accuracy"].sel(
            learner="lasso_cv", test_subset=r.test_subset, fold=r.fold, train_type=r.train_type
        )
        assert float(got) == pytest.approx(r.accuracy, abs=1e-12)
    errors = res["error"].mean(["test_subset", "fold", "train_type"])
    assert float(errors.sel(learner="lasso_cv")) < float(errors.sel(learner="featureless"))


def test_builtin_names():
    assert isinstance(sd.builtin_learner("lasso_cv", "classification", 3), sd.LassoCVClassifier)
    assert sd.builtin_learner("lasso_cv", "regression", 3).random_state == 3
    assert isinstance(sd.builtin_learner("decision_tree", "regression"), sd.PrunedTreeRegressor)


def test_prepare_kernels_compiles_before_a_run_and_says_so_when_not_cached(monkeypatch):
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from soak_dask.learn import lasso

    said = []
    lasso.prepare_kernels({"logistic": LogisticRegression()}, said.append)
    assert not said  # no lasso learner: nothing compiled, nothing said
    monkeypatch.setattr(lasso, "kernels_cached", lambda: False)
    piped = {"l1": make_pipeline(StandardScaler(), lasso.LassoCVClassifier())}
    lasso.prepare_kernels(piped, said.append)
    assert len(said) == 1 and said[0].startswith("l1: compiling the lasso kernels")
    assert lasso.compile_kernels() < 5  # compiled (or loaded) once: now milliseconds
