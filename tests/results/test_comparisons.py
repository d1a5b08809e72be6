"""Learner comparisons (``soak_dask.results.comparisons.compare``) and the tests behind them
(``soak_dask.stats.mean_tests``), each against a hand computation on fixed numbers: t and F
tails by numerical integration of their densities, McNemar's exact p by binomial sums, so the
references do not share scipy's code. The level of each test is measured by
``benchmarks/test_level.py``, not here."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats as sps

import soak_dask as sd
from soak_dask.results.comparisons import (
    ABOUT,
    COMPARE_COLUMNS,
    LEVEL_LIMIT,
    MEASURED,
    compare,
    comparison_text,
    level_note,
    recommended_method,
)
from soak_dask.results.stats import pvalues
from soak_dask.stats.mean_tests import (
    bayesian_test,
    five_by_two_f,
    five_by_two_t,
    mcnemar_test,
    paired_test,
    right_wrong_counts,
)

from .test_eval_stats import SOAK, make_eval

NAN = math.nan
# Dietterich's 5×2cv differences: repeat i, fold j.
FIVE_BY_TWO = np.array([[1.0, 3.0], [2.0, 2.0], [0.0, 2.0], [1.0, 1.0], [3.0, 1.0]])


def _integral(f, low: float, high: float, n: int = 20000) -> float:
    """Simpson's rule on [low, high]."""
    x = np.linspace(low, high, n + 1)
    w = np.ones(n + 1)
    w[1:-1:2], w[2:-1:2] = 4, 2
    return float((high - low) / (3 * n) * np.sum(w * f(x)))


def t_pdf(df: float):
    c = math.gamma((df + 1) / 2) / (math.sqrt(df * math.pi) * math.gamma(df / 2))
    return lambda x: c * (1 + x**2 / df) ** (-(df + 1) / 2)


def t_cdf(x: float, df: float) -> float:
    """P(T <= x), T a Student t with `df` df, by integrating its density from 0."""
    half = _integral(t_pdf(df), 0.0, abs(x))
    return 0.5 + math.copysign(half, x)


def f_sf(x: float, d1: int, d2: int) -> float:
    """P(F > x) by integrating the F density from 0 to x."""
    c = (
        math.gamma((d1 + d2) / 2)
        / (math.gamma(d1 / 2) * math.gamma(d2 / 2))
        * (d1 / d2) ** (d1 / 2)
    )
    return 1 - _integral(
        lambda u: c * u ** (d1 / 2 - 1) * (1 + d1 * u / d2) ** (-(d1 + d2) / 2), 0, x
    )


# ---------------------------------------------------------------- the tests on fixed numbers


def test_paired_test_by_hand_and_scipy() -> None:
    d = np.array([1.0, 3.0, 0.5, 2.5, 2.0])
    r = paired_test(d)
    se = d.std(ddof=1) / math.sqrt(5)
    assert r.statistic == pytest.approx(d.mean() / se, rel=1e-12)
    assert r.p == pytest.approx(2 * (1 - t_cdf(d.mean() / se, 4)), rel=1e-7)
    assert r.p == pytest.approx(sps.ttest_1samp(d, 0).pvalue, rel=1e-12)
    q = sps.t.ppf(0.975, 4)
    assert t_cdf(q, 4) == pytest.approx(0.975, abs=1e-9)  # the quantile the interval uses
    assert (r.ci_low, r.ci_high) == pytest.approx((d.mean() - q * se, d.mean() + q * se))


def test_corrected_interval_widens_by_the_nadeau_bengio_factor() -> None:
    d = np.array([1.0, 3.0, 0.5, 2.5, 2.0])
    plain, fixed = paired_test(d), paired_test(d, 0.25)
    factor = math.sqrt((1 / 5 + 0.25) / (1 / 5))
    assert fixed.ci_high - fixed.ci_low == pytest.approx(factor * (plain.ci_high - plain.ci_low))
    assert fixed.statistic == pytest.approx(plain.statistic / factor)


