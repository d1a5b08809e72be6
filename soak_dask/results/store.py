"""Gather score records into the results ``xarray.Dataset`` and read/write it, at a local
path or an fsspec URL (``s3://…``) alike."""

from __future__ import annotations

import glob
import json
import os
import posixpath
import tempfile
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path, PurePath, PurePosixPath
from typing import Any

import fsspec
import numpy as np
import pandas as pd
import xarray as xr
import zarr
from fsspec.implementations.local import LocalFileSystem

from ..schema import (
    COUNTS,
    DESIGN_ALIASES,
    DESIGN_DIMS,
    FIT_INFO,
    MEASURE_NAMES,
    RESULT_DIMS,
    TIMINGS,
    TRAIN_TYPES,
)

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
    coords: Mapping[str, Sequence],
    learners: Sequence[str],
    measures: Sequence[str],
    attrs: Mapping[str, Any],
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


@dataclass(frozen=True)
class Location:
    """A local path or fsspec URL (``s3://bucket/prefix``…), resolved once.

    Attributes
    ----------
    fs : fsspec.AbstractFileSystem
        Its file system, made with the caller's ``storage_options``.
    path : str
        The path on ``fs`` (absolute for a local path).
    shown : str
        As the caller wrote it, for messages: a local path as ``pathlib`` prints it, a URL as is.
    kind : str
        ``"file"`` or ``"directory"`` for an entry listed by ``entries``; otherwise ``""``.
    """

    fs: Any
    path: str
    shown: str
    kind: str = ""

    def __str__(self) -> str:
        return self.shown

    @property
    def local(self) -> bool:
        return isinstance(self.fs, LocalFileSystem)

    @property
    def url(self) -> str:
        """What xarray and zarr open (with ``storage_options``)."""
        return self.shown if self.local else self.fs.unstrip_protocol(self.path)

    @property
    def options(self) -> dict[str, Any]:
        """``storage_options=`` to open ``url`` with xarray or zarr (none for a local path)."""
        return {} if self.local else {"storage_options": dict(self.fs.storage_options)}

    @property
    def name(self) -> str:
        return posixpath.basename(self.path.rstrip("/"))

    def child(self, name: str) -> Location:
        shown = str(Path(self.shown, name)) if self.local else f"{self.shown.rstrip('/')}/{name}"
        return Location(self.fs, f"{self.path.rstrip('/')}/{name}", shown)

    def entries(self) -> list[Location]:
        """What a directory holds, with their kinds, from one fresh listing (another process
        may have written there since a listing was cached)."""
        self.fs.invalidate_cache(self.path)
        return [
            replace(self.child(posixpath.basename(info["name"].rstrip("/"))), kind=info["type"])
            for info in self.fs.ls(self.path, detail=True)
        ]


def locate(path: str | os.PathLike | Location, storage_options: dict | None = None) -> Location:
    """The ``Location`` of a local path or fsspec URL (``storage_options`` go to its file
    system, as in ``load_table``); a ``Location`` is returned as is."""
    if isinstance(path, Location):
        return path
    text = os.fspath(path)
    fs, inner = fsspec.core.url_to_fs(text, **(storage_options or {}))
    if isinstance(fs, LocalFileSystem):
        text = str(Path(text.removeprefix("file://")))
    return Location(fs, inner, text)


def save_results(
    ds: xr.Dataset,
    path: str | os.PathLike,
    *,
    overwrite: bool = False,
    storage_options: dict | None = None,
) -> Path | str:
    """Write results to a Zarr store, or a NetCDF file when ``path`` ends in ``.nc``.

    ``path`` is local or an fsspec URL (``s3://bucket/results.zarr``), with ``storage_options``
    for its file system as in ``load_table``. The store is marked as results (root attribute
    ``soak_dask_results``), so that ``overwrite=True`` replaces only such a store: see
    ``check_output``, which also refuses a path that is, holds or lies inside the input table
    (``ds.attrs["source"]``). Returns the path written: a ``Path``, or the URL as given.
    """
    where = check_output(
        path, overwrite=overwrite, source=ds.attrs.get("source"), storage_options=storage_options
    )
    ds = ds.assign_attrs({RESULTS_MARK: RESULTS_FORMAT})
    if where.name.endswith(".nc"):
        # One whole write: on an object store, a single put, so the file appears whole or not.
        where.fs.pipe_file(where.path, bytes(ds.to_netcdf()))
    else:
        # Zarr v3 has no consolidated metadata in its spec; plain metadata reads everywhere.
        # mode="w" empties the store first: check_output made sure it holds only our results.
        ds.to_zarr(where.url, mode="w", consolidated=False, **where.options)
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


