"""Paired t-tests and mean ± SD summaries of SOAK and evaluate results.

Every function takes a results ``xarray.Dataset`` and returns a tidy ``pandas.DataFrame``, one
row per statistic, ready to print, filter or plot. SOAK results (``soak()``: dims ``learner``,
``test_subset``, ``fold``, ``train_type``) get `pvalues` and `summary`; evaluate results
(``evaluate()``: dims ``learner``, ``repeat``, ``fold``) get `evaluation_summary` and `by_fold`
(their learner comparisons are ``soak_dask.results.comparisons.compare``). `pvalues` can use the
corrected resampled t-test of Nadeau and Bengio (2003) or the correlated Bayesian t-test
(``method=``) and adjust its p-values for the family of comparisons (Holm, Benjamini–Hochberg).

The question SOAK asks of a test subset is "does training on other subsets (or on all of them)
predict this subset better or worse than training on the same subset?". Folds are shared by the
train types (fold κ of ``same``, ``other`` and ``all`` is scored on one test set), so the test is
a paired t-test over folds, exactly as in the reference R implementation (mlr3resampling
``pvalue()``, which calls ``t.test(compare, same, paired=TRUE)``).
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from scipy import stats as sps

from ..schema import (
    COUNTS,
    EVALUATION_DIMS,
    NON_MEASURE_VARS,
    REFERENCE,
    RESULT_DIMS,
    TIMINGS,
    TRAIN_TYPES,
)
from ..stats.mean_tests import CONSTANT_TOL as _CONSTANT_TOL
from ..stats.mean_tests import SOAK_METHODS, soak_method_columns
from ..stats.mean_tests import evaluation_values as _evaluation_values
from ..stats.mean_tests import is_constant as _constant
from ..stats.mean_tests import mean_ratio as _mean_ratio
from ..stats.mean_tests import mean_sd as _mean_sd
from ..stats.mean_tests import paired_t as _paired_t
from ..stats.mean_tests import split_ratios as _test_train_ratio
from ..tables.checks import UNEQUAL_FOLDS

__all__ = [
    "ADJUST_METHODS",
    "EVALUATION_DIMS",
    "EVALUATION_SUMMARY_COLUMNS",
    "PVALUE_COLUMNS",
    "RESULT_DIMS",
    "SUMMARY_COLUMNS",
    "TRAIN_TYPES",
    "adjust_pvalues",
    "by_fold",
    "evaluation_summary",
    "is_evaluation",
    "validate_evaluation",
    "no_tests_reason",
    "pvalues",
    "prior_correction_text",
    "pvalues_text",
    "evaluation_text",
    "results_text",
    "text_table",
    "summary",
    "unequal_subsets",
    "validate_results",
]

PVALUE_COLUMNS: list[str] = [
    "learner",
    "test_subset",
    "measure",
    "compare",
    "n",
    "same_mean",
    "same_sd",
    "compare_mean",
    "compare_sd",
    "mean_diff",
    "weighted_diff",
    "sign_agrees",
    "t",
    "df",
    "p_paired",
    "p_welch",
    "reason",
]

SUMMARY_COLUMNS: list[str] = [
    "learner",
    "test_subset",
    "train_type",
    "measure",
    "n",
    "mean",
    "sd",
    "weighted_mean",
    "n_test_min",
    "n_test_max",
]

#: Columns `pvalues` adds, before ``reason``, with ``corrected=True``.
CORRECTED_COLUMNS: list[str] = ["test_train_ratio", "t_corrected", "p_corrected"]

#: Dims of every measure variable of an evaluate result, in this order.

EVALUATION_SUMMARY_COLUMNS: list[str] = [
    "learner",
    "measure",
    "n",
    "mean",
    "sd",
    "min",
    "max",
    "test_estimate",
    "test_low",
    "test_high",
    "n_test_split",
]

#: The p-value adjustments of `adjust_pvalues`, by the names it accepts.
ADJUST_METHODS: dict[str, str] = {"holm": "holm", "bh": "bh", "fdr_bh": "bh"}

# Variables of an evaluate result that derive from a measure (bootstrap designs): summarised
# and compared beside it by default.
_DERIVED_SUFFIXES: tuple[str, ...] = ("_632", "_632plus")

def _as_name_list(value: str | Iterable[Any]) -> list[str]:
    """Return a list of str from one name or an iterable of names (attrs may hold arrays)."""
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]


def _default_measures(ds: xr.Dataset) -> list[str]:
    """Measures to analyse when the caller names none.

    ``ds.attrs["measures"]`` wins, restricted to variables still present (a Dataset cut down
    with ``ds[["error"]]`` keeps the attrs of the full run). Without it, every float variable
    that is not a split description or a timing.
    """
    if "measures" in ds.attrs:
        listed = [m for m in _as_name_list(ds.attrs["measures"]) if m in ds.data_vars]
        if listed:
            return listed
    return [
        str(name)
        for name, var in ds.data_vars.items()
        if name not in NON_MEASURE_VARS and np.issubdtype(var.dtype, np.floating)
    ]


def validate_results(ds: xr.Dataset, measures: str | Iterable[str] | None = None) -> list[str]:
    """Check that `ds` is a SOAK results Dataset and resolve the measures to analyse.

    Parameters
    ----------
    ds : xarray.Dataset
        Results with dims ``learner``, ``test_subset``, ``fold``, ``train_type``.
    measures : str or iterable of str, optional
        Measure variables wanted. Default: ``ds.attrs["measures"]`` (those present), else every
        float data variable except ``n_train``, ``n_test``, ``fit_seconds``, ``predict_seconds``.

    Returns
    -------
    list of str
        The measure names, each a numeric variable with exactly the four result dims.

    Raises
    ------
    TypeError
        If `ds` is not an ``xarray.Dataset``.
    ValueError
        If a dimension or a requested measure is missing, if a measure has other dimensions
        (e.g. ``size``: select one value first), or if no measure can be found.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"learner": "lasso", "test_subset": "A", "fold": [1, 2],
    ...                    "train_type": "same", "error": [10.0, 20.0]})
    >>> ds = df.set_index(["learner", "test_subset", "fold", "train_type"]).to_xarray()
    >>> validate_results(ds)
    ['error']
    >>> validate_results(ds, "auc")
    Traceback (most recent call last):
    ...
    ValueError: measure 'auc' is not in the results; available: error
    """
    return _validate(ds, measures, RESULT_DIMS, _default_measures)


def is_evaluation(ds: xr.Dataset) -> bool:
    """Whether `ds` is the result of ``evaluate()`` (``attrs["design"] == "evaluate"``)."""
    return ds.attrs.get("design") == "evaluate"


def _other_kind_hint(ds: xr.Dataset, dims: tuple[str, ...]) -> str:
    """What to call instead when `ds` is the other kind of result than `dims` describes."""
    if dims == RESULT_DIMS and (is_evaluation(ds) or "repeat" in ds.dims):
        return (
            "; these are evaluate() results: use evaluation_summary(), by_fold() or "
            "compare() (ds.soak.summary(), .by_fold(), .compare(a, b, measure))"
        )
    if dims == EVALUATION_DIMS and "train_type" in ds.dims:
        return "; these are soak() results: use pvalues() or summary()"
    return ""


def _validate(
    ds: xr.Dataset,
    measures: str | Iterable[str] | None,
    dims: tuple[str, ...],
    default: Callable[[xr.Dataset], list[str]],
) -> list[str]:
    """The checks of `validate_results` and `validate_evaluation`, for measures with `dims`."""
    if not isinstance(ds, xr.Dataset):
        raise TypeError(f"results must be an xarray.Dataset, got {type(ds).__name__}")
    missing_dims = [d for d in dims if d not in ds.dims]
    if missing_dims:
        raise ValueError(
            f"results are missing dimension(s) {', '.join(map(repr, missing_dims))}; "
            f"expected dims {', '.join(dims)}, "
            f"found {', '.join(map(str, ds.dims)) or 'none'}{_other_kind_hint(ds, dims)}"
        )
    available = default(ds)
    wanted = available if measures is None else _as_name_list(measures)
    if not wanted:
        raise ValueError(
            "no measure to analyse: the results have no float data variable other than "
            f"{', '.join(sorted(NON_MEASURE_VARS))}, and measures= names none"
        )
    for name in wanted:
        if name not in ds.data_vars:
            raise ValueError(
                f"measure {name!r} is not in the results; "
                f"available: {', '.join(available) or 'none'}"
            )
        var = ds[name]
        if set(var.dims) != set(dims):
            extra = [d for d in var.dims if d not in dims]
            hint = f"; select one value first, e.g. ds.sel({extra[0]}=...)" if extra else ""
            raise ValueError(
                f"measure {name!r} has dims {tuple(map(str, var.dims))}, "
                f"expected exactly {dims}{hint}"
            )
        if not (np.issubdtype(var.dtype, np.number) or np.issubdtype(var.dtype, np.bool_)):
            raise ValueError(f"measure {name!r} has non-numeric dtype {var.dtype}")
    return wanted


def _default_evaluation_measures(ds: xr.Dataset) -> list[str]:
    """Measures of an evaluate result to analyse when the caller names none.

    Each of ``ds.attrs["measures"]`` present, followed by its bootstrap estimates
    (``<m>_632``, ``<m>_632plus``) when the result has them. Without the attr, every float
    variable with the evaluate dims that is not a split description or a timing.
    """
    listed = [m for m in _as_name_list(ds.attrs.get("measures", [])) if m in ds.data_vars]
    if listed:
        return [
            name
            for m in listed
            for name in (m, *(m + suffix for suffix in _DERIVED_SUFFIXES))
            if name in ds.data_vars
        ]
    return [
        str(name)
        for name, var in ds.data_vars.items()
        if name not in NON_MEASURE_VARS
        and set(var.dims) == set(EVALUATION_DIMS)
        and np.issubdtype(var.dtype, np.floating)
    ]


def validate_evaluation(ds: xr.Dataset, measures: str | Iterable[str] | None = None) -> list[str]:
    """Check that `ds` is an evaluate results Dataset and resolve the measures to analyse.

    Parameters
    ----------
    ds : xarray.Dataset
        Results of ``evaluate()``: dims ``learner``, ``repeat``, ``fold``.
    measures : str or iterable of str, optional
        Measure variables wanted. Default: each of ``ds.attrs["measures"]`` present and its
        bootstrap estimates (``<m>_632``, ``<m>_632plus``) when present; else every float
        variable with those dims except ``n_train``, ``n_test`` and the timings.

    Returns
    -------
    list of str
        The measure names, each a numeric variable with exactly the dims ``learner``,
        ``repeat``, ``fold``.

    Raises
    ------
    TypeError
        If `ds` is not an ``xarray.Dataset``.
    ValueError
        If a dimension or a requested measure is missing (the message names the ones
        available), if a measure has other dimensions, or if no measure can be found.
    """
    return _validate(ds, measures, EVALUATION_DIMS, _default_evaluation_measures)


def _check_compare(compare: str | Iterable[str]) -> list[str]:
    """Validate `compare`; a misspelt train type is an error, a known but absent one is not."""
    names = list(dict.fromkeys(_as_name_list(compare)))  # drop repeats, keep order
    for name in names:
        if name == REFERENCE:
            raise ValueError("compare must not contain 'same': it is the reference of every test")
        if name not in TRAIN_TYPES:
            raise ValueError(f"compare={name!r} is not a train type; choose among 'other', 'all'")
    if not names:
        raise ValueError("compare is empty; choose among 'other', 'all'")
    return names


def _measure_values(ds: xr.Dataset, name: str) -> np.ndarray:
    """Float array of one measure with axes in RESULT_DIMS order (computes dask arrays)."""
    return np.asarray(ds[name].transpose(*RESULT_DIMS).values, dtype=np.float64)


def _coord_values(ds: xr.Dataset, dim: str) -> list[Any]:
    """Plain Python labels of a dimension (numpy scalars would leak into the frame)."""
    return ds[dim].values.tolist()


def _welch_p(same: np.ndarray, comp: np.ndarray) -> tuple[float, str]:
    """Two-sided Welch t-test p of comp vs same, with each side's missing folds dropped.

    Missing values are dropped per side, not pairwise, as R's ``t.test(paired=FALSE)`` does.
    Returns ``(p, reason)``; reason is "" when p is defined.
    """
    x = same[np.isfinite(same)]
    y = comp[np.isfinite(comp)]
    if x.size < 2 or y.size < 2:
        return math.nan, (
            f"Welch test needs at least 2 finite folds per train type "
            f"(same has {x.size}, compare has {y.size})"
        )
    vx, vy = x.var(ddof=1) / x.size, y.var(ddof=1) / y.size
    se = math.sqrt(vx + vy)
    mx, my = float(x.mean()), float(y.mean())
    if se == 0 or se < _CONSTANT_TOL * max(abs(mx), abs(my)):
        return math.nan, "Welch test undefined: both train types are constant over folds"
    # Welch-Satterthwaite df, (vx + vy)^2 / (vx^2/(nx-1) + vy^2/(ny-1)), written with the
    # share r = vx / (vx + vy) so that squaring tiny variances cannot underflow to 0/0.
    r = vx / (vx + vy)
    df = 1 / (r**2 / (x.size - 1) + (1 - r) ** 2 / (y.size - 1))
    t = (my - mx) / se
    return float(2 * sps.t.sf(abs(t), df)), ""


def _compare_row(
    same: np.ndarray | None,
    comp: np.ndarray | None,
    compare: str,
    n_subsets: int,
    ratio: np.ndarray | None = None,
) -> dict[str, Any]:
    """Statistics of one (learner, test_subset, measure, compare) cell.

    `same` and `comp` are the per-fold values (NaN where missing), or None when that train
    type is absent from the results. With `ratio` (per fold, ``n_test / n_train`` of the
    compare train type) the row also gets the corrected t-test. Never raises and never warns:
    what cannot be computed is NaN and explained in ``reason``.
    """
    row: dict[str, Any] = dict.fromkeys(PVALUE_COLUMNS[5:-1], math.nan)
    if ratio is not None:
        row.update(dict.fromkeys(CORRECTED_COLUMNS, math.nan))
    row["n"] = 0
    absent = [tt for tt, v in ((REFERENCE, same), (compare, comp)) if v is None]
    if absent:
        what = " and ".join(f"'{tt}'" for tt in absent)
        reason = f"train_type {what} {'is' if len(absent) == 1 else 'are'} not in the results"
        if n_subsets == 1 and "other" in absent:
            reason += " (one subset: plain K-fold CV)"
        row["reason"] = reason
        return row
    assert same is not None and comp is not None  # narrowed for type checkers

    paired = np.isfinite(same) & np.isfinite(comp)
    x, y = same[paired], comp[paired]
    diff = y - x
    n = int(paired.sum())
    row["n"] = n
    row["same_mean"], row["same_sd"] = _mean_sd(x)
    row["compare_mean"], row["compare_sd"] = _mean_sd(y)
    mean_diff, sd_diff = _mean_sd(diff)
    row["mean_diff"], row["sd_diff"] = mean_diff, sd_diff
    reasons = []
    if n < 2:
        reasons.append(
            f"fewer than 2 paired folds (n={n}): the paired t-test needs at least 2 folds "
            f"where both 'same' and '{compare}' are finite"
        )
    else:
        row["df"] = float(n - 1)
        if ratio is not None:
            row["test_train_ratio"] = _mean_ratio(ratio[paired])
        if _constant(mean_diff, sd_diff, n):
            reason = (
                f"all {n} paired differences are identical ({compare} - same = {mean_diff:g} in "
                "every fold): their SD is 0, so t and p_paired are undefined "
                "(mean_diff is still defined)"
            )
            if n_subsets == 1 and compare == "all":
                reason += " (one subset: 'all' is the same train set as 'same')"
            reasons.append(reason)
        else:
            row["t"], row["p_paired"] = _paired_t(mean_diff, sd_diff, n)
            if ratio is not None:
                row["t_corrected"], row["p_corrected"] = _paired_t(
                    mean_diff, sd_diff, n, row["test_train_ratio"]
                )
                if math.isnan(row["test_train_ratio"]):
                    reasons.append(_NO_RATIO)
    row["p_welch"], welch_reason = _welch_p(same, comp)
    if welch_reason:
        reasons.append(welch_reason)
    row["reason"] = "; ".join(reasons)
    return row


_NO_RATIO = (
    "the corrected t-test is undefined: no paired fold has a positive n_train and a finite n_test"
)


def _per_train_size(func: Callable[..., pd.DataFrame]) -> Callable[..., pd.DataFrame]:
    """Apply ``func`` per down-sampled train size (``train_size`` dim, from ``soak(sizes=…)``).

    Down-samples of one size (``sample`` dim) are averaged first, so each fold has one value
    and the tests stay over folds. The output gains a ``train_size`` column after test_subset.
    """

    @functools.wraps(func)
    def wrapper(ds: xr.Dataset, *args: Any, **kwargs: Any) -> pd.DataFrame:
        if "sample" in ds.dims:
            ds = ds.mean("sample", keep_attrs=True)
        if "train_size" not in ds.dims:
            return func(ds, *args, **kwargs)
        parts = [
            func(ds.sel(train_size=size, drop=True), *args, **kwargs).assign(train_size=size)
            for size in ds["train_size"].values
        ]
        out = pd.concat(parts, ignore_index=True)
        columns = [c for c in out.columns if c != "train_size"]
        columns.insert(columns.index("test_subset") + 1, "train_size")
        return out[columns]

    return wrapper


def no_tests_reason(ds: xr.Dataset) -> str:
    """Why `ds` holds no comparison to test, or "" when it has ``other`` or ``all``.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"learner": "lr", "test_subset": "all_rows", "fold": [1, 2],
    ...                    "train_type": "same", "error": [10.0, 20.0]})
    >>> no_tests_reason(df.set_index(["learner", "test_subset", "fold", "train_type"]).to_xarray())
    "one subset: plain K-fold CV, no 'other' or 'all' train set to compare with 'same'"
    """
    if set(_coord_values(ds, "train_type")) - {REFERENCE}:
        return ""
    if ds.sizes["test_subset"] == 1:
        return "one subset: plain K-fold CV, no 'other' or 'all' train set to compare with 'same'"
    return "'same' train sets only (train_types='same'), no 'other' or 'all' to compare with"


def pvalues(
    ds: xr.Dataset,
    measures: str | Iterable[str] | None = None,
    compare: str | Iterable[str] = ("other", "all"),
    *,
    corrected: bool = False,
    adjust: str | None = None,
    method: str = "paired",
    rope: float | None = None,
) -> pd.DataFrame:
    """Paired t-tests over folds of each compare train type against "same".

    For every learner, test subset, measure and compare type, the per-fold values of the
    compare train type are paired with those of ``same`` by fold, and a two-sided paired
    t-test (``n - 1`` degrees of freedom, ``n`` = number of folds where both are finite) tests
    whether the mean difference ``compare - same`` is zero. This is R's
    ``t.test(compare, same, paired=TRUE)``.

    Options add the corrected resampled t-test of Nadeau and Bengio (2003) and p-values
    adjusted for the number of comparisons in the table; they add columns and change none.

    Parameters
    ----------
    ds : xarray.Dataset
        SOAK results: dims ``learner``, ``test_subset``, ``fold``, ``train_type``; one data
        variable per measure (NaN where a split was not scored).
    measures : str or iterable of str, optional
        Measures to test. Default: ``ds.attrs["measures"]``, else every float data variable
        except sizes and timings.
    compare : str or iterable of {"other", "all"}, default ("other", "all")
        Train types to compare with ``same``.
    corrected : bool, default False
        Also run the corrected resampled t-test: the variance of the mean difference is
        inflated from ``sd² / n`` to ``sd² · (1/n + n_test/n_train)``, with ``n_test/n_train``
        the mean over the paired folds of the compare train type's test rows over its train
        rows. Cross-validation train sets overlap, so the folds are correlated and the plain
        test is too liberal; the correction accounts for that. Needs ``n_train`` and
        ``n_test`` in `ds`.
    adjust : {"holm", "bh", "fdr_bh"}, optional
        Adjust the p-values for the family of comparisons in the returned table (every row
        with a defined p, all learners, subsets, measures, compare types and train sizes):
        ``"holm"`` controls the family-wise error rate (Holm 1979), ``"bh"`` (alias
        ``"fdr_bh"``) the false discovery rate (Benjamini and Hochberg 1995). The adjusted
        p is of ``p_corrected`` when `corrected`, else of ``p_paired``. See `adjust_pvalues`.
    method : {"paired", "corrected", "bayesian"}, default "paired"
        The paper's paired t-test (the default: it reproduces the paper, and a simulation
        reported with issue 23 found it at its level, 0.051, at equal train sizes, where train
        sets of different subsets do not overlap);
        ``"corrected"`` is `corrected` and adds ``ci_low``, ``ci_high`` (95 % interval of
        ``compare − same`` from the corrected variance); ``"bayesian"`` adds the correlated
        Bayesian t-test (Benavoli et al. 2017, ``soak_dask.results.mean_tests``) with the same
        variance: ``ci_low``, ``ci_high`` (the posterior's 95 %), ``rope``,
        ``p_compare_better``, ``p_equivalent``, ``p_same_better``. Both set `corrected` (and
        `adjust` then adjusts ``p_corrected``).
    rope : float, optional
        Half-width of the Bayesian test's region of practical equivalence in the measure's
        units; default ``mean_tests.default_rope`` (1 point of error, 0.01 of a share, else 0).

    Returns
    -------
    pandas.DataFrame
        One row per learner × test_subset × measure × compare, in that order (coordinate order,
        then the order of `measures` and `compare`), with columns:

        - ``learner``, ``test_subset``, ``measure``, ``compare``
        - ``n``: folds where both ``same`` and ``compare`` are finite (the pairs used)
        - ``same_mean``, ``same_sd``, ``compare_mean``, ``compare_sd``: over those pairs, SD with
          ddof=1
        - ``mean_diff``: mean of ``compare - same`` over folds (the fold mean: what the
          t-test tests)
        - ``weighted_diff``: ``compare - same`` pooled over the test rows of the same folds:
          each train type's ``Σ n_test · value / Σ n_test``, then their difference (NaN
          without ``n_test``). With folds of equal size it equals ``mean_diff``; with whole
          groups per fold they may differ widely (`unequal_subsets`)
        - ``sign_agrees``: whether ``mean_diff`` and ``weighted_diff`` have the same sign
          (boolean, NA where either is NaN); False means the fold mean and the pooled rows
          disagree on which train type is better
        - ``t``, ``df``, ``p_paired``: the paired t-test
        - ``p_welch``: two-sided Welch (unequal variance, unpaired) t-test p, each train type's
          missing folds dropped separately, as R's ``t.test(paired=FALSE)`` does and as
          mlr3resampling reports
        - with `corrected`: ``test_train_ratio`` (mean ``n_test / n_train`` of the pairs),
          ``t_corrected`` and ``p_corrected`` (same df as ``t``)
        - with `adjust`: ``p_adjusted``, NaN where the p it adjusts is
        - ``reason``: "" when every statistic is defined, else why some are NaN (compare type
          absent, fewer than 2 paired folds, all differences identical, ...)

    Raises
    ------
    ValueError
        If `ds` lacks a result dimension or a requested measure (see `validate_results`),
        or if `compare` names ``same`` or an unknown train type, or if `adjust` is unknown,
        or if `corrected` is set and `ds` lacks ``n_train`` or ``n_test``.

    See Also
    --------
    summary : mean ± SD of each train type.

    Notes
    -----
    The paired t-test is over folds: each fold is one paired replicate (``same``, ``other``
    and ``all`` are scored on its test rows), so ``p_paired`` tests ``mean_diff``, the fold
    mean, as R's ``pvalue()`` and the SOAK paper do. ``weighted_diff`` has no p-value: the rows
    of a fold are not independent replicates (they share the fold's train sets, and with a
    group column, their groups), so pooling rows would need another variance model. Where
    the two disagree in sign, the fold mean rests on the small folds; read both, and consider
    folds balanced by rows (``group_assignment="rows"``) or fewer folds.

    Results with no train type but ``same`` (one subset: plain K-fold CV; or a run with
    ``train_types="same"``) have nothing to compare: then a UserWarning says so and points to
    `summary`, and the frame has no rows (see `no_tests_reason`).

    Otherwise an impossible comparison is a row of NaN with a reason, never an exception or a
    RuntimeWarning: with one subset ``other`` does not exist, and ``all`` equals ``same`` so
    every difference is 0 and t is undefined (R's ``t.test`` stops on such "essentially
    constant" data; the same tolerance is used here).

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({
    ...     "learner": "lasso", "test_subset": "A", "fold": [1, 2, 3, 1, 2, 3],
    ...     "train_type": ["same"] * 3 + ["other"] * 3,
    ...     "error": [10.0, 12.0, 11.0, 15.0, 16.0, 18.0]})
    >>> ds = df.set_index(["learner", "test_subset", "fold", "train_type"]).to_xarray()
    >>> res = pvalues(ds)
    >>> res[["compare", "n", "mean_diff", "t", "p_paired"]].round(4)
      compare  n  mean_diff       t  p_paired
    0   other  3     5.3333  6.0474    0.0263
    1     all  0        NaN     NaN       NaN
    >>> res.loc[1, "reason"]
    "train_type 'all' is not in the results"

    With 3 folds each test block is half the size of its train set (``n_test / n_train`` =
    0.5), so the corrected test inflates the variance by (1/3 + 0.5) / (1/3) = 2.5:

    >>> ds["n_train"], ds["n_test"] = xr.full_like(ds["error"], 20), xr.full_like(ds["error"], 10)
    >>> pvalues(ds, corrected=True, adjust="holm").loc[0, ["t_corrected", "p_corrected",
    ...                                                    "p_adjusted"]].round(4).to_dict()
    {'t_corrected': 3.8247, 'p_corrected': 0.0621, 'p_adjusted': 0.0621}
    """
    adjustment = None if adjust is None else _adjust_method(adjust, "adjust")
    if method not in SOAK_METHODS:
        raise ValueError(
            f"method={method!r} is not a test of pvalues; choose from {list(SOAK_METHODS)}"
        )
    corrected = corrected or (method in ("corrected", "bayesian"))
    out = _with_weighted_diff(ds, _pvalue_table(ds, measures, compare, corrected), compare)
    out = soak_method_columns(out, method, rope).drop(columns="sd_diff")
    if adjustment is not None:
        tested = out["p_corrected" if corrected else "p_paired"]
        out.insert(out.columns.get_loc("reason"), "p_adjusted", adjust_pvalues(tested, adjustment))
    return out


def unequal_subsets(ds: xr.Dataset, factor: float = UNEQUAL_FOLDS) -> list[Any]:
    """The test subsets whose test folds differ in rows by more than ``factor`` (largest over
    smallest ``n_test``), where the fold mean and the row-weighted mean may disagree; [] without
    ``n_test``.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"learner": "lr", "test_subset": ["A"] * 2 + ["B"] * 2,
    ...                    "fold": [1, 2] * 2, "train_type": "same", "error": 1.0,
    ...                    "n_test": [10, 40, 10, 20]})
    >>> unequal_subsets(df.set_index(["learner", "test_subset", "fold", "train_type"]).to_xarray())
    ['A']
    """
    if "n_test" not in ds.data_vars:
        return []
    rows = ds["n_test"]
    rows = rows.max([d for d in rows.dims if d not in ("test_subset", "fold")])
    rows = rows.where(rows > 0)
    uneven = rows.max("fold") > factor * rows.min("fold")
    return [s for s, u in zip(_coord_values(ds, "test_subset"), uneven.values, strict=True) if u]


def _with_weighted_diff(
    ds: xr.Dataset, out: pd.DataFrame, compare: str | Iterable[str]
) -> pd.DataFrame:
    """`out` (rows of `pvalues`) with ``weighted_diff`` and ``sign_agrees`` filled in."""
    keys = [c for c in ("learner", "test_subset", "train_size", "measure", "compare") if c in out]
    measures = list(dict.fromkeys(out["measure"]))
    weighted = _weighted_table(ds, measures, compare) if len(out) else None
    if weighted is None or weighted.empty:
        out["weighted_diff"] = math.nan
    else:
        merged = out[keys].merge(weighted, on=keys, how="left")
        out["weighted_diff"] = merged["weighted_diff"].to_numpy()
    known = np.isfinite(out["mean_diff"]) & np.isfinite(out["weighted_diff"])
    # Rounded, so that a difference of 0 computed two ways (e.g. 1e-16) keeps the sign of 0.
    agrees = np.sign(out["mean_diff"].round(10)) == np.sign(out["weighted_diff"].round(10))
    out["sign_agrees"] = pd.array(np.where(known, agrees, pd.NA), dtype="boolean")
    return out


@_per_train_size
def _weighted_table(ds: xr.Dataset, measures: list[str], compare: str | Iterable[str]):
    """``compare - same`` pooled over test rows (``n_test``) of the folds where both are
    finite, per learner, test subset, measure and compare type."""
    train_types = [str(v) for v in _coord_values(ds, "train_type")]
    columns = ["learner", "test_subset", "measure", "compare", "weighted_diff"]
    if "n_test" not in ds.data_vars or REFERENCE not in train_types:
        return pd.DataFrame(columns=columns)
    sizes = ds["n_test"].expand_dims(
        {d: ds.sizes[d] for d in RESULT_DIMS if d not in ds["n_test"].dims}
    )
    n_test = np.asarray(sizes.transpose(*RESULT_DIMS).values, dtype=np.float64)
    learners, subsets = _coord_values(ds, "learner"), _coord_values(ds, "test_subset")
    frames = []
    for m in measures:
        values = _measure_values(ds, m)
        same = values[..., train_types.index(REFERENCE)]
        for c in _check_compare(compare):
            if c not in train_types:
                continue
            comp = values[..., train_types.index(c)]
            rows = n_test[..., train_types.index(c)]
            weight = np.where(np.isfinite(same) & np.isfinite(comp) & (rows > 0), rows, 0.0)
            total = weight.sum(axis=2)
            with np.errstate(invalid="ignore", divide="ignore"):
                diff = (weight * np.nan_to_num(comp - same)).sum(axis=2) / total
            grid = pd.MultiIndex.from_product([learners, subsets], names=columns[:2])
            frames.append(
                grid.to_frame(index=False).assign(
                    measure=m, compare=c, weighted_diff=np.where(total > 0, diff, np.nan).ravel()
                )
            )
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def _pvalue_columns(corrected: bool) -> list[str]:
    """Columns of `pvalues`, ``reason`` last."""
    return PVALUE_COLUMNS[:-1] + (CORRECTED_COLUMNS if corrected else []) + PVALUE_COLUMNS[-1:]


@_per_train_size
def _pvalue_table(
    ds: xr.Dataset,
    measures: str | Iterable[str] | None,
    compare: str | Iterable[str],
    corrected: bool,
) -> pd.DataFrame:
    """`pvalues` of one train size, before adjustment (which spans every train size)."""
    names = validate_results(ds, measures)
    compare_types = _check_compare(compare)
    ratios = _test_train_ratio(ds, RESULT_DIMS) if corrected else None
    columns = _pvalue_columns(corrected)
    reason = no_tests_reason(ds)
    if reason:
        warnings.warn(
            f"no p-values: {reason}; see summary() (ds.soak.summary()) for the mean ± SD over "
            "folds of each learner",
            UserWarning,
            stacklevel=4,  # the caller of pvalues(), above the train-size wrapper
        )
        empty = pd.DataFrame({c: pd.Series(dtype=object) for c in [*columns, "sd_diff"]})
        floats = [*columns[5:-1], "sd_diff"]
        return empty.astype({c: "float64" for c in floats} | {"n": "int64"})
    train_types = [str(v) for v in _coord_values(ds, "train_type")]
    learners = _coord_values(ds, "learner")
    subsets = _coord_values(ds, "test_subset")
    values = {m: _measure_values(ds, m) for m in names}

    def column(arr: np.ndarray | None, i: int, j: int, train_type: str) -> np.ndarray | None:
        if arr is None or train_type not in train_types:
            return None
        return arr[i, j, :, train_types.index(train_type)]

    rows = []
    for i, learner in enumerate(learners):
        for j, subset in enumerate(subsets):
            for m in names:
                same = column(values[m], i, j, REFERENCE)
                for c in compare_types:
                    comp = column(values[m], i, j, c)
                    ratio = column(ratios, i, j, c)
                    row = _compare_row(same, comp, c, len(subsets), ratio)
                    row.update(learner=learner, test_subset=subset, measure=m, compare=c)
                    rows.append(row)
    out = pd.DataFrame(rows, columns=[*columns, "sd_diff"])  # sd_diff: for pvalues(method=)
    return out.astype({"n": "int64", "reason": str})


@_per_train_size
def summary(ds: xr.Dataset, measures: str | Iterable[str] | None = None) -> pd.DataFrame:
    """Mean ± SD over folds of each measure, per learner, test subset and train type.

    Parameters
    ----------
    ds : xarray.Dataset
        SOAK results (see `pvalues`).
    measures : str or iterable of str, optional
        Measures to summarise. Default: ``ds.attrs["measures"]``, else every float data
        variable except sizes and timings.

    Returns
    -------
    pandas.DataFrame
        One row per learner, test subset, train type and measure (coordinate order, then the
        order of `measures`), with columns:

        - ``n``: the finite folds; ``mean`` and ``sd`` (ddof=1) over them (``sd`` NaN when
          ``n < 2``, ``mean`` NaN when ``n == 0``);
        - ``weighted_mean``: the mean over those folds weighted by their test rows
          (``n_test``). For measures that average over rows (error, accuracy, log_loss, mse,
          mae) it is the pooled value, every test row counting once; the fold mean counts
          the rows of a small fold more. NaN without ``n_test`` in the results;
        - ``n_test_min``, ``n_test_max``: the fewest and most test rows of those folds (floats,
          NaN without ``n_test``). Under groups, folds hold whole groups and may differ
          widely; then read ``weighted_mean`` beside ``mean``.

    Raises
    ------
    ValueError
        If `ds` lacks a result dimension or a requested measure (see `validate_results`).

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({
    ...     "learner": "lasso", "test_subset": "A", "fold": [1, 2, 3, 1, 2, 3],
    ...     "train_type": ["same"] * 3 + ["other"] * 3,
    ...     "error": [10.0, 12.0, 20.0, 15.0, 16.0, 18.0],
    ...     "n_test": [100, 100, 400] * 2})
    >>> ds = df.set_index(["learner", "test_subset", "fold", "train_type"]).to_xarray()
    >>> summary(ds, "error").drop(columns=["learner", "test_subset", "measure"]).round(4)
      train_type  n     mean      sd  weighted_mean  n_test_min  n_test_max
    0      other  3  16.3333  1.5275        17.1667       100.0       400.0
    1       same  3  14.0000  5.2915        17.0000       100.0       400.0
    """
    names = validate_results(ds, measures)
    learners = _coord_values(ds, "learner")
    subsets = _coord_values(ds, "test_subset")
    train_types = _coord_values(ds, "train_type")
    values = {m: _measure_values(ds, m) for m in names}
    sizes = _measure_values(ds, "n_test") if "n_test" in ds.data_vars else None
    rows = []
    for i, learner in enumerate(learners):
        for j, subset in enumerate(subsets):
            for k, train_type in enumerate(train_types):
                n_test = None if sizes is None else sizes[i, j, :, k]
                for m in names:
                    rows.append(
                        (
                            learner,
                            subset,
                            train_type,
                            m,
                            *_fold_stats(values[m][i, j, :, k], n_test),
                        )
                    )
    out = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
    return out.astype(
        {
            "n": "int64",
            "mean": "float64",
            "sd": "float64",
            "weighted_mean": "float64",
            "n_test_min": "float64",
            "n_test_max": "float64",
        }
    )


def _fold_stats(values: np.ndarray, n_test: np.ndarray | None) -> tuple:
    """n, mean, sd, row-weighted mean and the fewest and most test rows of the finite folds."""
    finite = np.isfinite(values)
    mean, sd = _mean_sd(values[finite])
    if n_test is None or not finite.any():
        return int(finite.sum()), mean, sd, math.nan, math.nan, math.nan
    rows = n_test[finite]
    weighted = float(np.sum(values[finite] * rows) / rows.sum()) if rows.sum() > 0 else math.nan
    return int(finite.sum()), mean, sd, weighted, int(rows.min()), int(rows.max())


def _adjust_method(value: str, option: str) -> str:
    """The canonical name of an adjustment, or a ValueError naming `option` and the choices."""
    if not isinstance(value, str) or value not in ADJUST_METHODS:
        raise ValueError(
            f"{option}={value!r} is not a p-value adjustment; choose 'holm' (family-wise error "
            "rate), 'bh' or 'fdr_bh' (Benjamini–Hochberg false discovery rate), or None"
        )
    return ADJUST_METHODS[value]


def adjust_pvalues(p: Iterable[float], method: str = "holm") -> np.ndarray:
    """P-values adjusted for multiple comparisons, Holm or Benjamini–Hochberg.

    The family is every finite p of `p`; NaN stays NaN and does not count. With the ``m``
    finite p-values sorted, ``p(1) <= … <= p(m)``:

    - Holm: ``p̃(i) = max over j <= i of min(1, (m - j + 1) p(j))``, which controls the
      family-wise error rate (the chance of any false rejection);
    - Benjamini–Hochberg: ``p̃(i) = min over j >= i of min(1, m p(j) / j)``, which controls the
      false discovery rate (the expected share of false rejections among the rejections).

    Tied p-values get equal adjusted values, and adjusted values keep the order of the p-values.

    Parameters
    ----------
    p : iterable of float
        P-values in [0, 1], NaN where undefined.
    method : {"holm", "bh", "fdr_bh"}, default "holm"
        ``"fdr_bh"`` (statsmodels' name) is ``"bh"``.

    Returns
    -------
    numpy.ndarray
        The adjusted p-values, float64, in the order of `p`.

    Raises
    ------
    ValueError
        If `method` is unknown or a finite p is outside [0, 1].

    Examples
    --------
    >>> adjust_pvalues([0.01, 0.04, 0.03, float("nan")], "holm")
    array([0.03, 0.06, 0.06,  nan])
    >>> adjust_pvalues([0.01, 0.04, 0.03, float("nan")], "bh")
    array([0.03, 0.04, 0.04,  nan])
    """
    method = _adjust_method(method, "method")
    values = np.array(list(p) if not isinstance(p, np.ndarray) else p, dtype=np.float64)
    out = np.full(values.shape, math.nan)
    finite = np.isfinite(values)
    q = values[finite]
    if ((q < 0) | (q > 1)).any():
        raise ValueError(f"p-values must lie in [0, 1]; got {float(q[(q < 0) | (q > 1)][0])!r}")
    m = q.size
    order = np.argsort(q, kind="stable")
    ranked = q[order]
    if method == "holm":
        adjusted = np.maximum.accumulate((m - np.arange(m)) * ranked)
    else:
        adjusted = np.minimum.accumulate((m / np.arange(1, m + 1) * ranked)[::-1])[::-1]
    unsorted = np.empty(m)
    unsorted[order] = np.minimum(adjusted, 1.0)
    out[finite] = unsorted
    return out


def _test_split_interval(ds: xr.Dataset, measure: str) -> np.ndarray | None:
    """(estimate, low, high) per learner of the reserved test split, or None without one."""
    name = f"test_{measure}"
    if name not in ds.data_vars:
        return None
    var = ds[name]
    bounds = ["estimate", "low", "high"]
    if set(var.dims) != {"learner", "interval"} or not set(bounds) <= set(
        _coord_values(ds, "interval")
    ):
        raise ValueError(
            f"{name!r} must have dims ('learner', 'interval') with interval labels {bounds}; "
            f"it has dims {tuple(map(str, var.dims))}"
        )
    return np.asarray(var.sel(interval=bounds).transpose("learner", "interval").values, float)


def evaluation_summary(ds: xr.Dataset, measures: str | Iterable[str] | None = None) -> pd.DataFrame:
    """Mean ± SD over the resampling cells of each learner and measure, and the test split.

    The guide reports resampling results as the mean and the standard deviation across the
    folds, never a standard error: folds share training data, so no unbiased estimator of the
    mean's variance exists (Bengio and Grandvalet 2004). A reserved test split has no folds;
    its score carries the bootstrap 95 % interval over its rows that ``evaluate`` stores.

    Parameters
    ----------
    ds : xarray.Dataset
        Results of ``evaluate()``: dims ``learner``, ``repeat``, ``fold``, one variable per
        measure, NaN in the cells of folds that do not exist for the design; optionally
        ``test_<measure>`` (dims ``learner``, ``interval``) and ``n_test_split``.
    measures : str or iterable of str, optional
        Default: see `validate_evaluation` (the run's measures and their bootstrap .632
        estimates when present).

    Returns
    -------
    pandas.DataFrame
        One row per learner × measure (coordinate order, then the order of `measures`):

        - ``n``: the (repeat, fold) cells with a finite score;
        - ``mean``, ``sd`` (ddof=1), ``min``, ``max`` over them (``sd`` NaN when ``n < 2``);
        - ``test_estimate``, ``test_low``, ``test_high``: the test split's score and its 95 %
          interval, and ``n_test_split`` its rows (NaN / <NA> without a test split or for a
          measure it does not score).

    Raises
    ------
    ValueError
        If `ds` lacks an evaluate dimension or a requested measure (the message lists those
        available), or if a ``test_<measure>`` variable has another shape.

    See Also
    --------
    by_fold : every cell's scores.
    compare : paired t-test of two learners.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> ds = xr.Dataset(
    ...     {"error": (("learner", "repeat", "fold"), [[[10.0, 20.0, 30.0]], [[5, 10, np.nan]]])},
    ...     coords={"learner": ["tree", "lasso"], "repeat": [1], "fold": [1, 2, 3]})
    >>> evaluation_summary(ds)[["learner", "n", "mean", "sd", "min", "max"]].round(4)
      learner  n  mean       sd   min   max
    0    tree  3  20.0  10.0000  10.0  30.0
    1   lasso  2   7.5   3.5355   5.0  10.0
    """
    names = validate_evaluation(ds, measures)
    learners = _coord_values(ds, "learner")
    n_split = (
        ds["n_test_split"].transpose("learner").values.tolist()
        if "n_test_split" in ds.data_vars
        else [None] * len(learners)
    )
    values = {m: _evaluation_values(ds, m) for m in names}
    intervals = {m: _test_split_interval(ds, m) for m in names}
    rows = []
    for i, learner in enumerate(learners):
        for m in names:
            cells = values[m][i][np.isfinite(values[m][i])]
            mean, sd = _mean_sd(cells)
            spread = (cells.min(), cells.max()) if cells.size else (math.nan, math.nan)
            interval = intervals[m]
            test = (math.nan,) * 3 if interval is None else tuple(interval[i])
            split_rows = None if interval is None else n_split[i]
            rows.append((learner, m, cells.size, mean, sd, *spread, *test, split_rows))
    out = pd.DataFrame(rows, columns=EVALUATION_SUMMARY_COLUMNS)
    floats = {c: "float64" for c in EVALUATION_SUMMARY_COLUMNS[3:-1]}
    return out.astype(floats | {"n": "int64", "n_test_split": "Int64"})


def by_fold(ds: xr.Dataset, measures: str | Iterable[str] | None = None) -> pd.DataFrame:
    """The full per-fold table of an evaluate result: one row per existing resampling cell.

    Parameters
    ----------
    ds : xarray.Dataset
        Results of ``evaluate()`` (see `evaluation_summary`).
    measures : str or iterable of str, optional
        Default: see `validate_evaluation`.

    Returns
    -------
    pandas.DataFrame
        Columns ``learner``, ``repeat``, ``fold``, the measures, then those of ``n_train``,
        ``n_test``, ``fit_seconds``, ``predict_seconds`` that `ds` has; rows in coordinate
        order. Cells of folds that do not exist for the design (every measure NaN and no test
        rows, e.g. folds 2… of a bootstrap) are dropped; a fold that exists but could not be
        scored keeps its row, with NaN. ``n_train`` and ``n_test`` are int64 (Int64 if a kept
        row lacks them).

    Raises
    ------
    ValueError
        As `validate_evaluation`.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> dims = ("learner", "repeat", "fold")
    >>> ds = xr.Dataset(
    ...     {"mse": (dims, [[[1.5, np.nan], [2.5, np.nan]]]),
    ...      "n_test": (dims, [[[37, np.nan], [36, np.nan]]])},
    ...     coords={"learner": ["ridge"], "repeat": [1, 2], "fold": [1, 2]})
    >>> by_fold(ds)
      learner  repeat  fold  mse  n_test
    0   ridge       1     1  1.5      37
    1   ridge       2     1  2.5      36
    """
    names = validate_evaluation(ds, measures)
    extra = [v for v in (*COUNTS, *TIMINGS) if v in ds.data_vars and v not in names]
    index = pd.MultiIndex.from_product(
        [_coord_values(ds, d) for d in EVALUATION_DIMS], names=list(EVALUATION_DIMS)
    )
    columns = {
        v: np.asarray(
            ds[v].broadcast_like(ds[names[0]]).transpose(*EVALUATION_DIMS).values, np.float64
        ).ravel()
        for v in (*names, *extra)
    }
    table = pd.DataFrame(columns, index=index)
    exists = table[names].notna().any(axis=1)
    if "n_test" in table:
        exists |= table["n_test"] > 0
    table = table[exists.to_numpy()].reset_index()
    for count in (c for c in COUNTS if c in table):
        table[count] = table[count].astype("int64" if table[count].notna().all() else "Int64")
    return table


def prior_correction_text(attrs: Mapping[str, Any]) -> str:
    """Whether a classification run predicted with the prior correction, in words.

    >>> prior_correction_text({"prior_correction": 0})
    'prior correction off: the class of largest probability'
    """
    if int(attrs.get("prior_correction", 0)):
        return (
            "prior correction on: the class of largest probability ÷ its share of the train "
            "rows (maximises balanced accuracy; plain error usually rises when classes are "
            "imbalanced)"
        )
    return "prior correction off: the class of largest probability"


def _printable(value: Any) -> Any:
    """A text cell with its unprintable characters (terminal escapes, line breaks) escaped."""
    if not isinstance(value, str) or value.isprintable():
        return value
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in value)


def pvalues_text(ds: xr.Dataset, measure: str = "error") -> str:
    """The paired t-tests of one measure as a plain-text table, for terminals and logs.

    Where a subset's test folds differ by more than 3× in rows (`unequal_subsets`), the table
    adds ``weighted_diff`` (compare − same pooled over the test rows) beside ``mean_diff`` (the
    fold mean, which ``p_paired`` tests) and a ``flag`` column marking the rows of those
    subsets whose two differences disagree in sign.

    Names are printed as they are, except unprintable characters, shown as escapes
    (``\\x1b``): a subset name cannot move the cursor or recolour the terminal.
    """
    keep = [
        "learner",
        "test_subset",
        "compare",
        "same_mean",
        "compare_mean",
        "mean_diff",
        "p_paired",
    ]
    table = pvalues(ds, measures=[measure])
    uneven = unequal_subsets(ds)
    title = f"{measure}: other / all vs same (paired t-test over folds)"
    if uneven:
        keep.insert(keep.index("mean_diff") + 1, "weighted_diff")
        differs = table["test_subset"].isin(uneven) & table["sign_agrees"].eq(False)
        table = table.assign(flag=np.where(differs, "SIGN DIFFERS", ""))
        keep.append("flag")
        title += "\n" + _unequal_note(uneven, int(differs.sum()))
    columns = [c for c in table.columns if c in keep or c == "train_size"]
    return text_table(title, table[columns])


def _unequal_note(uneven: list[Any], n_differ: int) -> str:
    """What the CLI and report say above a table of subsets with unequal folds."""
    flagged = (
        f"; {n_differ} comparison{' is' if n_differ == 1 else 's are'} marked SIGN DIFFERS: "
        "there the fold mean and the pooled rows disagree on which train type is better"
        if n_differ
        else "; the two agree in sign everywhere"
    )
    return (
        f"test folds of {', '.join(map(str, uneven))} differ by more than {UNEQUAL_FOLDS:g}× "
        "in rows: weighted_diff pools compare − same over the test rows, mean_diff is the mean "
        f"over folds (a row of a small fold counts more), and p_paired tests mean_diff{flagged}"
    )


def results_text(ds: xr.Dataset, measure: str = "error") -> str:
    """What ``soak run`` prints: `pvalues_text`, or when the results hold nothing to compare
    (plain K-fold CV), the mean ± SD over folds of each learner, saying why.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"learner": "lr", "test_subset": "all_rows", "fold": [1, 2],
    ...                    "train_type": "same", "error": [10.0, 20.0], "n_test": [50, 150]})
    >>> ds = df.set_index(["learner", "test_subset", "fold", "train_type"]).to_xarray()
    >>> print(results_text(ds))
    one subset: plain K-fold CV, no 'other' or 'all' train set to compare with 'same': no p-values
    error: mean ± SD over the folds of each learner (weighted_mean: folds weighted by test rows)
    learner  n  mean     sd  weighted_mean  n_test_min  n_test_max
         lr  2  15.0 7.0711           17.5          50         150
    """
    reason = no_tests_reason(ds)
    if not reason:
        return _with_prediction(ds, pvalues_text(ds, measure))
    table = summary(ds, [measure])
    drop = ["train_type", "measure"] + (["test_subset"] if ds.sizes["test_subset"] == 1 else [])
    title = (
        f"{reason}: no p-values\n{measure}: mean ± SD over the folds of each learner "
        "(weighted_mean: folds weighted by test rows)"
    )
    rows = {c: "Int64" for c in ("n_test_min", "n_test_max")}  # counts, printed as such
    return _with_prediction(ds, text_table(title, table.drop(columns=drop).astype(rows)))


def _with_prediction(ds: xr.Dataset, text: str) -> str:
    """`text` over a line saying whether a classification run used the prior correction."""
    if ds.attrs.get("task") != "classification":
        return text
    return f"{text}\nPrediction: {prior_correction_text(ds.attrs)}"


def text_table(title: str, table: pd.DataFrame) -> str:
    """`title` over `table` as plain text, numbers to 4 decimals, names printable."""
    text = table.round(4)
    names = text.select_dtypes(exclude="number").columns
    text[names] = text[names].map(_printable)
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        return f"{title}\n{text.to_string(index=False)}"


def evaluation_text(ds: xr.Dataset) -> str:
    """What ``soak evaluate`` and ``soak report`` print of an evaluate result: each learner's
    mean ± SD (and range) over the resampling cells per measure, and the test split's estimate
    with its 95 % interval when there is one."""
    table = evaluation_summary(ds)
    title = (
        f"outer={ds.attrs.get('outer')}: mean ± SD over the n resampling cells (repeat × fold) "
        "of each learner; SD, not a standard error"
    )
    split = table["n_test_split"].dropna()
    if len(split):
        title += (
            f"; test_*: the reserved test split ({int(split.max()):,} rows) scored by the final "
            "models, with its bootstrap 95 % interval"
        )
    else:
        table = table.drop(columns=["test_estimate", "test_low", "test_high"])
    text = _with_prediction(ds, text_table(title, table.drop(columns="n_test_split")))
    return "\n".join([text, *nesting_lines(ds)])


def timings(ds: xr.Dataset) -> pd.DataFrame:
    """Seconds per learner, as the guide's metrics/timings table: the outer loop's fits and
    predictions (summed over cells: CPU seconds on the workers) and the final model's fit; the
    last row, ``(wall)``, the wall time of the outer loop and of the final models."""
    rows = []
    for learner in ds["learner"].values:
        cells = ds.sel(learner=learner)
        final = ds["final_fit_seconds"].sel(learner=learner) if "final_fit_seconds" in ds else None
        rows.append(
            {
                "learner": str(learner),
                "outer_fit_seconds": float(cells["fit_seconds"].sum()),
                "outer_predict_seconds": float(cells["predict_seconds"].sum()),
                "final_fit_seconds": np.nan if final is None else float(final),
            }
        )
    rows.append(
        {
            "learner": "(wall)",
            "outer_fit_seconds": float(ds.attrs.get("outer_seconds", np.nan)),
            "outer_predict_seconds": np.nan,
            "final_fit_seconds": float(ds.attrs.get("final_seconds", np.nan)),
        }
    )
    return pd.DataFrame(rows)


def nesting_lines(ds: xr.Dataset) -> list[str]:
    """What an evaluate result says about its nesting: the optimism warning of
    ``nested=False``, skipped steps, what each learner chose per fold, and the timings."""
    lines = []
    if ds.attrs.get("optimistic"):
        lines.append(f"\nWARNING: {ds.attrs['optimistic']}")
    notes = ds.attrs.get("notes", [])
    lines += [f"Note: {note}" for note in ([notes] if isinstance(notes, str) else notes) if note]
    for name in ("chosen", "n_features_kept", "inner_scheme"):
        if name not in ds:
            continue
        for learner in ds["learner"].values:
            values = [
                v for v in np.ravel(ds[name].sel(learner=learner).values) if v == v and v != ""
            ]
            if values:
                final = ds.get(f"final_{name}")
                tail = (
                    "" if final is None else f"; final model: {final.sel(learner=learner).item()}"
                )
                shown = ", ".join(
                    str(int(v)) if name == "n_features_kept" else str(v) for v in values
                )
                lines.append(f"{learner} {name} per fold: {shown}{tail}")
    if "outer_seconds" in ds.attrs:
        lines.append(
            f"Timings: outer loop {float(ds.attrs['outer_seconds']):.1f} s, final models "
            f"{float(ds.attrs['final_seconds']):.1f} s"
        )
    return lines
