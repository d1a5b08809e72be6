"""Tests of the Friedman test and the Nemenyi critical difference over test subsets
(soak_dask.stats.friedman, soak_dask.results.friedman) and of its diagram
(soak_dask.results.cd_plot): against scipy and scikit-posthocs on a fixed table, against the
published example of Demšar (2006), on real SOAK results and on refused inputs."""

from __future__ import annotations

import itertools

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import scikit_posthocs  # noqa: E402  # a dev dependency: missing, the module fails, not skips
import xarray as xr  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from scipy import stats as sps  # noqa: E402

import soak_dask as sd  # noqa: E402
from soak_dask.results.cd_plot import plot_critical_difference  # noqa: E402
from soak_dask.results.friedman import friedman_nemenyi, subset_scores  # noqa: E402
from soak_dask.stats.friedman import (  # noqa: E402
    PERMUTATIONS,
    block_ranks,
    cd_groups,
    friedman_nemenyi_scores,
    nemenyi_cd,
    permutation_p,
)
from soak_dask.tables.generated import make_pixel_table  # noqa: E402

from ..conftest import n_examples  # noqa: E402

# A fixed table: 9 blocks × 5 treatments, scores rounded to whole points so that blocks tie.
FIXED = pd.DataFrame(
    [
        [12, 15, 11, 20, 14],
        [30, 28, 30, 35, 29],
        [8, 9, 7, 12, 8],
        [22, 25, 21, 27, 24],
        [17, 17, 16, 21, 18],
        [40, 41, 38, 44, 43],
        [5, 6, 6, 9, 5],
        [19, 23, 18, 26, 21],
        [11, 10, 12, 15, 13],
    ],
    index=pd.Index([f"s{i}" for i in range(9)], name="test_subset"),
    columns=pd.Index(["knn", "tree", "lasso", "featureless", "forest"], name="learner"),
    dtype=float,
)

# Demšar (2006), Table 6: AUC of four C4.5 variants on 14 data sets. The paper prints voting's
# C4.5+cf and C4.5+m+cf both as 0.975, yet ranks them 2 and 3 (its average ranks 2.893 and
# 1.964 need it): the unrounded AUCs differ, so C4.5+cf's is written 0.97501 here.
DEMSAR = pd.DataFrame(
    [
        [0.763, 0.768, 0.771, 0.798],
        [0.599, 0.591, 0.590, 0.569],
        [0.954, 0.971, 0.968, 0.967],
        [0.628, 0.661, 0.654, 0.657],
        [0.882, 0.888, 0.886, 0.898],
        [0.936, 0.931, 0.916, 0.931],
        [0.661, 0.668, 0.609, 0.685],
        [0.583, 0.583, 0.563, 0.625],
        [0.775, 0.838, 0.866, 0.875],
        [1.000, 1.000, 1.000, 1.000],
        [0.940, 0.962, 0.965, 0.962],
        [0.619, 0.666, 0.614, 0.669],
        [0.972, 0.981, 0.97501, 0.975],
        [0.957, 0.978, 0.946, 0.970],
    ],
    columns=["C4.5", "C4.5+m", "C4.5+cf", "C4.5+m+cf"],
)


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def soak_results(scores: pd.DataFrame, n_folds: int = 2, train_type: str = "same") -> xr.Dataset:
    """SOAK results whose fold scores average to `scores` (subsets × learners): ± 1 per fold."""
    rows = [
        (learner, subset, fold + 1, train_type, value + (1.0 if fold % 2 else -1.0))
        for subset, by_learner in scores.iterrows()
        for learner, value in by_learner.items()
        for fold in range(n_folds)
    ]
    columns = ["learner", "test_subset", "fold", "train_type", "error"]
    return sd.from_dataframe(pd.DataFrame(rows, columns=columns))


# --------------------------------------------------------------------- reference implementations


