"""What one-pass scoring holds: AUC's per-row pieces, refused up front when a pass cannot hold
them, never a worker killed after minutes.

Every measure but AUC is scored from a few numbers per test block (counts, sums, a confusion
matrix). AUC is exact (the Mann-Whitney statistic, equal to scikit-learn's ``roc_auc_score``),
so it needs every test row's score: a partition's piece holds ``AUC_ROW_BYTES`` per test row and
AUC column (one for two classes, one per class one-vs-rest), and a block's pieces are merged in
one task (``MERGE_COPIES`` copies at its peak). A pass scores every test block at once, so when
its last partition is in it holds the pieces of all of them: the test rows summed over its fits
(once per learner). The estimate is checked before any fit, as a fit's own memory is
(``memory.check_fit_memory``). Models fed block by block (``incremental``) are scored by the
same kind of pass (``strategies.scoring_pass``), so their pieces count too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
from dask.utils import format_bytes

from .memory import FitMemoryError

#: Bytes of AUC's piece per test row and column: the score (float64), positive and negative
#: counts (int32 each).
AUC_ROW_BYTES = 16
#: Copies of a block's pieces its merge holds at its peak (the parts, their concatenation, the
#: sorted copy).
MERGE_COPIES = 3
#: Share of the workers' memory the pieces may take: the rest is each worker's own (a few
#: hundred MB), the partitions in transit and the statistics.
SCORE_SHARE = 0.3


def auc_columns(measures: Sequence[str], classes: Sequence | None) -> int:
    """AUC columns a test row's piece holds: 0 without AUC (or for regression)."""
    if "auc" not in measures or not classes:
        return 0
    return 1 if len(classes) <= 2 else len(classes)


def check_score_memory(
    test_rows: pd.Series,
    learners: Mapping[int, list[str]],
    measures: Sequence[str],
    classes: Sequence | None,
    limit: int | None,
    n_workers: int,
) -> None:
    """Refuse a one-pass scoring of ``learners`` (``{fit_id: learner names}``, whose fits have
    ``test_rows``) whose AUC pieces need more than ``SCORE_SHARE`` of the workers' memory, or
    whose largest block's merge more than that share of one worker's, naming the numbers and
    the remedies."""
    columns = auc_columns(measures, classes)
    if limit is None or not columns or not learners:
        return
    rows = {f: int(test_rows.loc[f]) * len(names) for f, names in learners.items()}
    total = sum(rows.values()) * columns * AUC_ROW_BYTES
    largest = max(rows.values()) * columns * AUC_ROW_BYTES * MERGE_COPIES
    allowed = SCORE_SHARE * limit
    if total <= allowed * n_workers and largest <= allowed:
        return
    others = [m for m in measures if m != "auc"]
    n_pairs = sum(len(names) for names in learners.values())
    raise FitMemoryError(
        f"AUC is scored exactly from every test row's score: the pass scoring {n_pairs} fits "
        f"holds their {sum(rows.values()):,} test rows × {columns} AUC column(s) × "
        f"{AUC_ROW_BYTES} bytes (about {format_bytes(total)}; the largest block's merge about "
        f"{format_bytes(largest)}) when its last partition is in, more than {SCORE_SHARE:.0%} "
        f"of the workers' memory ({n_workers} × {format_bytes(limit)}); score without AUC "
        f"(measures={others!r}), with fewer repeats or folds, or give the workers more memory"
    )


def n_workers(client: Any) -> int:
    """Workers of ``client`` (1 without one)."""
    return max(1, len(client.scheduler_info().get("workers", {}))) if client is not None else 1
