"""Train and test rows equal the reference implementation's (mlr3resampling), split for split."""

from __future__ import annotations

import pandas as pd
import pytest

import soak_dask as sd

from ..conftest import plan_rows, shared_file

FIXTURES = [
    "aztrees3_subset_stratum_K10_sizesm1",
    "aztrees3_subset_stratum_group_K10_sizes0",
]


def _ids(text: str) -> set[int]:
    return {int(v) for v in text.split()}


@pytest.mark.slow
@pytest.mark.parametrize("fixture", FIXTURES)
def test_splits_equal_reference(aztrees, fixture):
    folds = pd.read_csv(shared_file("mlr3resampling", f"{fixture}_folds.csv"))
    iterations = pd.read_csv(shared_file("mlr3resampling", f"{fixture}_iterations.csv"))
    # Down-sampled train sets are random; the full-size ones must match row for row.
    iterations = iterations[iterations["groups"] == iterations["n.train.groups"]]
    assert len(iterations) == 90
    df = aztrees.assign(fold=folds.sort_values("row_id")["fold"].to_numpy())
    table = sd.load_table(df, label="y", subset="region3", fold="fold", features=["row_id"])
    plan = sd.SameOtherAll(10).plan_for(sorted(df["region3"].unique()), subset="region3")
    rows = plan_rows(table, plan)
    cells = plan.splits.set_index(["test_subset", "fold", "train_type"])
    checked = 0
    for it in iterations.itertuples():
        key = (it[2], it[4], it[3])  # test.subset, test.fold, train.subsets
        train, blocks = rows[cells.loc[key, "fit_id"]]
        test = blocks[cells.loc[key, "block"]]
        assert set(train["row_id"]) == _ids(it.train), key
        assert set(test["row_id"]) == _ids(it.test), key
        assert len(train) == it.n_train and len(test) == it.n_test
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
