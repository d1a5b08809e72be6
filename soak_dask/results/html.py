"""The HTML toolkit of the reports (SOAK's, evaluate's and the transfer report): the page
skeleton (head, style, Content-Security-Policy, notes, settings, files), figures embedded as
base64 PNG, tables as HTML and Markdown, and the formatting of numbers and attrs.

Each report module holds its own page's content and calls these; nothing here knows a design.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import xarray as xr
from matplotlib.figure import Figure

from ..io.outdir import OutputDir, check_out_dir
from .text import prior_correction_text

__all__ = [
    "CSP",
    "Claims",
    "GENERATOR",
    "PageParts",
    "REPORT_WRITER",
    "anchor_links",
    "attr_names",
    "bullets",
    "cells_table",
    "code",
    "decimals",
    "estimators_row",
    "TABLE_ATTRS",
    "figure_html",
    "files_html",
    "fitting_rows",
    "fixed",
    "frame_table",
    "html_page",
    "html_table",
    "json_attr",
    "listed",
    "markdown_table",
    "measures_row",
    "notes_html",
    "page_document",
    "prepare_report_dir",
    "procedure_rows",
    "reading_html",
    "settings_table",
    "settings_value",
    "table_rows",
    "versions_row",
    "write_figure",
    "write_tables",
]

#: The page's generator tag.
GENERATOR = "soak_dask.report"
#: The writer of a report directory (SOAK's and evaluate's alike: one replaces the other).
REPORT_WRITER = "soak_dask's report"
#: The page may load nothing but its own data: images and inline style: no script, no URL.
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"
# Figures are drawn at _PNG_DPI and shown _SCREEN_DPI CSS pixels wide per inch of figure:
# larger than their natural 96 (their text is 7-9 pt), sharp on high-density screens.
_PNG_DPI, _SCREEN_DPI = 150, 110
# Characters that can start Markdown (GitHub-flavoured: tables, strikethrough, math) or inline
# HTML in a table cell, and what shows each literally in CommonMark, GitHub and Python-Markdown:
# an HTML entity, or a backslash. An underscore between two letters or digits cannot emphasise,
# so "test_subset" stays as it is.
_MARKDOWN_SPECIAL = re.compile(r"[&<>~$\\`*\[\]|]|(?<![^\W_])_|_(?![^\W_])")
_MARKDOWN_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "~": "&#126;", "$": "&#36;"}
_CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 78em; padding: 0 1.2em;
       color: #222; line-height: 1.45; }
h1 { font-size: 1.55em; margin-bottom: 0.3em; }
h2 { margin-top: 1.8em; border-bottom: 1px solid #ccc; font-size: 1.3em; }
h3 { font-size: 1.05em; margin: 1.2em 0 0.4em; }
.lede { font-size: 1.05em; margin-top: 0; }
nav { font-size: 0.9em; color: #555; }
.notes { border-left: 4px solid #d55e00; background: #fff6ef; padding: 0.4em 1em; margin: 1em 0; }
.notes p { margin: 0.4em 0; }
figure { margin: 1em 0 1.5em; }
figure img { max-width: 100%; height: auto; display: block; }
figcaption { font-size: 0.88em; color: #444; max-width: 60em; margin-top: 0.3em; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.4em 0 1.2em; }
th, td { border: 1px solid #ddd; padding: 0.2em 0.55em; text-align: right; vertical-align: top; }
th { background: #f3f3f3; } td:first-child, th:first-child { text-align: left; }
td.text, th.text { text-align: left; }
.results td { white-space: nowrap; }
td.wrap { white-space: normal; min-width: 16em; max-width: 40em; }
tr.same td { border-top: 2px solid #bbb; }
td.uneven { color: #b04000; font-weight: 600; }
.settings { font-size: 0.9em; }
.settings th { text-align: left; white-space: nowrap; width: 12em; }
.settings td { text-align: left; }
.settings ul { margin: 0; padding-left: 1.1em; }
.pvalues td:nth-child(-n+3), .pvalues td:last-child { text-align: left; }
details { margin: 0.6em 0; }
details > summary { cursor: pointer; color: #0b5394; }
details.measure > summary { font-size: 1.3em; font-weight: bold; color: #222; margin-top: 1.2em;
                            border-bottom: 1px solid #ccc; }
code { background: #f3f3f3; padding: 0 0.2em; }
.muted { color: #666; }
"""


