"""Tests of ``split_sensitivity``: the split keys (balanced, whole groups, independent of the
partitioning), CV and test scores equal to scikit-learn's on the same rows, the statistics
equal to scipy's, same results on one or two workers, bad input refused, and the figure."""

from __future__ import annotations

import dask
import dask.dataframe as dd
import matplotlib
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps
from sklearn.base import clone
from sklearn.metrics import accuracy_score
from sklearn.model_selection import PredefinedSplit, cross_val_score

import soak_dask as sd
from soak_dask import RunOptions
from soak_dask.diagnose.sensitivity import (
    recommend,
    split_sensitivity,
    split_sensitivity_summary,
    split_sensitivity_trials,
)
from soak_dask.split.shares import share_sizes
from soak_dask.split.trials import SplitTrials

from ..conftest import n_examples, toy_table

matplotlib.use("Agg")
FEATURES = ["x0", "x1", "x2"]
RATIOS = (0.6, 0.8)
LEARNER = "gaussian_nb"  # fast to fit
TRIALS, K = 3, 3


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return toy_table(300, seed=3, n_groups=12)


@pytest.fixture(scope="module")
def table(frame):
    return sd.load_table(frame, label="y", features=FEATURES)


@pytest.fixture(scope="module")
def result(table) -> xr.Dataset:
    with dask.config.set(scheduler="synchronous"):
        return split_sensitivity(
            table,
            LEARNER,
            design=SplitTrials(ratios=RATIOS, n_repeats=TRIALS, n_folds=K),
            options=RunOptions(progress=False),
        )


def keys(table, ratios=RATIOS, trials=TRIALS, n_folds=K, seed=1) -> tuple[pd.DataFrame, dict]:
    """The keyed rows (computed) and the key column of each (ratio index, trial)."""
    design = SplitTrials(ratios, trials, n_folds, seed)
    keyed = design.add_keys(table)
    with dask.config.set(scheduler="synchronous"):
        return keyed.data.compute(), design.learned_["columns"]


def test_result_shape_and_attrs(result):
    assert dict(result.sizes) == {"ratio": 2, "trial": TRIALS, "fold": K}
    assert result["cv_score"].dims == ("ratio", "trial", "fold")
    assert result["test_score"].dims == ("ratio", "trial")
    assert result["levene_p"].dims == ("ratio",)
    assert list(result["ratio"].values) == list(RATIOS)
    assert result.attrs["n_fits"] == 2 * TRIALS * (K + 1)
    assert result.attrs["learner"] == LEARNER and result.attrs["measure"] == "accuracy"
    assert (result["n_train"] + result["n_test"] == 300).all()
    share = result["n_train"] / 300
    assert float(abs(share - result["ratio"]).max()) < 0.02  # stratified: near exact
    assert result["cv_score"].notnull().all() and result["test_score"].notnull().all()
    summary, trials = split_sensitivity_summary(result), split_sensitivity_trials(result)
    assert len(summary) == 2 and summary["recommended"].dtype == bool
    assert len(trials) == 2 * TRIALS and [f"fold_{k}" for k in range(1, K + 1)] == list(
        trials.columns[2 : 2 + K]
    )


@pytest.mark.parametrize(("ratio", "i"), [(0.6, 1), (0.8, 2)])
def test_scores_equal_scikit_learn_on_the_same_rows(result, table, frame, ratio, i):
    rows, columns = keys(table)
    trial = 2
    code = rows[columns[i, trial]].to_numpy()
    train = code > 0
    X, y = frame[FEATURES].to_numpy(), frame["y"].to_numpy()
    learner = sd.builtin_learner(LEARNER, "classification", seed=1)
    cv = cross_val_score(
        clone(learner), X[train], y[train], cv=PredefinedSplit(code[train] - 1), scoring="accuracy"
    )
    got = result["cv_score"].sel(ratio=ratio, trial=trial).values
    np.testing.assert_allclose(got, cv, rtol=0, atol=1e-12)
    model = clone(learner).fit(X[train], y[train])
    expected = accuracy_score(y[~train], model.predict(X[~train]))
    assert float(result["test_score"].sel(ratio=ratio, trial=trial)) == pytest.approx(expected)
    assert int(result["n_test"].sel(ratio=ratio, trial=trial)) == int((~train).sum())


