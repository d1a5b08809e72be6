"""Comparing two learners of an ``evaluate`` result: `compare`, with the test each design
needs and an interval for the mean difference.

Resampled scores are not independent (train sets overlap), so the plain paired t-test over
cells rejects a true null far too often (``benchmarks/test_level.py``). `compare` offers the
paired test, its Nadeau–Bengio correction, the correlated Bayesian t-test, the 5×2cv t and F
tests, McNemar's test on the reserved test split and the conservative Z test of the design's
runs in pairs of halves (``evaluate(..., inference="con_z")``), the Wald CV interval of
the per-row loss differences (Bayle et al. 2020, ``method="wald_cv"``) and the nested CV interval
of Bates, Hastie and Tibshirani (2023, ``evaluate(..., inference="ncv")``, ``method="ncv"``); by
default it runs the test
the level simulations recommend for the result's design (`recommended_method`) and says in
``note`` when no test held its level there, or which ``evaluate`` option gives one that did.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from ..schema import (
    EVALUATION_DIMS,
    LOWER_IS_BETTER,
    PAIRED_TEST_COLUMNS,
    PAIRED_TEST_TEXT,
    POINTWISE,
)
from ..stats.mean_tests import (
    MeanTest,
    base_measure,
    bayesian_test,
    check_rope,
    con_z_test,
    default_rope,
    evaluation_values,
    five_by_two_f,
    five_by_two_t,
    is_constant,
    mcnemar_test,
    mean_ratio,
    mean_sd,
    paired_test,
    split_ratios,
)
from ..stats.nested_cv import ncv_test
from ..stats.wald_cv import wald_cv_test
from .kinds import validate_evaluation
from .ncv import ncv_missing, ncv_point, ncv_sums
from .text import text_table
from .verdicts import NO_EVIDENCE, with_verdicts

__all__ = [
    "ABOUT",
    "COMPARE_COLUMNS",
    "EXTRA_FITS",
    "MEASURED",
    "METHODS",
    "NCV_COVERAGE",
    "NCV_DIFFERENCE",
    "WALD_CV_COVERAGE",
    "compare",
    "comparison_text",
    "comparisons",
    "level_note",
    "recommended_method",
    "result_fits",
]

#: The tests of `compare`.
METHODS: tuple[str, ...] = (
    "paired", "corrected", "bayesian", "5x2cv", "5x2cv_f", "mcnemar", "con_z", "wald_cv", "ncv",
)  # fmt: skip
#: Tests that read extra fits of the result -> the ``evaluate`` option that makes them.
EXTRA_FITS: dict[str, str] = {"con_z": "inference='con_z'", "ncv": "inference='ncv'"}
#: Tests that need the design's cells in (repeat, 2 folds), and those of the test split.
_FIVE_BY_TWO = ("5x2cv", "5x2cv_f")
TEST_SPLIT = "test_split"

#: (type-I error, power) at α = 0.05 measured by ``benchmarks/test_level.py`` (1000 true
#: nulls, 500 alternatives, one run: ``--pairs 10``, seed 20231; two k-NN learners, n = 200),
#: by design and test. ``cv`` is 10-fold CV, ``repeated_cv`` 5 × 10-fold, ``subsampling``
#: 15 × 90/10 splits, ``bootstrap`` 20 resamples, ``test_split`` a 25 % test split; ``con_z``
#: with R = 10 pairs of halves. The Bayesian test "rejects" when P(a better) or P(b better)
#: > 0.95 (rope 1 point).
MEASURED: dict[tuple[str, str], tuple[float, float]] = {
    ("cv", "paired"): (0.120, 0.662),
    ("cv", "corrected"): (0.031, 0.416),
    ("cv", "bayesian"): (0.051, 0.510),
    ("cv", "con_z"): (0.018, 0.316),
    ("repeated_cv", "paired"): (0.510, 0.950),
    ("repeated_cv", "corrected"): (0.092, 0.664),
    ("repeated_cv", "bayesian"): (0.115, 0.722),
    ("repeated_cv", "con_z"): (0.017, 0.362),
    ("subsampling", "paired"): (0.293, 0.798),
    ("subsampling", "corrected"): (0.092, 0.558),
    ("subsampling", "bayesian"): (0.116, 0.618),
    ("subsampling", "con_z"): (0.015, 0.266),
    ("5x2cv", "paired"): (0.542, 0.958),
    ("5x2cv", "corrected"): (0.046, 0.620),
    ("5x2cv", "bayesian"): (0.071, 0.696),
    ("5x2cv", "5x2cv"): (0.137, 0.616),
    ("5x2cv", "5x2cv_f"): (0.169, 0.786),
    ("5x2cv", "con_z"): (0.011, 0.486),
    ("bootstrap", "paired"): (0.557, 0.954),
    ("bootstrap", "corrected"): (0.103, 0.738),
    ("bootstrap", "bayesian"): (0.131, 0.766),
    ("bootstrap", "con_z"): (0.012, 0.426),
    ("test_split", "mcnemar"): (0.031, 0.234),
}
#: Coverage of the Wald CV test's 95 % interval of two fitted models' true difference, by
#: measure, measured by ``benchmarks/wald_cv_coverage.py`` (1,000 replicates of 5-fold CV on
#: n = 1,000 rows, logistic regression against LDA, the truth on 10⁵ new rows); its type-I
#: error at α = 0.05 on its own null is 1 − this.
WALD_CV_COVERAGE: dict[str, float] = {"error": 0.932, "log_loss": 0.879}
#: Coverage of one learner's 90 % nested CV interval of its error (0/1 loss) of the model
#: fitted on all rows, measured by ``benchmarks/ncv_coverage.py`` (Bates et al.'s sparse
#: logistic setting: n = 90, p = 1,000, L1 logistic regression, R = 10): ``ncv_paper`` and
#: ``naive_paper`` (one 10-fold CV) in the paper's setting, K = 10 and the penalty per row the
#: same on every train set as its glmnet at one λ (400 replicates, Monte-Carlo SE 0.017 and
#: 0.024); ``ncv`` and ``naive`` at K = 5 and a fixed C (400 replicates, SE 0.019 and 0.024).
NCV_COVERAGE: dict[str, float] = {
    "ncv_paper": 0.875,
    "naive_paper": 0.655,
    "ncv": 0.823,
    "naive": 0.650,
}
#: The nested CV test of a difference (``compare(method="ncv")``) on 10-fold CV with R = 10
#: splits, two k-NN learners, n = 200 (``benchmarks/ncv_difference.py``, the tables of
#: ``benchmarks/test_level.py``): ``covers``, how often its 95 % interval held the true
#: difference of the two models fitted on all rows (600 symmetric-null tables; its level on
#: its own null is 1 − this), and at α = 0.05 its rejections of the resampling tests' null
#: (the learners on a new sample; 1,000 nulls) and its power (500 alternatives), by
#: ``benchmarks/test_level.py --only 6``. Its blocks do not depend on the design's repeats, so
#: the numbers hold for ``repeated_cv`` too.
NCV_DIFFERENCE: dict[str, float] = {"covers": 0.957, "learners_null": 0.086, "power": 0.568}
#: The largest type-I error at α = 0.05 that counts as holding the level (over ≥ 500 nulls).
LEVEL_LIMIT = 0.06
# Tests that give a p-value and may be a design's default (the Bayesian test gives none).
_FREQUENTIST = ("paired", "corrected", "5x2cv", "5x2cv_f", "mcnemar", "con_z")

#: Columns of `compare`: the paired-test columns of every design
#: (``schema.PAIRED_TEST_COLUMNS``; ``compare`` is learner a, ``reference`` learner b), what
#: each test is about (`ABOUT`), then the mean test/train ratio of the cells and the Bayesian
#: test's rope and probabilities.
COMPARE_COLUMNS: list[str] = [
    *PAIRED_TEST_COLUMNS,
    "null",
    "level",
    "extra_fits",
    "test_train_ratio",
    "rope",
    "p_compare_better",
    "p_equivalent",
    "p_reference_better",
]
#: What the columns `compare` adds to every paired test's say of each row.
ABOUT: dict[str, str] = {
    "null": "what the test is about: the learners (each trained anew on a sample of the train "
    "sets' size, new rows scored) or these fitted models (on new rows like the test split's: "
    "McNemar; of the population: wald_cv)",
    "level": "its type-I error at α = 0.05 measured on this design (`MEASURED`); NaN: not measured",
    "extra_fits": "model fits the result made for this test beyond the design's own (con_z: "
    "its pairs of halves, ncv: its nested K-fold splits; every learner); 0: none; NaN: not "
    "recorded",
}
# The columns of a row that are numbers, NaN until computed.
_FLOATS = [c for c in COMPARE_COLUMNS if c not in (*PAIRED_TEST_TEXT, "null")]


def recommended_method(outer: str, fits: Iterable[str] = ()) -> str:
    """The test `compare` runs by default on resampling design `outer`: of the tests with a
    p-value that held their level in `MEASURED` -- those needing extra fits (`EXTRA_FITS`)
    only if named in `fits`, the ones the result holds -- the most powerful; where none held,
    the one closest to its level (its rows carry a note); ``corrected`` on designs not
    simulated."""
    fits = set(fits)
    tried = {
        m: v
        for (d, m), v in MEASURED.items()
        if d == outer and m in _FREQUENTIST and (m not in EXTRA_FITS or m in fits)
    }
    if not tried:
        return "corrected"
    holding = {m: power for m, (level, power) in tried.items() if level <= LEVEL_LIMIT}
    if holding:
        return max(holding, key=holding.__getitem__)
    return min(tried, key=lambda m: tried[m][0])


def level_note(outer: str, method: str, fits: Iterable[str] = ()) -> str:
    """What the level simulations say of `method` on `outer`, or "" where it held its level;
    where a test that held it needs extra fits the result lacks (not in `fits`), the
    ``evaluate`` option that makes them."""
    measured = MEASURED.get((outer, method))
    if measured is None:
        return (
            f"the level of the {method} test on outer={outer!r} was not measured "
            "(benchmarks/test_level.py simulates cv, repeated_cv, subsampling, 5x2cv, bootstrap "
            "and the test split)"
        )
    level = measured[0]
    if level <= LEVEL_LIMIT:
        return ""
    best = recommended_method(outer, fits)
    wanting = [
        m
        for (d, m), v in MEASURED.items()
        if d == outer and m in EXTRA_FITS and m not in fits and v[0] <= LEVEL_LIMIT
    ]
    if MEASURED.get((outer, best), (1.0,))[0] <= LEVEL_LIMIT and best != method:
        tail = f"; method={best!r} holds it"
    elif wanting:
        tail = (
            f"; method={wanting[0]!r} holds it, with the extra fits of "
            f"evaluate(..., {EXTRA_FITS[wanting[0]]}), which these results lack"
        )
    else:
        tail = (
            "; no test held its level on this design: read p as too small and the interval "
            "as too narrow"
        )
        closest = recommended_method(outer, EXTRA_FITS)
        if closest not in (method, *fits) and closest in EXTRA_FITS:
            tail += (
                f" (method={closest!r} came closest, {MEASURED[(outer, closest)][0]:.1%}, with "
                f"evaluate(..., {EXTRA_FITS[closest]}))"
            )
    return (
        f"on a true null the {method} test rejected {level:.1%} of simulations at α = 0.05 on "
        f"this design (benchmarks/test_level.py: k-NN, n = 200){tail}"
    )


def result_fits(ds: xr.Dataset) -> tuple[str, ...]:
    """The tests of `EXTRA_FITS` whose extra fits `ds` holds (``attrs["inference"]``)."""
    return tuple(m for m in EXTRA_FITS if ds.attrs.get("inference") == m)


def _check_method(method: Any, corrected: Any) -> str | None:
    if corrected is not None:
        if not isinstance(corrected, bool):
            raise ValueError(f"corrected={corrected!r}: need True or False")
        if method is not None:
            raise ValueError(
                f"give method= or corrected=, not both (method={method!r}, "
                f"corrected={corrected!r}); corrected=True is method='corrected'"
            )
        return "corrected" if corrected else "paired"
    if method is not None and method not in METHODS:
        raise ValueError(f"method={method!r} is not a test; choose from {list(METHODS)} or None")
    return method


def _learner_indices(ds: xr.Dataset, a: str, b: str) -> tuple[int, int]:
    learners = [str(v) for v in ds["learner"].values.tolist()]
    for role, name in (("a", a), ("b", b)):
        if name not in learners:
            raise ValueError(
                f"{role}={name!r} is not a learner of the results; available: "
                f"{', '.join(map(repr, learners))}"
            )
    if a == b:
        raise ValueError(f"a and b are both {a!r}: compare two different learners")
    return learners.index(a), learners.index(b)


def compare(
    ds: xr.Dataset,
    a: str,
    b: str,
    measure: str | Iterable[str] | None = None,
    method: str | None = None,
    *,
    rope: float | None = None,
    corrected: bool | None = None,
) -> pd.DataFrame:
    """Compare learner `a` with learner `b` on the same resampling cells (and test split).

    Both learners are scored on the same (repeat, fold) test sets, so their scores pair by
    cell: ``δ_i = θ_i(a) − θ_i(b)`` over the ``n`` cells where both are finite.

    Parameters
    ----------
    ds : xarray.Dataset
        Results of ``evaluate()``.
    a, b : str
        Two different learners of ``ds.learner``.
    measure : str or iterable of str, optional
        Measure(s) to compare, one row each. Default: see ``validate_evaluation``.
    method : str, optional
        One of `METHODS`:
        - ``"paired"``: t-test of mean δ = 0, ``t = mean(δ) / (sd(δ)/√n)``, ``n − 1`` df
          (``scipy.stats.ttest_rel``). Too liberal on resampled cells (their train sets
          overlap): see ``note``.
        - ``"corrected"``: Nadeau and Bengio (2003), variance ``sd(δ)² (1/n + n_test/n_train)``
          (mean ratio of the paired cells; needs ``n_train``, ``n_test``).
        - ``"bayesian"``: the correlated Bayesian t-test of Benavoli et al. (2017): the
          posterior of the mean difference is a t with ``n − 1`` df, location ``mean(δ)``,
          scale ``√((1/n + ρ/(1−ρ)) sd(δ)²)``, ρ = n_test/(n_train + n_test); columns
          ``p_compare_better`` (`a` better), ``p_equivalent`` (|δ| ≤ `rope`),
          ``p_reference_better`` (`b` better); ``p`` is NaN.
        - ``"5x2cv"`` (Dietterich 1998), ``"5x2cv_f"`` (Alpaydin 1999): for ``outer="5x2cv"``
          (R repeats of 2-fold CV): ``t = δ₁₁ / √(Σ s_i²/R)`` on R df, ``F = Σ δ_ij² /
          (2 Σ s_i²)`` on (2R, R) df (``df`` holds R).
        - ``"mcnemar"``: McNemar's exact test of the final models on the reserved test split
          (``error`` or ``accuracy``; needs ``test_right_wrong``, which ``evaluate`` stores for
          classification with ``test_split``); ``n`` its rows.
        - ``"con_z"``: Nadeau and Bengio's (2003) conservative Z test (mlr3inferr's
          ``ci.con_z``) of ``mean(δ)``, from the design's runs in R pairs of disjoint halves
          that ``evaluate(..., inference="con_z", inference_repeats=R)`` records
          (``con_z_<measure>``): ``σ̂² = Σ_r (μ̂_r1 − μ̂_r2)² / (2R)``, μ̂ a half's mean δ;
          ``z = mean(δ) / σ̂`` (``df`` inf), interval ``mean(δ) ± 1.96 σ̂``. Results without
          those fits are refused, naming the option.
        - ``"wald_cv"``: Bayle et al.'s (2020) Wald CV interval (mlr3inferr's ``ci.wald_cv``,
          its default all-pairs variance), for one K-fold CV (``outer="cv"``) or leave-one-out
          on ungrouped rows: from the per-row loss differences ``d_i = l_a(i) − l_b(i)`` of all
          ``n`` rows (``loss_diff_sq_<measure>``, which ``evaluate`` records), ``d̄ ± 1.96
          σ̂/√n``, ``σ̂² = (1/n) Σ (d_i − d̄)²``, ``z = d̄/(σ̂/√n)``; no extra fits. Its null is
          these fitted models' test error, not the learners'. Pointwise measures only
          (error, accuracy, log loss, MSE, MAE): a row of another gives the ``reason``. Each
          learner's own interval: ``soak_dask.wald_cv_intervals``.
        - ``"ncv"``: the nested CV interval of Bates, Hastie and Tibshirani (2023; their
          Algorithm 1, as mlr3inferr's ``ci.ncv`` computes it) from the blocks that
          ``evaluate(..., inference="ncv", inference_repeats=R)`` records, run on the per-row
          loss differences ``d_i = l_a(i) − l_b(i)`` (mlr3inferr's ``ci.ncv`` is for one
          learner; a difference of two pointwise losses is one too):
          ``mean_diff`` the bias-corrected NCV estimate, interval ``± 1.96 se``, ``se²`` the
          NCV estimate of the CV estimate's mean squared error, bounded by the naive
          ``σ²/n`` and K times it; ``z = mean_diff / se`` (``df`` inf); ``compare_mean``,
          ``reference_mean`` each learner's NCV estimate, ``n`` the rows. Pointwise measures
          only. Each learner's own interval: ``soak_dask.ncv_intervals``.
        - None (default): the design's recommended test (`recommended_method` of
          ``ds.attrs["outer"]`` and the extra fits the result holds, `result_fits`), and
          for ``error``/``accuracy`` also McNemar's when the
          result has a test split: one row each.
    rope : float, optional
        Half-width of the Bayesian test's region of practical equivalence, in the measure's
        units. Default `default_rope` (1 point of error, 0.01 of accuracy or AUC, else 0).
        Only ``method="bayesian"`` reads it: given to another test it is refused.
    corrected : bool, optional
        The earlier form of `method`: True is ``"corrected"``, False ``"paired"``.

    Returns
    -------
    pandas.DataFrame
        `COMPARE_COLUMNS`: the paired-test columns of every design
        (``soak_dask.schema.PAIRED_TEST_COLUMNS``), one row per measure and test:
        ``reference`` (`b`), ``compare`` (`a`), ``measure``, ``n``; ``compare_mean``,
        ``compare_sd`` (of `a`), ``reference_mean``, ``reference_sd`` (of `b`; ddof=1; the
        test split's scores for McNemar); ``mean_diff`` (a − b), ``sd_diff``; ``ci_low``,
        ``ci_high``: the 95 % interval of the mean difference from the test's own variance
        (the posterior's for Bayesian; Wald on the difference of error rates for McNemar; for
        5×2cv ``mean ± t(R) σ̂``);
        ``statistic`` (t, F or χ²), ``df``, ``p`` (two-sided); ``method``; ``note``: what the
        level simulations say of this test on this design ("" when it held its level);
        ``reason``: "" when the test is defined, else why not; then ``test_train_ratio``,
        ``rope`` and the Bayesian probabilities (NaN for other tests). For error-like
        measures a negative ``mean_diff`` means `a` is better; for scores (accuracy, AUC, R²)
        a positive one.

    Raises
    ------
    ValueError
        If `a` or `b` is not a learner of `ds`, ``a == b``, a measure is unknown, `method` is
        unknown or the result lacks what it needs (``n_train``/``n_test``; 2 folds per repeat
        for 5×2cv; a scored test split for McNemar), or the design is unknown with
        ``method=None``.

    Examples
    --------
    >>> import xarray as xr
    >>> ds = xr.Dataset(
    ...     {"error": (("learner", "repeat", "fold"), [[[10.0, 12.0, 11.0]], [[15, 16, 18]]])},
    ...     coords={"learner": ["tree", "lasso"], "repeat": [1], "fold": [1, 2, 3]})
    >>> compare(ds, "lasso", "tree", "error", "paired")[["n", "mean_diff", "statistic", "p",
    ...                                                   "ci_low", "ci_high"]].round(4)
       n  mean_diff  statistic       p  ci_low  ci_high
    0  3     5.3333     6.0474  0.0263  1.5388   9.1279
    """
    names = validate_evaluation(ds, measure)
    chosen = _check_method(method, corrected)
    ia, ib = _learner_indices(ds, a, b)
    outer = str(ds.attrs.get("outer", ""))
    if chosen is None and not outer:
        raise ValueError(
            "the results do not say their design (attrs['outer']), so the recommended test is "
            f"unknown; pass method= one of {list(METHODS)}"
        )
    fits = result_fits(ds)
    resampling = recommended_method(outer, fits) if chosen is None else chosen
    if resampling in EXTRA_FITS and resampling not in fits:
        raise ValueError(
            f"method={resampling!r} reads extra fits these results lack: run "
            f"evaluate(..., {EXTRA_FITS[resampling]}) (soak evaluate --inference "
            f"{resampling}), or pass another method of {list(METHODS)}"
        )
    check_rope(rope, resampling, recommended=chosen is None)
    ratios = None
    if resampling in ("corrected", "bayesian") or {"n_train", "n_test"} <= set(ds.data_vars):
        if resampling != "mcnemar":
            ratios = split_ratios(ds, EVALUATION_DIMS).reshape(ds.sizes["learner"], -1)
    if resampling == "wald_cv":
        check_wald_cv_design(ds, outer)
    if resampling in _FIVE_BY_TWO and ds.sizes["fold"] != 2:
        raise ValueError(
            f"method={resampling!r} needs 2 folds per repeat (outer='5x2cv'); these results "
            f"have {ds.sizes['fold']} folds (outer={outer!r})"
        )
    counts = (
        _right_wrong(ds, ia, ib, required=chosen == "mcnemar")
        if chosen in (None, "mcnemar")
        else None
    )
    rows = []
    for m in names:
        if resampling == "ncv":
            rows.append(ncv_row(ds, m, (ia, ib)))
            continue
        if resampling == "wald_cv":
            rows.append(wald_cv_row(ds, m, (ia, ib), wald_cv_note(outer, m)))
            continue
        if chosen != "mcnemar":
            note = level_note(outer, resampling, fits)
            rows.append(_cells_row(ds, m, (ia, ib), resampling, ratios, rope, note))
        if counts is not None and base_measure(m) in ("error", "accuracy") and m == base_measure(m):
            rows.append(_mcnemar_row(ds, m, (ia, ib), counts))
        elif chosen == "mcnemar":
            rows.append(_unsupported_mcnemar(m))
    for row in rows:
        row.update(_about(ds, outer, row["method"], row["measure"], (ia, ib)))
    out = pd.DataFrame(rows, columns=COMPARE_COLUMNS).assign(reference=b, compare=a)
    return out.astype({"n": "int64", "note": str, "reason": str, "null": str})


def _about(
    ds: xr.Dataset, outer: str, method: str, measure: str, pair: tuple[int, int]
) -> dict[str, Any]:
    """A row's `ABOUT` columns: the null its test is about, its measured level (on that null:
    for wald_cv and ncv 1 − the coverage of their interval), its extra fits."""
    if method == "wald_cv":
        level = 1 - WALD_CV_COVERAGE.get(measure, math.nan)
    elif method == "ncv":  # on one or repeated K-fold CV, the only designs NCV runs on
        level = 1 - NCV_DIFFERENCE["covers"]
    else:
        level = MEASURED.get((TEST_SPLIT if method == "mcnemar" else outer, method), (math.nan,))[0]
    extra = float(ds.attrs.get("inference_fits", math.nan)) if method in EXTRA_FITS else 0.0
    if method == "mcnemar":
        return {"null": "these two fitted models, on new rows like the test split's",
                "level": level, "extra_fits": extra}  # fmt: skip
    if method == "wald_cv":
        return {"null": "these fitted models: each learner's K fold models, their mean loss on "
                "new rows of the same population (Bayle et al.'s test error)",
                "level": level, "extra_fits": extra}  # fmt: skip
    if method == "ncv":
        return {"null": "the learners fitted on all these rows: each one's model of the whole "
                "table, its loss on new rows of the population (Bates et al.'s Err_XY)",
                "level": level, "extra_fits": extra}  # fmt: skip
    size = "the train sets' size"
    if "n_train" in ds.data_vars:
        rows = ds["n_train"].transpose("learner", ...).values[list(pair)]
        if np.isfinite(rows).any():
            size = f"~{np.nanmean(rows):,.0f} rows"
    return {"null": f"the learners, each trained anew on a sample of {size}",
            "level": level, "extra_fits": extra}  # fmt: skip


def _cells_row(
    ds: xr.Dataset,
    m: str,
    pair: tuple[int, int],
    method: str,
    ratios: np.ndarray | None,
    rope: float | None,
    note: str,
) -> dict[str, Any]:
    """The row of one measure tested over the resampling cells, with its level `note`."""
    values = evaluation_values(ds, m)
    x, y = values[pair[0]], values[pair[1]]
    paired = np.isfinite(x) & np.isfinite(y)
    n = int(paired.sum())
    row: dict[str, Any] = dict.fromkeys(_FLOATS, math.nan)
    row.update(measure=m, method=method, n=n, reason="", note=note)
    row["compare_mean"], row["compare_sd"] = mean_sd(x[paired])
    row["reference_mean"], row["reference_sd"] = mean_sd(y[paired])
    diff = x[paired] - y[paired]
    row["mean_diff"], row["sd_diff"] = mean_sd(diff)
    if ratios is not None:
        both = np.concatenate([ratios[pair[0]][paired], ratios[pair[1]][paired]])
        row["test_train_ratio"] = mean_ratio(both)
    if method == "bayesian":
        row["rope"] = default_rope(m) if rope is None else float(rope)
    row["reason"] = _undefined(ds, row, n, method)
    if row["reason"]:
        return row
    test = _cells_test(method, (x, y), ds, row, pair)
    row.update(statistic=test.statistic, df=test.df, p=test.p)
    row.update(ci_low=test.ci_low, ci_high=test.ci_high)
    if test.extra:
        lower = base_measure(m) in LOWER_IS_BETTER  # a better: a − b below −rope for error-like
        better, worse = ("p_left", "p_right") if lower else ("p_right", "p_left")
        row.update(p_compare_better=test.extra[better], p_reference_better=test.extra[worse])
        row["p_equivalent"] = test.extra["p_rope"]
    return row


def _undefined(ds: xr.Dataset, row: dict[str, Any], n: int, method: str) -> str:
    """Why the test of a row cannot be computed, or ""."""
    if n < 2:
        return (
            f"fewer than 2 paired cells (n={n}): the {method} test needs at least 2 "
            "(repeat, fold) cells where both learners are finite"
        )
    if is_constant(row["mean_diff"], row["sd_diff"], n):
        return (
            f"all {n} paired differences are identical (a - b = {row['mean_diff']:g} in every "
            "cell): their SD is 0, so the test is undefined"
        )
    if method in ("corrected", "bayesian") and math.isnan(row["test_train_ratio"]):
        return f"the {method} test is undefined: no paired cell has a positive n_train"
    if method == "con_z" and f"con_z_{row['measure']}" not in ds.data_vars:
        return (
            f"evaluate(..., inference='con_z') recorded no halves of {row['measure']!r} "
            "(con_z_<measure> holds those of the measures it scored)"
        )
    return ""


def _cells_test(
    method: str,
    scores: tuple[np.ndarray, np.ndarray],
    ds: xr.Dataset,
    row: dict[str, Any],
    pair: tuple[int, int],
) -> MeanTest:
    x, y = scores
    paired = np.isfinite(x) & np.isfinite(y)
    diff = x[paired] - y[paired]
    if method == "paired":
        return paired_test(diff)
    if method == "corrected":
        return paired_test(diff, row["test_train_ratio"])
    if method == "bayesian":
        return bayesian_test(diff, row["test_train_ratio"], row["rope"])
    if method == "con_z":
        return con_z_test(row["mean_diff"], _half_differences(ds, row["measure"], pair))
    grid = (x - y).reshape(ds.sizes["repeat"], ds.sizes["fold"])
    grid = grid[np.isfinite(grid).all(axis=1)]  # whole repeats only
    return (five_by_two_t if method == "5x2cv" else five_by_two_f)(grid)


def _half_differences(ds: xr.Dataset, m: str, pair: tuple[int, int]) -> np.ndarray:
    """(R, 2) differences a − b of the halves' estimates of `m`, pairs with a NaN dropped."""
    halves = np.asarray(ds[f"con_z_{m}"].transpose("learner", "inference_repeat", "half").values)
    diff = halves[pair[0]] - halves[pair[1]]
    return diff[np.isfinite(diff).all(axis=1)]


