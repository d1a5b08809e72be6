"""Tests of a mean difference of paired scores, on plain arrays: the paired t-test, its
corrected resampled form (Nadeau and Bengio 2003), the correlated Bayesian t-test (Benavoli et
al. 2017), the 5×2cv t and F tests (Dietterich 1998; Alpaydin 1999) and McNemar's test.

Each test returns a `MeanTest`: its statistic, degrees of freedom, two-sided p-value and a 95 %
interval for the mean difference from the test's own variance. They take numbers, not results,
so ``compare`` (evaluate results), ``pvalues`` (SOAK results) and the level simulations of
``benchmarks/test_level.py`` run the very same code.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from scipy import stats as sps

from ..schema import EVALUATION_DIMS, LOWER_IS_BETTER

__all__ = [
    "CONSTANT_TOL",
    "MeanTest",
    "SOAK_METHODS",
    "base_measure",
    "bayesian_test",
    "check_rope",
    "con_z_test",
    "default_rope",
    "evaluation_values",
    "five_by_two_f",
    "five_by_two_t",
    "is_constant",
    "mcnemar_test",
    "mean_ratio",
    "mean_sd",
    "paired_t",
    "paired_test",
    "right_wrong_counts",
    "soak_method_columns",
    "split_ratios",
    "sqrt_delta",
]

#: The two-sided level of every interval.
ALPHA = 0.05

# R's t.test() stops with "data are essentially constant" when the standard error is below
# 10 * .Machine$double.eps * |mean|. Using the same cut makes differences that are equal up to
# rounding noise (e.g. (y + c) - (x + c)) give "undefined" like R, not an absurd t of 1e15.
CONSTANT_TOL = 10 * np.finfo(np.float64).eps


#: The tests ``pvalues`` offers for SOAK's other/all vs same.
SOAK_METHODS: tuple[str, ...] = ("paired", "corrected", "bayesian")
# A rope on the measure's own scale, where it has one: 1 point of error, 0.01 of a share.
_ROPES = {"error": 1.0, "accuracy": 0.01, "balanced_accuracy": 0.01, "auc": 0.01}


def base_measure(measure: str) -> str:
    """The measure a variable estimates (``error`` of ``error_632`` and ``error_632plus``)."""
    return measure.removesuffix("plus").removesuffix("_632")


def default_rope(measure: str) -> float:
    """The region of practical equivalence of the Bayesian test when none is given: 1 point of
    error, 0.01 of accuracy, balanced accuracy and AUC; 0 (no rope) on other scales."""
    return _ROPES.get(base_measure(measure), 0.0)


@dataclass(frozen=True)
class MeanTest:
    """One test of a mean difference: ``statistic`` (t, F or χ²), ``df``, two-sided ``p``,
    the 95 % interval ``ci_low``..``ci_high``, and ``extra`` columns (Bayesian probabilities)."""

    statistic: float
    df: float
    p: float
    ci_low: float
    ci_high: float
    extra: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:  # plain floats, not numpy scalars
        for name in ("statistic", "df", "p", "ci_low", "ci_high"):
            object.__setattr__(self, name, float(getattr(self, name)))

    def rejects(self, alpha: float = ALPHA) -> bool:
        """Whether the test rejects a zero difference at level `alpha`."""
        return bool(self.p < alpha)


def mean_sd(values: np.ndarray) -> tuple[float, float]:
    """Mean and SD (ddof=1) that are NaN, without a RuntimeWarning, when undefined."""
    n = values.size
    mean = float(values.mean()) if n >= 1 else math.nan
    sd = float(values.std(ddof=1)) if n >= 2 else math.nan
    return mean, sd


def is_constant(mean_diff: float, sd_diff: float, n: int) -> bool:
    """Whether `n` differences are constant up to rounding: R's "essentially constant" data."""
    return sd_diff == 0 or sd_diff / math.sqrt(n) < CONSTANT_TOL * abs(mean_diff)


