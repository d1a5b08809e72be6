"""One p-value table schema for every paired test (``schema.PAIRED_TEST_COLUMNS``): SOAK's
``pvalues``, evaluate's ``compare`` and ``comparisons``, the transfer matrix's
``transfer_pvalues`` and ``paired_pvalues``, the subset search's ``search_pvalues``; and the
evaluation report's table of what the inner searches chose."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import stats as sps

from soak_dask.pooling.matrix import paired_pvalues, transfer_from_soak, transfer_pvalues
from soak_dask.pooling.search import search_pvalues
from soak_dask.results.comparisons import compare, comparisons
from soak_dask.results.paired_tests import pvalues
from soak_dask.results.summaries import nesting_choices
from soak_dask.schema import PAIRED_TEST_COLUMNS

SCHEMA = list(PAIRED_TEST_COLUMNS)
K = 5
RNG = np.random.default_rng(3)


def soak_result() -> xr.Dataset:
    """Two learners, two subsets, K folds, same/other/all, with train and test rows."""
    dims = ("learner", "test_subset", "fold", "train_type")
    error = 20 + RNG.normal(size=(2, 2, K, 3)) + np.array([0.0, 3.0, 1.0])
    ds = xr.Dataset(
        {"error": (dims, error), "n_train": (dims, np.full(error.shape, 80.0))},
        coords={
            "learner": ["lr", "tree"],
            "test_subset": ["A", "B"],
            "fold": np.arange(1, K + 1),
            "train_type": ["same", "other", "all"],
        },
        attrs={"measures": ["error"], "design": "soak"},
    )
    return ds.assign(n_test=xr.full_like(ds["error"], 20.0))


def evaluate_result() -> xr.Dataset:
    dims = ("learner", "repeat", "fold")
    error = 10 + RNG.normal(size=(3, 2, K)) + np.array([0.0, 1.0, 2.0])[:, None, None]
    return xr.Dataset(
        {
            "error": (dims, error),
            "n_train": (dims, np.full(error.shape, 80.0)),
            "n_test": (dims, np.full(error.shape, 20.0)),
        },
        coords={"learner": ["a", "b", "c"], "repeat": [1, 2], "fold": np.arange(1, K + 1)},
        attrs={"measures": ["error"], "design": "evaluate", "outer": "repeated_cv"},
    )


def search_result() -> xr.Dataset:
    dims = ("learner", "test_subset", "fold", "train_set")
    error = 15 + RNG.normal(size=(1, 2, K, 3))
    return xr.Dataset(
        {"error": (dims, error)},
        coords={
            "learner": ["lr"],
            "test_subset": ["A", "B"],
            "fold": np.arange(1, K + 1),
            "train_set": ["same", "greedy", "all"],
        },
        attrs={"design": "search_subsets", "search_measure": "error"},
    )


def paired_tables() -> dict[str, tuple[pd.DataFrame, list[str]]]:
    """Every paired-test function's table and its design key columns."""
    soak = soak_result()
    ev = evaluate_result()
    soak2 = soak.sel(train_type=["same", "other"])
    values = soak2["error"]
    return {
        "pvalues": (pvalues(soak), ["learner", "test_subset"]),
        "pvalues corrected": (pvalues(soak, method="corrected"), ["learner", "test_subset"]),
        "compare": (compare(ev, "a", "b"), []),
        "compare bayesian": (compare(ev, "a", "b", method="bayesian"), []),
        "comparisons": (comparisons(ev), []),
        "transfer_pvalues": (
            transfer_pvalues(transfer_from_soak(soak2)),
            ["learner", "train_subset", "test_subset"],
        ),
        "paired_pvalues": (
            paired_pvalues(values.sel(train_type="same"), values.sel(train_type="other"), "error"),
            ["learner", "test_subset"],
        ),
        "search_pvalues": (search_pvalues(search_result()), ["learner", "test_subset"]),
    }


TABLES = paired_tables()


@pytest.mark.parametrize("name", list(TABLES))
def test_every_paired_test_returns_the_schema_after_its_keys(name: str) -> None:
    table, keys = TABLES[name]
    columns = list(table.columns)
    assert columns[: len(keys)] == keys, name
    assert columns[len(keys) : len(keys) + len(SCHEMA)] == SCHEMA, name
    assert table["method"].isin(["paired", "corrected", "bayesian", "mcnemar"]).all()
    assert table["note"].map(type).eq(str).all() and table["reason"].map(type).eq(str).all()


