"""Which train subsets to pool for a test subset: a greedy forward selection, nested in
SOAK's folds.

For test subset σ and outer fold κ the search sees only the outer training part (fold ≠ κ),
whose inner folds are the other outer folds j ≠ κ. A pool P of train subsets is scored by inner
cross-validation: fit on {subset ∈ P, fold ∉ {κ, j}}, score on {subset = σ, fold = j}, average
over the K − 1 inner folds. Starting from P = {σ} (SOAK's same), the subset whose addition
lowers that inner error most joins the pool, as long as it lowers it by more than ``threshold``
× the current inner error. The chosen pool is then fitted on {subset ∈ P, fold ≠ κ} and scored
on {σ, κ}, beside same and all: the search's error is a nested estimate (fold κ never takes part
in choosing the pool), tested against same and all by SOAK's paired t-test over the folds.

Additive learners (``run.closed_form.is_additive``) never fit from rows: the statistics of every
(subset, fold) cell are computed in one pass and every inner fit is a sum of cells, fitted on
the client; each greedy round costs one scoring pass over the table. Other learners run their
inner fits as plan fits on the cluster, within a budget (``max_inner_fits``).
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from dask.base import tokenize
from sklearn.base import BaseEstimator

from ..option_checks import checked
from ..results.estimates import ESTIMATE_COLUMNS, fold_estimates
from ..results.verdicts import check_margin, with_verdicts
from ..run.closed_form import is_additive
from ..run.entry import entry_point
from ..run.fitting import FitState
from ..run.onepass import BlockStats, TrainStats, block_stats
from ..run.session import assemble, result_attrs
from ..run.strategies import Fitted, OnePass, fit_pooled
from ..run_options import RunOptions
from ..schema import LOWER_IS_BETTER, MEASURES, PAIRED_TEST_COLUMNS
from ..settings import SETTINGS, check_alpha
from ..split.plan import Plan, Selection
from ..split.search import TRAIN_SETS, Key, SearchOuter, SearchRound
from ..tables.table import Table
from ..user_warning import warn_user
from .matrix import Prepared, paired_pvalues, prepare

#: Title of the results of ``search_subsets``.
TITLE = "soak_dask train-subset search: greedy pools, nested in SOAK's folds"
#: Default budget of inner fits per learner that is not additive (declared in settings).
MAX_INNER_FITS: int = SETTINGS["max_inner_fits"].default
#: Columns of ``search_pvalues``: its keys, the paired-test columns of every design
#: (``schema.PAIRED_TEST_COLUMNS``), then ``verdict``.
SEARCH_PVALUE_COLUMNS: list[str] = ["learner", "test_subset", *PAIRED_TEST_COLUMNS, "verdict"]
# The comparisons of search_pvalues: (compare, reference).
_COMPARISONS = (("greedy", "same"), ("greedy", "all"), ("all", "same"))


@dataclass(frozen=True)
class KnownStats(OnePass):
    """``OnePass`` from block statistics computed once for the whole search: every fit of an
    additive learner, inner or outer, is a sum of (subset, fold) cells fitted on the client,
    and each round costs one scoring pass over the table."""

    stats: BlockStats | None = None

    def models(self, ctx: Any, pairs: list[tuple[int, str]]) -> tuple[Fitted, list]:
        fitted = {pair: (self._fit(ctx, self.stats, *pair), ctx.spec(*pair)) for pair in pairs}
        # Named by what made them: dask then neither walks nor hashes hundreds of models.
        made = [
            (f, n, str(ctx.plan.fits.at[f, "train"]), repr(ctx.estimators[n])) for f, n in pairs
        ]
        return Fitted(fitted, tokenize(self.stats.moments.count, made)), []

    @staticmethod
    def _fit(ctx: Any, stats: BlockStats, fit_id: int, learner: str) -> FitState:
        """``OnePass._fit``, pooling the cells with numpy rather than a frame per fit."""
        pooled = pool_cells(stats, ctx.plan.fits.at[fit_id, "train"], ctx.table.subset)
        return fit_pooled(ctx, learner, pooled)


def pool_cells(stats: BlockStats, train: Selection, subset: str) -> TrainStats:
    """Pooled moments of ``train``, a selection of (subset, fold) cells (``train_stats``)."""
    mask = np.ones(stats.moments.count.shape[:2], dtype=bool)
    for term in train.terms:
        if term.column == subset:
            hit = np.isin(np.asarray(stats.subsets, dtype=object), list(term.values))[:, None]
        else:
            hit = np.isin(np.arange(1, stats.n_folds + 1), list(term.values))[None, :]
        mask &= ~hit if term.exclude else hit
    return TrainStats(stats.moments.take(mask).pool(0), stats.classes, len(stats.features))


def inner_fit_bound(n_subsets: int, n_folds: int, max_pool: int) -> int:
    """At most how many inner fits the search makes for one learner that is not additive.

    The first round scores {σ} and every pair {σ, c} for each pair of folds {κ, j} left out
    (a pair's fit serves both orders: S·C(K,2) + C(S,2)·C(K,2) fits); round r ≥ 1 scores at most
    S − 1 − r candidates for each of the K·S searches over K − 1 inner folds.

    Examples
    --------
    >>> inner_fit_bound(4, 10, 4)  # AZtrees' region4, 10 folds
    1530
    """
    pairs = n_folds * (n_folds - 1) // 2
    first = n_subsets * pairs + n_subsets * (n_subsets - 1) // 2 * pairs
    later = sum(
        n_folds * n_subsets * (n_subsets - 1 - r) * (n_folds - 1) for r in range(1, max_pool - 1)
    )
    return first + later


@entry_point
@checked("search")
def search_subsets(
    table: Table,
    learners: Mapping[str, Any] | Sequence[Any] | BaseEstimator | str | None = None,
    *,
    n_folds: int | None = None,
    seed: int = 1,
    threshold: float = 0.01,
    max_pool: int | None = None,
    measures: Sequence[str] | str | None = None,
    max_inner_fits: int = MAX_INNER_FITS,
    stratify: bool = True,
    options: RunOptions | None = None,
) -> xr.Dataset:
    """For each test subset, choose the train subsets to pool by greedy forward selection,
    and estimate the error of doing so by nested cross-validation.

    Parameters
    ----------
    table : Table
        From ``soak_dask.load_table``, with at least two subsets.
    learners : dict, list, estimator or str, optional
        As for ``soak_dask.soak`` (default: featureless and a linear model).
    n_folds : int, optional
        K of the outer folds (default 10; with a fold column, read from it, and ``n_folds`` or
        ``stratify`` refused): SOAK's folds for this seed. The inner folds of outer fold κ are
        the other K − 1 folds.
    seed : int
        Seed of the folds and of built-in learners.
    threshold : float
        A subset joins the pool only if it lowers the inner-CV value of the first measure by
        more than ``threshold`` × its current value (relative: 0.01 is 1 %; 0 takes any
        decrease).
    max_pool : int, optional
        At most this many subsets in a pool, 2 to S (default S: the search may reach all).
    measures : str or list of str, optional
        The measures to score, as for ``soak_dask.soak``: the first is what the search
        minimises (maximises, for accuracy, AUC or R²; ``attrs["search_measure"]``), every one
        is scored on the outer folds. Default: error (classification) or mse (regression)
        only: AUC and log loss keep every test row's scores until a fit is finished, a cost
        the search's many fits multiply. Formerly ``measure`` (one name).
    max_inner_fits : int
        Budget of inner fits per learner that is not additive: a ValueError before any fit
        when ``inner_fit_bound`` exceeds it. Additive learners are not counted (no inner fit
        reads rows).
    stratify
        As for ``soak_dask.soak``.
    options : RunOptions, optional
        How the run runs (``soak_dask.RunOptions``, default ``RunOptions()``): its client,
        progress bar, checkpoint, ``persist``, ``error_score`` and fitting strategy
        (``onepass``, ``max_train_rows``, ``incremental``, ``epochs``), as for
        ``soak_dask.soak``. A failed inner fit makes its candidate ineligible. The checkpoint
        keeps each greedy round's fits and the outer fits as they finish, and a run given the
        same checkpoint and settings computes only the fits missing (the rounds replay from the
        saved scores, so they choose the same pools). The fitting options apply to the inner and
        the outer fits: additive learners from one pass of block statistics (not under a row
        cap, whose samples have none: their inner fits then count against ``max_inner_fits``); a
        train set larger than ``max_train_rows`` fitted on a seeded, stratified sample of
        exactly that many rows; ``partial_fit`` learners fed one block of train rows per task,
        ``epochs`` times.

    Returns
    -------
    xarray.Dataset
        Each measure, ``n_train``, ``n_test`` and timings with dims (learner, test_subset, fold,
        train_set), train_set ∈ (same, greedy, all) scored on the outer test fold; ``pool``
        (learner, test_subset, fold): the chosen subsets joined by "+"; ``chosen`` (…,
        train_subset): whether each subset is in the pool; ``inner_same`` and ``inner_greedy``:
        inner-CV values of {σ} and of the pool; ``inner_fits``, ``one_pass`` and
        ``search_seconds`` per learner. ``search_pvalues``, ``search_pools`` and
        ``search_stability`` read it.
    """
    measures = MEASURES[table.task][:1] if measures is None else measures
    run = prepare(
        table, learners, "search_subsets", n_folds=n_folds, seed=seed, measures=measures,
        stratify=stratify, options=options,
    )  # fmt: skip
    fitting = run.session.fitting
    n_subsets = len(run.subsets)
    max_pool = _check_max_pool(max_pool, n_subsets, run.subsets)
    wanted = fitting.from_statistics and any(is_additive(e) for e in run.estimators.values())
    stats = _stats(run) if wanted else None
    additive = {n: stats is not None and bool(is_additive(e)) for n, e in run.estimators.items()}
    check_budget(additive, inner_fit_bound(n_subsets, run.n_folds, max_pool), max_inner_fits)
    own = {"threshold": threshold, "max_pool": max_pool, "max_inner_fits": max_inner_fits}
    settings = run.settings(TITLE, "search_subsets", search_measure=run.measures[0], **own)
    settings.update(fitting.settings())
    run.session.open_parts(settings)
    parts = []
    for number, name in enumerate(run.estimators):
        # The search's statistics serve additive learners; the others are fitted from rows.
        mine = dataclasses.replace(fitting, onepass=additive[name])
        strategies = mine.strategies(onepass=KnownStats(stats=stats))
        fits = partial(_fits, run, {name: run.estimators[name]}, strategies, settings, f"{number}-")
        start = time.perf_counter()
        pools, inner, n_fits = greedy(run, fits, threshold, max_pool)
        part = _outer(run, name, fits, pools, inner)
        seconds = time.perf_counter() - start
        extra = {"inner_fits": n_fits, "one_pass": int(additive[name]), "search_seconds": seconds}
        parts.append(part.assign({k: ("learner", [v]) for k, v in extra.items()}))
    return xr.concat(parts, dim="learner").assign_attrs(result_attrs(settings))


def _fits(
    run: Prepared,
    estimators: dict[str, BaseEstimator],
    strategies: list[Any],
    settings: dict[str, Any],
    prefix: str,
    plan: Plan,
    part: str,
) -> list[dict[str, Any]]:
    """The records of one plan of one learner's search, in the checkpoint part
    ``prefix + part``."""
    return run.run(plan, strategies, settings, estimators, part=prefix + part)


def _check_max_pool(max_pool: Any, n_subsets: int, subsets: list) -> int:
    if n_subsets < 2:
        raise ValueError(
            f"the table has one subset ({subsets}): there is no train subset to add; give a "
            "subset column with at least two values"
        )
    if max_pool is None:
        return n_subsets
    if not 2 <= max_pool <= n_subsets:
        raise ValueError(
            f"max_pool={max_pool}: need 2 to {n_subsets} (the subsets), or None for no limit"
        )
    return int(max_pool)


def check_budget(additive: dict[str, bool], bound: int, budget: int) -> None:
    """Refuse a search whose learners fitted from rows (``additive[name]`` False) may need
    more than ``budget`` inner fits each (``bound``: ``inner_fit_bound``)."""
    heavy = [name for name, fast in additive.items() if not fast]
    if heavy and bound > budget:
        raise ValueError(
            f"the search may need up to {bound:,} inner fits per learner for {heavy} (learners "
            f"fitted from rows), over max_inner_fits={budget:,}; raise max_inner_fits, lower "
            "max_pool or n_folds, or use additive learners (featureless, linear, lda, "
            "gaussian_nb), whose inner fits are sums of block statistics"
        )


def _stats(run: Prepared) -> BlockStats | None:
    """The statistics of every (subset, fold) cell, one pass; None (with a warning) when
    they cannot be made (non-finite values): additive learners then fit from rows."""
    table = run.table.with_fold(run.data, run.table.fold)
    lazy = block_stats(table, run.subsets, run.n_folds, run.classes)
    try:
        return run.client.compute(lazy).result() if run.client is not None else lazy.compute()
    except ValueError as err:
        warn_user(f"block statistics unavailable ({err}); every learner fits from rows")
        return None


def greedy(
    run: Prepared, fits: Callable[[Plan, str], list], threshold: float, max_pool: int
) -> tuple[dict[Key, tuple], dict[tuple, float], int]:
    """Run every search (outer fold κ, test subset σ) of one learner, round by round: each
    round is one plan of the inner fits of every search still going, run by
    ``fits(plan, part)`` (part ``round-R`` of the checkpoint).

    Returns the chosen pool of each search, the inner-CV value of every pool scored (keyed
    (κ, σ, pool)) and the number of inner fits made.
    """
    folds = list(range(1, run.n_folds + 1))
    keys = [(k, s) for k in folds for s in run.subsets]
    pools: dict[Key, tuple] = {key: (key[1],) for key in keys}
    values: dict[tuple, float] = {}
    active, n_fits, rounds = list(keys), 0, 0
    while active:
        rounds += 1
        asked = {
            key: _candidates(pools[key], run.subsets, (*key, pools[key]) not in values)
            for key in active
        }
        design = SearchRound(asked)
        plan, index = design.plan(run.table, run.counts), design.pools()
        n_fits += len(plan.fits)
        records = fits(plan, f"round-{rounds}")
        values.update(_inner_values(run.measures[0], plan, index, records))
        still = []
        for key in active:
            best = _step(key, pools[key], asked[key], values, run.measures[0], threshold)
            if best is not None:
                pools[key] = best
                if len(best) < max_pool:
                    still.append(key)
        active = still
    return pools, values, n_fits


def _candidates(pool: tuple, subsets: list, with_pool: bool) -> list[tuple]:
    """The pools a round scores for one search: the pool plus each subset not in it (and the
    pool itself in the first round), subsets in the table's order."""
    grown = [tuple(s for s in subsets if s in pool or s == c) for c in subsets if c not in pool]
    return ([pool] if with_pool else []) + grown


def _step(
    key: Key, pool: tuple, asked: list[tuple], values: dict, measure: str, threshold: float
) -> tuple | None:
    """The pool that joins one subset to ``pool``, or None when none lowers the inner-CV
    value by more than ``threshold`` × the current one (ties: the first subset in order)."""
    sign = 1.0 if measure in LOWER_IS_BETTER else -1.0
    current = sign * values[(*key, pool)]
    scored = [
        (sign * values[(*key, c)], i, c)
        for i, c in enumerate(asked)
        if c != pool and np.isfinite(values[(*key, c)])
    ]
    if not scored:
        return None
    loss, _, best = min(scored)
    if np.isfinite(current) and not current - loss > threshold * abs(current):
        return None
    return best


def _inner_values(
    measure: str, plan: Plan, pools: list[tuple], records: list[dict[str, Any]]
) -> dict[tuple, float]:
    """The inner-CV value (mean over the inner folds; NaN if any failed) of each
    (κ, σ, pool) that the records of one round's plan score."""
    scores = pd.DataFrame.from_records(records)
    cells = plan.splits.merge(scores[["fit_id", "block", measure]], on=["fit_id", "block"])
    means = cells.groupby(["outer_fold", "test_subset", "pool"], sort=False)[measure].agg(
        lambda v: v.mean(skipna=False)
    )
    return {(int(k), s, pools[p]): float(v) for (k, s, p), v in means.items()}


def _outer(
    run: Prepared,
    name: str,
    fits: Callable[[Plan, str], list],
    pools: dict[Key, tuple],
    inner: dict[tuple, float],
) -> xr.Dataset:
    """One learner's outer scores (part ``outer`` of the checkpoint), with its pools and
    their inner-CV values."""
    folds = list(range(1, run.n_folds + 1))
    plan = SearchOuter(pools).plan(run.table, run.counts)
    records = fits(plan, "outer")
    ds = assemble(records, plan, [name], run.measures, {}).drop_vars("fit_id")
    grid = [[(k, s) for k in folds] for s in run.subsets]
    text = [["+".join(str(m) for m in pools[key]) for key in row] for row in grid]
    member = [[[t in pools[key] for t in run.subsets] for key in row] for row in grid]
    same = [[inner[(*key, (key[1],))] for key in row] for row in grid]
    chosen = [[inner[(*key, pools[key])] for key in row] for row in grid]
    cell = ("learner", "test_subset", "fold")
    return ds.assign(
        pool=(cell, np.array([text], dtype=object)),
        chosen=((*cell, "train_subset"), np.array([member], dtype=bool)),
        inner_same=(cell, np.array([same])),
        inner_greedy=(cell, np.array([chosen])),
    ).assign_coords(train_subset=np.array([str(t) for t in run.subsets], dtype=object))


def check_search(ds: xr.Dataset) -> str:
    """Check that ``ds`` is a ``search_subsets`` result; return its measure."""
    # "search": the name before every design had its own (stores of 0.x).
    if ds.attrs.get("design") not in ("search_subsets", "search") or "train_set" not in ds.dims:
        raise ValueError(
            "not a train-subset search result (from soak_dask.pooling.search_subsets): "
            f"design={ds.attrs.get('design')!r}, dims {list(ds.dims)}"
        )
    return str(ds.attrs["search_measure"])


def search_pvalues(
    ds: xr.Dataset, *, alpha: float = 0.05, margin: float | None = None
) -> pd.DataFrame:
    """The nested greedy estimate against same and all, and all against same (SOAK's own
    question, for reference): the paired t-test over the outer folds.

    Parameters
    ----------
    ds : xarray.Dataset
        From ``search_subsets``.
    alpha : float
        Level of the ``verdict`` column.
    margin : float, optional
        Equivalence margin in the measure's units (``soak_dask.results.verdicts``): adds
        ``margin`` and ``p_equivalence`` before ``verdict``, which reads "equivalent" where
        the two one-sided tests reject at alpha. None: no row does.

    Returns
    -------
    pandas.DataFrame
        One row per learner × test subset × comparison (greedy vs same, greedy vs all, all vs
        same), columns ``SEARCH_PVALUE_COLUMNS``; ``mean_diff`` = compare − reference (of the
        fold means, which the test tests; ``search_summary`` gives the pooled estimates);
        ``verdict`` "better" / "worse" when p < alpha, else "equivalent" (with a margin) or
        "no evidence of a difference".
    """
    measure = check_search(ds)
    alpha = check_alpha(alpha)
    margin = check_margin(margin)
    values = ds[measure]
    parts = [
        paired_pvalues(
            values.sel(train_set=reference, drop=True),
            values.sel(train_set=compare, drop=True),
            measure,
            names=(reference, compare),
        ).assign(order=i)
        for i, (compare, reference) in enumerate(_COMPARISONS)
    ]
    learners = {v: i for i, v in enumerate(ds["learner"].values.tolist())}
    subsets = {v: i for i, v in enumerate(ds["test_subset"].values.tolist())}
    out = pd.concat(parts, ignore_index=True)
    keys = pd.DataFrame(
        {"l": out["learner"].map(learners), "s": out["test_subset"].map(subsets), "o": out["order"]}
    )
    out = out.loc[keys.sort_values(["l", "s", "o"], kind="stable").index]
    out = with_verdicts(out, alpha, margin)
    extra = ["margin", "p_equivalence"] if margin is not None else []
    return out[SEARCH_PVALUE_COLUMNS[:-1] + extra + ["verdict"]].reset_index(drop=True)


def search_summary(ds: xr.Dataset) -> pd.DataFrame:
    """The nested estimate of the search and those of same and all, each as the fold mean ±
    SD beside the pooled estimate and the fold sizes
    (``soak_dask.results.estimates.fold_estimates``: the rule of every design).

    Returns
    -------
    pandas.DataFrame
        One row per learner × test subset × train set (same, greedy, all): ``measure`` (the
        search's), then ``ESTIMATE_COLUMNS`` (``weighted_mean``: the pooled estimate).
    """
    measure = check_search(ds)
    values = ds[measure].transpose("learner", "test_subset", "train_set", "fold")
    out = fold_estimates(values, ds["n_test"] if "n_test" in ds.data_vars else None)
    out.insert(3, "measure", measure)
    return out[["learner", "test_subset", "train_set", "measure", *ESTIMATE_COLUMNS]]


def search_pools(ds: xr.Dataset) -> pd.DataFrame:
    """The chosen pool of every learner, test subset and outer fold, with its size, its
    inner-CV value beside same's and the outer scores of same, greedy and all."""
    measure = check_search(ds)
    outer = (
        ds[measure]
        .to_dataset("train_set")
        .rename({name: f"{measure}_{name}" for name in TRAIN_SETS})
    )
    frame = xr.merge([ds[["pool", "inner_same", "inner_greedy"]], outer]).to_dataframe()
    frame.insert(1, "size", ds["chosen"].sum("train_subset").to_series())
    return frame.reset_index()


def search_stability(ds: xr.Dataset) -> pd.DataFrame:
    """How stable the chosen pools are across the outer folds, per learner and test subset.

    Columns: ``n_folds``; ``modal_pool`` (the pool chosen most often, first in fold order on
    ties) and ``modal_share`` (the share of folds choosing it); ``mean_size`` (subsets per
    pool); ``jaccard``: the mean Jaccard similarity |P_i ∩ P_j| / |P_i ∪ P_j| over pairs of
    folds (1: every fold chose the same pool); ``only_same``: the share of folds whose pool is
    the test subset alone. How often each train subset is chosen is
    ``ds["chosen"].mean("fold")``.
    """
    check_search(ds)
    rows = []
    for learner in ds["learner"].values:
        for subset in ds["test_subset"].values:
            cell = ds.sel(learner=learner, test_subset=subset)
            chosen = cell["chosen"].transpose("fold", "train_subset").values
            pools = [frozenset(np.flatnonzero(row)) for row in chosen]
            text = [str(p) for p in cell["pool"].values]
            counts = pd.Series(text).value_counts(sort=False)
            pairs = list(itertools.combinations(pools, 2))
            jaccard = np.mean([len(a & b) / len(a | b) for a, b in pairs]) if pairs else 1.0
            rows.append(
                {
                    "learner": learner,
                    "test_subset": subset,
                    "n_folds": len(pools),
                    "modal_pool": counts.idxmax(),
                    "modal_share": counts.max() / len(pools),
                    "mean_size": float(np.mean([len(p) for p in pools])),
                    "jaccard": float(jaccard),
                    "only_same": float(np.mean([len(p) == 1 for p in pools])),
                }
            )
    return pd.DataFrame(rows)
