"""The transfer matrix: train on each single subset, test on every subset, on SOAK's folds.

A fit on subset t (all folds but κ) scores the fold-κ block of every test subset σ, so S
subsets cost S·K fits, not S²·K. Folds are assigned exactly as ``soak`` assigns them (same
seed, same folds), so the diagonal t = σ is SOAK's ``same``; an off-diagonal cell (t → σ) says
how well a model of subset t predicts subset σ, and the paired t-test over folds against the
diagonal says whether it does worse than σ's own model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import dask.dataframe as dd
import numpy as np
import pandas as pd
import xarray as xr
from sklearn.base import BaseEstimator

from ..option_checks import checked
from ..results.estimates import ESTIMATE_COLUMNS, fold_estimates
from ..results.stats import pvalues
from ..results.verdicts import MARKS, SAME, check_margin, with_verdicts
from ..run.entry import entry_point
from ..run.run_design import keyed_and_counted, run_on
from ..run.session import Session, result_attrs, start, stratum_rows
from ..run.strategies import Context
from ..run_options import RunOptions
from ..schema import DESIGN_DIMS, LOWER_IS_BETTER, MEASURES, PAIRED_TEST_COLUMNS
from ..settings import check_alpha
from ..split.plan import Plan
from ..split.transfer import Transfer
from ..tables.table import Table

#: Title of the results of ``transfer``.
TITLE = "soak_dask transfer matrix: train on one subset, test on each"
#: Dims of every measure variable of a transfer result, in this order (``schema.DESIGN_DIMS``).
TRANSFER_DIMS: tuple[str, ...] = DESIGN_DIMS["transfer"]
#: Columns of ``transfer_pvalues``: its keys, the paired-test columns of every design
#: (``schema.PAIRED_TEST_COLUMNS``: reference ``same``, the diagonal; compare ``transfer``,
#: the cell), then ``verdict``.
TRANSFER_PVALUE_COLUMNS: list[str] = [
    "learner",
    "train_subset",
    "test_subset",
    *PAIRED_TEST_COLUMNS,
    "verdict",
]


@dataclass(frozen=True)
class Prepared:
    """A table made ready for a run on SOAK's folds: the session, folds assigned, columns
    persisted, blocks counted and checked."""

    session: Session
    table: Table
    data: dd.DataFrame
    counts: pd.DataFrame
    classes: list | None
    subsets: list
    n_folds: int
    stratify: bool

    @property
    def estimators(self) -> dict[str, BaseEstimator]:
        return self.session.estimators

    @property
    def measures(self) -> tuple[str, ...]:
        return self.session.measures

    @property
    def client(self) -> Any:
        return self.session.client

    def context(
        self,
        plan: Plan,
        estimators: Mapping[str, BaseEstimator] | None = None,
        measures: Sequence[str] | None = None,
    ) -> Context:
        """The executor's context of ``plan`` (for ``estimators`` and ``measures``, default
        the run's)."""
        return self.session.context(
            self.table, self.data, plan, self.classes, estimators=estimators, measures=measures
        )

    def run(
        self,
        plan: Plan,
        strategies: list[Any],
        settings: Mapping[str, Any],
        estimators: Mapping[str, BaseEstimator] | None = None,
        part: str | None = None,
    ) -> list[dict[str, Any]]:
        """The records of ``plan`` (``Session.run``: checkpointed, ``error_score``), for
        ``estimators`` (default: the run's), in the checkpoint part ``part`` if given."""
        rows = stratum_rows(self.counts, self.table)
        ctx = self.context(plan, estimators)
        counts = self.counts  # SOAK's block counts: each fit's rows (per class) without a pass
        return self.session.run(ctx, strategies, settings, rows=rows, part=part, counts=counts)

    def settings(self, title: str, design: str, **extra: Any) -> dict[str, Any]:
        """What a result records of the run (and its checkpoint is identified by)."""
        return matrix_settings(
            title, design, self.table, self.session, self.n_folds, self.stratify,
            self.classes, self.subsets, **extra,
        )  # fmt: skip