@pytest.mark.parametrize("name", list(TABLES))
def test_mean_diff_is_compare_minus_reference_and_p_is_the_named_test(name: str) -> None:
    table, _ = TABLES[name]
    tested = table[table["reason"] == ""]
    assert len(tested)
    # With equal pairs, the mean of the differences is the difference of the means.
    np.testing.assert_allclose(
        tested["mean_diff"], tested["compare_mean"] - tested["reference_mean"], atol=1e-9
    )
    inside = (tested["ci_low"] <= tested["mean_diff"]) & (tested["mean_diff"] <= tested["ci_high"])
    assert inside.all(), name
    paired = tested[tested["method"] == "paired"]
    t = paired["mean_diff"] / (paired["sd_diff"] / np.sqrt(paired["n"]))
    np.testing.assert_allclose(paired["statistic"], t, rtol=1e-9)
    np.testing.assert_allclose(paired["p"], 2 * sps.t.sf(np.abs(t), paired["n"] - 1), rtol=1e-9)


def test_the_soak_and_evaluate_tests_agree_on_one_pair_of_columns() -> None:
    """The same differences tested by pvalues (other − same) and by compare (a − b) give the
    same row of the schema."""
    full = soak_result()
    soak = full.sel(learner="lr", test_subset="A", drop=True)
    cells = soak["error"].sel(train_type=["other", "same"]).rename(train_type="learner")
    ev = cells.expand_dims(repeat=[1]).transpose("learner", "repeat", "fold").to_dataset()
    ev = ev.assign_coords(learner=["other", "same"]).assign_attrs(measures=["error"])
    by_compare = compare(ev, "other", "same", "error", "paired").iloc[0]
    by_soak = pvalues(full, compare="other").iloc[0]
    shared = ["reference", "compare", "measure", "n", "mean_diff", "sd_diff", "ci_low", "ci_high"]
    shared += ["statistic", "df", "p", "method"]
    for column in shared:
        got, want = by_compare[column], by_soak[column]
        if isinstance(want, str):
            assert (column, got) == (column, want)
        else:
            assert got == pytest.approx(want, rel=1e-12), column


# --- the evaluation report's choices ------------------------------------------------------


def nested_result() -> xr.Dataset:
    dims = ("learner", "repeat", "fold")
    chosen = [[[json.dumps({"C": c, "penalty": "l2"}) for c in (0.1, 1.0, 10.0)]]]
    return xr.Dataset(
        {
            "error": (dims, [[[10.0, 11.0, 12.0]]]),
            "fit_seconds": (dims, [[[0.1, 0.1, 0.1]]]),
            "predict_seconds": (dims, [[[0.01, 0.01, 0.01]]]),
            "chosen": (dims, chosen),
            "inner_scheme": (dims, [[["3-fold"] * 3]]),
            "n_features_kept": (dims, [[[4.0, 5.0, 4.0]]]),
            "final_chosen": ("learner", [json.dumps({"C": 1.0, "penalty": "l2"})]),
            "final_inner_scheme": ("learner", ["5-fold"]),
            "final_n_features_kept": ("learner", [5.0]),
        },
        coords={"learner": ["lr"], "repeat": [1], "fold": [1, 2, 3]},
        attrs={"design": "evaluate", "outer": "cv", "measures": ["error"]},
    )


def test_nesting_choices_spreads_each_choice_into_columns() -> None:
    table = nesting_choices(nested_result())
    assert list(table.columns) == [
        "learner", "model", "repeat", "fold", "C", "penalty", "n_features_kept", "inner_scheme",
    ]  # fmt: skip
    assert table["model"].tolist() == ["fold"] * 3 + ["final"]
    assert table["C"].tolist() == [0.1, 1.0, 10.0, 1.0]
    assert table["n_features_kept"].tolist() == [4, 5, 4, 5]
    assert table["inner_scheme"].tolist() == ["3-fold"] * 3 + ["5-fold"]
    assert table.loc[3, ["repeat", "fold"]].isna().all()
    assert nesting_choices(nested_result()[["error"]]).empty  # no nesting: no rows


def test_evaluation_report_shows_the_choices_as_a_table(tmp_path) -> None:
    from soak_dask.results.evaluation_report import write_evaluation_report

    page = write_evaluation_report(nested_result(), tmp_path / "rep").read_text()
    notes = page[page.index('class="notes"') : page.index("<nav>")]
    assert "{" not in notes and "choices" in notes  # no raw JSON in the notes, a pointer
    table = page[page.index('id="choices"') :]
    assert "<th>C</th>" in table and "<th>penalty</th>" in table and "<td>final</td>" in table
    got = pd.read_csv(tmp_path / "rep" / "choices.csv")
    assert got["C"].tolist() == [0.1, 1.0, 10.0, 1.0]
