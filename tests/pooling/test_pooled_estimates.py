"""The fold mean ± SD beside the pooled (row-weighted) estimate and the fold sizes, in the
transfer matrix and the subset search; the banner where the two disagree; the shift summaries.

On AZtrees (polygons as groups, the 4 regions of ``region4``) the featureless learner's error
on SE is 70.6 % as a mean over folds but 2.43 % of SE's pixels pooled: SE's few *Tree* polygons
make tiny test folds of *Tree* pixels only, each as heavy in the mean as the fold of 1,484.
"""

from __future__ import annotations

import html

import dask
import numpy as np
import pandas as pd
import pytest
import xarray as xr

import soak_dask as sd
from soak_dask import RunOptions
from soak_dask.pooling import (
    search_subsets,
    search_summary,
    transfer,
    transfer_summary,
    transfer_table,
    transfer_text,
)
from soak_dask.results.estimates import estimate_banner, estimates_differ, fold_estimates
from soak_dask.results.shift import shift_lines, shift_summary
from soak_dask.results.summaries import summary

from ..conftest import AZTREES_FEATURES, shared_file, toy_table


@pytest.fixture(autouse=True)
def synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


@pytest.fixture(scope="module")
def toy_runs():
    frame = toy_table(300, 3, seed=3, n_groups=4)
    table = sd.load_table(frame, label="y", subset="subset", group="group")
    with dask.config.set(scheduler="synchronous"):
        matrix = transfer(
            table, ["featureless", "lda"], n_folds=3, options=RunOptions(progress=False)
        )
        found = search_subsets(table, "lda", n_folds=3, options=RunOptions(progress=False))
    return matrix, found


def test_pooled_estimate_weights_every_test_row_once(toy_runs):
    matrix, found = toy_runs
    cells = transfer_summary(matrix).set_index(["learner", "train_subset", "test_subset"])
    e, n = matrix["error"], matrix["n_test"]
    for key in [("lda", "s0", "s1"), ("featureless", "s2", "s2")]:
        where = dict(zip(("learner", "train_subset", "test_subset"), key, strict=True))
        errors, rows = e.sel(where).values, n.sel(where).values
        row = cells.loc[key]
        assert row["weighted_mean"] == pytest.approx((errors * rows).sum() / rows.sum())
        assert row["mean"] == pytest.approx(errors.mean())
        assert row["sd"] == pytest.approx(errors.std(ddof=1))
        assert (row["n_test_min"], row["n_test_max"]) == (rows.min(), rows.max())
    # One rule: SOAK's summary gives the same numbers for the diagonal (SOAK's same).
    same = matrix.sel(learner=["lda"], train_subset="s1", test_subset=["s1"], drop=True)
    soaked = summary(same.expand_dims(train_type=["same"]), "error").iloc[0]
    assert soaked["weighted_mean"] == pytest.approx(cells.loc[("lda", "s1", "s1"), "weighted_mean"])
    estimates = search_summary(found)
    assert len(estimates) == 3 * 3 and set(estimates["train_set"]) == {"same", "greedy", "all"}
    greedy = found["error"].sel(learner="lda", test_subset="s0", train_set="greedy").values
    rows = found["n_test"].sel(learner="lda", test_subset="s0", train_set="greedy").values
    pick = estimates.query("test_subset == 's0' and train_set == 'greedy'").iloc[0]
    assert pick["weighted_mean"] == pytest.approx((greedy * rows).sum() / rows.sum())


def test_the_rule_flags_cells_apart_by_more_than_the_sd_or_folds_over_twice_apart():
    flags = estimates_differ(
        np.array([10.0, 10, 10, 10]),
        np.array([2.0, 2, 2, np.nan]),
        np.array([11.0, 13, 11, 11]),
        np.array([100, 100, 100, 100]),
        np.array([150, 150, 201, 150]),
    )
    assert flags.tolist() == [False, True, True, False]
    values = xr.DataArray([[1.0, 2.0, 3.0]], dims=("cell", "fold"), coords={"cell": ["a"]})
    agreeing = fold_estimates(values, xr.DataArray([[10, 10, 10]], dims=("cell", "fold")))
    assert estimate_banner(agreeing, "{cell}", "error") == ""
    no_sizes = fold_estimates(values, None)
    assert np.isnan(no_sizes["weighted_mean"].iloc[0]) and not no_sizes["estimates_differ"].iloc[0]