def wald_cv_note(outer: str, m: str) -> str:
    """What the coverage simulation says of the Wald CV test of `m` on `outer`, or "" where
    its 95 % interval held its level (type-I error at most `LEVEL_LIMIT`)."""
    coverage = WALD_CV_COVERAGE.get(m)
    if outer != "cv" or coverage is None:
        return (
            f"the Wald CV interval's coverage of {m} on outer={outer!r} was not measured "
            "(benchmarks/wald_cv_coverage.py simulates 5-fold CV of error and log loss)"
        )
    if 1 - coverage <= LEVEL_LIMIT:
        return ""
    return (
        f"its 95 % interval covered the fitted models' true difference in {coverage:.1%} of "
        "simulations (benchmarks/wald_cv_coverage.py: 5-fold CV, n = 1,000): read p as too "
        "small and the interval as too narrow"
    )


def ncv_note() -> str:
    """What the simulations say of the nested CV test and interval (`NCV_DIFFERENCE`,
    `NCV_COVERAGE`)."""
    return (
        f"its 95 % interval held the two all-rows models' true difference in "
        f"{NCV_DIFFERENCE['covers']:.1%} of simulated tables (benchmarks/ncv_difference.py: "
        "k-NN, n = 200, 10-fold CV, R = 10); read as a test of the learners on a new sample "
        f"(the resampling tests' null) it rejects {NCV_DIFFERENCE['learners_null']:.1%} of "
        f"true nulls at α = 0.05; one learner's 90 % interval covered its error in "
        f"{NCV_COVERAGE['ncv_paper']:.1%} with 10 folds, naive CV's in "
        f"{NCV_COVERAGE['naive_paper']:.1%} ({NCV_COVERAGE['ncv']:.1%} and "
        f"{NCV_COVERAGE['naive']:.1%} with 5; benchmarks/ncv_coverage.py: sparse logistic, "
        "n = 90, p = 1,000)"
    )


