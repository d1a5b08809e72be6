"""Nested evaluation: tuning and feature selection inside the folds, the inner scheme, prior
correction and Platt calibration (issue 14), on real fits."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.feature_selection import SelectKBest, f_classif
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import make_pipeline
from sklearn.tree import DecisionTreeClassifier

import soak_dask as sd
from soak_dask.learn.calibration import PlattCalibrated, platt
from soak_dask.learn.priors import PriorCorrected
from soak_dask.learn.tuning import Search, freeze
from soak_dask.split.inner import Inner

from ..conftest import n_examples

QUIET = {"options": sd.RunOptions(progress=False)}


def _frame(X: np.ndarray, y: np.ndarray, **extra) -> pd.DataFrame:
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    df["y"] = y
    for name, values in extra.items():
        df[name] = values
    return df


def _imbalanced(n: int = 600, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.12, "rare", "common")
    X = rng.normal(size=(n, 3)) + 0.9 * (y == "rare")[:, None]
    return _frame(X, y)


def test_prior_correction_raises_balanced_accuracy_and_keeps_log_loss():
    table = sd.load_table(_imbalanced(), label="y")
    learners = {"logistic": LogisticRegression()}
    measures = ["balanced_accuracy", "log_loss"]
    on = sd.evaluate(table, learners, measures=measures, prior_correction=True, **QUIET)
    off = sd.evaluate(table, learners, measures=measures, prior_correction=False, **QUIET)
    gain = on.balanced_accuracy.mean() - off.balanced_accuracy.mean()
    assert gain > 0.1, float(gain)
    np.testing.assert_allclose(on.log_loss, off.log_loss, rtol=0, atol=1e-12)
    assert on.attrs["prior_correction"] == 1 and off.attrs["prior_correction"] == 0


def test_prior_correction_predicts_argmax_of_probability_over_share():
    df = _imbalanced(200, seed=1)
    X, y = df[["f0", "f1", "f2"]].to_numpy(), df["y"].to_numpy()
    model = PriorCorrected(LogisticRegression()).fit(X, y)
    shares = np.array([np.mean(y == c) for c in model.classes_])
    np.testing.assert_allclose(model.priors_, shares)
    proba = model.estimator_.predict_proba(X)
    np.testing.assert_array_equal(model.predict(X), model.classes_[np.argmax(proba / shares, 1)])
    np.testing.assert_array_equal(model.predict_proba(X), proba)


def test_prior_correction_refuses_a_resampling_pipeline():
    from imblearn.over_sampling import RandomOverSampler
    from imblearn.pipeline import make_pipeline as imb_pipeline

    table = sd.load_table(_imbalanced(100), label="y")
    learner = imb_pipeline(RandomOverSampler(random_state=0), LogisticRegression())
    with pytest.raises(ValueError, match="randomoversampler.*prior_correction"):
        sd.evaluate(table, {"smote_like": learner}, **QUIET)
    ds = sd.evaluate(table, {"smote_like": learner}, prior_correction=False, **QUIET)
    assert np.isfinite(ds.error).all()


def _overconfident(n: int = 400, seed: int = 2) -> pd.DataFrame:
    """Naive Bayes on 15 copies of one noisy feature: it counts the evidence 15 times."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    signal = y + rng.normal(scale=1.2, size=n)
    X = signal[:, None] + rng.normal(scale=0.05, size=(n, 15))
    return _frame(X, np.where(y == 1, "pos", "neg"))


@pytest.mark.slow
def test_platt_lowers_log_loss_of_an_overconfident_learner():
    table = sd.load_table(_overconfident(), label="y")
    learners = {"nb": GaussianNB()}
    kw = {"measures": ["log_loss", "auc"], "prior_correction": False, **QUIET}
    raw = sd.evaluate(table, learners, **kw)
    cal = sd.evaluate(table, learners, calibration="platt", **kw)
    assert float(cal.log_loss.mean()) < 0.7 * float(raw.log_loss.mean())
    # A monotone map of the scores: the ranking, so the AUC, stays.
    np.testing.assert_allclose(cal.auc, raw.auc, atol=0.02)


def test_platt_on_a_shifted_test_part():
    """Trained where the classes overlap little, tested where the same ranking holds but the
    raw probabilities are far too sure: Platt, fitted on training data alone, does better."""
    df = _overconfident(600, seed=3)
    X, y = df.filter(like="f").to_numpy(), df["y"].to_numpy()
    train, test = X[:300], X[300:] * 0.6  # shifted: the test part's scores shrink
    raw = GaussianNB().fit(train, y[:300])
    cal = PlattCalibrated(GaussianNB()).fit(train, y[:300])
    from sklearn.metrics import log_loss

    assert log_loss(y[300:], cal.predict_proba(test)) < log_loss(y[300:], raw.predict_proba(test))


