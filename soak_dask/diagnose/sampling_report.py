"""The report page of a ``compare_sampling`` result (``soak report`` of its store): the MAI
figure and tables, the random splits and the size of each method's split, on the one page
skeleton of ``soak_dask.results.pages``.
"""

from __future__ import annotations

import html
import os
import textwrap
from pathlib import Path

import pandas as pd
import xarray as xr

from ..results.html import (
    attr_names,
    code,
    estimators_row,
    json_attr,
    settings_table,
    versions_row,
)
from ..results.pages import Page, PageFigure, PageSection, PageTable
from .mai import mai_summary, mai_table
from .sampling_plot import plot_mai

__all__ = ["data_name", "method_notes", "notes_text", "sampling_page", "sampling_text"]

_EXPLANATION = """
<p>Each <b>sampling method</b> draws one train/test split of the rows (a share <i>t</i>
trains); each learner is fitted on its train side and scored on its test side: its accuracy is
<b>ACC</b>. The same learner on <i>n</i> random splits gives the <b>AEV</b> (their mean accuracy,
the absolute evaluation value) and <b>SD</b> (their standard deviation).</p>
<ul>
<li><b>MAI</b> = (ACC &minus; AEV) / SD: how many random-split SDs the method's split lies from
the average random split. Near 0: the split judges the learner as random splits do on average;
above 0 it flatters the learner, below 0 it undersells it.</li>
<li>Between &minus;1 and 1 (the grey band of the figure) lies about two random splits in three:
one method's split is one draw, so a single |MAI| below 1 is no evidence of a better method.
Compare methods by mean |MAI| over several data sets and learners (the summary table).</li>
<li>MAI is empty when every random split scores alike (SD = 0).</li>
</ul>
"""
# Attrs put in words by _settings; any other attr is listed as it is.
_KNOWN = frozenset(
    "title design source label features methods train_ratio n_repeats n_random seed notes "
    "classes learners versions measures".split()
)


def data_name(ds: xr.Dataset) -> str:
    """The name of the data set of ``ds`` in ``mai_table``: its source's file name."""
    return Path(os.fspath(ds.attrs.get("source", "results"))).name


def method_notes(ds: xr.Dataset) -> dict[str, str]:
    """Each method's note (e.g. MDC on a sample changes the method), by method; {} when none."""
    return {str(k): str(v) for k, v in json_attr(ds.attrs.get("notes") or "{}").items()}


def notes_text(ds: xr.Dataset) -> str:
    """Each method's notes from the result's attrs (e.g. MDC on a sample changes the
    method), one paragraph per method, as ``soak compare-sampling`` prints them; empty when
    there are none."""
    return "\n".join(
        textwrap.fill(f"Note, {method}: {text}", 100) for method, text in method_notes(ds).items()
    )


def sampling_text(ds: xr.Dataset) -> str:
    """What ``soak report`` of a ``compare_sampling`` store prints: the MAI table, then the
    methods' notes."""
    table = mai_table({data_name(ds): ds}).round(3).to_string()
    notes = notes_text(ds)
    return table + (f"\n\n{notes}" if notes else "")


def sampling_page(ds: xr.Dataset) -> Page:
    """The report page of ``ds``, a ``compare_sampling`` result (its tables computed here,
    its figure drawn when the page is written)."""
    frame = mai_table({data_name(ds): ds})
    summary = mai_summary(frame)
    n = ds.sizes["trial"]
    figure = PageFigure(
        "mai",
        lambda: plot_mai(frame),
        "MAI of each sampling method",
        f"MAI = (ACC &minus; AEV) / SD of each method, one point per learner; AEV and SD from "
        f"{n} random splits. Grey band: |MAI| &lt; 1, where two random splits in three land.",
    )
    sizes = ds[["n_train", "n_test"]].to_dataframe().reset_index()
    random = ds["random_accuracy"].to_pandas()
    random.columns = [f"split {t}" for t in random.columns]
    sections = (
        PageSection(
            "mai",
            "MAI of each method",
            figures=(figure,),
            tables=(
                PageTable("mai", "ACC, AEV, SD and MAI per learner", frame.reset_index()),
                PageTable("summary", "Mean and SD of |MAI| per method", _summary(summary)),
            ),
        ),
        PageSection(
            "splits",
            "The splits",
            tables=(
                PageTable("sizes", "Rows on each side of each method's split", sizes),
                PageTable("random_accuracy", "Accuracy of each random split", random.reset_index()),
            ),
        ),
    )
    notes = tuple(
        f"<b>Note, {html.escape(m)}</b>: {html.escape(t)}" for m, t in method_notes(ds).items()
    )
    return Page(
        str(ds.attrs.get("title", "sampling comparison")),
        _lede(ds),
        _EXPLANATION,
        sections,
        _settings(ds),
        notes,
    )


def _summary(summary: pd.DataFrame) -> pd.DataFrame:
    """``mai_summary``'s table with its row names as a first column."""
    return summary.rename_axis("statistic").reset_index()


def _lede(ds: xr.Dataset) -> str:
    a = ds.attrs
    source = code(a["source"]) if a.get("source") else "the table"
    methods = ", ".join(html.escape(str(m)) for m in ds["sampling"].values)
    learners = ", ".join(html.escape(str(v)) for v in ds["learner"].values)
    return (
        f"Which train/test sampling method judges a learner as random splits do? In {source}, "
        f"predicting <b>{html.escape(str(a.get('label', '')))}</b>: methods {methods}, "
        f"learners {learners}, a share {html.escape(str(a.get('train_ratio')))} of the rows "
        f"training, against {ds.sizes['trial']} random splits."
    )


def _settings(ds: xr.Dataset) -> str:
    """The run's settings in words, then the attrs this page does not know."""
    a = ds.attrs
    rows = [("Data", code(a["source"]))] if a.get("source") else []
    classes = ", ".join(attr_names(a.get("classes")))
    rows.append(("Label", f"{code(a.get('label', ''))} (classes {html.escape(classes)})"))
    features = attr_names(a.get("features"))
    if features:
        rows.append(("Features", html.escape(f"{len(features)}: {', '.join(features)}")))
    rows += estimators_row("Learners", a.get("learners"))
    rows.append(("Methods", html.escape(", ".join(attr_names(a.get("methods"))))))
    rows.append(("Train share", html.escape(str(a.get("train_ratio")))))
    repeats = a.get("n_repeats", a.get("n_random"))  # n_random: stores before the rename
    rows.append(("Random splits", html.escape(f"{repeats} (AEV and SD)")))
    rows.append(("Seed", html.escape(str(a.get("seed")))))
    return settings_table(rows + versions_row(a), a, _KNOWN)
