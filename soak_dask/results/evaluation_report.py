"""The report of an ``evaluate`` result: tables (CSV, Markdown), figures (PNG, SVG) and one
self-contained HTML page, written as ``soak_dask.results.report`` writes SOAK's (its
``write_report`` sends evaluate results here).

The page shows, per measure, each learner's fold scores with their mean ± SD and the reserved
test split's score with its 95 % interval (``plot_evaluation``), a table of the same numbers,
and the paired t-tests of every pair of learners; then every fold's scores, the settings in
words and how to read them. The CSV files hold the full-precision tables of
``soak_dask.results.stats.evaluation_summary``, ``by_fold`` and ``compare``.
"""

from __future__ import annotations

import html
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from ..split.knndm import CANDIDATE_NAMES
from ..tables.roles import coordinates_warning
from ..tables.spatial_record import made_from_coordinates
from .comparisons import comparisons
from .estimates import evaluation_banner
from .html import (
    TABLE_ATTRS,
    Claims,
    PageParts,
    attr_names,
    cells_table,
    code,
    decimals,
    estimators_row,
    figure_html,
    fitting_rows,
    fixed,
    html_table,
    listed,
    measures_row,
    prepare_report_dir,
    procedure_rows,
    settings_table,
    table_rows,
    versions_row,
    write_figure,
    write_tables,
)
from .kinds import validate_evaluation
from .pages import write_parts
from .plot import format_pvalue, measure_label, plot_evaluation
from .summaries import CHOICE_VARIABLES, by_fold, evaluation_summary, nesting_choices, timings
from .text import prior_correction_text

__all__ = ["evaluation_parts", "write_evaluation_report"]

# The per-fold table of the page stops here (leave-one-out has a row per row of the table);
# folds.csv has them all.
_MAX_FOLD_ROWS = 500
# Attrs that evaluate() writes, shown in words by _settings_rows; any other is listed as it is.
# What outer="knndm" records: in words in the design and in its note (evaluate's notes).
_KNNDM_ATTRS = frozenset(
    "knndm_W knndm_W_random knndm_n_clusters knndm_method knndm_clustering knndm_space "
    "knndm_unit knndm_ks_pvalue knndm_prediction_sample".split()
)
_KNOWN_ATTRS = (
    TABLE_ATTRS
    | _KNNDM_ATTRS
    | frozenset(
        "title design task source label subset group fold features excluded_coordinates outer "
        "outer_folds outer_repeats train_ratio test_split seed measures classes learners n_fits "
        "n_distinct_train_sets versions models prior_correction group_assignment nested inner "
        "inner_folds inner_repeats calibration notes balance optimistic outer_seconds "
        "final_seconds outer_folds_requested".split()
    )
)
_SD_NOT_SE = (
    "<b>SD, not SE</b>: the &plusmn; is the standard deviation of the scores across the "
    "resampling cells (folds, splits or resamples), never a standard error: their train sets "
    "share rows, so no unbiased estimate of the mean's variance exists (Bengio and Grandvalet "
    "2004). It says how much one cell's score varies, not how precisely the mean is known."
)
_EXPLANATION = """
<p>Every learner is scored on the same resampling cells: the test folds of K-fold
cross-validation (each repeat draws fresh folds), the held-out part of each random split, or
the out-of-bag rows of each bootstrap resample. In the figures, hollow dots are the cells'
scores and the diamond and bar their mean &plusmn; SD (the bar stops at the measure's range,
e.g. 0 % error). With a reserved <b>test split</b>, the square and its bar are each learner's
final model (one fit on all other rows) scored once on the test split, with a bootstrap 95 %
percentile interval over its rows (over its groups, with a group column).</p>
<ul>
<li><b>Learners compared</b>: the difference of two learners (the first minus the second)
over the cells both scored, with the test recommended for this design and its 95 % interval
of the mean difference. For error-like measures a negative difference means the first learner
is better; for accuracy, AUC and R&sup2; a positive one.</li>
<li>The cells are not independent (their train sets overlap), so the plain paired t-test
rejects too often. The recommended test is the most powerful one that held its level in the
simulations of <code>benchmarks/test_level.py</code> on this design (the <b>corrected</b>
t-test of Nadeau and Bengio 2003 on most: the variance of the mean difference inflated by
n_test/n_train; McNemar's on a test split); where none held, a note says so.</li>
<li>p=NA means the test is undefined, e.g. fewer than two cells or identical differences in
every cell (the <code>reason</code> column of <code>compare.csv</code> says why).</li>
</ul>
"""


