"""The nested CV interval (Bates, Hastie and Tibshirani 2023; ``stats.nested_cv``) on an
``evaluate(..., inference="ncv")`` result: the per-block sums it needs, of one learner's losses
or of two learners' per-row loss differences, and `ncv_intervals`, each learner's interval.

A block's ``Σ l`` is its score times its test rows. Its ``Σ l²`` is recorded for a pair of
learners (``ncv_loss_diff_sq_<measure>``) and for one learner's log loss, MSE and MAE
(``ncv_loss_sq_<measure>``); for one learner's error (0 or 100 points) and accuracy (0 or 1),
whose per-row loss takes two values, it follows from the score.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import pandas as pd
import xarray as xr

from ..schema import POINTWISE, TWO_VALUED, within_range
from ..stats.mean_tests import ALPHA, sqrt_delta
from ..stats.nested_cv import NCV_EXTRA, ncv_estimate, ncv_test
from .kinds import validate_evaluation

__all__ = [
    "NCV_COLUMNS", "RMSE_NEEDS_MSE", "RMSE_NOTE", "ncv_intervals", "ncv_missing", "ncv_point",
    "ncv_sums",
]  # fmt: skip

#: Columns of `ncv_intervals`.
NCV_COLUMNS: list[str] = [
    "learner", "measure", *NCV_EXTRA, "ci_low", "ci_high", "level", "note", "reason",
]  # fmt: skip
#: The note of a row of RMSE, and its reason where the result lacks MSE.
RMSE_NOTE = (
    "RMSE by the delta method from MSE's interval (as mlr3inferr): estimate √mse, se = "
    "se_mse / (2 √mse)"
)
RMSE_NEEDS_MSE = "RMSE's interval is MSE's by the delta method: evaluate with 'mse' among measures"
_BLOCKS = ("learner", "inference_repeat", "ncv_outer", "ncv_fold")

Sums = tuple[np.ndarray, np.ndarray, np.ndarray]


def ncv_missing(ds: xr.Dataset, m: str, learners: tuple[int, ...]) -> str:
    """Why the nested CV interval of `m` (one learner's, or a pair's difference: `learners`,
    indices into ``ds.learner``) cannot be computed on `ds`, or ""."""
    if ds.attrs.get("inference") != "ncv" or f"ncv_{m}" not in ds.data_vars:
        return (
            f"these results hold no nested CV blocks of {m!r}: run evaluate(..., "
            "inference='ncv') (ncv_<measure> holds those of the measures it scored)"
        )
    if m not in POINTWISE:
        return (
            f"the nested CV interval needs a mean of per-row losses ({', '.join(POINTWISE)}); "
            f"{m!r} is not one"
        )
    if len(learners) == 1 and m not in TWO_VALUED and f"ncv_loss_sq_{m}" not in ds.data_vars:
        return (
            f"these results hold no sums of squared per-row {m} losses of the nested CV blocks "
            f"(ncv_loss_sq_{m}): they come from an earlier soak_dask or were cut down; run "
            "evaluate(..., inference='ncv') again"
        )
    if len(learners) == 2 and f"ncv_loss_diff_sq_{m}" not in ds.data_vars:
        return f"these results hold no per-row {m} differences of the nested CV blocks"
    sums = ncv_sums(ds, m, learners)
    if not all(np.isfinite(part).all() for block in sums for part in block):
        return (
            f"some nested CV blocks of {m!r} were not scored for "
            f"{' and '.join(str(ds['learner'].values[i]) for i in learners)} (a fit failed, or "
            "the two learners were predicted apart): see the run's warnings"
        )
    return ""


def ncv_sums(ds: xr.Dataset, m: str, learners: tuple[int, ...]) -> tuple[Sums, Sums]:
    """The outer (R, K) and inner (R, K, K − 1) blocks' (rows, Σ l, Σ l²) of one learner's
    losses of `m` (`learners` one index into ``ds.learner``) or of the pair's per-row
    differences ``l_a − l_b`` (two indices)."""
    n, total = _totals(ds, m, learners[0])
    if len(learners) == 1 and m in TWO_VALUED:
        squares = total * TWO_VALUED[m]
    elif len(learners) == 1:
        own = ds[f"ncv_loss_sq_{m}"].transpose(*_BLOCKS)
        squares = np.asarray(own.values[learners[0]], dtype=np.float64)
    else:
        total = total - _totals(ds, m, learners[1])[1]
        pairs = ds[f"ncv_loss_diff_sq_{m}"].transpose("learner", "versus", *_BLOCKS[1:])
        squares = np.asarray(pairs.values[learners[0], learners[1]], dtype=np.float64)
    return _split((n, total, squares)), _split((n, total, squares), inner=True)


def ncv_point(ds: xr.Dataset, m: str, learner: int) -> float:
    """One learner's bias-corrected NCV estimate of `m` (``stats.nested_cv.ncv_estimate``:
    its blocks' scores alone, so for any measure averaging per-row losses)."""
    blocks = _totals(ds, m, learner)
    return ncv_estimate(_split(blocks), _split(blocks, inner=True))[0]


