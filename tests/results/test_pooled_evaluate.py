"""Issue 40, item 1, for ``evaluate``: each learner's mean over the resampling cells beside the
pooled estimate (every test row once) and the test rows of a cell, in ``evaluation_summary``,
the printout and the report; one note where the two disagree, saying the verdicts rest on the
mean over cells."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import soak_dask as sd
from soak_dask.results.estimates import CELL_MEAN_BASIS, evaluation_banner
from soak_dask.results.text import evaluation_text

from ..conftest import toy_table


def run(groups: bool) -> sd.Table:
    df = toy_table(n=300, n_subsets=1, seed=2)
    # One group of 200 rows and 20 of 5: group folds of very different sizes.
    df["g"] = np.where(np.arange(300) < 200, 0, 1 + np.arange(300) % 20)
    table = sd.load_table(df, label="y", group="g" if groups else None, exclude=["g"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the uneven-folds warning of the run itself
        return sd.evaluate(
            table, ["featureless", "lda"], outer_folds=4, options=sd.RunOptions(progress=False)
        )


@pytest.fixture(scope="module")
def uneven():
    return run(groups=True)


def test_pooled_estimate_weights_each_cell_by_its_test_rows(uneven):
    table = sd.evaluation_summary(uneven, ["error"]).set_index("learner")
    folds = sd.by_fold(uneven, ["error"])
    for learner, cells in folds.groupby("learner"):
        pooled = (cells["error"] * cells["n_test"]).sum() / cells["n_test"].sum()
        assert table.loc[learner, "weighted_mean"] == pytest.approx(pooled)
        assert table.loc[learner, "n_test_min"] == cells["n_test"].min()
        assert table.loc[learner, "n_test_max"] == cells["n_test"].max()
        assert table.loc[learner, "mean"] == pytest.approx(cells["error"].mean())


def test_uneven_cells_get_one_note_naming_the_basis(uneven):
    banner = evaluation_banner(uneven, "error")
    assert banner.startswith("NOTE error: fold mean and pooled estimate disagree")
    assert banner.endswith(CELL_MEAN_BASIS)
    printed = evaluation_text(uneven)
    assert "weighted_mean" in printed.splitlines()[1]
    # One note, for the first measure (the one the learners are compared on first).
    notes = [line for line in printed.splitlines() if line.startswith("NOTE")]
    first = str(sd.evaluation_summary(uneven)["measure"].iloc[0])
    assert notes == [evaluation_banner(uneven, first)] and notes[0]


def test_even_cells_get_no_note():
    even = run(groups=False)
    assert evaluation_banner(even, "error") == ""
    assert "NOTE" not in evaluation_text(even)