def test_fixed_table_matches_scipy_and_scikit_posthocs():
    r = friedman_nemenyi_scores(FIXED, measure="error")
    chi2, p = sps.friedmanchisquare(*FIXED.to_numpy().T)
    assert r.chi2 == pytest.approx(chi2, rel=1e-12)
    assert r.p == pytest.approx(p, rel=1e-10)
    expected_ranks = sps.rankdata(FIXED.to_numpy(), axis=1).mean(axis=0)
    assert r.average_ranks[FIXED.columns].to_numpy() == pytest.approx(expected_ranks)
    posthocs = scikit_posthocs.posthoc_nemenyi_friedman(FIXED.to_numpy())
    posthocs.index = posthocs.columns = FIXED.columns
    for _, pair in r.pairs.iterrows():
        assert pair["p_nemenyi"] == pytest.approx(posthocs.loc[pair["a"], pair["b"]], rel=1e-9)
        # A pair differs by more than CD exactly when scikit-posthocs' p is below alpha.
        assert pair["significant"] == (posthocs.loc[pair["a"], pair["b"]] < r.alpha)
    assert r.pairs["significant"].any() and not r.pairs["significant"].all()


def test_cd_is_the_rank_difference_where_scikit_posthocs_p_reaches_alpha():
    # With alpha set to one pair's Nemenyi p-value from scikit-posthocs, the critical difference
    # must be that pair's rank difference: CD and the p-values are one threshold.
    posthocs = scikit_posthocs.posthoc_nemenyi_friedman(FIXED.to_numpy()).to_numpy()
    ranks = sps.rankdata(FIXED.to_numpy(), axis=1).mean(axis=0)
    for i, j in [(3, 2), (3, 1), (0, 4)]:
        alpha = posthocs[i, j]
        r = friedman_nemenyi_scores(FIXED, alpha=alpha)
        assert r.cd == pytest.approx(abs(ranks[i] - ranks[j]), rel=1e-6)


def test_iman_davenport_f_from_chi2():
    # F = (N − 1) χ² / (N (k − 1) − χ²) with df (k − 1, (k − 1)(N − 1)) = (4, 32) here.
    r = friedman_nemenyi_scores(FIXED)
    f = 8 * r.chi2 / (9 * 4 - r.chi2)
    assert r.f == pytest.approx(f, rel=1e-12)
    assert r.f_p == pytest.approx(sps.f.sf(f, 4, 32), rel=1e-10)
    assert r.f_p < r.p  # Iman and Davenport: χ² is conservative


def test_permutation_p_matches_the_exact_distribution():
    # Three treatments over four blocks, one with a tie: every one of the 6⁴ orders of the
    # blocks' ranks is equally likely under the null; count those reaching the observed
    # statistic. The Monte Carlo p must lie within 4 standard errors of that exact p.
    scores = np.array([[1.0, 2, 3], [1, 3, 2], [1, 2, 3], [2, 2, 3]])
    ranks = block_ranks(scores)
    observed = np.sum(ranks.sum(axis=0) ** 2)
    orders = [list(itertools.permutations(row)) for row in ranks]
    reach = [
        np.sum(np.sum(combo, axis=0) ** 2) >= observed - 1e-9
        for combo in itertools.product(*orders)
    ]
    exact = float(np.mean(reach))
    p = permutation_p(ranks)
    assert p == pytest.approx(exact, abs=4 * np.sqrt(exact * (1 - exact) / PERMUTATIONS))
    assert p == permutation_p(ranks)  # a fixed seed: the same p on every call
    assert friedman_nemenyi_scores(pd.DataFrame(scores)).p_permutation == p
    assert permutation_p(ranks, 9) >= 0.1  # (1 + #) / (1 + B): never below 1 / (1 + B)


# --------------------------------------------------------------------- Demšar (2006), section 3.2.4


def test_demsar_example_at_five_percent():
    r = friedman_nemenyi_scores(DEMSAR, lower_is_better=False, measure="auc")
    published = {"C4.5": 3.143, "C4.5+m": 2.000, "C4.5+cf": 2.893, "C4.5+m+cf": 1.964}
    assert r.average_ranks.round(3).to_dict() == published
    assert list(r.average_ranks.index) == ["C4.5+m+cf", "C4.5+m", "C4.5+cf", "C4.5"]
    # The paper's χ² = 9.28 is the formula without the tie correction. Ties by hand: mushroom
    # (four-way), iris, lung cancer, primary tumor (two-way): Σ(t³ − t) = 60 + 3·6 = 78, so
    # C = 1 − 78 / (14·4·15) = 0.90714, and the corrected χ² = 9.2786 / C = 10.2283.
    assert r.chi2 * (1 - 78 / 840) == pytest.approx(9.28, abs=0.005)
    assert r.chi2 == pytest.approx(10.2283, abs=1e-4)
    # Iman–Davenport with the corrected χ²: 13 · 10.2283 / (42 − 10.2283) = 4.1851, df (3, 39).
    assert r.f == pytest.approx(4.1851, abs=1e-4)
    # Table 5(a): q_0.05 = 2.569 for k = 4; CD = 2.569 · √(20/84) = 1.25.
    assert r.q_alpha == pytest.approx(2.569, abs=5e-4)
    assert r.cd == pytest.approx(1.25, abs=5e-3)
    # "even the difference between the best and the worst is smaller than CD".
    assert not r.pairs["significant"].any()
    assert r.groups == (("C4.5+m+cf", "C4.5+m", "C4.5+cf", "C4.5"),)


