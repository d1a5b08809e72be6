"""The Wald CV test (Bayle et al. 2020; mlr3inferr's ``ci.wald_cv``): its formula, the per-row
loss differences and squared losses the scoring paths sum (``loss_diff_sq_<measure>``,
``loss_sq_<measure>``) against scikit-learn's per-row predictions of the same fits,
``compare(method="wald_cv")`` and one learner's ``wald_cv_intervals``."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.dummy import DummyClassifier, DummyRegressor
from sklearn.linear_model import LinearRegression

import soak_dask as sd
from soak_dask.learn.loss_pairs import merge_pairs, pair_sums, pair_values, row_losses
from soak_dask.results.comparisons import WALD_CV_COVERAGE, compare
from soak_dask.results.wald_cv_intervals import WALD_CV_ONE_COVERAGE
from soak_dask.stats.wald_cv import wald_cv_test
from tests.conftest import n_examples

K = 4


def _frame(n: int, task: str, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"x1": rng.normal(size=n), "x2": rng.normal(size=n)})
    signal = df["x1"] + 0.5 * df["x2"] + rng.normal(size=n)
    df["y"] = np.where(signal > 0, "a", "b") if task == "classification" else signal
    df["fold"] = np.arange(n) % K + 1
    return df


def _evaluate(df: pd.DataFrame, learners, rows_per_partition=None, **options):
    table = sd.load_table(
        df, label="y", features=["x1", "x2"], fold="fold", rows_per_partition=rows_per_partition
    )
    run, rest = sd.RunOptions.among(options, progress=False)
    return sd.evaluate(table, learners, prior_correction=False, **rest, options=run)


def _by_hand(df: pd.DataFrame, models: dict, measure: str) -> dict[str, np.ndarray]:
    """Per fold (1..K): rows, and per learner its per-row losses, from scikit-learn's fits."""
    out: dict[str, list] = {name: [] for name in models}
    for k in range(1, K + 1):
        train, test = df[df["fold"] != k], df[df["fold"] == k]
        for name, est in models.items():
            est.fit(train[["x1", "x2"]], train["y"])
            x, y = test[["x1", "x2"]], test["y"].to_numpy()
            if measure == "error":
                loss = 100.0 * (est.predict(x) != y)
            elif measure == "log_loss":
                p = est.predict_proba(x)[np.arange(len(y)), (y == est.classes_[1]).astype(int)]
                loss = -np.log(p)
            else:
                r = y - est.predict(x)
                loss = r * r if measure == "mse" else np.abs(r)
            out[name].append(loss)
    return out


@pytest.mark.parametrize(
    ("task", "learners", "measures"),
    [
        ("classification", {"featureless": DummyClassifier(), "lda": LinearDiscriminantAnalysis()},
         ("error", "log_loss")),
        ("regression", {"featureless": DummyRegressor(), "linear": LinearRegression()},
         ("mse", "mae")),
    ],
)  # fmt: skip
def test_pass_sums_equal_per_row_losses_by_hand(task, learners, measures) -> None:
    df = _frame(400, task)
    ds = _evaluate(df, list(learners), measures=list(measures))
    a, b = learners
    for m in measures:
        losses = _by_hand(df, learners, m)
        diff = [la - lb for la, lb in zip(losses[a], losses[b], strict=True)]
        squares = ds[f"loss_diff_sq_{m}"].sel(learner=a, versus=b).values.ravel()
        assert squares == pytest.approx([float((d * d).sum()) for d in diff], rel=1e-9)
        same = ds[f"loss_diff_sq_{m}"].sel(learner=b, versus=a).values.ravel()
        np.testing.assert_array_equal(squares, same)
        sums = (ds[m].sel(learner=[a, b]) * ds["n_test"].sel(learner=a)).values.reshape(2, -1)
        assert sums[0] - sums[1] == pytest.approx([d.sum() for d in diff], rel=1e-9, abs=1e-9)
        assert np.isnan(ds[f"loss_diff_sq_{m}"].sel(learner=a, versus=a)).all()


