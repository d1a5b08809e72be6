"""What a fit holds in memory, known before it runs, and the refusal of a fit that cannot fit.

A fit on its whole train set (``strategies.WholeTrainSet``) gathers its train rows into one
task; its test blocks are scored partition by partition where they are
(``strategies.scoring_pass``, checked by ``score_memory``). From the block counts the run
knows every fit's rows before any task starts, so a fit that would exceed the memory a worker
has for a task is refused up front, naming the fit, its rows, the estimate and that memory,
instead of killing worker after worker.
That memory (``workers.WorkerMemory``) is ``LIMIT_SHARE`` of the worker's limit less what the
worker holds at rest, read from each worker before the fits (``workers.worker_memory``): at
700 MB workers the libraries alone take 0.3 GB of the 0.56 GB where distributed pauses a worker.

The estimate is rows × (features + 2) × 8 bytes × ``FIT_COPIES``: the peak of a fit task
measured with tracemalloc (400,000 rows × 20 float32 features, the featureless baseline,
logistic regression, LDA, Gaussian naive Bayes, k-NN and the pruned tree) was 1.5-4.6 times the
float64 size of its rows, plus 0.6 for the gathered frame itself; six copies leave room for the
partitions in transit.

A final model's test split is scored a partition at a time (``run.final_scores``): what must
fit is its largest partition (``fit_bytes``) and the outcomes of all its rows, joined in one
task (``outcome_bytes``: a bit a row where the measures need only the confusion cells' counts),
not the split itself (``check_test_split_memory``).
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
from ..workers import FitMemoryError, WorkerMemory
from .rowcap import class_codes, train_class_rows

#: Float64-sized copies of a fit's rows that a fit task holds at its peak (see above).
FIT_COPIES = 6
#: 8-byte copies of each outcome a row that the task joining the test split's outcomes holds at
#: its peak, with room for the partitions in transit. Measured with tracemalloc (1,000,000 rows;
#: the partitions' outcomes, the joined arrays, each row's share of the pieces and one
#: resample's draw, ``final_scores.RowPieces``): 3.0 (the error, whole groups resampled), 3.6
#: (two classes, every measure), 5.0 (five classes, AUC one-vs-rest) of them; and 2.1 bytes a
#: row where the outcomes are the confusion cells' counts and a right/wrong bit a row. A lower
#: factor, with the memory a worker holds at rest not counted, let a 4.2M-row split pass the
#: check at 700 MB workers and kill them.
OUTCOME_COPIES = 6


def fit_rows(plan: Plan, counts: pd.DataFrame, label: str, classes: list | None) -> pd.DataFrame:
    """Rows each fit's task gathers, from the block counts (``folds.block_counts`` over the
    plan's key columns): columns ``train`` (its train set) and ``test`` (the test blocks it
    scores), one row per fit; ``attrs["block_rows"]`` maps each test block to its rows (what a
    scoring pass's AUC pieces hold, ``score_memory``)."""
    train = train_class_rows(counts, plan.fits, label, classes).sum(axis=1)
    keys = [c for c in counts.columns if c not in ("n", label)]
    cells = counts.groupby(keys, observed=True)["n"].sum()
    key_frame = cells.index.to_frame(index=False)
    values = cells.to_numpy(np.int64)
    block_rows = {b: int(values[t.mask(key_frame)].sum()) for b, t in plan.blocks["test"].items()}
    tests = plan.fits["blocks"].map(lambda blocks: sum(block_rows[b] for b in blocks))
    out = pd.DataFrame({"train": train, "test": tests}, index=plan.fits.index).astype(np.int64)
    out.attrs["block_rows"] = block_rows
    return out


def count_fit_rows(
    data: dd.DataFrame,
    plan: Plan,
    client: Any,
    label: str | None = None,
    classes: list | tuple | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Each fit's train rows per class and ``fit_rows``, for any plan, counted in one pass over
    its key columns (for designs whose block counts are not at hand), so that the row cap and
    the memory check share it.

    Each partition counts the rows of every train selection per class (of ``classes``, read
    from ``label``; one column ``n`` without classes), summing its row weights for a weighted
    fit such as a bootstrap resample's (the fit repeats each row that many times), and the
    rows of every test block; only those counts come back.

    Returns
    -------
    (DataFrame, DataFrame)
        Train rows per class (as ``rowcap.train_class_rows``) and ``train``/``test`` rows
        (as ``fit_rows``, with its ``attrs["block_rows"]``), indexed by fit.
    """
    fits, blocks = plan.fits, plan.blocks
    weights = [w for w in fits["weights"] if w is not None]
    keys = set(weights).union(*(s.columns for s in (*fits["train"], *blocks["test"])))
    by_class = tuple(classes) if classes else None
    keys |= {label} if label is not None else set()
    parts = data[sorted(keys)].to_delayed()
    counted = [
        dask.delayed(_count_part, pure=True)(p, fits, blocks, label, by_class) for p in parts
    ]
    total = tree_reduce(counted, _add, split_every=16)[0]
    train, test = client.compute(total).result() if client is not None else total.compute()
    columns = list(by_class) if by_class else ["n"]
    class_rows = pd.DataFrame(train, index=fits.index, columns=columns).astype(np.int64)
    positions = {b: i for i, b in enumerate(blocks.index)}
    tests = [int(sum(test[positions[b]] for b in bs)) for bs in fits["blocks"]]
    rows = pd.DataFrame({"train": class_rows.sum(axis=1), "test": tests}, index=fits.index)
    rows = rows.astype(np.int64)
    rows.attrs["block_rows"] = {b: int(test[i]) for b, i in positions.items()}
    return class_rows, rows


def _count_part(
    part: pd.DataFrame,
    fits: pd.DataFrame,
    blocks: pd.DataFrame,
    label: str | None,
    classes: tuple | None,
) -> tuple[np.ndarray, np.ndarray]:
    """(train rows of each fit per class, rows of each test block) in one partition."""
    codes = class_codes(part, label, classes)
    width = len(classes) if classes else 1
    train = np.zeros((len(fits), width), dtype=np.int64)
    for i, (t, w) in enumerate(zip(fits["train"], fits["weights"], strict=True)):
        mask = t.mask(part) & (codes >= 0)
        counts = None if w is None else part[w].to_numpy(np.int64)[mask]
        train[i] = np.bincount(codes[mask], weights=counts, minlength=width)
    test = [t.mask(part).sum() for t in blocks["test"]]
    return train, np.asarray(test, dtype=np.int64)


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
    memory: WorkerMemory | None,
    max_rows: int | None = None,
) -> None:
    """Refuse the run if a fit of ``learners`` (``{fit_id: learner names}``, the fits to be
    made on their gathered train rows) needs more than the ``memory`` a worker has for a task.

    ``rows`` are each fit's rows (``fit_rows``); with ``max_rows`` a train set is capped
    there. Its test rows are not counted: they are scored partition by partition.
    """
    if memory is None or not learners:
        return
    mine = rows.loc[list(learners)]
    need = mine["train"] if max_rows is None else np.minimum(mine["train"], max_rows)
    too_big = need[[fit_bytes(n, n_features) > memory.free for n in need]]
    if too_big.empty:
        return
    fit_id = int(too_big.idxmax())
    others = f" (and {len(too_big) - 1} other fits)" if len(too_big) > 1 else ""
    what = f"fit {fit_id} (train: {plan.fits.at[fit_id, 'train']}) of learner "
    what += f"{learners[fit_id][0]!r}{others}, its train rows (a resample's draws counted),"
    raise FitMemoryError(refusal(what, int(too_big.loc[fit_id]), n_features, memory))


def check_final_memory(
    learners: list[str],
    n_train: int,
    n_features: int,
    memory: WorkerMemory | None,
    max_rows: int | None = None,
) -> None:
    """Refuse the run if the final model of one of ``learners`` (those fitted on their
    gathered rows: all ``n_train`` training rows, at most ``max_rows`` of them under a cap)
    needs more than the ``memory`` a worker has for a task; before any fit, the outer loop's
    included. Its test split is scored a partition at a time (``check_test_split_memory``)."""
    if memory is None or not learners:
        return
    train = n_train if max_rows is None else min(n_train, max_rows)
    if fit_bytes(train, n_features) <= memory.free:
        return
    others = f" (and {len(learners) - 1} other learners)" if len(learners) > 1 else ""
    capped = f" ({train:,} of the {n_train:,} under max_train_rows)" if train < n_train else ""
    what = (
        f"the final model of learner {learners[0]!r}{others}, fitted on all training rows "
        f"({n_train:,}){capped},"
    )
    raise FitMemoryError(refusal(what, train, n_features, memory))


def outcome_bytes(rows: int, score_columns: int, counts: bool = False) -> int:
    """Estimated peak bytes of the task joining the outcomes of ``rows`` test-split rows
    (label, prediction and group codes, ``score_columns`` class scores) and resampling them
    for the bootstrap interval; or (``counts``: ``final_scores.counts_only``) joining their
    right/wrong bits, a byte a row, beside the confusion cells' counts."""
    return int(rows) * (1 if counts else (score_columns + 3) * 8) * OUTCOME_COPIES


def check_test_split_memory(
    learners: list[str],
    part_rows: tuple[int, ...],
    n_features: int,
    score_columns: int,
    memory: WorkerMemory | None,
    counts: bool = False,
) -> None:
    """Refuse the run, before any fit, if the final models of ``learners`` cannot score the
    test split (partitions of ``part_rows`` rows) within the ``memory`` a worker has for a task.

    Each partition is predicted by its own task, holding that partition's rows (``fit_bytes``);
    one task joins the outcomes of all the split's rows (a few numbers a row: the labels, the
    predictions, the group codes and ``score_columns`` class scores; with ``counts``, a
    right/wrong bit a row beside the confusion cells' counts: ``outcome_bytes``) and
    resamples them for the interval. So a split far larger than a worker is scored, unless a
    single partition, or the outcomes of all its rows, do not fit.
    """
    if memory is None or not learners or not part_rows:
        return
    who = f"the final model of learner {learners[0]!r}"
    largest, n_test = max(part_rows), sum(part_rows)
    if fit_bytes(largest, n_features) > memory.free:
        most = memory.free // fit_bytes(1, n_features)
        raise FitMemoryError(
            f"{who} predicts the test split a partition at a time; its largest partition has "
            f"{largest:,} rows × {n_features} features: about "
            f"{format_bytes(fit_bytes(largest, n_features))} at its peak, more than the "
            f"{memory}, which holds about {most:,} such rows; split the table into smaller "
            f"partitions (at most {most:,} rows each: smaller files, or dask's "
            "repartition(partition_size=...)), or give each worker more memory"
        )
    needed = outcome_bytes(n_test, score_columns, counts)
    if needed > memory.free:
        most = memory.free // outcome_bytes(1, score_columns, counts)
        what = (
            "right/wrong bits a row, which McNemar's test pairs"
            if counts
            else f"labels, predictions and {score_columns} class scores a row; its interval "
            "resamples them"
        )
        raise FitMemoryError(
            f"{who} joins the outcomes of the {n_test:,} rows of the test split in one task "
            f"({what}): about {format_bytes(needed)} at its peak, more than the {memory}, "
            f"which holds the outcomes of about {most:,} rows; give a smaller test_split (at "
            f"most {most:,} rows), or give each worker more memory"
        )


def refusal(what: str, n: int, n_features: int, memory: WorkerMemory) -> str:
    """The message refusing ``what``, which gathers ``n`` rows: the estimate, the memory a
    worker has for a task, the rows it holds and the remedies."""
    most = memory.free // fit_bytes(1, n_features)
    sample = (
        f"fit on a sample of at most {most:,} rows (RunOptions(max_train_rows={most}), "
        f"--max-train-rows {most}), "
        if most > 0
        else ""
    )
    return (
        f"{what} gathers {n:,} rows × {n_features} features: about "
        f"{format_bytes(fit_bytes(n, n_features))} at its peak, more than the {memory}, "
        f"which holds about {most:,} such rows; {sample}use a learner fitted from one pass of "
        "block statistics (featureless, linear, ridge, lda, gaussian_nb) or fed block by block "
        "(a partial_fit learner with RunOptions(incremental=True), --incremental), or give each "
        "worker more memory"
    )
