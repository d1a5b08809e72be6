"""The kinds of result of this package (``soak_dask.results.registry``): ``transfer`` (the
transfer matrix) and ``search_subsets`` (the nested search for the train subsets to pool).

``soak_dask.result_kinds`` registers ``TRANSFER`` and ``SEARCH_SUBSETS``; the report writers
(matplotlib) load when a page is written.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd
import xarray as xr

from ..results.registry import ResultKind
from ..schema import DESIGN_DIMS
from .matrix import transfer_pvalues
from .search import search_pvalues

__all__ = ["SEARCH_SUBSETS", "TRANSFER"]


def _transfer_tests(ds: xr.Dataset, measures: Any, **options: Any) -> pd.DataFrame:
    """``transfer_pvalues`` of one measure (the first of several); ``options``: its
    ``alpha`` and ``margin``."""
    measure = measures if isinstance(measures, str | None) else measures[0]
    return transfer_pvalues(ds, measure, **options)


def _search_tests(ds: xr.Dataset, measures: Any, **options: Any) -> pd.DataFrame:
    """``search_pvalues`` (of the search's own measure); ``options``: its ``alpha`` and
    ``margin``."""
    return search_pvalues(ds, **options)


def _transfer_text(ds: xr.Dataset) -> str:
    from .report import transfer_text

    return transfer_text(ds)


def _transfer_report(ds: xr.Dataset, out: str | os.PathLike, overwrite: bool) -> Path:
    from .report import write_transfer_report

    return write_transfer_report(ds, out, overwrite=overwrite, flag="--overwrite")


def _search_text(ds: xr.Dataset) -> str:
    from .report import search_text

    return search_text(ds)


def _search_report(ds: xr.Dataset, out: str | os.PathLike, overwrite: bool) -> Path:
    from ..results.pages import write_result_page
    from .search_page import search_page

    return write_result_page(ds, out, overwrite, search_page)


#: The transfer matrix (``soak_dask.transfer``, ``soak transfer``): each cell against the
#: diagonal.
TRANSFER = ResultKind(
    name="transfer",
    dims=DESIGN_DIMS["transfer"],
    summary=_transfer_tests,
    text=_transfer_text,
    report=_transfer_report,
    tests=_transfer_tests,
)
#: The nested subset search (``soak_dask.search_subsets``, ``soak transfer --search``): the
#: greedy pool against same and all.
SEARCH_SUBSETS = ResultKind(
    name="search_subsets",
    dims=DESIGN_DIMS["search_subsets"],
    summary=_search_tests,
    text=_search_text,
    report=_search_report,
    tests=_search_tests,
)