@pytest.mark.slow
def test_sums_are_the_same_whatever_the_partitions() -> None:
    df = _frame(400, "classification", seed=3)
    runs = [_evaluate(df, ["featureless", "lda"], rows) for rows in (None, 37, 150)]
    for other in runs[1:]:
        first = runs[0]["loss_diff_sq_error"].values
        np.testing.assert_array_equal(other["loss_diff_sq_error"].values, first)
        # The sums are exact; a row's predicted probability may differ in BLAS's last bit
        # with the batch of rows predicted at once.
        first = runs[0]["loss_diff_sq_log_loss"].values
        np.testing.assert_allclose(other["loss_diff_sq_log_loss"].values, first, rtol=1e-13)
        first = runs[0]["loss_sq_log_loss"]
        np.testing.assert_allclose(other["loss_sq_log_loss"].values, first.values, rtol=1e-13)
        # The featureless model's class shares are ratios of counts: its per-row losses are
        # the same bits whatever the partitions, so their exact sums are identical.
        np.testing.assert_array_equal(
            other["loss_sq_log_loss"].sel(learner="featureless"), first.sel(learner="featureless")
        )


def test_batched_paths_pair_their_learners_too() -> None:
    """Leave-one-out fitted on rows (``Batched``: many fits a task, scored there)."""
    df = _frame(30, "classification", seed=5).drop(columns="fold")
    table = sd.load_table(df, label="y", features=["x1", "x2"])
    ds = sd.evaluate(
        table,
        ["featureless", "lda"],
        outer="loo",
        prior_correction=False,
        measures=["error", "log_loss"],
        options=sd.RunOptions(onepass=False, progress=False),
    )
    rows = ds["n_test"].sel(learner="lda").values.ravel()
    assert (rows == 1).all()
    # One row per fold: Σ d² is (the loss difference)², the measures' difference squared.
    for m in ("error", "log_loss"):
        d = (ds[m].sel(learner="featureless") - ds[m].sel(learner="lda")).values.ravel()
        squares = ds[f"loss_diff_sq_{m}"].sel(learner="featureless", versus="lda").values.ravel()
        assert squares == pytest.approx(d * d, rel=1e-12, abs=1e-12)
    own = ds["loss_sq_log_loss"].sel(learner="lda").values.ravel()
    assert own == pytest.approx(ds["log_loss"].sel(learner="lda").values.ravel() ** 2, rel=1e-12)
    row = compare(ds, "lda", "featureless", "error", method="wald_cv").iloc[0]
    assert row["reason"] == "" and row["n"] == 30


def test_interval_formula_by_hand() -> None:
    # Fold 1: d = (1, 2, 6); fold 2: d = (0, 3).
    n, sum_d, sum_d2 = np.array([3, 2]), np.array([9.0, 3.0]), np.array([41.0, 9.0])
    d = np.array([1.0, 2.0, 6.0, 0.0, 3.0])
    mean, var = d.mean(), ((d - d.mean()) ** 2).mean()  # all pairs: divide by n
    z = mean / math.sqrt(var / 5)
    r = wald_cv_test(n, sum_d, sum_d2)
    assert r.statistic == pytest.approx(z)
    assert r.p == pytest.approx(math.erfc(abs(z) / math.sqrt(2)))
    half = 1.959963984540054 * math.sqrt(var / 5)
    assert (r.ci_low, r.ci_high) == pytest.approx((mean - half, mean + half))
    # mlr3inferr's within-fold: the mean of the folds' sample variances (ddof 1).
    within = (np.var([1, 2, 6], ddof=1) + np.var([0, 3], ddof=1)) / 2
    r = wald_cv_test(n, sum_d, sum_d2, level=0.9, variance="within-fold")
    half = 1.6448536269514722 * math.sqrt(within / 5)
    assert (r.ci_low, r.ci_high) == pytest.approx((mean - half, mean + half))


def test_within_fold_refused_with_one_row_folds() -> None:
    with pytest.raises(ValueError, match="at least 2 test rows per fold.*all-pairs"):
        wald_cv_test(np.ones(3), np.ones(3), np.ones(3), variance="within-fold")


