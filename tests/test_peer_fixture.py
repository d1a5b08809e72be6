"""Train and test rows equal the reference implementation's (mlr3resampling), split for split."""

from __future__ import annotations

import pandas as pd
import pytest

import soak_dask as sd
from soak_dask.run.engine import _fit_rows
from soak_dask.run.fitting import split_frame

from .conftest import shared_file

FIXTURES = [
    "aztrees3_subset_stratum_K10_sizesm1",
    "aztrees3_subset_stratum_group_K10_sizes0",
]


def _ids(text: str) -> set[int]:
    return {int(v) for v in text.split()}


@pytest.mark.parametrize("fixture", FIXTURES)
def test_splits_equal_reference(aztrees, fixture):
    folds = pd.read_csv(shared_file("mlr3resampling", f"{fixture}_folds.csv"))
    iterations = pd.read_csv(shared_file("mlr3resampling", f"{fixture}_iterations.csv"))
    # Down-sampled train sets are random; the full-size ones must match row for row.
    iterations = iterations[iterations["groups"] == iterations["n.train.groups"]]
    assert len(iterations) == 90
    df = aztrees.assign(fold=folds.sort_values("row_id")["fold"].to_numpy())
    table = sd.load_table(df, label="y", subset="region3", fold="fold", features=["row_id"])
    splits, fits = sd.make_plan(sorted(df["region3"].unique()), 10)
    frames = {
        fit_id: _fit_rows(table.data, table, fit).compute() for fit_id, fit in fits.iterrows()
    }
    plan = splits.set_index(["test_subset", "fold", "train_type"])["fit_id"]
    checked = 0
    for it in iterations.itertuples():
        key = (it[2], it[4], it[3])  # test.subset, test.fold, train.subsets
        fit_id = plan[key]
        train, blocks = split_frame(
            frames[fit_id], fits.loc[fit_id, "fold"], "fold", "region3", [key[0]]
        )
        assert set(train["row_id"]) == _ids(it.train), key
        assert set(blocks[key[0]]["row_id"]) == _ids(it.test), key
        assert len(train) == it.n_train and len(blocks[key[0]]) == it.n_test
        checked += 1
    assert checked == 90


def test_splitter_equals_reference(aztrees):
    fixture = FIXTURES[1]
    folds = pd.read_csv(shared_file("mlr3resampling", f"{fixture}_folds.csv"))
    iterations = pd.read_csv(shared_file("mlr3resampling", f"{fixture}_iterations.csv"))
    iterations = iterations[iterations["groups"] == iterations["n.train.groups"]]
    cv = sd.SameOtherAllCV(aztrees["region3"], fold=folds.sort_values("row_id")["fold"])
    info = cv.split_info()
    got = {
        (r.test_subset, r.fold, r.train_type): (set(train + 1), set(test + 1))
        for r, (train, test) in zip(info.itertuples(), cv.split(aztrees), strict=True)
    }
    for it in iterations.itertuples():
        train, test = got[(it[2], it[4], it[3])]
        assert train == _ids(it.train) and test == _ids(it.test)
