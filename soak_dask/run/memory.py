"""What a fit holds in memory, known before it runs, and the refusal of a fit that cannot fit.

A fit on its whole train set (``strategies.WholeTrainSet``) gathers its train rows and test
blocks into one task. From the block counts the run knows every fit's rows before any task
starts, so a fit that would exceed a worker's memory limit is refused up front, naming the
fit, its rows, the estimate and the limit, instead of killing worker after worker.

The estimate is rows × (features + 2) × 8 bytes × ``FIT_COPIES``: the peak of a fit task
measured with tracemalloc (400,000 rows × 20 float32 features, the featureless baseline,
logistic regression, LDA, Gaussian naive Bayes, k-NN and the pruned tree) was 1.5-4.6 times the
float64 size of its rows, plus 0.6 for the gathered frame itself; six copies leave room for the
worker's own memory and the partitions in transit.
"""

from __future__ import annotations

from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
from dask.utils import format_bytes

from ..reduction import tree_reduce
from ..split.plan import Plan
from .rowcap import train_class_rows

#: Float64-sized copies of a fit's rows that a fit task holds at its peak (see above).
FIT_COPIES = 6
#: Share of a worker's memory limit a fit may use: distributed pauses a worker at 80 %.
LIMIT_SHARE = 0.8


class FitMemoryError(ValueError):
    """A fit whose rows cannot fit a worker's memory, refused before any fit runs."""


def worker_memory_limit(client: Any) -> int | None:
    """The smallest memory limit of ``client``'s workers in bytes (None: no client, or no
    worker with a limit; Dask's local scheduler has none)."""
    if client is None:
        return None
    workers = client.scheduler_info().get("workers", {}).values()
    limits = [int(w["memory_limit"]) for w in workers if w.get("memory_limit")]
    return min(limits) if limits else None


def fit_rows(plan: Plan, counts: pd.DataFrame, label: str, classes: list | None) -> pd.DataFrame:
    """Rows each fit's task gathers, from the block counts (``folds.block_counts`` over the
    plan's key columns): columns ``train`` (its train set) and ``test`` (the test blocks it
    scores), one row per fit."""
    train = train_class_rows(counts, plan.fits, label, classes).sum(axis=1)
    keys = [c for c in counts.columns if c not in ("n", label)]
    cells = counts.groupby(keys, observed=True)["n"].sum()
    key_frame = cells.index.to_frame(index=False)
    values = cells.to_numpy(np.int64)
    block_rows = {b: int(values[t.mask(key_frame)].sum()) for b, t in plan.blocks["test"].items()}
    tests = plan.fits["blocks"].map(lambda blocks: sum(block_rows[b] for b in blocks))
    return pd.DataFrame({"train": train, "test": tests}, index=plan.fits.index).astype(np.int64)


def count_fit_rows(data: dd.DataFrame, plan: Plan, client: Any) -> pd.DataFrame:
    """``fit_rows`` for any plan, counted in one pass over its key columns (for designs whose
    block counts are not at hand): each partition counts the rows of every train selection
    (the sum of its row weights, for a weighted fit such as a bootstrap resample's, as the fit
    repeats each row that many times) and test block; only those counts come back."""
    fits, blocks = plan.fits, plan.blocks
    weights = [w for w in fits["weights"] if w is not None]
    keys = set(weights).union(*(s.columns for s in (*fits["train"], *blocks["test"])))
    parts = data[sorted(keys)].to_delayed()
    counted = [dask.delayed(_count_part, pure=True)(p, fits, blocks) for p in parts]
    total = tree_reduce(counted, _add, split_every=16)[0]
    train, test = client.compute(total).result() if client is not None else total.compute()
    tests = [int(sum(test[list(blocks.index).index(b)] for b in bs)) for bs in fits["blocks"]]
    return pd.DataFrame({"train": train, "test": tests}, index=fits.index).astype(np.int64)


def _count_part(
    part: pd.DataFrame, fits: pd.DataFrame, blocks: pd.DataFrame
) -> tuple[np.ndarray, np.ndarray]:
    """(train rows of each fit, rows of each test block) in one partition."""
    train = [
        part[w].to_numpy()[t.mask(part)].sum() if w is not None else t.mask(part).sum()
        for t, w in zip(fits["train"], fits["weights"], strict=True)
    ]
    test = [t.mask(part).sum() for t in blocks["test"]]
    return np.asarray(train, dtype=np.int64), np.asarray(test, dtype=np.int64)


def _add(items: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    return sum(i[0] for i in items), sum(i[1] for i in items)


def fit_bytes(rows: int, n_features: int) -> int:
    """Estimated peak bytes of a fit task gathering ``rows`` rows of ``n_features`` features."""
    return int(rows) * (n_features + 2) * 8 * FIT_COPIES


def check_fit_memory(
    rows: pd.DataFrame,
    plan: Plan,
    learners: dict[int, list[str]],
    n_features: int,
    limit: int | None,
    max_rows: int | None = None,
) -> None:
    """Refuse the run if a fit of ``learners`` (``{fit_id: learner names}``, the fits to be
    made on their gathered rows) needs more than ``LIMIT_SHARE`` of ``limit``.

    ``rows`` are each fit's rows (``fit_rows``); with ``max_rows`` a train set is capped
    there (its test blocks still come whole).
    """
    if limit is None or not learners:
        return
    mine = rows.loc[list(learners)]
    train = mine["train"] if max_rows is None else np.minimum(mine["train"], max_rows)
    need = train + mine["test"]
    allowed = LIMIT_SHARE * limit
    too_big = need[[fit_bytes(n, n_features) > allowed for n in need]]
    if too_big.empty:
        return
    fit_id = int(too_big.idxmax())
    n = int(too_big.loc[fit_id])
    most = int(allowed // fit_bytes(1, n_features))
    others = f" (and {len(too_big) - 1} other fits)" if len(too_big) > 1 else ""
    raise FitMemoryError(
        f"fit {fit_id} (train: {plan.fits.at[fit_id, 'train']}) of learner "
        f"{learners[fit_id][0]!r}{others} gathers {n:,} rows × {n_features} features: about "
        f"{format_bytes(fit_bytes(n, n_features))} at its peak, more than "
        f"{LIMIT_SHARE:.0%} of a worker's memory limit ({format_bytes(limit)}), which holds "
        f"about {most:,} such rows; fit on a sample (max_train_rows={most:,} or less), use a "
        "learner fitted from one pass of block statistics (featureless, linear, ridge, lda, "
        "gaussian_nb) or fed block by block (incremental=True with a partial_fit learner), or "
        "give each worker more memory"
    )

