"""Write a SOAK report: tables (CSV, Markdown), figures (PNG, SVG) and one self-contained HTML.

``write_report`` turns a results Dataset into a directory a colleague can open without
Python: ``report.html`` embeds every figure (base64 PNG) and table, loads nothing from the
network (its Content-Security-Policy forbids it), and explains how to read same/other/all and
the p-values. The CSV files hold the full-precision tables of ``soak_dask.results.stats.pvalues``
and ``soak_dask.results.stats.summary``.
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

from ..tables.checks import UNEQUAL_FOLDS, unequal_folds_warning
from ..tables.roles import coordinates_warning
from ..tables.spatial_record import made_from_coordinates
from .applicability import aoa_section
from .evaluation_report import evaluation_parts, write_evaluation_report
from .html import (
    TABLE_ATTRS,
    Claims,
    PageParts,
    attr_names,
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
from .kinds import is_evaluation, no_tests_reason, validate_evaluation, validate_results
from .pages import write_parts
from .paired_tests import PVALUE_COLUMNS, pvalues
from .plot import ORDERS, check_choice, format_pvalue, measure_label, plot_learners, plot_soak
from .summaries import summary

__all__ = ["group_assignment_text", "report_parts", "soak_parts", "write_report"]

# Columns of the HTML p-value table; the CSV keeps every column of pvalues().
_HTML_PVALUE_COLUMNS = [
    "learner",
    "test_subset",
    "compare",
    "n",
    "reference_mean",
    "compare_mean",
    "mean_diff",
    "ci_low",
    "ci_high",
    "weighted_diff",
    "sign_agrees",
    "statistic",
    "df",
    "p",
    "reason",
]
_EXPLANATION = """
<p>Each row of the data belongs to a <b>subset</b> (region, year, image, ...) and a
<b>fold</b> 1..K. For a <b>test subset</b> and a fold, every learner is trained on three train
sets, all outside that fold, and scored on the rows of the test subset in that fold:</p>
<ul>
<li><b>same</b>: the rows of the test subset itself;</li>
<li><b>other</b>: the rows of all other subsets;</li>
<li><b>all</b>: the rows of every subset (same and other pooled).</li>
</ul>
<p>In the figures, hollow dots are the scores of the K folds, the diamond and bar their mean
&plusmn; SD (the bar stops at the measure's range, e.g. 0 % error). In the per-learner figures,
each panel is one test subset and each row one train type; the text under the <b>other</b> and
<b>all</b> rows gives the mean difference to <b>same</b> over folds and the p-value of a
two-sided paired t-test over the folds (K&minus;1 degrees of freedom).</p>
<ul>
<li><b>other&minus;same</b> near 0 with a large p: a model trained on the other subsets predicts
this subset as well as one trained on it: the subsets share their patterns. A difference far
from 0 with a small p means the patterns differ (for error and log loss a positive difference is
worse; for accuracy and AUC a negative one).</li>
<li><b>all&minus;same</b> better than 0 with a small p (below 0 for error): pooling the subsets
helps, more data beats specific data; worse than 0: the other subsets' rows hurt.</li>
<li>p=NA means the test is undefined, e.g. when every fold gives the same difference (the
<code>reason</code> column of the t-test table says why). With few folds, p-values are rough:
read them with the dots.</li>
<li>The <b>row-weighted mean</b> weighs each fold by its test rows: for error, accuracy and log
loss it is the score of all test rows pooled. When groups make folds of very different sizes,
the plain mean over folds counts a row of a small fold more: read both.</li>
</ul>
"""
_PLAIN_EXPLANATION = """
<p>These results hold one subset, so SOAK is plain K-fold cross-validation: each learner is
trained on K&minus;1 folds and scored on the remaining one, K times. There is no <b>other</b> or
<b>all</b> train set to compare with <b>same</b>, hence no p-values: the figures and tables give
each learner's mean &plusmn; SD over the folds (hollow dots: the folds; the bar stops at the
measure's range) and the <b>row-weighted mean</b>, each fold weighted by its test rows (for
error, accuracy and log loss, the score of all rows pooled).</p>
"""


# --- settings ---------------------------------------------------------------------------------


def _n_rows(ds: xr.Dataset) -> int | None:
    """Rows of the table: every row is tested once per learner and train type."""
    if "n_test" not in ds.data_vars:
        return None
    return int(_block_rows(ds).sum())


def _block_rows(ds: xr.Dataset) -> pd.Series:
    """Test rows per (test subset, fold): the same for every learner and train type."""
    rows = ds["n_test"].max(["learner", "train_type"]).clip(min=0)
    return rows.to_series()


# Attrs that soak() writes, shown in words by _settings_html (title and design are the page's;
# onepass changes no score); any other attr is listed as it is.
_KNOWN_ATTRS = TABLE_ATTRS | frozenset(
    "title design task source label subset group fold features excluded_coordinates seed n_folds "
    "train_types measures stratify classes learners n_fits n_distinct_train_sets sizes ratio "
    "size_seeds versions prior_correction calibration inner inner_folds inner_repeats balance "
    "group_assignment notes".split()
)


def _settings_html(ds: xr.Dataset) -> str:
    """The run's settings in words, those that apply; then the attrs this page does not know."""
    return settings_table(_data_rows(ds) + _fit_rows(ds), ds.attrs, _KNOWN_ATTRS)


