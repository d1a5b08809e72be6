"""Statistics of evaluate results, the corrected resampled t-test and p-value adjustments.

Evaluate results are built by hand in the shape ``soak_dask.evaluate`` returns (dims learner,
repeat, fold; NaN in the cells of folds that do not exist), so every expected value here is
computed by hand or by scipy on the same numbers.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats as sps

import soak_dask.results  # noqa: F401  (registers the Dataset.soak accessor)
from soak_dask.results.comparisons import compare
from soak_dask.results.stats import (
    CORRECTED_COLUMNS,
    EVALUATION_DIMS,
    EVALUATION_SUMMARY_COLUMNS,
    PVALUE_COLUMNS,
    RESULT_DIMS,
    adjust_pvalues,
    by_fold,
    evaluation_summary,
    pvalues,
    summary,
)

NAN = math.nan


def make_eval(
    scores: dict[str, list[list[float]]],
    measure: str = "error",
    n_train: float | None = 80,
    n_test: float | None = 20,
    **extra: object,
) -> xr.Dataset:
    """An evaluate result: per learner a (repeat, fold) grid of one measure.

    ``n_train``/``n_test`` are set in every cell where some learner has a score (None: left
    out); other cells get NaN, as folds that do not exist for the design.
    """
    values = np.array(list(scores.values()), dtype=float)
    _, n_repeats, n_folds = values.shape
    exists = np.isfinite(values).any(axis=0)
    data: dict[str, object] = {measure: (EVALUATION_DIMS, values)}
    for name, count in (("n_train", n_train), ("n_test", n_test)):
        if count is not None:
            grid = np.where(exists, float(count), NAN)
            data[name] = (EVALUATION_DIMS, np.broadcast_to(grid, values.shape).copy())
    data.update(extra)
    return xr.Dataset(
        data,
        coords={
            "learner": list(scores),
            "repeat": np.arange(1, n_repeats + 1),
            "fold": np.arange(1, n_folds + 1),
        },
        attrs={"design": "evaluate", "outer": "repeated_cv", "measures": [measure]},
    )


# ---------------------------------------------------------------- summary and per-fold table


def test_summary_is_mean_and_sd_ddof1_over_existing_cells() -> None:
    ds = make_eval({"rf": [[1, 2, 3], [4, NAN, 6]], "lr": [[2, 2, NAN], [NAN, NAN, NAN]]})
    out = evaluation_summary(ds)
    assert list(out.columns) == EVALUATION_SUMMARY_COLUMNS
    rf, lr = out.iloc[0], out.iloc[1]
    # rf: cells 1, 2, 3, 4, 6: mean 16/5; squared deviations 4.84 + 1.44 + 0.04 + 0.64 + 7.84.
    assert (rf["learner"], rf["measure"], rf["n"]) == ("rf", "error", 5)
    assert rf["mean"] == pytest.approx(3.2)
    assert rf["sd"] == pytest.approx(math.sqrt(14.8 / 4))
    assert (rf["min"], rf["max"]) == (1.0, 6.0)
    assert (lr["n"], lr["mean"], lr["sd"]) == (2, 2.0, 0.0)
    # No test split: its columns are there, undefined.
    assert out[["test_estimate", "test_low", "test_high"]].isna().all().all()
    assert out["n_test_split"].isna().all() and out["n_test_split"].dtype == "Int64"


def test_summary_one_cell_has_a_mean_and_no_sd() -> None:
    out = evaluation_summary(make_eval({"rf": [[0.7, NAN]]}, "auc"))
    assert (out.loc[0, "n"], out.loc[0, "mean"]) == (1, 0.7)
    assert math.isnan(out.loc[0, "sd"])


def test_summary_reports_the_test_split_interval() -> None:
    interval = xr.DataArray(
        [[0.10, 0.05, 0.16], [0.20, 0.12, 0.30]],
        dims=("learner", "interval"),
        coords={"interval": ["estimate", "low", "high"]},
    )
    ds = make_eval(
        {"rf": [[10.0, 12.0]], "lr": [[20.0, 22.0]]},
        test_error=interval,
        n_test_split=("learner", [50, 50]),
    )
    out = evaluation_summary(ds).set_index("learner")
    assert out.loc["lr", ["test_estimate", "test_low", "test_high"]].tolist() == [0.2, 0.12, 0.3]
    assert out.loc["rf", "n_test_split"] == 50


def test_summary_of_a_bootstrap_includes_the_632_estimates() -> None:
    ds = make_eval({"rf": [[30.0, NAN], [34.0, NAN], [32.0, NAN]]})
    ds["error_632"] = 0.368 * 10 + 0.632 * ds["error"]
    ds["error_632plus"] = ds["error_632"] + 1
    ds.attrs["outer"] = "bootstrap"
    out = evaluation_summary(ds)
    assert out["measure"].tolist() == ["error", "error_632", "error_632plus"]
    assert out["n"].tolist() == [3, 3, 3]
    assert out.loc[1, "mean"] == pytest.approx(3.68 + 0.632 * 32)
    assert out.loc[1, "sd"] == pytest.approx(0.632 * 2)


def test_by_fold_drops_cells_that_do_not_exist_and_keeps_failed_fits() -> None:
    ds = make_eval({"rf": [[1.0, 2.0, NAN], [4.0, NAN, NAN]], "lr": [[5.0, 6.0, NAN], [7, 8, NAN]]})
    ds["fit_seconds"] = xr.full_like(ds["error"], 0.5)
    table = by_fold(ds)
    assert list(table.columns) == [*EVALUATION_DIMS, "error", "n_train", "n_test", "fit_seconds"]
    # Fold 3 exists in no repeat: dropped. rf's repeat 2 fold 2 exists (lr scored it): kept.
    assert len(table) == 8
    rf = table[table["learner"] == "rf"]
    assert rf[["repeat", "fold"]].values.tolist() == [[1, 1], [1, 2], [2, 1], [2, 2]]
    assert rf["error"].isna().tolist() == [False, False, False, True]
    assert table["n_test"].dtype == "int64" and set(table["n_test"]) == {20}
    assert table["error"].sum() == pytest.approx(33.0)


# ---------------------------------------------------------------- p-value adjustments


def test_holm_by_hand() -> None:
    # Sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1: 0.02, 0.03, 0.06, 0.04; running max.
    got = adjust_pvalues([0.01, 0.04, 0.03, 0.005], "holm")
    assert got == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_bh_by_hand() -> None:
    # Sorted 0.005, 0.01, 0.03, 0.04 times 4/1, 4/2, 4/3, 4/4: 0.02, 0.02, 0.04, 0.04; running
    # min from the largest.
    got = adjust_pvalues([0.01, 0.04, 0.03, 0.005], "bh")
    assert got == pytest.approx([0.02, 0.04, 0.04, 0.02])
    assert adjust_pvalues([0.01, 0.04, 0.03, 0.005], "fdr_bh") == pytest.approx(got)


def test_ties_nan_and_the_cap_at_one() -> None:
    # Three equal p: Holm 3p, 2p, p -> running max 3p; BH 3p, 1.5p, p -> running min p.
    assert adjust_pvalues([0.02, NAN, 0.02, 0.02], "holm") == pytest.approx(
        [0.06, NAN, 0.06, 0.06], nan_ok=True
    )
    assert adjust_pvalues([0.02, 0.02, 0.02], "bh") == pytest.approx([0.02] * 3)
    assert adjust_pvalues([0.5, 0.6], "holm").tolist() == [1.0, 1.0]
    assert adjust_pvalues([0.5, 0.6], "bh").tolist() == [0.6, 0.6]
    assert adjust_pvalues([], "holm").size == 0
    assert np.isnan(adjust_pvalues([NAN, NAN], "bh")).all()


def test_bh_equals_scipy() -> None:
    p = np.random.default_rng(0).uniform(size=40) ** 3
    assert adjust_pvalues(p, "bh") == pytest.approx(sps.false_discovery_control(p), rel=1e-12)


@pytest.mark.parametrize(
    "p, method, match",
    [
        ([0.1], "bonferroni", r"method='bonferroni' is not a p-value adjustment; choose 'holm'"),
        ([1.5], "holm", r"p-values must lie in \[0, 1\]; got 1.5"),
    ],
)
def test_adjust_bad_input(p: list[float], method: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        adjust_pvalues(p, method)


pvalue_lists = st.lists(
    st.one_of(st.floats(0, 1), st.just(NAN), st.sampled_from([0.0, 0.01, 0.05, 1.0])),
    max_size=30,
)


@given(pvalue_lists)
def test_property_adjusted_p_bounds_order_and_holm_above_bh(p: list[float]) -> None:
    raw = np.array(p, dtype=float)
    holm, bh = adjust_pvalues(raw, "holm"), adjust_pvalues(raw, "bh")
    finite = np.isfinite(raw)
    assert (np.isfinite(holm) == finite).all() and (np.isfinite(bh) == finite).all()
    for adjusted in (holm, bh):
        assert (adjusted[finite] >= raw[finite]).all() and (adjusted[finite] <= 1).all()
        # The adjustment keeps the order of the p-values (ties stay tied).
        order = np.argsort(raw[finite], kind="stable")
        assert (np.diff(adjusted[finite][order]) >= 0).all()
    assert (holm[finite] >= bh[finite]).all()


# ---------------------------------------------------------------- SOAK pvalues(corrected, adjust)


def make_soak(
    same: list[float], other: list[float], n_train: dict[str, list[float]], n_test: float = 20
) -> xr.Dataset:
    """One learner, one subset, SOAK results of same and other with given train rows."""
    values = np.array([same, other], dtype=float).T[None, None]
    rows = np.array([n_train["same"], n_train["other"]], dtype=float).T[None, None]
    coords = {
        "learner": ["lr"],
        "test_subset": ["A"],
        "fold": np.arange(1, len(same) + 1),
        "train_type": ["same", "other"],
    }
    return xr.Dataset(
        {
            "error": (RESULT_DIMS, values),
            "n_train": (RESULT_DIMS, rows),
            "n_test": (RESULT_DIMS, np.full(values.shape, n_test)),
        },
        coords=coords,
        attrs={"measures": ["error"]},
    )


SOAK = make_soak(
    same=[10.0, 12.0, 11.0, 13.0],
    other=[15.0, 16.0, 18.0, NAN],
    n_train={"same": [60, 60, 60, 60], "other": [100, 120, 140, 150]},
)


def test_pvalues_default_columns_and_values_unchanged() -> None:
    plain = pvalues(SOAK)
    assert list(plain.columns) == PVALUE_COLUMNS
    both = pvalues(SOAK, corrected=True, adjust="holm")
    assert list(both.columns) == [*PVALUE_COLUMNS, *CORRECTED_COLUMNS, "p_adjusted"]
    pd.testing.assert_frame_equal(both[PVALUE_COLUMNS], plain)


def test_corrected_pvalues_by_hand() -> None:
    row = pvalues(SOAK, compare="other", corrected=True).iloc[0]
    # Folds 1-3 are paired; other's train sets have 100, 120, 140 rows for 20 test rows.
    d = np.array([5.0, 4.0, 7.0])
    ratio = (20 / 100 + 20 / 120 + 20 / 140) / 3
    t = d.mean() / math.sqrt((1 / 3 + ratio) * d.var(ddof=1))
    assert row["test_train_ratio"] == pytest.approx(ratio, rel=1e-12)
    assert row["t_corrected"] == pytest.approx(t, rel=1e-12)
    assert row["p_corrected"] == pytest.approx(2 * sps.t.sf(t, 2), rel=1e-12)
    assert row["p_corrected"] > row["p"]


def test_pvalues_adjust_spans_the_table() -> None:
    # A second learner whose 'other' errors are 10 % higher: a different p.
    scaled = SOAK["error"] * xr.DataArray([1.0, 1.1], dims="train_type")
    ds = xr.concat([SOAK, SOAK.assign(error=scaled)], dim="learner")
    ds = ds.assign_coords(learner=["lr", "rf"])
    out = pvalues(ds, compare="other", adjust="holm")
    p = out["p"].to_numpy()
    low, high = sorted(p)
    expected = {low: 2 * low, high: max(2 * low, high)}
    assert out["p_adjusted"].tolist() == pytest.approx([expected[v] for v in p])
    bh = pvalues(ds, adjust="bh", corrected=True)  # 'all' rows: absent, NaN, not counted
    assert bh["p_adjusted"].isna().tolist() == [False, True, False, True]
    assert bh["p_adjusted"].to_numpy()[[0, 2]] == pytest.approx(
        adjust_pvalues(bh["p_corrected"].dropna(), "bh")
    )


def test_pvalues_adjust_spans_every_train_size() -> None:
    sized = xr.concat([SOAK, SOAK + 0.5 * SOAK.fold], dim="train_size").assign_coords(
        train_size=["full", "smallest"]
    )
    out = pvalues(sized, compare="other", adjust="holm")
    assert out["train_size"].tolist() == ["full", "smallest"]
    assert out["p_adjusted"].to_numpy() == pytest.approx(adjust_pvalues(out["p"]))


def test_pvalues_options_bad_input() -> None:
    with pytest.raises(ValueError, match=r"adjust='BH' is not a p-value adjustment"):
        pvalues(SOAK, adjust="BH")
    with pytest.raises(ValueError, match="corrected=True needs .* lack n_train and n_test"):
        pvalues(SOAK[["error"]], corrected=True)


def test_no_tests_warning_points_at_the_caller_with_the_new_columns() -> None:
    plain = SOAK.sel(train_type=["same"])
    with pytest.warns(UserWarning, match="no p-values") as caught:
        out = pvalues(plain, corrected=True, adjust="bh")
    assert caught[0].filename == __file__
    assert out.empty and {"p_corrected", "p_adjusted"} <= set(out.columns)


# ---------------------------------------------------------------- the .soak accessor


def test_accessor_dispatches_on_the_design() -> None:
    ds = make_eval({"rf": [[1.0, 2.0, 4.0]], "lr": [[2.0, 2.5, 3.0]]})
    pd.testing.assert_frame_equal(ds.soak.summary(), evaluation_summary(ds))
    pd.testing.assert_frame_equal(ds.soak.by_fold(), by_fold(ds))
    pd.testing.assert_frame_equal(
        ds.soak.compare("rf", "lr", "error", corrected=True),
        compare(ds, "rf", "lr", "error", corrected=True),
    )
    pd.testing.assert_frame_equal(SOAK.soak.summary(), summary(SOAK))
    pd.testing.assert_frame_equal(
        SOAK.soak.pvalues(compare="other", corrected=True, adjust="holm"),
        pvalues(SOAK, compare="other", corrected=True, adjust="holm"),
    )


def test_accessor_names_the_right_method_for_the_other_kind() -> None:
    ds = make_eval({"rf": [[1.0, 2.0]], "lr": [[2.0, 4.0]]})
    with pytest.raises(ValueError, match=r"evaluate\(\) results: use evaluation_summary"):
        ds.soak.pvalues()
    with pytest.raises(ValueError, match=r"soak\(\) results: use pvalues\(\) or summary\(\)"):
        SOAK.soak.by_fold()
    with pytest.raises(ValueError, match=r"missing dimension\(s\) 'repeat'"):
        SOAK.soak.compare("lr", "rf", "error")


def test_accessor_round_trip_through_netcdf(tmp_path) -> None:
    ds = make_eval({"rf": [[1.0, 2.0, 4.0]], "lr": [[2.0, 2.5, 3.0]]})
    ds.to_netcdf(tmp_path / "eval.nc")
    with xr.open_dataset(tmp_path / "eval.nc") as again:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            pd.testing.assert_frame_equal(
                again.soak.compare("rf", "lr"), ds.soak.compare("rf", "lr")
            )
            pd.testing.assert_frame_equal(again.soak.summary(), ds.soak.summary())