def _totals(ds: xr.Dataset, m: str, learner: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows, Σ l) of every block (R, K, K) of `learner`: its scores times its rows."""
    n = np.asarray(ds["ncv_n_test"].transpose(*_BLOCKS).values[learner], dtype=np.float64)
    scores = np.asarray(ds[f"ncv_{m}"].transpose(*_BLOCKS).values[learner], dtype=np.float64)
    return n, n * scores


def _split(blocks: tuple[np.ndarray, ...], inner: bool = False) -> tuple[np.ndarray, ...]:
    """The outer blocks (``ncv_fold`` 0) or the inner ones (1..K − 1) of each array."""
    return tuple(b[..., 1:] if inner else b[..., 0] for b in blocks)


def ncv_intervals(
    ds: xr.Dataset, measure: str | Iterable[str] | None = None, level: float = 1 - ALPHA
) -> pd.DataFrame:
    """Each learner's nested CV interval of its mean per-row loss (Bates, Hastie and
    Tibshirani 2023; mlr3inferr's ``ci.ncv``) from the blocks of ``evaluate(...,
    inference="ncv")``.

    Parameters
    ----------
    ds : xarray.Dataset
        Results of ``evaluate(..., inference="ncv")``.
    measure : str or iterable of str, optional
        Default: see ``validate_evaluation``. Pointwise measures (error, accuracy, log loss,
        MSE, MAE) and RMSE (MSE's interval by the delta method; the result must hold MSE); a
        row of another gives the ``reason``.
    level : float
        The intervals' coverage (default 0.95).

    Returns
    -------
    pandas.DataFrame
        `NCV_COLUMNS`, one row per measure and learner: ``estimate`` (the bias-corrected NCV
        estimate), ``se``, ``err_ncv`` (the inner CVs' mean), ``err_cv`` (the outer folds'
        mean), ``mse`` (the estimated mean squared error of the CV estimate), the interval
        ``ci_low``..``ci_high`` (``estimate ± z se``, kept within the measure's range, as
        mlr3inferr does), ``level``, ``note`` (RMSE's: the delta method) and ``reason`` (""
        where defined). RMSE's ``err_ncv`` and ``err_cv`` are the square roots of MSE's, its
        ``mse`` MSE's divided by 4 × MSE's estimate (the delta method).

    Raises
    ------
    ValueError
        If a measure is unknown.
    """
    names = validate_evaluation(ds, measure)
    rows = []
    for m in names:
        for i, learner in enumerate(str(v) for v in ds["learner"].values):
            row = dict.fromkeys(NCV_COLUMNS, math.nan)
            row.update(learner=learner, measure=m, level=level, note="", reason="")
            if m == "rmse":
                row["note"] = RMSE_NOTE
                row["reason"] = "" if "mse" in ds.data_vars else RMSE_NEEDS_MSE
            row["reason"] = row["reason"] or ncv_missing(ds, "mse" if m == "rmse" else m, (i,))
            if not row["reason"]:
                row.update(_interval(ds, m, i, level))
            rows.append(row)
    return pd.DataFrame(rows, columns=NCV_COLUMNS).astype({"note": str, "reason": str})


def _interval(ds: xr.Dataset, m: str, learner: int, level: float) -> dict[str, float | str]:
    """One learner's `NCV_EXTRA` and interval of `m` (RMSE: MSE's by the delta method), kept
    within the measure's range; a ``reason`` where RMSE's MSE estimate is not positive."""
    test = ncv_test(*ncv_sums(ds, "mse" if m == "rmse" else m, (learner,)), level=level)
    out: dict[str, float | str] = {**test.extra, "ci_low": test.ci_low, "ci_high": test.ci_high}
    if m == "rmse":
        mse = test.extra["estimate"]
        if not mse > 0:
            return {"reason": f"the NCV estimate of MSE is {mse:.4g}: RMSE's needs it positive"}
        out["estimate"], out["se"], out["ci_low"], out["ci_high"] = sqrt_delta(
            mse, test.extra["se"], level
        )
        out.update(err_ncv=math.sqrt(test.extra["err_ncv"]), err_cv=math.sqrt(test.extra["err_cv"]))
        out["mse"] = test.extra["mse"] / (4 * mse)  # the delta method: se² / (4 mse)
    out["ci_low"], out["ci_high"] = within_range(m, float(out["ci_low"]), float(out["ci_high"]))
    return out
