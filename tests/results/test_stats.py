"""Tests of soak_dask.results.stats: paired t-tests and summaries of SOAK results."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from soak_dask.results.stats import (
    PVALUE_COLUMNS,
    RESULT_DIMS,
    SUMMARY_COLUMNS,
    no_tests_reason,
    pvalues,
    pvalues_text,
    results_text,
    summary,
    validate_results,
)

from ..conftest import shared_file


def make_ds(
    columns: dict[str, object],
    measure: str = "error",
    learners: tuple[str, ...] = ("lasso",),
    subsets: tuple[str, ...] = ("A",),
) -> xr.Dataset:
    """Results Dataset from per-train-type values of shape (K,) or (learners, subsets, K)."""
    arrays = [
        np.asarray(v, dtype=float).reshape(len(learners), len(subsets), -1)
        for v in columns.values()
    ]
    data = np.stack(arrays, axis=-1)
    return xr.Dataset(
        {measure: (RESULT_DIMS, data)},
        coords={
            "learner": list(learners),
            "test_subset": list(subsets),
            "fold": np.arange(1, data.shape[2] + 1, dtype=np.int64),
            "train_type": list(columns),
        },
        attrs={"measures": [measure]},
    )


def quiet_pvalues(ds: xr.Dataset, **kwargs: object) -> pd.DataFrame:
    """pvalues() with every warning turned into an error: none may leak to the user."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return pvalues(ds, **kwargs)


# R's sleep data (Student 1908). R 4.x prints, for t.test(extra ~ group, sleep, paired = TRUE):
# t = -4.0621, df = 9, p-value = 0.002833, mean difference -1.58; and with paired = FALSE
# (Welch): t = -1.8608, df = 17.776, p-value = 0.07939.
SLEEP_1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0]
SLEEP_2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4]


# ---------------------------------------------------------------- the paper's statistics


def _paper_tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    scores_csv = shared_file("paper", "soak_paper_fold_scores.csv")
    ttests_csv = shared_file("paper", "soak_paper_paired_ttests.csv")
    return pd.read_csv(scores_csv), pd.read_csv(ttests_csv)


def _paper_pvalues(scores: pd.DataFrame) -> pd.DataFrame:
    """pvalues() of the paper's cv_glmnet fold errors, one Dataset per data set."""
    glmnet = scores[scores["algorithm"] == "cv_glmnet"]
    frames = []
    for data_name, one in glmnet.groupby("data.name", sort=False):
        tidy = pd.DataFrame(
            {
                "learner": one["algorithm"],
                # Some subset names look numeric (NSCH_autism: 2019, 2020): keep them as str.
                "test_subset": one["test.group"].astype(str),
                "fold": one["test.fold"].astype("int64"),
                "train_type": one["train.groups"],
                "error": one["percent.error"],
            }
        )
        ds = tidy.set_index(["learner", "test_subset", "fold", "train_type"]).to_xarray()
        ds.attrs["measures"] = ["error"]
        frames.append(quiet_pvalues(ds).assign(data=data_name))
    out = pd.concat(frames, ignore_index=True)
    out["test_subset"] = out["test_subset"].astype(str)
    return out


def test_paper_paired_ttests_reproduced():
    scores, ref = _paper_tables()
    got = _paper_pvalues(scores)
    ref = ref.assign(test_subset=ref["test_subset"].astype(str), data=ref["data"].astype(str))
    keys = ["data", "test_subset", "compare"]
    assert not got.duplicated(keys).any()
    joined = ref.merge(got, on=keys, how="left", suffixes=("_ref", ""), validate="one_to_one")
    unmatched = joined[joined["n"].isna()]
    assert unmatched.empty, f"reference rows with no pvalues() row:\n{unmatched[keys]}"
    assert len(joined) == len(ref) == 82

    assert (joined["n"].astype(int) == joined["N"]).all()
    for col in ["same_mean", "same_sd", "compare_mean", "compare_sd", "mean_diff", "p_paired"]:
        err = (joined[col] - joined[f"{col}_ref"]).abs()
        worst = joined.loc[err.idxmax(), keys].tolist()
        assert err.max() < 1e-9, f"{col}: max abs error {err.max():.3g} at {worst}"
    assert (joined["reason"] == "").all()
    assert (joined["df"] == joined["N"] - 1).all()


