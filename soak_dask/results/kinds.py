"""What kind of result a Dataset is, and which of its variables are measures: the checks
every statistic, figure and report of SOAK and ``evaluate`` results runs first
(`validate_results`, `validate_evaluation`, `is_evaluation`, `no_tests_reason`), and the
helpers that read a measure's values in a fixed dim order.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from ..schema import EVALUATION_DIMS, NON_MEASURE_VARS, REFERENCE, RESULT_DIMS
from ..tables.checks import UNEQUAL_FOLDS

__all__ = [
    "EVALUATION_INSTEAD",
    "as_name_list",
    "coord_values",
    "is_evaluation",
    "measure_values",
    "no_tests_reason",
    "per_train_size",
    "unequal_subsets",
    "validate_evaluation",
    "validate_results",
]

#: What to call on evaluate results instead of SOAK's statistics.
EVALUATION_INSTEAD = (
    "these are evaluate() results: use evaluation_summary(), by_fold() or compare() "
    "(ds.soak.summary(), .by_fold(), .compare(a, b, measure))"
)

# Variables of an evaluate result that derive from a measure (bootstrap designs): summarised
# and compared beside it by default.
_DERIVED_SUFFIXES: tuple[str, ...] = ("_632", "_632plus")


def as_name_list(value: str | Iterable[Any]) -> list[str]:
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
        listed = [m for m in as_name_list(ds.attrs["measures"]) if m in ds.data_vars]
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
        return f"; {EVALUATION_INSTEAD}"
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
    wanted = available if measures is None else as_name_list(measures)
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
    variable with the evaluate dims that is not a split description, a timing or a sum of
    squared per-row losses (``loss_sq_<measure>``).
    """
    listed = [m for m in as_name_list(ds.attrs.get("measures", [])) if m in ds.data_vars]
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
        and not str(name).startswith("loss_sq_")
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
    if set(coord_values(ds, "train_type")) - {REFERENCE}:
        return ""
    if ds.sizes["test_subset"] == 1:
        return "one subset: plain K-fold CV, no 'other' or 'all' train set to compare with 'same'"
    return "'same' train sets only (train_types='same'), no 'other' or 'all' to compare with"


def measure_values(ds: xr.Dataset, name: str) -> np.ndarray:
    """Float array of one measure with axes in RESULT_DIMS order (computes dask arrays)."""
    return np.asarray(ds[name].transpose(*RESULT_DIMS).values, dtype=np.float64)


def coord_values(ds: xr.Dataset, dim: str) -> list[Any]:
    """Plain Python labels of a dimension (numpy scalars would leak into the frame)."""
    return ds[dim].values.tolist()


def per_train_size(func: Callable[..., pd.DataFrame]) -> Callable[..., pd.DataFrame]:
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
    return [s for s, u in zip(coord_values(ds, "test_subset"), uneven.values, strict=True) if u]
