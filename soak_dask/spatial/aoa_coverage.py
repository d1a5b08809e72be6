"""SOAK meets the area of applicability: how much of each test block lies inside the AOA of the
train set that predicted it.

A SOAK (or transfer) result does not hold its rows; its settings (seed, folds, train types)
rebuild its plan on the table -- the same folds, assigned on the cluster from the same seed --
and each distinct train set of the plan is one AOA (``soak_dask.spatial.aoa.train_di``, its
rows gathered on the cluster). Each test block's rows are then compared with that train set
block by block on the workers, and ``aoa_share`` -- the share of the block's rows inside the
AOA -- lands in the result cells, beside the scores. ``aoa_sentences`` puts the two side by
side: "other fails on S (error 0.31 vs 0.12, p = 0.002): 71 % of S lies outside what NE+NW
cover, 3 % outside what S covers".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import dask
import numpy as np
import pandas as pd
import xarray as xr

from ..dask_client import current_client
from ..pooling.matrix import default_measure, transfer_pvalues
from ..results.applicability import (
    aoa_outside,
    comparison_sentence,
    first_learner,
    share_text,
    soak_aoa_sentences,
)
from ..run.fitting import select_rows
from ..run.session import persisted
from ..split.folds import block_counts
from ..split.plan import Plan, Selection
from ..split.same_other_all import SameOtherAll
from ..split.transfer import Transfer
from ..tables.arrays import float_array
from ..tables.table import Table, check_table
from .aoa import TrainDI, block_di, check_features, check_weights, train_di

__all__ = ["aoa_coverage", "aoa_sentences"]

#: Train sets larger than this are refused unless sampled (``sample=``): the training DI
#: compares every pair of training rows.
MAX_TRAIN_ROWS = 50_000


def aoa_coverage(
    result: xr.Dataset,
    table: Table,
    *,
    features: Sequence[str] | None = None,
    weights: Mapping[str, float] | pd.Series | None = None,
    train_folds: bool = True,
    sample: int | None = None,
    max_train_rows: int = MAX_TRAIN_ROWS,
    persist: bool | None = None,
    client: Any = None,
) -> xr.Dataset:
    """``result`` with ``aoa_share``: per result cell, the share of its test block's rows inside
    the AOA of its train set.

    Parameters
    ----------
    result : xarray.Dataset
        From ``soak_dask.soak`` (without down-sampled sizes) or ``soak_dask.transfer``.
    table : Table
        The table the result was computed on (its label, subset and fold roles); the folds
        are rebuilt from the result's seed as the run assigned them.
    features : sequence of str, optional
        Predictors of the AOA (default: the result's features).
    weights : dict or Series, optional
        ``{feature: weight}``, as for ``soak_dask.aoa``.
    train_folds : bool
        Measure each training row's DI against the rows of the train set outside its own
        fold (the train set's K - 1 folds serve as its CV folds, as CAST uses a model's CV
        folds); False: against all other rows of the train set.
    sample : int, optional
        Compute the AOA of a train set larger than ``max_train_rows`` from a seeded sample of
        about this many of its rows (each row kept with probability sample / rows, a hash of
        the result's seed and the row's place, as ``soak``'s row cap). Default: refuse them.
    max_train_rows : int
        Largest train set taken whole.
    persist : bool, optional
        Keep the table's feature and key columns in cluster memory for the passes (two per
        train set: its rows, its test blocks); False reads them from storage each time;
        None (default): kept when they fit, as ``soak_dask.soak`` decides.
    client : distributed.Client, optional
        Default: the current client, if any.

    Returns
    -------
    xarray.Dataset
        ``result`` plus ``aoa_share`` (float, NaN for a block without rows), ``aoa_threshold``
        and ``aoa_train_rows`` (training rows the AOA used) over the result's dims but
        ``learner``; the AOA settings in attrs ``aoa_*``.
    """
    check_table(table, "aoa_coverage")
    design = _design(result, table)
    features = check_features(features or list(result.attrs.get("features", [])))
    w = check_weights(weights, features)
    client = current_client() if client is None else client
    if sample is not None and (
        isinstance(sample, bool) or not isinstance(sample, int) or sample < 2
    ):
        raise ValueError(f"sample={sample!r}: need a whole number of rows, 2 or more")
    table = design.add_keys(table)
    counts = block_counts(table)
    plan = design.plan(table, counts)
    _check_plan(plan, result)
    if train_folds and len(plan.coords["fold"]) < 3:
        raise ValueError(
            f"train_folds=True with {len(plan.coords['fold'])} folds: a train set holds one "
            "fold only, so no training row has rows outside its fold; pass train_folds=False"
        )
    sizes = _train_sizes(plan, counts)
    too_big = {i: n for i, n in sizes.items() if n > max_train_rows}
    if too_big and sample is None:
        fit_id, n = max(too_big.items(), key=lambda kv: kv[1])
        raise ValueError(
            f"{len(too_big)} train sets have more than max_train_rows={max_train_rows:,} rows "
            f"(the largest, fit {fit_id}, {n:,}): the training DI compares every pair of rows "
            f"({n * (n - 1) // 2:,} pairs); pass sample=N to use about N rows of each, or raise "
            "max_train_rows"
        )
    data = table.data[_columns(table, features)]
    data, _ = persisted(data, persist, client, int(counts["n"].sum()))
    weights_map = dict(zip(features, w, strict=True))
    seed = int(result.attrs.get("seed", 1))
    per_fit = {}
    for fit_id, fit in plan.fits.iterrows():
        rate = None if fit_id not in too_big else min(1.0, sample / sizes[fit_id])
        rows = _train_rows(data, table, fit["train"], rate, seed, client)
        folds = table.fold if train_folds else None
        params = train_di(rows, features=features, weights=weights_map, folds=folds, client=client)
        tests = tuple(plan.blocks.loc[b, "test"] for b in fit["blocks"])
        counts = _inside(data, params, tests, client)
        per_fit[fit_id] = (params, dict(zip(fit["blocks"], counts, strict=True)))
    return _assemble(result, plan, per_fit, features, w, sample if too_big else 0, train_folds)


def _design(result: xr.Dataset, table: Table) -> SameOtherAll | Transfer:
    """The plan builder the result was made with, from its settings; checked against the
    table's roles."""
    a = result.attrs
    if a.get("design") not in (None, "soak", "transfer") or "test_subset" not in result.dims:
        raise ValueError(
            f"aoa_coverage takes results of soak or transfer, not design={a.get('design')!r}"
        )
    if "train_size" in result.dims:
        raise ValueError(
            "aoa_coverage takes results without down-sampled train sizes (sizes=-1): a "
            "down-sampled train set's AOA differs from its full set's"
        )
    roles = {"label": table.label, "subset": table.subset if table.user_subset else ""}
    roles["fold"] = table.fold or ""
    differ = {k: (a.get(k) or "", v) for k, v in roles.items() if (a.get(k) or "") != v}
    if differ:
        shown = ", ".join(f"{k}: result {r!r}, table {t!r}" for k, (r, t) in differ.items())
        raise ValueError(
            f"the table's roles differ from the result's ({shown}); load the table "
            "the result was computed on"
        )
    n_folds = int(a["n_folds"]) if not table.fold else None
    seed, stratify = int(a.get("seed", 1)), bool(a.get("stratify", 1))
    if a.get("design") == "transfer":
        return Transfer(n_folds, seed=seed, stratify=stratify)
    types = a.get("train_types", list(result["train_type"].values))
    balance, groups = a.get("balance", "class"), a.get("group_assignment", "rows")
    return SameOtherAll(
        n_folds, types, seed=seed, stratify=stratify, balance=balance, group_assignment=groups
    )


def _check_plan(plan: Plan, result: xr.Dataset) -> None:
    """Refuse a table whose rebuilt plan is not the result's (other subsets, folds, fits)."""
    expected = _cells(plan, plan.splits["fit_id"])
    got = result["fit_id"].reset_coords(drop=True)
    same_coords = all(
        [str(v) for v in expected[d].values] == [str(v) for v in got[d].values] for d in plan.dims
    )
    if not same_coords or not (expected.values == got.transpose(*plan.dims).values).all():
        raise ValueError(
            "the table does not give this result's plan (its subsets, folds or train sets "
            f"differ: {dict(plan.coords)} here); give the table the result was computed on"
        )


def _cells(plan: Plan, values: pd.Series | pd.DataFrame) -> xr.DataArray | xr.Dataset:
    """``values`` (aligned with ``plan.splits``) over the plan's dims, in its coordinate
    order, subsets named as strings (as ``run.session.assemble`` names them)."""
    keys = plan.splits[list(plan.dims)].copy()
    coords = dict(plan.coords)
    for dim in ("train_subset", "test_subset"):
        if dim in keys:
            keys[dim] = keys[dim].map(str)
            coords[dim] = [str(v) for v in coords[dim]]
    index = pd.MultiIndex.from_frame(keys)
    framed = values.set_axis(index, axis=0)
    return framed.to_xarray().reindex(coords)


def _train_sizes(plan: Plan, counts: pd.DataFrame) -> dict[int, int]:
    """Rows of each fit's train set, from the block counts (no pass over the data)."""
    return {i: int(counts.loc[f.mask(counts), "n"].sum()) for i, f in plan.fits["train"].items()}


def _columns(table: Table, features: tuple[str, ...]) -> list[str]:
    missing = [f for f in features if f not in table.data.columns]
    if missing:
        raise ValueError(f"features {missing} are not columns of the table ({table.source})")
    keys = [table.subset, table.fold, table.label]
    return list(dict.fromkeys([*features, *keys]))


def _train_rows(data, table: Table, train: Selection, rate, seed: int, client) -> pd.DataFrame:
    """The train set's rows (a seeded sample of them at ``rate``), gathered from the cluster."""
    rates = None if rate is None else (rate,)
    args = (train, (), rates, seed, table.label, None)
    rows = data.map_partitions(select_rows, *args, meta=data._meta)
    return client.compute(rows).result() if client is not None else rows.compute()


def _block_counts(part: pd.DataFrame, matrix, consts, threshold, tests, features) -> np.ndarray:
    """(inside, with data) rows of each test block in one partition."""
    out = np.zeros((len(tests), 2), dtype=np.int64)
    for i, test in enumerate(tests):
        rows = part.loc[test.mask(part)]
        if len(rows):
            di = block_di(float_array(rows, features), matrix, *consts)[0]
            out[i] = (di <= threshold).sum(), np.isfinite(di).sum()
    return out


def _inside(data, params: TrainDI, tests: tuple, client) -> list[np.ndarray]:
    """Per test block, rows inside the AOA of ``params`` and rows with data."""
    matrix = params.matrix
    ref = dask.delayed(client.scatter(matrix, broadcast=True)) if client else dask.delayed(matrix)
    consts = (params.center, params.scale, params.weights, params.mean_distance, None)
    args = (consts, params.threshold, tests, params.features)
    parts = [dask.delayed(_block_counts, pure=True)(part, ref, *args) for part in data.to_delayed()]
    total = dask.delayed(sum)(parts)
    counts = client.compute(total).result() if client is not None else total.compute()
    return list(counts)


def _assemble(result, plan, per_fit, features, w, sample, train_folds) -> xr.Dataset:
    """``aoa_share``, ``aoa_threshold`` and ``aoa_train_rows`` over the result's cells."""
    share, thr, n = [], [], []
    for fit_id, block in zip(plan.splits["fit_id"], plan.splits["block"], strict=True):
        params, counts = per_fit[fit_id]
        inside, with_data = counts[block]
        share.append(inside / with_data if with_data else np.nan)
        thr.append(params.threshold)
        n.append(len(params.matrix))
    frame = pd.DataFrame({"aoa_share": share, "aoa_threshold": thr, "aoa_train_rows": n})
    added = _cells(plan, frame)
    attrs = {
        "aoa_features": list(features),
        "aoa_weights": [float(v) for v in w],
        "aoa_sample": int(sample or 0),
        "aoa_train_folds": int(train_folds),
    }
    dims = plan.dims
    coords = {d: result[d].variable for d in dims}  # the result's own (object) coordinates
    values = {k: xr.DataArray(added[k].transpose(*dims).values, coords, dims) for k in added}
    out = result.assign(values)
    return out.assign_attrs(attrs)


def aoa_sentences(
    ds: xr.Dataset, *, learner: str | None = None, measure: str | None = None, alpha: float = 0.05
) -> list[str]:
    """One sentence per comparison, the p-value's verdict beside the AOA coverage.

    For a SOAK result: each test subset and each of other / all against same, e.g. "other
    fails on S (error 0.31 vs 0.12 for same, p = 0.002): 71 % of S lies outside what NE+NW
    cover, 3 % outside what S covers" (shares of the test rows, mean over folds;
    ``soak_dask.results.applicability``). For a transfer result: each off-diagonal cell
    against the diagonal. ``learner`` default: the first learner that is not featureless;
    ``measure`` default: the result's first.
    """
    if "aoa_share" not in ds:
        raise ValueError("the results have no aoa_share: run soak_dask.aoa_coverage on them first")
    measure = measure or default_measure(ds)
    if ds.attrs.get("design") == "transfer":
        return _transfer_sentences(ds, first_learner(ds, learner), measure, alpha)
    return soak_aoa_sentences(ds, learner=learner, measure=measure, alpha=alpha)


def _transfer_sentences(ds: xr.Dataset, learner: str, measure: str, alpha: float) -> list[str]:
    outside = aoa_outside(ds)
    tests = transfer_pvalues(ds, measure, alpha=alpha)
    tests = tests[(tests["learner"] == learner) & (tests["verdict"] != "same")]
    lines = []
    for row in tests.itertuples():
        t, s = str(row.train_subset), str(row.test_subset)
        lines.append(
            comparison_sentence(
                f"a model trained on {t}",
                s,
                row.verdict,
                measure,
                (row.compare_mean, row.reference_mean, f"trained on {s} itself"),
                row,
            )
            + f": {share_text(outside.sel(train_subset=t, test_subset=s))} of {s} lies outside "
            f"what {t} covers, {share_text(outside.sel(train_subset=s, test_subset=s))} outside "
            f"what {s} covers"
        )
    return lines