def test_statistics_equal_scipy(result):
    alpha = result.attrs["alpha"]
    for ratio in RATIOS:
        r = result.sel(ratio=ratio)
        folds = r["cv_score"].values
        cv, test = folds.mean(axis=1), r["test_score"].values
        sd_ = folds.std(axis=1, ddof=1)
        half = sps.t.ppf(1 - alpha / 2, K - 1) * sd_ * np.sqrt(1 + 1 / K)
        np.testing.assert_allclose(r["pi_low"], cv - half)
        np.testing.assert_allclose(r["pi_high"], cv + half)
        inside = (cv - half <= test) & (test <= cv + half)
        assert (r["consistent"].values == inside).all()
        assert float(r["consistent_share"]) == pytest.approx(inside.mean())
        lev = sps.levene(cv, test)
        assert float(r["levene_stat"]) == pytest.approx(lev.statistic)
        assert float(r["levene_p"]) == pytest.approx(lev.pvalue)
        f = np.var(cv, ddof=1) / np.var(test, ddof=1)
        p = 2 * min(sps.f.cdf(f, TRIALS - 1, TRIALS - 1), sps.f.sf(f, TRIALS - 1, TRIALS - 1))
        assert float(r["f_stat"]) == pytest.approx(f)
        assert float(r["f_p"]) == pytest.approx(min(p, 1.0))
        corr = sps.pearsonr(cv, test)
        assert float(r["correlation"]) == pytest.approx(corr.statistic)
        assert float(r["correlation_p"]) == pytest.approx(corr.pvalue)
        pm = sps.pearsonr(cv + test, cv - test)
        assert float(r["pitman_morgan_p"]) == pytest.approx(pm.pvalue)
    expected = recommend(
        result["levene_p"].values, result["f_p"].values, result["consistent_share"].values, alpha
    )
    assert (result["recommended"].values == expected).all()
    chosen = [f"{r:g}" for r in result["ratio"].values[expected]]
    assert result.attrs["recommended"] == chosen


def test_recommend_rule():
    share = np.array([0.9, 1.0, 1.0, 0.95])
    # ratio 2 fails Levene, 3 and 4 pass (NaN: both samples constant, no rejection)
    got = recommend(
        np.array([0.3, 0.01, np.nan, 0.2]), np.array([0.5, 0.5, 0.5, 0.04]), share, 0.05
    )
    assert got.tolist() == [False, False, True, False]
    tie = recommend(np.array([0.3, 0.3]), np.array([0.3, 0.3]), np.array([0.8, 0.8]), 0.05)
    assert tie.tolist() == [True, True]
    assert not recommend(np.array([0.01]), np.array([0.5]), np.array([1.0]), 0.05).any()


def test_keys_balanced(table, frame):
    """Exactly round(r·N) rows train, class by class by largest remainder; each class's train
    rows are dealt to K folds whose sizes differ by at most one."""
    rows, columns = keys(table, ratios=(0.5, 0.7), trials=3, n_folds=4)
    per_class = frame["y"].value_counts().sort_index()
    for (i, _), column in columns.items():
        expected = share_sizes(per_class.to_numpy(), (0.5, 0.7)[i - 1], 0)
        trains = (rows[column] > 0).groupby(frame["y"]).sum().sort_index()
        np.testing.assert_array_equal(trains.to_numpy(), expected)
        for _, part in rows.groupby(frame["y"]):
            code = part[column].to_numpy()
            folds = np.bincount(code[code > 0], minlength=5)[1:]
            assert folds.max() - folds.min() <= 1


def test_keys_do_not_depend_on_the_partitioning(frame, table):
    one, columns = keys(table)
    split = sd.load_table(dd.from_pandas(frame, npartitions=4), label="y", features=FEATURES)
    four, _ = keys(split)
    names = list(columns.values())
    pd.testing.assert_frame_equal(one[names], four[names])
    other, _ = keys(table, seed=2)
    assert not one[names].equals(other[names])