def check_apart(
    path: str | os.PathLike | Location,
    source: Any,
    what: str = "results",
    *,
    storage_options: dict | None = None,
    source_name: str = "input table",
) -> None:
    """Refuse a ``path`` that is, holds or lies inside the input table ``source``: a local
    path, or a URL on the same kind of file system (names of in-memory data are ignored).
    ``what`` and ``source_name`` are how the message calls the two."""
    src = _source_key(source)
    if src is None:
        return
    out = _key(locate(path, storage_options))
    if src[0] not in out[0]:
        return
    if out[1] == src[1]:
        relation = f"is the {source_name}"
    elif out[1].is_relative_to(src[1]):
        relation = f"is inside the {source_name}'s directory"
    elif src[1].is_relative_to(out[1]):
        relation = f"holds the {source_name}"
    else:
        return
    raise ValueError(f"{path} {relation} ({source}); write the {what} outside it")


def _check_not_in_store(where: Location) -> None:
    """Refuse a local path inside a results store (it would no longer read as one)."""
    if not where.local:
        return
    for parent in Path(where.shown).resolve().parents:
        if parent.is_dir() and is_results_store(parent):
            raise ValueError(
                f"{where} is inside the results store {parent}; write it outside that store"
            )


def overlaps(first: str | os.PathLike | Location, second: str | os.PathLike | Location) -> bool:
    """Whether two paths or URLs (on the same kind of file system) are one, or one lies
    inside the other: ``--out`` and ``--checkpoint`` must not."""
    (fs1, a), (fs2, b) = _key(locate(first)), _key(locate(second))
    return bool(set(fs1) & set(fs2)) and (a.is_relative_to(b) or b.is_relative_to(a))


def is_results_store(
    path: str | os.PathLike | Location, *, storage_options: dict | None = None
) -> bool:
    """Whether ``path`` is a results store that ``save_results`` wrote: a Zarr store (holding
    nothing but Zarr metadata and arrays) or NetCDF file whose root attributes carry
    ``soak_dask_results`` (or the title ``soak`` gave results before that mark existed)."""
    where = locate(path, storage_options)
    is_dir = where.fs.isdir(where.path)
    if is_dir and not all(_is_zarr_entry(entry) for entry in where.entries()):
        return False
    try:
        if is_dir:
            attrs = dict(zarr.open_group(where.url, mode="r", **where.options).attrs)
        elif where.name.endswith(".nc"):
            with xr.open_dataset(where.url, **where.options) as ds:
                attrs = dict(ds.attrs)
        else:
            return False
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return RESULTS_MARK in attrs or attrs.get("title") == RESULTS_TITLE