class Claims(Protocol):
    """Where a page's tables and figures go: ``claim(name)`` is the path to write ``name`` to
    (an ``OutputDir``, or one output's share of a page of several: its names prefixed)."""

    def claim(self, name: str) -> Path: ...


# --- tables as files ----------------------------------------------------------------------


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
        Text is shown as it is: Markdown and HTML characters are escaped (a subset named
        ``<script>`` stays text), line breaks become spaces.

    Examples
    --------
    >>> print(markdown_table(pd.DataFrame({"a": ["x|y", "<b>"], "p": [0.012345, 1]})), end="")
    | a | p |
    | :-- | --: |
    | x\\|y | 0.01235 |
    | &lt;b&gt; | 1 |
    """
    numeric = [pd.api.types.is_numeric_dtype(dtype) for dtype in frame.dtypes]
    lines = [
        _markdown_row(map(str, frame.columns)),
        _markdown_row("--:" if num else ":--" for num in numeric),
    ]
    lines += [_markdown_row(_cell(v, digits) for v in row) for row in frame.itertuples(False)]
    return "\n".join(lines) + "\n"


def _markdown_row(cells: Iterable[str]) -> str:
    return "| " + " | ".join(_markdown_text(c) for c in cells) + " |"


def _markdown_text(text: str) -> str:
    """`text` to show literally in Markdown: special characters escaped, one line.

    Examples
    --------
    >>> print(_markdown_text("<script>alert(1)</script> *a*|b test_subset"))
    &lt;script&gt;alert(1)&lt;/script&gt; \\*a\\*\\|b test_subset
    """
    line = " ".join(text.splitlines())
    return _MARKDOWN_SPECIAL.sub(lambda m: _MARKDOWN_ESCAPES.get(m[0], "\\" + m[0]), line)


def _cell(value: Any, digits: int) -> str:
    """Text of one table cell: floats to `digits` significant digits, NaN as empty."""
    if isinstance(value, float | np.floating):
        return "" if math.isnan(value) else f"{value:.{digits}g}"
    return str(value)


def prepare_report_dir(
    out: str | os.PathLike | OutputDir, overwrite: bool, flag: str, source: Any
) -> OutputDir:
    """`out` checked for a report before any work (``soak_dask.io.outdir``): new, empty
    or an earlier report (replaced with `overwrite`), never the input table `source`."""
    name = "--out" if flag.startswith("--") else "out"  # the command line's word, or Python's
    return check_out_dir(
        out, writer=REPORT_WRITER, overwrite=overwrite, source=source, name=name, flag=flag
    )


def write_tables(
    out: Claims, name: str, frame: pd.DataFrame, files: list[str] | None = None, md: bool = True
) -> None:
    """``<name>.csv`` (every column at full precision) and, with `md`, ``<name>.md`` into
    `out`; their names appended to `files` when given."""
    frame.to_csv(out.claim(f"{name}.csv"), index=False)
    written = [f"{name}.csv"]
    if md:
        out.claim(f"{name}.md").write_text(markdown_table(frame), encoding="utf-8")
        written.append(f"{name}.md")
    if files is not None:
        files.extend(written)


# --- figures ------------------------------------------------------------------------------


def write_figure(out: Claims, fig: Figure, name: str) -> tuple[bytes, float]:
    """Save `fig` as ``<name>.png`` and ``.svg`` and close it; return the PNG and its width
    in inches."""
    try:
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=_PNG_DPI)
        fig.savefig(out.claim(f"{name}.svg"), format="svg")
        inches = float(fig.get_figwidth())
    finally:
        plt.close(fig)  # pyplot keeps every figure alive until closed
    png = buffer.getvalue()
    out.claim(f"{name}.png").write_bytes(png)
    return png, inches


def figure_html(figure: tuple[bytes, float], alt: str, caption: str) -> str:
    """A figure `_SCREEN_DPI` CSS pixels wide per inch (narrower on a narrow screen), with its
    caption (HTML) under it."""
    png, inches = figure
    image64 = base64.b64encode(png).decode("ascii")
    return (
        f'<figure><img alt="{html.escape(alt)}" width="{round(inches * _SCREEN_DPI)}" '
        f'src="data:image/png;base64,{image64}">\n'
        f"<figcaption>{caption}</figcaption></figure>\n"
    )


# --- tables in the page -------------------------------------------------------------------


def html_table(frame: pd.DataFrame, css_class: str) -> str:
    """`frame` as an HTML table, text escaped, floats to 4 significant digits, NaN empty."""
    return frame.to_html(
        index=False,
        na_rep="",
        float_format=lambda v: f"{v:.4g}",
        border=0,
        classes=css_class,
        escape=True,
    )


def cells_table(
    head: list[str],
    rows: list[list[str]],
    text_columns: int | Iterable[int],
    wrap: Iterable[int] = (),
) -> str:
    """An HTML table of text cells (escaped here), the first `text_columns` (or the columns of
    those positions) left-aligned and the columns `wrap` wrapped (long text), in a
    horizontally scrolling box."""
    wrapped = set(wrap)
    left = set(range(text_columns)) if isinstance(text_columns, int) else set(text_columns)

    def cell(tag: str, i: int, value: str) -> str:
        css = ["text"] * (i in left) + ["wrap"] * (tag == "td" and i in wrapped)
        attr = f' class="{" ".join(css)}"' if css else ""
        return f"<{tag}{attr}>{html.escape(value)}</{tag}>"

    lines = ["<tr>" + "".join(cell("th", i, h) for i, h in enumerate(head)) + "</tr>"]
    lines += ["<tr>" + "".join(cell("td", i, v) for i, v in enumerate(r)) + "</tr>" for r in rows]
    body = "\n".join(lines)
    return f'<div class="scroll"><table class="results">\n{body}\n</table></div>\n'


def frame_table(frame: pd.DataFrame) -> str:
    """`frame` (its columns, not its index) as ``cells_table``: numbers to 4 significant
    digits, NaN as an empty cell, columns of text (and of True/False) left-aligned."""
    text = [
        i
        for i, dtype in enumerate(frame.dtypes)
        if pd.api.types.is_bool_dtype(dtype) or not pd.api.types.is_numeric_dtype(dtype)
    ]
    rows = [[_cell(value, 4) for value in row] for row in frame.itertuples(index=False)]
    return cells_table([str(c) for c in frame.columns], rows, text)


def decimals(values: pd.Series) -> int:
    """Decimals showing 4 significant digits of the largest value: 22.54, 3.511, 0.8512."""
    finite = np.abs(values.to_numpy(dtype=float))
    finite = finite[np.isfinite(finite) & (finite > 0)]
    return 2 if not finite.size else int(np.clip(3 - math.floor(math.log10(finite.max())), 0, 6))


def fixed(value: float, digits: int, sign: bool = False) -> str:
    """`value` with `digits` decimals and a typographic minus; NaN as an empty cell."""
    if not np.isfinite(value):
        return ""
    return f"{value:{'+' if sign else ''}.{digits}f}".replace("-", "−")


# --- attrs in words -----------------------------------------------------------------------


def attr_names(value: Any) -> list[str]:
    """An attr holding names (a list, an array, one str, or "" for none) as a list of str."""
    if value is None or (isinstance(value, str) and not value):
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in np.atleast_1d(value)]


def json_attr(value: Any) -> dict[str, Any]:
    """An attr holding a JSON object (learners, versions), or {} when it does not."""
    try:
        parsed = json.loads(value) if isinstance(value, str) else None
    except ValueError:
        parsed = None
    return parsed if isinstance(parsed, dict) else {}


def listed(items: Iterable[str], limit: int = 30) -> str:
    """Escaped, comma-separated items; past `limit`, the rest in a closed details element."""
    items = [html.escape(i) for i in items]
    if len(items) <= limit:
        return ", ".join(items)
    rest = ", ".join(items[limit:])
    more = f"<details><summary>and {len(items) - limit} more</summary>{rest}</details>"
    return f"{', '.join(items[:limit])} {more}"


def bullets(lines: Iterable[str]) -> str:
    """Plain-text ``lines`` as an HTML list, escaped; "" without any."""
    lines = list(lines)
    if not lines:
        return ""
    return "<ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in lines) + "</ul>"


def code(value: Any) -> str:
    """`value` as escaped inline code."""
    return f"<code>{html.escape(str(value))}</code>"


def settings_value(value: Any) -> str:
    """HTML of an attr a page does not know: JSON objects as a list, sequences joined."""
    parsed = json_attr(value)
    if parsed:
        items = "".join(
            f"<li><code>{html.escape(str(k))}</code>: {html.escape(str(v))}</li>"
            for k, v in parsed.items()
        )
        return f"<ul>{items}</ul>"
    if isinstance(value, list | tuple | np.ndarray):
        return html.escape(", ".join(str(v) for v in value))
    return html.escape(str(value))


def estimators_row(title: str, value: Any) -> list[tuple[str, str]]:
    """[(`title`, each named estimator of the JSON attr `value` on one line)], or []."""
    items = "".join(
        f"<li><b>{html.escape(name)}</b>: {code(' '.join(str(est).split()))}</li>"
        for name, est in json_attr(value).items()
    )
    return [(title, f"<ul>{items}</ul>")] if items else []


def measures_row(attrs: Mapping[str, Any]) -> list[tuple[str, str]]:
    """[("Measures", the measures joined)], or [] without them."""
    measures = attr_names(attrs.get("measures"))
    return [("Measures", html.escape(", ".join(measures)))] if measures else []


def versions_row(attrs: Mapping[str, Any]) -> list[tuple[str, str]]:
    """[("Versions", each package and its version)], or [] without them."""
    versions = json_attr(attrs.get("versions"))
    text = ", ".join(f"{k} {v}" for k, v in versions.items())
    return [("Versions", html.escape(text))] if versions else []


#: Attrs of the table's coordinates, its fold file and the groups made from the coordinates,
#: put in words by ``table_rows`` and by the group's row (``made_from_coordinates``).
TABLE_ATTRS = frozenset(
    "coords crs fold_file blocks block_shape block_column block_origin clusters cluster_seed "
    "cluster_column max_train_rows incremental epochs onepass".split()
)


def table_rows(attrs: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(name, HTML) of the coordinates with their CRS and the fold file, where a result
    records them: "E, N (EPSG:26911)", "knndm/folds.parquet (column knndm_fold)"."""
    rows = []
    coords = attr_names(attrs.get("coords"))
    if coords:
        crs = attrs.get("crs")
        where = f"({html.escape(str(crs))})" if crs else '<span class="muted">(no CRS)</span>'
        rows.append(("Coordinates", f"{html.escape(', '.join(coords))} {where}"))
    if attrs.get("fold_file"):
        column = f" (column {code(attrs['fold'])})" if attrs.get("fold") else ""
        rows.append(("Fold file", code(attrs["fold_file"]) + column))
    return rows