def test_bayesian_probabilities_are_the_t_posterior_by_hand() -> None:
    d = np.array([1.0, 3.0, 0.5, 2.5, 2.0, -0.5])
    ratio, rope = 0.25, 0.5
    r = bayesian_test(d, ratio, rope)
    scale = d.std(ddof=1) * math.sqrt(1 / 6 + ratio)  # ρ/(1−ρ) = n_test/n_train
    left = t_cdf((-rope - d.mean()) / scale, 5)
    right = 1 - t_cdf((rope - d.mean()) / scale, 5)
    assert r.extra["p_left"] == pytest.approx(left, abs=1e-9)
    assert r.extra["p_right"] == pytest.approx(right, abs=1e-9)
    assert sum(r.extra.values()) == pytest.approx(1.0, abs=1e-12)
    assert r.extra["p_rope"] == pytest.approx(1 - left - right, abs=1e-9)
    assert math.isnan(r.p) and r.df == 5
    # Its 95 % interval is the corrected test's, and with no rope P(rope) is 0.
    assert (r.ci_low, r.ci_high) == pytest.approx(
        (paired_test(d, ratio).ci_low, paired_test(d, ratio).ci_high)
    )
    assert bayesian_test(d, ratio, 0.0).extra["p_rope"] == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="rope=-1"):
        bayesian_test(d, ratio, -1)


def test_five_by_two_t_is_dietterichs_formula() -> None:
    s2 = [(p1 - (p1 + p2) / 2) ** 2 + (p2 - (p1 + p2) / 2) ** 2 for p1, p2 in FIVE_BY_TWO]
    t = FIVE_BY_TWO[0, 0] / math.sqrt(sum(s2) / 5)  # = 1 / sqrt(6/5)
    r = five_by_two_t(FIVE_BY_TWO)
    assert sum(s2) == 6.0 and r.statistic == pytest.approx(t, rel=1e-12) and r.df == 5
    assert r.p == pytest.approx(2 * (1 - t_cdf(t, 5)), abs=1e-9)
    half = sps.t.ppf(0.975, 5) * math.sqrt(6 / 5)
    assert (r.ci_low, r.ci_high) == pytest.approx((1.6 - half, 1.6 + half))


def test_five_by_two_f_is_alpaydins_formula() -> None:
    f = float((FIVE_BY_TWO**2).sum()) / (2 * 6.0)  # 34 / 12
    r = five_by_two_f(FIVE_BY_TWO)
    assert r.statistic == pytest.approx(f, rel=1e-12) and r.df == 5
    assert r.p == pytest.approx(f_sf(f, 10, 5), abs=1e-7)
    with pytest.raises(ValueError, match=r"\(R, 2\) array"):
        five_by_two_f(FIVE_BY_TWO.reshape(2, 5))


def test_mcnemar_exact_and_chi2_by_hand() -> None:
    b, c, n = 2, 10, 50
    exact = 2 * sum(math.comb(12, k) for k in range(3)) / 2**12
    chi2 = (abs(b - c) - 1) ** 2 / (b + c)
    r, approx = mcnemar_test(b, c, n), mcnemar_test(b, c, n, exact=False)
    assert r.p == pytest.approx(exact, rel=1e-12) and r.statistic == pytest.approx(49 / 12)
    assert approx.p == pytest.approx(math.erfc(math.sqrt(chi2 / 2)), rel=1e-12)
    d, var = (c - b) / n, (b + c - (c - b) ** 2 / n) / n**2
    z = sps.norm.ppf(0.975)
    assert (r.ci_low, r.ci_high) == pytest.approx((d - z * math.sqrt(var), d + z * math.sqrt(var)))
    assert mcnemar_test(0, 0, 30).p == 1.0 and mcnemar_test(5, 5, 30).p == 1.0


def test_right_wrong_counts_are_the_discordant_cells() -> None:
    a = np.array([1, 1, 0, 0, 1], dtype=np.uint8)
    b = np.array([1, 0, 1, 0, 0], dtype=np.uint8)
    counts = right_wrong_counts([a, b])
    assert counts.tolist() == [[0, 2], [1, 0]]


# ---------------------------------------------------------------- compare on an evaluate result


def test_compare_paired_equals_scipy_ttest_rel() -> None:
    rng = np.random.default_rng(3)
    a = rng.normal(20, 3, size=(3, 5))
    b = a + rng.normal(1, 2, size=(3, 5))
    out = compare(make_eval({"a": a.tolist(), "b": b.tolist()}), "a", "b", "error", "paired")
    assert list(out.columns) == COMPARE_COLUMNS and len(out) == 1
    row = out.iloc[0]
    ref = sps.ttest_rel(a.ravel(), b.ravel())
    assert row["statistic"] == pytest.approx(ref.statistic, rel=1e-12)
    assert row["p"] == pytest.approx(ref.pvalue, rel=1e-12)
    assert (row["n"], row["df"], row["method"]) == (15, 14.0, "paired")
    assert row["mean_diff"] == pytest.approx((a - b).mean())
    assert row["sd_diff"] == pytest.approx((a - b).std(ddof=1))
    assert row["compare_mean"] == pytest.approx(a.mean()) and row["reference_sd"] == pytest.approx(
        b.std(ddof=1)
    )
    assert row["test_train_ratio"] == pytest.approx(0.25) and row["reason"] == ""
    assert "rejected 51.0%" in row["note"]  # the plain test on repeated K-fold is far too liberal


