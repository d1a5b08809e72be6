"""A self-contained HTML report of a transfer matrix and, optionally, a train-subset search,
with its tables (CSV, Markdown) and figures (PNG, SVG) beside it.

The page is ``soak_dask.results.report.html_page``: no external file, script or style sheet.
The directory is checked and marked as every output directory is (``soak_dask.results.outdir``):
a later report (or ``soak transfer --out``) replaces exactly the files listed, nothing else.
"""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Any

import pandas as pd
import xarray as xr

from ..io.outdir import OutputDir
from ..io.outdir import check_out_dir as check
from ..results.report import _figure_html, _html_table, _write_figure, html_page, markdown_table
from .matrix import (
    MARKS,
    check_alpha,
    check_transfer,
    cluster_subsets,
    transfer_pvalues,
    transfer_table,
)
from .plot import ORDERS, plot_search, plot_transfer
from .search import check_search, search_pools, search_pvalues, search_stability

#: The writer named in the directory's manifest (``soak transfer`` writes there too).
WRITER = "soak_dask's transfer report"
_TITLE = "Which subsets transfer, and which to pool"
_EXPLANATION = """
<p>Each row of the data belongs to a <b>subset</b> (region, year, image, ...) and a
<b>fold</b> 1..K, the folds SOAK assigns with the same seed.</p>
<p><b>Transfer matrix.</b> Each learner is trained on one subset (all folds but &kappa;) and
scored on fold &kappa; of every subset: the cell (train <i>t</i>, test &sigma;) is the mean over
the K folds. The diagonal is SOAK's <b>same</b>. An off-diagonal cell is marked
&#9650; when it is significantly worse than the diagonal cell of its column (the test subset's
own model), &#9660; when significantly better (two-sided paired t-test over folds, K&minus;1
degrees of freedom). The dendrogram clusters the subsets on the transfer distance
d(a, b) = &frac12;[(E(a&rarr;b) &minus; E(b&rarr;b)) + (E(b&rarr;a) &minus; E(a&rarr;a))],
floored at 0: subsets whose models serve each other as well as their own are close.</p>
<p><b>Train-subset search.</b> For each test subset &sigma; and outer fold &kappa;, a greedy
forward selection chooses the subsets to pool, using only the folds other than &kappa;: start
from &sigma; alone (same), add the subset that lowers the inner cross-validation error most
(inner folds: the other K&minus;1 folds), stop when no subset lowers it by more than the
threshold. The chosen pool is then trained on all folds but &kappa; and scored on fold &kappa;
of &sigma;, beside same and all: a nested estimate of the search, compared with same and all
by the same paired t-test. The share of folds choosing each subset, and the Jaccard similarity
of the pools across folds, say how stable the choice is: a pool chosen in every fold is a
finding; pools that change from fold to fold mean the gain is within the noise.</p>
"""


def check_out_dir(
    out: str | os.PathLike | OutputDir,
    overwrite: bool,
    flag: str = "overwrite=True",
    source: Any = None,
    name: str = "out",
) -> OutputDir:
    """``out`` checked for a transfer report before any work (``soak_dask.results.outdir``):
    new, empty or an earlier transfer report (replaced with ``overwrite``), never the input
    table ``source``."""
    return check(out, writer=WRITER, overwrite=overwrite, source=source, name=name, flag=flag)


