"""The kinds of result of SOAK and ``evaluate`` (``soak_dask.results.registry``): their
summary, paired tests, printout and report page.

``soak_dask.result_kinds`` registers ``SOAK`` and ``EVALUATE``; the report writers (matplotlib)
load when a page is written.
"""

from __future__ import annotations

import os
from pathlib import Path

import xarray as xr

from ..schema import DESIGN_DIMS
from .comparisons import comparison_text
from .kinds import EVALUATION_INSTEAD, validate_results
from .paired_tests import pvalues
from .registry import ResultKind
from .summaries import evaluation_summary, summary
from .text import evaluation_text, results_text

__all__ = ["EVALUATE", "SOAK", "evaluation_printout"]


def _soak_text(ds: xr.Dataset) -> str:
    """What ``soak run`` prints of its first measure (and ``soak report`` of its store)."""
    return results_text(ds, validate_results(ds)[0])


def evaluation_printout(ds: xr.Dataset) -> str:
    """What ``soak evaluate`` (and ``soak report`` of its store) prints: mean ± SD and the test
    split's interval, then the learners compared with the design's recommended test."""
    compared = comparison_text(ds)
    return evaluation_text(ds) + (f"\n\n{compared}" if compared else "")


def _soak_report(ds: xr.Dataset, out: str | os.PathLike, overwrite: bool) -> Path:
    from .report import write_report

    return write_report(ds, out, overwrite=overwrite, flag="--overwrite")


def _evaluation_report(ds: xr.Dataset, out: str | os.PathLike, overwrite: bool) -> Path:
    from .evaluation_report import write_evaluation_report

    return write_evaluation_report(ds, out, overwrite=overwrite, flag="--overwrite")


#: SOAK's results (``soak_dask.soak``, ``soak run``): same / other / all per test subset.
SOAK = ResultKind(
    name="soak",
    dims=DESIGN_DIMS["soak"],
    summary=summary,
    text=_soak_text,
    report=_soak_report,
    tests=pvalues,
)
#: ``evaluate``'s results (``soak_dask.evaluate``, ``soak evaluate``): learners compared over
#: one resampling; ``ds.soak.compare(a, b, measure)`` tests them.
EVALUATE = ResultKind(
    name="evaluate",
    dims=DESIGN_DIMS["evaluate"],
    summary=evaluation_summary,
    text=evaluation_printout,
    report=_evaluation_report,
    instead=EVALUATION_INSTEAD,
)