def test_demsar_example_at_ten_percent():
    r = friedman_nemenyi_scores(DEMSAR, lower_is_better=False, alpha=0.10)
    assert r.q_alpha == pytest.approx(2.291, abs=5e-4)
    assert r.cd == pytest.approx(1.12, abs=5e-3)
    significant = r.pairs[r.pairs["significant"]]
    assert set(zip(significant["a"], significant["b"], strict=True)) == {
        ("C4.5+m+cf", "C4.5"),
        ("C4.5+m", "C4.5"),
    }
    # Figure 1(a): C4.5+cf belongs to both groups.
    assert r.groups == (("C4.5+m+cf", "C4.5+m", "C4.5+cf"), ("C4.5+cf", "C4.5"))


@pytest.mark.parametrize(
    ("k", "alpha", "q"),
    [(2, 0.05, 1.960), (3, 0.05, 2.343), (5, 0.05, 2.728), (10, 0.05, 3.164), (6, 0.10, 2.589)],
)
def test_q_alpha_matches_demsar_table_5a(k, alpha, q):
    q_alpha, cd = nemenyi_cd(k, 7, alpha)
    assert q_alpha == pytest.approx(q, abs=1e-3)  # the table is to 3 decimals, some truncated
    assert cd == pytest.approx(q_alpha * np.sqrt(k * (k + 1) / 42))


# --------------------------------------------------------------------- invariants


@st.composite
def score_tables(draw: st.DrawFn) -> pd.DataFrame:
    k = draw(st.integers(2, 6))
    n = draw(st.integers(2, 8))
    values = draw(
        st.lists(st.integers(0, 6), min_size=n * k, max_size=n * k).filter(
            lambda v: any(len(set(v[i * k : (i + 1) * k])) > 1 for i in range(n))
        )
    )
    return pd.DataFrame(np.reshape(values, (n, k)).astype(float), columns=list("abcdef")[:k])


@settings(max_examples=n_examples(40))
@given(score_tables(), st.randoms(use_true_random=False))
def test_property_block_order_and_monotone_rescaling_change_nothing(table, random):
    base = friedman_nemenyi_scores(table)
    order = list(range(len(table)))
    random.shuffle(order)
    moved = friedman_nemenyi_scores(np.exp(table.iloc[order] / 3) + 1)
    assert moved.chi2 == pytest.approx(base.chi2)
    assert moved.average_ranks.to_dict() == pytest.approx(base.average_ranks.to_dict())
    assert moved.groups == base.groups


@settings(max_examples=n_examples(40))
@given(score_tables())
def test_property_higher_is_better_mirrors_ranks(table):
    low = friedman_nemenyi_scores(table)
    high = friedman_nemenyi_scores(table, lower_is_better=False)
    k = table.shape[1]
    assert high.average_ranks[table.columns].to_numpy() == pytest.approx(
        k + 1 - low.average_ranks[table.columns].to_numpy()
    )
    assert high.chi2 == pytest.approx(low.chi2)
    assert high.cd == low.cd


@settings(max_examples=n_examples(40))
@given(score_tables(), st.sampled_from([0.01, 0.05, 0.1, 0.2]))
def test_property_significance_is_rank_difference_over_cd(table, alpha):
    r = friedman_nemenyi_scores(table, alpha=alpha)
    assert (r.pairs["significant"] == (r.pairs["rank_difference"] > r.cd)).all()
    for group in r.groups:  # every pair inside a bar is within CD, each bar is maximal
        spread = r.average_ranks[list(group)]
        assert spread.max() - spread.min() <= r.cd
    for a, b in itertools.combinations(r.average_ranks.index, 2):
        together = any(a in g and b in g for g in r.groups)
        if together:
            assert abs(r.average_ranks[a] - r.average_ranks[b]) <= r.cd


