"""``soak report STORE --out DIR`` for every kind of result: the registered kind of the
result (``attrs["design"]``, ``soak_dask.results.registry.kind_of``) writes one HTML page,
``report.html``, with its tables and figures beside it into ``DIR``, and says what to print, as
the command that made the result prints it. Every page is ``soak_dask.results.html.html_page``:
one skeleton for every kind.

``render_path`` is ``soak report``'s: it also takes the spatial outputs, which are not results
stores: an AOA Zarr store (``soak_dask.open_aoa``) or ``soak aoa``'s output directory
(``soak_dask.spatial.aoa_page``), and ``soak knndm``'s output directory
(``soak_dask.spatial.knndm_page``); and several of these at once, drawn on one page
(``soak report eval.zarr aoa knndm --out farm_report``: ``soak_dask.results.report_stores``).
"""

from __future__ import annotations

import argparse
import html
import json
import os
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import xarray as xr

if TYPE_CHECKING:
    from ..results.html import Claims, PageParts
    from ..results.pages import Page

# soak evaluate prints what soak report of its store prints (soak_dask.app.run_cli).

#: What a renderer returns: the text to print and the main file written.
Rendered = tuple[str, Path]


def render(ds: xr.Dataset, out: str | os.PathLike, overwrite: bool = False) -> Rendered:
    """Write the report of ``ds`` (any kind) into the directory ``out``: ``report.html`` and
    its tables and figures; what ``soak report`` prints, and the page's path.

    ``out`` is new, empty or an earlier report (replaced with ``overwrite``), never the input
    table. Raises a ``ValueError`` for a kind of result that is not registered
    (``soak_dask.results.registry.kind_of``).

    Examples
    --------
    >>> text, page = render(sd.open_results("sens.zarr"), "sens_report")  # doctest: +SKIP
    """
    from .. import result_kinds  # noqa: F401  (registers the built-in kinds)
    from ..results.registry import kind_of

    kind = kind_of(ds)
    page = kind.report(ds, out, overwrite)
    return kind.text(ds), page


def render_path(
    path: str | os.PathLike | Sequence[str | os.PathLike],
    out: str | os.PathLike,
    overwrite: bool = False,
) -> Rendered:
    """Write the report of what ``path`` holds into the directory ``out``, as ``render``: a
    results store of any kind (``soak_dask.open_results``: or a command's directory holding
    one), an AOA Zarr store or ``soak aoa``'s output directory, or ``soak knndm``'s.

    Given several paths (a list), one page of them all (``soak_dask.results.report_stores``):
    a section per output, each SOAK or ``evaluate`` results, an AOA or kNNDM's folds, labelled
    with its path; the text printed is each output's, under its path (a list of one path is
    that output's own page). Refused before anything is written: a path that is not one of
    these (named), one output given twice.

    Examples
    --------
    >>> text, page = render_path("aoa_out", "aoa_report")  # doctest: +SKIP
    >>> text, page = render_path(["eval.zarr", "aoa", "knndm"], "farm_report")  # doctest: +SKIP
    """
    from ..results.html import prepare_report_dir
    from ..results.pages import write_page
    from ..results.store import open_results

    if not isinstance(path, str | os.PathLike):
        paths = [Path(p) for p in path]
        if len(paths) != 1:
            return _render_many(paths, out, overwrite)
        path = paths[0]  # one output: its own page
    kind, store = _located(Path(path))
    if kind == _RESULTS:
        return render(open_results(path), out, overwrite)
    od = prepare_report_dir(out, overwrite, "--overwrite", path)  # before the store is read
    text, page = _drawn(kind, store)
    return text, write_page(page, od)


# What _located finds: a results store, an AOA store, soak knndm's directory.
_RESULTS, _AOA, _KNNDM = "results", "AOA", "kNNDM"
#: The kinds of result whose pages a page of several outputs holds (their parts:
#: ``soak_dask.results.report.report_parts``).
COMBINED_KINDS = ("soak", "evaluate")


def _located(path: Path) -> tuple[str, Path]:
    """What ``path`` is (``_RESULTS``, ``_AOA``, ``_KNNDM``) and the store or directory to
    read: ``soak aoa``'s directory is its Zarr store (a GeoTIFF holds the layers alone)."""
    from ..spatial.aoa_io import is_aoa_output
    from ..spatial.knndm_out import GENERATOR
    from . import aoa_cli

    writer = _writer(path)
    if writer == GENERATOR:
        return _KNNDM, path
    if writer == aoa_cli.WRITER:
        if not (path / "aoa.zarr").is_dir():
            raise ValueError(
                f"{path} holds no aoa.zarr: a GeoTIFF (soak aoa --format tif) keeps the layers "
                f"alone, not the training points nor the error profile; its page is "
                f"{path / 'report.html'}, or run soak aoa again with --format zarr"
            )
        return _AOA, path / "aoa.zarr"
    if is_aoa_output(path):
        if not path.is_dir():
            raise ValueError(
                f"{path} is an AOA GeoTIFF: it holds the layers alone; soak report draws an "
                "AOA Zarr store (soak aoa --format zarr, or write_aoa to a path not ending in "
                ".tif)"
            )
        return _AOA, path
    return _RESULTS, path


