"""The report page of a ``split_sensitivity`` result (``soak report`` of its store): the figure,
the per-ratio summary and every trial, on the one page skeleton of ``soak_dask.results.pages``.
"""

from __future__ import annotations

import html
import textwrap

import pandas as pd
import xarray as xr

from ..results.html import attr_names, code, settings_table, versions_row
from ..results.pages import Page, PageFigure, PageSection, PageTable
from .sensitivity import (
    RATIO_STATISTICS,
    sensitivity_banner,
    split_sensitivity_summary,
    split_sensitivity_trials,
)
from .sensitivity_plot import plot_split_sensitivity

__all__ = ["caveat_text", "ratio_table", "sensitivity_text", "split_sensitivity_page"]

_EXPLANATION = """
<p>Each <b>trial</b> is a seeded random split of the rows: a share <i>r</i> (the <b>ratio</b>)
trains, the rest tests. Inside the train part, K-fold cross-validation gives the <b>CV
estimate</b> (the mean of the K fold scores); the learner fitted on the whole train part and
scored on the test part gives the <b>test score</b>.</p>
<ul>
<li>Per trial, the K fold scores give a prediction interval for one more score: a test score
inside it (<code>consistent</code>) is what the CV folds expected.</li>
<li>Per ratio, the trials' CV estimates and their test scores are two samples: Levene's test and
the F test ask whether their variances differ (a small p: the CV estimate does not vary as the
test score does); the correlation says whether a trial with a high CV estimate also has a high
test score.</li>
<li>The <b>recommended</b> ratios (&#9733; in the figure) are those where neither variance test
rejects and the share of consistent trials is highest. That rule looks only at agreement, not at
how good the model is: <code>test_score_behind_best</code> says how far each ratio's mean test
score falls short of the best ratio's.</li>
</ul>
"""
# Attrs put in words by _settings; any other attr is listed as it is.
_KNOWN = frozenset(
    "title design task source label subset group fold features excluded_coordinates learner "
    "learner_repr learners measure measure_name measures ratios n_repeats n_folds alpha seed "
    "classes n_fits recommended rule versions".split()
)


def caveat_text(summary: pd.DataFrame) -> str:
    """What the recommendation ignores, and the ratio of the best mean test score, from
    ``split_sensitivity_summary``'s table."""
    best = ", ".join(f"{r:g}" for r in summary.loc[summary["best_test_score"], "ratio"])
    return (
        "The recommendation asks only whether the CV estimate's spread agrees with the test "
        "score's; it ignores how good the model is and favours small ratios (less training "
        f"data). Best mean test score: ratio {best or 'none'} (behind_best: how far each "
        "ratio's mean test score falls short of it)."
    )


def ratio_table(summary: pd.DataFrame) -> pd.DataFrame:
    """``split_sensitivity_summary``'s table as read: mean ± SD of the CV estimates, the mean
    of the pooled CV estimates, mean ± SD of the test scores, how far behind the best ratio,
    the variance tests, the share of trials in the interval, the correlation and the
    recommendation, formatted (the CSV keeps all)."""

    def spread(name: str) -> pd.Series:
        mean, sd = summary[f"{name}_mean"], summary[f"{name}_sd"]
        return mean.map("{:.4f}".format) + " ± " + sd.map("{:.4f}".format)

    return summary[["ratio"]].assign(
        cv_estimate=spread("cv_estimate"),
        cv_pooled=summary["cv_pooled_mean"].map("{:.4f}".format),
        test_score=spread("test_score"),
        behind_best=summary["test_score_behind_best"].map("{:.4f}".format),
        levene_p=summary["levene_p"].round(4),
        f_p=summary["f_p"].round(4),
        in_interval=summary["consistent_share"].map("{:.0%}".format),
        correlation=summary["correlation"].round(3),
        recommended=summary["recommended"].map({True: "yes", False: ""}),
    )


