"""Paired t-tests and mean ± SD summaries of SOAK results.

Every function takes the results ``xarray.Dataset`` (dims ``learner``, ``test_subset``,
``fold``, ``train_type``; one data variable per measure) and returns a tidy
``pandas.DataFrame``, one row per statistic, ready to print, filter or plot.

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
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from scipy import stats as sps

from ..schema import NON_MEASURE_VARS, REFERENCE, RESULT_DIMS, TRAIN_TYPES

__all__ = [
    "PVALUE_COLUMNS",
    "RESULT_DIMS",
    "SUMMARY_COLUMNS",
    "TRAIN_TYPES",
    "no_tests_reason",
    "pvalues",
    "pvalues_text",
    "results_text",
    "summary",
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

# R's t.test() stops with "data are essentially constant" when the standard error is below
# 10 * .Machine$double.eps * |mean|. Using the same cut makes differences that are equal up to
# rounding noise (e.g. (y + c) - (x + c)) give "undefined" like R, not an absurd t of 1e15.
_CONSTANT_TOL = 10 * np.finfo(np.float64).eps


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
    if not isinstance(ds, xr.Dataset):
        raise TypeError(f"results must be an xarray.Dataset, got {type(ds).__name__}")
    missing_dims = [d for d in RESULT_DIMS if d not in ds.dims]
    if missing_dims:
        raise ValueError(
            f"results are missing dimension(s) {', '.join(map(repr, missing_dims))}; "
            f"expected dims {', '.join(RESULT_DIMS)}, "
            f"found {', '.join(map(str, ds.dims)) or 'none'}"
        )
    available = _default_measures(ds)
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
        if set(var.dims) != set(RESULT_DIMS):
            extra = [d for d in var.dims if d not in RESULT_DIMS]
            hint = f"; select one value first, e.g. ds.sel({extra[0]}=...)" if extra else ""
            raise ValueError(
                f"measure {name!r} has dims {tuple(map(str, var.dims))}, "
                f"expected exactly {RESULT_DIMS}{hint}"
            )
        if not (np.issubdtype(var.dtype, np.number) or np.issubdtype(var.dtype, np.bool_)):
            raise ValueError(f"measure {name!r} has non-numeric dtype {var.dtype}")
    return wanted


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


def _mean_sd(values: np.ndarray) -> tuple[float, float]:
    """Mean and SD (ddof=1) that are NaN, without a RuntimeWarning, when undefined."""
    n = values.size
    mean = float(values.mean()) if n >= 1 else math.nan
    sd = float(values.std(ddof=1)) if n >= 2 else math.nan
    return mean, sd


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
    same: np.ndarray | None, comp: np.ndarray | None, compare: str, n_subsets: int
) -> dict[str, Any]:
    """Statistics of one (learner, test_subset, measure, compare) cell.

    `same` and `comp` are the per-fold values (NaN where missing), or None when that train
    type is absent from the results. Never raises and never warns: what cannot be computed
    is NaN and explained in ``reason``.
    """
    row: dict[str, Any] = dict.fromkeys(PVALUE_COLUMNS[5:-1], math.nan)
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
    row["mean_diff"] = mean_diff
    reasons = []
    if n < 2:
        reasons.append(
            f"fewer than 2 paired folds (n={n}): the paired t-test needs at least 2 folds "
            f"where both 'same' and '{compare}' are finite"
        )
    else:
        row["df"] = float(n - 1)
        se = sd_diff / math.sqrt(n)
        if sd_diff == 0 or se < _CONSTANT_TOL * abs(mean_diff):
            reason = (
                f"all {n} paired differences are identical ({compare} - same = {mean_diff:g} in "
                "every fold): their SD is 0, so t and p_paired are undefined "
                "(mean_diff is still defined)"
            )
            if n_subsets == 1 and compare == "all":
                reason += " (one subset: 'all' is the same train set as 'same')"
            reasons.append(reason)
        else:
            row["t"] = mean_diff / se
            row["p_paired"] = float(2 * sps.t.sf(abs(row["t"]), n - 1))
    row["p_welch"], welch_reason = _welch_p(same, comp)
    if welch_reason:
        reasons.append(welch_reason)
    row["reason"] = "; ".join(reasons)
    return row


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


@_per_train_size
def pvalues(
    ds: xr.Dataset,
    measures: str | Iterable[str] | None = None,
    compare: str | Iterable[str] = ("other", "all"),
) -> pd.DataFrame:
    """Paired t-tests over folds of each compare train type against "same".

    For every learner, test subset, measure and compare type, the per-fold values of the
    compare train type are paired with those of ``same`` by fold, and a two-sided paired
    t-test (``n - 1`` degrees of freedom, ``n`` = number of folds where both are finite) tests
    whether the mean difference ``compare - same`` is zero. This is R's
    ``t.test(compare, same, paired=TRUE)``.

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

    Returns
    -------
    pandas.DataFrame
        One row per learner × test_subset × measure × compare, in that order (coordinate order,
        then the order of `measures` and `compare`), with columns:

        - ``learner``, ``test_subset``, ``measure``, ``compare``
        - ``n``: folds where both ``same`` and ``compare`` are finite (the pairs used)
        - ``same_mean``, ``same_sd``, ``compare_mean``, ``compare_sd``: over those pairs, SD with
          ddof=1
        - ``mean_diff``: mean of ``compare - same``
        - ``t``, ``df``, ``p_paired``: the paired t-test
        - ``p_welch``: two-sided Welch (unequal variance, unpaired) t-test p, each train type's
          missing folds dropped separately, as R's ``t.test(paired=FALSE)`` does and as
          mlr3resampling reports
        - ``reason``: "" when every statistic is defined, else why some are NaN (compare type
          absent, fewer than 2 paired folds, all differences identical, ...)

    Raises
    ------
    ValueError
        If `ds` lacks a result dimension or a requested measure (see `validate_results`),
        or if `compare` names ``same`` or an unknown train type.

    See Also
    --------
    summary : mean ± SD of each train type.

    Notes
    -----
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
    """
    names = validate_results(ds, measures)
    compare_types = _check_compare(compare)
    reason = no_tests_reason(ds)
    if reason:
        warnings.warn(
            f"no p-values: {reason}; see summary() (ds.soak.summary()) for the mean ± SD over "
            "folds of each learner",
            UserWarning,
            stacklevel=3,  # the caller of the train-size wrapper
        )
        empty = pd.DataFrame({c: pd.Series(dtype=object) for c in PVALUE_COLUMNS})
        return empty.astype({c: "float64" for c in PVALUE_COLUMNS[5:-1]} | {"n": "int64"})
    train_types = [str(v) for v in _coord_values(ds, "train_type")]
    learners = _coord_values(ds, "learner")
    subsets = _coord_values(ds, "test_subset")
    values = {m: _measure_values(ds, m) for m in names}

    def column(arr: np.ndarray, i: int, j: int, train_type: str) -> np.ndarray | None:
        if train_type not in train_types:
            return None
        return arr[i, j, :, train_types.index(train_type)]

    rows = []
    for i, learner in enumerate(learners):
        for j, subset in enumerate(subsets):
            for m in names:
                same = column(values[m], i, j, REFERENCE)
                for c in compare_types:
                    comp = column(values[m], i, j, c)
                    row = _compare_row(same, comp, c, len(subsets))
                    row.update(learner=learner, test_subset=subset, measure=m, compare=c)
                    rows.append(row)
    out = pd.DataFrame(rows, columns=PVALUE_COLUMNS)
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


def _printable(value: Any) -> Any:
    """A text cell with its unprintable characters (terminal escapes, line breaks) escaped."""
    if not isinstance(value, str) or value.isprintable():
        return value
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in value)


def pvalues_text(ds: xr.Dataset, measure: str = "error") -> str:
    """The paired t-tests of one measure as a plain-text table, for terminals and logs.

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
    columns = [c for c in table.columns if c in keep or c == "train_size"]
    return _text_table(f"{measure}: other / all vs same (paired t-test over folds)", table[columns])


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
        return pvalues_text(ds, measure)
    table = summary(ds, [measure])
    drop = ["train_type", "measure"] + (["test_subset"] if ds.sizes["test_subset"] == 1 else [])
    title = (
        f"{reason}: no p-values\n{measure}: mean ± SD over the folds of each learner "
        "(weighted_mean: folds weighted by test rows)"
    )
    rows = {c: "Int64" for c in ("n_test_min", "n_test_max")}  # counts, printed as such
    return _text_table(title, table.drop(columns=drop).astype(rows))


def _text_table(title: str, table: pd.DataFrame) -> str:
    """`title` over `table` as plain text, numbers to 4 decimals, names printable."""
    text = table.round(4)
    names = text.select_dtypes(exclude="number").columns
    text[names] = text[names].map(_printable)
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        return f"{title}\n{text.to_string(index=False)}"