def _data_rows(ds: xr.Dataset) -> list[tuple[str, str]]:
    """Settings of the data: source, label, subsets, groups, folds, seed, features."""
    a = ds.attrs
    rows = []
    if a.get("source"):
        n_rows = _n_rows(ds)
        rows.append(("Data", code(a["source"]) + (f", {n_rows:,} rows" if n_rows else "")))
    if a.get("label"):
        classes = attr_names(a.get("classes"))
        task = html.escape(str(a.get("task", ""))) + (f": {listed(classes)}" if classes else "")
        rows.append(("Label", f"{code(a['label'])} ({task})"))
    if "subset" in a:
        subsets = listed(str(s) for s in ds["test_subset"].values)
        text = f"{code(a['subset'])}: {subsets}" if a["subset"] else "none: plain K-fold CV"
        rows.append(("Subsets", text + made_from_coordinates(a, a["subset"])))
    if "group" in a:
        text = f"{code(a['group'])}: the rows of a group share one fold" if a["group"] else "none"
        rows.append(("Groups", text + made_from_coordinates(a, a["group"])))
    rows.append(("Folds", _folds_text(ds)))
    if "seed" in a:
        rows.append(("Seed", f'{a["seed"]} <span class="muted">(folds, learners)</span>'))
    features = attr_names(a.get("features"))
    if features:
        rows.append(("Features", f"{len(features)}: {listed(features)}"))
    left_out = attr_names(a.get("excluded_coordinates"))
    if left_out:
        rows.append(("Coordinates left out", listed(left_out)))
    return rows + table_rows(a)


def _fit_rows(ds: xr.Dataset) -> list[tuple[str, str]]:
    """Settings of the fits: learners, train types, measures, counts, options in use, versions."""
    a = ds.attrs
    rows = []
    rows = estimators_row("Learners", a.get("learners"))
    # The train types that exist (one subset has no other and all, whatever was asked).
    rows.append(("Train types", html.escape(", ".join(map(str, ds["train_type"].values)))))
    rows += measures_row(a)
    if "n_fits" in a:
        distinct = a.get("n_distinct_train_sets", "?")
        learners_n = ds.sizes["learner"]
        rows.append(("Fits", f"{a['n_fits']}: {distinct} train sets × {learners_n} learners"))
    if int(a.get("sizes", -1)) >= 0:
        sizes = f"sizes={a['sizes']}, ratio={a.get('ratio')}, {a.get('size_seeds')} samples each"
        rows.append(("Down-sampled train sizes", html.escape(sizes)))
    return rows + fitting_rows(a) + procedure_rows(ds) + versions_row(a)


def _folds_text(ds: xr.Dataset) -> str:
    a = ds.attrs
    k = a.get("n_folds", ds.sizes["fold"])
    if a.get("fold"):
        return f"K = {k}, from column <code>{html.escape(str(a['fold']))}</code>"
    if "stratify" not in a:
        return f"K = {k}"
    by = ["subset" if a.get("subset") else "", "label" if a.get("task") == "classification" else ""]
    by = " × ".join(b for b in by if b) or "subset"
    how = f", balanced within each {by}" if int(a["stratify"]) else ""
    if a.get("group"):
        how += "; " + html.escape(group_assignment_text(a.get("group_assignment"), a["group"]))
    return f"K = {k}, assigned by SOAK{how}"


