"""Write a SOAK report: tables (CSV, Markdown), figures (PNG, SVG) and one self-contained HTML.

``write_report`` turns a results Dataset into a directory a colleague can open without
Python: ``report.html`` embeds every figure (base64 PNG) and table, loads nothing from the
network (its Content-Security-Policy forbids it), and explains how to read same/other/all and
the p-values. The CSV files hold the full-precision tables of ``soak_dask.stats.pvalues``
and ``soak_dask.stats.summary``.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import xarray as xr

from .plot import ORDERS, check_choice, plot_soak
from .results import MEASURE_NAMES
from .stats import RESULT_DIMS, pvalues, summary, validate_results

__all__ = ["markdown_table", "write_report"]

#: Marks a directory's report.html as ours, so a later report may replace that directory.
GENERATOR = "soak_dask.report"
#: The page may load nothing but its own data: images and inline style: no script, no URL.
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"
_TABLE_FILES = ("pvalues.csv", "pvalues.md", "summary.csv", "summary.md")
# Files a previous report may have left; only these are deleted when writing over it.
_REPORT_GLOBS = ("report.html", *_TABLE_FILES, "soak_*.png", "soak_*.svg")
_PNG_DPI = 100
# Columns of the HTML p-value table; the CSV keeps every column of pvalues().
_HTML_PVALUE_COLUMNS = [
    "learner",
    "test_subset",
    "compare",
    "n",
    "same_mean",
    "compare_mean",
    "mean_diff",
    "p_paired",
    "reason",
]
_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 72em; padding: 0 1em;
       color: #222; line-height: 1.45; }
h1 { font-size: 1.6em; } h2 { margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ddd; padding: 0.2em 0.5em; text-align: right; vertical-align: top; }
th { background: #f3f3f3; } td:first-child, th:first-child { text-align: left; }
.settings td, .pvalues td:nth-child(-n+3), .pvalues td:last-child,
.means td:nth-child(-n+2) { text-align: left; }
.figure img { max-width: 100%; height: auto; }
code { background: #f3f3f3; padding: 0 0.2em; }
"""
_EXPLANATION = """
<p>Each row of the data belongs to a <b>subset</b> (region, year, image, ...) and a
<b>fold</b> 1..K. For a <b>test subset</b> and a fold, every learner is trained on three train
sets, all outside that fold, and scored on the rows of the test subset in that fold:</p>
<ul>
<li><b>same</b>: the rows of the test subset itself;</li>
<li><b>other</b>: the rows of all other subsets;</li>
<li><b>all</b>: the rows of every subset (same and other pooled).</li>
</ul>
<p>In the figures, each panel is one test subset and each row one train type: hollow dots are
the scores of the K folds, the diamond and bar their mean &plusmn; SD. The text under the
<b>other</b> and <b>all</b> rows gives the mean difference to <b>same</b> over folds and the
p-value of a two-sided paired t-test over the folds (K&minus;1 degrees of freedom).</p>
<ul>
<li><b>other&minus;same</b> near 0 with a large p: a model trained on the other subsets predicts
this subset as well as one trained on it: the subsets share their patterns. A difference far
from 0 with a small p means the patterns differ (for error and log loss a positive difference is
worse; for accuracy and AUC a negative one).</li>
<li><b>all&minus;same</b> better than 0 with a small p (below 0 for error): pooling the subsets
helps, more data beats specific data; worse than 0: the other subsets' rows hurt.</li>
<li>p=NA means the test is undefined, e.g. when every fold gives the same difference (the
<code>reason</code> column says why). With few folds, p-values are rough: read them with the
dots.</li>
</ul>
"""


def markdown_table(frame: pd.DataFrame, digits: int = 4) -> str:
    """Format a frame as a GitHub-flavoured Markdown table (no third-party formatter).

    Parameters
    ----------
    frame : pandas.DataFrame
    digits : int, default 4
        Significant digits of floats; NaN becomes an empty cell.

    Returns
    -------
    str
        Header, alignment row (numbers right-aligned) and one line per row, newline-terminated.

    Examples
    --------
    >>> print(markdown_table(pd.DataFrame({"a": ["x|y"], "p": [0.012345]})), end="")
    | a | p |
    | :-- | --: |
    | x\\|y | 0.01235 |
    """
    numeric = [pd.api.types.is_numeric_dtype(dtype) for dtype in frame.dtypes]
    lines = [
        _markdown_row(map(str, frame.columns)),
        _markdown_row("--:" if num else ":--" for num in numeric),
    ]
    lines += [_markdown_row(_cell(v, digits) for v in row) for row in frame.itertuples(False)]
    return "\n".join(lines) + "\n"