# --- words ------------------------------------------------------------------------------------


def _share(value: float) -> str:
    return f"{100 * value:.3g} %"


def _design(ds: xr.Dataset) -> str:
    """The outer strategy in words: ``5-fold cross-validation repeated 2 times...``."""
    a = ds.attrs
    k, r, outer = a.get("outer_folds", ds.sizes["fold"]), ds.sizes["repeat"], a.get("outer")
    text = {
        "cv": f"{k}-fold cross-validation",
        "repeated_cv": f"{k}-fold cross-validation repeated {r} times, with fresh folds each time",
        "subsampling": f"{r} random train/test splits",
        "loo": f"leave-one-out ({k} folds, one per row)",
        "lodo": f"leave one group out ({k} folds, one per group)",
        "bootstrap": f"{r} bootstrap resamples, each scored on its out-of-bag rows",
        "knndm": f"{k}-fold cross-validation on kNNDM folds{_knndm_words(a)}",
    }.get(str(outer), f"outer={html.escape(str(outer))}")
    if outer == "subsampling" and a.get("train_ratio") not in (None, ""):
        text += f", {_share(float(a['train_ratio']))} of the rows to train"
    if a.get("fold"):
        text += f", folds from column {code(a['fold'])}"
        text += f" of the fold file {code(a['fold_file'])}" if a.get("fold_file") else ""
    elif a.get("group"):
        text += f", whole groups of <b>{html.escape(str(a['group']))}</b> kept together"
    elif a.get("task") == "classification" and outer in ("cv", "repeated_cv", "subsampling"):
        text += ", stratified by class"
    return text


def _knndm_words(attrs: Any) -> str:
    """How ``outer="knndm"`` chose its folds, from the attrs it records (``_KNNDM_ATTRS``; W
    and the KS test are in the note): " (geographical space, candidates: cuts of one Ward
    tree, 3,865 prediction points sampled)"."""
    if "knndm_space" not in attrs:
        return ""
    words = [f"{attrs['knndm_space']} space"]
    if attrs.get("knndm_clustering") in CANDIDATE_NAMES:
        words.append(f"candidates: {CANDIDATE_NAMES[attrs['knndm_clustering']]}")
    if attrs.get("knndm_prediction_sample") not in (None, ""):
        words.append(f"{int(attrs['knndm_prediction_sample']):,} prediction points sampled")
    return html.escape(f" ({', '.join(words)})")


def _test_split(ds: xr.Dataset) -> str:
    """The reserved test split in words, or "" without one."""
    share = float(ds.attrs.get("test_split", 0) or 0)
    if not share:
        return ""
    rows = int(ds["n_test_split"].max()) if "n_test_split" in ds.data_vars else None
    details = [f"{rows:,} rows"] if rows else []
    if ds.attrs.get("group"):
        details.append("whole groups")
    held = f"{_share(share)} of the rows" + (f" ({', '.join(details)})" if details else "")
    return f"{held} reserved as a test split, scored once by each learner's final model"


def _lede(ds: xr.Dataset) -> str:
    a = ds.attrs
    what = f"Predicting <b>{html.escape(str(a['label']))}</b>" if a.get("label") else "Results"
    if a.get("source"):
        what += f" in {code(Path(str(a['source'])).name or a['source'])}"
    split = _test_split(ds)
    learners = ", ".join(html.escape(str(v)) for v in ds["learner"].values)
    return f"{what} by {_design(ds)}{'; ' + split if split else ''}. Learners: {learners}."


