"""Error profiles (Meyer & Pebesma 2021; CAST's ``errorProfiles``): the cross-validated error
as a non-decreasing function of the dissimilarity index, and the map of expected error it gives.

As CAST 1.1 (R/errorProfiles.R, ``variable = "DI"``, ``multiCV = FALSE``):

1. each training point's DI is computed against the training points outside its CV fold --
   the points the model that predicted it was trained on (CAST's ``trainDI`` with the model's
   CV folds) -- and paired with its cross-validated prediction;
2. only points inside the AOA (DI <= threshold) are kept;
3. sorted by DI, the error metric (RMSE by default) of every run of ``window`` consecutive
   points (``zoo::rollapply``, centred; 5 by default) is paired with the DI of the run's centre;
4. a shape-constrained curve, non-decreasing in DI, is fitted to those pairs: CAST fits
   ``scam(metric ~ s(DI, k = 6, bs = "mpi", m = 2))``, a cubic B-spline of 6 basis functions
   whose coefficients increase. Here: the same basis (cubic, 6 functions, knots evenly spaced
   over the DI range of the windows) with coefficients constrained to increase, fitted by
   bounded least squares (``scipy.optimize.lsq_linear``), without scam's smoothing penalty (six
   coefficients on the windows of a training set leave little to smooth). It is exact,
   deterministic and smooth where isotonic regression is a step function.

Outside the fitted DI range the curve is held at its end values: beyond the largest DI of the
windows (and so outside the AOA) the expected error is that at the largest DI seen -- a lower
bound, since nothing was seen there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import xarray as xr
from scipy.interpolate import BSpline
from scipy.optimize import lsq_linear

from ..dask_client import current_client
from ..tables.table import Table
from .aoa import broadcast, check_features, compute_tasks, train_di, train_frame

__all__ = ["ErrorProfile", "error_profile", "expected_error", "profile_values"]

#: Error metrics: each increases with the error. rmse and mae for a numeric label, error_rate
#: (share misclassified) for classes.
METRICS = ("rmse", "mae", "error_rate")
#: Degree of the spline (scam's ``m = 2``: cubic).
DEGREE = 3
#: Column of the broadcast training frame holding each row's fold code.
FOLD_CODE = "__fold_code__"


@dataclass(frozen=True, eq=False)
class ErrorProfile:
    """The expected error as a non-decreasing function of the DI (CAST's ``errorModel``).

    Call it on DI values (an array; NaN stays NaN) for the expected error.

    Attributes
    ----------
    metric : str
        ``"rmse"``, ``"mae"`` or ``"error_rate"``.
    window : int
        CV predictions per moving window.
    threshold : float
        The AOA threshold of the training DI; points above it were left out.
    points : pandas.DataFrame
        The CV predictions inside the AOA, sorted by DI: ``row`` (position in the training
        table), ``fold``, ``di``, ``observed``, ``predicted``.
    windows : pandas.DataFrame
        ``di`` (of each window's centre) and ``error`` (the metric over the window): the
        points the curve is fitted to.
    knots, coefficients : ndarray
        The cubic B-spline (``scipy.interpolate.BSpline(knots, coefficients, 3)``).
    n_outside : int
        CV predictions left out because their DI is above the threshold.
    label : str
        The observed value's column ("" where not known), as figures name the error: "RMSE
        of VW".
    """

    metric: str
    window: int
    threshold: float
    points: pd.DataFrame
    windows: pd.DataFrame
    knots: np.ndarray
    coefficients: np.ndarray
    n_outside: int
    label: str = ""

    def __call__(self, di: Any) -> np.ndarray:
        return profile_values(np.asarray(di, dtype=np.float64), self.knots, self.coefficients)

    def attrs(self) -> dict[str, Any]:
        """The profile as JSON-ready attributes (what ``expected_error`` records)."""
        return {
            "metric": self.metric,
            "window": self.window,
            "aoa_threshold": self.threshold,
            "knots": [float(k) for k in self.knots],
            "coefficients": [float(c) for c in self.coefficients],
            "n_points": len(self.points),
            "n_outside": self.n_outside,
            "label": self.label,
            "fit": "cubic B-spline, 6 basis functions, non-decreasing coefficients (as scam mpi)",
        }


def profile_values(di: np.ndarray, knots: np.ndarray, coefficients: np.ndarray) -> np.ndarray:
    """The spline at ``di``, held at its end values outside the knots' range; NaN stays NaN."""
    lo, hi = knots[DEGREE], knots[-DEGREE - 1]
    return BSpline(knots, coefficients, DEGREE, extrapolate=False)(np.clip(di, lo, hi))


def error_profile(
    train: Table | pd.DataFrame | dd.DataFrame,
    *,
    folds: str | Sequence | np.ndarray | pd.Series | None = None,
    predictions: str | Sequence | np.ndarray | pd.Series | None = None,
    learner: Any = None,
    features: Sequence[str] | str | None = None,
    label: str | None = None,
    weights: Mapping[str, float] | pd.Series | None = None,
    metric: str | None = None,
    window: int = 5,
    n_basis: int = 6,
    seed: int = 1,
    client: Any = None,
) -> ErrorProfile:
    """The cross-validated error as a non-decreasing function of the DI (CAST's
    ``errorProfiles(model, trainDI, variable = "DI")``).

    Parameters
    ----------
    train : Table, pandas or Dask DataFrame
        The training points (held in memory, as for ``soak_dask.aoa``).
    folds : str or array-like
        The CV fold of each row (a column of ``train``, or one value per row), e.g. kNNDM's
        folds: each row's DI is measured against the rows outside its fold. Default: the
        Table's fold column.
    predictions : str or array-like, optional
        Each row's cross-validated prediction, made by a model trained on the rows outside its
        fold (CAST: ``model$pred`` of a caret model trained with ``savePredictions``).
    learner : str or estimator, optional
        Instead of ``predictions``: a built-in learner name (``soak_dask.BUILTIN_LEARNERS``) or
        a scikit-learn estimator, fitted once per fold on the rows outside it, on the workers.
    features, label : optional
        The predictors and the observed value; default: the Table's.
    weights : dict or Series, optional
        Predictor weights of the DI, as ``soak_dask.aoa``.
    metric : {"rmse", "mae", "error_rate"}, optional
        Default: rmse for a numeric label (a Table's regression task), error_rate otherwise.
    window : int
        CV predictions per moving window (CAST's ``window.size``).
    n_basis : int
        Basis functions of the monotone spline (CAST's ``k``).
    seed : int
        Random seed of a built-in ``learner``.
    client : distributed.Client, optional
        Default: the current client, if any.

    Returns
    -------
    ErrorProfile

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> x = rng.uniform(0, 1, (60, 2))
    >>> train = pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "y": x.sum(1) ** 2})
    >>> train["fold"] = np.arange(60) % 3
    >>> profile = error_profile(
    ...     train, folds="fold", learner="linear", features=["a", "b"], label="y"
    ... )
    >>> steps = np.diff(profile(np.linspace(0, 1, 50)))  # never down, up to rounding
    >>> profile.metric, bool(np.all(steps >= -1e-12)), bool(steps.sum() > 0)
    ('rmse', True, True)
    """
    client = current_client() if client is None else client
    spec = _spec(train, folds, predictions, learner, features, label, metric)
    _check_counts(window, n_basis)
    frame = train_frame(train, spec["features"], spec["folds"], client, spec["extra"])
    codes = _codes(frame, spec["folds"])
    if spec["metric"] != "error_rate" and not pd.api.types.is_numeric_dtype(frame[spec["label"]]):
        raise ValueError(
            f"metric={spec['metric']!r} needs a numeric label; {spec['label']!r} is "
            f"{frame[spec['label']].dtype}: use metric='error_rate' for classes"
        )
    params = train_di(frame, features=spec["features"], weights=weights, folds=codes, client=client)
    if learner is not None:
        args = (spec["features"], spec["label"], codes, learner, spec["metric"], seed)
        predicted = cv_predictions(frame, *args, client=client)
    else:
        predicted = _given(frame, predictions, spec["label"])
    points = pd.DataFrame(
        {
            "row": np.arange(len(frame)),
            "fold": codes,
            "di": params.di,
            "observed": frame[spec["label"]].to_numpy(),
            "predicted": predicted,
        }
    )
    fitted = fit_profile(points, params.threshold, spec["metric"], window, n_basis)
    return replace(fitted, label=spec["label"])


def _spec(train, folds, predictions, learner, features, label, metric) -> dict[str, Any]:
    """The columns and metric, checked before any pass over the data."""
    table = train if isinstance(train, Table) else None
    features = check_features(
        features if features is not None else getattr(table, "features", None)
    )
    label = label if label is not None else getattr(table, "label", None)
    folds = folds if folds is not None else getattr(table, "fold", None)
    if not isinstance(label, str):
        raise ValueError("label is missing: name the column of observed values, e.g. label='VW'")
    if folds is None:
        raise ValueError(
            "folds is missing: an error profile needs the CV folds the predictions were made "
            "with (a column of train, e.g. kNNDM's folds, or one fold per row)"
        )
    if (predictions is None) == (learner is None):
        raise ValueError(
            "give either predictions (each row's cross-validated prediction) or learner (a "
            "learner fitted once per fold to make them), not " + ("both" if learner else "neither")
        )
    extra = {label: "label"}
    if isinstance(predictions, str):
        extra[predictions] = "predictions"
    return {
        "features": features,
        "label": label,
        "folds": folds,
        "extra": extra,
        "metric": _metric(metric, table, train, label),
    }


def _metric(metric: str | None, table: Table | None, train: Any, label: str) -> str:
    if metric is None:
        if table is not None:
            return "rmse" if table.task == "regression" else "error_rate"
        dtype = train[label].dtype if label in train.columns else None
        return "rmse" if dtype is not None and pd.api.types.is_float_dtype(dtype) else "error_rate"
    if metric not in METRICS:
        raise ValueError(f"metric={metric!r}: choose one of {list(METRICS)}")
    return metric


def _check_counts(window: int, n_basis: int) -> None:
    for name, value, least in (("window", window, 2), ("n_basis", n_basis, DEGREE + 1)):
        if not isinstance(value, int | np.integer) or isinstance(value, bool) or value < least:
            raise ValueError(f"{name}={value!r}: need an integer of at least {least}")


def _codes(frame: pd.DataFrame, folds: Any) -> np.ndarray:
    values = frame[folds] if isinstance(folds, str) else pd.Series(np.asarray(folds))
    if values.isna().any():
        raise ValueError(f"folds has {int(values.isna().sum())} missing values; give every row one")
    return pd.factorize(values, sort=True)[0]


def _given(frame: pd.DataFrame, predictions: Any, label: str) -> np.ndarray:
    """The user's CV predictions, one per row, none missing."""
    values = frame[predictions] if isinstance(predictions, str) else pd.Series(predictions)
    if len(values) != len(frame):
        raise ValueError(
            f"predictions has {len(values)} values but train has {len(frame)} rows; give one "
            "cross-validated prediction per training row (or the name of its column)"
        )
    if values.isna().any():
        raise ValueError(
            f"predictions has {int(values.isna().sum())} missing values; every training row "
            "needs its cross-validated prediction"
        )
    return values.to_numpy()


def cv_predictions(
    frame: pd.DataFrame,
    features: Sequence[str],
    label: str,
    codes: np.ndarray,
    learner: Any,
    metric: str,
    seed: int,
    *,
    client: Any = None,
) -> np.ndarray:
    """Each row's prediction by ``learner`` fitted on the rows outside its fold, one task per
    fold on the workers (the small training frame scattered once)."""
    from ..learn.builtin import resolve_learners

    task = "classification" if metric == "error_rate" else "regression"
    learners = resolve_learners(learner, task, seed)
    if len(learners) != 1:
        raise ValueError(f"learner names {len(learners)} learners; give one")
    (estimator,) = learners.values()
    data = frame[[*features, label]].assign(**{FOLD_CODE: codes})
    ref = broadcast(data, client)
    tasks = [
        dask.delayed(_fold_predictions, pure=True)(ref, tuple(features), label, fold, estimator)
        for fold in range(int(codes.max()) + 1)
    ]
    out = np.empty(len(frame), dtype=object if task == "classification" else np.float64)
    for fold, values in enumerate(compute_tasks(tasks, client)):
        out[codes == fold] = values
    return out


def _fold_predictions(data: pd.DataFrame, features, label: str, fold: int, estimator) -> Any:
    from sklearn.base import clone

    held_out = (data[FOLD_CODE] == fold).to_numpy()
    x = data[list(features)].to_numpy(np.float64)
    y = data[label].to_numpy()
    model = clone(estimator).fit(x[~held_out], y[~held_out])
    return model.predict(x[held_out])


def window_errors(points: pd.DataFrame, window: int, metric: str) -> pd.DataFrame:
    """The metric over every run of ``window`` consecutive ``points`` (sorted by DI), at the DI
    of the run's centre (``zoo::rollapply(..., align = "center")``)."""
    observed, predicted = points["observed"].to_numpy(), points["predicted"].to_numpy()
    if metric == "error_rate":
        loss = (observed != predicted).astype(np.float64)
    else:
        diff = observed.astype(np.float64) - predicted.astype(np.float64)
        loss = diff**2 if metric == "rmse" else np.abs(diff)
    means = np.lib.stride_tricks.sliding_window_view(loss, window).mean(axis=1)
    centre = (window - 1) // 2
    di = points["di"].to_numpy()[centre : centre + len(means)]
    return pd.DataFrame({"di": di, "error": np.sqrt(means) if metric == "rmse" else means})


def fit_profile(
    points: pd.DataFrame, threshold: float, metric: str, window: int, n_basis: int
) -> ErrorProfile:
    """Keep the points inside the AOA, sort them by DI, and fit the monotone spline to their
    moving-window errors."""
    inside = points[points["di"] <= threshold]
    inside = inside.iloc[np.argsort(inside["di"].to_numpy(), kind="stable")].reset_index(drop=True)
    n_windows = len(inside) - window + 1
    if n_windows < n_basis:
        raise ValueError(
            f"{len(inside)} CV predictions lie inside the AOA: {max(n_windows, 0)} windows of "
            f"{window}, fewer than the n_basis={n_basis} the spline needs; give more training "
            "points, or a smaller window or n_basis"
        )
    windows = window_errors(inside, window, metric)
    knots, coefficients = monotone_spline(
        windows["di"].to_numpy(), windows["error"].to_numpy(), n_basis
    )
    return ErrorProfile(
        metric, window, threshold, inside, windows, knots, coefficients, len(points) - len(inside)
    )


def monotone_spline(x: np.ndarray, y: np.ndarray, n_basis: int) -> tuple[np.ndarray, np.ndarray]:
    """Knots and coefficients of the least-squares cubic B-spline of ``n_basis`` functions with
    non-decreasing coefficients (so a non-decreasing curve), knots evenly spaced over ``x``."""
    lo, hi = float(x.min()), float(x.max())
    if not hi > lo:
        raise ValueError(
            f"every window's DI is {lo:.4g}: the error cannot be profiled over the DI; give "
            "training points that differ in their DI"
        )
    inner = np.linspace(lo, hi, n_basis - DEGREE + 1)
    knots = np.r_[[lo] * DEGREE, inner, [hi] * DEGREE]
    basis = BSpline.design_matrix(x, knots, DEGREE).toarray()
    # coefficients = cumulative sums of (free start, increments >= 0)
    steps = np.tril(np.ones((n_basis, n_basis)))
    lower = np.r_[-np.inf, np.zeros(n_basis - 1)]
    fit = lsq_linear(basis @ steps, y, bounds=(lower, np.inf), method="bvls")
    return knots, steps @ fit.x


def expected_error(di: xr.DataArray | xr.Dataset, profile: ErrorProfile) -> xr.DataArray:
    """The expected error of every cell (or row) of a DI map: ``profile`` applied chunk by
    chunk (lazy when ``di`` is), NaN where the DI is.

    Parameters
    ----------
    di : xarray.DataArray or Dataset
        The DI (a Dataset from ``soak_dask.aoa``: its ``di``).
    profile : ErrorProfile
        From ``error_profile``.

    Returns
    -------
    xarray.DataArray
        ``expected_error`` over ``di``'s dims and chunks, the profile in its attrs; add it to
        the AOA with ``ds.assign(expected_error=...)`` to write it beside DI/AOA.
    """
    if not isinstance(profile, ErrorProfile):
        raise TypeError(f"profile is a {type(profile).__name__}; give error_profile's result")
    if isinstance(di, xr.Dataset):
        di = di["di"]
    out = xr.apply_ufunc(
        profile_values,
        di.astype(np.float64),
        kwargs={"knots": profile.knots, "coefficients": profile.coefficients},
        dask="parallelized",
        output_dtypes=[np.float64],
    )
    attrs = {"long_name": f"expected {profile.metric} (error profile over the DI)"}
    return out.rename("expected_error").assign_attrs(attrs, **profile.attrs())
