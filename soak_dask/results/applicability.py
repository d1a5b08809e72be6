"""A SOAK result's area-of-applicability coverage in words, beside its tests: the sentences of
``soak_dask.aoa_sentences`` for SOAK results and the section the SOAK report shows them in.

``aoa_share`` (per result cell, the share of the test block's rows inside the AOA of its train
set) is computed by ``soak_dask.spatial.aoa_coverage.aoa_coverage``; the words are here, beside
the report that shows them, and ``comparison_sentence`` and ``share_text`` word a transfer
result's cells too (``soak_dask.spatial.aoa_coverage``).
"""

from __future__ import annotations

import html
from typing import Any

import numpy as np
import xarray as xr

from .stats import pvalues
from .verdicts import BETTER, EQUIVALENT, NO_EVIDENCE, WORSE, verdict

__all__ = [
    "aoa_outside",
    "aoa_section",
    "comparison_sentence",
    "first_learner",
    "share_text",
    "soak_aoa_sentences",
]


def first_learner(ds: xr.Dataset, learner: str | None = None) -> str:
    """``learner``, or by default the first learner of ``ds`` that is not featureless."""
    names = [str(v) for v in ds["learner"].values]
    return learner or next((n for n in names if n != "featureless"), names[0])


def aoa_outside(ds: xr.Dataset) -> xr.DataArray:
    """Per result cell, the share of the test block's rows outside the AOA, mean over folds."""
    return 1 - ds["aoa_share"].mean("fold")


def soak_aoa_sentences(
    ds: xr.Dataset, *, learner: str | None = None, measure: str, alpha: float = 0.05
) -> list[str]:
    """``soak_dask.aoa_sentences`` of a SOAK result with ``aoa_share``: each test subset and
    each of other / all against same, e.g. "other fails on S (error 0.31 vs 0.12 for same,
    p = 0.002): 71 % of S lies outside what NE+NW cover, 3 % outside what S covers"."""
    learner = first_learner(ds, learner)
    outside = aoa_outside(ds)
    tests = pvalues(ds, measures=[measure])
    tests = tests[tests["learner"] == learner]
    subsets = [str(s) for s in ds["test_subset"].values]
    lines = []
    for row in tests.itertuples():
        s, c = str(row.test_subset), str(row.compare)
        members = [t for t in subsets if t != s] if c == "other" else subsets
        judged = verdict(row.mean_diff, row.p, measure, alpha)
        lines.append(
            comparison_sentence(
                c, s, judged, measure, (row.compare_mean, row.reference_mean, "for same"), row
            )
            + f": {share_text(outside.sel(test_subset=s, train_type=c))} of {s} lies outside "
            f"what {'+'.join(members)} cover" + _own(outside, s)
        )
    return lines


def _own(outside: xr.DataArray, s: str) -> str:
    if "train_type" in outside.dims and "same" in outside["train_type"].values:
        return (
            f", {share_text(outside.sel(test_subset=s, train_type='same'))} outside what {s} covers"
        )
    return ""


def comparison_sentence(
    who: str, s: str, judged: str, measure: str, values: tuple, row: Any
) -> str:
    """ "other fails on S (error 0.31 vs 0.12 for same, 95 % interval of the difference 0.1 to
    0.3, p = 0.002)": the verdict's wording (``results.verdicts``), the test's interval;
    ``values`` is (compared value, reference value, what the reference is)."""
    verb = {
        WORSE: "fails on",
        BETTER: "does better on",
        NO_EVIDENCE: "shows no evidence of a difference on",
        EQUIVALENT: "is equivalent on",
    }
    value, reference, name = values
    p_text = "p undefined" if not np.isfinite(row.p) else f"p = {row.p:.2g}"
    if np.isfinite(row.ci_low) and np.isfinite(row.ci_high):
        p_text = f"95 % interval of the difference {row.ci_low:.3g} to {row.ci_high:.3g}, {p_text}"
    return f"{who} {verb[judged]} {s} ({measure} {value:.3g} vs {reference:.3g} {name}, {p_text})"


def share_text(value: Any) -> str:
    """A share as "71 %" ("an unknown share" when it is not finite)."""
    v = float(value)
    return "an unknown share" if not np.isfinite(v) else f"{v:.0%}".replace("%", " %")


def aoa_section(ds: xr.Dataset, measure: str) -> str:
    """An HTML section of ``soak_aoa_sentences`` for the SOAK report (empty without
    ``aoa_share``)."""
    if "aoa_share" not in ds:
        return ""
    items = "".join(f"<li>{html.escape(s)}</li>" for s in soak_aoa_sentences(ds, measure=measure))
    return (
        '<h2 id="aoa">Area of applicability</h2>\n<p>Share of each test block inside the area '
        "of applicability (Meyer &amp; Pebesma 2021) of the train set that predicted it, mean "
        f"over folds, beside the paired t-test:</p>\n<ul>{items}</ul>\n"
    )