def ncv_row(ds: xr.Dataset, m: str, pair: tuple[int, int]) -> dict[str, Any]:
    """The nested CV row of measure `m`: ``stats.nested_cv.ncv_test`` of the per-row loss
    differences a − b (`results.ncv.ncv_sums`), each learner's NCV estimate beside it; a
    reason row where the result lacks the blocks or `m` is not pointwise."""
    row: dict[str, Any] = dict.fromkeys(_FLOATS, math.nan)
    row.update(measure=m, method="ncv", n=0, reason="", note=ncv_note())
    row["reason"] = ncv_missing(ds, m, pair)
    if row["reason"]:
        return row
    outer, inner = ncv_sums(ds, m, pair)
    test = ncv_test(outer, inner)
    row.update(compare_mean=ncv_point(ds, m, pair[0]), reference_mean=ncv_point(ds, m, pair[1]))
    row.update(n=int(outer[0][0].sum()), mean_diff=test.extra["estimate"])
    row.update(statistic=test.statistic, df=test.df, p=test.p)
    row.update(ci_low=test.ci_low, ci_high=test.ci_high)
    return row


def check_wald_cv_design(ds: xr.Dataset, outer: str) -> None:
    """Refuse the Wald CV test where mlr3inferr's ``ci.wald_cv`` refuses it: on other designs
    than one K-fold CV or leave-one-out (every row tested once), and on grouped rows."""
    repeats = ds.sizes.get("repeat", 1)
    if outer not in ("cv", "loo") or repeats != 1:
        raise ValueError(
            f"method='wald_cv' needs one K-fold CV (outer='cv') or leave-one-out (outer='loo'), "
            f"every row tested once; these results are outer={outer!r} with {repeats} repeat(s): "
            "use method='corrected' or method='con_z' (evaluate(..., inference='con_z'))"
        )
    if ds.attrs.get("group"):
        raise ValueError(
            f"method='wald_cv' treats rows as independent, but these folds keep whole groups "
            f"(group column {ds.attrs['group']!r}): use method='corrected' or method='con_z'"
        )