def _drawn(kind: str, store: Path) -> tuple[str, Page]:
    """What to print of the AOA store or kNNDM directory ``store``, and its page
    (``soak_dask.spatial.aoa_page``, ``knndm_page``)."""
    if kind == _KNNDM:
        from ..spatial.knndm_out import FOLDS
        from ..spatial.knndm_page import knndm_page, read_knndm_dir
        from .knndm_cli import summary_text

        info, distances, candidates = read_knndm_dir(store)
        page = knndm_page(info, distances, candidates)
        return summary_text(info, store / FOLDS), page
    from ..spatial.aoa_io import open_aoa
    from ..spatial.aoa_page import aoa_counts, aoa_page, aoa_text
    from ..spatial.aoa_record import recorded_profile

    ds = open_aoa(store)
    profile, counts = recorded_profile(ds), aoa_counts(ds)
    share = counts[1] / counts[0] if counts[0] else float("nan")
    page = aoa_page(ds, profile=profile, counts=counts)
    return aoa_text(ds, share, profile), page


def _render_many(paths: list[Path], out: str | os.PathLike, overwrite: bool) -> Rendered:
    """One page of the outputs ``paths`` into ``out`` (``render_path`` of a list)."""
    from ..io.locations import check_apart
    from ..results.html import prepare_report_dir
    from ..results.report_stores import Prefixed, StoreSection, section_keys, write_stores_page

    if not paths:
        raise ValueError("no output to report: give one or more paths")
    found = [_combinable(path) for path in paths]  # each refused by its path before any work
    _once(paths, [store for _, store, _ in found])
    for path in paths:
        check_apart(out, path, "report", source_name="output")
    od = prepare_report_dir(out, overwrite, "--overwrite", None)
    sections, texts = [], []
    keys = section_keys(map(str, paths))
    for key, path, (kind, store, ds) in zip(keys, paths, found, strict=True):
        text, parts = _results_drawn(ds) if ds is not None else _spatial_drawn(kind, store)
        section = StoreSection(key, str(path), parts(Prefixed(od, f"{key}_")))
        sections.append(section)
        texts.append(f"--- {html.unescape(section.parts.title)} ({path}) ---\n{text}")
    return "\n\n".join(texts), write_stores_page(od, sections)


def _combinable(path: Path) -> tuple[str, Path, xr.Dataset | None]:
    """``_located`` of ``path``, with its results opened: refused, by its path, where it is
    no output soak_dask wrote or a kind of result whose page stands alone."""
    from .. import result_kinds  # noqa: F401  (registers the built-in kinds)
    from ..results.registry import result_kind
    from ..results.store import open_results

    kind, store = _located(path)
    if kind != _RESULTS:
        return kind, store, None
    try:
        ds = open_results(path)
    except (ValueError, OSError) as error:
        raise type(error)(
            f"{path} is not an output soak_dask wrote that soak report can draw (a results "
            f"store, an AOA store, the directory of soak aoa or of soak knndm): {error}"
        ) from error
    if result_kind(ds) not in COMBINED_KINDS:
        raise ValueError(
            f"{path} holds results of kind {result_kind(ds)!r}, whose page stands alone: one "
            f"page of several outputs takes results of {' or '.join(COMBINED_KINDS)}, AOA "
            f"stores and kNNDM folds; report it on its own (soak report {path} --out DIR)"
        )
    return kind, store, ds


def _spatial_drawn(kind: str, store: Path) -> tuple[str, Callable[[Claims], PageParts]]:
    """``_drawn``, with its page's parts writer (``results.pages.page_parts``)."""
    from ..results.pages import page_parts

    text, page = _drawn(kind, store)
    return text, partial(page_parts, page)


def _results_drawn(ds: xr.Dataset) -> tuple[str, Callable[[Claims], PageParts]]:
    """What ``soak report`` prints of the results ``ds``, and their page's parts writer."""
    from ..results.registry import kind_of
    from ..results.report import report_parts

    return kind_of(ds).text(ds), partial(report_parts, ds)


def _once(paths: list[Path], stores: list[Path]) -> None:
    """Refuse one output given twice (two paths of one store): the page could not tell its
    two sections apart."""
    seen: dict[Path, Path] = {}
    for path, store in zip(paths, stores, strict=True):
        key = store.resolve()
        if key in seen:
            raise ValueError(
                f"{seen[key]} and {path} are the same output ({store}): give it once; two "
                "outputs of one kind are two sections, each labelled with its path"
            )
        seen[key] = path


def _writer(path: str | os.PathLike) -> str | None:
    """The command that wrote the output directory ``path`` (its manifest's), or None."""
    from ..io.outdir import MANIFEST

    manifest = Path(path) / MANIFEST
    if not manifest.is_file():
        return None
    try:
        return json.loads(manifest.read_text(encoding="utf-8")).get("writer")
    except (OSError, ValueError, AttributeError):
        return None


def report_command(args: argparse.Namespace) -> None:
    """``soak report``: render a results store of any kind, an AOA store or a spatial
    command's directory (`render_path`) into ``--out``, or several on one page; print what
    the command that made each printed, then the main file's path."""
    from ..io.locations import check_apart

    for path in args.results:
        check_apart(args.out, path, "report", source_name="results store")
    text, page = render_path(args.results, args.out, args.overwrite)
    print(text)
    print(page)
