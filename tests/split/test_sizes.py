"""Down-sampled train sizes (sizes/ratio/size_seeds), as mlr3resampling's SizesCV."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import soak_dask as sd
from soak_dask.split.sizes import downsample

from ..conftest import shared_file, toy_table


def test_plan_sizes_equal_reference(aztrees):
    name = "aztrees3_subset_stratum_group_K10_sizes0"
    folds = pd.read_csv(shared_file("mlr3resampling", f"{name}_folds.csv"))
    ref = pd.read_csv(shared_file("mlr3resampling", f"{name}_iterations.csv"))
    df = aztrees.assign(fold=folds.sort_values("row_id")["fold"].to_numpy())
    subset_groups = df.groupby("region3", observed=True)["polygon"].nunique()
    plan = sd.SameOtherAll(10, sizes=0).plan_for(sorted(df["region3"].unique()), subset_groups)
    sized = plan.splits.join(plan.fits["n_groups"], on="fit_id")
    small = sized[(sized["train_size"] == "smallest") & (sized["n_groups"] > 0)]
    ref_small = ref[ref["groups"] != ref["n.train.groups"]]
    got = small.set_index(["test_subset", "fold", "train_type"])["n_groups"].sort_index()
    want = ref_small.set_index(["test.subset", "test.fold", "train.subsets"])[
        "n.train.groups"
    ].sort_index()
    assert len(got) == len(want) == 60
    np.testing.assert_array_equal(got.to_numpy(), want.to_numpy())
    assert list(got.index) == list(want.index)


def test_downsample_keeps_groups_and_label_shares():
    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(200), rng.integers(1, 6, 200))
    label = np.where(groups % 4 == 0, "tree", "other")
    train = pd.DataFrame({"g": groups, "y": label, "x": rng.normal(size=len(groups))})
    a = downsample(train, 60, group="g", label="y", seed=1, sample=1)
    assert a["g"].nunique() == 60
    per_group = train.groupby("g").size()
    assert (a.groupby("g").size() == per_group[a["g"].unique()]).all()  # whole groups
    share = a.drop_duplicates("g")["y"].eq("tree").mean()
    assert share == pytest.approx(0.25, abs=1 / 60)
    again = downsample(train, 60, group="g", label="y", seed=1, sample=1)
    pd.testing.assert_frame_equal(a, again)
    other = downsample(train, 60, group="g", label="y", seed=1, sample=2)
    assert set(other["g"]) != set(a["g"])
    rows = downsample(train, 100, group=None, label="y", seed=3, sample=1)
    assert len(rows) == 100 and rows.index.is_monotonic_increasing


@pytest.mark.slow
def test_soak_with_sizes_compares_at_equal_size():
    table = sd.load_table(toy_table(n=360, n_subsets=3, seed=3), label="y", subset="subset")
    res = sd.soak(
        table,
        "featureless",
        n_folds=3,
        sizes=1,
        ratio=0.5,
        size_seeds=2,
        options=sd.RunOptions(progress=False),
    )
    assert list(res["train_size"].values) == ["full", "smallest", "smallest*0.5"]
    assert res.sizes["sample"] == 2
    n = res["n_train"].sel(learner="featureless")
    smallest = n.sel(train_size="smallest")
    # Without groups sizes count rows: ⌊rows of the subset × (K−1)/K⌋ at "smallest".
    rows = toy_table(n=360, n_subsets=3, seed=3)["subset"].value_counts()
    for subset in res["test_subset"].values:
        target = rows[subset] * 2 // 3
        cell = smallest.sel(test_subset=subset)
        assert (cell.sel(train_type=["other", "all"]) == target).all()
        assert (abs(cell.sel(train_type="same") - target) <= 3).all()  # same is the full set
        half = n.sel(train_size="smallest*0.5", test_subset=subset, train_type=["other", "all"])
        assert (half == target // 2).all()
    # Full size does not depend on the down-sample.
    full = res["error"].sel(train_size="full")
    assert (full.sel(sample=1) == full.sel(sample=2)).all()
    p = res.soak.pvalues("error")
    assert list(p.columns[:3]) == ["learner", "test_subset", "train_size"]
    assert len(p) == 3 * 3 * 2
    with pytest.raises(ValueError, match="ratio=1.5"):
        sd.soak(
            table,
            "featureless",
            n_folds=3,
            sizes=0,
            ratio=1.5,
            options=sd.RunOptions(progress=False),
        )