def test_paper_missing_folds_are_dropped_pairwise():
    # In the published scores a few splits are absent (EMNIST train/same, and MNIST_EMNIST*
    # "all" for one fold): those comparisons use N = 9 pairs, and the "same" mean reported
    # beside "all" is over those 9 folds, not the 10 that "other" is paired with.
    scores, ref = _paper_tables()
    got = _paper_pvalues(scores).set_index(["data", "test_subset", "compare"])
    nine = ref[ref["N"] == 9]
    assert len(nine) == 5
    row_all = got.loc[("MNIST_EMNIST", "EMNIST", "all")]
    row_other = got.loc[("MNIST_EMNIST", "EMNIST", "other")]
    assert (row_all["n"], row_other["n"]) == (9, 10)
    assert row_all["same_mean"] != pytest.approx(row_other["same_mean"], abs=1e-6)
    # Welch drops missing folds per side (R's t.test(paired = FALSE)), so it sees all 10
    # "same" folds and the 9 "all" folds.
    one = scores[
        (scores["algorithm"] == "cv_glmnet")
        & (scores["data.name"] == "MNIST_EMNIST")
        & (scores["test.group"].astype(str) == "EMNIST")
    ]
    same = one.loc[one["train.groups"] == "same", "percent.error"]
    comp = one.loc[one["train.groups"] == "all", "percent.error"]
    assert (len(same), len(comp)) == (10, 9)
    expected = sps.ttest_ind(comp, same, equal_var=False).pvalue
    assert row_all["p_welch"] == pytest.approx(expected, rel=1e-10)


def test_paper_pvalues_agree_with_scipy_ttest_rel():
    # A second, independent computation of every paper p-value from the raw scores.
    scores, _ = _paper_tables()
    got = _paper_pvalues(scores).set_index(["data", "test_subset", "compare"])
    glmnet = scores[scores["algorithm"] == "cv_glmnet"].assign(
        sub=lambda d: d["test.group"].astype(str)
    )
    wide = glmnet.pivot_table(
        index=["data.name", "sub", "test.fold"], columns="train.groups", values="percent.error"
    )
    for (data_name, sub), block in wide.groupby(level=[0, 1]):
        for compare in ["other", "all"]:
            pair = block[["same", compare]].dropna()
            expected = sps.ttest_rel(pair[compare], pair["same"])
            row = got.loc[(data_name, sub, compare)]
            assert row["t"] == pytest.approx(expected.statistic, rel=1e-9)
            assert row["p_paired"] == pytest.approx(expected.pvalue, rel=1e-9, abs=1e-300)


# ---------------------------------------------------------------- known paired examples


def test_known_paired_example_closed_form():
    same = np.array([10.0, 12.0, 11.0, 14.0, 9.0])
    other = np.array([15.0, 16.0, 18.0, 15.5, 13.0])
    res = quiet_pvalues(make_ds({"same": same, "other": other}), compare="other")
    assert list(res.columns) == PVALUE_COLUMNS
    assert len(res) == 1
    row = res.iloc[0]

    # Closed forms, written out independently of the module.
    d = other - same
    n = d.size
    mean_d = d.sum() / n
    sd_d = math.sqrt(((d - mean_d) ** 2).sum() / (n - 1))
    t = mean_d / (sd_d / math.sqrt(n))
    p = 2 * sps.t.sf(abs(t), n - 1)
    assert row["n"] == n == 5
    assert row["df"] == n - 1
    assert row["mean_diff"] == pytest.approx(mean_d, rel=1e-12)
    assert row["mean_diff"] == pytest.approx(row["compare_mean"] - row["same_mean"], rel=1e-12)
    assert row["t"] == pytest.approx(t, rel=1e-12)
    assert row["p_paired"] == pytest.approx(p, rel=1e-10)
    assert row["same_mean"] == pytest.approx(11.2)
    assert row["same_sd"] == pytest.approx(math.sqrt(((same - 11.2) ** 2).sum() / 4))
    assert row["compare_mean"] == pytest.approx(15.5)
    assert row["compare_sd"] == pytest.approx(math.sqrt(((other - 15.5) ** 2).sum() / 4))

    # Welch, closed form: unequal variances, Welch-Satterthwaite df.
    vx, vy = same.var(ddof=1) / n, other.var(ddof=1) / n
    t_w = (other.mean() - same.mean()) / math.sqrt(vx + vy)
    df_w = (vx + vy) ** 2 / (vx**2 / (n - 1) + vy**2 / (n - 1))
    assert row["p_welch"] == pytest.approx(2 * sps.t.sf(abs(t_w), df_w), rel=1e-10)
    assert row["reason"] == ""


