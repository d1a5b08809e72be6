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
import itertools
import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from ..io.outdir import OutputDir
from ..tables.table import coordinates_warning
from .comparisons import COMPARE_COLUMNS, compare
from .plot import format_pvalue, measure_label, plot_evaluation
from .report import (
    _code,
    _decimals,
    _figure_html,
    _fixed,
    _html_table,
    _json_attr,
    _listed,
    _names,
    _settings_value,
    _write_figure,
    _write_tables,
    html_page,
    prepare_report_dir,
)
from .stats import (
    by_fold,
    evaluation_summary,
    nesting_lines,
    prior_correction_text,
    timings,
    validate_evaluation,
)

__all__ = ["comparisons", "write_evaluation_report"]

#: Columns of `comparisons`: those of ``compare`` (its ``t`` and ``p`` the plain paired test),
#: with the corrected resampled t-test's ``t_corrected`` and ``p_corrected`` before ``reason``.
COMPARISON_COLUMNS: list[str] = [
    *COMPARE_COLUMNS[:3],
    *COMPARE_COLUMNS[4:11],
    "t",
    "df",
    "p",
    "test_train_ratio",
    "t_corrected",
    "p_corrected",
    "reason",
]
# The per-fold table of the page stops here (leave-one-out has a row per row of the table);
# folds.csv has them all.
_MAX_FOLD_ROWS = 500
# Attrs that evaluate() writes, shown in words by _settings_rows; any other is listed as it is.
_KNOWN_ATTRS = frozenset(
    "title design task source label subset group fold features excluded_coordinates outer "
    "outer_folds outer_repeats train_ratio test_split seed measures classes learners n_fits "
    "n_distinct_train_sets versions models prior_correction group_assignment".split()
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
<li><b>Learners compared</b>: a two-sided paired t-test of the differences between two
learners over the cells both scored (n&minus;1 degrees of freedom). For error-like measures a
negative difference means the first learner is better; for accuracy, AUC and R&sup2; a positive
one.</li>
<li>The cells are not independent (their train sets overlap), so the plain test rejects too
often. The <b>corrected</b> p-value (Nadeau and Bengio 2003) inflates the variance of the mean
difference by n_test/n_train; prefer it when the two disagree.</li>
<li>p=NA means the test is undefined, e.g. fewer than two cells or identical differences in
every cell (the <code>reason</code> column of <code>compare.csv</code> says why).</li>
</ul>
"""


def comparisons(ds: xr.Dataset, measures: str | Iterable[str] | None = None) -> pd.DataFrame:
    """Every pair of learners (in the results' order) on every measure: ``compare``'s paired
    t-test, plus the corrected resampled t-test's ``t_corrected`` and ``p_corrected``.

    Parameters
    ----------
    ds : xarray.Dataset
        Results of ``evaluate()``.
    measures : str or iterable of str, optional
        Default: see ``soak_dask.results.stats.validate_evaluation``.

    Returns
    -------
    pandas.DataFrame
        `COMPARISON_COLUMNS`, one row per measure and pair, measure by measure. The corrected
        columns are NaN without ``n_train`` and ``n_test``; no rows with a single learner.
    """
    names = validate_evaluation(ds, measures)
    learners = [str(v) for v in ds["learner"].values]
    counted = {"n_train", "n_test"} <= set(ds.data_vars)
    frames = []
    for a, b in itertools.combinations(learners, 2):
        plain = compare(ds, a, b, names, "paired").rename(columns={"statistic": "t"})
        fixed = compare(ds, a, b, names, "corrected") if counted else None
        plain["t_corrected"] = fixed["statistic"] if fixed is not None else np.nan
        plain["p_corrected"] = fixed["p"] if fixed is not None else np.nan
        frames.append(plain[COMPARISON_COLUMNS])
    if not frames:
        return pd.DataFrame(columns=COMPARISON_COLUMNS)
    table = pd.concat(frames, ignore_index=True)
    order = table["measure"].map(names.index)
    return table.iloc[np.argsort(order.to_numpy(), kind="stable")].reset_index(drop=True)


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
    }.get(str(outer), f"outer={html.escape(str(outer))}")
    if outer == "subsampling" and a.get("train_ratio") not in (None, ""):
        text += f", {_share(float(a['train_ratio']))} of the rows to train"
    if a.get("fold"):
        text += f", folds from column {_code(a['fold'])}"
    elif a.get("group"):
        text += f", whole groups of <b>{html.escape(str(a['group']))}</b> kept together"
    elif a.get("task") == "classification" and outer in ("cv", "repeated_cv", "subsampling"):
        text += ", stratified by class"
    return text


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
        what += f" in {_code(Path(str(a['source'])).name or a['source'])}"
    split = _test_split(ds)
    learners = ", ".join(html.escape(str(v)) for v in ds["learner"].values)
    return f"{what} by {_design(ds)}{'; ' + split if split else ''}. Learners: {learners}."


def _notes(ds: xr.Dataset) -> list[str]:
    """What the reader must know before reading the numbers."""
    a = ds.attrs
    notes = [_SD_NOT_SE]
    if a.get("task") == "classification":
        first = _names(a.get("measures"))[:1]
        headline = f" The first measure shown is {_code(first[0])}." if first else ""
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
    left_out = _names(a.get("excluded_coordinates"))
    if left_out:
        notes.append(f"<b>Coordinates</b>: {html.escape(coordinates_warning(left_out))}.")
    # Nesting: the optimism of nested=False first, then choices per fold and the timings.
    for line in nesting_lines(ds):
        head, _, rest = line.strip().partition(": ")
        notes.append(f"<b>{html.escape(head)}</b>: {html.escape(rest)}")
    return notes


def _settings_rows(ds: xr.Dataset) -> list[tuple[str, str]]:
    """(name, HTML) of the run's settings in words; then attrs this page does not know."""
    a = ds.attrs
    rows = []
    if a.get("source"):
        rows.append(("Data", _code(a["source"])))
    if a.get("label"):
        classes = _names(a.get("classes"))
        task = html.escape(str(a.get("task", ""))) + (f": {_listed(classes)}" if classes else "")
        rows.append(("Label", f"{_code(a['label'])} ({task})"))
    group = f"{_code(a['group'])}: a group's rows stay together" if a.get("group") else "none"
    rows += [("Groups", group), ("Outer design", _design(ds))]
    rows.append(("Test split", _test_split(ds) or "none"))
    if "seed" in a:
        rows.append(("Seed", f'{a["seed"]} <span class="muted">(splits, learners)</span>'))
    features = _names(a.get("features"))
    if features:
        rows.append(("Features", f"{len(features)}: {_listed(features)}"))
    left_out = _names(a.get("excluded_coordinates"))
    if left_out:
        rows.append(("Coordinates left out", _listed(left_out)))
    for title, key in (("Learners", "learners"), ("Final models", "models")):
        items = "".join(
            f"<li><b>{html.escape(name)}</b>: {_code(' '.join(str(v).split()))}</li>"
            for name, v in _json_attr(a.get(key)).items()
        )
        if items:
            rows.append((title, f"<ul>{items}</ul>"))
    if _names(a.get("measures")):
        rows.append(("Measures", html.escape(", ".join(_names(a["measures"])))))
    if a.get("task") == "classification":
        rows.append(("Prediction", html.escape(prior_correction_text(a))))
    if "n_fits" in a:
        distinct = a.get("n_distinct_train_sets", "?")
        rows.append(("Fits", f"{a['n_fits']}: {distinct} train sets × {ds.sizes['learner']}"))
    versions = _json_attr(a.get("versions"))
    if versions:
        rows.append(("Versions", html.escape(", ".join(f"{k} {v}" for k, v in versions.items()))))
    return rows + [(str(k), _settings_value(v)) for k, v in a.items() if k not in _KNOWN_ATTRS]


def _settings_html(ds: xr.Dataset) -> str:
    body = "".join(
        f"<tr><th>{html.escape(k)}</th><td>{v}</td></tr>\n" for k, v in _settings_rows(ds)
    )
    return f'<table class="settings">\n{body}</table>'


# --- one measure ------------------------------------------------------------------------------


def _table(head: list[str], rows: list[list[str]], text_columns: int) -> str:
    """An HTML table of escaped cells, the first `text_columns` left-aligned."""

    def cell(tag: str, i: int, value: str) -> str:
        css = ' class="text"' if i < text_columns else ""
        return f"<{tag}{css}>{html.escape(value)}</{tag}>"

    lines = ["<tr>" + "".join(cell("th", i, h) for i, h in enumerate(head)) + "</tr>"]
    lines += ["<tr>" + "".join(cell("td", i, v) for i, v in enumerate(r)) + "</tr>" for r in rows]
    body = "\n".join(lines)
    return f'<div class="scroll"><table class="results">\n{body}\n</table></div>\n'


def _means_table(means: pd.DataFrame) -> str:
    """Per learner: cells, mean ± SD, min–max and the test split's score [95 % interval]."""
    digits = _decimals(pd.concat([means["mean"], means["test_estimate"]]))
    split = bool(means["test_estimate"].notna().any())
    head = ["Learner", "Cells", "Mean ± SD", "Min – max"]
    head += ["Test split [95 % interval]"] if split else []
    rows = []
    for r in means.itertuples():
        sd = f" ± {_fixed(r.sd, digits)}" if np.isfinite(r.sd) else ""
        cells = [str(r.learner), str(r.n), _fixed(r.mean, digits) + sd]
        cells.append(f"{_fixed(r.min, digits)} – {_fixed(r.max, digits)}" if r.n else "")
        if split:
            interval = f" [{_fixed(r.test_low, digits)}, {_fixed(r.test_high, digits)}]"
            scored = np.isfinite(r.test_estimate)
            cells.append(_fixed(r.test_estimate, digits) + interval if scored else "")
        rows.append(cells)
    return _table(head, rows, 1)


def _compare_table(tests: pd.DataFrame, digits: int) -> str:
    head = ["Learners", "Cells", "Mean difference ± SD", "p (paired t-test)", "p (corrected)"]
    rows = [
        [
            f"{r.learner_a} − {r.learner_b}",
            str(r.n),
            _fixed(r.mean_diff, digits, sign=True)
            + (f" ± {_fixed(r.sd_diff, digits)}" if np.isfinite(r.sd_diff) else ""),
            format_pvalue(r.p).removeprefix("p="),
            format_pvalue(r.p_corrected).removeprefix("p="),
        ]
        for r in tests.itertuples()
    ]
    return _table(head, rows, 1)


def _measure_section(
    out: OutputDir,
    ds: xr.Dataset,
    measure: str,
    means: pd.DataFrame,
    tests: pd.DataFrame,
    first: bool,
) -> str:
    """The figure and tables of one measure: open for the first, folded for the others."""
    label = html.escape(measure_label(ds, measure))
    figure = _write_figure(out, plot_evaluation(ds, measure), f"evaluation_{measure}")
    split = (
        " and the test split's score with its 95 % interval (square)"
        if means["test_estimate"].notna().any()
        else ""
    )
    caption = (
        f"{label} of each learner: every resampling cell (hollow dots), their mean &plusmn; SD "
        f"(diamond and bar, stopped at the measure's range){split}."
    )
    body = _figure_html(figure, f"learners evaluated on {measure}", caption)
    body += "<h3>Mean &plusmn; SD over the cells</h3>\n" + _means_table(means)
    if len(tests):
        digits = _decimals(means["mean"])
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
        f"{_html_table(shown, 'folds')}</div></details>\n"
    )


def _page(ds: xr.Dataset, sections: list[str], measures: list[str], files: list[str], folds: str):
    title = html.escape(str(ds.attrs.get("title", "soak_dask evaluation")))
    body = "".join(sections) + f'<h2 id="folds">Every cell</h2>\n{folds}'
    return html_page(
        title,
        _lede(ds),
        _notes(ds),
        [*measures, "folds"],
        _EXPLANATION,
        body,
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
    - ``compare.csv`` / ``.md``: `comparisons`, every pair of learners per measure;
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
    out = prepare_report_dir(out, overwrite, flag, ds.attrs.get("source"))
    means, folds, tests = evaluation_summary(ds, names), by_fold(ds, names), comparisons(ds, names)
    tables = {"summary": means, "folds": folds, "compare": tests, "timings": timings(ds)}
    for name, frame in tables.items():
        _write_tables(out, name, frame)
    sections = [
        _measure_section(
            out, ds, m, means[means["measure"] == m], tests[tests["measure"] == m], i == 0
        )
        for i, m in enumerate(names)
    ]
    files = [f"{t}.{ext}" for t in tables for ext in ("csv", "md")]
    files += [f"evaluation_{m}.{ext}" for m in names for ext in ("png", "svg")]
    page = out.claim("report.html")
    page.write_text(_page(ds, sections, names, files, _folds_html(folds)), encoding="utf-8")
    out.finish()
    return page
