"""The nested CV interval (Bates, Hastie and Tibshirani 2023): the blocks ``evaluate(...,
inference="ncv")`` records, ``compare(method="ncv")`` and ``ncv_intervals`` on them, and the
designs and options it refuses (the formula itself: ``tests/stats/test_nested_cv.py``)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import soak_dask as sd
from soak_dask.results.comparisons import compare
from soak_dask.run.halves import check_inference
from soak_dask.run.nested_folds import NCV_DIMS, ncv_split
from soak_dask.stats.nested_cv import ncv_test
from soak_dask.tables.table import FOLD_COLUMN

K, R = 3, 2


def _frame(n: int = 120) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x1": rng.normal(size=n), "x2": rng.normal(size=n)})
    df["y"] = np.where(df["x1"] + rng.normal(size=n) > 0, "a", "b")
    return df


def _toy_table() -> sd.Table:
    return sd.load_table(_frame(), label="y", features=["x1", "x2"])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"inference_repeats": 1}, "inference_repeats=1: need an integer of at least 2"),
        ({"outer": "bootstrap"}, "inference='ncv' nests .* not outer='bootstrap'"),
        ({"outer": "subsampling"}, "inference='ncv' nests .* not outer='subsampling'"),
        ({"outer_folds": 2}, "inference='ncv' needs outer_folds >= 3"),
    ],
)
def test_ncv_refused_before_any_fit_naming_the_option(kwargs, match) -> None:
    with pytest.raises(ValueError, match=match):
        sd.evaluate(
            _toy_table(), "lr", inference="ncv", **kwargs, options=sd.RunOptions(progress=False)
        )


def test_ncv_refuses_a_table_with_a_fold_or_group_column() -> None:
    df = _frame().assign(f=lambda d: np.arange(len(d)) % 3 + 1)
    table = sd.load_table(df, label="y", features=["x1", "x2"], fold="f")
    with pytest.raises(ValueError, match="fold column 'f' fixes the folds"):
        check_inference("ncv", None, "cv", table)
    grouped = sd.load_table(_frame().assign(g=lambda d: np.arange(len(d)) // 4), label="y",
                            features=["x1", "x2"], group="g")  # fmt: skip
    with pytest.raises(ValueError, match="group column 'g': use inference='con_z'"):
        check_inference("ncv", None, "cv", grouped)
    assert check_inference("ncv", None, "repeated_cv", _toy_table()) == 10


def test_inner_cv_folds_are_the_other_outer_folds() -> None:
    from soak_dask.run.nested_folds import _without_fold

    options = {"outer_folds": K, "balance": "class", "group_assignment": "rows"}
    split = ncv_split(_toy_table(), options, 7)
    folds = split.data.compute()[FOLD_COLUMN]
    assert sorted(folds.unique()) == [1, 2, 3] and folds.value_counts().tolist() == [40] * 3
    assert folds.equals(ncv_split(_toy_table(), options, 7).data.compute()[FOLD_COLUMN])
    inner = _without_fold(split, 2).data.compute()[FOLD_COLUMN]
    assert set(inner.index) == set(folds.index[folds != 2])
    # Outer folds 1 and 3 are the inner folds 1 and 2, row for row.
    assert (inner == folds[inner.index].map({1: 1, 3: 2})).all()


@pytest.fixture(scope="module")
def with_ncv() -> xr.Dataset:
    from sklearn.linear_model import LogisticRegression
    from sklearn.tree import DecisionTreeClassifier

    learners = {"lr": LogisticRegression(), "tree": DecisionTreeClassifier(random_state=0)}
    return sd.evaluate(
        _toy_table(),
        learners,
        outer_folds=K,
        inference="ncv",
        inference_repeats=R,
        options=sd.RunOptions(progress=False),
    )


def _blocks(ds: xr.Dataset, name: str, *index: object) -> np.ndarray:
    return np.asarray(ds[name].transpose(..., *NCV_DIMS[1:]).values[index], dtype=float)


@pytest.mark.slow
def test_evaluate_records_the_nested_blocks(with_ncv: xr.Dataset) -> None:
    ds = with_ncv
    assert ds["ncv_error"].dims == NCV_DIMS and ds["ncv_error"].shape == (2, R, K, K)
    assert ds["ncv_loss_diff_sq_error"].dims == ("learner", "versus", *NCV_DIMS[1:])
    assert ds.attrs["inference"] == "ncv" and ds.attrs["inference_repeats"] == R
    # Per learner and split: K outer fits and K inner CVs of K − 1 fits: R·K²·2 fits.
    assert ds.attrs["inference_fits"] == R * K * K * 2
    n = _blocks(ds, "ncv_n_test", 0)
    assert (n[..., 0] == 40).all() and (n[..., 1:] == 40).all()  # the outer folds, re-used
    assert np.isfinite(ds["ncv_error"].values).all()
    # The two splits are different draws.
    assert not np.array_equal(_blocks(ds, "ncv_error", 0)[0], _blocks(ds, "ncv_error", 0)[1])


@pytest.mark.slow
def test_compare_ncv_is_the_algorithm_on_the_loss_differences(with_ncv: xr.Dataset) -> None:
    ds = with_ncv
    row = compare(ds, "lr", "tree", "error", "ncv").iloc[0]
    assert row["method"] == "ncv" and row["reason"] == ""
    assert row["extra_fits"] == ds.attrs["inference_fits"] and "Err_XY" in row["null"]
    n = _blocks(ds, "ncv_n_test", 0)
    d = n * (_blocks(ds, "ncv_error", 0) - _blocks(ds, "ncv_error", 1))
    d2 = _blocks(ds, "ncv_loss_diff_sq_error", 0, 1)
    want = ncv_test((n[..., 0], d[..., 0], d2[..., 0]), (n[..., 1:], d[..., 1:], d2[..., 1:]))
    assert row["mean_diff"] == pytest.approx(want.extra["estimate"])
    assert (row["ci_low"], row["ci_high"], row["p"]) == pytest.approx(
        (want.ci_low, want.ci_high, want.p)
    )
    assert row["n"] == 120 and row["df"] == math.inf
    assert row["level"] == pytest.approx(0.043) and "95.7%" in row["note"]
    assert "8.6%" in row["note"]
    assert "87.5% with 10 folds, naive CV's in 65.5% (82.3% and 65.0% with 5" in row["note"]
    each = sd.ncv_intervals(ds, "error").set_index("learner")["estimate"]
    assert row["compare_mean"] == pytest.approx(each["lr"])
    assert row["mean_diff"] == pytest.approx(each["lr"] - each["tree"])
    auc = compare(ds, "lr", "tree", "auc", "ncv").iloc[0]
    assert "mean of per-row losses" in auc["reason"] and math.isnan(auc["p"])


@pytest.mark.slow
def test_ncv_intervals_of_each_learner(with_ncv: xr.Dataset) -> None:
    ds = with_ncv
    table = sd.ncv_intervals(ds, ["error", "accuracy", "log_loss"], level=0.9)
    tree = table.set_index(["measure", "learner"]).loc[("error", "tree")]
    n = _blocks(ds, "ncv_n_test", 1)
    s = n * _blocks(ds, "ncv_error", 1)  # per-row losses 0 or 100: Σ l² = 100 Σ l
    want = ncv_test(
        (n[..., 0], s[..., 0], 100 * s[..., 0]),
        (n[..., 1:], s[..., 1:], 100 * s[..., 1:]),
        level=0.9,
    )  # noqa: E501
    assert (tree["estimate"], tree["se"]) == pytest.approx(
        (want.extra["estimate"], want.extra["se"])
    )
    assert tree["ci_low"] == pytest.approx(max(want.ci_low, 0.0))
    assert tree["ci_high"] == pytest.approx(min(want.ci_high, 100.0))
    # Accuracy is 1 − error/100, row for row: the same interval, mirrored and scaled.
    acc = table.set_index(["measure", "learner"]).loc[("accuracy", "tree")]
    assert acc["estimate"] == pytest.approx(1 - tree["estimate"] / 100)
    assert acc["se"] == pytest.approx(tree["se"] / 100)
    # Log loss: Σ l² of each block recorded (ncv_loss_sq_log_loss).
    lr = table.set_index(["measure", "learner"]).loc[("log_loss", "lr")]
    n = _blocks(ds, "ncv_n_test", 0)
    s, s2 = n * _blocks(ds, "ncv_log_loss", 0), _blocks(ds, "ncv_loss_sq_log_loss", 0)
    want = ncv_test(
        (n[..., 0], s[..., 0], s2[..., 0]), (n[..., 1:], s[..., 1:], s2[..., 1:]), level=0.9
    )
    assert lr["reason"] == ""
    assert (lr["estimate"], lr["se"], lr["ci_low"]) == pytest.approx(
        (want.extra["estimate"], want.extra["se"], max(want.ci_low, 0.0))
    )
    assert (s2 > s * s / n).all()  # Σ l² > (Σ l)² / n: the losses vary within each block


@pytest.mark.slow
def test_one_learners_ncv_blocks_of_squared_losses_by_hand() -> None:
    """One learner of a regression: every nested CV block's Σ l² of MSE and MAE, against
    scikit-learn's fits on the same folds, and its interval of each (Σ l, Σ l² by hand)."""
    from sklearn.linear_model import LinearRegression

    from soak_dask.run.halves import inference_seed

    df = _frame(60).assign(y=lambda d: d["x1"] + np.random.default_rng(1).normal(size=60))
    table = sd.load_table(df, label="y", features=["x1", "x2"])
    ds = sd.evaluate(
        table,
        ["linear"],
        outer_folds=K,
        inference="ncv",
        inference_repeats=R,
        measures=["mse", "rmse", "mae"],
        options=sd.RunOptions(progress=False),
    )
    assert ds["ncv_loss_sq_mse"].dims == NCV_DIMS and "ncv_loss_diff_sq_mse" not in ds
    options = {"outer_folds": K, "balance": "class", "group_assignment": "rows"}
    by_hand = {m: np.zeros((R, K, K, 3)) for m in ("mse", "mae")}  # rows, Σ l, Σ l²
    x, y = df[["x1", "x2"]].to_numpy(), df["y"].to_numpy()
    for r in range(R):
        split = ncv_split(table, options, inference_seed(1, "ncv_folds", r + 1))
        fold = split.data.compute()[FOLD_COLUMN].sort_index().to_numpy()
        for j in range(1, K + 1):
            others = [f for f in range(1, K + 1) if f != j]
            # Block 0: outer fold j by the model of the other folds; i: inner fold i of them.
            for i, test in enumerate([j, *others]):
                train = (fold != j) & (fold != test) if i else fold != j
                residual = y[fold == test] - LinearRegression().fit(x[train], y[train]).predict(
                    x[fold == test]
                )
                for m, loss in (("mse", residual**2), ("mae", np.abs(residual))):
                    by_hand[m][r, j - 1, i] = len(loss), loss.sum(), (loss * loss).sum()
    rows = sd.ncv_intervals(ds).set_index("measure")
    for m in ("mse", "mae"):
        recorded = _blocks(ds, f"ncv_loss_sq_{m}", 0)
        np.testing.assert_allclose(recorded, by_hand[m][..., 2], rtol=1e-9)
        n, s, s2 = np.moveaxis(by_hand[m], -1, 0)
        want = ncv_test((n[..., 0], s[..., 0], s2[..., 0]), (n[..., 1:], s[..., 1:], s2[..., 1:]))
        assert rows.loc[m, "reason"] == ""
        got = rows.loc[m, ["estimate", "se", "ci_high"]].tolist()
        assert got == pytest.approx([want.extra["estimate"], want.extra["se"], want.ci_high])
        if m == "mse":  # RMSE: √mse ± z se_mse / (2 √mse)
            root, se = math.sqrt(want.extra["estimate"]), want.extra["se"]
            se /= 2 * root
            got = rows.loc["rmse", ["estimate", "se", "ci_low", "ci_high"]].tolist()
            assert got == pytest.approx([root, se, root - 1.959963984540054 * se,
                                         root + 1.959963984540054 * se])  # fmt: skip
            assert "delta method" in rows.loc["rmse", "note"] and rows.loc["mse", "note"] == ""


def test_compare_ncv_without_the_blocks_names_the_option(with_ncv: xr.Dataset) -> None:
    plain = with_ncv.drop_vars([v for v in with_ncv.data_vars if str(v).startswith("ncv_")])
    plain.attrs = {k: v for k, v in with_ncv.attrs.items() if k != "inference"}
    with pytest.raises(ValueError, match=r"evaluate\(\.\.\., inference='ncv'\)"):
        compare(plain, "lr", "tree", "error", "ncv")
    assert "inference='ncv'" in sd.ncv_intervals(plain, "error")["reason"].iloc[0]
    # The default test is not the NCV one: its level on a difference is not measured.
    assert compare(with_ncv, "lr", "tree", "error").iloc[0]["method"] != "ncv"