def test_r_sleep_data_matches_r_t_test():
    ds = make_ds({"same": SLEEP_2, "other": SLEEP_1, "all": SLEEP_2})
    row = quiet_pvalues(ds, compare="other").iloc[0]
    assert row["mean_diff"] == pytest.approx(-1.58, abs=1e-12)
    assert row["t"] == pytest.approx(-4.0621, abs=5e-5)
    assert row["df"] == 9
    assert row["p_paired"] == pytest.approx(0.002833, abs=5e-7)
    assert row["p_welch"] == pytest.approx(0.07939, abs=5e-6)


def test_row_order_follows_coordinates_measures_and_compare():
    # Coordinates deliberately not sorted: the output must follow them, not sort them.
    rng = np.random.default_rng(1)
    shape = (2, 3, 4)
    ds = make_ds(
        {"all": rng.random(shape), "same": rng.random(shape), "other": rng.random(shape)},
        learners=("zeta", "alpha"),
        subsets=("S", "NE", "NW"),
    )
    ds["auc"] = ds["error"] / 2
    res = quiet_pvalues(ds, measures=["auc", "error"], compare=["all", "other"])
    assert len(res) == 2 * 3 * 2 * 2
    expected = [
        (lrn, sub, m, c)
        for lrn in ["zeta", "alpha"]
        for sub in ["S", "NE", "NW"]
        for m in ["auc", "error"]
        for c in ["all", "other"]
    ]
    got = list(res[["learner", "test_subset", "measure", "compare"]].itertuples(index=False))
    assert [tuple(r) for r in got] == expected
    # Each row tests its own cell: check one against scipy.
    cell = ds["error"].sel(learner="alpha", test_subset="NW")
    expected_t = sps.ttest_rel(cell.sel(train_type="other"), cell.sel(train_type="same"))
    row = res.set_index(["learner", "test_subset", "measure", "compare"]).loc[
        ("alpha", "NW", "error", "other")
    ]
    assert row["t"] == pytest.approx(expected_t.statistic, rel=1e-10)


def test_numeric_looking_subset_names_from_tidy_frame():
    tidy = pd.DataFrame(
        {
            "learner": "glm",
            "test_subset": ["2019"] * 6 + ["2020"] * 6,
            "fold": [1, 2, 3] * 4,
            "train_type": (["same"] * 3 + ["all"] * 3) * 2,
            "error": [1.0, 2.0, 4.0, 2.0, 2.5, 6.0, 3.0, 3.0, 3.5, 1.0, 1.5, 0.5],
        }
    )
    ds = tidy.set_index(["learner", "test_subset", "fold", "train_type"]).to_xarray()
    res = quiet_pvalues(ds, compare="all")
    assert res["test_subset"].astype(str).tolist() == ["2019", "2020"]
    assert res["mean_diff"].tolist() == pytest.approx([3.5 / 3, -6.5 / 3])


# ---------------------------------------------------------------- impossible comparisons