def wald_cv_row(ds: xr.Dataset, m: str, pair: tuple[int, int], note: str) -> dict[str, Any]:
    """The Wald CV row of measure `m` (`wald_cv_test`, all-pairs variance) from the folds'
    test rows, loss sums (measure × rows) and ``loss_diff_sq_<m>``; a reason row where `m` is
    not a mean of per-row losses or the pair's sums were not recorded."""
    row: dict[str, Any] = dict.fromkeys(_FLOATS, math.nan)
    row.update(measure=m, method="wald_cv", n=0, reason="", note=note)
    row["reason"] = _wald_cv_missing(ds, m, pair)
    if row["reason"]:
        return row
    n = evaluation_values(ds, "n_test")[pair[0]]
    sums = evaluation_values(ds, m)[list(pair)] * n
    squares = ds[f"loss_diff_sq_{m}"].transpose("learner", "versus", *EVALUATION_DIMS[1:])
    sum_d2 = np.asarray(squares.values[pair[0], pair[1]], dtype=np.float64).ravel()
    test = wald_cv_test(n, sums[0] - sums[1], sum_d2)
    total = int(n.sum())
    mean_diff = float((sums[0] - sums[1]).sum()) / total
    row.update(n=total, compare_mean=float(sums[0].sum()) / total)
    row.update(reference_mean=float(sums[1].sum()) / total, mean_diff=mean_diff)
    if total > 1:  # the SD of the per-row differences (ddof=1)
        row["sd_diff"] = math.sqrt(
            max(float(sum_d2.sum()) - total * mean_diff**2, 0.0) / (total - 1)
        )
    if test.ci_low == test.ci_high:
        row["reason"] = (
            f"all {total} per-row differences of {m} are equal: their variance is 0, so the Wald "
            "CV test is undefined"
        )
        return row
    row.update(statistic=test.statistic, df=test.df, p=test.p)
    row.update(ci_low=test.ci_low, ci_high=test.ci_high)
    return row


