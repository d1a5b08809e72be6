"""The conservative Z test (Nadeau and Bengio 2003): its formula, the pairs of halves
``evaluate(..., inference="con_z")`` records, and ``compare(method="con_z")`` on them."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import soak_dask as sd
from soak_dask.results.comparisons import MEASURED, compare, level_note, recommended_method
from soak_dask.run.halves import check_inference, half_seed, halves
from soak_dask.stats.mean_tests import con_z_test


def _toy_table(n: int = 120) -> sd.Table:
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x1": rng.normal(size=n), "x2": rng.normal(size=n)})
    df["y"] = np.where(df["x1"] + rng.normal(size=n) > 0, "a", "b")
    return sd.load_table(df, label="y", features=["x1", "x2"])


def test_con_z_is_nadeau_bengios_formula_by_hand() -> None:
    halves_ = np.array([[1.0, 3.0], [2.0, 2.0], [0.0, 1.0], [4.0, 1.0]])
    r = con_z_test(1.5, halves_)
    sigma2 = (4.0 + 0.0 + 1.0 + 9.0) / (2 * 4)  # Σ (μ̂_r1 − μ̂_r2)² / (2R)
    z = 1.5 / math.sqrt(sigma2)
    assert r.statistic == pytest.approx(z)
    assert r.p == pytest.approx(math.erfc(abs(z) / math.sqrt(2)))  # 2 (1 − Φ(|z|))
    assert r.df == math.inf
    half = 1.959963984540054 * math.sqrt(sigma2)
    assert (r.ci_low, r.ci_high) == pytest.approx((1.5 - half, 1.5 + half))


@pytest.mark.parametrize("shape", [(1, 2), (3, 3), (4,)])
def test_con_z_refuses_other_than_pairs_of_halves(shape: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match=r"\(R, 2\) array .* R >= 2"):
        con_z_test(0.0, np.ones(shape))


@pytest.mark.parametrize(
    ("inference", "repeats", "match"),
    [
        (None, 3, "inference_repeats=3 has no effect without inference"),
        ("con_z", 1, "inference_repeats=1: need an integer of at least 2"),
        ("con_z", 2.5, "inference_repeats=2.5"),
        ("bogus", None, "inference='bogus'"),
    ],
)
def test_inference_options_refused_naming_the_option(inference, repeats, match) -> None:
    with pytest.raises(ValueError, match=match):
        check_inference(inference, repeats)
    with pytest.raises(ValueError, match=match):  # before any fit
        sd.evaluate(
            _toy_table(),
            "lr",
            inference=inference,
            inference_repeats=repeats,
            options=sd.RunOptions(progress=False),
        )


def test_inference_defaults() -> None:
    assert check_inference(None, None) is None
    assert check_inference("con_z", None) == 10
    assert check_inference("con_z", 4) == 4


def test_same_seed_draws_the_same_disjoint_halves() -> None:
    table = _toy_table()
    rows = {}
    for seed in (half_seed(1, 1), half_seed(1, 1), half_seed(1, 2)):
        first, second = (h.data.compute() for h in halves(table, seed))
        assert not set(first.index) & set(second.index)
        assert len(first) + len(second) == 120 and abs(len(first) - len(second)) <= 1
        rows.setdefault(seed, []).append(sorted(first.index))
    assert len(rows) == 2 and rows[half_seed(1, 1)][0] == rows[half_seed(1, 1)][1]
    assert rows[half_seed(1, 1)][0] != rows[half_seed(1, 2)][0]


@pytest.fixture(scope="module")
def with_halves() -> xr.Dataset:
    from sklearn.linear_model import LogisticRegression
    from sklearn.tree import DecisionTreeClassifier

    learners = {"lr": LogisticRegression(), "tree": DecisionTreeClassifier(random_state=0)}
    return sd.evaluate(
        _toy_table(),
        learners,
        inference="con_z",
        inference_repeats=3,
        options=sd.RunOptions(progress=False),
    )


@pytest.mark.slow
def test_evaluate_records_the_halves_and_compare_tests_them(with_halves: xr.Dataset) -> None:
    ds = with_halves
    assert ds["con_z_error"].dims == ("learner", "inference_repeat", "half")
    assert ds["con_z_error"].shape == (2, 3, 2)
    assert ds.attrs["inference"] == "con_z" and ds.attrs["inference_repeats"] == 3
    assert np.isfinite(ds["con_z_error"].values).all()
    row = compare(ds, "lr", "tree", "error", "con_z").iloc[0]
    assert row["method"] == "con_z" and row["reason"] == ""
    # 3 pairs of halves, each half a 5-fold run of both learners: 3 × 2 × 5 × 2 fits.
    assert row["extra_fits"] == ds.attrs["inference_fits"] == 60
    assert row["level"] == MEASURED["cv", "con_z"][0]
    assert math.isfinite(row["p"]) and row["ci_low"] < row["mean_diff"] < row["ci_high"]
    # The test of the full-data estimate on the recorded halves' differences, by hand.
    diff = ds["con_z_error"].sel(learner="lr") - ds["con_z_error"].sel(learner="tree")
    sigma = math.sqrt(float(((diff.sel(half=1) - diff.sel(half=2)) ** 2).sum()) / 6)
    assert row["statistic"] == pytest.approx(row["mean_diff"] / sigma)
    mean = float((ds["error"].sel(learner="lr") - ds["error"].sel(learner="tree")).mean())
    assert row["mean_diff"] == pytest.approx(mean)


@pytest.mark.slow
def test_compare_con_z_without_the_halves_names_the_option(with_halves: xr.Dataset) -> None:
    plain = with_halves.drop_vars(["con_z_error", "con_z_accuracy"], errors="ignore")
    plain.attrs = {k: v for k, v in plain.attrs.items() if k != "inference"}
    with pytest.raises(ValueError, match=r"evaluate\(\.\.\., inference='con_z'\)"):
        compare(plain, "lr", "tree", "error", "con_z")


def test_default_uses_con_z_only_where_the_result_has_its_fits() -> None:
    for outer in ("cv", "repeated_cv", "subsampling", "bootstrap", "5x2cv"):
        plain = recommended_method(outer)
        assert plain != "con_z"
        with_fits = recommended_method(outer, ("con_z",))
        note = level_note(outer, plain)
        if with_fits == "con_z":  # con_z holds the level there and the plain default does not
            assert "inference='con_z'" in note
        else:
            assert "inference='con_z'" not in note


def test_default_runs_con_z_on_a_design_where_it_held_and_the_result_has_it(
    with_halves: xr.Dataset,
) -> None:
    assert recommended_method("repeated_cv", ("con_z",)) == "con_z"
    relabelled = with_halves.copy()
    relabelled.attrs = {**with_halves.attrs, "outer": "repeated_cv"}
    row = compare(relabelled, "lr", "tree", "error").iloc[0]
    assert row["method"] == "con_z" and row["note"] == "" and math.isfinite(row["p"])
    plain = relabelled.drop_vars([v for v in relabelled.data_vars if v.startswith("con_z_")])
    plain.attrs = {k: v for k, v in relabelled.attrs.items() if k != "inference"}
    row = compare(plain, "lr", "tree", "error").iloc[0]
    assert row["method"] == "corrected"
    assert "method='con_z' holds it" in row["note"] and "inference='con_z'" in row["note"]