def test_one_subset_plain_kfold():
    # S = 1: no "other" train set, and "all" is the same train set as "same".
    same = [10.0, 20.0, 30.0]
    res = quiet_pvalues(make_ds({"same": same, "all": same}))
    other, all_ = res.iloc[0], res.iloc[1]
    assert other["compare"] == "other"
    assert other["reason"] == (
        "train_type 'other' is not in the results (one subset: plain K-fold CV)"
    )
    assert other["n"] == 0
    assert other[["same_mean", "mean_diff", "t", "df", "p_paired", "p_welch"]].isna().all()

    assert all_["compare"] == "all"
    assert all_["n"] == 3
    assert all_["mean_diff"] == 0
    assert all_["same_mean"] == all_["compare_mean"] == 20
    assert all_["df"] == 2
    assert math.isnan(all_["t"]) and math.isnan(all_["p_paired"])
    assert "identical" in all_["reason"] and "SD is 0" in all_["reason"]
    assert "mean_diff is still defined" in all_["reason"]
    assert "(one subset: 'all' is the same train set as 'same')" in all_["reason"]
    # Welch is defined here: both sides vary, their means are equal.
    assert all_["p_welch"] == pytest.approx(1.0)


def test_other_absent_with_several_subsets_has_no_one_subset_hint():
    ds = make_ds({"same": [[1.0, 2.0], [3.0, 4.0]], "all": [[2.0, 2.5], [1.0, 5.0]]},
                 subsets=("A", "B"))  # fmt: skip
    res = quiet_pvalues(ds, compare="other")
    assert res["reason"].tolist() == ["train_type 'other' is not in the results"] * 2


def test_same_absent():
    res = quiet_pvalues(make_ds({"other": [1.0, 2.0, 4.0], "all": [1.0, 3.0, 2.0]}))
    assert res["reason"].tolist() == ["train_type 'same' is not in the results"] * 2
    assert res[["n"]].eq(0).all().all()
    assert res[["mean_diff", "t", "p_paired", "p_welch"]].isna().all().all()


def test_same_and_compare_absent():
    res = quiet_pvalues(make_ds({"all": [1.0, 3.0, 2.0]}, subsets=("A",)), compare="other")
    assert res.loc[0, "reason"] == (
        "train_type 'same' and 'other' are not in the results (one subset: plain K-fold CV)"
    )


def test_constant_nonzero_difference():
    same = np.array([10.0, 12.0, 11.0, 15.0])
    res = quiet_pvalues(make_ds({"same": same, "other": same + 2.5}), compare="other")
    row = res.iloc[0]
    assert row["mean_diff"] == 2.5
    assert row["n"] == 4 and row["df"] == 3
    assert math.isnan(row["t"]) and math.isnan(row["p_paired"])
    assert "all 4 paired differences are identical (other - same = 2.5" in row["reason"]
    assert "one subset" not in row["reason"]


def test_differences_equal_up_to_rounding_are_constant_like_r():
    # 0.7 + 0.3 != 1.0 in floating point: the differences vary in the last bits. R's t.test
    # stops ("data are essentially constant"); we must not report t ~ 1e15 and p = 0.
    same = np.array([0.1, 0.2, 0.7, 1.3, 2.9])
    other = same + 0.3
    assert np.ptp(other - same) > 0  # the case is real: the differences are not identical
    row = quiet_pvalues(make_ds({"same": same, "other": other}), compare="other").iloc[0]
    assert math.isnan(row["t"]) and math.isnan(row["p_paired"])
    assert "identical" in row["reason"]
    assert row["mean_diff"] == pytest.approx(0.3)


@pytest.mark.parametrize(
    ("same", "other", "n"),
    [
        ([1.0, np.nan, np.nan], [2.0, 3.0, np.nan], 1),
        ([np.nan, np.nan, np.nan], [2.0, 3.0, 4.0], 0),
        ([1.0, 2.0, np.nan], [np.nan, np.nan, 5.0], 0),
    ],
)
def test_fewer_than_two_paired_folds(same, other, n):
    row = quiet_pvalues(make_ds({"same": same, "other": other}), compare="other").iloc[0]
    assert row["n"] == n
    assert row["reason"].startswith(f"fewer than 2 paired folds (n={n})")
    assert math.isnan(row["t"]) and math.isnan(row["df"]) and math.isnan(row["p_paired"])
    assert math.isnan(row["same_sd"]) and math.isnan(row["compare_sd"])
    if n == 1:
        assert row["mean_diff"] == 1.0
        assert row["same_mean"] == 1.0 and row["compare_mean"] == 2.0
    else:
        assert math.isnan(row["mean_diff"])