def _markdown_row(cells: Iterable[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |"


def _cell(value: Any, digits: int) -> str:
    """Text of one table cell: floats to `digits` significant digits, NaN as empty."""
    if isinstance(value, float | np.floating):
        return "" if math.isnan(value) else f"{value:.{digits}g}"
    return str(value)


def _is_previous_report(out: Path) -> bool:
    """Whether `out` holds a report.html written by this module."""
    page = out / "report.html"
    if not page.is_file():
        return False
    with page.open(encoding="utf-8", errors="replace") as f:
        return f'<meta name="generator" content="{GENERATOR}">' in f.read(4096)


def _prepare_dir(out: Path, overwrite: bool) -> None:
    """Create `out`, or clear the files of a previous report in it; refuse anything else."""
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"out={str(out)!r} exists and is not a directory")
    if out.is_dir() and any(out.iterdir()):
        if _is_previous_report(out):
            # Drop the old report's own files, so figures of measures no longer asked for
            # do not linger; anything else in the directory is left alone.
            for pattern in _REPORT_GLOBS:
                for old in out.glob(pattern):
                    old.unlink()
        elif not overwrite:
            raise FileExistsError(
                f"out={str(out)!r} is a non-empty directory that does not hold a soak_dask "
                "report; choose an empty or new directory, or pass overwrite=True to write "
                "the report's files into it (other files are kept)"
            )
    out.mkdir(parents=True, exist_ok=True)


def _write_tables(out: Path, name: str, frame: pd.DataFrame) -> None:
    frame.to_csv(out / f"{name}.csv", index=False)
    (out / f"{name}.md").write_text(markdown_table(frame), encoding="utf-8")


def _write_figure(out: Path, ds: xr.Dataset, measure: str, order: str) -> bytes:
    """Save ``soak_<measure>.png`` and ``.svg``; return the PNG bytes for embedding."""
    fig = plot_soak(ds, measure, order=order)
    try:
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=_PNG_DPI)
        fig.savefig(out / f"soak_{measure}.svg", format="svg")
    finally:
        plt.close(fig)  # pyplot keeps every figure alive until closed
    png = buffer.getvalue()
    (out / f"soak_{measure}.png").write_bytes(png)
    return png


def _html_table(frame: pd.DataFrame, css_class: str) -> str:
    return frame.to_html(
        index=False,
        na_rep="",
        float_format=lambda v: f"{v:.4g}",
        border=0,
        classes=css_class,
        escape=True,
    )


def _settings_value(value: Any) -> str:
    """HTML of one attr: JSON objects (learners, versions) as a list, sequences joined."""
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            items = "".join(
                f"<li><code>{html.escape(str(k))}</code>: {html.escape(str(v))}</li>"
                for k, v in parsed.items()
            )
            return f"<ul>{items}</ul>"
        return html.escape(value)
    if isinstance(value, list | tuple | np.ndarray):
        return html.escape(", ".join(str(v) for v in value))
    return html.escape(str(value))


def _settings_html(ds: xr.Dataset) -> str:
    """Table of the results' sizes and every attr of the run."""
    sizes = ", ".join(f"{ds.sizes[dim]} {dim}" for dim in RESULT_DIMS)
    rows = [("size", html.escape(sizes))]
    rows += [(str(k), _settings_value(v)) for k, v in ds.attrs.items()]
    body = "".join(f"<tr><th>{html.escape(k)}</th><td>{v}</td></tr>\n" for k, v in rows)
    return f'<table class="settings">\n{body}</table>'


def _summary_wide(table: pd.DataFrame) -> pd.DataFrame:
    """Mean ± SD per learner × test subset, one column per train type."""
    text = table.assign(
        value=[
            "" if math.isnan(m) else (f"{m:.4g}" if math.isnan(s) else f"{m:.4g} ± {s:.3g}")
            for m, s in zip(table["mean"], table["sd"], strict=True)
        ]
    )
    order = list(dict.fromkeys(table["train_type"]))
    wide = text.pivot(index=["learner", "test_subset"], columns="train_type", values="value")
    return wide[order].reset_index().rename_axis(columns=None)


