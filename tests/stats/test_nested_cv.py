"""The nested CV interval (Bates, Hastie and Tibshirani 2023; mlr3inferr's ``ci.ncv``) against
values computed by hand on tiny fixed arrays of per-row 0/1 losses."""

from __future__ import annotations

import math

import numpy as np
import pytest

from soak_dask.stats.nested_cv import ncv_estimate, ncv_test

Z95 = 1.959963984540054


def _sums(losses: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows, Σ l, Σ l²) of each block: the last axis holds a block's per-row losses."""
    return np.full(losses.shape[:-1], losses.shape[-1]), losses.sum(-1), (losses**2).sum(-1)


# R = 1, K = 3, 9 rows; outer folds A, B, C of 3 rows; per outer fold, the inner CV's 2 folds.
OUTER = np.array([[[1.0, 0, 1], [1, 1, 1], [0, 0, 1]]])
INNER = np.array([[[[1.0, 1, 1], [0, 1, 0]], [[0, 1, 1], [0, 0, 0]], [[0, 1, 1], [1, 0, 0]]]])


def test_ncv_is_bates_algorithm_by_hand() -> None:
    r = ncv_test(_sums(OUTER), _sums(INNER))
    # a = (mean(e_in) − mean(e_out))²: (2/3 − 2/3)², (1/3 − 1)², (1/2 − 1/3)²;
    # b = var(e_out)/3 (ddof 1): 1/9, 0, 1/9; MSE^ = (K−1)/K · mean(a − b) = 2/3 · 1/12.
    mse = 2 / 3 * ((0 - 1 / 9) + (4 / 9 - 0) + (1 / 36 - 1 / 9)) / 3
    assert r.extra["mse"] == pytest.approx(mse) == pytest.approx(1 / 18)
    assert r.extra["err_ncv"] == pytest.approx(9 / 18)  # 9 of the 18 inner losses
    assert r.extra["err_cv"] == pytest.approx(6 / 9)
    # Bias correction: Err_NCV − (1 + (K−2)/K)(Err_NCV − Err_CV) = 1/2 + 4/3 · 1/6.
    assert r.extra["estimate"] == pytest.approx(13 / 18)
    # √MSE^ lies between σ_in/√n and √K σ_in/√n (σ_in² = (9 − 18/4)/17, n = 9): it is kept.
    se_low = math.sqrt(4.5 / 17) / 3
    assert se_low < math.sqrt(mse) < se_low * math.sqrt(3)
    assert r.extra["se"] == pytest.approx(math.sqrt(1 / 18))
    half = Z95 * math.sqrt(1 / 18)
    assert (r.ci_low, r.ci_high) == pytest.approx((13 / 18 - half, 13 / 18 + half))
    assert r.statistic == pytest.approx((13 / 18) / math.sqrt(1 / 18))
    assert r.p == pytest.approx(math.erfc(abs(r.statistic) / math.sqrt(2)))
    assert r.df == math.inf


def test_standard_error_is_held_between_the_naive_one_and_sqrt_k_times_it() -> None:
    # Outer folds {0,1}, {0,0}, {1,1}. Inner means 1/4, 3/4, 1/2: MSE^ = 2/3 · 5/24 is above
    # K σ_in²/n (σ_in² = (6 − 12/4)/11, n = 6), so se is √K σ_in/√n.
    outer = np.array([[[1.0, 0], [0, 0], [1, 1]]])
    high = np.array([[[[0.0, 0], [0, 1]], [[1, 0], [1, 1]], [[0, 0], [1, 1]]]])
    r = ncv_test(_sums(outer), _sums(high))
    assert r.extra["mse"] == pytest.approx(2 / 3 * (1 / 16 - 1 / 4 + 9 / 16 + 1 / 4) / 3)
    assert r.extra["se"] == pytest.approx(math.sqrt(3 / 11) / math.sqrt(6) * math.sqrt(3))
    # Inner means 1/4, 1/4, 3/4: MSE^ < 0, so se is σ_in/√n (σ_in² = (5 − 12 · 25/144)/11).
    low = np.array([[[[0.0, 0], [0, 1]], [[1, 0], [0, 0]], [[1, 0], [1, 1]]]])
    r = ncv_test(_sums(outer), _sums(low), level=0.9)
    assert r.extra["mse"] < 0
    sigma = math.sqrt((5 - 12 * (5 / 12) ** 2) / 11)
    assert r.extra["se"] == pytest.approx(sigma / math.sqrt(6))
    # Estimate 5/12 + 4/3 · 1/12; the 90 % interval's z.
    assert r.extra["estimate"] == pytest.approx(5 / 12 + 4 / 3 * (1 / 2 - 5 / 12))
    assert r.ci_high - r.extra["estimate"] == pytest.approx(1.6448536269514722 * sigma / 6**0.5)


def test_without_bias_correction_the_estimate_is_the_outer_mean() -> None:
    r = ncv_test(_sums(OUTER), _sums(INNER), bias=False)
    assert r.extra["estimate"] == pytest.approx(6 / 9)
    assert (r.ci_low + r.ci_high) / 2 == pytest.approx(6 / 9)


def test_estimate_of_a_difference_is_the_difference_of_estimates() -> None:
    other = np.flip(OUTER, axis=-1) * 0.5 + 0.25
    other_in = INNER[..., ::-1] * 0.5 + 0.25
    a = ncv_estimate(_sums(OUTER)[:2], _sums(INNER)[:2])[0]
    b = ncv_estimate(_sums(other)[:2], _sums(other_in)[:2])[0]
    d = ncv_test(_sums(OUTER - other), _sums(INNER - other_in))
    assert d.extra["estimate"] == pytest.approx(a - b)


def test_several_repetitions_average_their_blocks() -> None:
    # Two identical repetitions: the same interval as one.
    one = ncv_test(_sums(OUTER), _sums(INNER))
    two = ncv_test(_sums(np.concatenate([OUTER] * 2)), _sums(np.concatenate([INNER] * 2)))
    assert (two.ci_low, two.ci_high) == pytest.approx((one.ci_low, one.ci_high))


@pytest.mark.parametrize(
    ("outer_shape", "inner_shape", "match"),
    [
        ((1, 3), (1, 3, 3), r"inner blocks \(R, K, K - 1\)"),
        ((3,), (3, 2), r"outer blocks \(R, K\)"),
        ((1, 2), (1, 2, 1), "K >= 3 outer folds"),
    ],
)
def test_refuses_blocks_that_are_not_nested_cv(outer_shape, inner_shape, match) -> None:
    outer = (np.full(outer_shape, 3), np.ones(outer_shape), np.ones(outer_shape))
    inner = (np.full(inner_shape, 3), np.ones(inner_shape), np.ones(inner_shape))
    with pytest.raises(ValueError, match=match):
        ncv_test(outer, inner)


def test_refuses_an_outer_fold_of_one_row() -> None:
    sums = _sums(OUTER)
    n = sums[0].copy()
    n[0, 1] = 1
    with pytest.raises(ValueError, match="at least 2 test rows in every outer fold"):
        ncv_test((n, sums[1], sums[2]), _sums(INNER))