def write_transfer_report(
    matrix: xr.Dataset,
    out: str | os.PathLike | OutputDir,
    search: xr.Dataset | None = None,
    *,
    measure: str | None = None,
    order: str = "cluster",
    alpha: float = 0.05,
    overwrite: bool = False,
    flag: str = "overwrite=True",
) -> Path:
    """Write the transfer report into ``out``.

    Files: ``transfer_<measure>.png``/``.svg`` (``plot_transfer``), ``transfer_pvalues.csv``/
    ``.md`` (``transfer_pvalues``), ``transfer_mean.csv`` (mean over folds of every cell); with
    ``search``: ``search.png``/``.svg`` (``plot_search``), ``search_pvalues.csv``/``.md``,
    ``search_pools.csv`` and ``search_stability.csv``; ``report.html``; the manifest
    (``soak_dask.results.outdir.MANIFEST``).

    Parameters
    ----------
    matrix : xarray.Dataset
        From ``soak_dask.pooling.transfer``.
    out : path or OutputDir
        Directory; created if missing (see ``check_out_dir``): new, empty, or an earlier
        transfer report (its files deleted first, with ``overwrite``); never the input table.
        An ``OutputDir`` from ``check_out_dir``: a caller writing more files beside the report.
    search : xarray.Dataset, optional
        From ``soak_dask.pooling.search_subsets`` on the same table.
    measure, order, alpha
        As for ``plot_transfer``.
    overwrite, flag
        See ``check_out_dir``; ``flag`` names the option in messages.

    Returns
    -------
    pathlib.Path
        Path of ``report.html``.
    """
    measure = check_transfer(matrix, measure)
    if order not in ORDERS:
        raise ValueError(f"order={order!r}: choose from {list(ORDERS)}")
    alpha = check_alpha(alpha)
    if search is not None:
        check_search(search)
    path = check_out_dir(out, overwrite, flag, matrix.attrs.get("source"))
    files: list[str] = []
    sections = [_transfer_section(path, matrix, measure, order, alpha, files)]
    if search is not None:
        sections.append(_search_section(path, search, alpha, files))
    files.append("report.html")
    anchors = ["transfer", *(["search"] if search is not None else [])]
    page = html_page(
        _TITLE,
        _lede(matrix, search),
        [],
        anchors,
        _EXPLANATION,
        "".join(sections),
        _settings(matrix, search),
        files,
    )
    page_path = path.claim("report.html")
    page_path.write_text(page, encoding="utf-8")
    path.finish()
    return page_path


def _tables(path: OutputDir, name: str, frame: pd.DataFrame, files: list[str], md: bool = True):
    frame.to_csv(path.claim(f"{name}.csv"), index=False)
    files.append(f"{name}.csv")
    if md:
        path.claim(f"{name}.md").write_text(markdown_table(frame), encoding="utf-8")
        files.append(f"{name}.md")


def _figure(path: OutputDir, fig, name: str, files: list[str], alt: str, caption: str) -> str:
    drawn = _write_figure(path, fig, name)
    files.extend([f"{name}.png", f"{name}.svg"])
    return _figure_html(drawn, alt, caption)


def _transfer_section(
    path: OutputDir, ds: xr.Dataset, measure: str, order: str, alpha: float, files: list[str]
) -> str:
    tests = transfer_pvalues(ds, measure, alpha=alpha)
    means = ds[measure].mean("fold").to_dataframe().reset_index()
    _tables(path, "transfer_pvalues", tests, files)
    _tables(
        path,
        "transfer_mean",
        means[["learner", "train_subset", "test_subset", measure]],
        files,
        md=False,
    )
    figure = _figure(
        path,
        plot_transfer(ds, measure, order=order, alpha=alpha),
        f"transfer_{measure}",
        files,
        f"transfer matrix of {measure}",
        f"Mean {html.escape(measure)} over {ds.sizes['fold']} folds, training on the row's "
        f"subset and testing on the column's; {MARKS['worse']} / {MARKS['better']}: "
        f"significantly worse / better than the column's diagonal (p &lt; {alpha:g}).",
    )
    parts = [f'<h2 id="transfer">Transfer matrix: {html.escape(measure)}</h2>', figure]
    for learner in ds["learner"].values:
        learner = str(learner)
        subsets = (
            cluster_subsets(ds, learner, measure)[0]
            if order == "cluster"
            else [str(s) for s in ds["test_subset"].values]
        )
        mine = tests[tests["learner"] == learner]
        grid = transfer_table(ds, learner, measure, order=subsets, alpha=alpha).reset_index()
        worse = int((mine["verdict"] == "worse").sum())
        better = int((mine["verdict"] == "better").sum())
        parts.append(
            f"<h3>{html.escape(learner)}</h3><p>Order ({order}): "
            f"{', '.join(html.escape(s) for s in subsets)}. Of the {len(mine) - len(subsets)} "
            f"off-diagonal cells, {worse} are significantly worse than the test subset's own "
            f"model and {better} better.</p>"
            f'<div class="scroll">{_html_table(grid, "results")}</div>'
        )
    columns = [
        "learner",
        "train_subset",
        "test_subset",
        "same_mean",
        "transfer_mean",
        "mean_diff",
        "p_paired",
        "verdict",
    ]
    off = tests[tests["verdict"] != "same"][columns]
    parts.append(
        "<details><summary>Every off-diagonal test</summary>"
        f'<div class="scroll">{_html_table(off, "pvalues")}</div></details>'
    )
    return "\n".join(parts)


