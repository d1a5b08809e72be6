"""Shift summaries of SOAK and transfer results, as users of WILDS and TableShift read them:
each test subset's score and test rows, the worst subset, and the gap between a model of the
subset itself (in-subset, SOAK's *same*) and models of the other subsets (out-of-subset).

Scores are pooled (``summaries.fold_stats``' row-weighted estimate: every test row once), as
WILDS' ``compute_group_wise`` computes a group's metric on all its rows; subsets without test
rows are ignored when the worst is chosen, as there.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from ..schema import LOWER_IS_BETTER, REFERENCE
from ..stats.mean_tests import base_measure
from .estimates import fold_estimates
from .kinds import as_name_list

__all__ = ["SHIFT_COLUMNS", "shift_lines", "shift_summary"]

#: Columns of `shift_summary`.
SHIFT_COLUMNS: list[str] = [
    "learner",
    "train_type",
    "test_subset",
    "measure",
    "n_test",
    "mean",
    "weighted_mean",
    "worst",
    "gap",
]


def _measure(ds: xr.Dataset, measure: str | None) -> str:
    if measure is None:
        listed = as_name_list(ds.attrs.get("measures", []))
        names = [m for m in listed if m in ds.data_vars]
        if not names:
            raise ValueError("the results do not list their measures: pass measure=")
        return names[0]
    if measure not in ds.data_vars:
        raise ValueError(f"measure={measure!r} is not in the results: {list(ds.data_vars)}")
    return measure


def _cells(ds: xr.Dataset, measure: str) -> pd.DataFrame:
    """Per learner × train type × test subset: fold mean and pooled estimate, and test rows.
    A transfer matrix's diagonal is ``same``; its ``other`` averages the other train
    subsets' cells (each scores the same test rows)."""
    values = ds[measure].drop_vars("fit_id", errors="ignore")
    sizes = ds["n_test"] if "n_test" in ds.data_vars else None
    if "train_subset" in values.dims:
        values = values.transpose("learner", "train_subset", "test_subset", "fold")
        cells = fold_estimates(values, sizes)
        same = cells["train_subset"].astype(str) == cells["test_subset"].astype(str)
        cells["train_type"] = np.where(same, REFERENCE, "other")
    elif "train_type" in values.dims:
        values = values.transpose("learner", "train_type", "test_subset", "fold")
        cells = fold_estimates(values, sizes)
    else:
        raise ValueError(
            "shift_summary reads SOAK results (dims learner, test_subset, fold, train_type) or "
            f"a transfer matrix (train_subset, test_subset); these have dims {list(ds.dims)}"
        )
    rows = np.zeros(len(cells)) if sizes is None else _test_rows(values, sizes)
    cells["n_test"] = rows
    keys = ["learner", "train_type", "test_subset"]
    out = cells.groupby(keys, sort=False)[["n_test", "mean", "weighted_mean"]].mean()
    out = out.reset_index()
    # Learners and subsets in the results' order, same first, then other, then all.
    rank = {
        "learner": {v: i for i, v in enumerate(ds["learner"].values.tolist())},
        "train_type": {REFERENCE: 0, "other": 1, "all": 2},
        "test_subset": {v: i for i, v in enumerate(ds["test_subset"].values.tolist())},
    }
    order = pd.DataFrame({k: out[k].map(rank[k]) for k in keys})
    return out.loc[order.sort_values(keys, kind="stable").index].reset_index(drop=True)


def _test_rows(values: xr.DataArray, sizes: xr.DataArray) -> np.ndarray:
    """Test rows of each cell over its scored folds, in `fold_estimates`' row order."""
    rows = sizes.broadcast_like(values).where(values.notnull(), 0).sum("fold")
    return np.asarray(rows.transpose(*values.dims[:-1]).values, dtype=np.float64).ravel()


def shift_summary(ds: xr.Dataset, measure: str | None = None) -> pd.DataFrame:
    """Each test subset's score per learner and train type, the worst subset and the
    out-of-subset gap.

    Parameters
    ----------
    ds : xarray.Dataset
        SOAK results (train types same / other / all) or a transfer matrix (``same``: its
        diagonal; ``other``: the mean over the other train subsets' cells).
    measure : str, optional
        Default: the results' first measure.

    Returns
    -------
    pandas.DataFrame
        `SHIFT_COLUMNS`, one row per learner × train type × test subset: ``n_test`` (test rows
        over the folds), ``mean`` (fold mean), ``weighted_mean`` (pooled: every test row once),
        ``worst`` (the subset of largest pooled error, or smallest accuracy, AUC, R², of its
        learner and train type; subsets without test rows never are), ``gap``: the pooled
        score minus that of ``same`` on the subset (NaN on ``same``'s rows; positive error,
        negative accuracy: worse than a model of the subset itself).

    Examples
    --------
    >>> shift_summary(res).query("worst")  # doctest: +SKIP
    """
    measure = _measure(ds, measure)
    out = _cells(ds, measure)
    out.insert(3, "measure", measure)
    lower = base_measure(measure) in LOWER_IS_BETTER
    out["worst"] = False
    scored = out[(out["n_test"] > 0) & np.isfinite(out["weighted_mean"])]
    for _, group in scored.groupby(["learner", "train_type"], sort=False):
        values = group["weighted_mean"]
        out.loc[values.idxmax() if lower else values.idxmin(), "worst"] = True
    same = out[out["train_type"] == REFERENCE].set_index(["learner", "test_subset"])
    reference = pd.MultiIndex.from_frame(out[["learner", "test_subset"]])
    out["gap"] = out["weighted_mean"].to_numpy() - same["weighted_mean"].reindex(reference).values
    out.loc[out["train_type"] == REFERENCE, "gap"] = np.nan
    return out[SHIFT_COLUMNS].astype({"n_test": "int64"})


def shift_lines(table: pd.DataFrame) -> list[str]:
    """`shift_summary` in words, one line per learner: its worst subset with its own model
    (``same``) and the out-of-subset gap (``other`` − ``same``, pooled) per subset and on
    average over the subsets."""
    lines = []
    for learner, rows in table.groupby("learner", sort=False):
        measure = rows["measure"].iloc[0]
        worst = rows[(rows["train_type"] == REFERENCE) & rows["worst"]]
        text = f"{learner}: "
        if len(worst):
            w = worst.iloc[0]
            text += (
                f"worst subset with its own model: {w['test_subset']} ({measure} "
                f"{w['weighted_mean']:.3g} pooled, {w['n_test']:,} test rows)"
            )
        other = rows[rows["train_type"] == "other"]
        gaps = other["gap"].dropna()
        if len(gaps):
            each = ", ".join(
                f"{s} {g:+.3g}" for s, g in zip(other["test_subset"], other["gap"], strict=True)
            )
            text += f"; out-of-subset gap (other - same, pooled): {each}; mean {gaps.mean():+.3g}"
        lines.append(text)
    return lines
