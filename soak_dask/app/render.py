"""``soak report STORE --out DIR`` for every kind of result: the renderer of each kind
(``attrs["design"]``, ``soak_dask.results.store.result_kind``) writes one HTML page,
``report.html``, with its tables and figures beside it into ``DIR``, and says what to print, as
the command that made the result prints it.

- ``soak``, ``evaluate``: ``soak_dask.results.report.write_report``;
- ``transfer``: ``soak_dask.pooling.report.write_transfer_report``;
- ``search_subsets``, ``split_sensitivity``, ``compare_sampling``: their ``Page``
  (``soak_dask.app.search_page``, ``soak_dask.diagnose.sensitivity_report``,
  ``soak_dask.diagnose.sampling_report``) written by ``soak_dask.results.pages.write_page``.

Every page is ``soak_dask.results.html.html_page``: one skeleton for every kind.

``render_path`` is ``soak report``'s: it also takes the spatial outputs, which are not results
stores: an AOA Zarr store (``soak_dask.open_aoa``) or ``soak aoa``'s output directory
(``soak_dask.spatial.aoa_page``), and ``soak knndm``'s output directory
(``soak_dask.spatial.knndm_page``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import xarray as xr

#: What a renderer returns: the text to print and the main file written.
Rendered = tuple[str, Path]


def render(ds: xr.Dataset, out: str | os.PathLike, overwrite: bool = False) -> Rendered:
    """Write the report of ``ds`` (any kind) into the directory ``out``: ``report.html`` and
    its tables and figures; what ``soak report`` prints, and the page's path.

    ``out`` is new, empty or an earlier report (replaced with ``overwrite``), never the input
    table. Raises a ``ValueError`` for a kind of result that has no report.

    Examples
    --------
    >>> text, page = render(sd.open_results("sens.zarr"), "sens_report")  # doctest: +SKIP
    """
    from ..results.store import result_kind

    kind = result_kind(ds)
    if kind not in RENDERERS:
        raise ValueError(f"results of kind {kind!r} have no report; kinds: {list(RENDERERS)}")
    return RENDERERS[kind](ds, out, overwrite)


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


def evaluation_printout(ds: xr.Dataset) -> str:
    """What ``soak evaluate`` (and ``soak report`` of its store) prints: mean ± SD and the test
    split's interval, then the learners compared with the design's recommended test."""
    from ..results.comparisons import comparison_text
    from ..results.text import evaluation_text

    compared = comparison_text(ds)
    return evaluation_text(ds) + (f"\n\n{compared}" if compared else "")


def _soak(ds: xr.Dataset, out: str | os.PathLike, overwrite: bool) -> Rendered:
    from ..results.kinds import is_evaluation, validate_results
    from ..results.report import write_report
    from ..results.text import results_text

    page = write_report(ds, out, overwrite=overwrite, flag="--overwrite")
    if is_evaluation(ds):
        return evaluation_printout(ds), page
    return results_text(ds, validate_results(ds)[0]), page


def _transfer(ds: xr.Dataset, out: str | os.PathLike, overwrite: bool) -> Rendered:
    from ..pooling.report import transfer_text, write_transfer_report

    page = write_transfer_report(ds, out, overwrite=overwrite, flag="--overwrite")
    return transfer_text(ds), page


def _search(ds: xr.Dataset, out: str | os.PathLike, overwrite: bool) -> Rendered:
    from ..pooling.search import search_pvalues
    from .search_page import search_page

    page = _write_page(ds, out, overwrite, search_page)
    keep = ["learner", "test_subset", "compare", "reference", "compare_mean", "p"]
    return search_pvalues(ds)[keep].round(4).to_string(index=False), page


def _sensitivity(ds: xr.Dataset, out: str | os.PathLike, overwrite: bool) -> Rendered:
    from ..diagnose.sensitivity_report import split_sensitivity_page
    from .sensitivity_cli import summary_text

    page = _write_page(ds, out, overwrite, split_sensitivity_page)
    return summary_text(ds), page


def _sampling(ds: xr.Dataset, out: str | os.PathLike, overwrite: bool) -> Rendered:
    from ..diagnose.mai import mai_table
    from ..diagnose.sampling_report import data_name, sampling_page
    from .sampling_cli import notes_text

    page = _write_page(ds, out, overwrite, sampling_page)
    table = mai_table({data_name(ds): ds}).round(3).to_string()
    notes = notes_text(ds)
    return table + (f"\n\n{notes}" if notes else ""), page


def _write_page(
    ds: xr.Dataset, out: str | os.PathLike, overwrite: bool, build: Callable[[xr.Dataset], Any]
) -> Path:
    """``build(ds)``'s page (``soak_dask.results.pages``) written into ``out``, checked first
    as every report directory is."""
    from ..results.html import prepare_report_dir
    from ..results.pages import write_page

    od = prepare_report_dir(out, overwrite, "--overwrite", ds.attrs.get("source"))
    return write_page(build(ds), od)


#: The renderer of each kind of result.
RENDERERS: dict[str, Callable[[xr.Dataset, str | os.PathLike, bool], Rendered]] = {
    "soak": _soak,
    "evaluate": _soak,
    "transfer": _transfer,
    "search_subsets": _search,
    "split_sensitivity": _sensitivity,
    "compare_sampling": _sampling,
}
