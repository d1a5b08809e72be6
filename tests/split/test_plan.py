"""The split plan: distinct fits, train types, one subset."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.tree import DecisionTreeClassifier

import soak_dask as sd
from soak_dask import Selection, Term
from soak_dask.run.executor import run_plan
from soak_dask.run.fitting import RunSpec
from soak_dask.run.strategies import Context, OnePass, PartialFit, WholeTrainSet
from soak_dask.split.plan import Fit, build_plan


@pytest.mark.parametrize(
    ("types", "n_splits", "n_fits"),
    [
        ("same", 30, 30),
        ("other", 30, 30),
        ("all", 30, 10),
        ("same,other", 60, 60),
        ("same,all", 60, 40),
        (("same", "other", "all"), 90, 70),
    ],
)
def test_train_type_selections(types, n_splits, n_fits):
    splits, fits = sd.make_plan(["A", "B", "C"], 10, types)
    assert (len(splits), len(fits)) == (n_splits, n_fits)


def test_two_subsets_share_other_and_same():
    splits, _ = sd.make_plan(["A", "B"], 5)
    key = splits.set_index(["test_subset", "fold", "train_type"])["fit_id"]
    for k in range(1, 6):
        assert key["A", k, "other"] == key["B", k, "same"]
        assert key["A", k, "all"] == key["B", k, "all"]


def test_one_subset_is_k_fold():
    splits, fits = sd.make_plan(["only"], 4, ("same", "other", "all"))
    assert list(splits["train_type"].unique()) == ["same"]
    assert len(fits) == 4


def test_bad_train_types():
    with pytest.raises(ValueError, match=r"unknown train_types \['some'\]"):
        sd.make_plan(["A"], 3, ["some"])
    with pytest.raises(ValueError, match="train_types is empty"):
        sd.make_plan(["A"], 3, [])


@given(st.integers(2, 6), st.integers(2, 8))
def test_fit_count_formula(n_subsets, k):
    """3K fits for S=2; 2SK+K for S>2 (same and other per subset, all shared)."""
    subsets = [f"s{i}" for i in range(n_subsets)]
    splits, fits = sd.make_plan(subsets, k)
    assert len(splits) == 3 * n_subsets * k
    assert len(fits) == (3 * k if n_subsets == 2 else 2 * n_subsets * k + k)
    served = fits.explode("test_subsets")
    assert len(served) == len(splits.drop_duplicates(["test_subset", "fit_id"]))


def _kfold(column: str, k: int) -> tuple[Selection, Selection]:
    return (
        Selection((Term(column, (k,), exclude=True),)),
        Selection((Term(column, (k,)),)),
    )


def test_plans_carry_the_other_designs():
    """Repeated K-fold, leave-one-group-out, bootstrap weights, reserved rows and an inner plan
    are plans like SOAK's: one table of distinct fits, blocks and result cells."""
    keep = Selection((Term("reserved", (False,)),))
    rows, tests = [], {}
    for r in (1, 2):  # repeated 3-fold CV on the rows not reserved
        for k in (1, 2, 3):
            train, test = _kfold(f"fold_r{r}", k)
            tests[("cv", r, k)] = test & keep
            rows.append(({"design": "cv", "repeat": r, "fold": k}, Fit(train & keep), ("cv", r, k)))
    for g in ("a", "b"):  # leave one group out
        train, test = Selection((Term("g", (g,), exclude=True),)), Selection((Term("g", (g,)),))
        tests[("logo", g)] = test
        rows.append(
            ({"design": "logo", "repeat": 1, "fold": 1 + (g == "b")}, Fit(train), ("logo", g))
        )
    # bootstrap: row weights from a key column, scored out of bag
    tests["oob"] = Selection((Term("boot_1", (0,)),)) & keep
    rows.append(({"design": "boot", "repeat": 1, "fold": 1}, Fit(keep, weights="boot_1"), "oob"))
    # an inner 3-fold plan inside outer train set 1, twice: one inner fit each
    outer = _kfold("fold_r1", 1)[0] & keep
    for k in (1, 2, 3):
        inner_train, inner_test = _kfold("inner", k)
        tests[("inner", k)] = outer & inner_test
        for where in ("tune", "again"):
            rows.append(
                ({"design": where, "repeat": 1, "fold": k}, Fit(outer & inner_train), ("inner", k))
            )
    coords = {
        "design": ["cv", "logo", "boot", "tune", "again"],
        "repeat": [1, 2],
        "fold": [1, 2, 3],
    }
    plan = build_plan(rows, tests, coords)
    assert len(plan.splits) == 6 + 2 + 1 + 6
    assert len(plan.fits) == 6 + 2 + 1 + 3  # "again" reuses the inner fits of "tune"
    table = plan.table()
    assert table.loc[8, "weights"] == "boot_1"
    assert table.loc[0, "train"] == "fold_r1 != 1 & reserved == False"
    assert table.loc[9, "train"] == "fold_r1 != 1 & reserved == False & inner != 1"
    assert "12 distinct fits" in repr(plan)


def test_one_executor_runs_a_plan_of_another_design():
    """A hand-made plan (K-fold with reserved rows, and a weighted bootstrap fit) runs through
    the same executor as SOAK, and scores as scikit-learn fitted on the same rows."""
    rng = np.random.default_rng(3)
    n = 240
    df = pd.DataFrame(
        {
            "x0": rng.normal(size=n),
            "x1": rng.normal(size=n),
            "s": "all",
            "fold": np.arange(n) % 3 + 1,
            "reserved": np.arange(n) % 5 == 0,
            "boot": rng.poisson(1.0, n),
        }
    )
    df["y"] = np.where(df["x0"] + 0.5 * rng.normal(size=n) > 0, "p", "q")
    keep = Selection((Term("reserved", (False,)),))
    rows, tests = [], {}
    for k in (1, 2, 3):
        train, test = _kfold("fold", k)
        tests[k] = test & keep
        rows.append(({"fold": k}, Fit(train & keep), k))
    tests["reserved"] = Selection((Term("reserved", (True,)),))
    rows.append(({"fold": 4}, Fit(keep, weights="boot"), "reserved"))
    plan = build_plan(rows, tests, {"fold": [1, 2, 3, 4]})
    table = sd.load_table(df, label="y", subset="s", fold="fold", features=["x0", "x1"])
    run = RunSpec(("x0", "x1"), "y", "s", "fold", ("error",), classes=("p", "q"))
    est = DecisionTreeClassifier(max_depth=3, random_state=0)
    data = dd.from_pandas(df, npartitions=3)  # with the key columns the plan reads
    ctx = Context(table, data, plan, {"tree": est}, run)
    records = run_plan(ctx, [OnePass(), PartialFit(), WholeTrainSet()], progress=False)
    got = {r["block"]: r for r in records}
    assert len(got) == 4
    for _, fit in plan.fits.iterrows():
        (block,) = fit["blocks"]
        train = df[fit["train"].mask(df)]
        if fit["weights"]:
            train = train.loc[train.index.repeat(train[fit["weights"]])]
        test = df[plan.blocks.loc[block, "test"].mask(df)]
        model = clone(est).fit(train[["x0", "x1"]], train["y"])
        error = 100 * np.mean(model.predict(test[["x0", "x1"]]) != test["y"])
        assert got[block]["n_train"] == len(train) and got[block]["n_test"] == len(test)
        assert got[block]["error"] == pytest.approx(error)