def _measure_section(
    measure: str, png: bytes, tests: pd.DataFrame, means: pd.DataFrame, ds: xr.Dataset
) -> str:
    label = ds[measure].attrs.get("long_name", MEASURE_NAMES.get(measure, measure))
    image = base64.b64encode(png).decode("ascii")
    return (
        f'<h2 id="{html.escape(measure)}">{html.escape(str(label))} '
        f"(<code>{html.escape(measure)}</code>)</h2>\n"
        f'<div class="figure"><img alt="SOAK figure of {html.escape(measure)}" '
        f'src="data:image/png;base64,{image}"></div>\n'
        f"<h3>Paired t-tests against same</h3>\n"
        f"{_html_table(tests[_HTML_PVALUE_COLUMNS], 'pvalues')}\n"
        f"<h3>Mean ± SD over folds</h3>\n{_html_table(_summary_wide(means), 'means')}\n"
    )


def _page(ds: xr.Dataset, sections: list[str], measures: list[str]) -> str:
    title = html.escape(str(ds.attrs.get("title", "SOAK: Same/Other/All K-fold cross-validation")))
    files = ", ".join(
        f"<code>{name}</code>"
        for name in _TABLE_FILES
        + tuple(f"soak_{m}.{ext}" for m in measures for ext in ("png", "svg"))
    )
    contents = " · ".join(f'<a href="#{html.escape(m)}">{html.escape(m)}</a>' for m in measures)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="generator" content="{GENERATOR}">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{_CSS}</style>
</head>
<body>
<h1>{title}</h1>
<p>Measures: {contents}</p>
<h2>How to read this report</h2>
{_EXPLANATION}
<h2>Settings of the run</h2>
{_settings_html(ds)}
{"".join(sections)}
<h2>Files</h2>
<p>Next to this page: {files}. The CSV files hold every column at full precision.</p>
</body>
</html>
"""


def write_report(
    ds: xr.Dataset,
    out: str | os.PathLike,
    measures: str | Iterable[str] | None = None,
    *,
    order: str = "name",
    overwrite: bool = False,
) -> Path:
    """Write tables, figures and a self-contained HTML page of SOAK results into `out`.

    Files written:

    - ``pvalues.csv`` / ``pvalues.md``: ``soak_dask.stats.pvalues`` of the measures;
    - ``summary.csv`` / ``summary.md``: ``soak_dask.stats.summary``;
    - ``soak_<measure>.png`` / ``.svg``: ``soak_dask.plot.plot_soak`` per measure;
    - ``report.html``: one page with the figures embedded (base64 PNG), the tables, the run's
      settings (``ds.attrs``) and how to read them. It loads no external file, script or
      style sheet.

    Parameters
    ----------
    ds : xarray.Dataset
        SOAK results.
    out : path
        Directory to write; created if missing. A non-empty directory must hold a previous
        report (whose report files are then replaced) unless `overwrite` is True.
    measures : str or iterable of str, optional
        Default: ``ds.attrs["measures"]`` (see ``soak_dask.stats.validate_results``).
    order : {"name", "effect"}, default "name"
        Panel order of the figures (see ``soak_dask.plot.plot_soak``).
    overwrite : bool, default False
        Write into a non-empty directory that is not a previous report (files of the same
        names are replaced, others kept).

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

    Examples
    --------
    >>> page = write_report(results, "soak_report", measures=["error", "auc"])  # doctest: +SKIP
    """
    # Validate everything before _prepare_dir deletes a previous report's files.
    names = validate_results(ds, measures)
    check_choice("order", order, ORDERS)
    out = Path(out)
    _prepare_dir(out, overwrite)
    tests = pvalues(ds, names)
    means = summary(ds, names)
    _write_tables(out, "pvalues", tests)
    _write_tables(out, "summary", means)
    sections = [
        _measure_section(
            m,
            _write_figure(out, ds, m, order),
            tests[tests["measure"] == m],
            means[means["measure"] == m],
            ds,
        )
        for m in names
    ]
    page = out / "report.html"
    page.write_text(_page(ds, sections, names), encoding="utf-8")
    return page