def test_compare_corrected_is_the_nadeau_bengio_formula_and_the_default() -> None:
    # Five folds × two repeats; a - b is 1 or 3: mean 2, variance 10/9; n_test/n_train = 20/80.
    a = [[11.0, 13.0, 11.0, 13.0, 11.0], [13.0, 11.0, 13.0, 11.0, 13.0]]
    b = [[10.0] * 5, [10.0] * 5]
    ds = make_eval({"a": a, "b": b})  # outer="repeated_cv"
    out = compare(ds, "a", "b").iloc[0]
    t = 2 / math.sqrt((1 / 10 + 20 / 80) * 10 / 9)
    assert out["method"] == "corrected" and out["note"] == level_note("repeated_cv", "corrected")
    assert out["statistic"] == pytest.approx(t, rel=1e-12)
    assert out["p"] == pytest.approx(2 * (1 - t_cdf(t, 9)), abs=1e-9)
    half = sps.t.ppf(0.975, 9) * math.sqrt((1 / 10 + 0.25) * 10 / 9)
    assert (out["ci_low"], out["ci_high"]) == pytest.approx((2 - half, 2 + half))
    pd.testing.assert_frame_equal(compare(ds, "a", "b", corrected=True), compare(ds, "a", "b"))
    plain = compare(ds, "a", "b", corrected=False).iloc[0]
    assert plain["statistic"] == pytest.approx(2 / math.sqrt(1 / 10 * 10 / 9))
    assert out["p"] > plain["p"]


def test_corrected_compare_uses_the_mean_ratio_of_the_paired_cells() -> None:
    ds = make_eval({"a": [[1.0, 4.0, 2.0, NAN]], "b": [[0.0, 1.0, 1.5, 3.0]]})
    ds["n_train"].loc[{"fold": [1, 2, 3, 4]}] = [60, 80, 100, 1]  # fold 4 is not paired
    out = compare(ds, "a", "b", method="corrected").iloc[0]
    ratio = (20 / 60 + 20 / 80 + 20 / 100) / 3
    d = np.array([1.0, 3.0, 0.5])
    assert out["test_train_ratio"] == pytest.approx(ratio)
    assert out["statistic"] == pytest.approx(d.mean() / math.sqrt((1 / 3 + ratio) * d.var(ddof=1)))


def test_compare_bayesian_names_the_better_learner_by_the_measure() -> None:
    ds = make_eval({"a": [[1.0, 2.0, 4.0, 2.0]], "b": [[2.0, 3.5, 5.0, 4.0]]})
    ds["auc"] = 1 - ds["error"] / 10
    ds.attrs["measures"] = ["error", "auc"]
    out = compare(ds, "a", "b", method="bayesian").set_index("measure")
    assert out.loc["error", "rope"] == 1.0 and out.loc["auc", "rope"] == 0.01
    d = np.array([-1.0, -1.5, -1.0, -2.0])
    scale = d.std(ddof=1) * math.sqrt(1 / 4 + 0.25)
    # Lower error is better: a is better where a − b < −rope.
    assert out.loc["error", "p_compare_better"] == pytest.approx(
        t_cdf((-1 - d.mean()) / scale, 3), abs=1e-9
    )
    # Higher AUC is better: a − b of AUC is −(a − b of error)/10, so a is better there too.
    assert out.loc["auc", "p_compare_better"] > 0.9 and out.loc["error", "p_compare_better"] > 0.5
    for m in ("error", "auc"):
        total = out.loc[m, ["p_compare_better", "p_equivalent", "p_reference_better"]].sum()
        assert total == pytest.approx(1.0) and math.isnan(out.loc[m, "p"])
    swapped = compare(ds, "b", "a", method="bayesian", rope=0.5).set_index("measure")
    assert swapped.loc["error", "rope"] == 0.5
    assert swapped.loc["error", "p_reference_better"] > swapped.loc["error", "p_compare_better"]


