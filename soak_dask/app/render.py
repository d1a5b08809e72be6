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
"""

from __future__ import annotations

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
