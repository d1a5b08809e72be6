"""A report page declared as sections of tables and figures, written by one function.

The kinds of result whose page is a list of tables and figures (a subset search, a split-ratio
sensitivity, a sampling comparison) each build a ``Page`` from a result (their own package:
``soak_dask.diagnose.sensitivity_report``, ...); ``write_page`` writes it into a report
directory with the one page skeleton of ``soak_dask.results.html.html_page``: every table as
CSV (and Markdown) beside the page and as an HTML table in it, every figure as PNG and SVG
beside it and embedded in it. Nothing here knows a kind of result.
"""

from __future__ import annotations

import html
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
from matplotlib.figure import Figure

from ..io.outdir import OutputDir
from .html import (
    Claims,
    PageParts,
    figure_html,
    frame_table,
    html_page,
    prepare_report_dir,
    write_figure,
    write_tables,
)

if TYPE_CHECKING:
    import xarray as xr

__all__ = [
    "PAGE_FILE",
    "Page",
    "PageFigure",
    "PageSection",
    "PageTable",
    "page_parts",
    "section_html",
    "write_page",
    "write_parts",
    "write_result_page",
]

#: The page's file name in the report directory (as SOAK's, evaluate's and transfer's).
PAGE_FILE = "report.html"


@dataclass(frozen=True)
class PageTable:
    """A table of a page: ``<name>.csv`` (every column of ``frame`` at full precision) and,
    with ``md``, ``<name>.md`` beside the page; in the page under ``heading``, ``display``
    (default ``frame``: a page may show fewer columns, or formatted ones), in a closed
    ``<details>`` when ``folded``."""

    name: str
    heading: str
    frame: pd.DataFrame
    display: pd.DataFrame | None = None
    md: bool = True
    folded: bool = False


@dataclass(frozen=True)
class PageFigure:
    """A figure of a page: ``draw()`` makes it when the page is written (``<name>.png`` and
    ``.svg`` beside the page, the PNG embedded); ``alt`` is plain text, ``caption`` HTML."""

    name: str
    draw: Callable[[], Figure]
    alt: str
    caption: str


@dataclass(frozen=True)
class PageSection:
    """A section: a heading (plain text) with its link ``anchor``, an introduction (HTML),
    its figures, then its tables."""

    anchor: str
    heading: str
    text: str = ""
    figures: tuple[PageFigure, ...] = ()
    tables: tuple[PageTable, ...] = ()


@dataclass(frozen=True)
class Page:
    """A whole page: its ``title`` (plain text), the ``lede``, ``notes`` the reader must see
    first and the ``explanation`` (how to read it), all HTML; the sections; the ``settings``
    block (``soak_dask.results.html.settings_table``)."""

    title: str
    lede: str
    explanation: str
    sections: tuple[PageSection, ...]
    settings: str
    notes: tuple[str, ...] = ()


def write_page(
    page: Page,
    out: str | os.PathLike | OutputDir,
    *,
    overwrite: bool = False,
    flag: str = "overwrite=True",
    source: Any = None,
) -> Path:
    """Write ``page`` into the report directory ``out``; the path of its ``report.html``.

    ``out`` is checked as every report directory is (``prepare_report_dir``): new, empty or an
    earlier report (replaced with ``overwrite``; ``flag`` names that option in messages), never
    the input table ``source``. The page loads nothing from outside itself.
    """
    od = prepare_report_dir(out, overwrite, flag, source)
    parts = page_parts(page, od)
    return write_parts(od, parts._replace(files=[*parts.files, PAGE_FILE]))


def page_parts(page: Page, out: Claims) -> PageParts:
    """``page``'s figures and tables written into ``out`` (``claim``); the page's parts, for
    ``write_parts`` or a section of a page of several outputs."""
    files: list[str] = []
    body = "".join(section_html(out, section, files) for section in page.sections)
    return PageParts(
        html.escape(page.title),
        page.lede,
        list(page.notes),
        [section.anchor for section in page.sections],
        page.explanation,
        body,
        page.settings,
        files,
    )


def write_parts(od: OutputDir, parts: PageParts) -> Path:
    """``report.html`` of ``parts`` (``html_page``) written into ``od``, which is then
    finished (``OutputDir.finish``); its path."""
    path = od.claim(PAGE_FILE)
    path.write_text(html_page(*parts), encoding="utf-8")
    od.finish()
    return path


def write_result_page(
    ds: xr.Dataset, out: str | os.PathLike, overwrite: bool, build: Callable[[xr.Dataset], Page]
) -> Path:
    """``build(ds)``'s page written into the report directory ``out`` (``write_page``), ``out``
    checked first, before the page's tables are computed, and never the input table
    ``ds.attrs["source"]``: the report of a kind of result whose page is a ``Page``
    (``soak_dask.results.registry``; messages name ``--overwrite``, soak report's option)."""
    od = prepare_report_dir(out, overwrite, "--overwrite", ds.attrs.get("source"))
    return write_page(build(ds), od)


def section_html(od: Claims, section: PageSection, files: list[str]) -> str:
    """One section's HTML; its figures and tables written into ``od``, named in ``files``
    (``page_parts``'s, and a section of a page written by hand: the transfer report's
    search)."""
    parts = [f'<h2 id="{html.escape(section.anchor)}">{html.escape(section.heading)}</h2>']
    parts += [section.text] if section.text else []
    for figure in section.figures:
        drawn = write_figure(od, figure.draw(), figure.name)
        files += [f"{figure.name}.png", f"{figure.name}.svg"]
        parts.append(figure_html(drawn, figure.alt, figure.caption))
    for table in section.tables:
        write_tables(od, table.name, table.frame, files, md=table.md)
        shown = frame_table(table.frame if table.display is None else table.display)
        heading = html.escape(table.heading)
        if table.folded:
            parts.append(f"<details><summary>{heading}</summary>\n{shown}</details>")
        else:
            parts.append(f"<h3>{heading}</h3>\n{shown}")
    return "\n".join(parts) + "\n"