def test_welch_uses_each_sides_finite_folds():
    # Like R's t.test(paired = FALSE): NA dropped per side, not pairwise.
    same = np.array([1.0, 2.0, 4.0, 3.0, np.nan])
    other = np.array([np.nan, 5.0, 5.5, 7.0, 6.0])
    row = quiet_pvalues(make_ds({"same": same, "other": other}), compare="other").iloc[0]
    assert row["n"] == 3
    assert row["same_mean"] == pytest.approx(3.0)  # folds 2-4 only
    expected_paired = sps.ttest_rel(other[1:4], same[1:4]).pvalue
    expected_welch = sps.ttest_ind(other[1:], same[:4], equal_var=False).pvalue
    assert row["p_paired"] == pytest.approx(expected_paired, rel=1e-10)
    assert row["p_welch"] == pytest.approx(expected_welch, rel=1e-10)
    assert row["reason"] == ""


def test_welch_undefined_is_explained():
    row = quiet_pvalues(
        make_ds({"same": [1.0, 1.0, 1.0], "other": [2.0, 2.0, 2.0]}), compare="other"
    ).iloc[0]
    assert math.isnan(row["p_welch"])
    assert "Welch test undefined: both train types are constant" in row["reason"]


# ---------------------------------------------------------------- summary


def test_summary_values():
    rng = np.random.default_rng(7)
    values = {tt: rng.normal(20, 3, size=(2, 2, 5)) for tt in ["same", "other", "all"]}
    values["other"][1, 0, 2] = np.nan  # one unscored split
    values["all"][0, 1, :4] = np.nan  # only one finite fold
    ds = make_ds(values, learners=("l1", "l2"), subsets=("A", "B"))
    ds["fit_seconds"] = ds["error"] * 0 + 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = summary(ds)
    assert list(res.columns) == SUMMARY_COLUMNS
    assert set(res["measure"]) == {"error"}  # timings are not measures
    assert len(res) == 2 * 2 * 3
    assert res[["learner", "test_subset", "train_type"]].iloc[:3].values.tolist() == [
        ["l1", "A", "same"],
        ["l1", "A", "other"],
        ["l1", "A", "all"],
    ]
    idx = res.set_index(["learner", "test_subset", "train_type", "measure"])
    for (i, lrn), (j, sub), tt in [
        ((0, "l1"), (0, "A"), "same"),
        ((1, "l2"), (0, "A"), "other"),
        ((0, "l1"), (1, "B"), "all"),
    ]:
        v = values[tt][i, j]
        v = v[~np.isnan(v)]
        row = idx.loc[(lrn, sub, tt, "error")]
        assert row["n"] == v.size
        assert row["mean"] == pytest.approx(v.sum() / v.size, rel=1e-12)
        if v.size > 1:
            sd = math.sqrt(((v - v.mean()) ** 2).sum() / (v.size - 1))
            assert row["sd"] == pytest.approx(sd, rel=1e-12)
        else:
            assert math.isnan(row["sd"])
    assert idx.loc[("l2", "A", "other", "error"), "n"] == 4
    assert idx.loc[("l1", "B", "all", "error"), "n"] == 1


def test_summary_matches_pvalues_means():
    rng = np.random.default_rng(3)
    ds = make_ds({"same": rng.random(6), "other": rng.random(6)})
    s = summary(ds).set_index("train_type")
    p = pvalues(ds, compare="other").iloc[0]
    assert s.loc["same", "mean"] == pytest.approx(p["same_mean"])
    assert s.loc["other", "sd"] == pytest.approx(p["compare_sd"])


# ---------------------------------------------------------------- validation