def test_compare_wald_cv_row_from_the_sums() -> None:
    df = _frame(400, "classification", seed=1)
    ds = _evaluate(df, ["featureless", "lda", "decision_tree"], onepass=False)
    rows = compare(ds, "lda", "featureless", method="wald_cv").set_index("measure")
    losses = _by_hand(df, {"lda": LinearDiscriminantAnalysis(), "f": DummyClassifier()}, "error")
    d = np.concatenate([a - b for a, b in zip(losses["lda"], losses["f"], strict=True)])
    want = wald_cv_test(np.array([len(d)]), np.array([d.sum()]), np.array([(d * d).sum()]))
    row = rows.loc["error"]
    assert row["n"] == 400 and row["extra_fits"] == 0 and row["reason"] == ""
    assert row["mean_diff"] == pytest.approx(d.mean())
    assert (row["ci_low"], row["ci_high"], row["p"]) == pytest.approx(
        (want.ci_low, want.ci_high, want.p)
    )
    assert "fitted models" in row["null"]
    assert row["level"] == pytest.approx(1 - WALD_CV_COVERAGE["error"])
    assert "covered the fitted models' true difference" in row["note"]
    for m in ("auc", "balanced_accuracy"):
        assert "not one: compare it with method='corrected'" in rows.loc[m, "reason"]
        assert math.isnan(rows.loc[m, "p"])
    assert rows.loc["log_loss", "reason"] == ""
    # Fitted from statistics, LDA is scored in the one scoring pass with the tree.
    ds = _evaluate(df, ["lda", "decision_tree"])
    row = compare(ds, "lda", "decision_tree", "error", method="wald_cv").iloc[0]
    assert row["reason"] == "" and np.isfinite(row["p"])
    # A fold without the pair's sums (one of the two failed there): the row says so.
    sums = ds["loss_diff_sq_error"]
    ds["loss_diff_sq_error"] = sums.where(sums["fold"] != sums["fold"].values[0])
    row = compare(ds, "lda", "decision_tree", "error", method="wald_cv").iloc[0]
    assert "not recorded in every fold" in row["reason"] and math.isnan(row["p"])


def test_wald_cv_refused_on_other_designs() -> None:
    df = _frame(120, "classification").drop(columns="fold")
    table = sd.load_table(df, label="y", features=["x1", "x2"])
    ds = sd.evaluate(
        table,
        ["featureless", "lda"],
        outer="repeated_cv",
        outer_repeats=2,
        options=sd.RunOptions(progress=False),
    )
    with pytest.raises(ValueError, match="one K-fold CV.*outer='repeated_cv'"):
        compare(ds, "lda", "featureless", method="wald_cv")
    with pytest.raises(ValueError, match="one K-fold CV.*outer='repeated_cv'"):
        sd.wald_cv_intervals(ds)
    df["plot"] = np.arange(len(df)) // 4
    grouped = sd.load_table(df, label="y", features=["x1", "x2"], group="plot")
    ds = sd.evaluate(grouped, ["featureless", "lda"], options=sd.RunOptions(progress=False))
    with pytest.raises(ValueError, match="group column 'plot'.*method='corrected'"):
        compare(ds, "lda", "featureless", method="wald_cv")


