"""One estimate rule for every design: a score over folds is the fold mean ± SD *and* the pooled
(row-weighted) estimate, with the fewest and most test rows of a fold.

The fold mean is what the paired tests over folds test; the pooled estimate counts every test
row once (for measures that average over rows -- error, accuracy, log loss, mse, mae -- it is
the measure of all test rows of the cell). Under groups, whole groups make folds of very
different sizes, and the two can tell different stories: on AZtrees (polygons as groups, the
4 regions) the featureless learner's error on SE is 70.6 % as a fold mean but 2.4 % of SE's
pixels pooled, one 5-pixel fold of *Tree* pixels after another counting as much as the fold
of 1,484 pixels. `estimates_differ` flags such cells and `estimate_banner` says so in one line,
with the estimate the verdicts rest on. The rule itself is ``summaries.fold_stats``, the one
``summary`` uses for SOAK results.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from .kinds import coord_values
from .summaries import evaluation_summary, fold_stats, summary

__all__ = [
    "CELL_MEAN_BASIS",
    "ESTIMATE_COLUMNS",
    "FOLD_MEAN_BASIS",
    "TRIAL_FOLD_MEAN_BASIS",
    "UNEVEN_RATIO",
    "UNTESTED_BASIS",
    "estimate_banner",
    "evaluation_banner",
    "estimates_differ",
    "fold_estimates",
    "soak_banner",
]

#: Folds whose test rows differ by more than this factor are flagged (`estimates_differ`).
UNEVEN_RATIO = 2.0
#: Columns of `fold_estimates` after its keys: ``summary``'s (``SUMMARY_COLUMNS``' last six),
#: then the flag of `estimates_differ`.
ESTIMATE_COLUMNS: list[str] = [
    "n",
    "mean",
    "sd",
    "weighted_mean",
    "n_test_min",
    "n_test_max",
    "estimates_differ",
]
#: What the verdicts of every paired test over folds rest on.
FOLD_MEAN_BASIS = (
    "the verdicts rest on the fold mean (the paired test over folds tests it; a row of a "
    "small fold counts more), the pooled estimate counts every test row once"
)

#: What the verdicts of ``evaluate``'s comparisons rest on: the cells are (repeat, fold).
CELL_MEAN_BASIS = (
    "the verdicts rest on the mean over cells (the paired tests over cells test it; a row "
    "of a small cell counts more), the pooled estimate counts every test row once"
)

#: What split sensitivity's statistics rest on: a trial's CV estimate is the mean of its folds.
TRIAL_FOLD_MEAN_BASIS = (
    "the CV estimates, their tests and the recommendation rest on the fold mean (a row of a "
    "small fold counts more), the pooled estimate counts every CV test row once"
)

#: What a note says where nothing is tested (plain K-fold CV).
UNTESTED_BASIS = (
    "nothing is tested here: the fold mean counts a row of a small fold more, the pooled "
    "estimate counts every test row once"
)


def estimates_differ(
    mean: np.ndarray, sd: np.ndarray, pooled: np.ndarray, n_min: np.ndarray, n_max: np.ndarray
) -> np.ndarray:
    """Whether the fold mean and the pooled estimate of each cell disagree by more than the
    fold SD, or its test folds differ in rows by more than `UNEVEN_RATIO` (False where
    neither can be known).

    >>> estimates_differ(np.array([70.6, 5.0]), np.array([44.9, 2.0]), np.array([2.4, 5.5]),
    ...                  np.array([5, 100]), np.array([1484, 120]))
    array([ True, False])
    """
    mean, sd, pooled = (np.asarray(v, dtype=np.float64) for v in (mean, sd, pooled))
    n_min, n_max = (np.asarray(v, dtype=np.float64) for v in (n_min, n_max))
    with np.errstate(invalid="ignore"):
        apart = np.abs(mean - pooled) > sd
        uneven = n_max > UNEVEN_RATIO * n_min
    return np.nan_to_num(apart, nan=0).astype(bool) | np.nan_to_num(uneven, nan=0).astype(bool)


def fold_estimates(
    values: xr.DataArray, n_test: xr.DataArray | None, dim: str = "fold"
) -> pd.DataFrame:
    """Each cell's fold mean ± SD, pooled estimate and fold sizes (``summaries.fold_stats``):
    one row per combination of `values`' other dims, in their order.

    Parameters
    ----------
    values : xarray.DataArray
        One measure, with `dim` among its dims.
    n_test : xarray.DataArray, optional
        Test rows of each cell and fold (broadcast to `values`); None: the pooled estimate and
        sizes are NaN.
    dim : str
        The dim summarised over.

    Returns
    -------
    pandas.DataFrame
        The other dims as columns, then `ESTIMATE_COLUMNS` (``weighted_mean``: the pooled
        estimate).

    Examples
    --------
    >>> e = xr.DataArray([[100.0, 0.0, 100.0], [10.0, 20.0, 30.0]], dims=("cell", "fold"),
    ...                  coords={"cell": ["uneven", "even"]})
    >>> n = xr.DataArray([[5, 1000, 5], [50, 50, 50]], dims=("cell", "fold"))
    >>> out = fold_estimates(e, n).round(2)
    >>> out[["cell", "mean", "sd", "weighted_mean", "n_test_max", "estimates_differ"]]
         cell   mean     sd  weighted_mean  n_test_max  estimates_differ
    0  uneven  66.67  57.74           0.99      1000.0              True
    1    even  20.00  10.00          20.00        50.0             False
    """
    keys = [str(d) for d in values.dims if d != dim]
    cube = np.asarray(values.transpose(*keys, dim).values, dtype=np.float64)
    flat = cube.reshape(-1, cube.shape[-1])
    sizes = None
    if n_test is not None:
        wide = n_test.broadcast_like(values).transpose(*keys, dim).values
        sizes = np.asarray(wide, dtype=np.float64).reshape(flat.shape)
    rows = [fold_stats(flat[i], None if sizes is None else sizes[i]) for i in range(len(flat))]
    grid = pd.MultiIndex.from_product([coord_values(values, k) for k in keys], names=keys)
    out = pd.concat(
        [grid.to_frame(index=False), pd.DataFrame(rows, columns=ESTIMATE_COLUMNS[:-1])], axis=1
    ).astype({"n": "int64", "n_test_min": "float64", "n_test_max": "float64"})
    out["estimates_differ"] = estimates_differ(
        out["mean"], out["sd"], out["weighted_mean"], out["n_test_min"], out["n_test_max"]
    )
    return out


def estimate_banner(
    table: pd.DataFrame,
    label: str,
    measure: str,
    basis: str = FOLD_MEAN_BASIS,
    table_name: str = "",
    unit: str = "cells",
) -> str:
    """One line for a table of `fold_estimates`: how many cells have a fold mean and pooled
    estimate that disagree, the cell where they differ most, and which estimate the verdicts
    rest on (`basis`); "" when every cell agrees.

    Parameters
    ----------
    table : pandas.DataFrame
        Rows of `fold_estimates`.
    label : str
        How the line names a cell: a format string of the key columns, e.g.
        ``"{learner} {train_subset} -> {test_subset}"``.
    measure : str
        The measure, named in the line.
    basis : str
        What the verdicts rest on (default: the fold mean, as every paired test over folds).
    table_name : str
        The table's name, said after the measure where a page or printout has two tables
        (``"transfer matrix"``, ``"search"``).
    unit : str
        What a row of `table` is, in the plural (split sensitivity's rows are trials).
    """
    flagged = table[table["estimates_differ"]]
    if flagged.empty:
        return ""
    gap = (flagged["mean"] - flagged["weighted_mean"]).abs().fillna(-1.0)
    worst = flagged.loc[gap.idxmax()]
    name = label.format(**worst.to_dict())
    return (
        f"NOTE {measure}{f' ({table_name})' if table_name else ''}: fold mean and pooled "
        "estimate disagree (by more than the fold SD, or "
        f"test folds over {UNEVEN_RATIO:g}× apart in rows) in {len(flagged)} of {len(table)} "
        f"{unit}; most at {name}: fold mean {worst['mean']:.3g} ± {worst['sd']:.3g}, pooled "
        f"{worst['weighted_mean']:.3g}, test folds of {_rows(worst['n_test_min'])} to "
        f"{_rows(worst['n_test_max'])} rows; {basis}"
    )


def soak_banner(ds: xr.Dataset, measure: str, basis: str = FOLD_MEAN_BASIS) -> str:
    """`estimate_banner` of a SOAK result (``summary``'s cells: learner, test subset, train
    type): what ``soak run`` prints and the report shows under its tables; "" when every
    cell's fold mean and pooled estimate agree. ``basis``: `UNTESTED_BASIS` for a result
    with nothing to test."""
    table = _flagged(summary(ds, [measure]))
    return estimate_banner(table, "{learner} {train_type} on {test_subset}", measure, basis)


def evaluation_banner(ds: xr.Dataset, measure: str) -> str:
    """`estimate_banner` of an ``evaluate`` result (``evaluation_summary``'s cells: one per
    learner, over its resampling cells): the note ``soak evaluate`` prints and its report
    shows; "" when every learner's mean over cells and pooled estimate agree. The comparisons
    test the mean over cells, so the verdicts rest on it."""
    return estimate_banner(
        _flagged(evaluation_summary(ds, [measure])), "{learner}", measure, CELL_MEAN_BASIS
    )


def _flagged(table: pd.DataFrame) -> pd.DataFrame:
    """A summary table (``mean``, ``sd``, ``weighted_mean``, ``n_test_min``, ``n_test_max``)
    with the `estimates_differ` flag of each row, as `estimate_banner` reads it."""
    table["estimates_differ"] = estimates_differ(
        table["mean"], table["sd"], table["weighted_mean"], table["n_test_min"],
        table["n_test_max"],
    )  # fmt: skip
    return table


def _rows(value: float) -> str:
    return f"{int(value):,}" if np.isfinite(value) else "?"
