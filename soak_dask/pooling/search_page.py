"""The report page of a ``search_subsets`` result saved alone (``soak report`` of its store): the
figure, the nested estimate against same and all, each train set's fold mean beside its pooled
estimate, the stability of the pools and the pool of every fold, on the one page skeleton of
``soak_dask.results.pages``. ``soak transfer --search`` puts the same section
(``search_section``) beside its transfer matrix (``soak_dask.pooling.report``).
"""

from __future__ import annotations

import html

import pandas as pd
import xarray as xr

from ..results.estimates import estimate_banner
from ..results.html import bullets, code, estimators_row, settings_table, versions_row
from ..results.pages import Page, PageFigure, PageSection, PageTable
from ..tables.spatial_record import made_from_coordinates
from .plot import plot_search
from .search import (
    check_search,
    search_pools,
    search_pvalues,
    search_stability,
    search_summary,
)

__all__ = ["SEARCH_CELL", "search_banner", "search_page", "search_section"]

_EXPLANATION = """
<p>Each row of the data belongs to a <b>subset</b> and a <b>fold</b> 1..K (SOAK's folds). For
each test subset &sigma; and outer fold &kappa;, a greedy forward selection chooses the subsets
to pool using only the folds other than &kappa;: it starts from &sigma; alone (<b>same</b>),
adds the subset that lowers the inner cross-validation score most, and stops when none lowers
it by more than the threshold. The chosen pool (<b>greedy</b>) is then trained on all folds but
&kappa; and scored on fold &kappa; of &sigma;, beside <b>same</b> and <b>all</b>: a nested
estimate of the search.</p>
<ul>
<li>The tests compare greedy with same and with all (and all with same) over the outer folds by
a paired t-test; <code>mean_diff</code> = compare &minus; reference.</li>
<li>A pool chosen in every fold (modal share 1, Jaccard 1) is a finding; pools that change from
fold to fold mean the gain is within the noise.</li>
</ul>
"""
#: How a line names a train set of the search whose fold mean and pooled estimate disagree.
SEARCH_CELL = "{learner} {train_set} on {test_subset}"
#: Columns of the tests shown in the page (the CSV keeps every column).
_SHOWN = (
    "learner",
    "test_subset",
    "compare",
    "reference",
    "reference_mean",
    "compare_mean",
    "mean_diff",
    "ci_low",
    "ci_high",
    "p",
    "verdict",
)
# Attrs put in words by _settings; any other attr is listed as it is.
_KNOWN = frozenset(
    "title design task source label subset group fold seed n_folds stratify learners "
    "search_measure threshold max_pool max_inner_fits subsets versions".split()
)


def search_page(ds: xr.Dataset) -> Page:
    """The report page of ``ds``, a ``search_subsets`` result (its tables computed here, its
    figure drawn when the page is written)."""
    return Page(
        str(ds.attrs.get("title", "train-subset search")),
        _lede(ds),
        _EXPLANATION,
        (search_section(ds),),
        _settings(ds),
    )


def search_section(ds: xr.Dataset, alpha: float = 0.05) -> PageSection:
    """The section of a search's results, on its own page and in the transfer report
    (``write_transfer_report``'s ``search``): the greedy pools and the nested estimate tested
    against same and all at ``alpha``, each train set's fold mean ± SD beside its pooled
    estimate (a line above says where they disagree), the pools' stability and the pool of
    each outer fold."""
    measure = check_search(ds)
    tests = search_pvalues(ds, alpha=alpha)
    pools = search_pools(ds)
    estimates = search_summary(ds)
    per_fold = pools.pivot(index=["learner", "test_subset"], columns="fold", values="pool")
    per_fold.columns = [f"fold {k}" for k in per_fold.columns]
    figure = PageFigure(
        "search",
        lambda: plot_search(ds, alpha=alpha),
        "greedy pools and their nested estimate",
        "Share of outer folds whose chosen pool holds each train subset; beside each test "
        f"subset, the nested {html.escape(measure)} of the search and its differences to same "
        "and all with their paired t-test.",
    )
    banner = search_banner(estimates)
    tables = (
        PageTable(
            "search_pvalues", "Nested estimate against same and all", tests, tests[list(_SHOWN)]
        ),
        PageTable(
            "search_estimates",
            "Fold mean ± SD and pooled estimate of each train set",
            estimates,
            md=False,
        ),
        PageTable("search_stability", "Stability of the chosen pools", search_stability(ds)),
        PageTable("pool_per_fold", "Chosen pool per outer fold", per_fold.reset_index()),
        PageTable("search_pools", "Show every pool with its scores", pools, md=False, folded=True),
    )
    text = bullets([banner] if banner else []) + _intro(ds)
    return PageSection("search", f"Train-subset search: {measure}", text, (figure,), tables)


def search_banner(estimates: pd.DataFrame, table_name: str = "") -> str:
    """The line saying where a search's train sets have a fold mean and pooled estimate that
    disagree (``results.estimates.estimate_banner`` of ``search_summary``'s ``estimates``;
    ``table_name`` where a page or printout has another table too); "" where none do."""
    measure = str(estimates["measure"].iloc[0])
    return estimate_banner(estimates, SEARCH_CELL, measure, table_name=table_name)


def _intro(ds: xr.Dataset) -> str:
    """The search's options and cost per learner."""
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
    a = ds.attrs
    return (
        f"<p>Greedy forward selection with threshold {html.escape(str(a.get('threshold')))} "
        f"(relative), pools of at most {html.escape(str(a.get('max_pool')))} subsets. "
        f"Cost: {cost}.</p>"
    )


def _lede(ds: xr.Dataset) -> str:
    a = ds.attrs
    source = code(a["source"]) if a.get("source") else "the table"
    learners = ", ".join(html.escape(str(v)) for v in ds["learner"].values)
    return (
        f"Which subsets to pool to predict each subset? {ds.sizes['test_subset']} subsets of "
        f"<b>{html.escape(str(a.get('subset', 'subset')))}</b> in {source}, "
        f"{ds.sizes['fold']} outer folds, learners {learners}: for each test subset, a nested "
        "greedy search for the train subsets to pool, against same and all."
    )


def _settings(ds: xr.Dataset) -> str:
    """The run's settings in words, then the attrs this page does not know."""
    a = ds.attrs
    words = (("Data", "source"), ("Task", "task"), ("Label", "label"), ("Subsets", "subset"))
    rows = [(title, code(a[key])) for title, key in words if a.get(key) not in (None, "")]
    if a.get("group"):
        rows.append(("Groups", code(a["group"]) + made_from_coordinates(a, a["group"])))
    folds = f"K = {a.get('n_folds', ds.sizes['fold'])}, SOAK's folds with seed {a.get('seed')}"
    rows.append(("Folds", code(a["fold"]) if a.get("fold") else html.escape(folds)))
    rows += estimators_row("Learners", a.get("learners"))
    rows += [
        (f"Search: {name}", code(a[key]))
        for name, key in (
            ("measure", "search_measure"),
            ("threshold", "threshold"),
            ("largest pool", "max_pool"),
            ("inner fits at most", "max_inner_fits"),
        )
        if key in a
    ]
    return settings_table(rows + versions_row(a), a, _KNOWN)