def test_shift_summary_ignores_empty_subsets_and_gives_the_gap():
    dims = ("learner", "train_subset", "test_subset", "fold")
    error = np.array([[[[5.0, 7.0], [20.0, 30.0], [np.nan, np.nan]],
                       [[15.0, 25.0], [1.0, 3.0], [np.nan, np.nan]],
                       [[9.0, 9.0], [9.0, 9.0], [np.nan, np.nan]]]])  # fmt: skip
    n_test = np.where(np.isnan(error), 0, 10)
    subsets = ["A", "B", "C"]
    ds = xr.Dataset(
        {"error": (dims, error), "n_test": (dims, n_test)},
        coords={"learner": ["m"], "train_subset": subsets, "test_subset": subsets, "fold": [1, 2]},
        attrs={"measures": ["error"], "design": "transfer"},
    )
    table = shift_summary(ds).set_index(["train_type", "test_subset"])
    assert table.loc[("same", "A"), "weighted_mean"] == 6.0
    assert table.loc[("same", "B"), "weighted_mean"] == 2.0
    assert table.loc[("same", "C"), "n_test"] == 0 and not table.loc[("same", "C"), "worst"]
    assert table.loc[("same", "A"), "worst"]  # C, empty, is ignored
    # other of A: the mean of B -> A (20) and C -> A (9); its gap to same (6) is 8.5; of B:
    # (25 + 9) / 2 - 2 = 15.
    assert table.loc[("other", "A"), "weighted_mean"] == 14.5
    assert table.loc[("other", "A"), "gap"] == 8.5 and table.loc[("other", "B"), "gap"] == 15.0
    assert table.loc[("other", "A"), "worst"] is np.False_
    line = shift_lines(shift_summary(ds))[0]
    assert "worst subset with its own model: A (error 6 pooled, 20 test rows)" in line
    assert line.endswith("mean +11.8")  # C has no rows, no gap
    with pytest.raises(ValueError, match="shift_summary reads SOAK results"):
        shift_summary(ds.rename({"train_subset": "other_dim"}))


def test_shift_summary_of_a_soak_result():
    frame = pd.DataFrame(
        {
            "learner": "lr",
            "test_subset": ["A"] * 4 + ["B"] * 4,
            "fold": [1, 2] * 4,
            "train_type": (["same"] * 2 + ["other"] * 2) * 2,
            "error": [10.0, 20.0, 30.0, 10.0, 4.0, 2.0, 8.0, 6.0],
            "n_test": [10, 30, 10, 30, 50, 50, 50, 50],
        }
    )
    ds = frame.set_index(["learner", "test_subset", "fold", "train_type"]).to_xarray()
    ds.attrs["measures"] = ["error"]
    table = shift_summary(ds).set_index(["train_type", "test_subset"])
    assert table.loc[("same", "A"), "weighted_mean"] == 17.5 and table.loc[("same", "A"), "worst"]
    assert table.loc[("other", "A"), "gap"] == pytest.approx(15.0 - 17.5)
    assert table.loc[("other", "B"), "gap"] == pytest.approx(7.0 - 3.0)


@pytest.fixture(scope="module")
def aztrees_runs():
    path = shared_file("aztrees.parquet")
    table = sd.load_table(
        path, label="y", subset="region4", group="polygon", features=AZTREES_FEATURES
    )
    with dask.config.set(scheduler="synchronous"), pytest.warns(UserWarning):
        matrix = transfer(
            table, "featureless", n_folds=10, seed=1, options=RunOptions(progress=False)
        )
        found = search_subsets(
            table, "featureless", n_folds=10, seed=1, options=RunOptions(progress=False)
        )
    return matrix, found


