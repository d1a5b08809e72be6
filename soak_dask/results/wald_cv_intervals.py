"""One learner's Wald CV interval of its mean per-row loss (Bayle et al. 2020; mlr3inferr's
``ci.wald_cv``) on an ``evaluate`` result of one K-fold CV: `wald_cv_intervals`.

Each fold gives its test rows, ``Σ l`` (the measure times the rows) and ``Σ l²``: recorded
for log loss, MSE and MAE (``loss_sq_<measure>``), and for error and accuracy, whose per-row
loss takes two values, following from the score (``schema.TWO_VALUED``). RMSE's interval is
MSE's by the delta method, as mlr3inferr's.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from ..schema import POINTWISE, TWO_VALUED, within_range
from ..stats.mean_tests import ALPHA, evaluation_values, sqrt_delta
from ..stats.wald_cv import WALD_CV_EXTRA, wald_cv_test
from .comparisons import check_wald_cv_design
from .kinds import validate_evaluation
from .ncv import RMSE_NEEDS_MSE, RMSE_NOTE

__all__ = ["WALD_CV_INTERVAL_COLUMNS", "WALD_CV_ONE_COVERAGE", "wald_cv_intervals"]

#: Columns of `wald_cv_intervals`.
WALD_CV_INTERVAL_COLUMNS: list[str] = [
    "learner", "measure", "n", *WALD_CV_EXTRA, "ci_low", "ci_high", "level", "variance",
    "note", "reason",
]  # fmt: skip
#: Coverage of one learner's 90 % interval of its fitted models' true mean loss, by measure
#: (the lower of the learners simulated), measured by ``benchmarks/wald_cv_coverage.py``:
#: 1,000 replicates of 5-fold CV on n = 300 rows, logistic regression and LDA for error and
#: log loss, linear regression for MSE and MAE, the truth on 10⁵ new rows (Wilson 95 %
#: intervals ±0.02). Accuracy's interval is error's mirrored: the same coverage.
WALD_CV_ONE_COVERAGE: dict[str, float] = {
    "error": 0.889, "accuracy": 0.889, "log_loss": 0.876, "mse": 0.889, "mae": 0.880,
}  # fmt: skip


def wald_cv_intervals(
    ds: xr.Dataset,
    measure: str | Iterable[str] | None = None,
    level: float = 1 - ALPHA,
    variance: str = "all-pairs",
) -> pd.DataFrame:
    """Each learner's Wald CV interval of its mean per-row loss (Bayle, Bayle, Janson and
    Mackey 2020; mlr3inferr's ``ci.wald_cv``) from one K-fold CV or leave-one-out.

    The estimate is the mean l̄ of the learner's per-row losses over all ``n`` test rows (each
    tested once, by the fold model that did not train on it), the interval ``l̄ ± z σ̂/√n``,
    kept within the measure's range (as mlr3inferr's ``within_range``). Its target is the
    test error of these fitted models (the mean over the K fold models of each one's expected
    loss on a new row), not the learner's expected error over new training samples.

    Parameters
    ----------
    ds : xarray.Dataset
        Results of ``evaluate(..., outer="cv")`` (one repeat) or ``outer="loo"``, without a
        group column.
    measure : str or iterable of str, optional
        Default: see ``validate_evaluation``. Pointwise measures (error, accuracy, log loss,
        MSE, MAE) and RMSE (from MSE's sums, which the result must hold); a row of another
        gives the ``reason``.
    level : float
        The intervals' coverage (default 0.95).
    variance : {"all-pairs", "within-fold"}
        σ̂² (``stats.wald_cv.wald_cv_test``): over all rows (mlr3inferr's default, as
        ``compare(method="wald_cv")``), or the mean of the folds' sample variances.

    Returns
    -------
    pandas.DataFrame
        `WALD_CV_INTERVAL_COLUMNS`, one row per measure and learner: the test rows ``n``,
        ``estimate`` l̄, ``sd`` σ̂, ``se`` σ̂/√n, the interval ``ci_low``..``ci_high``,
        ``level``, ``variance``, ``note`` (the simulated coverage, `WALD_CV_ONE_COVERAGE`;
        RMSE's delta method) and ``reason`` ("" where defined).

    Raises
    ------
    ValueError
        If a measure is unknown, or the design is not one K-fold CV or leave-one-out of
        independent rows (as ``compare(method="wald_cv")``).
    """
    names = validate_evaluation(ds, measure)
    outer = str(ds.attrs.get("outer", ""))
    check_wald_cv_design(ds, outer)
    rows = []
    for m in names:
        for i, learner in enumerate(str(v) for v in ds["learner"].values):
            row: dict[str, Any] = dict.fromkeys(WALD_CV_INTERVAL_COLUMNS, math.nan)
            row.update(learner=learner, measure=m, n=0, level=level, variance=variance)
            row.update(note=_note(outer, m), reason=_missing(ds, m, i))
            if not row["reason"]:
                row.update(_interval(ds, m, i, level, variance))
            rows.append(row)
    out = pd.DataFrame(rows, columns=WALD_CV_INTERVAL_COLUMNS)
    return out.astype({"n": "int64", "note": str, "reason": str})


def _interval(ds: xr.Dataset, m: str, learner: int, level: float, variance: str) -> dict:
    """A defined row's numbers: `wald_cv_test` of the folds' sums (MSE's for RMSE, then the
    delta method), clipped to the measure's range; a ``reason`` where σ̂ is 0."""
    n, total, squares = _sums(ds, "mse" if m == "rmse" else m, learner)
    test = wald_cv_test(n, total, squares, level=level, variance=variance)
    out: dict[str, Any] = {"n": int(n.sum()), **test.extra}
    if test.extra["sd"] == 0:
        out["reason"] = (
            f"all {out['n']} per-row losses of {m} are equal: their variance is 0, so the Wald "
            "CV interval is undefined"
        )
        return out
    low, high = test.ci_low, test.ci_high
    if m == "rmse":
        out["sd"] /= 2 * math.sqrt(out["estimate"])
        out["estimate"], out["se"], low, high = sqrt_delta(out["estimate"], out["se"], level)
    out["ci_low"], out["ci_high"] = within_range(m, low, high)
    return out


def _note(outer: str, m: str) -> str:
    """What the coverage simulation says of one learner's interval of `m` on `outer`
    (`WALD_CV_ONE_COVERAGE`), and RMSE's delta method."""
    coverage = WALD_CV_ONE_COVERAGE.get("mse" if m == "rmse" else m)
    if coverage is None:
        return ""
    said = (
        f"one learner's 90 % interval covered its fitted models' true mean loss in "
        f"{coverage:.1%} of simulations (benchmarks/wald_cv_coverage.py: 5-fold CV, n = 300)"
        if outer == "cv"
        else f"its coverage was not measured on outer={outer!r}"
    )
    return f"{RMSE_NOTE}; of MSE, {said}" if m == "rmse" else said


def _sums(ds: xr.Dataset, m: str, learner: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per fold of `learner`: its test rows, ``Σ l`` and ``Σ l²`` of measure `m`."""
    n = evaluation_values(ds, "n_test")[learner]
    total = evaluation_values(ds, m)[learner] * n
    if m in TWO_VALUED:
        return n, total, total * TWO_VALUED[m]
    return n, total, evaluation_values(ds, f"loss_sq_{m}")[learner]


def _missing(ds: xr.Dataset, m: str, learner: int) -> str:
    """Why one learner's Wald CV interval of `m` cannot be computed on `ds`, or ""."""
    base = "mse" if m == "rmse" else m
    if base not in POINTWISE:
        return (
            f"the Wald CV interval needs a mean of per-row losses ({', '.join(POINTWISE)}) or "
            f"RMSE; {m!r} is not one"
        )
    if base not in ds.data_vars:
        return RMSE_NEEDS_MSE
    if base not in TWO_VALUED and f"loss_sq_{base}" not in ds.data_vars:
        return (
            f"these results hold no sums of squared per-row {base} losses (loss_sq_{base}): they "
            "come from an earlier soak_dask or were cut down; run evaluate again"
        )
    if not all(np.isfinite(part).all() for part in _sums(ds, base, learner)):
        return (
            f"{ds['learner'].values[learner]} has no {base} sums in some fold (a fit or a "
            "prediction failed there, or a resumed run held an earlier record): see the run's "
            "warnings"
        )
    return ""