def _wald_cv_missing(ds: xr.Dataset, m: str, pair: tuple[int, int]) -> str:
    """Why the Wald CV test of `m` cannot be computed on these results, or ""."""
    if m not in POINTWISE:
        instead = (
            "compare 'mse' (its square)" if m == "rmse" else "compare it with method='corrected'"
        )
        return (
            f"the Wald CV test needs a mean of per-row losses ({', '.join(POINTWISE)}); {m!r} is "
            f"not one: {instead}"
        )
    name = f"loss_diff_sq_{m}"
    if name not in ds.data_vars:
        return (
            f"these results hold no per-row loss differences ({name}): they come from an "
            "earlier soak_dask or were cut down; run evaluate again"
        )
    squares = ds[name].transpose("learner", "versus", ...).values[pair[0], pair[1]]
    scored = np.isfinite(evaluation_values(ds, m)[list(pair)]).all(axis=0)
    if np.isfinite(squares).ravel()[scored].all() and scored.all():
        return ""
    return (
        f"the per-row {m} differences of these two learners were not recorded in every fold: "
        "they are summed where both learners predict the same rows together, and in a fold "
        "one of them failed, or a resumed run scored one of them again alone; run evaluate "
        "again without the checkpoint"
    )


def _right_wrong(ds: xr.Dataset, ia: int, ib: int, required: bool) -> tuple[int, int, int] | None:
    """(a right & b wrong, a wrong & b right, test rows) of the test split, or None."""
    if "test_right_wrong" not in ds.data_vars or "n_test_split" not in ds.data_vars:
        if required:
            raise ValueError(
                "method='mcnemar' compares the final models on the reserved test split, but the "
                "results have no test_right_wrong counts: run evaluate with test_split > 0 on a "
                "classification table"
            )
        return None
    counts = np.asarray(ds["test_right_wrong"].transpose("learner", "versus").values)
    if not np.isfinite(counts[ia, ib]):  # a final model failed: nothing to compare
        if required:
            names = ds["learner"].values
            raise ValueError(
                f"method='mcnemar': no test split predictions of {names[ia]!r} and "
                f"{names[ib]!r} to compare (a final model failed; see the run's warnings)"
            )
        return None
    n = int(ds["n_test_split"].values[ia])
    return int(counts[ia, ib]), int(counts[ib, ia]), n