def test_groups_leave_out_single_treatments_and_nested_runs():
    ranks = pd.Series({"a": 1.0, "b": 1.2, "c": 1.4, "d": 4.0, "e": 4.5})
    assert cd_groups(ranks, 0.5) == (("a", "b", "c"), ("d", "e"))
    assert cd_groups(ranks, 0.1) == ()
    assert cd_groups(ranks, 10.0) == (("a", "b", "c", "d", "e"),)


def test_block_ranks_average_ties_and_flip():
    scores = np.array([[3.0, 1.0, 3.0, 2.0]])
    assert block_ranks(scores).tolist() == [[3.5, 1.0, 3.5, 2.0]]
    assert block_ranks(scores, lower_is_better=False).tolist() == [[1.5, 4.0, 1.5, 3.0]]


# --------------------------------------------------------------------- SOAK results


@pytest.fixture(scope="module")
def real_run() -> xr.Dataset:
    """A real SOAK run: 4 regions, three learners, K = 3."""
    df = make_pixel_table(
        n_pixels=1600, n_bands=5, n_regions=4, n_polygons=80, tree_fraction=0.3, seed=3
    )
    table = sd.load_table(df, label="label", subset="region", group="polygon", exclude=["x", "y"])
    learners = {"featureless": "featureless", "logistic": "logistic", "tree": "decision_tree"}
    return sd.soak(table, learners, n_folds=3, seed=2, options=sd.RunOptions(progress=False))


@pytest.mark.slow
def test_real_soak_run_ranks_the_learners_over_its_subsets(real_run):
    r = friedman_nemenyi(real_run)
    # Each subset's score is its fold mean, the summary's mean of train type same.
    summary = sd.summary(real_run, "error")
    same = summary[summary["train_type"] == "same"].pivot(
        index="test_subset", columns="learner", values="mean"
    )
    pd.testing.assert_frame_equal(
        r.scores.sort_index(axis=0).sort_index(axis=1), same.sort_index(axis=1), check_names=False
    )
    assert (r.n_blocks, r.n_treatments) == (4, 3)
    assert r.measure == "error" and r.lower_is_better
    assert "folds" in r.block_score and "'same'" in r.block_score
    ranks = sps.rankdata(same.to_numpy(), axis=1).mean(axis=0)
    assert r.average_ranks[same.columns].to_numpy() == pytest.approx(ranks)
    assert r.average_ranks.index[-1] == "featureless"  # the label is predictable from the bands
    assert r.chi2 == pytest.approx(sps.friedmanchisquare(*same.to_numpy().T).statistic)
    assert 1 / (1 + PERMUTATIONS) <= r.p_permutation <= 1
    other = friedman_nemenyi(real_run, train_type="all")
    assert not other.scores.equals(r.scores)
    ax = plot_critical_difference(r)
    labels = [t.get_text() for t in ax.texts]
    assert all(any(t.startswith(f"{name} (") for t in labels) for name in r.average_ranks.index)


def test_higher_is_better_measure_ranks_the_highest_first():
    ds = soak_results(FIXED)
    accuracy = ds.assign(accuracy=(100 - ds["error"]) / 100)
    by_error = friedman_nemenyi(accuracy, "error")
    by_accuracy = friedman_nemenyi(accuracy, "accuracy")
    assert by_accuracy.average_ranks.to_dict() == pytest.approx(by_error.average_ranks.to_dict())
    assert not by_accuracy.lower_is_better


def test_a_fold_no_learner_has_is_not_part_of_that_subset():
    ds = soak_results(FIXED, n_folds=3)
    ds["error"].loc[{"test_subset": "s2", "fold": 3}] = np.nan
    r = friedman_nemenyi(ds)
    kept = ds["error"].sel(test_subset="s2", train_type="same", fold=[1, 2]).mean("fold")
    assert r.scores.loc["s2"].to_numpy() == pytest.approx(kept.sel(learner=r.scores.columns))


# --------------------------------------------------------------------- refusals