def matrix_settings(
    title: str,
    design: str,
    table: Table,
    session: Session,
    n_folds: int,
    stratify: bool,
    classes: list | None,
    subsets: Sequence,
    **extra: Any,
) -> dict[str, Any]:
    """What a run on SOAK's folds of each subset (``transfer``, ``search_subsets``) records
    of itself (and its checkpoint is identified by)."""
    return {
        "title": title,
        "design": design,
        "task": table.task,
        "source": table.source,
        **table.roles,
        "seed": session.seed,
        "n_folds": n_folds,
        "stratify": stratify,
        "measures": list(session.measures),
        "learners": {n: repr(e) for n, e in session.estimators.items()},
        "classes": [str(c) for c in classes] if classes else None,
        "subsets": [str(s) for s in subsets],
        **extra,
    }


def prepare(
    table: Table,
    learners: Any,
    caller: str,
    *,
    n_folds: int | None,
    seed: int,
    measures: Sequence[str] | str | None,
    stratify: bool,
    options: RunOptions,
) -> Prepared:
    """Assign SOAK's folds, persist the columns and check the blocks, as ``soak`` does before
    it plans (the options checked at the door: ``option_checks.checked``)."""
    session = start(table, caller, learners, measures=measures, seed=seed, options=options)
    design = Transfer(n_folds, seed=session.seed, stratify=stratify)
    keyed, data, _, classes = keyed_and_counted(session, table, design, options.persist)
    return Prepared(
        session, keyed, data, design.counts_, classes, design.subsets_, design.n_folds_, stratify
    )


@entry_point
@checked("transfer")
def transfer(
    table: Table,
    learners: Mapping[str, Any] | Sequence[Any] | BaseEstimator | str | None = None,
    *,
    n_folds: int | None = None,
    seed: int = 1,
    measures: Sequence[str] | str | None = None,
    stratify: bool = True,
    options: RunOptions | None = None,
) -> xr.Dataset:
    """Train each learner on each single subset and test it on every subset.

    Parameters
    ----------
    table : Table
        From ``soak_dask.load_table``, with a subset column.
    learners : dict, list, estimator or str, optional
        As for ``soak_dask.soak`` (default: featureless and a linear model).
    n_folds : int, optional
        K (default 10; with a fold column, read from it, and ``n_folds`` or ``stratify``
        refused). The folds are those ``soak`` assigns with this seed: the diagonal equals
        ``soak``'s ``same``.
    seed, measures, stratify
        As for ``soak_dask.soak``.
    options : RunOptions, optional
        How the run runs (``soak_dask.RunOptions``, default ``RunOptions()``): its client,
        progress bar, checkpoint, ``persist``, ``error_score`` and fitting strategy
        (``onepass``, ``max_train_rows``, ``incremental``, ``epochs``), as for
        ``soak_dask.soak``: additive learners from one pass of block statistics; a train set
        larger than ``max_train_rows`` fitted on a seeded, stratified sample of exactly that
        many rows (``n_train`` records them); ``partial_fit`` learners fed one block of train
        rows per task, ``epochs`` times.

    Returns
    -------
    xarray.Dataset
        Dims (learner, train_subset, test_subset, fold); one variable per measure plus
        ``n_train``, ``n_test``, ``fit_seconds``, ``predict_seconds``; settings in attrs
        (``design="transfer"``). ``transfer_pvalues`` tests each cell against the diagonal,
        ``cluster_subsets`` groups the subsets by how well they predict each other and
        ``soak_dask.pooling.plot_transfer`` draws the heat map.

    Examples
    --------
    >>> import soak_dask as sd
    >>> from soak_dask.pooling import transfer
    >>> table = sd.load_table(df, label="y", subset="region")  # doctest: +SKIP
    >>> res = transfer(table, ["featureless", "lda"], n_folds=5)  # doctest: +SKIP
    >>> res["error"].mean("fold").sel(learner="lda").to_pandas()  # doctest: +SKIP
    """
    session = start(table, "transfer", learners, measures=measures, seed=seed, options=options)
    design = Transfer(n_folds, seed=session.seed, stratify=stratify)
    describe = partial(_transfer_settings, stratify)
    ds, settings = run_on(session, table, design, options.persist, describe=describe)
    return ds.assign_attrs(result_attrs(settings))


