"""Assemble a run's score records into the results ``xarray.Dataset``: the records placed on
the result cells they serve, and the attrs every result carries (settings made storable in
Zarr and NetCDF, the versions of the packages that shaped it)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from ..schema import COUNTS, FIT_INFO, MEASURE_NAMES, POINTWISE, SQUARED_LOSSES, TIMINGS

#: Title of the results ``soak`` makes (stores of soak_dask 0.1.0 carry it but no mark).
RESULTS_TITLE = "SOAK: Same/Other/All K-fold cross-validation"
_PACKAGES = ("soak_dask", "dask", "distributed", "pandas", "numpy", "scikit-learn", "xarray")


def package_versions() -> dict[str, str]:
    """Versions of the packages that shape a result, recorded in its attrs."""
    out = {}
    for name in _PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


def build_dataset(
    records: Iterable[Mapping[str, Any]],
    splits: pd.DataFrame,
    coords: Mapping[str, Sequence],
    learners: Sequence[str],
    measures: Sequence[str],
    attrs: Mapping[str, Any],
    *,
    loss_pairs: bool = False,
) -> xr.Dataset:
    """Place per-(learner, fit, test block) records on the result cells they serve.

    Parameters
    ----------
    records : iterable of dict
        Keys ``learner, fit_id, block``, the measures, counts and timings.
    splits : DataFrame
        The plan's result cells: a column per dim of ``coords``, ``fit_id`` and ``block``.
    coords : mapping
        Dim -> ordered coordinate values (test subsets as str); the learner dim comes first.
    learners : sequence of str
    measures : sequence of str
    attrs : mapping
        Run settings stored in ``Dataset.attrs``.
    loss_pairs : bool
        Also store, per pointwise measure, ``loss_sq_<measure>`` and
        ``loss_diff_sq_<measure>`` (``with_loss_pairs``).
    """
    scores = pd.DataFrame.from_records(list(records))
    rows = splits.merge(scores, on=["fit_id", "block"], how="left", validate="many_to_many")
    coords = {
        "learner": np.array(learners, dtype=object),
        **{
            k: np.array(v, dtype=object if isinstance(v[0], str) else np.int64)
            for k, v in coords.items()
        },
    }
    dims = list(coords)
    index = pd.MultiIndex.from_product(list(coords.values()), names=dims)
    full = rows.set_index(dims).reindex(index)
    # from_dataframe sorts each level; reindex restores the intended coordinate order.
    info = [name for name in FIT_INFO if name in full.columns]
    ds = xr.Dataset.from_dataframe(full[[*measures, *COUNTS, *TIMINGS, *info]]).reindex(coords)
    for name in COUNTS:
        ds[name] = ds[name].astype(np.int64)
    for name in info:
        # A fit that failed (or chose nothing) has no entry: "" for text, NaN for counts.
        if ds[name].dtype == object:
            ds[name] = ds[name].fillna("").astype(str).astype(object)
        ds[name].attrs["long_name"] = FIT_INFO[name]
    fit_id = (
        splits.set_index(dims[1:])["fit_id"].to_xarray().reindex({k: coords[k] for k in dims[1:]})
    )
    ds = ds.assign_coords(fit_id=fit_id.astype(np.int64))
    for name in measures:
        ds[name].attrs["long_name"] = MEASURE_NAMES[name]
    for name, long_name in {**COUNTS, **TIMINGS}.items():
        ds[name].attrs["long_name"] = long_name
    ds.attrs.update(attrs)
    ds.attrs["measures"] = list(measures)
    return with_loss_pairs(ds, full, measures) if loss_pairs else ds


def with_loss_pairs(ds: xr.Dataset, full: pd.DataFrame, measures: Sequence[str]) -> xr.Dataset:
    """``ds`` with the records' ``loss_pairs`` (``full``: the records on every (learner,
    cell), in ``ds``'s order) for each pointwise measure ``m`` (``schema.POINTWISE``), l the
    per-row loss ``m`` averages: ``loss_sq_<m>`` (learner, the cell's dims; measures of
    ``schema.SQUARED_LOSSES``), ``Σ l(i)²`` over the cell's test rows; and with two or more
    learners ``loss_diff_sq_<m>`` (learner, versus, the cell's dims), ``Σ (l_learner(i) −
    l_versus(i))²``. NaN where not recorded: where the learner failed, and for a pair where
    the two learners were not predicted together (resumed from a checkpoint), where one
    failed, and on the diagonal."""
    learners = [str(v) for v in ds["learner"].values]
    dims = [d for d in full.index.names if d != "learner"]
    shape = (len(learners), *(ds.sizes[d] for d in dims))
    found = full["loss_pairs"] if "loss_pairs" in full else pd.Series(np.nan, index=full.index)
    records = np.asarray(found.to_numpy(), dtype=object).reshape(shape)
    each = np.arange(len(learners))
    for m in measures:
        if m not in POINTWISE:
            continue
        sums = np.full((len(learners), *shape), np.nan)
        for v, versus in enumerate(learners):
            pick = np.vectorize(partial(_pair_value, m=m, versus=versus), otypes=[np.float64])
            sums[:, v] = pick(records)
        if m in SQUARED_LOSSES:  # each learner's pair with itself
            name = f"loss_sq_{m}"
            ds[name] = (("learner", *dims), sums[each, each])
            ds[name].attrs["long_name"] = (
                f"sum over the test rows of the square of the learner's per-row {m} loss"
            )
        if len(learners) < 2:
            continue
        sums[each, each] = np.nan
        # Both learners' records must hold the pair (a resumed one may hold a partner scored
        # again apart, whose record does not): the variable is symmetric either way.
        both = np.isfinite(sums) & np.isfinite(np.swapaxes(sums, 0, 1))
        name = f"loss_diff_sq_{m}"
        ds[name] = (("learner", "versus", *dims), np.where(both, sums, np.nan))
        ds[name].attrs["long_name"] = (
            f"sum over the test rows of the squared difference of the learner's and the versus "
            f"learner's per-row {m} loss (Wald CV test)"
        )
    return ds.assign_coords(versus=np.array(learners, dtype=object)) if len(learners) > 1 else ds


def _pair_value(record: Any, m: str, versus: str) -> float:
    """A record's ``loss_pairs`` value of measure ``m`` against ``versus`` (NaN where not
    recorded)."""
    if not isinstance(record, dict) or m not in record:
        return np.nan
    return float(record[m].get(versus, np.nan))


def encode_attrs(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Make settings storable in both Zarr and NetCDF attrs (no None, bool or dict)."""
    out: dict[str, Any] = {}
    for key, value in settings.items():
        if value is None:
            value = ""
        elif isinstance(value, bool):
            value = int(value)
        elif isinstance(value, Mapping):
            value = json.dumps(value, sort_keys=True, default=str)
        elif isinstance(value, tuple | list):
            value = [str(v) for v in value]
        out[key] = value
    return out