def _notes(ds: xr.Dataset) -> list[str]:
    """What the reader must know before reading the numbers."""
    a = ds.attrs
    notes = [_SD_NOT_SE]
    if a.get("task") == "classification":
        first = attr_names(a.get("measures"))[:1]
        headline = f" The first measure shown is {code(first[0])}." if first else ""
        notes.append(
            f"<b>Prediction</b>: {html.escape(prior_correction_text(a))}.{headline} The same "
            "learner on the same folds scores the same in <code>soak run</code> when the "
            "correction is set the same way (it is off there by default)."
        )
    if a.get("outer") in ("cv", "repeated_cv") and not a.get("fold"):
        cap = (
            "groups (of the rarest class, when every group holds one class and folds are "
            "stratified)"
            if a.get("group")
            else "rows of the rarest class"
        )
        used, asked = a.get("outer_folds", ds.sizes["fold"]), a.get("outer_folds_requested")
        capped = f" (asked for {asked}, capped)" if asked not in (None, "", used) else ""
        notes.append(
            f"<b>Folds</b>: K = {used}{capped}. K is capped at the number of {cap} and is "
            "never below 2: a run that asks for more folds warns and uses that number."
        )
    if a.get("outer") == "bootstrap":
        notes.append(
            "<b>Bootstrap .632 estimates</b>: a resample's out-of-bag score is pessimistic (its "
            "model saw about 63.2 % of the distinct rows) and the final model's score on its own "
            "training rows (resubstitution) optimistic; the <code>_632</code> measures weigh "
            "them 0.632 &times; out-of-bag + 0.368 &times; resubstitution, per resample. For "
            "error, <code>error_632plus</code> (.632+) moves the weight towards out-of-bag as "
            "far as the model over-fits (its no-information error bounds the rate)."
        )
    if _test_split(ds):
        units = f"groups of <b>{html.escape(str(a['group']))}</b>" if a.get("group") else "rows"
        notes.append(
            "<b>Test split</b>: set aside before any fold was drawn, it is in no train set. Each "
            "learner's final model (one fit on all the other rows) scores it once; the interval "
            f"is a bootstrap 95 % percentile interval over its {units}."
        )
    left_out = attr_names(a.get("excluded_coordinates"))
    if left_out:
        notes.append(f"<b>Coordinates</b>: {html.escape(coordinates_warning(left_out))}.")
    return notes + _nesting_notes(ds)


def _nesting_notes(ds: xr.Dataset) -> list[str]:
    """The optimism of ``nested=False``, skipped steps, where the choices are and the timings."""
    a = ds.attrs
    notes = [f"<b>Warning</b>: {html.escape(str(a['optimistic']))}"] if a.get("optimistic") else []
    listed_notes = attr_names(a.get("notes"))
    notes += [f"<b>Note</b>: {html.escape(n)}" for n in listed_notes]
    if any(v in ds.data_vars for v in CHOICE_VARIABLES):
        notes.append(
            "<b>Inner search</b>: what each learner chose in every outer cell and for its final "
            'model is in the table <a href="#choices">choices</a> (and <code>choices.csv</code>).'
        )
    if "outer_seconds" in a:
        notes.append(
            f"<b>Timings</b>: outer loop {float(a['outer_seconds']):.1f} s, final models "
            f"{float(a['final_seconds']):.1f} s (<code>timings.csv</code>)."
        )
    return notes


