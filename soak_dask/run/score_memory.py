"""What a scoring pass holds: AUC's per-row pieces, split into waves that fit the workers,
and refused up front only where no wave can hold them, never a worker killed after minutes.

Every measure but AUC is scored from a few numbers per test block (counts, sums, a confusion
matrix). AUC is exact (the Mann-Whitney statistic, equal to scikit-learn's ``roc_auc_score``),
so it needs every test row's score: a partition's piece holds ``AUC_ROW_BYTES`` per test row and
AUC column (one for two classes, one per class one-vs-rest) and (fit, learner) pair predicting
the row's block, and a block's pieces are merged in one task (``MERGE_COPIES`` copies at its
peak). A pass scoring blocks at once holds, when its last partition is in, the pieces of all of
them. So the pass (``strategies.scoring_pass``, for models fitted from statistics and models fed
block by block alike) scores its blocks in waves (``waves``): consecutive groups of blocks whose
pieces fit ``SCORE_SHARE`` of the memory the workers have for tasks, one after another, each
wave one more read of the table. Only a block whose own merge cannot fit ``SCORE_SHARE`` of one
worker's is refused, before any fit (``check_score_memory``), as a fit's own memory is
(``memory.check_fit_memory``). A final model's resubstitution pieces (all its training rows,
merged in one task) are checked likewise (``check_resubstitution_memory``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dask.utils import format_bytes

from ..workers import FitMemoryError, WorkerMemory

#: Bytes of AUC's piece per test row and column: the score (float64), positive and negative
#: counts (int32 each).
AUC_ROW_BYTES = 16
#: Copies of a block's pieces its merge holds at its peak (the parts, their concatenation, the
#: sort order, the sorted copy: about 3.5).
MERGE_COPIES = 4
#: Share of the memory a worker has for a task (``workers.WorkerMemory.free``: what it holds at
#: rest already taken off) that the pieces may take: the rest is for the partitions in transit
#: and the statistics. Measured at 700 MB workers (0.3 GB at rest, 0.25 GB for tasks): 0.84 of
#: it let 11M rows' repeated_cv 3×5 (2 waves) kill the workers in a merge; 0.42 completed the
#: same at 6M rows in 2 waves.
SCORE_SHARE = 0.4


def auc_columns(measures: Sequence[str], classes: Sequence | None) -> int:
    """AUC columns a test row's piece holds: 0 without AUC (or for regression)."""
    if "auc" not in measures or not classes:
        return 0
    return 1 if len(classes) <= 2 else len(classes)


def block_pieces(
    block_rows: Mapping[int, int], pairs: Mapping[int, int], columns: int
) -> dict[int, int]:
    """Bytes of AUC pieces of each test block of ``pairs`` (block -> (fit, learner) pairs
    predicting it): its rows × those pairs × ``columns`` × ``AUC_ROW_BYTES``."""
    return {b: int(block_rows[b]) * n * columns * AUC_ROW_BYTES for b, n in pairs.items()}


def waves(pieces: Sequence[int], budget: float | None) -> list[list[int]]:
    """Positions of ``pieces`` (bytes of each block, in the pass's order) in consecutive
    waves whose pieces sum to at most ``budget`` (one wave without a budget; a block larger
    than the budget is a wave alone): the same split for the same blocks, every run."""
    out: list[list[int]] = [[]]
    held = 0
    for i, size in enumerate(pieces):
        if budget is not None and out[-1] and held + size > budget:
            out.append([])
            held = 0
        out[-1].append(i)
        held += size
    return out if out[0] else []


def check_score_memory(
    block_rows: Mapping[int, int],
    pairs: Mapping[int, int],
    measures: Sequence[str],
    classes: Sequence | None,
    memory: WorkerMemory | None,
) -> None:
    """Refuse a scoring pass of the blocks ``pairs`` (block -> (fit, learner) pairs predicting
    it; ``block_rows``: its rows) where one block's merge (``MERGE_COPIES`` × its AUC pieces,
    every pair's) needs more than ``SCORE_SHARE`` of the ``memory`` a worker has for a task:
    no wave can hold it. Names the block, the numbers and the remedies."""
    columns = auc_columns(measures, classes)
    if memory is None or not columns or not pairs:
        return
    pieces = block_pieces(block_rows, pairs, columns)
    block = max(pieces, key=lambda b: (pieces[b], -b))
    merge = pieces[block] * MERGE_COPIES
    if merge <= SCORE_SHARE * memory.free:
        return
    others = [m for m in measures if m != "auc"]
    fits = f"{pairs[block]} fit{'s' if pairs[block] > 1 else ''}"
    raise FitMemoryError(
        f"AUC is scored exactly from every test row's score: test block {block} is predicted "
        f"by {fits}, whose pieces ({int(block_rows[block]):,} test rows × {fits} × "
        f"{columns} AUC column(s) × {AUC_ROW_BYTES} bytes) are merged in "
        f"one task, about {format_bytes(merge)} at its peak ({MERGE_COPIES} copies), more than "
        f"{SCORE_SHARE:.0%} of the {memory}, whatever the waves; score without AUC "
        f"(measures={others!r}), with more folds (smaller test blocks) or fewer learners, or "
        "give each worker more memory"
    )


def wave_budget(memory: WorkerMemory | None, n_workers: int) -> float | None:
    """Bytes of AUC pieces one wave of the scoring pass may hold: ``SCORE_SHARE`` of the
    workers' memory for tasks; None without a known ``memory``."""
    return None if memory is None else SCORE_SHARE * memory.free * n_workers


def check_resubstitution_memory(
    name: str,
    n_train: int,
    measures: Sequence[str],
    classes: Sequence | None,
    memory: WorkerMemory | None,
) -> None:
    """Refuse a final model (learner ``name``) whose resubstitution pieces, ``n_train``
    training rows merged in one task (``MERGE_COPIES`` copies), need more than
    ``SCORE_SHARE`` of the ``memory`` a worker has for a task; before any fit."""
    columns = auc_columns(measures, classes)
    need = int(n_train) * columns * AUC_ROW_BYTES * MERGE_COPIES
    if memory is None or need <= SCORE_SHARE * memory.free:
        return
    others = [m for m in measures if m != "auc"]
    raise FitMemoryError(
        f"learner {name!r}, final model: its resubstitution AUC is scored exactly from every "
        f"training row's score, {n_train:,} rows × {columns} AUC column(s) × {AUC_ROW_BYTES} "
        f"bytes merged in one task, about {format_bytes(need)} at its peak ({MERGE_COPIES} "
        f"copies), more than {SCORE_SHARE:.0%} of the {memory}; score without AUC "
        f"(measures={others!r}), or give each worker more memory"
    )


def n_workers(client: Any) -> int:
    """Workers of ``client`` (1 without one)."""
    return max(1, len(client.scheduler_info().get("workers", {}))) if client is not None else 1
