"""Gather score records into the results ``xarray.Dataset`` and read/write it."""

from __future__ import annotations

import glob
import json
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
import zarr

from ..schema import COUNTS, MEASURE_NAMES, RESULT_DIMS, TIMINGS, TRAIN_TYPES

#: Root attribute marking a store written by ``save_results``; its value, the format version.
RESULTS_MARK = "soak_dask_results"
RESULTS_FORMAT = 1
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
    learners: Sequence[str],
    subsets: Sequence[str],
    n_folds: int,
    measures: Sequence[str],
    attrs: Mapping[str, Any],
    extra_coords: Mapping[str, Sequence] | None = None,
) -> xr.Dataset:
    """Place per-(learner, fit, test subset) records on the splits they serve.

    Parameters
    ----------
    records : iterable of dict
        Keys ``learner, fit_id, test_subset``, the measures, counts and timings.
    splits : DataFrame
        The plan's split table (``test_subset, fold, train_type, fit_id``), test subsets as str.
    learners, subsets : sequence of str
        Coordinate values, in order.
    n_folds : int
    measures : sequence of str
    attrs : mapping
        Run settings stored in ``Dataset.attrs``.
    extra_coords : mapping, optional
        Further split dims (``train_size``, ``sample``) and their ordered values; ``splits``
        then has a column for each.
    """
    scores = pd.DataFrame.from_records(list(records))
    rows = splits.merge(scores, on=["fit_id", "test_subset"], how="left", validate="many_to_many")
    train_types = [t for t in TRAIN_TYPES if t in set(splits["train_type"])]
    coords = {
        "learner": np.array(learners, dtype=object),
        "test_subset": np.array(subsets, dtype=object),
        "fold": np.arange(1, n_folds + 1, dtype=np.int64),
        "train_type": np.array(train_types, dtype=object),
        **{
            k: np.array(v, dtype=object if isinstance(v[0], str) else np.int64)
            for k, v in (extra_coords or {}).items()
        },
    }
    dims = list(coords)
    index = pd.MultiIndex.from_product(list(coords.values()), names=dims)
    full = rows.set_index(dims).reindex(index)
    # from_dataframe sorts each level; reindex restores the intended coordinate order.
    ds = xr.Dataset.from_dataframe(full[[*measures, *COUNTS, *TIMINGS]]).reindex(coords)
    for name in COUNTS:
        ds[name] = ds[name].astype(np.int64)
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
    return ds


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


def save_results(ds: xr.Dataset, path: str | os.PathLike, *, overwrite: bool = False) -> Path:
    """Write results to a Zarr store, or a NetCDF file when ``path`` ends in ``.nc``.

    The store is marked as results (root attribute ``soak_dask_results``), so that
    ``overwrite=True`` replaces only such a store: see ``check_output``, which also refuses a
    path that is, holds or lies inside the input table (``ds.attrs["source"]``).
    """
    path = check_output(path, overwrite=overwrite, source=ds.attrs.get("source"))
    ds = ds.assign_attrs({RESULTS_MARK: RESULTS_FORMAT})
    if path.suffix == ".nc":
        ds.to_netcdf(path)
    else:
        # Zarr v3 has no consolidated metadata in its spec; plain metadata reads everywhere.
        ds.to_zarr(path, mode="w", consolidated=False)
    return path


def check_output(
    path: str | os.PathLike,
    *,
    overwrite: bool,
    source: Any = None,
    flag: str = "overwrite=True",
) -> Path:
    """Check that results can be written to ``path`` without losing data, before any work.

    Refuses a path that is, holds or lies inside the local file or directory ``source`` (the
    input table); an existing path unless ``overwrite`` and it is a results store that
    ``save_results`` wrote (or an empty directory); and a path whose directory cannot be
    written. ``flag`` names the overwrite option in messages (``--overwrite`` for the CLI).
    """
    path = Path(path)
    check_apart(path, source)
    if path.exists() or path.is_symlink():
        if not overwrite:
            raise FileExistsError(
                f"{path} exists; pass {flag} to replace it, or choose another path"
            )
        if not (is_results_store(path) or (path.is_dir() and not any(path.iterdir()))):
            raise FileExistsError(
                f"{path} holds data that is not a soak_dask results store, and {flag} replaces "
                "only a store written by save_results or 'soak run'; choose another path, or "
                f"move or delete {path} yourself"
            )
    _check_writable(path)
    return path


def check_apart(path: str | os.PathLike, source: Any, what: str = "results") -> None:
    """Refuse a ``path`` that is, holds or lies inside the local input table ``source``."""
    src = _local_path(source)
    if src is None:
        return
    out = Path(path).resolve()
    if out == src:
        relation = "is the input table"
    elif out.is_relative_to(src):
        relation = "is inside the input table's directory"
    elif src.is_relative_to(out):
        relation = "holds the input table"
    else:
        return
    raise ValueError(f"{path} {relation} ({source}); write the {what} outside it")


