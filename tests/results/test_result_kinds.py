"""Every entry point's result names its kind in ``attrs["design"]``; ``save_results`` and
``open_results`` (alias ``load_results``) round-trip every kind; ``soak report`` renders every
kind; the ``.soak`` accessor dispatches on it."""

from __future__ import annotations

import pandas as pd
import pytest
import xarray as xr

import soak_dask as sd
from soak_dask.app import cli

from ..conftest import toy_table

LEARNERS = ["featureless", "lda"]
RUNS = {
    # One measure: the report draws figures per measure.
    "soak": lambda t: sd.soak(t, LEARNERS, n_folds=3, measures="error", progress=False),
    "evaluate": lambda t: sd.evaluate(t, LEARNERS, outer_folds=3, measures="error", progress=False),
    "transfer": lambda t: sd.transfer(t, LEARNERS, n_folds=3, progress=False),
    "search_subsets": lambda t: sd.search_subsets(t, LEARNERS, n_folds=3, progress=False),
    "split_sensitivity": lambda t: sd.split_sensitivity(
        t, "lda", ratios=(0.5, 0.7), n_repeats=3, n_folds=3, progress=False
    ),
    "compare_sampling": lambda t: sd.compare_sampling(
        t, LEARNERS, methods=["random", "stratified"], n_repeats=3, progress=False
    ),
}
#: The page ``soak report`` writes: one for every kind (results/pages.py).
MAIN = dict.fromkeys(RUNS, "report.html")


@pytest.fixture(scope="module")
def table() -> sd.Table:
    return sd.load_table(toy_table(n=240, n_subsets=3, seed=3), label="y", subset="subset")


@pytest.mark.parametrize("kind", list(RUNS))
def test_save_open_report_every_kind(table, kind, tmp_path, capsys):
    res = RUNS[kind](table)
    assert res.attrs["design"] == kind and res.soak.kind == kind
    store = sd.save_results(res, tmp_path / f"{kind}.zarr")
    back = sd.load_results(store)
    assert back.attrs["design"] == kind
    xr.testing.assert_equal(back, res)  # values, dims and coordinates
    assert isinstance(back.soak.summary(), pd.DataFrame)
    assert cli.main(["report", str(store), "--out", str(tmp_path / "report")]) == 0
    printed = capsys.readouterr().out
    assert (tmp_path / "report" / MAIN[kind]).is_file()
    assert printed.strip().endswith(MAIN[kind])


def test_open_results_refuses_an_unknown_kind(tmp_path):
    ds = sd.from_dataframe(
        pd.DataFrame(
            {"learner": "a", "test_subset": "s", "fold": [1, 2], "train_type": "same", "error": 1.0}
        ),
        design="tomorrow",
    )
    store = sd.save_results(ds, tmp_path / "r.zarr")
    with pytest.raises(ValueError, match="unknown kind design='tomorrow'"):
        sd.open_results(store)


def test_stores_of_the_older_search_name_still_open(table, tmp_path):
    res = RUNS["search_subsets"](table).assign_attrs(design="search")
    back = sd.open_results(sd.save_results(res, tmp_path / "old.zarr"))
    assert back.soak.kind == "search_subsets" and not back.soak.pvalues().empty
