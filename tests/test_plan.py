"""The split plan: distinct fits, train types, one subset."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import soak_dask as sd


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