def group_assignment_text(assignment: Any, group: str) -> str:
    """How a run dealt whole groups to folds, in words (runs before the option: by rows).

    >>> group_assignment_text("mlr3resampling", "polygon")
    "whole groups of 'polygon', the same number per fold (mlr3resampling's rule)"
    """
    if assignment == "mlr3resampling":
        return f"whole groups of {group!r}, the same number per fold (mlr3resampling's rule)"
    return f"whole groups of {group!r}, balancing rows (largest group first onto the emptiest fold)"


# --- results of one measure -------------------------------------------------------------------


def _rows_text(low: Any, high: Any) -> tuple[str, bool]:
    """Test rows per fold as text ("293", "179–1,535"), and whether they are uneven."""
    if not np.isfinite(low):
        return "", False
    low, high = int(low), int(high)
    text = f"{low:,}" if low == high else f"{low:,}–{high:,}"
    return text, high > UNEQUAL_FOLDS * low


def _css(name: str) -> str:
    """A class attribute, or nothing for no class."""
    return f' class="{name}"' if name else ""


def _results_table(means: pd.DataFrame, tests: pd.DataFrame, plain: bool) -> str:
    """One row per learner × test subset × train type: folds, test rows, mean ± SD, the
    row-weighted mean and, for other and all, the difference to same over folds and pooled
    over rows (marked where folds are uneven and the two disagree in sign) and the p-value of
    the paired t-test (of the fold mean)."""
    head = ["Learner", "Folds", "Test rows per fold", "Mean ± SD", "Row-weighted mean"]
    if not plain:
        head[1:1] = ["Test subset", "Train type"]
        head += ["Difference to same", "Row-weighted difference", "p (paired t-test)"]
    digits = decimals(means["mean"])
    by_test = {(str(r.learner), str(r.test_subset), r.compare): r for r in tests.itertuples()}
    text = {"Learner", "Test subset", "Train type"}
    header = "".join(f"<th{_css('text' if h in text else '')}>{h}</th>" for h in head)
    lines = [f"<tr>{header}</tr>"]
    for row in means.itertuples():
        rows, uneven = _rows_text(row.n_test_min, row.n_test_max)
        sd = f" ± {fixed(row.sd, digits)}" if np.isfinite(row.sd) else ""
        cells = [
            (str(row.learner), "text"),
            (str(row.n), ""),
            (rows, "uneven" if uneven else ""),
            (fixed(row.mean, digits) + sd, ""),
            (fixed(row.weighted_mean, digits), ""),
        ]
        if not plain:
            cells[1:1] = [(str(row.test_subset), "text"), (str(row.train_type), "text")]
            test = by_test.get((str(row.learner), str(row.test_subset), row.train_type))
            if test is None:
                cells += [("", ""), ("", ""), ("", "")]
            else:
                p = format_pvalue(test.p).removeprefix("p=")
                weighted = fixed(test.weighted_diff, digits, sign=True)
                differs = uneven and test.sign_agrees is not pd.NA and not test.sign_agrees
                flag = (" (sign differs)", "uneven") if differs else ("", "")
                cells += [
                    (fixed(test.mean_diff, digits, sign=True), ""),
                    (weighted + flag[0], flag[1]),
                    (p, ""),
                ]
        first = ' class="same"' if not plain and row.train_type == "same" else ""
        tds = "".join(f"<td{_css(css)}>{html.escape(text)}</td>" for text, css in cells)
        lines.append(f"<tr{first}>{tds}</tr>")
    body = "\n".join(lines)
    return f'<div class="scroll"><table class="results">\n{body}\n</table></div>'