@pytest.mark.slow
def test_aztrees_fold_mean_and_pooled_estimate_of_se(aztrees_runs):
    matrix, found = aztrees_runs
    cells = transfer_summary(matrix).set_index(["train_subset", "test_subset"])
    se = cells.loc[("SE", "SE")]
    assert round(se["mean"], 1) == 70.6  # the mean of the fold errors, as printed before
    # Pooled: SE's 59 Tree pixels of 2,432, all misclassified by the majority class.
    assert se["weighted_mean"] == pytest.approx(100 * 59 / 2432)
    assert (se["n_test_min"], se["n_test_max"]) == (5, 1484) and se["estimates_differ"]
    assert int(matrix["n_test"].sel(train_subset="SE", test_subset="SE").sum()) == 2432
    pooled = transfer_table(matrix, "featureless", estimate="pooled")
    assert pooled.loc["SE", "SE"] == "2.43 [5-1,484]"
    assert transfer_table(matrix, "featureless").loc["SE", "SE"] == "70.6 ± 47 (same)"
    printed = transfer_text(matrix, found)
    banners = [line for line in printed.splitlines() if line.startswith("NOTE error")]
    assert len(banners) == 2  # the matrix's and the search's, each naming its table
    assert banners[0].startswith("NOTE error (transfer matrix): fold mean and pooled")
    assert banners[1].startswith("NOTE error (search): fold mean and pooled")
    assert "pooled 2.43, test folds of 5 to 1,484 rows" in banners[0]
    assert "the verdicts rest on the fold mean" in banners[0]
    assert "worst subset with its own model: SW (error 74.6 pooled, 497 test rows)" in printed
    searched = search_summary(found).set_index(["test_subset", "train_set"])
    assert searched.loc[("SE", "same"), "weighted_mean"] == pytest.approx(100 * 59 / 2432)
    assert round(searched.loc[("SE", "same"), "mean"], 1) == 70.6


@pytest.mark.slow
def test_the_search_s_own_page_and_the_transfer_report_show_its_pooled_estimates(
    aztrees_runs, tmp_path
):
    """``soak report`` of a search store and ``soak transfer``'s report draw one search
    section: each train set's fold mean beside its pooled estimate, and the line saying where
    they disagree (SE's same: 70.6 against 2.43)."""
    from soak_dask.pooling.kind import SEARCH_SUBSETS
    from soak_dask.pooling.report import write_transfer_report
    from soak_dask.pooling.search_page import SEARCH_CELL, search_page
    from soak_dask.results.pages import write_page

    matrix, found = aztrees_runs
    banner = estimate_banner(search_summary(found), SEARCH_CELL, "error")
    assert banner.startswith("NOTE error: fold mean and pooled")
    pages = {
        "own": write_page(search_page(found), tmp_path / "search"),
        "transfer": write_transfer_report(matrix, tmp_path / "transfer", search=found),
    }
    written = {}
    for name, page in pages.items():
        text = page.read_text()
        section = text[text.index('<h2 id="search">') :]
        assert f"<li>{html.escape(banner)}</li>" in section, name
        assert "Fold mean ± SD and pooled estimate of each train set" in section, name
        estimates = pd.read_csv(page.parent / "search_estimates.csv")
        same_se = estimates.query("train_set == 'same' and test_subset == 'SE'").iloc[0]
        assert round(same_se["mean"], 1) == 70.6, name
        assert same_se["weighted_mean"] == pytest.approx(100 * 59 / 2432), name
        written[name] = {p.name for p in page.parent.glob("search*")} | {"pool_per_fold.csv"}
    assert written["own"] == written["transfer"]
    printed = SEARCH_SUBSETS.text(found)  # what soak report prints of the search store
    assert printed.endswith(banner) and "fold mean ± SD and pooled estimate" in printed
    assert "no evidence of a difference" in printed  # the verdicts, as transfer_text's


def test_soak_run_prints_the_note_under_its_table():
    from soak_dask.results.text import results_text

    frame = pd.DataFrame(
        {
            "learner": "lr",
            "test_subset": "A",
            "fold": [1, 2, 3] * 2,
            "train_type": ["same"] * 3 + ["other"] * 3,
            "error": [100.0, 0.0, 100.0, 90.0, 5.0, 80.0],
            "n_test": [5, 1000, 5] * 2,
        }
    )
    ds = frame.set_index(["learner", "test_subset", "fold", "train_type"]).to_xarray()
    text = results_text(ds)
    assert "NOTE error: fold mean and pooled estimate disagree" in text
    assert "most at lr same on A: fold mean 66.7 ± 57.7, pooled 0.99" in text
    assert text.endswith("the pooled estimate counts every test row once")
    plain = results_text(ds.sel(train_type=["same"]))
    assert "nothing is tested here" in plain.splitlines()[-1]
    even = ds.assign(n_test=ds["n_test"] * 0 + 10, error=ds["error"] * 0 + 3)
    assert "NOTE" not in results_text(even.sel(train_type=["same"]))
