"""``fold_summary``: what each fold holds and how close its test rows lie to its training
rows, as blockCV's ``cv_summary`` (rows and classes per fold) plus the leakage distance.

Counts come from one group-by on the cluster. The distances are exact nearest-neighbour
distances, in coordinate space, from a seeded sample of each fold's test rows (all of them
when a fold has at most ``sample`` rows) to every row of the other folds, read block by
block: each block measures the (small) sample against its own rows, fold by fold, and only
the per-fold minima come back.
"""

from __future__ import annotations

from typing import Any

import dask
import numpy as np
import pandas as pd
from scipy.spatial import cKDTree

from ..dask_client import current_client
from ..split.fold_options import check_seed
from ..split.neighbours import point_hashes
from ..tables.table import Table, check_table


def fold_summary(
    table: Table, fold: str | None = None, *, sample: int = 2000, seed: int = 1, client: Any = None
) -> pd.DataFrame:
    """Rows and classes per fold, empty or one-class folds, and the nearest-neighbour
    distance from each fold's test rows to its training rows.

    Parameters
    ----------
    table : Table
        With a fold role (``load_table(fold=...)``, ``assign_folds``, ``knndm_folds``) or
        a fold column named by ``fold``; with ``coords`` for the distances.
    fold : str, optional
        The fold column, if not the table's fold role.
    sample : int
        Test rows measured per fold (a seeded sample by hash of their coordinates).
    seed : int
    client : distributed.Client, optional

    Returns
    -------
    pandas.DataFrame
        Indexed by fold: ``n_test``, ``n_train``; for classification ``n_classes``, one
        ``n_<class>`` column per class and ``one_class``; ``empty``; with coordinates
        ``nn_min``, ``nn_median`` (test -> nearest training row) and ``nn_measured``.
    """
    check_table(table, "fold_summary")
    column = fold or table.fold
    if column is None or column not in table.data.columns:
        raise ValueError(
            f"fold_summary needs a fold column: the table has no fold role or column {fold!r} "
            "(give fold=, or make folds with soak_dask.assign_folds or knndm_folds)"
        )
    if isinstance(sample, bool) or not isinstance(sample, int | np.integer) or sample < 1:
        raise ValueError(f"sample={sample!r}: need a positive number of test rows per fold")
    seed = check_seed(seed)
    out = _counts(table, column)
    if table.coords:
        client = current_client() if client is None else client
        out = out.join(_distances(table, column, out.index.to_numpy(), sample, seed, client))
    return out


def _counts(table: Table, column: str) -> pd.DataFrame:
    classification = table.task == "classification"
    keys = [column, table.label] if classification else [column]
    sizes = table.data.groupby(keys, observed=True).size().compute()
    if classification:
        wide = sizes.unstack(fill_value=0).sort_index()
        out = pd.DataFrame({"n_test": wide.sum(axis=1)})
        out["n_classes"] = (wide > 0).sum(axis=1)
        for c in wide.columns:
            out[f"n_{c}"] = wide[c]
    else:
        out = pd.DataFrame({"n_test": sizes.sort_index()})
    folds = out.index
    if pd.api.types.is_integer_dtype(folds) and len(folds):  # folds 1..K that hold no row
        out = out.reindex(range(min(1, int(folds.min())), int(folds.max()) + 1), fill_value=0)
    out.insert(1, "n_train", int(out["n_test"].sum()) - out["n_test"])
    if classification:
        out["one_class"] = out["n_classes"] == 1
    out["empty"] = out["n_test"] == 0
    out.index.name = "fold"
    return out


def _fold_sample(part: pd.DataFrame, coords: tuple, column: str, n: int, seed: int) -> tuple:
    points = part[list(coords)].to_numpy(dtype=np.float64)
    folds = part[column].to_numpy()
    h = point_hashes(points, seed, "fold_summary")
    keep = np.concatenate(
        [
            np.flatnonzero(folds == f)[np.argsort(h[folds == f], kind="stable")[:n]]
            for f in np.unique(folds)
        ]
        or [np.empty(0, dtype=np.int64)]
    )
    return folds[keep], h[keep], points[keep]


def _block_minima(
    part: pd.DataFrame, coords: tuple, column: str, query: np.ndarray, folds: np.ndarray
) -> np.ndarray:
    points = part[list(coords)].to_numpy(dtype=np.float64)
    own = part[column].to_numpy()
    out = np.full((len(query), len(folds)), np.inf)
    for j, f in enumerate(folds):
        mine = own == f
        if mine.any():
            out[:, j] = cKDTree(points[mine]).query(query, k=1)[0]
    return out


def _distances(
    table: Table, column: str, folds: np.ndarray, n: int, seed: int, client: Any
) -> pd.DataFrame:
    parts = table.data.to_delayed()
    compute = client.compute if client is not None else None

    def run(tasks: list) -> Any:
        return compute(tasks, sync=True) if compute is not None else dask.compute(*tasks)

    sampled = run([dask.delayed(_fold_sample)(p, table.coords, column, n, seed) for p in parts])
    q_fold = np.concatenate([s[0] for s in sampled])
    q_hash = np.concatenate([s[1] for s in sampled])
    q_pts = np.concatenate([s[2] for s in sampled])
    keep = []
    for f in folds:  # the n smallest hashes of each fold, whatever the partitions
        idx = np.flatnonzero(q_fold == f)
        keep.append(idx[np.lexsort((*q_pts[idx].T[::-1], q_hash[idx]))[:n]])
    keep = np.concatenate(keep) if keep else np.empty(0, dtype=np.int64)
    q_fold, q_pts = q_fold[keep], q_pts[keep]
    query = dask.delayed(q_pts)
    minima = run(
        [dask.delayed(_block_minima)(p, table.coords, column, query, folds) for p in parts]
    )
    best = np.minimum.reduce(minima) if minima else np.full((len(q_pts), len(folds)), np.inf)
    own = np.searchsorted(folds, q_fold)
    best[np.arange(len(q_pts)), own] = np.inf  # a test row's own fold is not its training
    nearest = best.min(axis=1) if len(folds) else best
    rows = {}
    for j, f in enumerate(folds):
        d = nearest[own == j]
        d = d[np.isfinite(d)]
        rows[f] = {
            "nn_min": d.min() if len(d) else np.nan,
            "nn_median": np.median(d) if len(d) else np.nan,
            "nn_measured": len(d),
        }
    return pd.DataFrame.from_dict(rows, orient="index")
