"""The extra fits of the nested CV interval (Bates, Hastie and Tibshirani 2023; ``evaluate(...,
inference="ncv", inference_repeats=R)``), as mlr3inferr's ``rsmp("ncv")`` makes them.

R times, the training rows are dealt into K folds afresh, as the design's own K-fold CV deals
them (class-stratified; the same ``balance``; rows only: grouped rows are refused), seeded
by a salted hash of the run's seed, so the same seed gives the same splits whatever the workers.
On each split the design is run again (``halves.rerun``: the run's own options and learners,
K-fold CV on the split's folds, given as a fold column): once on all the rows (the *outer*
blocks: each fold scored by the model of the other K − 1), and once per fold k on the other
K − 1 folds, which are that run's folds (the *inner* (K − 1)-fold CV of the outer train set).
That is R (K + 1) runs of the design, R·K² fits per learner.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import xarray as xr

from ..schema import POINTWISE, SQUARED_LOSSES
from ..split.outer import key_name, outer_design
from ..tables.table import FOLD_COLUMN, Table
from .halves import inference_seed, rerun

__all__ = ["NCV_DIMS", "ncv_split", "with_ncv"]

#: Dims of the ``ncv_<measure>`` and ``ncv_n_test`` variables. ``ncv_fold`` 0 is the outer
#: fold ``ncv_outer`` scored by the model of the other folds; 1..K − 1 the folds of the inner
#: CV on those other folds (in the order of their outer fold numbers).
NCV_DIMS = ("learner", "inference_repeat", "ncv_outer", "ncv_fold")
# A split's runs: K-fold CV on its fold column (no folds to draw, so no K or dealing options).
_ON_GIVEN_FOLDS = {
    "outer": "cv", "outer_folds": None, "outer_repeats": None, "train_ratio": None,
    "balance": "class", "group_assignment": "rows", "prediction": None, "clustering": None,
}  # fmt: skip


def ncv_split(table: Table, options: Mapping[str, Any], seed: int) -> Table:
    """`table` with a fold column (``FOLD_COLUMN``) of one fresh K-fold split, dealt as the
    run's K-fold CV (`options`: its ``outer_folds``, ``balance``, ``group_assignment``), seeded
    by `seed`."""
    dealt = {k: options[k] for k in ("outer_folds", "balance", "group_assignment")}
    design = outer_design("cv", seed, dealt)
    keyed = design.add_keys(table)
    data = keyed.data.rename(columns={key_name("fold", 1): FOLD_COLUMN})
    return dataclasses.replace(keyed, data=data, fold=FOLD_COLUMN)


def _without_fold(split: Table, k: int) -> Table:
    """The rows of `split` outside fold `k`, their folds numbered 1..K − 1 in order."""
    data = split.data[split.data[FOLD_COLUMN] != k]
    fold = data[FOLD_COLUMN]
    renumbered = data.assign(**{FOLD_COLUMN: fold.where(fold < k, fold - 1)})
    return dataclasses.replace(split, data=renumbered)


def _blocks(run: xr.Dataset, learners: list[str], names: list[str]) -> dict[str, np.ndarray]:
    """Each of `names` of a one-repeat K-fold `run`, (learner[, versus], fold), in `learners`'
    order; a loss-difference variable the run lacks is left out."""
    out = {}
    for name in names:
        if name not in run.data_vars:
            continue
        var = run[name].sel(learner=learners, repeat=1)
        if "versus" in var.dims:
            var = var.sel(versus=learners).transpose("learner", "versus", "fold")
        out[name] = np.asarray(var.transpose("learner", ..., "fold").values, dtype=np.float64)
    return out


def with_ncv(
    ds: xr.Dataset,
    table: Table,
    run: Callable[..., xr.Dataset],
    options: Mapping[str, Any],
    repeats: int,
) -> xr.Dataset:
    """`ds` with the nested CV blocks of `repeats` fresh K-fold splits of `table` (``run``:
    evaluate, with the run's `options`): ``ncv_<measure>`` and ``ncv_n_test`` (`NCV_DIMS`),
    for log loss, MSE and MAE ``ncv_loss_sq_<measure>`` (`NCV_DIMS`: Σ l² over the block's
    rows), for pointwise measures with two or more learners ``ncv_loss_diff_sq_<measure>``
    (learner, versus, inference_repeat, ncv_outer, ncv_fold: Σ (l_learner − l_versus)² over
    the block's rows), and ``attrs["inference"]``, ``["inference_repeats"]`` and
    ``["inference_fits"]`` (the fits of every run)."""
    k = int(ds.attrs["outer_folds"])
    if k < 3:
        raise ValueError(
            f"inference='ncv' needs K >= 3 folds (an inner CV of K - 1 >= 2 folds), but the "
            f"table allows only outer_folds={k} (see the warning on capping K)"
        )
    learners = [str(v) for v in ds["learner"].values]
    names = [*ds.attrs["measures"], "n_test"]
    names += [f"loss_diff_sq_{m}" for m in ds.attrs["measures"] if m in POINTWISE]
    names += [f"loss_sq_{m}" for m in ds.attrs["measures"] if m in SQUARED_LOSSES]
    found: dict[str, np.ndarray] = {}
    fits = 0
    for r in range(repeats):
        seed = inference_seed(int(options["seed"]), "ncv_folds", r + 1)
        split = ncv_split(table, options, seed)
        # The outer run, then fold j's inner run: the blocks (r, every outer fold, 0) and
        # (r, j, 1..K-1).
        parts = [(split, (r, slice(None), 0))]
        parts += [(_without_fold(split, j), (r, j - 1, slice(1, None))) for j in range(1, k + 1)]
        for part, at in parts:
            done = rerun(run, part, options, seed, **_ON_GIVEN_FOLDS)
            fits += int(done.attrs["n_fits"])
            for name, values in _blocks(done, learners, names).items():
                shape = (*values.shape[:-1], repeats, k, k)
                found.setdefault(name, np.full(shape, np.nan))[(..., *at)] = values
    return _recorded(ds, found, repeats, k, fits)


def _recorded(
    ds: xr.Dataset, found: dict[str, np.ndarray], repeats: int, k: int, fits: int
) -> xr.Dataset:
    """`ds` with the blocks `found` as ``ncv_<name>`` variables and the inference attrs."""
    out = ds.assign_coords(
        inference_repeat=np.arange(1, repeats + 1),
        ncv_outer=np.arange(1, k + 1),
        ncv_fold=np.arange(k),
    )
    for name, values in found.items():
        dims = NCV_DIMS if values.ndim == 4 else ("learner", "versus", *NCV_DIMS[1:])
        out[f"ncv_{name}"] = (dims, values)
        about = ds[name].attrs.get("long_name", name) if name in ds.data_vars else name
        out[f"ncv_{name}"].attrs["long_name"] = (
            f"{about}: nested CV block (ncv_fold 0: outer fold ncv_outer, scored by the model of "
            "the other folds; 1..K-1: the inner CV's folds on those other folds)"
        )
    out.attrs.update(inference="ncv", inference_repeats=repeats, inference_fits=fits)
    return out
