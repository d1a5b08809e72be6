"""Read and write the results ``xarray.Dataset``, at a local path or an fsspec URL
(``s3://…``) alike.

The records are assembled into the Dataset by ``soak_dask.run.assemble`` and locations are
resolved and checked by ``soak_dask.io.locations``; their names are re-exported here, where
users and earlier code import them (``from soak_dask.results.store import build_dataset``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd
import xarray as xr
import zarr

from ..io.locations import Location, check_apart, check_writable, locate
from ..io.outdir import MANIFEST as OUTPUT_MANIFEST
from ..io.stores import (
    CHECKSUMS,
    MARK,
    StoreError,
    enclosing_store,
    has_mark,
    netcdf_bytes,
    verify_netcdf,
    verify_zarr,
    write_bytes,
    write_zarr,
)
from ..run.assemble import RESULTS_TITLE
from ..schema import COUNTS, DESIGN_DIMS, RESULT_DIMS, TIMINGS, TRAIN_TYPES
from .registry import kind_name, registered, result_kind

#: Root attribute marking a store written by ``save_results``; its value, the format version:
#: 2 since stores are written whole and checksummed (``soak_dask.io.stores``).
RESULTS_MARK = "soak_dask_results"
RESULTS_FORMAT = 2
WHAT = "results store"
_REMEDY = "write it again with save_results, 'soak run --out' or 'soak evaluate --out'"


def save_results(
    ds: xr.Dataset,
    path: str | os.PathLike,
    *,
    overwrite: bool = False,
    storage_options: dict | None = None,
    flag: str = "overwrite=True",
) -> Path | str:
    """Write results to a Zarr store, or a NetCDF file when ``path`` ends in ``.nc``.

    ``path`` is local or an fsspec URL (``s3://bucket/results.zarr``), with ``storage_options``
    for its file system as in ``load_table``. The store is marked as results (root attribute
    ``soak_dask_results``), so that ``overwrite=True`` replaces only such a store: see
    ``check_output``, which also refuses a path that is, holds or lies inside the input table
    (``ds.attrs["source"]``). ``flag`` names the overwrite option in its messages (the CLI's
    ``--overwrite``). Returns the path written: a ``Path``, or the URL as given.
    """
    where = check_output(
        path,
        overwrite=overwrite,
        source=ds.attrs.get("source"),
        flag=flag,
        storage_options=storage_options,
    )
    ds = ds.assign_attrs({RESULTS_MARK: RESULTS_FORMAT})
    if where.name.endswith(".nc"):
        write_bytes(where, netcdf_bytes(ds), WHAT)
    else:
        write_zarr(ds, where, WHAT)
    return Path(where.shown) if where.local else where.shown


def check_output(
    path: str | os.PathLike | Location,
    *,
    overwrite: bool,
    source: Any = None,
    flag: str = "overwrite=True",
    storage_options: dict | None = None,
) -> Location:
    """Check that results can be written to ``path`` without losing data, before any work.

    Refuses a path that is, holds or lies inside the file or directory ``source`` (the input
    table); an existing path unless ``overwrite`` and it is a results store that
    ``save_results`` wrote (or an empty directory); and a path whose directory cannot be
    written. ``flag`` names the overwrite option in messages (``--overwrite`` for the CLI).
    ``path`` is local or an fsspec URL, opened with ``storage_options``.
    """
    where = locate(path, storage_options)
    check_apart(where, source)
    _check_not_in_store(where)
    where.fs.invalidate_cache(where.path)  # a listing cached earlier may be stale
    if where.fs.lexists(where.path):
        if not overwrite:
            raise FileExistsError(
                f"{where} exists; pass {flag} to replace it, or choose another path"
            )
        empty = where.fs.isdir(where.path) and not where.entries()
        if not (is_results_store(where) or empty):
            raise FileExistsError(
                f"{where} holds data that is not a soak_dask results store, and {flag} replaces "
                "only a store written by save_results or 'soak run'; choose another path, or "
                f"move or delete {where} yourself"
            )
    check_writable(where)
    return where


def _check_not_in_store(where: Location) -> None:
    """Refuse a local path inside a store soak_dask wrote (it would no longer read as one)."""
    if not where.local:
        return
    if store := enclosing_store(Path(where.shown), is_results_store):
        kind = "results store" if is_results_store(store) else "store"
        raise ValueError(f"{where} is inside the {kind} {store}; write it outside that store")


def is_results_store(
    path: str | os.PathLike | Location, *, storage_options: dict | None = None
) -> bool:
    """Whether ``path`` is a results store that ``save_results`` wrote: a Zarr store (holding
    nothing but Zarr metadata and arrays) or NetCDF file whose root
    attributes carry ``soak_dask_results`` (or the title ``soak`` gave results before that
    mark existed). Whether it is complete is ``open_results``'s to check."""
    where = locate(path, storage_options)
    is_dir = where.fs.isdir(where.path)
    if is_dir and not all(_is_zarr_entry(entry) for entry in where.entries()):
        return False
    attrs = _root_attrs(where, is_dir)
    return RESULTS_MARK in attrs or attrs.get("title") == RESULTS_TITLE


def _root_attrs(where: Location, is_dir: bool) -> dict[str, Any]:
    """The root attributes of the Zarr store or NetCDF file at ``where``; none if it is
    neither or cannot be read."""
    try:
        if is_dir:
            return dict(zarr.open_group(where.url, mode="r", **where.options).attrs)
        if where.name.endswith(".nc"):
            with xr.open_dataset(where.url, **where.options) as ds:
                return dict(ds.attrs)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return {}


def open_results(
    path: str | os.PathLike,
    *,
    storage_options: dict | None = None,
    allow_unverified: bool = False,
    **kwargs: Any,
) -> xr.Dataset:
    """Open saved results (Zarr store or NetCDF file, local or an fsspec URL opened with
    ``storage_options``) fully into memory; ``kwargs`` go to xarray.

    The store is first checked to be whole and as written (``soak_dask.io.stores``): one
    whose write did not finish, or with a file missing, added or altered since, is refused
    with a ``StoreError`` (a ``ValueError``) naming it and what is wrong. A store written by
    soak_dask before stores were checksummed cannot be checked; it is refused too, unless
    ``allow_unverified=True``. Raises a ``FileNotFoundError`` for a missing path and a
    ``ValueError`` for one that is not a results store, or holds a kind of result this
    soak_dask does not know: a built-in one or one registered by
    ``soak_dask.results.registry.register_kind``, whose dims the store must have.

    ``path`` may also be the output directory of a command that saves its result as a store
    beside its other files (``soak split-sensitivity``, ``soak compare-sampling``): the one
    results store it holds is opened; a directory holding several (``soak transfer
    --search``) or none is refused with a message naming the paths to give.

    Examples
    --------
    >>> ds = open_results("results.zarr")  # doctest: +SKIP
    >>> ds = open_results("s3://bucket/r.zarr", storage_options={"anon": True})  # doctest: +SKIP
    """
    where = locate(path, storage_options)
    if not where.fs.exists(where.path):
        raise FileNotFoundError(
            f"no results store at {where}: it does not exist; run 'soak run' or "
            "'soak evaluate' with --out there first"
        )
    where = _store_in(where)
    _verify(where, allow_unverified)
    try:
        ds = _load(where, kwargs)
    except (OSError, ValueError, KeyError, RuntimeError) as err:  # Zstd's is a RuntimeError
        raise ValueError(
            f"{where} is not a soak results store, or is damaged (it cannot be read as Zarr or "
            f"NetCDF: "
            f"{' '.join(str(err).split())}); give the path written by 'soak run --out' or "
            "save_results"
        ) from err
    kind = result_kind(ds)
    known = {**DESIGN_DIMS, **{name: k.dims for name, k in registered().items()}}
    if kind not in known:
        raise ValueError(
            f"{where} holds results of the unknown kind design={kind!r}; this soak_dask reads "
            f"{list(known)} (a newer version may have written it, or a kind registered by "
            "soak_dask.results.registry.register_kind: register it first)"
        )
    missing = [d for d in known[kind] if d not in ds.dims]
    if missing:
        raise ValueError(
            f"{where} is not a soak results store: it lacks the dims {missing} of a {kind} "
            "result; give the path written by 'soak run --out' or save_results"
        )
    for mark in (RESULTS_MARK, MARK, CHECKSUMS):  # the store's, not the results'
        ds.attrs.pop(mark, None)
    return ds


def _store_in(where: Location) -> Location:
    """``where``, or the one results store in it when it is a command's output directory
    (it holds soak_dask's manifest, ``soak_dask.io.outdir``); refuses one holding several or
    none, naming what to give instead."""
    if not where.fs.isfile(where.child(OUTPUT_MANIFEST).path):
        return where
    stores = [e for e in where.entries() if e.kind == "directory" or e.name.endswith(".nc")]
    stores = sorted((e for e in stores if is_results_store(e)), key=lambda e: e.name)
    if len(stores) == 1:
        return stores[0]
    if not stores:
        raise ValueError(
            f"{where} is an output directory of soak_dask that holds no results store (it was "
            "written before its command saved one, or by a command that saves none); run the "
            "command again, or give the path of a results store"
        )
    kinds = [kind_name(_root_attrs(e, e.kind == "directory")) for e in stores]
    shown = "; ".join(f"{e.shown} ({kind})" for e, kind in zip(stores, kinds, strict=True))
    raise ValueError(
        f"{where} is an output directory holding {len(stores)} results stores; give the path "
        f"of one: {shown}"
    )


def _verify(where: Location, allow_unverified: bool) -> None:
    """Refuse a results store that is incomplete or altered (``soak_dask.io.stores``), or,
    unless ``allow_unverified``, one written before stores were checksummed."""
    netcdf = where.name.endswith(".nc")
    attrs = _root_attrs(where, not netcdf)
    marked = CHECKSUMS in attrs if netcdf else has_mark(where)
    # A store of this format without its mark: the write did not finish.
    if marked or attrs.get(RESULTS_MARK, 1) != 1:
        (verify_netcdf if netcdf else verify_zarr)(where, WHAT, _REMEDY)
        return
    if (RESULTS_MARK in attrs or attrs.get("title") == RESULTS_TITLE) and not allow_unverified:
        raise StoreError(
            f"the {WHAT} {where} was written by an older soak_dask, before stores were "
            "checksummed, so whether it is complete cannot be checked; if you trust it, open "
            "it with open_results(path, allow_unverified=True) and save it again with "
            "save_results, or run it again"
        )


#: ``open_results`` under the name a user may guess first, beside ``save_results``.
load_results = open_results


def _load(where: Location, kwargs: dict[str, Any]) -> xr.Dataset:
    """The Zarr store or NetCDF file at ``where``, loaded."""
    if where.name.endswith(".nc"):
        with xr.open_dataset(where.url, **where.options, **kwargs) as ds:
            return ds.load()
    with xr.open_zarr(where.url, **{"consolidated": False, **where.options, **kwargs}) as ds:
        return ds.load()


def _is_zarr_entry(entry: Location) -> bool:
    """Zarr metadata, or an array or group directory (which holds its own metadata)."""
    if entry.kind == "directory":
        return any(
            entry.fs.isfile(entry.child(name).path) for name in ("zarr.json", ".zarray", ".zgroup")
        )
    return entry.name in ("zarr.json", ".zgroup", ".zattrs", ".zmetadata")


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
