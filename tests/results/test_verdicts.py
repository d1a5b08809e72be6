"""The one wording of every verdict (``soak_dask.results.verdicts``): p < alpha is better or
worse, p ≥ alpha is "no evidence of a difference" (never "similar"), "equivalent" only with a
margin the user gave and two one-sided tests that both reject."""

from __future__ import annotations

import math

import dask
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

import soak_dask as sd
from soak_dask import RunOptions
from soak_dask.pooling import search_pvalues, search_subsets, transfer, transfer_pvalues
from soak_dask.results.comparisons import compare, comparison_text
from soak_dask.results.text import pvalues_text
from soak_dask.results.verdicts import (
    BETTER,
    EQUIVALENT,
    MARKS,
    NO_EVIDENCE,
    WORSE,
    check_margin,
    equivalence_p,
    verdict,
    verdict_text,
    with_verdicts,
)
from soak_dask.stats.mean_tests import paired_test

from ..conftest import n_examples, toy_table

WORDS = {BETTER, WORSE, NO_EVIDENCE, EQUIVALENT}


def _row(diff: np.ndarray, measure: str = "error") -> pd.DataFrame:
    test = paired_test(diff)
    return pd.DataFrame(
        {
            "measure": [measure],
            "mean_diff": [float(diff.mean())],
            "ci_low": [test.ci_low],
            "ci_high": [test.ci_high],
            "df": [test.df],
            "p": [test.p],
            "method": ["paired"],
            "compare": ["other"],
            "reference": ["same"],
        }
    )


def test_direction_follows_the_measure_and_p_at_or_above_alpha_is_no_evidence():
    assert verdict(3.0, 0.01, "error") == WORSE and verdict(-3.0, 0.01, "error") == BETTER
    assert verdict(0.1, 0.01, "accuracy") == BETTER and verdict(-0.1, 0.01, "auc") == WORSE
    assert verdict(3.0, 0.01, "error_632plus") == WORSE  # a bootstrap estimate of error
    assert verdict(10.0, 0.05, "error") == NO_EVIDENCE  # p = alpha does not reject
    assert verdict(10.0, 0.2, "error") == NO_EVIDENCE
    assert verdict(10.0, math.nan, "error") == NO_EVIDENCE  # no test, no claim
    # A margin alone never makes a verdict "equivalent": the tests must reject.
    assert verdict(0.0, 0.9, "error", p_equivalence=0.2) == NO_EVIDENCE
    assert verdict(0.0, 0.9, "error", p_equivalence=0.01) == EQUIVALENT
    assert MARKS[NO_EVIDENCE] == "" and MARKS[WORSE] == "\u25b2"


def test_equivalence_is_two_one_sided_t_tests():
    """p_equivalence is the larger of scipy's two one-sided t-tests against ±margin."""
    diff = np.array([0.3, -0.2, 0.5, 0.1, -0.4, 0.2, 0.0, 0.3, -0.1, 0.2])
    margin = 1.0
    low = sps.ttest_1samp(diff, -margin, alternative="greater").pvalue
    high = sps.ttest_1samp(diff, margin, alternative="less").pvalue
    out = with_verdicts(_row(diff), margin=margin).iloc[0]
    assert out["p_equivalence"] == pytest.approx(max(low, high), rel=1e-9)
    assert out["verdict"] == EQUIVALENT and out["margin"] == 1.0
    # The 90 % interval inside ±margin is the same decision at alpha = 0.05.
    half = sps.t.ppf(0.95, diff.size - 1) * diff.std(ddof=1) / math.sqrt(diff.size)
    assert abs(diff.mean()) + half < margin
    # A narrower margin than the interval: no evidence, not equivalence.
    assert with_verdicts(_row(diff), margin=0.2).iloc[0]["verdict"] == NO_EVIDENCE
    # Without a margin the columns are absent and nothing is equivalent.
    plain = with_verdicts(_row(diff))
    assert "p_equivalence" not in plain and plain.iloc[0]["verdict"] == NO_EVIDENCE


@settings(max_examples=n_examples(60))
@given(
    st.lists(st.floats(-20, 20), min_size=3, max_size=12),
    st.floats(0.1, 10),
    st.sampled_from([0.01, 0.05, 0.1]),
)
def test_verdicts_are_consistent_with_their_tests(values, margin, alpha):
    diff = np.asarray(values)
    if diff.std(ddof=1) < 1e-6:
        return
    row = with_verdicts(_row(diff), alpha=alpha, margin=margin).iloc[0]
    assert row["verdict"] in WORDS
    test = paired_test(diff)
    if test.p < alpha:
        assert row["verdict"] in (BETTER, WORSE)
    elif row["verdict"] == EQUIVALENT:  # the 1 - 2 alpha interval lies inside ±margin
        se = diff.std(ddof=1) / math.sqrt(diff.size)
        half = sps.t.ppf(1 - alpha, diff.size - 1) * se
        assert -margin < diff.mean() - half and diff.mean() + half < margin
    else:
        assert row["verdict"] == NO_EVIDENCE