@settings(max_examples=n_examples(8), deadline=None)
@given(
    labels=st.lists(st.integers(0, 2), min_size=12, max_size=120),
    parts=st.integers(2, 6),
    ratio=st.sampled_from([0.3, 0.5, 0.8, 0.97]),
)
def test_partition_keys_invariant(labels, parts, ratio):
    """Any partitioning gives the keys of one partition; round(r·N) rows train; every
    class's train rows get folds whose sizes differ by at most one."""
    df = pd.DataFrame({"x0": np.arange(len(labels), dtype=float), "y": np.array(labels)})
    if df["y"].nunique() < 2 or len(df) * ratio < 5 or len(df) * (1 - ratio) < 0.5:
        return
    table = sd.load_table(df, label="y", features=["x0"])
    try:
        whole, columns = keys(table, ratios=(ratio,), trials=3, n_folds=2)
    except ValueError:  # no class trains on 2 rows: refused whatever the partitioning
        return
    split = sd.load_table(dd.from_pandas(df, npartitions=parts), label="y", features=["x0"])
    cut, _ = keys(split, ratios=(ratio,), trials=3, n_folds=2)
    names = list(columns.values())
    pd.testing.assert_frame_equal(whole[names], cut[names])
    for name in names:
        assert (whole[name] > 0).sum() == round(len(df) * ratio)
        for _, code in whole[name].groupby(df["y"]):
            folds = np.bincount(code[code > 0], minlength=3)[1:]
            assert folds.max() - folds.min() <= 1


def test_groups_stay_whole(frame):
    grouped = sd.load_table(frame, label="y", features=FEATURES, group="group")
    rows, columns = keys(grouped, ratios=(0.5, 0.8), trials=3, n_folds=3)
    names = list(columns.values())
    # one key per group in every column: test/train and the folds keep whole groups
    assert (rows.groupby("group")[names].nunique() == 1).all().all()
    for column in names:
        assert set(rows[column]) == {0, 1, 2, 3}


@pytest.mark.slow
def test_grouped_run_and_same_results_on_two_workers(frame):
    """A grouped run on two worker threads and three partitions equals the synchronous one
    (one worker, one partition): the splits depend on the seed and the data only. (The CLI
    test compares a two-worker LocalCluster with the synchronous run too.)"""
    grouped = sd.load_table(frame, label="y", features=FEATURES, group="group")
    quiet = RunOptions(progress=False)
    options = {"design": SplitTrials(ratios=(0.7,), n_repeats=3, n_folds=3), "options": quiet}
    with dask.config.set(scheduler="synchronous"):
        one = split_sensitivity(grouped, LEARNER, **options)
    parts = dd.from_pandas(frame, npartitions=3)
    split = sd.load_table(parts, label="y", features=FEATURES, group="group")
    with dask.config.set(scheduler="threads", num_workers=2):
        two = split_sensitivity(split, LEARNER, **options)
    xr.testing.assert_identical(one.drop_attrs(), two.drop_attrs())
    assert (one["n_train"] + one["n_test"] == len(frame)).all()


def test_regression_and_an_estimator(frame):
    from sklearn.linear_model import Ridge

    df = frame.assign(target=frame["x0"] * 2 + frame["x1"])
    reg = sd.load_table(df, label="target", features=["x0", "x2"])
    with dask.config.set(scheduler="synchronous"):
        ds = split_sensitivity(
            reg,
            {"ridge": Ridge()},
            measures="rmse",
            design=SplitTrials(ratios=(0.5,), n_repeats=3, n_folds=3),
            options=RunOptions(progress=False),
        )
    assert ds.attrs["learner"] == "ridge" and ds.attrs["classes"] == ""
    assert ds["cv_score"].notnull().all() and (ds["cv_score"] > 0).all()