def paired_t(mean_diff: float, sd_diff: float, n: int, ratio: float = 0.0) -> tuple[float, float]:
    """t and two-sided p (``n - 1`` df) of a paired t-test of `n` >= 2 non-constant differences.

    The variance of the mean difference is ``sd_diff² · (1/n + ratio)``: ``ratio = 0`` is the
    plain test, ``ratio = n_test / n_train`` the corrected resampled t-test of Nadeau and
    Bengio (2003), which accounts for the overlap of the train sets (written so that
    ``ratio = 0`` gives exactly the plain test's floats).
    """
    t = mean_diff / (sd_diff / math.sqrt(n) * math.sqrt(1 + n * ratio))
    return t, float(2 * sps.t.sf(abs(t), n - 1))


def paired_test(diff: np.ndarray, ratio: float = 0.0) -> MeanTest:
    """Paired t-test of `diff` (``ratio = n_test / n_train``: corrected), with its interval
    ``mean ± t(n−1, .975) · sd · √(1/n + ratio)``.

    Examples
    --------
    >>> r = paired_test(np.array([1.0, 2.0, 3.0]))
    >>> round(r.statistic, 4), r.df, round(r.p, 4), round(r.ci_low, 4), round(r.ci_high, 4)
    (3.4641, 2.0, 0.0742, -0.4841, 4.4841)
    """
    n = diff.size
    mean, sd = mean_sd(diff)
    t, p = paired_t(mean, sd, n, ratio)
    half = sps.t.ppf(1 - ALPHA / 2, n - 1) * sd * math.sqrt(1 / n + ratio)
    return MeanTest(t, float(n - 1), p, mean - half, mean + half)


def bayesian_test(diff: np.ndarray, ratio: float, rope: float) -> MeanTest:
    """Correlated Bayesian t-test (Benavoli, Corani, Demšar and Zaffalon 2017) of `diff`.

    The posterior of the mean difference is a Student t with ``J − 1`` df, location
    ``mean(diff)`` and scale ``√((1/J + ρ/(1−ρ)) · s²)``, with ρ = n_test/(n_train + n_test)
    the correlation of resampled scores (so ``ρ/(1−ρ) = ratio = n_test/n_train``: the
    Nadeau–Bengio variance). ``extra`` holds ``p_left`` = P(δ < −rope), ``p_rope`` =
    P(|δ| ≤ rope) and ``p_right`` = P(δ > rope), which sum to 1; the interval is the
    posterior's central 95 %; ``statistic`` is location / scale and ``p`` NaN (not a
    frequentist test).

    Examples
    --------
    >>> r = bayesian_test(np.array([1.0, 2.0, 3.0]), 0.0, 0.5)
    >>> {k: round(v, 4) for k, v in r.extra.items()}
    {'p_left': 0.0247, 'p_rope': 0.0361, 'p_right': 0.9392}
    """
    if not rope >= 0:
        raise ValueError(f"rope={rope!r}: need a half-width of at least 0 (0: no rope)")
    n = diff.size
    mean, sd = mean_sd(diff)
    scale = sd * math.sqrt(1 / n + ratio)
    posterior = sps.t(n - 1, loc=mean, scale=scale)
    left = float(posterior.cdf(-rope))
    right = float(posterior.sf(rope))
    low, high = posterior.ppf([ALPHA / 2, 1 - ALPHA / 2])
    probs = {"p_left": left, "p_rope": max(0.0, 1.0 - left - right), "p_right": right}
    return MeanTest(mean / scale, float(n - 1), math.nan, float(low), float(high), probs)


def sqrt_delta(
    estimate: float, se: float, level: float = 1 - ALPHA
) -> tuple[float, float, float, float]:
    """The delta method for the square root of an estimate (RMSE from MSE, as mlr3inferr's
    intervals of RMSE): ``√estimate``, its se ``se / (2 √estimate)``, and the interval
    ``√estimate ± z(level)`` times that se.

    Examples
    --------
    >>> [round(v, 4) for v in sqrt_delta(4.0, 0.4)]
    [2.0, 0.1, 1.804, 2.196]
    """
    root = math.sqrt(estimate)
    scaled = se / (2 * root)
    half = float(sps.norm.ppf(0.5 + level / 2)) * scaled
    return root, scaled, root - half, root + half


