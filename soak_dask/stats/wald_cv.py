"""The Wald CV interval of Bayle, Bayle, Janson and Mackey (2020, "Cross-validation confidence
intervals for test error"), on plain per-fold sums, as mlr3inferr's ``ci.wald_cv`` computes it.

From the per-row loss differences ``d_i = l_a(i) − l_b(i)`` of one K-fold cross-validation
(every row tested once), or one learner's per-row losses ``l(i)``, the estimate is their mean
``d̄`` over all ``n`` rows and the interval ``d̄ ± z σ̂ / √n``. Its target is the test error
of the fitted models (the mean over the K fold models of each one's expected loss on a new
row), not the learner's expected error.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from scipy import stats as sps

from .mean_tests import ALPHA, MeanTest

__all__ = ["WALD_CV_EXTRA", "WALD_CV_VARIANCES", "wald_cv_test"]

#: mlr3inferr's two variance estimates (``variance=``; its default first).
WALD_CV_VARIANCES: tuple[str, ...] = ("all-pairs", "within-fold")
#: The ``extra`` entries of `wald_cv_test`'s result.
WALD_CV_EXTRA: tuple[str, ...] = ("estimate", "sd", "se")


def wald_cv_test(
    n: np.ndarray,
    sum_d: np.ndarray,
    sum_d2: np.ndarray,
    *,
    level: float = 1 - ALPHA,
    variance: str = "all-pairs",
) -> MeanTest:
    """The Wald CV test of a mean loss difference from each fold's sums.

    Parameters
    ----------
    n, sum_d, sum_d2 : ndarray
        Per fold: its test rows, ``Σ d_i`` and ``Σ d_i²`` over them.
    level : float
        The interval's coverage (default 0.95).
    variance : {"all-pairs", "within-fold"}
        ``"all-pairs"`` (mlr3inferr's default): ``σ̂² = (1/n) Σ_i (d_i − d̄)²`` over all rows.
        ``"within-fold"``: the mean over folds of each fold's sample variance (divisor
        ``n_k − 1``; refused with a fold of one row, as for leave-one-out).

    Returns
    -------
    MeanTest
        ``statistic`` z = d̄ / (σ̂/√n), ``df`` inf, two-sided ``p``, the interval, and
        ``extra``: `WALD_CV_EXTRA` (``estimate`` d̄, ``sd`` σ̂, ``se`` σ̂/√n).

    Examples
    --------
    Differences (0, 1) in one fold, (1, 2) in the other: d̄ = 1, σ̂² = 2/4.

    >>> r = wald_cv_test(np.array([2, 2]), np.array([1.0, 3.0]), np.array([1.0, 5.0]))
    >>> round(r.statistic, 4), round(r.ci_low, 4), round(r.ci_high, 4)
    (2.8284, 0.307, 1.693)
    """
    if variance not in WALD_CV_VARIANCES:
        raise ValueError(f"variance={variance!r}: choose from {list(WALD_CV_VARIANCES)}")
    n_total = int(np.sum(n))
    estimate = float(np.sum(sum_d)) / n_total
    # From the floats given, exactly: Σd²/n − d̄² loses nothing to cancellation.
    if variance == "all-pairs":
        total = sum(map(Fraction, np.asarray(sum_d, dtype=np.float64).tolist()), Fraction(0))
        squares = sum(map(Fraction, np.asarray(sum_d2, dtype=np.float64).tolist()), Fraction(0))
        var = float(max(squares / n_total - (total / n_total) ** 2, Fraction(0)))
    else:
        var = _within_fold(np.asarray(n), np.asarray(sum_d), np.asarray(sum_d2))
    se = math.sqrt(var / n_total)
    z = estimate / se if se > 0 else math.copysign(math.inf, estimate) if estimate else math.nan
    half = float(sps.norm.ppf(0.5 + level / 2)) * se
    p = float(2 * sps.norm.sf(abs(z))) if not math.isnan(z) else math.nan
    extra = dict(zip(WALD_CV_EXTRA, (estimate, math.sqrt(var), se), strict=True))
    return MeanTest(z, math.inf, p, estimate - half, estimate + half, extra)


def _within_fold(n: np.ndarray, sum_d: np.ndarray, sum_d2: np.ndarray) -> float:
    """mlr3inferr's within-fold variance: the mean of the folds' sample variances."""
    if (n < 2).any():
        raise ValueError(
            "variance='within-fold' needs at least 2 test rows per fold (leave-one-out has 1): "
            "use variance='all-pairs'"
        )
    folds = [
        (Fraction(s2) - Fraction(s) ** 2 / int(k)) / (int(k) - 1)
        for k, s, s2 in zip(n.tolist(), sum_d.tolist(), sum_d2.tolist(), strict=True)
    ]
    return float(max(sum(folds, Fraction(0)) / len(folds), Fraction(0)))