def _measure_section(
    out: Claims,
    ds: xr.Dataset,
    measure: str,
    tests: pd.DataFrame,
    means: pd.DataFrame,
    order: str,
    first: bool,
) -> str:
    """The figures and tables of one measure: open for the first, folded for the others."""
    label = html.escape(measure_label(ds, measure))
    plain = bool(no_tests_reason(ds))
    k = ds.sizes["fold"]
    learners_png = write_figure(out, plot_learners(ds, measure), f"soak_{measure}_learners")
    figures = figure_html(
        learners_png,
        f"learners compared on {measure}",
        f"Learners compared on {label}: mean &plusmn; SD over the {k} folds (bar, stopped at the "
        "measure's range), each fold (hollow dots) and the pooled estimate (purple tick: every "
        "test row once)" + ("." if plain else ", per test subset (panel) and train type (colour)."),
    )
    if not plain:
        soak_png = write_figure(out, plot_soak(ds, measure, order=order), f"soak_{measure}")
        figures += figure_html(
            soak_png,
            f"SOAK figure of {measure}",
            f"Same, other and all for each learner: one panel per test subset; the purple tick "
            "is the pooled estimate, apart from the mean where small folds sway it. Under the "
            f"other and all rows: the mean difference to same over the {k} folds and the "
            "paired t-test p.",
        )
    tables = f"<h3>Mean &plusmn; SD over folds{'' if plain else ', and tests against same'}</h3>\n"
    tables += _results_table(means, tests, plain)
    if not plain:
        tables += (
            "<details><summary>Every column of the paired t-tests (also in "
            '<code>pvalues.csv</code>)</summary>\n<div class="scroll">'
            f"{html_table(tests[_HTML_PVALUE_COLUMNS], 'pvalues')}</div></details>\n"
        )
    return (
        f'<details class="measure" id="{html.escape(measure)}"{" open" if first else ""}>'
        f"<summary>{label} (<code>{html.escape(measure)}</code>)</summary>\n"
        f"{figures}{tables}</details>\n"
    )


def _notes(ds: xr.Dataset) -> list[str]:
    """What the reader must know before reading the numbers: plain CV, uneven folds,
    coordinates left out."""
    notes = []
    reason = no_tests_reason(ds)
    if reason:
        notes.append(
            f"<b>No p-values</b>: {html.escape(reason)}. Each learner's mean &plusmn; SD over "
            "the folds is shown instead."
        )
    if "n_test" in ds.data_vars:
        uneven = unequal_folds_warning(_block_rows(ds))
        if uneven:
            notes.append(
                f"<b>Uneven folds</b>: {html.escape(uneven)}. The tables show the difference to "
                "same both ways: over folds (what the paired t-test tests) and pooled over the "
                "test rows; <i>sign differs</i> marks a comparison where the two disagree on "
                "which train type is better."
            )
    left_out = attr_names(ds.attrs.get("excluded_coordinates"))
    if left_out:
        notes.append(f"<b>Coordinates</b>: {html.escape(coordinates_warning(left_out))}.")
    return notes


def _lede(ds: xr.Dataset) -> str:
    """One sentence of what was run, from the attrs that say it."""
    a = ds.attrs
    what = f"Predicting <b>{html.escape(str(a['label']))}</b>" if a.get("label") else "Results"
    if a.get("source"):
        what += f" in {code(Path(str(a['source'])).name or a['source'])}"
    n = _n_rows(ds)
    if n:
        what += f" ({n:,} rows)"
    if a.get("subset"):
        what += (
            f" across {ds.sizes['test_subset']} subsets of <b>{html.escape(str(a['subset']))}</b>"
        )
    elif no_tests_reason(ds) and ds.sizes["test_subset"] == 1:
        what += " by plain K-fold CV (one subset)"
    if a.get("group"):
        what += f", groups of <b>{html.escape(str(a['group']))}</b> kept whole"
    learners = ", ".join(html.escape(str(v)) for v in ds["learner"].values)
    return f"{what}: {ds.sizes['fold']} folds, learners {learners}."


def _parts(ds: xr.Dataset, sections: list[str], measures: list[str], files: list[str]) -> PageParts:
    title = html.escape(str(ds.attrs.get("title", "SOAK: Same/Other/All K-fold cross-validation")))
    explanation = _PLAIN_EXPLANATION if no_tests_reason(ds) else _EXPLANATION
    return PageParts(
        title,
        _lede(ds),
        _notes(ds),
        measures,
        explanation,
        "".join(sections),
        _settings_html(ds),
        files,
    )