def test_compare_five_by_two_on_its_design() -> None:
    b = np.zeros((5, 2))
    ds = make_eval({"a": FIVE_BY_TWO.tolist(), "b": b.tolist()}, n_train=50, n_test=50)
    ds.attrs["outer"] = "5x2cv"
    rows = {m: compare(ds, "a", "b", "error", m).iloc[0] for m in ("5x2cv", "5x2cv_f")}
    assert rows["5x2cv"]["statistic"] == pytest.approx(five_by_two_t(FIVE_BY_TWO).statistic)
    assert rows["5x2cv_f"]["p"] == pytest.approx(five_by_two_f(FIVE_BY_TWO).p)
    assert rows["5x2cv"]["n"] == 10 and rows["5x2cv"]["mean_diff"] == pytest.approx(1.6)
    default = compare(ds, "a", "b", "error").iloc[0]
    assert default["method"] == recommended_method("5x2cv")
    with pytest.raises(ValueError, match="needs 2 folds per repeat"):
        compare(
            make_eval({"a": [[1.0, 2.0, 3.0]], "b": [[0.0, 0.0, 1.0]]}), "a", "b", None, "5x2cv"
        )


def test_compare_mcnemar_on_the_test_split_counts() -> None:
    ds = make_eval({"a": [[10.0, 20.0, 15.0]], "b": [[12.0, 18.0, 20.0]]})
    ds = ds.assign_coords(versus=["a", "b"], interval=["estimate", "low", "high"])
    ds["test_right_wrong"] = (("learner", "versus"), [[0, 2], [10, 0]])
    ds["n_test_split"] = ("learner", [50, 50])
    # a errs on 10 rows b gets right and 2 the other way: error(a) − error(b) = 8/50.
    ds["test_error"] = (("learner", "interval"), [[30.0, 20, 40], [14.0, 6, 24]])
    out = compare(ds, "a", "b", "error")
    assert list(out["method"]) == ["corrected", "mcnemar"]
    row = out.iloc[1]
    ref = mcnemar_test(2, 10, 50)  # a right & b wrong: 2; a wrong & b right: 10
    assert row["mean_diff"] == pytest.approx(16.0) == row["compare_mean"] - row["reference_mean"]
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((100 * ref.ci_low, 100 * ref.ci_high))
    assert row["p"] == pytest.approx(ref.p) and row["n"] == 50
    assert row["null"] == "these two fitted models, on new rows like the test split's"
    assert (row["level"], row["extra_fits"]) == (MEASURED["test_split", "mcnemar"][0], 0)
    only = compare(ds, "a", "b", ["error"], "mcnemar")
    assert list(only["method"]) == ["mcnemar"]
    with pytest.raises(ValueError, match="no test_right_wrong counts"):
        compare(make_eval({"a": [[1.0, 2.0]], "b": [[2.0, 2.0]]}), "a", "b", None, "mcnemar")


def test_compare_rows_per_measure_and_swapping_negates() -> None:
    ds = make_eval({"a": [[1.0, 2.0, 4.0]], "b": [[2.0, 2.5, 3.0]]})
    ds["auc"] = 1 - ds["error"] / 10
    ds.attrs["measures"] = ["error", "auc"]
    ab, ba = compare(ds, "a", "b"), compare(ds, "b", "a")
    assert ab["measure"].tolist() == ["error", "auc"]
    assert np.allclose(ab["statistic"], -ba["statistic"]) and np.allclose(ab["p"], ba["p"])
    assert np.allclose(ab["ci_low"], -ba["ci_high"])