def test_missing_measure_error_names_it_and_the_available_ones():
    ds = make_ds({"same": [1.0, 2.0], "other": [2.0, 3.0]})
    ds["accuracy"] = 100 - ds["error"]
    ds.attrs["measures"] = ["error", "accuracy"]
    msg = "measure 'auc' is not in the results; available: error, accuracy"
    with pytest.raises(ValueError, match=msg):
        pvalues(ds, measures=["error", "auc"])
    with pytest.raises(ValueError, match=msg):
        summary(ds, measures="auc")


def test_missing_dims_error():
    ds = make_ds({"same": [1.0, 2.0]}).isel(train_type=0, drop=True)
    with pytest.raises(ValueError, match=r"missing dimension\(s\) 'train_type'"):
        pvalues(ds)
    with pytest.raises(TypeError, match="xarray.Dataset"):
        summary(ds["error"])  # type: ignore[arg-type]


def test_extra_dim_error_suggests_selecting():
    ds = make_ds({"same": [1.0, 2.0], "other": [1.5, 2.0]})
    ds = xr.concat([ds, ds], dim=pd.Index([100, 200], name="size"))
    with pytest.raises(ValueError, match=r"ds\.sel\(size=\.\.\.\)"):
        pvalues(ds)


@pytest.mark.parametrize(
    ("compare", "match"), [("same", "must not contain 'same'"), ("othr", "not a train type")]
)
def test_bad_compare(compare, match):
    with pytest.raises(ValueError, match=match):
        pvalues(make_ds({"same": [1.0, 2.0], "other": [1.5, 2.0]}), compare=compare)


def test_default_measures():
    ds = make_ds({"same": [1.0, 2.0, 3.0], "other": [1.5, 2.0, 2.0]})
    ds["auc"] = ds["error"] / 10
    ds["n_train"] = xr.ones_like(ds["error"], dtype=np.int64)
    ds["n_test"] = xr.full_like(ds["error"], np.nan)  # float after a NaN-filling reshape
    ds["fit_seconds"] = xr.ones_like(ds["error"])
    assert validate_results(ds) == ["error"]  # attrs["measures"] wins
    del ds.attrs["measures"]
    assert validate_results(ds) == ["error", "auc"]
    ds.attrs["measures"] = "auc"  # a one-element list read back from NetCDF
    assert validate_results(ds) == ["auc"]
    ds.attrs["measures"] = ["gone", "error"]  # a cut-down Dataset keeps the run's attrs
    assert validate_results(ds) == ["error"]
    assert validate_results(ds, "fit_seconds") == ["fit_seconds"]  # any numeric var on request


# ---------------------------------------------------------------- properties

fold_values = st.floats(min_value=0, max_value=100, allow_nan=False, allow_infinity=False)