def write_report(
    ds: xr.Dataset,
    out: str | os.PathLike,
    measures: str | Iterable[str] | None = None,
    *,
    order: str = "name",
    overwrite: bool = False,
    flag: str = "overwrite=True",
) -> Path:
    """Write tables, figures and a self-contained HTML page of SOAK results into `out`.

    Files written:

    - ``pvalues.csv`` / ``pvalues.md``: ``soak_dask.results.stats.pvalues`` of the measures (not for
      plain K-fold CV, which has nothing to test);
    - ``summary.csv`` / ``summary.md``: ``soak_dask.results.stats.summary``;
    - ``soak_<measure>_learners.png`` / ``.svg``: ``soak_dask.results.plot.plot_learners`` per
      measure;
    - ``soak_<measure>.png`` / ``.svg``: ``soak_dask.results.plot.plot_soak`` per measure (not for
      plain K-fold CV);
    - ``report.html``: one page with the figures embedded (base64 PNG): what was run, notes
      (uneven test folds, coordinates left out, no p-values), per measure the figures and a
      table of mean ± SD, row-weighted mean, test rows per fold and tests against same (the
      first measure open, the others folded), the settings in words and how to read them. It
      loads no external file, script or style sheet.

    Parameters
    ----------
    ds : xarray.Dataset
        SOAK results, or ``evaluate`` results (see below).
    out : path
        Directory to write; created if missing. A non-empty directory must hold a previous
        report (whose report files are then replaced) unless `overwrite` is True.
    measures : str or iterable of str, optional
        Default: ``ds.attrs["measures"]`` (see ``soak_dask.results.stats.validate_results``).
    order : {"name", "effect"}, default "name"
        Panel order of the figures (see ``soak_dask.results.plot.plot_soak``).
    overwrite : bool, default False
        Write into a non-empty directory that is not a previous report (files of the same
        names are replaced, others kept).
    flag : str, default "overwrite=True"
        How messages name the `overwrite` option (``--overwrite`` for ``soak report``).

    Returns
    -------
    pathlib.Path
        Path of ``report.html``.

    Raises
    ------
    FileExistsError
        If `out` is a file, or a non-empty directory without a previous report and
        `overwrite` is False.
    ValueError
        If `ds` is not a results Dataset or lacks a requested measure.

    Results of ``soak_dask.evaluate`` get their own page and files (`order` does not apply):
    see ``soak_dask.results.evaluation_report.write_evaluation_report``.

    Examples
    --------
    >>> page = write_report(results, "soak_report", measures=["error", "auc"])  # doctest: +SKIP
    """
    if is_evaluation(ds):
        return write_evaluation_report(ds, out, measures, overwrite=overwrite, flag=flag)
    # Validate everything, and check `out`, before a previous report's files are deleted.
    names = validate_results(ds, measures)
    check_choice("order", order, ORDERS)
    od = prepare_report_dir(out, overwrite, flag, ds.attrs.get("source"))
    return write_parts(od, soak_parts(ds, od, names, order))


def report_parts(
    ds: xr.Dataset, out: Claims, measures: str | Iterable[str] | None = None
) -> PageParts:
    """The parts of ``write_report``'s page of ``ds`` (SOAK's or evaluate's results, measures
    as there), its tables and figures written into ``out``: one section of a page of several
    outputs (``soak_dask.results.report_stores``)."""
    if is_evaluation(ds):
        return evaluation_parts(ds, out, validate_evaluation(ds, measures))
    return soak_parts(ds, out, validate_results(ds, measures), "name")


def soak_parts(ds: xr.Dataset, out: Claims, names: list[str], order: str) -> PageParts:
    """SOAK's page of the measures ``names`` (validated), its tables and figures written into
    ``out``."""
    plain = bool(no_tests_reason(ds))
    tests = pd.DataFrame(columns=PVALUE_COLUMNS) if plain else pvalues(ds, names)
    means = summary(ds, names)
    files = [] if plain else ["pvalues.csv", "pvalues.md"]
    if not plain:
        write_tables(out, "pvalues", tests)
    write_tables(out, "summary", means)
    files += ["summary.csv", "summary.md"]
    sections = []
    for i, m in enumerate(names):
        sections.append(
            _measure_section(
                out,
                ds,
                m,
                tests[tests["measure"] == m],
                means[means["measure"] == m],
                order,
                first=i == 0,
            )
        )
        figures = [f"soak_{m}_learners"] if plain else [f"soak_{m}", f"soak_{m}_learners"]
        files += [f"{name}.{ext}" for name in figures for ext in ("png", "svg")]
    sections.append(aoa_section(ds, names[0]))
    return _parts(ds, sections, names, files)