def _mcnemar_row(
    ds: xr.Dataset, m: str, pair: tuple[int, int], counts: tuple[int, int, int]
) -> dict[str, Any]:
    """McNemar's test of the final models on the test split, in the units of `m`."""
    b, c, n = counts
    test = mcnemar_test(b, c, n)
    scale = 100.0 if m == "error" else -1.0  # error in percent; accuracy = 1 − error rate
    low, high = sorted((scale * test.ci_low, scale * test.ci_high))
    row: dict[str, Any] = dict.fromkeys(_FLOATS, math.nan)
    row.update(measure=m, method="mcnemar", n=n, reason="", note=level_note(TEST_SPLIT, "mcnemar"))
    name = f"test_{m}"
    if name in ds.data_vars:
        scores = ds[name].sel(interval="estimate").transpose("learner").values
        row.update(compare_mean=float(scores[pair[0]]), reference_mean=float(scores[pair[1]]))
    row.update(mean_diff=scale * (c - b) / n, ci_low=low, ci_high=high)
    row.update(statistic=test.statistic, df=test.df, p=test.p)
    return row


def _unsupported_mcnemar(m: str) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(_FLOATS, math.nan)
    row.update(measure=m, method="mcnemar", n=0, note="")
    row["reason"] = (
        f"McNemar's test compares error rates: it tests 'error' or 'accuracy', not {m!r}"
    )
    return row


