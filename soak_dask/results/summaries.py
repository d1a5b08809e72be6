"""Mean ± SD summaries over folds: of SOAK results per learner, test subset and train type
(`summary`), of ``evaluate`` results per learner with the test split's interval
(`evaluation_summary`), every cell of an evaluate result (`by_fold`) and its timings.

`fold_stats` is the one rule of a score over folds: the fold mean ± SD beside the pooled
(row-weighted) estimate and the fold sizes; ``results.estimates`` applies it to every design.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from ..schema import COUNTS, EVALUATION_DIMS, TIMINGS
from ..stats.mean_tests import evaluation_values as _evaluation_values
from ..stats.mean_tests import mean_sd as _mean_sd
from .kinds import (
    coord_values,
    measure_values,
    per_train_size,
    validate_evaluation,
    validate_results,
)

__all__ = [
    "EVALUATION_SUMMARY_COLUMNS",
    "SUMMARY_COLUMNS",
    "by_fold",
    "evaluation_summary",
    "fold_stats",
    "nesting_choices",
    "summary",
    "timings",
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


EVALUATION_SUMMARY_COLUMNS: list[str] = [
    "learner",
    "measure",
    "n",
    "mean",
    "sd",
    "min",
    "max",
    "weighted_mean",
    "n_test_min",
    "n_test_max",
    "test_estimate",
    "test_low",
    "test_high",
    "n_test_split",
]


@per_train_size
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
    learners = coord_values(ds, "learner")
    subsets = coord_values(ds, "test_subset")
    train_types = coord_values(ds, "train_type")
    values = {m: measure_values(ds, m) for m in names}
    sizes = measure_values(ds, "n_test") if "n_test" in ds.data_vars else None
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
                            *fold_stats(values[m][i, j, :, k], n_test),
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


def fold_stats(values: np.ndarray, n_test: np.ndarray | None) -> tuple:
    """n, mean, sd, row-weighted mean (pooled, for measures that average over rows) and the
    fewest and most test rows of the finite folds of one cell (``values``, ``n_test``: one
    entry per fold; ``n_test`` None: the last three NaN)."""
    finite = np.isfinite(values)
    mean, sd = _mean_sd(values[finite])
    if n_test is None or not finite.any():
        return int(finite.sum()), mean, sd, math.nan, math.nan, math.nan
    rows = n_test[finite]
    weighted = float(np.sum(values[finite] * rows) / rows.sum()) if rows.sum() > 0 else math.nan
    return int(finite.sum()), mean, sd, weighted, int(rows.min()), int(rows.max())


def _test_split_interval(ds: xr.Dataset, measure: str) -> np.ndarray | None:
    """(estimate, low, high) per learner of the reserved test split, or None without one."""
    name = f"test_{measure}"
    if name not in ds.data_vars:
        return None
    var = ds[name]
    bounds = ["estimate", "low", "high"]
    if set(var.dims) != {"learner", "interval"} or not set(bounds) <= set(
        coord_values(ds, "interval")
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
        - ``weighted_mean``, ``n_test_min``, ``n_test_max``: the pooled estimate (each cell
          weighted by its test rows: every test row counts once, for measures that average
          over rows) and the fewest and most test rows of a cell, as ``summary`` gives them
          for SOAK (NaN without ``n_test``);
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
    learners = coord_values(ds, "learner")
    n_split = (
        ds["n_test_split"].transpose("learner").values.tolist()
        if "n_test_split" in ds.data_vars
        else [None] * len(learners)
    )
    values = {m: _evaluation_values(ds, m) for m in names}
    n_test = _evaluation_values(ds, "n_test") if "n_test" in ds.data_vars else None
    intervals = {m: _test_split_interval(ds, m) for m in names}
    rows = []
    for i, learner in enumerate(learners):
        for m in names:
            cells = values[m][i][np.isfinite(values[m][i])]
            n, mean, sd, *pooled = fold_stats(values[m][i], None if n_test is None else n_test[i])
            spread = (cells.min(), cells.max()) if cells.size else (math.nan, math.nan)
            interval = intervals[m]
            test = (math.nan,) * 3 if interval is None else tuple(interval[i])
            split_rows = None if interval is None else n_split[i]
            rows.append((learner, m, n, mean, sd, *spread, *pooled, *test, split_rows))
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
        [coord_values(ds, d) for d in EVALUATION_DIMS], names=list(EVALUATION_DIMS)
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


#: The variables of a nested evaluate result that say what each fit chose, in this order.
CHOICE_VARIABLES: tuple[str, ...] = ("chosen", "n_features_kept", "inner_scheme")


def nesting_choices(ds: xr.Dataset) -> pd.DataFrame:
    """What each learner's inner search chose, one row per outer cell and one for the final
    model: ``learner``, ``model`` ("fold" or "final"), ``repeat``, ``fold`` (<NA> for the
    final model), one column per tuned parameter (``chosen``'s JSON object spread out; the
    text itself when it is not one), ``n_features_kept`` and ``inner_scheme`` where the
    result has them. No rows for a result without nesting.

    Examples
    --------
    >>> import xarray as xr
    >>> ds = xr.Dataset(
    ...     {"chosen": (("learner", "repeat", "fold"), [[['{"C": 1}', '{"C": 10}']]]),
    ...      "final_chosen": ("learner", ['{"C": 10}'])},
    ...     coords={"learner": ["lr"], "repeat": [1], "fold": [1, 2]})
    >>> nesting_choices(ds)
      learner  model  repeat  fold   C
    0      lr   fold       1     1   1
    1      lr   fold       1     2  10
    2      lr  final    <NA>  <NA>  10
    """
    present = [v for v in CHOICE_VARIABLES if v in ds.data_vars]
    rows = []
    for learner in coord_values(ds, "learner"):
        cells = ds.sel(learner=learner)
        for r, f in itertools.product(coord_values(ds, "repeat"), coord_values(ds, "fold")):
            values = {v: cells[v].sel(repeat=r, fold=f).item() for v in present}
            rows.append(_choice_row(learner, "fold", r, f, values))
        final = {v: cells[f"final_{v}"].item() for v in present if f"final_{v}" in ds}
        rows.append(_choice_row(learner, "final", pd.NA, pd.NA, final))
    rows = [row for row in rows if row is not None]
    keys = ["learner", "model", "repeat", "fold"]
    table = pd.DataFrame(rows, columns=list(dict.fromkeys(keys + [c for r in rows for c in r])))
    table[["repeat", "fold"]] = table[["repeat", "fold"]].astype("Int64")
    if "n_features_kept" in table:
        table["n_features_kept"] = table["n_features_kept"].astype("Int64")
    return table


def _choice_row(
    learner: Any, model: str, repeat: Any, fold: Any, values: dict[str, Any]
) -> dict[str, Any] | None:
    """One row of `nesting_choices`, or None when the fit chose nothing (no such cell)."""
    shown = {k: v for k, v in values.items() if v == v and v not in ("", None)}  # NaN != NaN
    if not shown:
        return None
    row: dict[str, Any] = {"learner": learner, "model": model, "repeat": repeat, "fold": fold}
    chosen = shown.pop("chosen", None)
    if chosen is not None:
        try:
            params = json.loads(chosen) if isinstance(chosen, str) else None
        except ValueError:
            params = None
        row.update(params if isinstance(params, dict) else {"chosen": chosen})
    return row | shown