@pytest.mark.parametrize("ratio", [0.01, 0.83, 0.99])
def test_any_ratio_drawn_exactly(ratio):
    """A ratio is honoured to the row (once k of K ≤ 20 parts: 0.01 and 0.99 became 0.5)."""
    df = toy_table(1000, seed=4, n_groups=12)
    tab = sd.load_table(df, label="y", features=FEATURES)
    rows, columns = keys(tab, ratios=(ratio,), trials=3, n_folds=2)
    for column in columns.values():
        assert (rows[column] > 0).sum() == round(1000 * ratio)


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"ratios": []}, "ratios=\\[\\]: need shares"),
        ({"ratios": [0.5, 1]}, "strictly between 0 and 1"),
        ({"ratios": ["0.5"]}, "need shares"),
        ({"ratios": [True]}, "need shares"),
        ({"ratios": [0.8, 0.8]}, "0.8 is given twice"),
        ({"n_repeats": 2}, "n_repeats=2: need an integer of at least 3"),
        ({"n_repeats": 2.5}, "n_repeats=2.5"),
        ({"n_folds": 1}, "n_folds=1: need an integer of at least 2"),
        ({"seed": -1}, "seed=-1"),
    ],
)
def test_bad_design_options_refused(options, match):
    with pytest.raises(ValueError, match=match):
        SplitTrials(**options)


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"alpha": 0}, "alpha=0: need a level in"),
        ({"alpha": 0.6}, "alpha=0.6"),
        ({"measures": "mse"}, r"measures \['mse'\] are not all classification measures"),
        ({"measures": []}, "are not all classification measures"),
    ],
)
def test_bad_options_refused(table, options, match):
    with pytest.raises(ValueError, match=match):
        split_sensitivity(table, "logistic", **options)


@pytest.mark.parametrize(("old", "new"), [("measure", "measures"), ("learner", "learners")])
def test_former_keywords_name_the_new_one(table, old, new):
    with pytest.raises(TypeError, match=f"^split_sensitivity\\(\\): {old}= is now {new}=$"):
        split_sensitivity(table, **{old: 3})
    with pytest.raises(TypeError, match="unexpected keyword argument 'trails'"):
        split_sensitivity(table, trails=3)


def test_several_measures_the_first_decides(table, result):
    """Every measure is scored; the statistics are the first's, as with one measure."""
    with dask.config.set(scheduler="synchronous"):
        both = split_sensitivity(
            table,
            LEARNER,
            measures=["accuracy", "error"],
            design=SplitTrials(ratios=RATIOS, n_repeats=TRIALS, n_folds=K),
            options=RunOptions(progress=False),
        )
    xr.testing.assert_identical(both[list(result.data_vars)].drop_attrs(), result.drop_attrs())
    np.testing.assert_allclose(both["test_error"], 100 * (1 - both["test_score"]))  # percent
    assert both.attrs["measures"] == ["accuracy", "error"] and both.attrs["measure"] == "accuracy"


@pytest.mark.parametrize(
    ("learner", "match"),
    [
        (["logistic", "featureless"], "got 2 learners"),
        ("no_such", "unknown learner"),
    ],
)
def test_bad_learner_refused(table, learner, match):
    with pytest.raises(ValueError, match=match):
        split_sensitivity(table, learner)


def test_not_a_table_refused(frame):
    with pytest.raises(TypeError, match="takes a Table"):
        split_sensitivity(frame, "logistic")


def test_too_little_data_refused(frame):
    tiny = sd.load_table(frame.head(12), label="y", features=FEATURES)  # 7 yes, 5 no
    match = r"ratio=0.3 trains on 4 of the 12 rows \(at most 2 of one class\) and n_folds=5"
    with pytest.raises(ValueError, match=match):
        split_sensitivity(
            tiny, "logistic", design=SplitTrials(ratios=(0.3,), n_repeats=3, n_folds=5)
        )
    with pytest.raises(ValueError, match="ratio=0.01 draws 0 of the table's 12 rows"):
        split_sensitivity(
            tiny, "logistic", design=SplitTrials(ratios=(0.01,), n_repeats=3, n_folds=2)
        )
    # One group per class: the test part or a train fold is left without groups.
    grouped = sd.load_table(frame.assign(group=frame["y"]), label="y", features=FEATURES,
                            group="group")  # fmt: skip
    with pytest.raises(ValueError, match="ratio=0.8 draws 2 of the table's 2 groups of 'group'"):
        split_sensitivity(
            grouped, "logistic", design=SplitTrials(ratios=(0.8,), n_repeats=3, n_folds=3)
        )


def test_missing_labels_refused(frame):
    holes = sd.load_table(frame.assign(y=frame["y"].where(frame.index % 50 > 0)), label="y",
                          features=FEATURES)  # fmt: skip
    with pytest.raises(ValueError, match="label column 'y' has 6 missing values"):
        split_sensitivity(holes, "logistic", design=SplitTrials(ratios=(0.5,), n_repeats=3))


