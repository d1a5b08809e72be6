"""``fold_summary``: what each fold holds and how close its test rows lie to its training
rows, as blockCV's ``cv_summary`` (rows and classes per fold) plus the leakage distance.

Counts come from one group-by on the cluster. The distances are exact nearest-neighbour
distances, in coordinate space, from a seeded sample of each fold's test rows (all of them
when a fold has at most ``sample`` rows) to every row of the other folds, read block by
block: each block measures the (small) sample against its own rows, fold by fold, and only
each sampled row's nearest distance to another fold comes back (combined pairwise). Nothing
is sized by a fold's value, and memory grows with the sampled rows, not with folds × rows:
a column of thousands of block ids is summarised like one of ten folds.
"""

from __future__ import annotations

from typing import Any

import dask
import numpy as np
import pandas as pd
from scipy.spatial import cKDTree

from ..dask_client import current_client
from ..option_checks import checked
from ..split.fold_options import MAX_FOLDS
from ..split.neighbours import point_hashes
from ..tables.crs import metric_only
from ..tables.table import Table, check_table
from .blocks import coordinate_extent


@checked("run", only=("seed",))
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
        Indexed by fold (a column of fold numbers 0..127 also lists its folds 1..K that hold
        no row; any other column, e.g. blocks or groups, lists the values it holds):
        ``n_test``, ``n_train``; for classification ``n_classes``, one ``n_<class>`` column
        per class and ``one_class``; ``empty``; with coordinates ``nn_min``, ``nn_median``
        (test -> nearest training row) and ``nn_measured``.
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
    out = _counts(table, column)
    if table.coords:
        metric_only(table.crs, "fold_summary")
        coordinate_extent(table, "fold_summary")  # a missing coordinate has no distance
        client = current_client() if client is None else client
        out = out.join(_distances(table, column, out.index.to_numpy(), sample, seed, client))
    return out


def _counts(table: Table, column: str) -> pd.DataFrame:
    classification = table.task == "classification"
    keys = [column, table.label] if classification else [column]
    sizes = table.data.groupby(keys, observed=True).size().compute()
    if classification:
        wide = sizes.unstack(fill_value=0).sort_index().sort_index(axis=1)
        out = pd.DataFrame({"n_test": wide.sum(axis=1)})
        out["n_classes"] = (wide > 0).sum(axis=1)
        for c in wide.columns:
            out[f"n_{c}"] = wide[c]
    else:
        out = pd.DataFrame({"n_test": sizes.sort_index()})
    folds = out.index
    if is_fold_numbers(folds):  # folds 1..K that hold no row
        out = out.reindex(range(min(1, int(folds.min())), int(folds.max()) + 1), fill_value=0)
    out.insert(1, "n_train", int(out["n_test"].sum()) - out["n_test"])
    if classification:
        out["one_class"] = out["n_classes"] == 1
    out["empty"] = out["n_test"] == 0
    out.index.name = "fold"
    return out


def is_fold_numbers(values: pd.Index) -> bool:
    """Whether ``values`` (a column's distinct values) can be fold numbers: integers from 0
    to ``MAX_FOLDS``. Only then are the missing numbers of 1..K listed as empty folds; block,
    cluster or group ids (``spatial_blocks``' reach 10**10) are listed as they are, never
    used to size a range.

    Examples
    --------
    >>> is_fold_numbers(pd.Index([1, 2, 4])), is_fold_numbers(pd.Index([1, 10**9]))
    (True, False)
    """
    return bool(
        pd.api.types.is_integer_dtype(values)
        and len(values) > 0
        and 0 <= values.min()
        and values.max() <= MAX_FOLDS
    )


def first_per_fold(folds: np.ndarray, keys: tuple, n: int) -> np.ndarray:
    """Positions of the first ``n`` rows of each fold (a missing fold is no fold), in the
    order ``np.lexsort(keys)`` gives within the fold: one sort whatever the number of folds."""
    codes = pd.factorize(folds)[0]
    order = np.lexsort((*keys, codes))
    ranked = codes[order]
    rank = np.arange(len(order)) - np.searchsorted(ranked, ranked, side="left")
    return order[(rank < n) & (ranked >= 0)]


def _fold_sample(part: pd.DataFrame, coords: tuple, column: str, n: int, seed: int) -> tuple:
    points = part[list(coords)].to_numpy(dtype=np.float64)
    folds = part[column].to_numpy()
    h = point_hashes(points, seed, "fold_summary")
    keep = first_per_fold(folds, (h,), n)
    return folds[keep], h[keep], points[keep]


def _block_minima(
    part: pd.DataFrame, coords: tuple, column: str, query: np.ndarray, q_fold: np.ndarray
) -> np.ndarray:
    """The distance from each ``query`` point to the partition's nearest row of another
    fold than its own (``q_fold``; inf if none): one number per point, whatever the folds."""
    points = part[list(coords)].to_numpy(dtype=np.float64)
    codes, uniques = pd.factorize(part[column].to_numpy())
    own = pd.Index(uniques).get_indexer(q_fold)
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(uniques) + 1))
    best = np.full(len(query), np.inf)
    for j in range(len(uniques)):
        other = own != j
        if other.any():
            tree = cKDTree(points[order[bounds[j] : bounds[j + 1]]])
            best[other] = np.minimum(best[other], tree.query(query[other], k=1)[0])
    return best


def _tree_minimum(tasks: list) -> Any:
    """The element-wise minimum of delayed arrays, combined pairwise (a few in memory)."""
    while len(tasks) > 1:
        pairs = [
            dask.delayed(np.minimum)(a, b) for a, b in zip(tasks[::2], tasks[1::2], strict=False)
        ]
        tasks = pairs + tasks[len(pairs) * 2 :]
    return tasks[0]


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
    # the n smallest hashes of each fold (ties by the points), whatever the partitions
    keep = first_per_fold(q_fold, (*q_pts.T[::-1], q_hash), n)
    q_fold, q_pts = q_fold[keep], q_pts[keep]
    query, own = dask.delayed(q_pts), dask.delayed(q_fold)
    minima = [dask.delayed(_block_minima)(p, table.coords, column, query, own) for p in parts]
    nearest = run([_tree_minimum(minima)])[0] if minima else np.full(len(q_pts), np.inf)
    found = pd.Series(nearest, index=q_fold)
    found = found[np.isfinite(found.to_numpy())]
    stats = found.groupby(level=0).agg(["min", "median", "size"])
    stats.columns = ["nn_min", "nn_median", "nn_measured"]
    stats = stats.reindex(folds)
    stats["nn_measured"] = stats["nn_measured"].fillna(0).astype(np.int64)
    return stats