def test_compare_undefined_cases_say_why() -> None:
    few = compare(make_eval({"a": [[1.0, NAN]], "b": [[2.0, 3.0]]}), "a", "b").iloc[0]
    assert few["n"] == 1 and math.isnan(few["statistic"]) and "fewer than 2" in few["reason"]
    same = compare(make_eval({"a": [[1.0, 2.0]], "b": [[0.0, 1.0]]}), "a", "b").iloc[0]
    assert math.isnan(same["p"]) and math.isnan(same["ci_low"]) and "identical" in same["reason"]
    assert same["mean_diff"] == 1.0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"a": "svm", "b": "lr"}, r"a='svm' is not a learner of the results; available: 'rf'"),
        ({"a": "rf", "b": "knn"}, r"b='knn' is not a learner"),
        ({"a": "rf", "b": "rf"}, "compare two different learners"),
        ({"a": "rf", "b": "lr", "measure": "auc"}, "measure 'auc' is not in the results"),
        ({"a": "rf", "b": "lr", "method": "wilcoxon"}, "method='wilcoxon' is not a test"),
        ({"a": "rf", "b": "lr", "method": "paired", "corrected": True}, "not both"),
    ],
)
def test_compare_bad_input(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        compare(make_eval({"rf": [[1.0, 2.0]], "lr": [[2.0, 2.0]]}), **kwargs)


def test_compare_needs_the_design_or_a_method() -> None:
    ds = make_eval({"rf": [[1.0, 2.0]], "lr": [[2.0, 4.0]]}, n_train=None)
    del ds.attrs["outer"]
    with pytest.raises(ValueError, match=r"do not say their design .* pass method="):
        compare(ds, "rf", "lr")
    assert math.isnan(compare(ds, "rf", "lr", method="paired").loc[0, "test_train_ratio"])
    with pytest.raises(ValueError, match="corrected=True needs .* lack n_train"):
        compare(ds, "rf", "lr", corrected=True)


# ---------------------------------------------------------------- the recommended tests


def test_every_recommended_test_held_its_level_or_says_it_did_not() -> None:
    designs = {d for d, _ in MEASURED}
    for design in designs:
        method = recommended_method(design)
        level = MEASURED[(design, method)][0]
        note = level_note(design, method)
        assert (level <= LEVEL_LIMIT) == (note == ""), (design, method, note)
        if note:  # none held, or one held that needs fits the result lacks: it names them
            assert "no test held its level" in note or "inference='con_z'" in note
    assert recommended_method("loo") == "corrected" and "not measured" in level_note(
        "loo", "corrected"
    )
    for design in ("repeated_cv", "subsampling", "bootstrap"):  # the corrected test fails
        assert "method='con_z' holds it" in level_note(design, "corrected")
    # With the halves' fits, the default holds its level on every simulated design (issue 40).
    for design in designs:
        held = MEASURED[(design, recommended_method(design, ["con_z"]))][0]
        assert held <= LEVEL_LIMIT, design


def test_comparison_text_lists_every_pair() -> None:
    ds = make_eval({"a": [[1.0, 2.0, 4.0]], "b": [[2.0, 2.5, 3.0]], "c": [[1.0, 1.0, 3.0]]})
    text = comparison_text(ds)
    assert "test recommended for outer='repeated_cv'" in text.splitlines()[0]
    rows = [line.split()[:3] for line in text.splitlines()[2:5]]
    assert rows == [["a", "b", "corrected"], ["a", "c", "corrected"], ["b", "c", "corrected"]]
    assert comparison_text(ds.sel(learner=["a"])) == ""


# ---------------------------------------------------------------- pvalues(method=...)


def test_pvalues_method_names_the_test_in_statistic_and_p() -> None:
    plain = pvalues(SOAK, compare="other")
    fixed = pvalues(SOAK, compare="other", method="corrected")
    bayes = pvalues(SOAK, compare="other", method="bayesian")
    both = pvalues(SOAK, compare="other", corrected=True)
    pd.testing.assert_frame_equal(plain, pvalues(SOAK, compare="other", method="paired"))
    assert set(plain["method"]) == {"paired"} and set(fixed["method"]) == {"corrected"}
    # corrected=True keeps the paper's test in p, the corrected one beside it; method=
    # "corrected" puts the corrected test in statistic and p.
    pd.testing.assert_series_equal(both["p"], plain["p"])
    np.testing.assert_allclose(fixed["p"], both["p_corrected"])
    np.testing.assert_allclose(fixed["statistic"], both["t_corrected"])
    row = fixed.iloc[0]
    d = (
        (SOAK["error"].sel(train_type="other") - SOAK["error"].sel(train_type="same"))
        .isel(learner=0, test_subset=0)
        .values
    )
    ref = paired_test(d[np.isfinite(d)], row["test_train_ratio"])
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((ref.ci_low, ref.ci_high))
    unadjusted = paired_test(d[np.isfinite(d)])
    assert plain.loc[0, ["ci_low", "ci_high"]].tolist() == pytest.approx(
        [unadjusted.ci_low, unadjusted.ci_high]
    )
    probs = bayes[["p_compare_better", "p_equivalent", "p_reference_better"]].sum(axis=1)
    assert np.allclose(probs[bayes["reason"] == ""], 1.0)
    assert (bayes["rope"].dropna() == 1.0).all() and bayes["p"].isna().all()
    assert (
        pvalues(SOAK, compare="other", method="corrected", adjust="holm")["p_adjusted"]
        .notna()
        .any()
    )
    with pytest.raises(ValueError, match="the Bayesian test gives none"):
        pvalues(SOAK, method="bayesian", adjust="holm")
    with pytest.raises(ValueError, match="method='5x2cv' is not a test of pvalues"):
        pvalues(SOAK, method="5x2cv")


# ---------------------------------------------------------------- end to end


@pytest.mark.slow
def test_evaluate_5x2cv_with_a_test_split_end_to_end() -> None:
    from sklearn.linear_model import LogisticRegression
    from sklearn.tree import DecisionTreeClassifier

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x0": rng.normal(size=160), "x1": rng.normal(size=160)})
    df["y"] = np.where(df["x0"] + rng.normal(scale=0.7, size=160) > 0, "a", "b")
    table = sd.load_table(df, label="y", features=["x0", "x1"])
    learners = {
        "tree": DecisionTreeClassifier(max_depth=1, random_state=0),
        "lr": LogisticRegression(),
    }
    ds = sd.evaluate(
        table, learners, outer="5x2cv", test_split=0.25, options=sd.RunOptions(progress=False)
    )
    assert dict(ds.sizes)["repeat"] == 5 and dict(ds.sizes)["fold"] == 2
    # Each repeat's two folds split the 120 training rows.
    assert (ds["n_test"].sum("fold") == 120).all()
    counts = ds["test_right_wrong"].transpose("learner", "versus").values
    assert np.diag(counts).tolist() == [0, 0]
    out = ds.soak.compare("tree", "lr", "error").set_index("method")
    assert list(out.index) == [recommended_method("5x2cv"), "mcnemar"]
    split = out.loc["mcnemar"]
    # The discordant counts give the difference of the test split's errors exactly.
    assert split["mean_diff"] == pytest.approx(
        split["compare_mean"] - split["reference_mean"], abs=1e-9
    )
    assert split["n"] == 40 and split["ci_low"] <= split["mean_diff"] <= split["ci_high"]
    assert compare(ds, "tree", "lr", "error", "5x2cv").loc[0, "df"] == 5


@given(
    st.lists(st.floats(-50, 50, allow_nan=False), min_size=3, max_size=30),
    st.floats(0, 1),
    st.floats(0, 5),
)
def test_property_intervals_and_probabilities(values: list[float], ratio: float, rope: float):
    d = np.array(values)
    if d.std(ddof=1) < 1e-6:  # constant differences: compare reports them undefined
        return
    plain, fixed, bayes = paired_test(d), paired_test(d, ratio), bayesian_test(d, ratio, rope)
    assert fixed.ci_low <= d.mean() <= fixed.ci_high
    assert fixed.ci_high - fixed.ci_low >= plain.ci_high - plain.ci_low - 1e-9
    assert fixed.p >= plain.p - 1e-12  # the correction never makes a test more confident
    assert sum(bayes.extra.values()) == pytest.approx(1.0)
    assert (bayes.ci_low, bayes.ci_high) == pytest.approx((fixed.ci_low, fixed.ci_high))
    flipped = paired_test(-d, ratio)
    assert (flipped.ci_low, flipped.ci_high) == pytest.approx((-fixed.ci_high, -fixed.ci_low))


def test_every_row_names_its_null_its_measured_level_and_its_extra_fits() -> None:
    ds = make_eval({"a": [[10.0, 20.0, 15.0]], "b": [[12.0, 18.0, 20.0]]})
    ds["n_train"] = (("learner", "repeat", "fold"), [[[90, 92, 94]], [[90, 92, 94]]])
    for outer, method in (("cv", "corrected"), ("repeated_cv", "paired"), ("nested", "paired")):
        ds.attrs["outer"] = outer
        row = compare(ds, "a", "b", "error", method).iloc[0]
        assert row["null"] == "the learners, each trained anew on a sample of ~92 rows"
        level = MEASURED.get((outer, method), (math.nan,))[0]
        assert row["level"] == pytest.approx(level, nan_ok=True) and row["extra_fits"] == 0
    assert set(ABOUT) == {"null", "level", "extra_fits"} <= set(COMPARE_COLUMNS)
    unsized = compare(ds.drop_vars("n_train"), "a", "b", "error", "paired").iloc[0]
    assert unsized["null"].endswith("a sample of the train sets' size")