def _transfer_settings(
    stratify: bool, table: Table, plan: Plan, classes: list | None, session: Session
) -> dict[str, Any]:
    """What a transfer result records (``run_on``'s ``describe``)."""
    n_fits = len(plan.fits) * len(session.estimators)
    return matrix_settings(
        TITLE, "transfer", table, session, len(plan.coords["fold"]), stratify, classes,
        plan.coords["test_subset"], n_fits=n_fits, n_distinct_train_sets=len(plan.fits),
        **session.fitting.settings(),
    )  # fmt: skip


def default_measure(ds: xr.Dataset) -> str:
    """The first measure of a result (error for classification, mse for regression)."""
    listed = ds.attrs.get("measures")
    names = [listed] if isinstance(listed, str) else list(listed if listed is not None else [])
    names = [m for m in names if m in ds.data_vars]
    if names:
        return str(names[0])
    known = [m for task in MEASURES.values() for m in task if m in ds.data_vars]
    if not known:
        raise ValueError(f"the results hold no measure; variables: {list(ds.data_vars)}")
    return known[0]


def check_transfer(ds: xr.Dataset, measure: str | None) -> str:
    """Check that ``ds`` is a transfer result; return the measure to use."""
    missing = [d for d in TRANSFER_DIMS if d not in ds.dims]
    if missing:
        raise ValueError(
            f"the results lack the dims {missing}: not a transfer matrix (from "
            "soak_dask.pooling.transfer, or transfer_from_soak of a two-subset SOAK result)"
        )
    measure = default_measure(ds) if measure is None else measure
    if measure not in ds.data_vars:
        raise ValueError(
            f"measure={measure!r} is not in the results; choose from "
            f"{[v for v in ds.data_vars if set(ds[v].dims) == set(TRANSFER_DIMS)]}"
        )
    return measure


def paired_pvalues(
    reference: xr.DataArray,
    compare: xr.DataArray,
    measure: str,
    names: tuple[str, str] = ("reference", "compare"),
) -> pd.DataFrame:
    """The paired t-test over folds of ``compare`` against ``reference`` (each with dims
    learner, test_subset, fold): SOAK's test (``results.paired_tests.pvalues``), with the
    reference in the place of ``same``. Columns ``learner``, ``test_subset`` and
    ``schema.PAIRED_TEST_COLUMNS``, whose ``reference`` and ``compare`` hold ``names``."""
    both = xr.concat([reference, compare], dim=pd.Index(["same", "other"], name="train_type"))
    ds = both.transpose("learner", "test_subset", "fold", "train_type").to_dataset(name=measure)
    ds.attrs["measures"] = [measure]
    out = pvalues(ds, measure, compare="other")
    # The Welch test is not reported here: drop what its reason says.
    out["reason"] = [
        "; ".join(r for r in text.split("; ") if not r.startswith("Welch"))
        for text in out["reason"]
    ]
    out["reason"] = out["reason"].str.replace("other - same", f"{names[1]} - {names[0]}")
    out["reference"], out["compare"] = names
    return out[["learner", "test_subset", *PAIRED_TEST_COLUMNS]]


def transfer_pvalues(
    ds: xr.Dataset,
    measure: str | None = None,
    *,
    alpha: float = 0.05,
    margin: float | None = None,
) -> pd.DataFrame:
    """Each off-diagonal cell (train t → test σ) against the diagonal (σ → σ, SOAK's same):
    the paired t-test over folds, as ``soak_dask.pvalues``.

    Parameters
    ----------
    ds : xarray.Dataset
        From ``transfer``.
    measure : str, optional
        Default: the first measure of the results (error for classification).
    alpha : float
        Level of the ``verdict`` column.
    margin : float, optional
        Equivalence margin in the measure's units (``soak_dask.results.verdicts``): a cell
        whose two one-sided tests reject at alpha is "equivalent" to the diagonal; adds the
        columns ``margin`` and ``p_equivalence`` before ``verdict``. None: no cell is.

    Returns
    -------
    pandas.DataFrame
        One row per learner × train subset × test subset (diagonal included: no test), columns
        ``TRANSFER_PVALUE_COLUMNS``: ``reference_*`` of the diagonal (``same``),
        ``compare_*`` of the cell (``transfer``), ``mean_diff`` = transfer − same, ``verdict``
        = "worse" / "better" (p < alpha) / "equivalent" (with a margin) / "no evidence of a
        difference" / "same" (the diagonal). Fold means: the paired t-test tests them;
        ``transfer_summary`` gives each cell's pooled estimate beside them.
    """
    measure = check_transfer(ds, measure)
    alpha = check_alpha(alpha)
    margin = check_margin(margin)
    values = ds[measure].drop_vars("fit_id", errors="ignore")
    subsets = [str(s) for s in ds["test_subset"].values]
    diagonal = xr.concat(
        [values.sel(train_subset=s, test_subset=s, drop=True) for s in subsets],
        dim=pd.Index(subsets, name="test_subset"),
    )
    parts = [
        paired_pvalues(
            diagonal.sel(learner=[learner]),
            values.sel(learner=[learner], train_subset=t, drop=True),
            measure,
            names=("same", "transfer"),
        ).assign(train_subset=t)
        for learner in ds["learner"].values
        for t in subsets
    ]
    out = with_verdicts(pd.concat(parts, ignore_index=True), alpha, margin)
    diagonal_rows = out["train_subset"] == out["test_subset"]
    out.loc[diagonal_rows, "verdict"] = SAME
    out.loc[diagonal_rows, "reason"] = "the diagonal: this cell is SOAK's same, nothing to test"
    extra = ["margin", "p_equivalence"] if margin is not None else []
    return out[TRANSFER_PVALUE_COLUMNS[:-1] + extra + ["verdict"]]


