"""A self-contained HTML report of a transfer matrix and, optionally, a train-subset search,
with its tables (CSV, Markdown) and figures (PNG, SVG) beside it.

The page is ``soak_dask.results.html.html_page``: no external file, script or style sheet.
The directory is checked and marked as every output directory is (``soak_dask.io.outdir``):
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
from ..results.estimates import estimate_banner
from ..results.html import (
    bullets,
    code,
    estimators_row,
    figure_html,
    html_page,
    html_table,
    measures_row,
    settings_table,
    versions_row,
    write_figure,
    write_tables,
)
from ..results.pages import section_html
from ..results.shift import shift_lines, shift_summary
from ..results.verdicts import MARKS, NO_EVIDENCE
from ..settings import check_alpha
from ..tables.spatial_record import made_from_coordinates
from .matrix import (
    check_transfer,
    cluster_subsets,
    transfer_pvalues,
    transfer_summary,
    transfer_table,
)
from .plot import ORDERS, plot_transfer
from .search import check_search, search_pvalues, search_summary
from .search_page import search_banner, search_section

#: The writer named in the directory's manifest (``soak transfer`` writes there too).
WRITER = "soak_dask's transfer report"
_TITLE = "Which subsets transfer, and which to pool"
#: How a banner names a cell of the matrix (``search_page.SEARCH_CELL``: a train set of the
#: search).
TRANSFER_CELL = "{learner} {train_subset} -> {test_subset}"
# Attrs of a transfer matrix shown as they are, under these names.
_WORDS = (("Data", "source"), ("Task", "task"), ("Label", "label"), ("Subsets", "subset"),
          ("Groups", "group"))  # fmt: skip
_EXPLANATION = """
<p>Each row of the data belongs to a <b>subset</b> (region, year, image, ...) and a
<b>fold</b> 1..K, the folds SOAK assigns with the same seed.</p>
<p><b>Transfer matrix.</b> Each learner is trained on one subset (all folds but &kappa;) and
scored on fold &kappa; of every subset: the cell (train <i>t</i>, test &sigma;) is the mean over
the K folds. The diagonal is SOAK's <b>same</b>. An off-diagonal cell is marked
&#9650; when it is significantly worse than the diagonal cell of its column (the test subset's
own model), &#9660; when significantly better (two-sided paired t-test over folds, K&minus;1
degrees of freedom); an unmarked cell shows no evidence of a difference, which is not evidence
of equality. Beside the fold mean &plusmn; SD, each cell's pooled estimate counts every test row
once: where whole groups make folds of very different sizes the two can disagree, and a note
says so (the marks rest on the fold mean). The dendrogram clusters the subsets on the transfer
distance
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
    """``out`` checked for a transfer report before any work (``soak_dask.io.outdir``):
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
    ``.md`` (``transfer_pvalues``), ``transfer_mean.csv`` (mean over folds of every cell),
    ``transfer_estimates.csv`` (``transfer_summary``: fold mean ± SD, pooled estimate, fold
    sizes), ``transfer_shift.csv`` (``shift_summary``); with ``search``, the files of its
    section on its own page (``search_page.search_section``): ``search.png``/``.svg``
    (``plot_search``), ``search_pvalues.csv``/``.md``, ``search_estimates.csv``
    (``search_summary``), ``search_stability.csv``/``.md``, ``pool_per_fold.csv``/``.md`` and
    ``search_pools.csv``;
    ``report.html``; the manifest (``soak_dask.io.outdir.MANIFEST``).

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
        sections.append(section_html(path, search_section(search, alpha), files))
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


def _figure(path: OutputDir, fig, name: str, files: list[str], alt: str, caption: str) -> str:
    drawn = write_figure(path, fig, name)
    files.extend([f"{name}.png", f"{name}.svg"])
    return figure_html(drawn, alt, caption)


def _transfer_section(
    path: OutputDir, ds: xr.Dataset, measure: str, order: str, alpha: float, files: list[str]
) -> str:
    tests = transfer_pvalues(ds, measure, alpha=alpha)
    means = ds[measure].mean("fold").to_dataframe().reset_index()
    write_tables(path, "transfer_pvalues", tests, files)
    write_tables(
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
    parts += [_learner_part(ds, str(v), measure, order, alpha, tests) for v in ds["learner"].values]
    shift = shift_summary(ds, measure)
    write_tables(path, "transfer_shift", shift, files, md=False)
    write_tables(path, "transfer_estimates", transfer_summary(ds, measure), files, md=False)
    parts.append("<h3>Shift</h3>" + bullets(shift_lines(shift)))
    parts.append(bullets(transfer_banners(ds, None, measure)))
    columns = [
        "learner",
        "train_subset",
        "test_subset",
        "reference_mean",
        "compare_mean",
        "mean_diff",
        "ci_low",
        "ci_high",
        "p",
        "verdict",
    ]
    off = tests[tests["verdict"] != "same"][columns]
    parts.append(
        "<details><summary>Every off-diagonal test</summary>"
        f'<div class="scroll">{html_table(off, "pvalues")}</div></details>'
    )
    return "\n".join(parts)


def _learner_part(
    ds: xr.Dataset, learner: str, measure: str, order: str, alpha: float, tests: pd.DataFrame
) -> str:
    """One learner's matrix in the report: fold means ± SD with their marks, then pooled."""
    subsets = (
        cluster_subsets(ds, learner, measure)[0]
        if order == "cluster"
        else [str(s) for s in ds["test_subset"].values]
    )
    mine = tests[tests["learner"] == learner]
    grid = transfer_table(ds, learner, measure, order=subsets, alpha=alpha).reset_index()
    pooled = transfer_table(ds, learner, measure, order=subsets, estimate="pooled")
    worse = int((mine["verdict"] == "worse").sum())
    better = int((mine["verdict"] == "better").sum())
    return (
        f"<h3>{html.escape(learner)}</h3><p>Order ({order}): "
        f"{', '.join(html.escape(s) for s in subsets)}. Of the {len(mine) - len(subsets)} "
        f"off-diagonal cells, {worse} are significantly worse than the test subset's own "
        f"model and {better} better; the others show no evidence of a difference. Fold "
        "mean &plusmn; SD:</p>"
        f'<div class="scroll">{html_table(grid, "results")}</div>'
        "<p>Pooled estimate (every test row once) [fewest&ndash;most test rows of a "
        "fold]:</p>"
        f'<div class="scroll">{html_table(pooled.reset_index(), "results")}</div>'
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
    """The run's settings in words, then the search's options."""
    a = matrix.attrs
    rows = [
        (title, code(a[key]) + made_from_coordinates(a, a[key]))
        for title, key in _WORDS
        if a.get(key) not in (None, "")
    ]
    folds = f"K = {a.get('n_folds', matrix.sizes['fold'])}, SOAK's folds with seed {a.get('seed')}"
    if a.get("fold"):
        folds = f"K = {matrix.sizes['fold']}, from column {code(a['fold'])}"
    elif int(a.get("stratify", 0)):
        folds += ", balanced within each subset × label"
    rows += [("Folds", html.escape(folds) if not a.get("fold") else folds)]
    rows += estimators_row("Learners", a.get("learners")) + measures_row(a)
    if "n_fits" in a:
        n, k, learners = (matrix.sizes[d] for d in ("train_subset", "fold", "learner"))
        rows.append(("Fits", f"{a['n_fits']}: {n}·{k} train sets × {learners} learners"))
    rows += versions_row(a)
    if search is not None:
        rows += [
            (f"Search: {name}", code(search.attrs[key]))
            for name, key in (
                ("measure", "search_measure"),
                ("threshold", "threshold"),
                ("largest pool", "max_pool"),
                ("inner fits at most", "max_inner_fits"),
            )
            if key in search.attrs
        ]
    return settings_table(rows)


def transfer_banners(
    matrix: xr.Dataset, search: xr.Dataset | None = None, measure: str | None = None
) -> list[str]:
    """The one-line notes of a transfer report where a cell's fold mean and pooled estimate
    disagree (``results.estimates.estimate_banner``): one for the matrix, one for the
    search, each naming its table when both are there; none where every cell agrees."""
    measure = check_transfer(matrix, measure)
    named = "" if search is None else "transfer matrix"  # two tables: each banner names its own
    cells = transfer_summary(matrix, measure)
    lines = [estimate_banner(cells, TRANSFER_CELL, measure, table_name=named)]
    if search is not None:
        lines.append(search_banner(search_summary(search), table_name="search"))
    return [line for line in lines if line]


def transfer_text(
    matrix: xr.Dataset,
    search: xr.Dataset | None = None,
    *,
    measure: str | None = None,
    alpha: float = 0.05,
) -> str:
    """What ``soak transfer`` prints: per learner the matrix of fold means ± SD with their
    marks and the matrix of pooled estimates with the fold sizes, the shift summary, the
    banners of `transfer_banners`; with ``search``, its tests with their verdicts and its
    estimates (fold mean ± SD, pooled, fold sizes)."""
    measure = check_transfer(matrix, measure)
    alpha = check_alpha(alpha)
    lines = [
        f"{measure}: train subset (rows) -> test subset (columns), {matrix.sizes['fold']} folds; "
        f"fold mean ± SD, {MARKS['worse']}/{MARKS['better']}: worse/better than the diagonal "
        f"(paired t-test over folds, p < {alpha:g}), no mark: {NO_EVIDENCE}; then the pooled "
        "estimate (every test row once) [fewest-most test rows of a fold]"
    ]
    with pd.option_context("display.width", 200, "display.max_columns", 50):
        for learner in matrix["learner"].values:
            learner = str(learner)
            for estimate in ("mean", "pooled"):
                grid = transfer_table(matrix, learner, measure, alpha=alpha, estimate=estimate)
                lines += [f"\n{learner}: {estimate}", grid.to_string()]
        lines += ["\nshift: each subset's own model against the others' (pooled)"]
        lines += shift_lines(shift_summary(matrix, measure))
        if search is not None:
            lines += ["", *_search_lines(search, alpha, search_summary(search))]
    lines += ["", *transfer_banners(matrix, search, measure)]
    return "\n".join(lines).rstrip()


def search_text(search: xr.Dataset, alpha: float = 0.05) -> str:
    """What ``soak report`` prints of a search store, as ``transfer_text`` prints a search
    beside its matrix: the tests with their verdicts, each train set's fold mean beside its
    pooled estimate, and the line saying where the two disagree."""
    found = search_summary(search)
    banner = search_banner(found)
    return "\n".join([*_search_lines(search, alpha, found), *(["", banner] if banner else [])])


def _search_lines(search: xr.Dataset, alpha: float, found: pd.DataFrame) -> list[str]:
    """The search's tests with their verdicts, and its fold means beside pooled estimates
    (``found``: its ``search_summary``)."""
    keep = ["learner", "test_subset", "compare", "reference", "mean_diff", "ci_low", "ci_high"]
    tests = search_pvalues(search, alpha=alpha)[[*keep, "p", "verdict"]]
    estimates = found.drop(columns=["measure", "estimates_differ"])
    estimates = estimates.rename(columns={"weighted_mean": "pooled"})
    return [
        "search: nested greedy estimate against same and all (paired t-test over the outer "
        "folds; mean_diff and its 95 % interval: compare - reference of the fold means)",
        tests.round(4).to_string(index=False),
        "\nsearch: fold mean ± SD and pooled estimate of each train set, test rows of a fold",
        estimates.round(4)
        .astype({"n_test_min": "Int64", "n_test_max": "Int64"})
        .to_string(index=False),
    ]