def _settings_rows(ds: xr.Dataset) -> list[tuple[str, str]]:
    """(name, HTML) of the run's settings in words."""
    a = ds.attrs
    rows = []
    if a.get("source"):
        rows.append(("Data", code(a["source"])))
    if a.get("label"):
        classes = attr_names(a.get("classes"))
        task = html.escape(str(a.get("task", ""))) + (f": {listed(classes)}" if classes else "")
        rows.append(("Label", f"{code(a['label'])} ({task})"))
    group = f"{code(a['group'])}: a group's rows stay together" if a.get("group") else "none"
    group += made_from_coordinates(a, a.get("group"))
    rows += [("Groups", group), ("Outer design", _design(ds))]
    rows.append(("Test split", _test_split(ds) or "none"))
    if "seed" in a:
        rows.append(("Seed", f'{a["seed"]} <span class="muted">(splits, learners)</span>'))
    features = attr_names(a.get("features"))
    if features:
        rows.append(("Features", f"{len(features)}: {listed(features)}"))
    left_out = attr_names(a.get("excluded_coordinates"))
    if left_out:
        rows.append(("Coordinates left out", listed(left_out)))
    rows += table_rows(a) + estimators_row("Learners", a.get("learners"))
    rows += estimators_row("Final models", a.get("models"))
    rows += measures_row(a) + fitting_rows(a) + procedure_rows(ds)
    if "n_fits" in a:
        distinct = a.get("n_distinct_train_sets", "?")
        rows.append(
            ("Fits", f"{a['n_fits']}: {distinct} train sets × {ds.sizes['learner']} learners")
        )
    if "outer_seconds" in a:
        wall = f"outer loop {float(a['outer_seconds']):.1f} s"
        wall += f", final models {float(a['final_seconds']):.1f} s" if "final_seconds" in a else ""
        rows.append(("Wall time", wall))
    return rows + versions_row(a)


def _settings_html(ds: xr.Dataset) -> str:
    return settings_table(_settings_rows(ds), ds.attrs, _KNOWN_ATTRS)


# --- one measure ------------------------------------------------------------------------------


def _means_table(means: pd.DataFrame) -> str:
    """Per learner: cells, mean ± SD, min–max, the pooled estimate with the test rows of a
    cell, and the test split's score [95 % interval]."""
    digits = decimals(pd.concat([means["mean"], means["test_estimate"]]))
    split = bool(means["test_estimate"].notna().any())
    head = ["Learner", "Cells", "Mean ± SD", "Min – max", "Pooled [test rows of a cell]"]
    head += ["Test split [95 % interval]"] if split else []
    rows = []
    for r in means.itertuples():
        sd = f" ± {fixed(r.sd, digits)}" if np.isfinite(r.sd) else ""
        cells = [str(r.learner), str(r.n), fixed(r.mean, digits) + sd]
        cells.append(f"{fixed(r.min, digits)} – {fixed(r.max, digits)}" if r.n else "")
        sizes = f" [{r.n_test_min:,.0f}–{r.n_test_max:,.0f}]" if np.isfinite(r.n_test_min) else ""
        cells.append(fixed(r.weighted_mean, digits) + sizes if np.isfinite(r.weighted_mean) else "")
        if split:
            interval = f" [{fixed(r.test_low, digits)}, {fixed(r.test_high, digits)}]"
            scored = np.isfinite(r.test_estimate)
            cells.append(fixed(r.test_estimate, digits) + interval if scored else "")
        rows.append(cells)
    return cells_table(head, rows, 1)


def _about(row: Any) -> str:
    """What a comparison is about (``compare``'s ``null``) and its extra fits' cost."""
    fits = row.extra_fits
    cost = f"; {fits:,.0f} extra fits" if np.isfinite(fits) and fits > 0 else ""
    return f"{row.null}{cost}"