def is_results_store(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a results store that ``save_results`` wrote: a Zarr store (holding
    nothing but Zarr metadata and arrays) or NetCDF file whose root attributes carry
    ``soak_dask_results`` (or the title ``soak`` gave results before that mark existed)."""
    path = Path(path)
    if path.is_dir() and not all(_is_zarr_entry(entry) for entry in path.iterdir()):
        return False
    try:
        if path.is_dir():
            attrs = dict(zarr.open_group(str(path), mode="r").attrs)
        elif path.suffix == ".nc":
            with xr.open_dataset(path) as ds:
                attrs = dict(ds.attrs)
        else:
            return False
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return RESULTS_MARK in attrs or attrs.get("title") == RESULTS_TITLE


def open_results(path: str | os.PathLike, **kwargs: Any) -> xr.Dataset:
    """Open saved results (Zarr store or NetCDF file) fully into memory.

    Raises a ``FileNotFoundError`` for a missing path and a ``ValueError`` for one that is not
    a results store.

    Examples
    --------
    >>> ds = open_results("results.zarr")  # doctest: +SKIP
    """
    path = os.fspath(path)
    try:
        if path.rstrip("/").endswith(".nc"):
            with xr.open_dataset(path, **kwargs) as ds:
                ds = ds.load()
        else:
            with xr.open_zarr(path, **{"consolidated": False, **kwargs}) as ds:
                ds = ds.load()
    except (OSError, ValueError, KeyError) as err:
        if "://" not in path and not os.path.exists(path):
            raise FileNotFoundError(f"no results store at {path}") from err
        raise ValueError(
            f"{path} is not a soak results store (it cannot be read as Zarr or NetCDF: "
            f"{' '.join(str(err).split())}); give the path written by 'soak run --out' or "
            "save_results"
        ) from err
    missing = [d for d in RESULT_DIMS if d not in ds.dims]
    if missing:
        raise ValueError(
            f"{path} is not a soak results store: it lacks the dims {missing}; give the path "
            "written by 'soak run --out' or save_results"
        )
    ds.attrs.pop(RESULTS_MARK, None)  # the mark is the store's, not the results'
    return ds


def _is_zarr_entry(entry: Path) -> bool:
    """Zarr metadata, or an array or group directory (which holds its own metadata)."""
    if entry.is_dir():
        return any((entry / name).is_file() for name in ("zarr.json", ".zarray", ".zgroup"))
    return entry.name in ("zarr.json", ".zgroup", ".zattrs", ".zmetadata")


def _local_path(source: Any) -> Path | None:
    """The existing local file or directory a table ``source`` names (for a glob, the folder
    it starts from); None for URLs, names of in-memory data and paths that do not exist."""
    if not isinstance(source, str | os.PathLike):
        return None
    text = os.fspath(source).removeprefix("file://")
    if "://" in text:
        return None
    parts = Path(text).parts
    plain = next((i for i, part in enumerate(parts) if glob.has_magic(part)), len(parts))
    local = Path(*parts[:plain]) if plain else Path(".")
    return local.resolve() if local.exists() else None


def _check_writable(path: Path) -> None:
    """Refuse, before any work, a path whose directory cannot be written."""
    where = path if path.is_dir() else path.parent
    while not where.exists():
        where = where.parent
    if not where.is_dir():
        raise NotADirectoryError(f"cannot write {path}: {where} is a file, not a directory")
    try:
        with tempfile.TemporaryFile(dir=where):
            pass
        if path.is_file() and not os.access(path, os.W_OK):
            raise PermissionError(f"{path} is read-only")
    except OSError as err:
        raise PermissionError(
            f"cannot write {path}: {err.strerror or err} in {where}; choose another path, or "
            "make it writable"
        ) from err


def from_dataframe(scores: pd.DataFrame, **attrs: Any) -> xr.Dataset:
    """Build a results Dataset from a tidy frame of per-split scores.

    ``scores`` has columns ``learner, test_subset, fold, train_type`` and one column per
    measure, e.g. results computed elsewhere (the SOAK paper's, the R package's).

    Examples
    --------
    >>> df = pd.DataFrame({"learner": "glm", "test_subset": "A", "fold": [1, 2],
    ...                    "train_type": "same", "error": [10.0, 12.0]})
    >>> from_dataframe(df)["error"].sizes["fold"]
    2
    """
    missing = [c for c in RESULT_DIMS if c not in scores.columns]
    if missing:
        raise ValueError(f"scores lack the columns {missing}; need {list(RESULT_DIMS)}")
    frame = scores.assign(test_subset=scores["test_subset"].astype(str))
    ds = frame.set_index(list(RESULT_DIMS)).to_xarray()
    order = [t for t in TRAIN_TYPES if t in set(frame["train_type"])]
    ds = ds.reindex(train_type=order)
    measures = [v for v in ds.data_vars if v not in (*COUNTS, *TIMINGS)]
    ds.attrs.update(attrs)
    ds.attrs.setdefault("measures", measures)
    return ds