def open_results(
    path: str | os.PathLike, *, storage_options: dict | None = None, **kwargs: Any
) -> xr.Dataset:
    """Open saved results (Zarr store or NetCDF file, local or an fsspec URL opened with
    ``storage_options``) fully into memory; ``kwargs`` go to xarray.

    Raises a ``FileNotFoundError`` for a missing path and a ``ValueError`` for one that is not
    a results store.

    Examples
    --------
    >>> ds = open_results("results.zarr")  # doctest: +SKIP
    >>> ds = open_results("s3://bucket/r.zarr", storage_options={"anon": True})  # doctest: +SKIP
    """
    where = locate(path, storage_options)
    try:
        ds = _load(where, kwargs)
    except (OSError, ValueError, KeyError) as err:
        if not where.fs.exists(where.path):
            raise FileNotFoundError(
                f"no results store at {where}: it does not exist; run 'soak run' or "
                "'soak evaluate' with --out there first"
            ) from err
        raise ValueError(
            f"{where} is not a soak results store (it cannot be read as Zarr or NetCDF: "
            f"{' '.join(str(err).split())}); give the path written by 'soak run --out' or "
            "save_results"
        ) from err
    kind = result_kind(ds)
    if kind not in DESIGN_DIMS:
        raise ValueError(
            f"{where} holds results of the unknown kind design={kind!r}; this soak_dask reads "
            f"{list(DESIGN_DIMS)} (a newer version may have written it)"
        )
    missing = [d for d in DESIGN_DIMS[kind] if d not in ds.dims]
    if missing:
        raise ValueError(
            f"{where} is not a soak results store: it lacks the dims {missing} of a {kind} "
            "result; give the path written by 'soak run --out' or save_results"
        )
    ds.attrs.pop(RESULTS_MARK, None)  # the mark is the store's, not the results'
    return ds


#: ``open_results`` under the name a user may guess first, beside ``save_results``.
load_results = open_results


def result_kind(ds: xr.Dataset) -> str:
    """The kind of a result: its ``attrs["design"]`` (``soak``, ``evaluate``, ``transfer``,
    ``search_subsets``, ``split_sensitivity``, ``compare_sampling``); ``soak`` for results
    saved before SOAK's had the attribute."""
    kind = str(ds.attrs.get("design", "soak"))
    return DESIGN_ALIASES.get(kind, kind)


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


def _key(where: Location) -> tuple[tuple[str, ...], PurePath]:
    """Where a location is, to compare with a source: its file system's protocols and its
    path (local paths with links resolved)."""
    fs_protocols = where.fs.protocol
    protocols = (fs_protocols,) if isinstance(fs_protocols, str) else tuple(fs_protocols)
    if where.local:
        return protocols, Path(where.shown).resolve()
    return protocols, PurePosixPath(where.path)


def _source_key(source: Any) -> tuple[str, PurePath] | None:
    """The protocol and path of the file or directory a table ``source`` names (for a glob,
    the folder it starts from); None for names of in-memory data and local paths that do
    not exist."""
    if not isinstance(source, str | os.PathLike):
        return None
    text = os.fspath(source).removeprefix("file://")
    protocol, rest = fsspec.core.split_protocol(text)
    parts = PurePosixPath(rest).parts if protocol else Path(text).parts
    plain = next((i for i, part in enumerate(parts) if glob.has_magic(part)), len(parts))
    if protocol:
        return protocol, PurePosixPath(*parts[:plain])
    local = Path(*parts[:plain]) if plain else Path(".")
    return ("file", local.resolve()) if local.exists() else None


def check_writable(where: Location) -> None:
    """Refuse, before any work, a path whose directory cannot be written."""
    if not where.local:
        _check_remote_writable(where)
        return
    path = Path(where.shown)
    place = path if path.is_dir() else path.parent
    while not place.exists():
        place = place.parent
    if not place.is_dir():
        raise NotADirectoryError(f"cannot write {path}: {place} is a file, not a directory")
    try:
        with tempfile.TemporaryFile(dir=place):
            pass
        if path.is_file() and not os.access(path, os.W_OK):
            raise PermissionError(f"{path} is read-only")
    except OSError as err:
        raise PermissionError(
            f"cannot write {path}: {err.strerror or err} in {place}; choose another path, or "
            "make it writable"
        ) from err


def _check_remote_writable(where: Location) -> None:
    """Write and delete an empty object of our own where the results go (inside the store,
    or beside the NetCDF file): an object store's permissions show only when used."""
    nc = where.name.endswith(".nc")
    folder = posixpath.dirname(where.path) if nc else where.path.rstrip("/")
    probe = f"{folder}/.soak_dask-write-check-{uuid.uuid4().hex}"
    try:
        where.fs.pipe_file(probe, b"")
        where.fs.rm_file(probe)
    except OSError as err:
        raise PermissionError(
            f"cannot write {where}: {err}; choose another path, or check the credentials and "
            "storage_options"
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
