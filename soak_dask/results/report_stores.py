"""One report page of several outputs (``soak report eval.zarr aoa knndm --out DIR``): each
output's page (its ``soak_dask.results.html.PageParts``, as it would stand alone) becomes one
section of one page on the one skeleton (``soak_dask.results.html.page_document``).

The page has one table of contents; each section its heading (the page's title and the path
it was given), lede, notes, how to read it, body and settings. Two outputs' pages use the same
names (``summary.csv``, the anchor ``folds``), so each section's files are written under its
key (``eval_summary.csv``: ``Prefixed``) and its anchors and headings nested under it
(``eval-folds``; its ``h2`` an ``h3``), and its text names its files so (``eval_timings.csv``);
every file is listed once, at the end.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..io.outdir import OutputDir
from .html import (
    PageParts,
    anchor_links,
    files_html,
    notes_html,
    page_document,
    reading_html,
)
from .pages import PAGE_FILE

__all__ = ["Prefixed", "StoreSection", "section_keys", "write_stores_page"]

# Anchors and internal links of a section's own HTML (text in it is escaped: a quote there is
# &quot;, so these match the page's markup only), and its headings.
_ANCHOR = re.compile(r'\b(id="|href="#)([^"]+)"')
_HEADING = re.compile(r"<(/?)h([23])\b")
_KEY_CHARS = re.compile(r"[^A-Za-z0-9]+")
_STYLE = """
section.store { margin-top: 2.4em; }
h2.store { font-size: 1.45em; border-bottom: 3px solid #0b5394; }
h4 { font-size: 0.98em; margin: 1em 0 0.3em; }
nav.toc ul { margin: 0.3em 0; padding-left: 1.2em; }
details.measure > summary { font-size: 1.15em; }
"""


@dataclass(frozen=True)
class Prefixed:
    """One section's share of the report directory ``od``: the files it claims are named
    ``prefix`` + their name (``soak_dask.results.html.Claims``)."""

    od: OutputDir
    prefix: str

    def claim(self, name: str) -> Path:
        return self.od.claim(self.prefix + name)


@dataclass(frozen=True)
class StoreSection:
    """One output's section: its ``key`` (anchor, and file prefix with ``_``), the ``label``
    it is known by (its path, plain text) and its page's ``parts``."""

    key: str
    label: str
    parts: PageParts


def section_keys(labels: Iterable[str]) -> list[str]:
    """A key per output from the name of its path, unique: letters, digits and ``_``.

    >>> section_keys(["eval.zarr", "runs/aoa", "knndm_ward", "other/eval.zarr", "."])
    ['eval', 'aoa', 'knndm_ward', 'eval_2', 'output']
    """
    keys: list[str] = []
    for label in labels:
        stem = Path(label).name.removesuffix(".zarr")
        key = _KEY_CHARS.sub("_", stem).strip("_") or "output"
        n, unique = 1, key
        while unique in keys:
            n += 1
            unique = f"{key}_{n}"
        keys.append(unique)
    return keys


def write_stores_page(od: OutputDir, sections: list[StoreSection]) -> Path:
    """``report.html`` of ``sections`` (their files already written into ``od`` under their
    keys) written into ``od``, which is then finished; its path."""
    files = [*od.written, PAGE_FILE]
    path = od.claim(PAGE_FILE)
    path.write_text(_page(sections, files), encoding="utf-8")
    od.finish()
    return path


def _page(sections: list[StoreSection], files: list[str]) -> str:
    headings = [_heading(s) for s in sections]
    lede = (
        f"{len(sections)} outputs on one page, each in its own section with what was run, the "
        "notes to read first, how to read it, its results and its settings."
    )
    toc = "".join(
        f'<li><a href="#{s.key}">{heading}</a>: '
        f"{anchor_links((f'{s.key}-{a}', a) for a in [*s.parts.anchors, 'settings'])}</li>\n"
        for s, heading in zip(sections, headings, strict=True)
    )
    content = (
        f'<p class="lede">{lede}</p>\n<nav class="toc">Contents:<ul>\n{toc}'
        '<li><a href="#files">files</a></li></ul></nav>\n'
        + "".join(_section(s, h) for s, h in zip(sections, headings, strict=True))
        + files_html(files)
    )
    return page_document("soak_dask report", content, _STYLE)


def _heading(section: StoreSection) -> str:
    """The section's heading (HTML): its page's title and the path it was given."""
    return f"{section.parts.title} (<code>{html.escape(section.label)}</code>)"


def _section(section: StoreSection, heading: str) -> str:
    parts, key = section.parts, section.key
    inner = (
        f'<p class="lede">{parts.lede}</p>\n{notes_html(parts.notes)}\n'
        f"{reading_html(parts.explanation, 'section')}{parts.body}\n"
        f'<h2 id="settings">Settings</h2>\n{parts.settings}\n'
    )
    for name in map(html.escape, parts.files):  # its text names its files as written here
        inner = inner.replace(f"<code>{name}</code>", f"<code>{key}_{name}</code>")
    return (
        f'<section class="store" id="{key}">\n<h2 class="store">{heading}</h2>\n'
        f"{_nested(inner, key)}</section>\n"
    )


def _nested(fragment: str, key: str) -> str:
    """``fragment`` with its anchors and links under ``key`` and its headings one level
    down, as a section of the page.

    >>> _nested('<h2 id="folds">F</h2><a href="#folds">f</a>', "eval")
    '<h3 id="eval-folds">F</h3><a href="#eval-folds">f</a>'
    """
    fragment = _ANCHOR.sub(lambda m: f'{m[1]}{key}-{m[2]}"', fragment)
    return _HEADING.sub(lambda m: f"<{m[1]}h{int(m[2]) + 1}", fragment)