def _compare_table(tests: pd.DataFrame, digits: int) -> str:
    """Per pair and test: the difference ± SD, its 95 % interval, p; the level notes under it
    (each once, numbered)."""
    notes = list(dict.fromkeys(n for n in tests["note"] if n))
    head = ["Learners", "Test", "Cells", "Mean difference ± SD", "95 % interval", "p"]
    head += ["Type-I error measured here", "About", "Note"]
    rows = []
    for r in tests.itertuples():
        sd = f" ± {fixed(r.sd_diff, digits)}" if np.isfinite(r.sd_diff) else ""
        interval = (
            f"[{fixed(r.ci_low, digits, sign=True)}, {fixed(r.ci_high, digits, sign=True)}]"
            if np.isfinite(r.ci_low)
            else ""
        )
        p = format_pvalue(r.p).removeprefix("p=") if r.method != "bayesian" else "(Bayesian)"
        rows.append(
            [
                f"{r.compare} − {r.reference}",
                str(r.method),
                str(r.n),
                fixed(r.mean_diff, digits, sign=True) + sd,
                interval,
                p,
                f"{r.level:.1%}" if np.isfinite(r.level) else "not measured",
                _about(r),
                f"[{notes.index(r.note) + 1}]" if r.note else (r.reason and "undefined"),
            ]
        )
    listed_notes = "".join(
        f'<p class="muted">[{i}] {html.escape(n)}.</p>' for i, n in enumerate(notes, 1)
    )
    return cells_table(head, rows, (0, 1, 7), wrap=(7,)) + listed_notes


def _measure_section(
    out: Claims,
    ds: xr.Dataset,
    measure: str,
    means: pd.DataFrame,
    tests: pd.DataFrame,
    first: bool,
) -> str:
    """The figure and tables of one measure: open for the first, folded for the others."""
    label = html.escape(measure_label(ds, measure))
    figure = write_figure(out, plot_evaluation(ds, measure), f"evaluation_{measure}")
    split = (
        " and the test split's score with its 95 % interval (square)"
        if means["test_estimate"].notna().any()
        else ""
    )
    caption = (
        f"{label} of each learner: every resampling cell (hollow dots), their mean &plusmn; SD "
        f"(diamond and bar, stopped at the measure's range), the pooled estimate (purple tick: "
        f"every test row once, where the measure has one){split}."
    )
    body = figure_html(figure, f"learners evaluated on {measure}", caption)
    body += "<h3>Mean &plusmn; SD over the cells</h3>\n" + _means_table(means)
    if banner := evaluation_banner(ds, measure):
        body += f'<div class="notes"><p>{html.escape(banner)}</p></div>\n'
    else:
        body += (
            '<p class="muted">Mean over cells and pooled estimate (every test row once) agree '
            "within the SD, and no cell has over twice the test rows of another.</p>\n"
        )
    if len(tests):
        digits = decimals(means["mean"])
        body += "<h3>Learners compared (paired over the cells)</h3>\n"
        body += _compare_table(tests, digits)
    name = html.escape(measure)
    return (
        f'<details class="measure" id="{name}"{" open" if first else ""}>'
        f"<summary>{label} (<code>{name}</code>)</summary>\n{body}</details>\n"
    )


def _folds_html(folds: pd.DataFrame) -> str:
    shown = folds.head(_MAX_FOLD_ROWS)
    more = (
        f" The first {_MAX_FOLD_ROWS:,} of {len(folds):,} rows; <code>folds.csv</code> has all."
        if len(folds) > len(shown)
        else ""
    )
    return (
        f"<details><summary>Scores of each learner in every cell ({len(folds):,} rows)</summary>"
        f'<p class="muted">{more.strip()}</p><div class="scroll">'
        f"{html_table(shown, 'folds')}</div></details>\n"
    )


def _choices_html(choices: pd.DataFrame) -> str:
    """The inner search's choices, one row per outer cell and final model, or ""."""
    if choices.empty:
        return ""
    return (
        '<h2 id="choices">Choices of the inner search</h2>\n<p>What each learner\'s inner '
        "search chose in every outer cell (its train rows only) and for the final model (all "
        'rows but the test split).</p><div class="scroll">'
        f"{html_table(choices.astype(object).fillna(''), 'results')}</div>\n"
    )