def transfer_summary(ds: xr.Dataset, measure: str | None = None) -> pd.DataFrame:
    """Every cell's fold mean ± SD beside its pooled estimate and its fold sizes
    (``soak_dask.results.estimates.fold_estimates``: the rule of every design).

    Returns
    -------
    pandas.DataFrame
        One row per learner × train subset × test subset: ``measure``, then
        ``ESTIMATE_COLUMNS``: ``n`` folds, ``mean``, ``sd``, ``weighted_mean`` (the pooled
        estimate: every test row of the cell once), ``n_test_min``, ``n_test_max`` and
        ``estimates_differ`` (fold mean and pooled apart by more than the fold SD, or folds
        over 2× apart in rows).

    Examples
    --------
    >>> transfer_summary(res).query("estimates_differ")  # doctest: +SKIP
    """
    measure = check_transfer(ds, measure)
    values = ds[measure].drop_vars("fit_id", errors="ignore").transpose(*TRANSFER_DIMS)
    out = fold_estimates(values, ds["n_test"] if "n_test" in ds.data_vars else None)
    out.insert(len(TRANSFER_DIMS) - 1, "measure", measure)
    return out[[*TRANSFER_DIMS[:-1], "measure", *ESTIMATE_COLUMNS]]


def transfer_table(
    ds: xr.Dataset,
    learner: str,
    measure: str | None = None,
    *,
    order: Sequence[str] | None = None,
    alpha: float = 0.05,
    estimate: str = "mean",
) -> pd.DataFrame:
    """One learner's matrix as text, rows train, columns test, in ``order`` (default: the
    results' order).

    ``estimate="mean"``: each cell's fold mean ± SD and its mark against the diagonal (▲
    worse, ▼ better, "(same)" on the diagonal; none: no evidence of a difference);
    ``estimate="pooled"``: each cell's pooled estimate (every test row once) and the fewest
    and most test rows of its folds, "2.43 [5-1,484]" (``transfer_summary``).

    Examples
    --------
    >>> transfer_table(res, "lda", order=cluster_subsets(res, "lda")[0])  # doctest: +SKIP
    """
    if estimate not in ("mean", "pooled"):
        raise ValueError(f"estimate={estimate!r}: choose 'mean' (fold mean ± SD) or 'pooled'")
    known = [str(v) for v in ds["learner"].values]
    if learner not in known:
        raise ValueError(f"learner={learner!r} is not in the results; choose among {known}")
    if estimate == "mean":
        tests = transfer_pvalues(ds, measure, alpha=alpha)
        mine = tests[tests["learner"] == learner]
        cells = [
            f"{m:.3g} ± {sd:.2g} {MARKS[v]}".strip()
            for m, sd, v in zip(
                mine["compare_mean"], mine["compare_sd"], mine["verdict"], strict=True
            )
        ]
    else:
        mine = transfer_summary(ds, measure)
        mine = mine[mine["learner"] == learner]
        cells = [
            f"{w:.3g} [{lo:,.0f}-{hi:,.0f}]"
            for w, lo, hi in zip(
                mine["weighted_mean"], mine["n_test_min"], mine["n_test_max"], strict=True
            )
        ]
    grid = mine.assign(cell=cells).pivot(index="train_subset", columns="test_subset", values="cell")
    order = [str(s) for s in ds["test_subset"].values] if order is None else list(order)
    grid = grid.loc[order, order]
    grid.index.name, grid.columns.name = "train \\ test", None
    return grid


