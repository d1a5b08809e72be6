"""The nested cross-validation interval of Bates, Hastie and Tibshirani (2023, "Cross-validation:
what does it estimate and how well does it do it?", JASA; their Algorithm 1), on plain per-block
sums, as mlr3inferr's ``ci.ncv`` computes it.

R times, the rows are split into K folds. For each outer fold k, the model fitted on the other
K − 1 folds is scored on fold k (the *outer* losses ``e_out``), and a K − 1-fold CV is run on
those other folds (the *inner* losses ``e_in``, every row of the outer train set tested once).
Over the R·K pairs, ``a = (mean(e_in) − mean(e_out))²`` and ``b = var(e_out) / |fold k|``
estimate the mean squared error of the CV estimate: ``MSE^ = (K − 1)/K · mean(a − b)`` (the
factor rescales it from CV on (K − 1)/K · n rows to CV on n). Its square root, kept between
the naive standard error ``σ_in/√n`` and ``√K`` times it, is the interval's standard error; the
point estimate is the inner losses' mean ``Err_NCV`` less the bias correction
``(1 + (K − 2)/K) (Err_NCV − Err_CV)``, ``Err_CV`` the outer losses' mean.

A loss here is any per-row loss: one learner's (its error, log loss, ...) or the per-row
difference of two learners' losses, whose interval is then the difference's.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as sps

from .mean_tests import ALPHA, MeanTest

__all__ = ["NCV_EXTRA", "ncv_estimate", "ncv_test"]

#: The ``extra`` entries of `ncv_test`'s result.
NCV_EXTRA: tuple[str, ...] = ("estimate", "se", "err_ncv", "err_cv", "mse")


def ncv_test(
    outer: tuple[np.ndarray, np.ndarray, np.ndarray],
    inner: tuple[np.ndarray, np.ndarray, np.ndarray],
    *,
    level: float = 1 - ALPHA,
    bias: bool = True,
) -> MeanTest:
    """The nested CV interval of a mean loss (or loss difference) from per-block sums.

    Parameters
    ----------
    outer : (n, sum, sum of squares), each (R, K)
        Repetition r, outer fold k: the fold's test rows, ``Σ l`` and ``Σ l²`` of the losses
        of the model fitted on the other K − 1 folds.
    inner : (n, sum, sum of squares), each (R, K, K − 1)
        The same of each fold of the K − 1-fold CV run on the other folds than k.
    level : float
        The interval's coverage (default 0.95).
    bias : bool
        Bates et al.'s bias correction of the point estimate (mlr3inferr's default); False:
        the outer losses' mean ``Err_CV`` is the estimate.

    Returns
    -------
    MeanTest
        ``statistic`` z = estimate / se, ``df`` inf, two-sided ``p`` of a zero mean, the
        interval ``estimate ± z(level) se``, and ``extra``: `NCV_EXTRA` (``mse``: MSE^, the
        estimated mean squared error of the CV estimate, before it is bounded).

    Examples
    --------
    R = 1, K = 3, folds of 2 rows, 0/1 losses: Err_NCV = 5/12, Err_CV = 1/2, MSE^ < 0, so
    the standard error is the naive one.

    >>> outer = (np.full((1, 3), 2), np.array([[1.0, 0.0, 2.0]]), np.array([[1.0, 0.0, 2.0]]))
    >>> sums = np.array([[[0.0, 1.0], [1.0, 0.0], [1.0, 2.0]]])
    >>> r = ncv_test(outer, (np.full((1, 3, 2), 2), sums, sums), level=0.9)
    >>> {k: round(v, 4) for k, v in r.extra.items()}
    {'estimate': 0.5278, 'se': 0.2102, 'err_ncv': 0.4167, 'err_cv': 0.5, 'mse': -0.0139}
    >>> round(r.ci_low, 4), round(r.ci_high, 4)
    (0.182, 0.8736)
    """
    o_n, o_sum, o_sq = (np.asarray(a, dtype=np.float64) for a in outer)
    i_n, i_sum, i_sq = (np.asarray(a, dtype=np.float64) for a in inner)
    k = _check_shapes(o_n.shape, i_n.shape)
    if (o_n < 2).any():
        raise ValueError(
            "the nested CV interval needs at least 2 test rows in every outer fold (the "
            f"variance of a fold's losses); the smallest has {int(o_n.min())}"
        )
    avg_outer = o_sum / o_n
    b = (o_sq - o_sum**2 / o_n) / (o_n - 1) / o_n  # var(e_out) / |I_k|, var with ddof = 1
    avg_inner = i_sum.sum(axis=2) / i_n.sum(axis=2)
    mse = (k - 1) / k * float(np.mean((avg_inner - avg_outer) ** 2 - b))
    total = float(i_n.sum())
    estimate, err_ncv, err_cv = ncv_estimate((o_n, o_sum), (i_n, i_sum), bias=bias)
    sigma_in = math.sqrt(max(float(i_sq.sum()) - total * err_ncv**2, 0.0) / (total - 1))
    rows = float(o_n.sum(axis=1).mean())  # n: every repetition tests each row once
    se_low = sigma_in / math.sqrt(rows)
    se = max(se_low, min(math.sqrt(max(mse, 0.0)), se_low * math.sqrt(k)))
    half = float(sps.norm.ppf(0.5 + level / 2)) * se
    z = estimate / se if se > 0 else math.copysign(math.inf, estimate) if estimate else math.nan
    p = float(2 * sps.norm.sf(abs(z))) if not math.isnan(z) else math.nan
    extra = dict(zip(NCV_EXTRA, (estimate, se, err_ncv, err_cv, mse), strict=True))
    return MeanTest(z, math.inf, p, estimate - half, estimate + half, extra)


def ncv_estimate(
    outer: tuple[np.ndarray, np.ndarray], inner: tuple[np.ndarray, np.ndarray], bias: bool = True
) -> tuple[float, float, float]:
    """`ncv_test`'s point estimate from the blocks' (rows, Σ l) alone, with ``Err_NCV`` (the
    inner losses' mean) and ``Err_CV`` (the outer losses' mean): ``Err_NCV − (1 + (K − 2)/K)
    (Err_NCV − Err_CV)``, or ``Err_CV`` without the `bias` correction. Linear in the losses,
    so a difference's estimate is the difference of the two learners' estimates.

    Examples
    --------
    >>> ncv_estimate((np.full((1, 3), 2), np.array([[1.0, 0.0, 2.0]])),
    ...              (np.full((1, 3, 2), 2), np.array([[[0.0, 1.0], [1.0, 0.0], [1.0, 2.0]]])))
    (0.5277777777777778, 0.4166666666666667, 0.5)
    """
    o_n, o_sum = (np.asarray(a, dtype=np.float64) for a in outer)
    i_n, i_sum = (np.asarray(a, dtype=np.float64) for a in inner)
    k = _check_shapes(o_n.shape, i_n.shape)
    err_ncv = float(i_sum.sum()) / float(i_n.sum())
    err_cv = float(o_sum.sum()) / float(o_n.sum())
    estimate = err_ncv - (1 + (k - 2) / k) * (err_ncv - err_cv) if bias else err_cv
    return estimate, err_ncv, err_cv


def _check_shapes(outer: tuple[int, ...], inner: tuple[int, ...]) -> int:
    """K, from outer (R, K) and inner (R, K, K − 1) blocks; refuses other shapes and K < 3."""
    if len(outer) != 2 or inner != (*outer, outer[1] - 1):
        raise ValueError(
            f"the nested CV interval needs outer blocks (R, K) and inner blocks (R, K, K - 1); "
            f"got {outer} and {inner}"
        )
    if outer[1] < 3:
        raise ValueError(
            f"the nested CV interval needs K >= 3 outer folds (an inner CV of at least 2 "
            f"folds); got K = {outer[1]}"
        )
    return outer[1]
