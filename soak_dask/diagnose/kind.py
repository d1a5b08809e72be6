"""The kinds of result of this package (``soak_dask.results.registry``): ``split_sensitivity``
(the estimate against the train/test ratio) and ``compare_sampling`` (the MAI of sampling
methods). Neither has paired tests: ``ds.soak.summary()`` summarises them.

``soak_dask.result_kinds`` registers ``SPLIT_SENSITIVITY`` and ``COMPARE_SAMPLING``; their
tables, text and pages load when they are asked for (the pages need matplotlib).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd
import xarray as xr

from ..results.registry import ResultKind
from ..schema import DESIGN_DIMS

__all__ = ["COMPARE_SAMPLING", "SPLIT_SENSITIVITY"]


def _sensitivity_summary(ds: xr.Dataset, measures: Any) -> pd.DataFrame:
    """``split_sensitivity_summary`` (of the diagnostic's one measure)."""
    from .sensitivity import split_sensitivity_summary

    return split_sensitivity_summary(ds)


def _sensitivity_text(ds: xr.Dataset) -> str:
    from .sensitivity_report import sensitivity_text

    return sensitivity_text(ds)


def _sensitivity_report(ds: xr.Dataset, out: str | os.PathLike, overwrite: bool) -> Path:
    from ..results.pages import write_result_page
    from .sensitivity_report import split_sensitivity_page

    return write_result_page(ds, out, overwrite, split_sensitivity_page)


def _mai(ds: xr.Dataset, measures: Any) -> pd.DataFrame:
    """``mai_table`` of this one data set (accuracy, the comparison's one measure)."""
    from .mai import mai_table

    return mai_table({str(ds.attrs.get("source", "results")): ds})


def _sampling_text(ds: xr.Dataset) -> str:
    from .sampling_report import sampling_text

    return sampling_text(ds)


def _sampling_report(ds: xr.Dataset, out: str | os.PathLike, overwrite: bool) -> Path:
    from ..results.pages import write_result_page
    from .sampling_report import sampling_page

    return write_result_page(ds, out, overwrite, sampling_page)


#: The split-ratio sensitivity (``soak_dask.split_sensitivity``, ``soak split-sensitivity``).
SPLIT_SENSITIVITY = ResultKind(
    name="split_sensitivity",
    dims=DESIGN_DIMS["split_sensitivity"],
    summary=_sensitivity_summary,
    text=_sensitivity_text,
    report=_sensitivity_report,
)
#: The sampling comparison (``soak_dask.compare_sampling``, ``soak compare-sampling``).
COMPARE_SAMPLING = ResultKind(
    name="compare_sampling",
    dims=DESIGN_DIMS["compare_sampling"],
    summary=_mai,
    text=_sampling_text,
    report=_sampling_report,
)