def test_a_score_missing_for_some_learners_only_is_refused_naming_the_cells():
    ds = soak_results(FIXED)
    ds["error"].loc[{"learner": "tree", "test_subset": "s4", "fold": 2}] = np.nan
    with pytest.raises(ValueError, match=r"\('tree', 's4', 2\).*drop_sel\(learner") as info:
        friedman_nemenyi(ds)
    assert "1 'error' score(s)" in str(info.value)


def test_a_subset_without_scores_for_the_train_type_is_refused():
    ds = soak_results(FIXED)
    other = soak_results(FIXED.drop(index="s0"), train_type="other")
    both = xr.concat([ds, other], dim="train_type", join="outer")
    with pytest.raises(ValueError, match=r"\['s0'\] have no 'error' score trained on 'other'"):
        friedman_nemenyi(both, train_type="other")
    assert friedman_nemenyi(both).n_blocks == 9


@pytest.mark.parametrize(
    ("table", "match"),
    [
        (FIXED[["knn"]], r"at least 2 learners; got 1 \(knn\)"),
        (FIXED.iloc[:1], r"at least 2 test subsets to rank the learners over; got 1 \(s0\)"),
    ],
)
def test_too_few_learners_or_subsets_are_refused(table, match):
    with pytest.raises(ValueError, match=match):
        friedman_nemenyi(soak_results(table))


def test_nan_cells_of_a_score_table_are_named():
    table = FIXED.copy()
    table.loc["s3", "lasso"] = np.nan
    with pytest.raises(ValueError, match=r"1 score\(s\) are missing .*\('s3', 'lasso'\)"):
        friedman_nemenyi_scores(table)


def test_every_block_tied_is_refused():
    with pytest.raises(ValueError, match="nothing to test"):
        friedman_nemenyi_scores(pd.DataFrame({"a": [1.0, 2.0], "b": [1.0, 2.0]}))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"measure": "auc"}, ValueError, "measure 'auc' is not in the results"),
        ({"measure": ["error"]}, TypeError, "measure must be one name"),
        ({"train_type": "other"}, ValueError, r"train_type='other' is not in the results"),
        ({"alpha": 1.5}, ValueError, r"alpha=1.5: need a level in \(0, 1\)"),
    ],
)
def test_bad_options_are_refused(kwargs, error, match):
    with pytest.raises(error, match=match):
        friedman_nemenyi(soak_results(FIXED), **kwargs)


def test_results_with_train_sizes_say_to_select_one():
    ds = soak_results(FIXED)
    sized = xr.concat([ds, ds + 1], dim=pd.Index([50, 100], name="train_size"))
    with pytest.raises(ValueError, match=r"select one value first, e\.g\. ds\.sel\(train_size"):
        subset_scores(sized)


# --------------------------------------------------------------------- the diagram


def test_diagram_draws_ranks_groups_and_the_cd_bar():
    r = friedman_nemenyi_scores(DEMSAR, lower_is_better=False, alpha=0.10, measure="auc")
    fig, ax = plt.subplots()
    assert plot_critical_difference(r, ax=ax) is ax
    bars = [line for line in ax.lines if line.get_gid() == "group"]
    assert len(bars) == len(r.groups) == 2
    spans = sorted(tuple(np.round(line.get_xdata(), 3)) for line in bars)
    assert spans[0] == pytest.approx((1.964 - 0.03, 2.893 + 0.03), abs=1e-3)
    (cd,) = [line for line in ax.lines if line.get_gid() == "cd"]
    assert np.ptp(cd.get_xdata()) == pytest.approx(r.cd)
    texts = [t.get_text() for t in ax.texts]
    assert "C4.5 (3.14)" in texts and "C4.5+m+cf (1.96)" in texts
    assert any(t.startswith("CD = 1.12") for t in texts)
    assert "Friedman p=0.017" in ax.get_title()


def test_diagram_without_groups_and_of_a_new_figure():
    table = pd.DataFrame({"a": np.arange(30.0), "b": np.arange(30.0) + 1, "c": np.arange(30.0) + 2})
    r = friedman_nemenyi_scores(table)
    assert r.groups == ()
    ax = plot_critical_difference(r)
    assert not [line for line in ax.lines if line.get_gid() == "group"]
    assert ax.figure.get_figwidth() >= 5


def test_diagram_refuses_other_objects():
    with pytest.raises(TypeError, match=r"pass friedman_nemenyi\(ds\), not DataFrame"):
        plot_critical_difference(FIXED)