def test_bad_margins_are_refused():
    for bad in (0, -1, "1", True, math.inf):
        with pytest.raises(ValueError, match="margin="):
            check_margin(bad)
    assert check_margin(None) is None and check_margin(2) == 2.0
    assert math.isnan(equivalence_p(math.nan, 0.0, 1.0, 5.0, 1.0))


def test_verdict_text_gives_the_interval_in_the_measures_units():
    diff = np.array([3.0, -8.0, 12.0, 1.0, -2.0])
    row = with_verdicts(_row(diff)).iloc[0]
    text = verdict_text(row)
    assert text.startswith("no evidence of a difference: other − same = 1.2 points of error")
    assert f"95 % interval {row['ci_low']:.3g} to {row['ci_high']:.3g}" in text
    auc = with_verdicts(_row(np.array([0.01, 0.02, 0.03]), "auc")).iloc[0]
    assert "of auc (a share, 0 to 1)" in verdict_text(auc)


def test_bayesian_rows_read_their_posterior():
    table = pd.DataFrame(
        {
            "measure": ["error"] * 3,
            "mean_diff": [-4.0, 4.0, 0.1],
            "ci_low": [-6.0, 2.0, -0.3],
            "ci_high": [-2.0, 6.0, 0.5],
            "df": [9.0] * 3,
            "p": [math.nan] * 3,
            "method": ["bayesian"] * 3,
            "p_compare_better": [0.99, 0.001, 0.4],
            "p_reference_better": [0.001, 0.99, 0.3],
        }
    )
    assert list(with_verdicts(table)["verdict"]) == [BETTER, WORSE, NO_EVIDENCE]
    assert with_verdicts(table, margin=1.0)["verdict"].iloc[2] == EQUIVALENT


@pytest.fixture(scope="module")
def toy():
    return sd.load_table(toy_table(240, 3, seed=4), label="y", subset="subset")


@pytest.mark.slow
def test_transfer_and_search_verdicts_never_say_similar(toy):
    with dask.config.set(scheduler="synchronous"):
        matrix = transfer(
            toy, ["featureless", "lda"], n_folds=3, options=RunOptions(progress=False)
        )
        found = search_subsets(toy, "lda", n_folds=3, options=RunOptions(progress=False))
    tests = transfer_pvalues(matrix)
    off = tests[tests["train_subset"] != tests["test_subset"]]
    assert set(off["verdict"]) <= {BETTER, WORSE, NO_EVIDENCE}
    assert (off.loc[off["p"] >= 0.05, "verdict"] == NO_EVIDENCE).all()
    wide = transfer_pvalues(matrix, margin=200.0)  # errors are percents: every cell within
    undecided = wide[(wide["train_subset"] != wide["test_subset"]) & (wide["p"] >= 0.05)]
    assert len(undecided) and (undecided["verdict"] == EQUIVALENT).all()
    assert list(wide.columns[-3:]) == ["margin", "p_equivalence", "verdict"]
    searched = search_pvalues(found)
    assert set(searched["verdict"]) <= {BETTER, WORSE, NO_EVIDENCE}
    with pytest.raises(ValueError, match="margin=-1"):
        search_pvalues(found, margin=-1)
    with pytest.raises(ValueError, match="margin=0"):
        transfer_pvalues(matrix, margin=0)


def test_printed_tables_carry_the_interval_and_the_verdict():
    folds = [1, 2, 3, 4, 5]
    frame = pd.DataFrame(
        {
            "learner": "lr",
            "test_subset": "A",
            "fold": folds * 2,
            "train_type": ["same"] * 5 + ["other"] * 5,
            "error": [10.0, 30.0, 5.0, 20.0, 15.0, 22.0, 25.0, 18.0, 40.0, 19.0],
        }
    )
    ds = frame.set_index(["learner", "test_subset", "fold", "train_type"]).to_xarray()
    text = pvalues_text(ds)
    assert "no evidence of a difference" in text and "ci_low" in text and "similar" not in text
    dims = ("learner", "repeat", "fold")
    cells = xr.Dataset(
        {
            "error": (dims, [[[10.0, 12.0, 11.0]], [[15, 16, 18]]]),
            "n_train": (dims, np.full((2, 1, 3), 1000)),
            "n_test": (dims, np.full((2, 1, 3), 1)),
        },
        coords={"learner": ["tree", "lasso"], "repeat": [1], "fold": [1, 2, 3]},
        attrs={"outer": "cv"},
    )
    assert compare(cells, "lasso", "tree", "error", "paired")["p"].iloc[0] < 0.05
    printed = comparison_text(cells)
    assert "verdict" in printed.splitlines()[1] and "better" in printed