def con_z_test(estimate: float, halves: np.ndarray) -> MeanTest:
    """Nadeau and Bengio's (2003) conservative Z test of a mean difference (mlr3inferr's
    ``ci.con_z``).

    `halves` is (R, 2): for each of R random splits of the data into two disjoint halves, the
    design's estimate of the difference on each half. ``σ̂² = Σ_r (μ̂_r1 − μ̂_r2)² / (2R)``
    estimates the variance of an estimate on n/2 rows, so of one on all n rows it is too large:
    the test is conservative. ``z = estimate / σ̂`` on a standard normal (``df`` is inf), the
    interval ``estimate ± z(.975) σ̂``.

    Examples
    --------
    >>> r = con_z_test(1.0, np.array([[1.0, 3.0], [2.0, 2.0], [0.0, 1.0]]))
    >>> round(r.statistic, 4), round(r.p, 4), round(r.ci_low, 4), round(r.ci_high, 4)
    (1.0954, 0.2733, -0.7892, 2.7892)
    """
    if halves.ndim != 2 or halves.shape[1] != 2 or halves.shape[0] < 2:
        raise ValueError(
            f"the conservative Z test needs an (R, 2) array of the two halves' estimates, "
            f"R >= 2 repeats; got shape {halves.shape}"
        )
    sd = math.sqrt(float(((halves[:, 0] - halves[:, 1]) ** 2).sum()) / (2 * halves.shape[0]))
    z = estimate / sd
    half = sps.norm.ppf(1 - ALPHA / 2) * sd
    return MeanTest(z, math.inf, float(2 * sps.norm.sf(abs(z))), estimate - half, estimate + half)