def test_platt_fit_matches_a_direct_minimisation():
    rng = np.random.default_rng(0)
    s = rng.normal(size=300)
    pos = rng.random(300) < 1 / (1 + np.exp(-(2 * s - 0.5)))
    a, b = platt(s, pos)
    assert a == pytest.approx(2, abs=0.6) and b == pytest.approx(-0.5, abs=0.4)


def test_featureless_keeps_the_majority_under_correction_and_calibration():
    """Prior probabilities divided by the priors tie: the tie goes to the larger probability,
    and Platt on constant scores returns the training share (not the smoothed targets')."""
    table = sd.load_table(_imbalanced(300), label="y")
    kw = {"measures": ["error"], **QUIET}
    plain = sd.evaluate(table, "featureless", prior_correction=False, **kw)
    for calibration in (None, "platt"):
        ds = sd.evaluate(table, "featureless", calibration=calibration, **kw)
        np.testing.assert_array_equal(ds.error, plain.error)
    assert platt(np.zeros(9), np.arange(9) < 1) == (0.0, pytest.approx(np.log(1 / 8)))


def test_platt_is_skipped_on_multiclass_with_a_note():
    rng = np.random.default_rng(0)
    y = np.repeat(["a", "b", "c"], 40)
    table = sd.load_table(_frame(rng.normal(size=(120, 2)), y), label="y")
    ds = sd.evaluate(table, {"nb": GaussianNB()}, calibration="platt", **QUIET)
    assert "binary tasks only" in str(ds.attrs["notes"])
    assert "PlattCalibrated" not in ds.attrs["learners"]


@pytest.mark.parametrize(
    ("n_groups", "expected"),
    [
        (5, "leave-one-group-out (5 groups)"),
        (10, "leave-one-group-out (10 groups)"),
        (11, "group 5-fold (11 groups)"),
        (60, "group 5-fold (60 groups)"),
    ],
)
def test_auto_inner_scheme_with_groups(n_groups, expected):
    groups = np.repeat(np.arange(n_groups), 4)
    y = np.tile([0, 1], n_groups * 2)
    scheme, splits = Inner("auto", 5).splits(y, groups)
    assert scheme == expected
    assert len(splits) == (n_groups if n_groups <= 10 else 5)
    for train, test in splits:
        assert not set(groups[train]) & set(groups[test])


def test_auto_inner_scheme_without_groups():
    y = np.repeat([0, 1], [400, 100])
    scheme, splits = Inner("auto", 5).splits(y, cheap=True)
    assert scheme.startswith("repeated stratified 5-fold × 3 (small") and len(splits) == 15
    assert Inner("auto", 5).splits(y, cheap=False)[0] == "stratified 5-fold"
    assert Inner("auto", 5).splits(np.repeat([0, 1], 1500), cheap=True)[0] == "stratified 5-fold"
    # The rarest class caps the folds.
    assert Inner("auto", 5).splits(np.repeat([0, 1], [50, 3]))[0] == "stratified 3-fold"
    with pytest.raises(ValueError, match="class 1 has 1 row"):
        Inner("cv", 5).splits(np.repeat([0, 1], [50, 1]))


@settings(max_examples=n_examples(30), deadline=None)
@given(
    n_groups=st.integers(2, 40),
    inner=st.sampled_from(["auto", "cv", "repeated_cv", "loo"]),
    repeats=st.integers(1, 3),
)
def test_inner_splits_keep_groups_whole_and_test_each_row(n_groups, inner, repeats):
    groups = np.repeat(np.arange(n_groups), 3)
    y = np.tile([0, 1, 1], n_groups)
    _, splits = Inner(inner, 4, repeats, seed=7).splits(y, groups)
    tested = np.zeros(len(y), dtype=int)
    for train, test in splits:
        assert not set(groups[train]) & set(groups[test])
        tested[test] += 1
    assert (tested >= 1).all()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"inner": "bootstrap"}, r"inner='bootstrap': choose from \['auto', 'cv'"),
        ({"inner_folds": 1}, "inner_folds=1"),
        ({"inner_repeats": 0}, "inner_repeats=0"),
        ({"calibration": "isotonic"}, "calibration='isotonic'"),
        ({"nested": "yes"}, "nested='yes'"),
    ],
)
def test_bad_nesting_options_are_refused(kwargs, message):
    table = sd.load_table(_imbalanced(60), label="y")
    with pytest.raises(ValueError, match=message):
        sd.evaluate(table, "featureless", **kwargs, **QUIET)