@settings(max_examples=n_examples(50))
@given(
    st.integers(1, 60),
    st.lists(st.integers(0, 60), max_size=4),
    st.integers(0, 2**31 - 1),
)
def test_pair_sums_of_pieces_add_up_to_the_whole(n, cuts, seed) -> None:
    """Any partition of a block's rows sums to the same pairs (exactly), in any order."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    preds = {name: rng.integers(0, 3, n) for name in "abc"}
    proba = {name: rng.dirichlet(np.ones(3), n) for name in "abc"}
    measures = ("error", "accuracy", "log_loss")

    def sums(rows):
        return pair_sums(
            {k: row_losses(measures, y[rows], preds[k][rows], proba[k][rows], 3) for k in "abc"}
        )

    edges = [0, *sorted(c % (n + 1) for c in cuts), n]
    pieces = [sums(slice(a, b)) for a, b in zip(edges[:-1], edges[1:], strict=True)]
    whole = pair_values(sums(slice(0, n)), "a", measures, "abc")
    assert pair_values(merge_pairs(pieces[::-1]), "a", measures, "abc") == whole
    wrong = {k: preds[k] != y for k in "abc"}
    assert whole["error"]["b"] == 1e4 * np.sum(wrong["a"] != wrong["b"])
    # Its pair with itself: Σ l² of the log loss (each square rounded once, summed exactly);
    # none of the 0/1 loss, whose squares follow from the score.
    loss = row_losses(measures, y, preds["a"], proba["a"], 3)["log_loss"]
    assert whole["log_loss"]["a"] == math.fsum(loss * loss)
    assert "a" not in whole["error"] and "a" not in whole["accuracy"]


@pytest.mark.slow
def test_same_sums_on_two_worker_processes(cluster) -> None:
    """The pieces travel between worker processes (pickled exact sums) to the same sums."""
    import distributed

    df = _frame(400, "regression", seed=2)
    local = _evaluate(df, ["featureless", "linear"], 60, measures=["mse", "mae"])
    with distributed.Client(cluster) as client:
        remote = _evaluate(
            df, ["featureless", "linear"], 60, measures=["mse", "mae"], client=client
        )
    for m in ("mse", "mae"):
        np.testing.assert_array_equal(
            remote[f"loss_diff_sq_{m}"].values, local[f"loss_diff_sq_{m}"].values
        )


def test_a_pair_needs_both_learners_records() -> None:
    """A record resumed from a checkpoint may hold a partner that was scored again apart (its
    own record without the pair): the pair is then not recorded, in either direction."""
    from soak_dask.run.assemble import with_loss_pairs

    index = pd.MultiIndex.from_product([["a", "b"], [1, 2]], names=["learner", "fold"])
    pairs = [{"error": {"b": 3e4}}, {"error": {"b": 1e4}}, {"error": {"a": 3e4}}, {}]
    full = pd.DataFrame({"loss_pairs": pairs}, index=index)
    ds = xr.Dataset(coords={"learner": ["a", "b"], "fold": [1, 2]})
    res = with_loss_pairs(ds, full, ["error", "auc"])
    out = res["loss_diff_sq_error"]
    np.testing.assert_array_equal(out.sel(learner="a", versus="b"), [3e4, np.nan])
    np.testing.assert_array_equal(out.sel(learner="b", versus="a"), [3e4, np.nan])
    assert "loss_diff_sq_auc" not in res and out.dims == ("learner", "versus", "fold")


def test_leave_one_out_from_statistics_pairs_by_selection() -> None:
    """Leave-one-out of additive learners: fitted from statistics, scored in a pass whose
    blocks are ``Selection``s (``score_selections``)."""
    df = _frame(40, "regression", seed=4).drop(columns="fold")
    table = sd.load_table(df, label="y", features=["x1", "x2"])
    ds = sd.evaluate(
        table, ["featureless", "linear"], outer="loo", options=sd.RunOptions(progress=False)
    )
    d = (ds["mse"].sel(learner="linear") - ds["mse"].sel(learner="featureless")).values.ravel()
    squares = ds["loss_diff_sq_mse"].sel(learner="linear", versus="featureless").values.ravel()
    assert squares == pytest.approx(d * d, rel=1e-12, abs=1e-12)
    rows = compare(ds, "linear", "featureless", ["mse", "rmse"], method="wald_cv")
    assert rows["n"].tolist() == [40, 0] and rows["reason"][0] == ""
    assert "compare 'mse' (its square)" in rows["reason"][1]


@pytest.mark.parametrize(
    ("task", "learners", "measures"),
    [
        ("classification", {"lda": LinearDiscriminantAnalysis()}, ("error", "log_loss")),
        ("regression", {"linear": LinearRegression(), "featureless": DummyRegressor()},
         ("mse", "rmse", "mae", "r2")),
    ],
)  # fmt: skip
def test_one_learners_squared_losses_and_wald_interval_by_hand(task, learners, measures) -> None:
    """``loss_sq_<m>`` is Σ l² of each fold's per-row losses (one learner alone, or two), and
    ``wald_cv_intervals`` the mean of all n per-row losses ± z σ̂/√n (RMSE: the delta method)."""
    df = _frame(200, task, seed=6)
    ds = _evaluate(df, list(learners), measures=list(measures))
    table = sd.wald_cv_intervals(ds).set_index(["measure", "learner"])
    for m in [m for m in measures if m not in ("rmse", "r2")]:
        losses = _by_hand(df, learners, m)
        for name in learners:
            if m == "error":  # 0/1: Σ l² follows from the score, none recorded
                assert "loss_sq_error" not in ds
            else:
                recorded = ds[f"loss_sq_{m}"].sel(learner=name).values.ravel()
                assert recorded == pytest.approx([np.sum(v * v) for v in losses[name]], rel=1e-9)
            loss = np.concatenate(losses[name])
            mean, sd_ = loss.mean(), loss.std()  # all pairs: divide by n
            row = table.loc[(m, name)]
            assert row["reason"] == "" and row["n"] == 200
            assert f"{WALD_CV_ONE_COVERAGE[m]:.1%} of simulations" in row["note"]
            assert (row["estimate"], row["sd"]) == pytest.approx((mean, sd_), rel=1e-9)
            half = 1.959963984540054 * sd_ / math.sqrt(len(loss))
            assert (row["ci_low"], row["ci_high"]) == pytest.approx(
                (max(mean - half, 0.0), mean + half), rel=1e-9
            )
            if m == "mse":  # RMSE: √mse ± z se_mse / (2 √mse)
                rmse = table.loc[("rmse", name)]
                se = sd_ / math.sqrt(len(loss)) / (2 * math.sqrt(mean))
                assert (rmse["estimate"], rmse["se"]) == pytest.approx((math.sqrt(mean), se))
                assert rmse["ci_high"] == pytest.approx(math.sqrt(mean) + 1.959963984540054 * se)
                assert "delta method" in rmse["note"]
    if task == "regression":
        assert "'r2' is not one" in table.loc[("r2", "linear"), "reason"]
        assert "loss_sq_r2" not in ds and "loss_sq_rmse" not in ds


def test_one_learners_within_fold_interval_by_hand() -> None:
    df = _frame(120, "regression", seed=7)
    ds = _evaluate(df, ["linear"], measures=["mae"])
    assert "versus" not in ds.coords and "loss_diff_sq_mae" not in ds
    losses = _by_hand(df, {"linear": LinearRegression()}, "mae")["linear"]
    within = np.mean([np.var(v, ddof=1) for v in losses])
    row = sd.wald_cv_intervals(ds, "mae", level=0.9, variance="within-fold").iloc[0]
    mean, half = np.concatenate(losses).mean(), 1.6448536269514722 * math.sqrt(within / 120)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((mean - half, mean + half))
    assert row["variance"] == "within-fold" and row["level"] == 0.9


def test_squared_losses_kept_by_the_store_and_the_checkpoint(tmp_path) -> None:
    df = _frame(120, "classification", seed=9)
    ds = _evaluate(df, ["lda"], measures=["log_loss"], checkpoint=tmp_path / "ck")
    assert np.isfinite(ds["loss_sq_log_loss"].values).all()
    # Resumed: every record read back from the checkpoint's JSON files.
    resumed = _evaluate(df, ["lda"], measures=["log_loss"], checkpoint=tmp_path / "ck")
    np.testing.assert_array_equal(resumed["loss_sq_log_loss"].values, ds["loss_sq_log_loss"])
    sd.save_results(ds, tmp_path / "res.zarr")
    back = sd.open_results(tmp_path / "res.zarr")
    np.testing.assert_array_equal(back["loss_sq_log_loss"].values, ds["loss_sq_log_loss"])
    assert back["loss_sq_log_loss"].dims == ("learner", "repeat", "fold")
    pd.testing.assert_frame_equal(sd.wald_cv_intervals(back), sd.wald_cv_intervals(ds))
    # Without the sums (an earlier store), or without a fold's (a failed fit), the row says why.
    row = sd.wald_cv_intervals(back.drop_vars("loss_sq_log_loss")).iloc[0]
    assert "no sums of squared per-row log_loss losses" in row["reason"]
    assert math.isnan(row["ci_low"])
    back["loss_sq_log_loss"][0, 0, 1] = np.nan
    row = sd.wald_cv_intervals(back).iloc[0]
    assert "lda has no log_loss sums in some fold" in row["reason"] and math.isnan(row["se"])


@pytest.mark.slow
def test_one_learners_interval_undefined_where_every_loss_is_equal() -> None:
    """Error 0 on every row (accuracy 1): σ̂ is 0, so there is no interval; the row says why."""
    cells = {"learner": ["a"], "repeat": [1], "fold": [1, 2]}
    ds = xr.Dataset(
        {
            "error": (("learner", "repeat", "fold"), [[[0.0, 0.0]]]),
            "accuracy": (("learner", "repeat", "fold"), [[[1.0, 1.0]]]),
            "n_test": (("learner", "repeat", "fold"), [[[5, 4]]]),
        },
        coords=cells,
        attrs={"design": "evaluate", "outer": "cv", "measures": ["error", "accuracy"]},
    )
    rows = sd.wald_cv_intervals(ds)
    assert rows["reason"].str.contains("all 9 per-row losses of .* are equal").all()
    assert rows["estimate"].tolist() == [0.0, 1.0] and rows["ci_low"].isna().all()