def comparisons(ds: xr.Dataset, measures: str | Iterable[str] | None = None) -> pd.DataFrame:
    """Every pair of learners (in the results' order) on every measure, each with the test
    `compare` recommends for the design (``method=None``: `recommended_method`, and McNemar's
    on a test split), its interval, ``method`` and level ``note``.

    Parameters
    ----------
    ds : xarray.Dataset
        Results of ``evaluate()``. Results that do not say their design (``attrs["outer"]``)
        get the plain paired test, whose ``note`` says its level was not measured there.
    measures : str or iterable of str, optional
        Default: see ``soak_dask.results.kinds.validate_evaluation``.

    Returns
    -------
    pandas.DataFrame
        `COMPARE_COLUMNS`, measure by measure, then pair by pair (``compare`` the first
        learner of the pair, ``reference`` the second); no rows with a single learner.
    """
    names = validate_evaluation(ds, measures)
    learners = [str(v) for v in ds["learner"].values.tolist()]
    method = None if ds.attrs.get("outer") else "paired"
    frames = [
        compare(ds, a, b, names, method) for i, a in enumerate(learners) for b in learners[i + 1 :]
    ]
    if not frames:
        return pd.DataFrame(columns=COMPARE_COLUMNS)
    table = pd.concat(frames, ignore_index=True)
    order = table["measure"].map(names.index)
    return table.iloc[np.argsort(order.to_numpy(), kind="stable")].reset_index(drop=True)


def comparison_text(ds: xr.Dataset) -> str:
    """What ``soak evaluate`` prints of the learner comparison: `comparisons` of the first
    measure (every pair of learners with the design's recommended test, and McNemar's on a
    test split), the mean difference, its 95 % interval and its verdict
    (``results.verdicts.with_verdicts``); "" with one learner or an unknown design."""
    measures = validate_evaluation(ds)
    if ds.sizes["learner"] < 2 or not ds.attrs.get("outer"):
        return ""
    table = with_verdicts(comparisons(ds, measures[0]))
    keep = ["compare", "reference", "method", "n", "mean_diff", "ci_low", "ci_high", "p"]
    title = (
        f"{measures[0]}: learners compared (compare − reference; 95 % interval of the mean "
        f"difference, in {measures[0]}'s units; the test recommended for "
        f"outer={ds.attrs['outer']!r}; p ≥ 0.05: {NO_EVIDENCE}, not evidence of equality)"
    )
    notes = sorted({n for n in table["note"] if n})
    return "\n".join([text_table(title, table[[*keep, "verdict"]]), *(f"Note: {n}" for n in notes)])