def test_bad_search_spaces_name_the_learner_and_parameter():
    table = sd.load_table(_imbalanced(60), label="y")
    with pytest.raises(ValueError, match="learner 'lr'.*no parameter 'alpha'"):
        sd.evaluate(table, {"lr": (LogisticRegression(), {"alpha": [1, 2]})}, **QUIET)
    with pytest.raises(ValueError, match="learner 'lr'.*'C' needs a list"):
        sd.evaluate(table, {"lr": (LogisticRegression(), {"C": 1.0})}, **QUIET)
    from scipy.stats import loguniform

    with pytest.raises(ValueError, match="distribution; give a budget"):
        sd.evaluate(table, {"lr": (LogisticRegression(), {"C": loguniform(0.1, 1)})}, **QUIET)


def _noise(n: int = 100, p: int = 400, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return _frame(rng.normal(size=(n, p)), rng.choice(["a", "b"], n))


@pytest.mark.slow
def test_nested_selection_is_honest_and_the_shortcut_is_optimistic():
    """Pure noise: selection on all rows finds features that 'predict' the outer test folds."""
    table = sd.load_table(_noise(), label="y")
    pipe = make_pipeline(SelectKBest(f_classif, k=10), LogisticRegression())
    kw = {"measures": ["accuracy"], "outer_folds": 5, **QUIET}
    nested = sd.evaluate(table, {"sel": pipe}, nested=True, **kw)
    flat = sd.evaluate(table, {"sel": pipe}, nested=False, **kw)
    honest, optimistic = float(nested.accuracy.mean()), float(flat.accuracy.mean())
    assert abs(honest - 0.5) < 0.12, honest
    assert optimistic > honest + 0.15, (optimistic, honest)
    assert "optimistic" in flat.attrs and "optimistic" not in nested.attrs
    from soak_dask.results.stats import evaluation_text

    assert "WARNING: nested=False" in evaluation_text(flat)
    # Each fold kept k features, chosen anew; so did the final model.
    assert (nested.n_features_kept == 10).all()
    assert nested.final_n_features_kept.sel(learner="sel").item() == 10


@pytest.mark.slow
def test_chosen_settings_are_recorded_per_fold_and_for_the_final_model(tmp_path):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(144, 6))
    y = np.where(X[:, 0] + X[:, 1] > 0, "a", "b")
    groups = np.repeat(np.arange(12), 12)
    table = sd.load_table(_frame(X, y, site=groups), label="y", group="site")
    space = {"selectkbest__k": [1, 2, 6], "decisiontreeclassifier__max_depth": [1, 3]}
    pipe = make_pipeline(SelectKBest(f_classif), DecisionTreeClassifier(random_state=0))
    ds = sd.evaluate(table, {"tree": (pipe, space)}, outer_folds=4, models=tmp_path / "m", **QUIET)
    chosen = [json.loads(c) for c in ds.chosen.sel(learner="tree").values.ravel()]
    assert all(set(c) == set(space) for c in chosen) and len(chosen) == 4
    kept = ds.n_features_kept.sel(learner="tree").values.ravel()
    np.testing.assert_array_equal(kept, [c["selectkbest__k"] for c in chosen])
    # 9 groups in each outer training part (at most 10): leave one group out; 12 for the
    # final model: group 5-fold.
    assert set(ds.inner_scheme.values.ravel()) == {"leave-one-group-out (9 groups)"}
    assert ds.final_inner_scheme.item() == "group 5-fold (12 groups)"
    assert ds.attrs["outer_seconds"] > 0 and ds.attrs["final_seconds"] > 0
    assert (ds.final_fit_seconds > 0).all()
    from soak_dask.results.evaluation_report import write_evaluation_report

    write_evaluation_report(ds, tmp_path / "rep")
    table = pd.read_csv(tmp_path / "rep" / "timings.csv").set_index("learner")
    assert table.loc["tree", "outer_fit_seconds"] == pytest.approx(float(ds.fit_seconds.sum()))
    assert table.loc["(wall)", "final_fit_seconds"] == pytest.approx(ds.attrs["final_seconds"])
    page = (tmp_path / "rep" / "report.html").read_text()
    assert 'id="choices"' in page and "Timings" in page
    # The shipped model is the tuned, prior-corrected procedure, and loads from its file.
    # A function reference and a decision tree: skops leaves both to the caller to trust.
    trusted = [
        "sklearn.feature_selection._univariate_selection.f_classif",
        "sklearn.tree._tree.Tree",
    ]
    model = sd.load_model(tmp_path / "m" / "tree.skops", trusted=trusted).estimator
    assert isinstance(model, PriorCorrected) and isinstance(model.estimator_, Search)
    assert model.estimator_.best_params_ == json.loads(ds.final_chosen.item())


