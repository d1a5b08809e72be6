"""``soak report STORE --out DIR`` for every kind of result: the registered kind of the
result (``attrs["design"]``, ``soak_dask.results.registry.kind_of``) writes one HTML page,
``report.html``, with its tables and figures beside it into ``DIR``, and says what to print, as
the command that made the result prints it. Every page is ``soak_dask.results.html.html_page``:
one skeleton for every kind.

``render_path`` is ``soak report``'s: it also takes the spatial outputs, which are not results
stores: an AOA Zarr store (``soak_dask.open_aoa``) or ``soak aoa``'s output directory
(``soak_dask.spatial.aoa_page``), and ``soak knndm``'s output directory
(``soak_dask.spatial.knndm_page``).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import xarray as xr

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
    path: str | os.PathLike, out: str | os.PathLike, overwrite: bool = False
) -> Rendered:
    """Write the report of what ``path`` holds into the directory ``out``, as ``render``: a
    results store of any kind (``soak_dask.open_results``: or a command's directory holding
    one), an AOA Zarr store or ``soak aoa``'s output directory, or ``soak knndm``'s.

    Examples
    --------
    >>> text, page = render_path("aoa_out", "aoa_report")  # doctest: +SKIP
    """
    from ..results.store import open_results
    from ..spatial.aoa_io import is_aoa_output
    from . import aoa_cli, knndm_cli

    writer = _writer(path)
    if writer == aoa_cli.WRITER:
        return _aoa_dir(Path(path), out, overwrite)
    if writer == knndm_cli.GENERATOR:
        return _knndm(Path(path), out, overwrite)
    if is_aoa_output(path):
        return _aoa(Path(path), out, overwrite)
    return render(open_results(path), out, overwrite)


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


def _aoa_dir(path: Path, out: str | os.PathLike, overwrite: bool) -> Rendered:
    """``soak aoa``'s directory: its Zarr store (a GeoTIFF holds the layers alone)."""
    if not (path / "aoa.zarr").is_dir():
        raise ValueError(
            f"{path} holds no aoa.zarr: a GeoTIFF (soak aoa --format tif) keeps the layers "
            f"alone, not the training points nor the error profile; its page is "
            f"{path / 'report.html'}, or run soak aoa again with --format zarr"
        )
    return _aoa(path / "aoa.zarr", out, overwrite, path)


def _aoa(
    store: Path, out: str | os.PathLike, overwrite: bool, source: Path | None = None
) -> Rendered:
    """The page of the AOA store ``store`` (``soak_dask.spatial.aoa_page``); ``out`` lies
    apart from ``source`` (default: the store), the directory it was given in."""
    from ..results.html import prepare_report_dir
    from ..results.pages import write_page
    from ..spatial.aoa_io import open_aoa
    from ..spatial.aoa_page import aoa_counts, aoa_page, aoa_text
    from ..spatial.aoa_record import recorded_profile

    if not store.is_dir():
        raise ValueError(
            f"{store} is an AOA GeoTIFF: it holds the layers alone; soak report draws an AOA "
            "Zarr store (soak aoa --format zarr, or write_aoa to a path not ending in .tif)"
        )
    od = prepare_report_dir(out, overwrite, "--overwrite", source or store)
    ds = open_aoa(store)
    profile, counts = recorded_profile(ds), aoa_counts(ds)
    page = write_page(aoa_page(ds, profile=profile, counts=counts), od)
    return aoa_text(ds, counts[1] / counts[0] if counts[0] else float("nan"), profile), page


def _knndm(path: Path, out: str | os.PathLike, overwrite: bool) -> Rendered:
    """The page of ``soak knndm``'s directory (``soak_dask.spatial.knndm_page``)."""
    from ..results.html import prepare_report_dir
    from ..results.pages import write_page
    from ..spatial.knndm_page import knndm_page, read_knndm_dir
    from .knndm_cli import FOLDS, summary_text

    od = prepare_report_dir(out, overwrite, "--overwrite", path)
    info, distances, candidates = read_knndm_dir(path)
    page = write_page(knndm_page(info, distances, candidates), od)
    return summary_text(info, path / FOLDS), page


def report_command(args: argparse.Namespace) -> None:
    """``soak report``: render a results store of any kind, an AOA store or a spatial
    command's directory (`render_path`) into ``--out``; print what the command that made it
    printed, then the main file's path."""
    from ..io.locations import check_apart

    check_apart(args.out, args.results, "report", source_name="results store")
    text, page = render_path(args.results, args.out, args.overwrite)
    print(text)
    print(page)