def _search_section(path: OutputDir, ds: xr.Dataset, alpha: float, files: list[str]) -> str:
    measure = check_search(ds)
    tests = search_pvalues(ds, alpha=alpha)
    pools = search_pools(ds)
    stability = search_stability(ds)
    _tables(path, "search_pvalues", tests, files)
    _tables(path, "search_pools", pools, files, md=False)
    _tables(path, "search_stability", stability, files, md=False)
    figure = _figure(
        path,
        plot_search(ds, alpha=alpha),
        "search",
        files,
        "greedy pools and their nested estimate",
        "Share of outer folds whose chosen pool holds each train subset; beside each test "
        f"subset, the nested {html.escape(measure)} of the search and its differences to same "
        "and all with their paired t-test.",
    )
    shown = tests[
        [
            "learner",
            "test_subset",
            "compare",
            "reference",
            "reference_mean",
            "compare_mean",
            "mean_diff",
            "p_paired",
            "verdict",
        ]
    ]
    per_fold = pools.pivot(index=["learner", "test_subset"], columns="fold", values="pool")
    per_fold.columns = [f"fold {k}" for k in per_fold.columns]
    cost = ", ".join(
        f"{html.escape(str(n))}: {int(f):,} inner fits"
        f"{' (sums of block statistics)' if o else ' (fitted from rows)'}, {s:.1f} s"
        for n, f, o, s in zip(
            ds["learner"].values,
            ds["inner_fits"].values,
            ds["one_pass"].values,
            ds["search_seconds"].values,
            strict=True,
        )
    )
    return "\n".join(
        [
            f'<h2 id="search">Train-subset search: {html.escape(measure)}</h2>',
            f"<p>Greedy forward selection with threshold {ds.attrs.get('threshold')} (relative), "
            f"pools of at most {ds.attrs.get('max_pool')} subsets. Cost: {cost}.</p>",
            figure,
            "<h3>Nested estimate against same and all</h3>",
            f'<div class="scroll">{_html_table(shown, "pvalues")}</div>',
            "<h3>Stability of the chosen pools across folds</h3>",
            f'<div class="scroll">{_html_table(stability, "results")}</div>',
            "<h3>Chosen pool per outer fold</h3>",
            f'<div class="scroll">{_html_table(per_fold.reset_index(), "results")}</div>',
        ]
    )


def _lede(matrix: xr.Dataset, search: xr.Dataset | None) -> str:
    a = matrix.attrs
    n, k = matrix.sizes["test_subset"], matrix.sizes["fold"]
    subset = html.escape(str(a.get("subset") or "subset"))
    source = html.escape(str(a.get("source", "the table")))
    learners = ", ".join(html.escape(str(v)) for v in matrix["learner"].values)
    text = (
        f"{n} subsets of <b>{subset}</b> in {source}, {k} folds (SOAK's, seed "
        f"{html.escape(str(a.get('seed', '')))}); learners {learners}: each trained on one "
        f"subset and tested on every subset, {n}&middot;{k} = {n * k} fits per learner."
    )
    if search is not None:
        text += " Then, for each test subset, a nested greedy search for the subsets to pool."
    return text


def _settings(matrix: xr.Dataset, search: xr.Dataset | None) -> str:
    keys = [
        "source",
        "task",
        "label",
        "subset",
        "group",
        "fold",
        "seed",
        "n_folds",
        "stratify",
        "measures",
        "learners",
        "n_fits",
        "versions",
    ]
    rows = [(k, matrix.attrs[k]) for k in keys if k in matrix.attrs and matrix.attrs[k] != ""]
    if search is not None:
        rows += [
            (f"search: {k}", search.attrs[k])
            for k in ("search_measure", "threshold", "max_pool", "max_inner_fits")
            if k in search.attrs
        ]
    body = "".join(
        f"<tr><th>{html.escape(k)}</th><td><code>{html.escape(str(v))}</code></td></tr>"
        for k, v in rows
    )
    return f'<table class="settings">{body}</table>'