def test_freeze_keeps_the_choice_and_the_features():
    df = _noise(80, 30, seed=5)
    X, y = df.filter(like="f").to_numpy(), df["y"].to_numpy()
    pipe = make_pipeline(SelectKBest(f_classif, k=4), LogisticRegression())
    search = Search(pipe, {"logisticregression__C": [0.01, 10.0]}, inner_folds=3)
    fitted = PriorCorrected(search).fit(X, y)
    frozen = freeze(PriorCorrected(search), fitted)
    refit = frozen.fit(X[:40], y[:40])  # other rows: the features stay those chosen on all
    support = fitted.estimator_.best_estimator_[0].get_support()
    np.testing.assert_array_equal(refit.estimator_[0].get_support(), support)
    assert refit.estimator_[1].C == fitted.estimator_.best_params_["logisticregression__C"]


@pytest.mark.slow
def test_soak_tunes_inside_each_train_set_with_prior_correction():
    rng = np.random.default_rng(6)
    n = 240
    X = rng.normal(size=(n, 3))
    y = np.where(X[:, 0] + rng.normal(scale=0.5, size=n) > 0.8, "yes", "no")
    df = _frame(X, y, region=np.repeat(["N", "S"], n // 2))
    table = sd.load_table(df, label="y", subset="region")
    ds = sd.soak(
        table,
        {"lr": (LogisticRegression(), {"C": [0.01, 1.0]})},
        n_folds=3,
        prior_correction=True,
        inner="cv",
        inner_folds=2,
        **QUIET,
    )
    assert ds.chosen.shape == (1, 2, 3, 3) and (ds.chosen != "").all()
    assert set(ds.inner_scheme.values.ravel()) == {"stratified 2-fold"}
    assert ds.attrs["prior_correction"] == 1
    assert np.isfinite(ds.error).all()


def test_a_pipeline_search_equals_scikit_learn_on_the_same_splits():
    """dask-ml's searcher (shared pipeline stages fitted once) ranks as scikit-learn's does."""
    from sklearn.model_selection import GridSearchCV

    df = _noise(120, 40, seed=8)
    X, y = df.filter(like="f").to_numpy(), df["y"].to_numpy()
    pipe = make_pipeline(SelectKBest(f_classif), LogisticRegression())
    space = {"selectkbest__k": [2, 10], "logisticregression__C": [0.01, 1.0]}
    ours = Search(pipe, space, inner="cv", inner_folds=3, scoring="accuracy").fit(X, y)
    _, splits = Inner("cv", 3).splits(y)
    direct = GridSearchCV(pipe, space, cv=splits, scoring="accuracy").fit(X, y)
    assert ours.best_params_ == direct.best_params_
    assert ours.best_score_ == pytest.approx(direct.best_score_, abs=1e-12)


@pytest.mark.slow
def test_balance_overlap_assigns_the_folds_of_overlap_folds():
    rng = np.random.default_rng(9)
    X = rng.normal(size=(240, 3))
    y = np.where(X[:, 0] + rng.normal(scale=0.8, size=240) > 0, "a", "b")
    table = sd.load_table(
        _frame(X, y, region=np.repeat(["N", "S"], 120)), label="y", subset="region"
    )
    kw = {"measures": ["error"], **QUIET}
    balanced = sd.soak(table, "lda", balance="overlap", n_folds=3, **kw)
    given = sd.soak(sd.overlap_folds(table, 3, seed=1), "lda", **kw)  # its fold column: its K
    np.testing.assert_array_equal(balanced.error, given.error)
    assert balanced.attrs["balance"] == "overlap"
    ds = sd.evaluate(table, "lda", balance="overlap", outer_folds=3, **QUIET)
    assert ds.attrs["balance"] == "overlap" and ds.sizes["fold"] == 3
    with pytest.raises(ValueError, match="balance='overlap' has no effect with outer='bootstrap'"):
        sd.evaluate(table, "lda", balance="overlap", outer="bootstrap", **QUIET)
    with pytest.raises(ValueError, match="balance='rows'"):
        sd.soak(table, "lda", balance="rows", n_folds=3, **kw)