def split_sensitivity_page(ds: xr.Dataset) -> Page:
    """The report page of ``ds``, a ``split_sensitivity`` result (its tables computed here,
    its figure drawn when the page is written)."""
    summary = split_sensitivity_summary(ds)
    trials = split_sensitivity_trials(ds)
    a = ds.attrs
    k, n = a.get("n_folds", ds.sizes["fold"]), ds.sizes["trial"]
    figure = PageFigure(
        "split_sensitivity",
        lambda: plot_split_sensitivity(ds),
        "CV estimates and test scores per ratio",
        f"Per ratio, the {n} trials' CV estimates (mean of {k} folds, blue) beside their test "
        "scores (orange); above each pair the variance tests' p, the share of trials in the "
        "prediction interval (in PI) and the correlation r. &#9733;: recommended.",
    )
    sections = (
        PageSection(
            "summary",
            "Per ratio",
            figures=(figure,),
            tables=(PageTable("summary", "Per-ratio statistics", summary, ratio_table(summary)),),
        ),
        PageSection(
            "trials",
            "Every trial",
            "<p>The K fold scores, the CV estimate (their mean) and its prediction interval, "
            "the pooled CV estimate (every CV test row once) with the fewest and most rows of "
            "a fold, the test score and whether it lies in the interval, per ratio and "
            "trial.</p>",
            tables=(PageTable("trials", f"Show the {len(trials)} trials", trials, folded=True),),
        ),
    )
    return Page(
        str(a.get("title", "split-ratio sensitivity")),
        _lede(ds),
        _EXPLANATION,
        sections,
        _settings(ds),
        (_recommendation(ds, summary), *filter(None, [html.escape(sensitivity_banner(ds))])),
    )


def _lede(ds: xr.Dataset) -> str:
    a = ds.attrs
    ratios = ", ".join(f"{r:g}" for r in ds["ratio"].values)
    source = code(a["source"]) if a.get("source") else "the table"
    label = f" predicting <b>{html.escape(str(a['label']))}</b>" if a.get("label") else ""
    return (
        f"How much does the estimate of <b>{html.escape(str(a.get('learner', '')))}</b>{label} "
        f"in {source} depend on the train/test ratio? Ratios {ratios}: {ds.sizes['trial']} "
        f"random splits each, {a.get('n_folds', ds.sizes['fold'])}-fold CV on the train part "
        f"against the score on the test part ({html.escape(str(a.get('measure', '')))})."
    )


def _recommendation(ds: xr.Dataset, summary: pd.DataFrame) -> str:
    chosen = ", ".join(attr_names(ds.attrs.get("recommended"))) or "none"
    return (
        f"<b>Recommended ratio(s)</b>: {html.escape(chosen)}. {html.escape(caveat_text(summary))}"
    )


def _settings(ds: xr.Dataset) -> str:
    """The run's settings in words, then the attrs this page does not know."""
    a = ds.attrs
    rows = [("Data", code(a["source"]))] if a.get("source") else []
    if a.get("label"):
        rows.append(("Label", f"{code(a['label'])} ({html.escape(str(a.get('task', '')))})"))
    if a.get("group"):
        rows.append(("Groups", f"{code(a['group'])}: whole groups on each side of a split"))
    learner = " ".join(str(a.get("learner_repr", "")).split())
    rows.append(("Learner", f"<b>{html.escape(str(a.get('learner', '')))}</b>: {code(learner)}"))
    measures = attr_names(a.get("measures"))
    rows.append(("Measures", html.escape(", ".join(measures) + " (the first is studied)")))
    rows.append(("Ratios", html.escape(", ".join(attr_names(a.get("ratios"))))))
    repeats = f"{a.get('n_repeats')} trials per ratio, {a.get('n_folds')}-fold CV in each"
    rows.append(("Trials", html.escape(repeats)))
    rows.append(("Level", html.escape(f"alpha = {a.get('alpha')} (intervals and tests)")))
    rows.append(("Seed", html.escape(str(a.get("seed")))))
    if "n_fits" in a:
        rows.append(("Fits", html.escape(str(a["n_fits"]))))
    rows.append(("Rule", html.escape(str(a.get("rule", "")))))
    glossary = "".join(
        f"<li><code>{html.escape(k)}</code>: {html.escape(v)}</li>"
        for k, v in RATIO_STATISTICS.items()
    )
    rows.append(("Columns", f"<ul>{glossary}</ul>"))
    return settings_table(rows + versions_row(a), a, _KNOWN)


def sensitivity_text(ds: xr.Dataset) -> str:
    """What ``soak split-sensitivity`` (and ``soak report`` of its store) prints: the
    per-ratio summary as a few lines of text, and the recommended ratios."""
    table = split_sensitivity_summary(ds)
    chosen = ", ".join(ds.attrs["recommended"]) if ds.attrs["recommended"] else "none"
    head = (
        f"{ds.attrs['learner']}, {ds.attrs['measure']} (mean ± SD over {ds.sizes['trial']} "
        f"trials per ratio, {ds.attrs['n_folds']}-fold CV on each train part)"
    )
    banner = sensitivity_banner(ds)
    return (
        f"{head}\n{ratio_table(table).to_string(index=False)}\nRecommended ratio(s): {chosen}\n"
        f"{textwrap.fill(caveat_text(table), 100)}" + (f"\n{banner}" if banner else "")
    )