def test_figure(result, tmp_path):
    import matplotlib.pyplot as plt

    from soak_dask.diagnose.sensitivity_plot import plot_split_sensitivity

    fig = plot_split_sensitivity(result)
    ax = fig.axes[0]
    assert [t.get_text().split()[0] for t in ax.get_xticklabels()] == ["0.6", "0.8"]
    assert len(ax.patches) == 4  # a CV box and a test box per ratio
    assert sum("Levene p" in t.get_text() for t in ax.texts) == 2
    fig.savefig(tmp_path / "figure.png")
    plt.close(fig)
    _, given_ax = plt.subplots()
    assert plot_split_sensitivity(result, ax=given_ax) is given_ax.figure
    plt.close("all")
    with pytest.raises(ValueError, match="draws the Dataset returned by"):
        plot_split_sensitivity(result.drop_attrs())


def test_summary_and_printout_give_the_test_score_level_beside_the_rule(result):
    from soak_dask.diagnose.sensitivity_report import sensitivity_text

    summary = split_sensitivity_summary(result)
    means = result["test_score"].mean("trial").values  # accuracy: higher is better
    np.testing.assert_allclose(summary["test_score_behind_best"], means.max() - means)
    assert summary["best_test_score"].tolist() == (means == means.max()).tolist()
    assert list(summary.columns).index("test_score_behind_best") == (
        list(summary.columns).index("test_score_sd") + 1
    )
    printed = " ".join(sensitivity_text(result).split())  # the caveat is wrapped
    best = f"{RATIOS[int(np.argmax(means))]:g}"
    assert "ignores how good the model is and favours small ratios" in printed
    assert f"Best mean test score: ratio {best}" in printed and "behind_best" in printed
    # For a loss (lower is better) the best ratio is the lowest mean.
    as_loss = result.assign_attrs(measure="log_loss")
    flipped = split_sensitivity_summary(as_loss)
    np.testing.assert_allclose(flipped["test_score_behind_best"], means - means.min())


def test_each_trial_s_cv_estimate_beside_its_pooled_estimate(result):
    """The one estimate rule: a trial's CV estimate (the mean of its fold scores) beside its
    pooled estimate (accuracy of every CV test row: the folds' accuracies weighted by their
    rows), in the trials, the summary and, where they disagree, one line of the printout."""
    from soak_dask.diagnose.sensitivity import sensitivity_banner
    from soak_dask.diagnose.sensitivity_report import sensitivity_text

    trials = split_sensitivity_trials(result).set_index(["ratio", "trial"])
    scores, rows = result["cv_score"], result["cv_n_test"]
    pooled = ((scores * rows).sum("fold") / rows.sum("fold")).to_series()
    np.testing.assert_allclose(trials["cv_pooled"], pooled.loc[trials.index])
    assert (trials["cv_n_test_min"] == rows.min("fold").to_series().loc[trials.index]).all()
    summary = split_sensitivity_summary(result).set_index("ratio")
    np.testing.assert_allclose(summary["cv_pooled_mean"], pooled.groupby("ratio").mean())
    assert list(summary.columns).index("cv_pooled_mean") == (
        list(summary.columns).index("cv_estimate_sd") + 1
    )
    # A trial without a test score (a failed fit) is left out, as from the other statistics.
    broken = result.copy(deep=True)
    broken["test_score"][0, 0] = np.nan
    first = (result["ratio"].values[0], result["trial"].values[0])
    expected = pooled.drop(first).groupby("ratio").mean()
    np.testing.assert_allclose(split_sensitivity_summary(broken)["cv_pooled_mean"], expected)
    # Folds made 10× apart in rows: every trial is flagged, and the printout ends with the line.
    uneven = result.assign(cv_n_test=rows.copy(data=np.where(rows.fold == 1, 10, 1) * rows.values))
    banner = sensitivity_banner(uneven)
    assert banner.startswith("NOTE accuracy: fold mean and pooled estimate disagree")
    assert f"in {TRIALS * len(RATIOS)} of {TRIALS * len(RATIOS)} trials" in banner
    assert "the CV estimates, their tests and the recommendation rest on the fold mean" in banner
    assert sensitivity_text(uneven).endswith(banner)
    assert split_sensitivity_summary(uneven)["trials_estimates_differ"].tolist() == [TRIALS] * 2
