"""SOAK's paired t-tests over folds of other and all against same (`pvalues`), and the
adjustment of p-values for a family of comparisons (`adjust_pvalues`).

The question SOAK asks of a test subset is "does training on other subsets (or on all of them)
predict this subset better or worse than training on the same subset?". Folds are shared by the
train types (fold κ of ``same``, ``other`` and ``all`` is scored on one test set), so the test is
a paired t-test over folds, exactly as in the reference R implementation (mlr3resampling
``pvalue()``, which calls ``t.test(compare, same, paired=TRUE)``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from scipy import stats as sps

from ..schema import PAIRED_TEST_COLUMNS, PAIRED_TEST_TEXT, REFERENCE, RESULT_DIMS, TRAIN_TYPES
from ..stats.mean_tests import CONSTANT_TOL as _CONSTANT_TOL
from ..stats.mean_tests import SOAK_METHODS, soak_method_columns
from ..stats.mean_tests import is_constant as _constant
from ..stats.mean_tests import mean_ratio as _mean_ratio
from ..stats.mean_tests import mean_sd as _mean_sd
from ..stats.mean_tests import paired_t as _paired_t
from ..stats.mean_tests import split_ratios as _test_train_ratio
from ..user_warning import warn_user
from .kinds import (
    as_name_list,
    coord_values,
    measure_values,
    no_tests_reason,
    per_train_size,
    validate_results,
)

__all__ = ["ADJUST_METHODS", "CORRECTED_COLUMNS", "PVALUE_COLUMNS", "adjust_pvalues", "pvalues"]

#: Columns of `pvalues`: its keys, the paired-test columns of every design
#: (``schema.PAIRED_TEST_COLUMNS``; reference ``same``), then SOAK's own.
PVALUE_COLUMNS: list[str] = [
    "learner",
    "test_subset",
    *PAIRED_TEST_COLUMNS,
    "weighted_diff",
    "sign_agrees",
    "p_welch",
]
# The paired-test columns that are numbers (NaN where undefined).
_FLOATS = [c for c in PAIRED_TEST_COLUMNS if c not in PAIRED_TEST_TEXT]
#: Columns `pvalues` adds at the end with ``corrected=True`` (``test_train_ratio`` alone with
#: ``method="corrected"`` or ``"bayesian"``, whose test is then in ``statistic`` and ``p``).
CORRECTED_COLUMNS: list[str] = ["test_train_ratio", "t_corrected", "p_corrected"]


#: The p-value adjustments of `adjust_pvalues`, by the names it accepts.
ADJUST_METHODS: dict[str, str] = {"holm": "holm", "bh": "bh", "fdr_bh": "bh"}


def _check_compare(compare: str | Iterable[str]) -> list[str]:
    """Validate `compare`; a misspelt train type is an error, a known but absent one is not."""
    names = list(dict.fromkeys(as_name_list(compare)))  # drop repeats, keep order
    for name in names:
        if name == REFERENCE:
            raise ValueError("compare must not contain 'same': it is the reference of every test")
        if name not in TRAIN_TYPES:
            raise ValueError(f"compare={name!r} is not a train type; choose among 'other', 'all'")
    if not names:
        raise ValueError("compare is empty; choose among 'other', 'all'")
    return names


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


def _absent_reason(
    same: np.ndarray | None, comp: np.ndarray | None, compare: str, n_subsets: int
) -> str:
    """Why a comparison has no test when a train type is not in the results."""
    absent = [tt for tt, v in ((REFERENCE, same), (compare, comp)) if v is None]
    what = " and ".join(f"'{tt}'" for tt in absent)
    reason = f"train_type {what} {'is' if len(absent) == 1 else 'are'} not in the results"
    if n_subsets == 1 and "other" in absent:
        reason += " (one subset: plain K-fold CV)"
    return reason


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
    row: dict[str, Any] = dict.fromkeys([*_FLOATS, "weighted_diff", "p_welch"], math.nan)
    row.update(reference=REFERENCE, method="paired", note="")
    if ratio is not None:
        row.update(dict.fromkeys(CORRECTED_COLUMNS, math.nan))
    row["n"] = 0
    if same is None or comp is None:
        row["reason"] = _absent_reason(same, comp, compare, n_subsets)
        return row

    paired = np.isfinite(same) & np.isfinite(comp)
    x, y = same[paired], comp[paired]
    diff = y - x
    n = int(paired.sum())
    row["n"] = n
    row["reference_mean"], row["reference_sd"] = _mean_sd(x)
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
                "every fold): their SD is 0, so the statistic and p are undefined "
                "(mean_diff is still defined)"
            )
            if n_subsets == 1 and compare == "all":
                reason += " (one subset: 'all' is the same train set as 'same')"
            reasons.append(reason)
        else:
            row["statistic"], row["p"] = _paired_t(mean_diff, sd_diff, n)
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
        p is of ``p_corrected`` when `corrected` (with ``method="paired"``), else of ``p``.
        See `adjust_pvalues`. The Bayesian test gives no p: ``method="bayesian"`` refuses it.
    method : {"paired", "corrected", "bayesian"}, default "paired"
        The test in ``statistic``, ``df``, ``p``, ``ci_low``, ``ci_high`` (and ``method``).
        ``"paired"``: the paper's paired t-test (the default: it reproduces the paper, and a
        simulation reported with issue 23 found it at its level, 0.051, at equal train sizes,
        where train sets of different subsets do not overlap); ``"corrected"``: the corrected
        test of `corrected` (its interval from the corrected variance; adds
        ``test_train_ratio``); ``"bayesian"``: the correlated Bayesian t-test (Benavoli et al.
        2017, ``soak_dask.stats.mean_tests``) with the same variance: ``ci_low``,
        ``ci_high`` the posterior's 95 %, ``p`` NaN, and at the end ``test_train_ratio``,
        ``rope``, ``p_compare_better``, ``p_equivalent``, ``p_reference_better``.
    rope : float, optional
        Half-width of the Bayesian test's region of practical equivalence in the measure's
        units; default ``mean_tests.default_rope`` (1 point of error, 0.01 of a share, else 0).
        Only ``method="bayesian"`` has one: given with another test it is refused.

    Returns
    -------
    pandas.DataFrame
        One row per learner × test_subset × measure × compare, in that order (coordinate order,
        then the order of `measures` and `compare`). Columns `PVALUE_COLUMNS`: ``learner``,
        ``test_subset`` (and ``train_size`` after it, with down-sampled train sizes), then the
        paired-test columns of every design (``soak_dask.schema.PAIRED_TEST_COLUMNS``), with
        ``reference`` = ``same``:

        - ``reference``, ``compare``, ``measure``; ``n``: folds where both ``same`` and
          ``compare`` are finite (the pairs used)
        - ``reference_mean``, ``reference_sd``, ``compare_mean``, ``compare_sd``: over those
          pairs, SD with ddof=1
        - ``mean_diff``, ``sd_diff``: mean and SD of ``compare - same`` over folds (the fold
          mean: what the t-test tests)
        - ``ci_low``, ``ci_high``: its 95 % interval from `method`'s variance
        - ``statistic``, ``df``, ``p``: `method`'s test (the paired t-test by default: t on
          ``n − 1`` df, R's ``t.test(paired=TRUE)``)
        - ``method``; ``note`` ("": no level warning on SOAK's design)
        - ``reason``: "" when every statistic is defined, else why some are NaN (compare type
          absent, fewer than 2 paired folds, all differences identical, ...)

        then SOAK's own:

        - ``weighted_diff``: ``compare - same`` pooled over the test rows of the same folds:
          each train type's ``Σ n_test · value / Σ n_test``, then their difference (NaN
          without ``n_test``). With folds of equal size it equals ``mean_diff``; with whole
          groups per fold they may differ widely (`unequal_subsets`)
        - ``sign_agrees``: whether ``mean_diff`` and ``weighted_diff`` have the same sign
          (boolean, NA where either is NaN); False means the fold mean and the pooled rows
          disagree on which train type is better
        - ``p_welch``: two-sided Welch (unequal variance, unpaired) t-test p, each train type's
          missing folds dropped separately, as R's ``t.test(paired=FALSE)`` does and as
          mlr3resampling reports
        - with `corrected`: ``test_train_ratio`` (mean ``n_test / n_train`` of the pairs),
          ``t_corrected`` and ``p_corrected`` (same df)
        - with `adjust`: ``p_adjusted``, NaN where the p it adjusts is

    Raises
    ------
    ValueError
        If `ds` lacks a result dimension or a requested measure (see `validate_results`),
        or if `compare` names ``same`` or an unknown train type, or if `adjust` is unknown,
        or if `corrected` (or a `method` but ``"paired"``) is set and `ds` lacks ``n_train``
        or ``n_test``, or if `adjust` is set with ``method="bayesian"``.

    See Also
    --------
    summary : mean ± SD of each train type.

    Notes
    -----
    The paired t-test is over folds: each fold is one paired replicate (``same``, ``other``
    and ``all`` are scored on its test rows), so ``p`` tests ``mean_diff``, the fold
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
    >>> res[["compare", "n", "mean_diff", "statistic", "p", "ci_low", "ci_high"]].round(4)
      compare  n  mean_diff  statistic       p  ci_low  ci_high
    0   other  3     5.3333     6.0474  0.0263  1.5388   9.1279
    1     all  0        NaN        NaN     NaN     NaN      NaN
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
    if adjustment is not None and method == "bayesian":
        raise ValueError(
            "adjust= adjusts p-values, and the Bayesian test gives none (method='bayesian': "
            "probabilities); use method='corrected' with adjust=, or adjust=None"
        )
    with_ratio = corrected or method != "paired"
    out = _with_weighted_diff(ds, _pvalue_table(ds, measures, compare, with_ratio), compare)
    out = soak_method_columns(out, method, rope)
    if method != "paired":  # its test is in statistic and p now
        out = out.drop(columns=["t_corrected", "p_corrected"])
    if adjustment is not None:
        tested = out["p_corrected" if "p_corrected" in out else "p"]
        out["p_adjusted"] = adjust_pvalues(tested, adjustment)
    return out


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


@per_train_size
def _weighted_table(ds: xr.Dataset, measures: list[str], compare: str | Iterable[str]):
    """``compare - same`` pooled over test rows (``n_test``) of the folds where both are
    finite, per learner, test subset, measure and compare type."""
    train_types = [str(v) for v in coord_values(ds, "train_type")]
    columns = ["learner", "test_subset", "measure", "compare", "weighted_diff"]
    if "n_test" not in ds.data_vars or REFERENCE not in train_types:
        return pd.DataFrame(columns=columns)
    sizes = ds["n_test"].expand_dims(
        {d: ds.sizes[d] for d in RESULT_DIMS if d not in ds["n_test"].dims}
    )
    n_test = np.asarray(sizes.transpose(*RESULT_DIMS).values, dtype=np.float64)
    learners, subsets = coord_values(ds, "learner"), coord_values(ds, "test_subset")
    frames = []
    for m in measures:
        values = measure_values(ds, m)
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
    """Columns of `pvalues` before `method`'s and `adjust`'s."""
    return PVALUE_COLUMNS + (CORRECTED_COLUMNS if corrected else [])


@per_train_size
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
        warn_user(
            f"no p-values: {reason}; see summary() (ds.soak.summary()) for the mean ± SD over "
            "folds of each learner"
        )
        empty = pd.DataFrame({c: pd.Series(dtype=object) for c in columns})
        floats = [*_FLOATS, "weighted_diff", "p_welch", *columns[len(PVALUE_COLUMNS) :]]
        return empty.astype({c: "float64" for c in floats} | {"n": "int64"})
    train_types = [str(v) for v in coord_values(ds, "train_type")]
    learners = coord_values(ds, "learner")
    subsets = coord_values(ds, "test_subset")
    values = {m: measure_values(ds, m) for m in names}

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
    out = pd.DataFrame(rows, columns=columns)
    return out.astype({"n": "int64", "reason": str, "note": str})


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