def _five_by_two(diff: np.ndarray) -> tuple[int, float]:
    """R (repeats) and Σ s_i², s_i² the variance of repeat i's two fold differences."""
    if diff.ndim != 2 or diff.shape[1] != 2 or diff.shape[0] < 2:
        raise ValueError(
            f"5x2cv tests need an (R, 2) array of differences, R >= 2 repeats of 2-fold CV; "
            f"got shape {diff.shape}"
        )
    s2 = ((diff - diff.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)
    return diff.shape[0], float(s2.sum())


def _five_by_two_interval(diff: np.ndarray, r: int, s2: float) -> tuple[float, float]:
    """mean(diff) ± t(R, .975) · σ̂, σ̂² = Σ s_i² / R: the 5×2cv test's own standard error
    (of one fold's difference; the mean of the 2R correlated differences varies less)."""
    half = sps.t.ppf(1 - ALPHA / 2, r) * math.sqrt(s2 / r)
    mean = float(diff.mean())
    return mean - half, mean + half


def five_by_two_t(diff: np.ndarray) -> MeanTest:
    """Dietterich's (1998) 5×2cv paired t-test: ``t = p₁₁ / √(Σ s_i² / R)``, R df.

    `diff` is (R, 2): repeat i, fold j's difference of the two learners (R = 5 in the paper).

    Examples
    --------
    >>> d = np.array([[1.0, 3.0], [2.0, 2.0], [0.0, 2.0], [1.0, 1.0], [3.0, 1.0]])
    >>> r = five_by_two_t(d)
    >>> round(r.statistic, 4), r.df, round(r.p, 4)
    (0.9129, 5.0, 0.4032)
    """
    r, s2 = _five_by_two(diff)
    t = float(diff[0, 0]) / math.sqrt(s2 / r)
    return MeanTest(
        t, float(r), float(2 * sps.t.sf(abs(t), r)), *_five_by_two_interval(diff, r, s2)
    )


def five_by_two_f(diff: np.ndarray) -> MeanTest:
    """Alpaydin's (1999) combined 5×2cv F test: ``F = Σ p_ij² / (2 Σ s_i²)`` on (2R, R) df
    (``df`` holds R, the denominator's); the interval is `five_by_two_t`'s.

    Examples
    --------
    >>> d = np.array([[1.0, 3.0], [2.0, 2.0], [0.0, 2.0], [1.0, 1.0], [3.0, 1.0]])
    >>> r = five_by_two_f(d)
    >>> round(r.statistic, 4), r.df, round(r.p, 4)
    (2.8333, 5.0, 0.1309)
    """
    r, s2 = _five_by_two(diff)
    f = float((diff**2).sum()) / (2 * s2)
    return MeanTest(f, float(r), float(sps.f.sf(f, 2 * r, r)), *_five_by_two_interval(diff, r, s2))


def mcnemar_test(b: int, c: int, n: int, exact: bool = True) -> MeanTest:
    """McNemar's test of two classifiers on the same `n` test rows.

    `b` rows are right for the first and wrong for the second, `c` the reverse. The
    difference of error rates ``(c − b) / n`` (first minus second) has the Wald 95 % interval
    of paired proportions, ``±1.96 √(b + c − (c − b)²/n) / n``. ``statistic`` is the
    continuity-corrected χ² ``(|b − c| − 1)² / (b + c)`` (1 df); ``p`` is the exact binomial
    test of ``b`` among ``b + c`` at 1/2 (``exact``, always within its level) or the χ²'s.

    Examples
    --------
    >>> r = mcnemar_test(2, 10, 50)
    >>> round(r.statistic, 4), round(r.p, 4), round(r.ci_low, 4), round(r.ci_high, 4)
    (4.0833, 0.0386, 0.0317, 0.2883)
    """
    m = b + c
    if m == 0:
        return MeanTest(0.0, 1.0, 1.0, 0.0, 0.0)
    chi2 = (abs(b - c) - 1) ** 2 / m
    p = (
        min(1.0, 2 * float(sps.binom.cdf(min(b, c), m, 0.5)))
        if exact
        else float(sps.chi2.sf(chi2, 1))
    )
    d = (c - b) / n
    half = sps.norm.ppf(1 - ALPHA / 2) * math.sqrt(max(m - (c - b) ** 2 / n, 0.0)) / n
    return MeanTest(float(chi2), 1.0, p, d - half, d + half)


def right_wrong_counts(correct: list[np.ndarray]) -> np.ndarray:
    """``counts[i, j]``: rows that learner i classifies right and learner j wrong, from each
    learner's per-row correctness on the same rows (the discordant cells of McNemar's table)."""
    right = np.array(correct, dtype=np.int64)
    return right @ (1 - right).T


def mean_ratio(ratios: np.ndarray) -> float:
    """Mean ``n_test / n_train`` of the cells a corrected test pairs, NaN where unknown."""
    finite = ratios[np.isfinite(ratios)]
    return float(finite.mean()) if finite.size else math.nan


def split_ratios(ds: xr.Dataset, dims: tuple[str, ...]) -> np.ndarray:
    """``n_test / n_train`` of every cell, axes in `dims` order, for the corrected t-test."""
    missing = [v for v in ("n_train", "n_test") if v not in ds.data_vars]
    if missing:
        raise ValueError(
            f"corrected=True needs the train and test rows of every split, but the results lack "
            f"{' and '.join(missing)}; pass corrected=False (method='paired'; the corrected "
            "and Bayesian tests need them too), or add n_train and n_test "
            "(rows in the train set and in the test block) with the measures' dims"
        )
    n_train, n_test = (
        np.asarray(
            ds[v]
            .expand_dims({d: ds.sizes[d] for d in dims if d not in ds[v].dims})
            .transpose(*dims)
            .values,
            dtype=np.float64,
        )
        for v in ("n_train", "n_test")
    )
    with np.errstate(divide="ignore", invalid="ignore"):  # no train rows: no ratio
        return np.where(n_train > 0, n_test / n_train, math.nan)


def evaluation_values(ds: xr.Dataset, name: str) -> np.ndarray:
    """Float array of one variable, one row per learner, its (repeat, fold) cells flattened."""
    values = np.asarray(ds[name].transpose(*EVALUATION_DIMS).values, dtype=np.float64)
    return values.reshape(ds.sizes["learner"], -1)


def check_rope(rope: Any, method: str, recommended: bool = False) -> None:
    """Refuse a `rope` that the test `method` does not read: only the Bayesian test has one.

    Parameters
    ----------
    rope : float or None
        The half-width asked for; None (not given) is always accepted.
    method : str
        The test that will run.
    recommended : bool
        The caller did not name `method`: it is the design's recommended test.

    Examples
    --------
    >>> check_rope(5, "paired")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: rope=5 is the Bayesian test's region of practical equivalence, ...
    """
    if rope is None or method == "bayesian":
        return
    which = f"the recommended test ({method!r})" if recommended else f"method={method!r}"
    raise ValueError(
        f"rope={rope!r} is the Bayesian test's region of practical equivalence, and {which} "
        "has none: leave rope out, or pass method='bayesian'"
    )


def soak_method_columns(
    table: pd.DataFrame, method: str, rope: float | None = None
) -> pd.DataFrame:
    """`table` (rows of ``pvalues``, with ``n``, ``mean_diff``, ``sd_diff`` and, unless
    `method` is ``"paired"``, ``test_train_ratio``, ``t_corrected``, ``p_corrected``) with the
    columns of `method`'s test filled in: ``method``; ``ci_low``, ``ci_high`` (the 95 %
    interval of ``compare − same`` from `method`'s variance: ``sd² / n``, or ``sd² (1/n +
    n_test/n_train)`` for ``"corrected"`` and ``"bayesian"``); for ``"corrected"`` its
    ``statistic`` and ``p``; for ``"bayesian"`` the posterior's ``statistic`` (location over
    scale), ``p`` NaN and, at the end, ``rope``, ``p_compare_better``, ``p_equivalent`` and
    ``p_reference_better`` (NaN where the test is not defined). A `rope` is the Bayesian
    test's only: given with another `method` it is refused (`check_rope`)."""
    if method not in SOAK_METHODS:
        raise ValueError(
            f"method={method!r} is not a test of pvalues; choose from {list(SOAK_METHODS)}"
        )
    check_rope(rope, method)
    out = table.copy()
    out["method"] = method
    if method != "paired":
        out["statistic"], out["p"] = out["t_corrected"], out["p_corrected"]
    extra = ["ci_low", "ci_high"] + (
        ["rope", "p_compare_better", "p_equivalent", "p_reference_better"] * (method == "bayesian")
    )
    values = {c: np.full(len(table), math.nan) for c in extra}
    for i, row in enumerate(table.itertuples(index=False)):
        n = int(row.n)
        ratio = 0.0 if method == "paired" else float(row.test_train_ratio)
        if n < 2 or not math.isfinite(ratio) or is_constant(row.mean_diff, row.sd_diff, n):
            continue
        scale = row.sd_diff * math.sqrt(1 / n + ratio)
        posterior = sps.t(n - 1, loc=row.mean_diff, scale=scale)
        values["ci_low"][i], values["ci_high"][i] = posterior.ppf([ALPHA / 2, 1 - ALPHA / 2])
        if method == "bayesian":
            width = default_rope(row.measure) if rope is None else float(rope)
            left, right = float(posterior.cdf(-width)), float(posterior.sf(width))
            lower = base_measure(row.measure) in LOWER_IS_BETTER
            values["rope"][i] = width
            values["p_compare_better"][i] = left if lower else right
            values["p_reference_better"][i] = right if lower else left
            values["p_equivalent"][i] = max(0.0, 1.0 - left - right)
    if method == "bayesian":
        out["p"] = math.nan
    for c in extra:
        out[c] = values[c]
    return out