def _parts(
    ds: xr.Dataset, sections: list[str], measures: list[str], files: list[str], end: str
) -> PageParts:
    title = html.escape(str(ds.attrs.get("title", "soak_dask evaluation")))
    anchors = [*measures, *(["choices"] if 'id="choices"' in end else []), "folds"]
    return PageParts(
        title,
        _lede(ds),
        _notes(ds),
        anchors,
        _EXPLANATION,
        "".join(sections) + end,
        _settings_html(ds),
        files,
    )


def write_evaluation_report(
    ds: xr.Dataset,
    out: str | os.PathLike,
    measures: str | Iterable[str] | None = None,
    *,
    overwrite: bool = False,
    flag: str = "overwrite=True",
) -> Path:
    """Write tables, figures and a self-contained HTML page of ``evaluate`` results into `out`.

    Files written:

    - ``summary.csv`` / ``.md``: ``soak_dask.results.stats.evaluation_summary`` (mean ± SD,
      the test split's estimate and interval);
    - ``folds.csv`` / ``.md``: ``soak_dask.results.stats.by_fold``, every cell;
    - ``compare.csv`` / ``.md``: ``soak_dask.results.comparisons.comparisons``, every pair
      of learners per measure with the design's recommended test (its p, 95 % interval,
      method and level note);
    - ``choices.csv`` / ``.md`` (nested learners only):
      ``soak_dask.results.summaries.nesting_choices``, what each inner search chose;
    - ``timings.csv`` / ``.md``: ``soak_dask.results.stats.timings``, seconds of the outer
      loop and the final models;
    - ``evaluation_<measure>.png`` / ``.svg``: ``soak_dask.results.plot.plot_evaluation``;
    - ``report.html``: what was run, notes (SD not SE, fold caps, the .632 estimates, the test
      split), per measure the figure, mean ± SD and the comparisons (the first open), every
      cell, the settings in words. It loads no external file, script or style sheet.

    Parameters
    ----------
    ds : xarray.Dataset
        Results of ``soak_dask.evaluate``.
    out : path
        Directory to write, as for ``soak_dask.results.report.write_report``.
    measures : str or iterable of str, optional
        Default: see ``soak_dask.results.stats.validate_evaluation`` (the run's measures and
        their bootstrap .632 estimates).
    overwrite : bool, default False
        Write into a non-empty directory that is not a previous report.
    flag : str, default "overwrite=True"
        How messages name the `overwrite` option.

    Returns
    -------
    pathlib.Path
        Path of ``report.html``.
    """
    names = validate_evaluation(ds, measures)  # before anything is deleted
    od = prepare_report_dir(out, overwrite, flag, ds.attrs.get("source"))
    return write_parts(od, evaluation_parts(ds, od, names))


def evaluation_parts(ds: xr.Dataset, out: Claims, names: list[str]) -> PageParts:
    """The page of ``evaluate``'s results for the measures ``names`` (validated), its tables
    and figures written into ``out``."""
    means, folds, tests = evaluation_summary(ds, names), by_fold(ds, names), comparisons(ds, names)
    tables = {"summary": means, "folds": folds, "compare": tests, "timings": timings(ds)}
    choices = nesting_choices(ds)
    if not choices.empty:
        tables["choices"] = choices
    for name, frame in tables.items():
        write_tables(out, name, frame)
    sections = [
        _measure_section(
            out, ds, m, means[means["measure"] == m], tests[tests["measure"] == m], i == 0
        )
        for i, m in enumerate(names)
    ]
    files = [f"{t}.{ext}" for t in tables for ext in ("csv", "md")]
    files += [f"evaluation_{m}.{ext}" for m in names for ext in ("png", "svg")]
    end = _choices_html(choices) + f'<h2 id="folds">Every cell</h2>\n{_folds_html(folds)}'
    return _parts(ds, sections, names, files, end)