@st.composite
def paired_folds(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    k = draw(st.integers(min_value=2, max_value=12))
    same = np.array(draw(st.lists(fold_values, min_size=k, max_size=k)))
    other = np.array(draw(st.lists(fold_values, min_size=k, max_size=k)))
    return same, other


@settings(max_examples=60, deadline=None)
@given(paired_folds())
def test_property_swap_negates_mean_diff_and_t(folds):
    same, other = folds
    a = quiet_pvalues(make_ds({"same": same, "other": other}), compare="other").iloc[0]
    b = quiet_pvalues(make_ds({"same": other, "other": same}), compare="other").iloc[0]
    assert b["mean_diff"] == pytest.approx(-a["mean_diff"], abs=1e-12)
    assert b["same_mean"] == a["compare_mean"] and b["compare_sd"] == a["same_sd"]
    if a["reason"] == "":
        assert b["t"] == pytest.approx(-a["t"], rel=1e-9)
        assert b["p_paired"] == pytest.approx(a["p_paired"], rel=1e-9)
        assert b["p_welch"] == pytest.approx(a["p_welch"], rel=1e-9)
        assert a["p_paired"] == pytest.approx(sps.ttest_rel(other, same).pvalue, rel=1e-9)
    else:
        assert math.isnan(a["t"]) == math.isnan(b["t"])


@settings(max_examples=60, deadline=None)
@given(paired_folds(), st.floats(min_value=-1000, max_value=1000))
def test_property_shift_leaves_t_unchanged(folds, shift):
    same, other = folds
    d = other - same
    # Keep differences well above rounding noise of the shifted values.
    assume(np.std(d) > 1e-3)
    a = quiet_pvalues(make_ds({"same": same, "other": other}), compare="other").iloc[0]
    b = quiet_pvalues(
        make_ds({"same": same + shift, "other": other + shift}), compare="other"
    ).iloc[0]
    assert a["reason"] == b["reason"] == ""
    assert b["t"] == pytest.approx(a["t"], rel=1e-6)
    assert b["p_paired"] == pytest.approx(a["p_paired"], rel=1e-6, abs=1e-12)
    assert b["mean_diff"] == pytest.approx(a["mean_diff"], abs=1e-9)
    assert b["same_mean"] == pytest.approx(a["same_mean"] + shift, abs=1e-9)


# ---------------------------------------------------------------- plain K-fold CV, fold sizes


def test_plain_kfold_pvalues_warn_and_have_no_rows():
    ds = make_ds({"same": [10.0, 20.0, 30.0]}, subsets=("all_rows",))
    assert no_tests_reason(ds) == (
        "one subset: plain K-fold CV, no 'other' or 'all' train set to compare with 'same'"
    )
    with pytest.warns(UserWarning, match=r"no p-values: one subset: plain K-fold CV.*summary\(\)"):
        res = pvalues(ds)
    assert res.empty and list(res.columns) == PVALUE_COLUMNS
    assert res["p_paired"].dtype == np.float64 and res["n"].dtype == np.int64


def test_same_only_with_several_subsets_says_why():
    ds = make_ds({"same": [[1.0, 2.0], [3.0, 4.0]]}, subsets=("A", "B"))
    with pytest.warns(UserWarning, match=r"'same' train sets only \(train_types='same'\)"):
        assert pvalues(ds).empty
    assert no_tests_reason(make_ds({"same": [1.0, 2.0], "all": [1.0, 3.0]})) == ""


def test_results_text_is_mean_sd_in_plain_kfold_and_tests_otherwise():
    ds = make_ds({"same": [10.0, 20.0, 30.0]}, subsets=("all_rows",))
    ds["n_test"] = xr.full_like(ds["error"], 100, dtype=np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        text = results_text(ds)
    lines = text.splitlines()
    assert lines[0].startswith("one subset: plain K-fold CV") and lines[0].endswith("no p-values")
    assert lines[1].startswith("error: mean ± SD over the folds of each learner")
    assert lines[2].split() == [
        "learner", "n", "mean", "sd", "weighted_mean", "n_test_min", "n_test_max"
    ]  # fmt: skip
    assert lines[3].split() == ["lasso", "3", "20.0", "10.0", "20.0", "100", "100"]
    compared = make_ds({"same": [1.0, 2.0, 4.0], "other": [2.0, 3.0, 3.5]})
    assert results_text(compared) == pvalues_text(compared)


def test_summary_weighs_folds_by_their_test_rows():
    ds = make_ds({"same": [10.0, 20.0, np.nan, 40.0], "other": [0.0, 10.0, 10.0, 10.0]})
    ds["n_test"] = xr.DataArray([10, 30, 50, 60], dims="fold").broadcast_like(ds["error"])
    res = summary(ds).set_index("train_type")
    same, other = res.loc["same"], res.loc["other"]
    # The NaN fold is left out of every statistic, its rows too.
    assert same["n"] == 3 and same["mean"] == pytest.approx(70 / 3)
    assert same["weighted_mean"] == pytest.approx((100 + 600 + 2400) / 100)
    assert (same["n_test_min"], same["n_test_max"]) == (10, 60)
    assert other["weighted_mean"] == pytest.approx((0 + 300 + 500 + 600) / 150)
    assert (other["n_test_min"], other["n_test_max"]) == (10, 60)


def test_summary_without_test_rows_leaves_them_undefined():
    res = summary(make_ds({"same": [1.0, 2.0]}))
    assert res[["weighted_mean", "n_test_min", "n_test_max"]].isna().all().all()
    assert math.isnan(res.iloc[0]["n_test_min"])  # plain floats: row access keeps NaN