def transfer_distance(ds: xr.Dataset, learner: str, measure: str | None = None) -> pd.DataFrame:
    """Symmetric distance between subsets: how much worse they predict each other than
    themselves.

    d(a, b) = ½ [(E(a→b) − E(b→b)) + (E(b→a) − E(a→a))], with E(t→σ) the mean over folds of
    the measure training on t and testing on σ (for measures where higher is better, the
    differences are negated), floored at 0: two subsets whose models serve each other as well
    as their own are at distance 0.

    Returns
    -------
    pandas.DataFrame
        S × S, indexed and labelled by subset, zero diagonal.
    """
    measure = check_transfer(ds, measure)
    mean = ds[measure].sel(learner=learner).mean("fold").transpose("train_subset", "test_subset")
    e = mean.values.astype(np.float64)
    if measure not in LOWER_IS_BETTER:
        e = -e
    gap = e - np.diag(e)[None, :]  # gap[t, σ] = E(t→σ) − E(σ→σ)
    d = np.clip((gap + gap.T) / 2, 0.0, None)
    d[~np.isfinite(d)] = np.nanmax(d) if np.isfinite(d).any() else 0.0
    np.fill_diagonal(d, 0.0)
    subsets = [str(s) for s in ds["test_subset"].values]
    return pd.DataFrame(d, index=subsets, columns=subsets)


def cluster_subsets(
    ds: xr.Dataset, learner: str, measure: str | None = None, method: str = "average"
) -> tuple[list[str], np.ndarray | None]:
    """Hierarchical clustering of the subsets on ``transfer_distance`` (scipy).

    Returns
    -------
    order : list of str
        The subsets in dendrogram leaf order (subsets that predict each other well side by
        side).
    linkage : ndarray or None
        scipy's linkage matrix (None with fewer than 2 subsets).
    """
    from scipy.cluster.hierarchy import leaves_list, linkage
    from scipy.spatial.distance import squareform

    distance = transfer_distance(ds, learner, measure)
    subsets = list(distance.index)
    if len(subsets) < 2:
        return subsets, None
    tree = linkage(squareform(distance.to_numpy(), checks=False), method=method)
    return [subsets[i] for i in leaves_list(tree)], tree


def transfer_from_soak(ds: xr.Dataset) -> xr.Dataset:
    """The transfer matrix of a two-subset SOAK result: with S = 2, ``other`` of subset σ is
    the other subset's model, so same and other fill the 2 × 2 matrix (the SOAK paper's data
    sets with a predefined train/test split, or two years, are such results).

    Raises
    ------
    ValueError
        If the result does not have exactly two test subsets and both same and other.
    """
    subsets = [str(s) for s in ds["test_subset"].values]
    types = [str(t) for t in ds["train_type"].values] if "train_type" in ds.dims else []
    if len(subsets) != 2 or not {"same", "other"} <= set(types):
        raise ValueError(
            f"transfer_from_soak needs SOAK results of exactly 2 subsets with train types same "
            f"and other (got subsets {subsets}, train types {types}); with more subsets "
            "'other' pools several, so run soak_dask.pooling.transfer instead"
        )
    cells = []
    for t in subsets:
        column = [
            ds.sel(test_subset=s, train_type="same" if s == t else "other", drop=True)
            for s in subsets
        ]
        cells.append(xr.concat(column, dim=pd.Index(subsets, name="test_subset")))
    out = xr.concat(cells, dim=pd.Index(subsets, name="train_subset"))
    out = out.drop_vars("fit_id", errors="ignore")
    dims = [*TRANSFER_DIMS, *(d for d in out.dims if d not in TRANSFER_DIMS)]
    out = out.transpose(*dims)
    return out.assign_attrs({**ds.attrs, "design": "transfer"})