def fitting_rows(attrs: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(name, HTML) of how train sets were capped or fitted in blocks, where they were
    (``onepass`` changes no score: not shown)."""
    rows = []
    if attrs.get("max_train_rows") not in (None, ""):
        cap = f"{int(attrs['max_train_rows']):,} rows (a seeded sample keeping class shares)"
        rows.append(("Train sets capped at", cap))
    if int(attrs.get("incremental", 0)):
        epochs = f"partial_fit on one block of rows at a time, {attrs.get('epochs', 1)} epoch(s)"
        rows.append(("Incremental fits", epochs))
    return rows


def procedure_rows(ds: xr.Dataset) -> list[tuple[str, str]]:
    """(name, HTML) of how the learners were fitted, those that apply (SOAK's and evaluate's
    alike): the prediction rule, calibration, tuning inside each train set (docs/nesting.md),
    the fold balance, and the notes of skipped steps."""
    a = ds.attrs
    rows = []
    if a.get("task") == "classification":
        rows.append(("Prediction", html.escape(prior_correction_text(a))))
    if a.get("calibration"):
        rows.append(("Calibration", html.escape(f"{a['calibration']}, on out-of-fold scores")))
    if "chosen" in ds:
        repeats = int(a.get("inner_repeats") or 1)
        inner = f"inner CV {a.get('inner')}: {a.get('inner_folds')} folds"
        inner += f" × {repeats} repeats" if repeats > 1 else ""
        if "nested" in a and not int(a["nested"]):
            inner += " (nested=False: once on all training rows, then refitted per fold)"
        rows.append(("Tuning inside each train set", html.escape(inner)))
    if a.get("balance") == "overlap":
        rows.append(("Fold balance", "by degree of overlap × class (overlap_folds)"))
    notes = attr_names(a.get("notes"))
    if notes:
        rows.append(("Notes", html.escape("; ".join(notes))))
    return rows


def settings_table(
    rows: list[tuple[str, str]], attrs: Mapping[str, Any] | None = None, known: Iterable[str] = ()
) -> str:
    """The settings block: (name, HTML) `rows` in words, then every attr of `attrs` not in
    `known` (the attrs the page has put in words), as it is."""
    rows = list(rows)
    if attrs is not None:
        skip = set(known)
        rows += [(str(k), settings_value(v)) for k, v in attrs.items() if k not in skip]
    body = "".join(f"<tr><th>{html.escape(k)}</th><td>{v}</td></tr>\n" for k, v in rows)
    return f'<table class="settings">\n{body}</table>'


# --- the page -----------------------------------------------------------------------------


class PageParts(NamedTuple):
    """What one report page holds, as ``html_page`` takes it: its title, lede, notes, section
    anchors, explanation, body and settings (HTML) and the files written beside it. A page of
    several outputs (``soak_dask.results.report_stores``) puts each one's parts in a section."""

    title: str
    lede: str
    notes: list[str]
    anchors: list[str]
    explanation: str
    body: str
    settings: str
    files: list[str]


def html_page(
    title: str,
    lede: str,
    notes: list[str],
    anchors: list[str],
    explanation: str,
    body: str,
    settings: str,
    files: list[str],
) -> str:
    """A self-contained report page (no external file, script or style sheet; marked as ours):
    the title, lede and notes, links to the sections ``anchors``, how to read it, ``body``,
    the run's settings and the files written beside it. Text arguments are HTML already."""
    links = [(a, a) for a in [*anchors, "settings", "files"]]
    content = (
        f'<p class="lede">{lede}</p>\n{notes_html(notes)}\n'
        f"<nav>Measures and sections: {anchor_links(links)}</nav>\n"
        f"{reading_html(explanation, 'report')}{body}\n"
        f'<h2 id="settings">Settings of the run</h2>\n{settings}\n'
    )
    return page_document(title, content + files_html(files))


def notes_html(notes: list[str]) -> str:
    """The notes the reader must see first, in one box; "" without any."""
    inner = "".join(f"<p>{n}</p>" for n in notes)
    return f'<div class="notes">{inner}</div>' if notes else ""


def anchor_links(links: Iterable[tuple[str, str]]) -> str:
    """Links to the page's ``(anchor, text)`` pairs, joined by a middle dot."""
    return " · ".join(f'<a href="#{html.escape(a)}">{html.escape(t)}</a>' for a, t in links)


def reading_html(explanation: str, what: str) -> str:
    """How to read the page (or a section of it: ``what``), folded."""
    return f"<details><summary>How to read this {what}</summary>\n{explanation}\n</details>\n"


def files_html(files: list[str]) -> str:
    """The files written beside the page."""
    listed_files = ", ".join(f"<code>{html.escape(name)}</code>" for name in files)
    return (
        f'<h2 id="files">Files</h2>\n<p>Next to this page: {listed_files}. The CSV files hold '
        "every column at full precision.</p>\n"
    )


def page_document(title: str, content: str, style: str = "") -> str:
    """The HTML document around ``content``: the head (generator tag, Content-Security-Policy,
    the style sheet and ``style`` after it) and ``title`` as its heading."""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="generator" content="{GENERATOR}">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{_CSS}{style}</style>
</head>
<body>
<h1>{title}</h1>
{content}</body>
</html>
"""
