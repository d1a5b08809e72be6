"""``block_bootstrap``: an interval for a cross-validated error from resampling whole spatial
blocks with replacement (the spatial block bootstrap; sperrorest's idea of resampling
blocks, not pixels).

1. **Per-block sums** (on the workers): each partition sums, per block, its rows' losses
   (squared or absolute error, or 1 per misclassified row) and counts its rows; Dask's
   grouped sum adds the partitions' sums in a tree, so one row per block reaches the client,
   never the rows (``block_sums``). The sums keep 12 significant digits: sums over
   partitions differ in their last bits with the partitioning, and the interval must not.
2. **Bootstrap** (on the client, on the per-block table): ``n_boot`` resamples of as many
   blocks as there are, drawn with replacement (``scipy.stats.bootstrap``, paired: a block's
   loss sum and row count travel together); each resample's error is its total loss over its
   total rows. The interval is the percentile or BCa interval of those errors (BCa's
   acceleration from the jackknife over blocks). The generator is seeded by a salted hash of
   ``seed``, and blocks are in sorted order, so the same seed gives the same interval
   whatever the partitioning.

What the interval is for: the uncertainty of the CV error due to which blocks happened to be
sampled -- another sample of blocks from the same process would give another error. It
assumes the blocks are roughly independent of one another, which holds when they are at least
as wide as the range of spatial autocorrelation (``soak_dask.spatial_range``). A row (pixel)
bootstrap assumes the rows are independent: on autocorrelated rows its interval is too
narrow. Neither corrects a biased estimate: the interval of random-fold CV predictions is an
interval around an optimistic error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
from scipy import stats

from ..dask_client import current_client
from ..hashing import salt, seeded_hash
from ..option_checks import checked
from ..tables.table import Table
from .blocks import spatial_blocks
from .error_profile import cv_predictions

__all__ = ["BlockBootstrap", "block_bootstrap", "block_sums"]

#: The measures that are a function of the total loss over the total rows, by task.
LOSS_MEASURES = {"regression": ("rmse", "mse", "mae"), "classification": ("error", "accuracy")}
METHODS = ("percentile", "bca")
#: Fewest resamples: fewer put the 2.5 % percentile among the two or three smallest values.
MIN_BOOT = 100
#: Significant digits the per-block loss sums keep (see the module's docstring).
DIGITS = 12
#: Resampled block indices held at once (scipy's ``batch``): about 8 MB of them.
BATCH_CELLS = 1_000_000
#: Columns of the per-block table; the block column made from a block size.
BLOCK, LOSS, ROWS = "block", "loss", "rows"
SIZE_BLOCK = "__bootstrap_block__"


@dataclass(frozen=True)
class BlockBootstrap:
    """A cross-validated error and its block-bootstrap interval.

    Attributes
    ----------
    measure : str
        ``"rmse"``, ``"mse"``, ``"mae"``, ``"error"`` (percent misclassified) or
        ``"accuracy"``.
    estimate : float
        The measure over every row (all blocks pooled).
    low, high : float
        The interval's bounds.
    level : float
        Its confidence level, e.g. 0.95.
    method : str
        ``"percentile"`` or ``"bca"``.
    n_blocks, n_rows, n_boot : int
        Blocks resampled, rows in them, and resamples drawn.
    seed : int
        Seed of the resamples.
    """

    measure: str
    estimate: float
    low: float
    high: float
    level: float
    method: str
    n_blocks: int
    n_rows: int
    n_boot: int
    seed: int

    def __str__(self) -> str:
        return (
            f"{self.measure} {self.estimate:.4g}, {self.level:.0%} {self.method} interval "
            f"{self.low:.4g} to {self.high:.4g} ({self.n_boot} resamples of {self.n_blocks} "
            f"blocks, {self.n_rows} rows)"
        )


@checked("run", only=("seed",))
def block_bootstrap(
    data: Table | pd.DataFrame | dd.DataFrame,
    *,
    blocks: str | float,
    predictions: str | None = None,
    learner: Any = None,
    folds: str | None = None,
    features: Sequence[str] | None = None,
    label: str | None = None,
    measure: str | None = None,
    n_boot: int = 1000,
    level: float = 0.95,
    method: Literal["percentile", "bca"] = "percentile",
    seed: int = 1,
    client: Any = None,
) -> BlockBootstrap:
    """A cross-validated error with an interval from resampling whole blocks of rows.

    The interval is for the uncertainty of the CV error due to which blocks happened to be
    sampled, assuming blocks are roughly independent: make them at least as wide as the
    range of spatial autocorrelation (``soak_dask.spatial_range`` measures it and proposes a
    block size). It says nothing of the bias of the CV design: use block (or kNNDM) folds
    for the predictions too, since random folds on autocorrelated rows flatter the model.

    Parameters
    ----------
    data : Table, pandas or Dask DataFrame
        The rows, with each row's cross-validated prediction in column ``predictions``;
        or, with ``learner``, the training rows (gathered into memory to fit the learner).
    blocks : str or float
        The column of each row's block (any values; e.g. ``soak_dask.spatial_blocks``'
        ``block``, or ``kNNDM``/cluster ids), or a block size in coordinate units: square
        blocks of ``data``'s coordinates (a Table loaded with ``coords=``) from the origin,
        as ``spatial_blocks`` makes them.
    predictions : str, optional
        The column of each row's cross-validated prediction (made by a model fitted on the
        rows outside its fold). Read partition by partition: works out of core.
    learner : str or estimator, optional
        Instead of ``predictions``: a built-in learner name or a scikit-learn estimator,
        fitted once per fold on the rows outside it, on the workers
        (``soak_dask.spatial.error_profile.cv_predictions``).
    folds : str, optional
        With ``learner``: the fold column (default: the Table's).
    features, label : optional
        The predictors (with ``learner``) and the observed value; default: the Table's.
    measure : {"rmse", "mse", "mae", "error", "accuracy"}, optional
        Default: rmse for a regression Table, error (percent misclassified) for
        classification; needed for a DataFrame.
    n_boot : int
        Resamples of the blocks (at least 100).
    level : float
        Confidence level of the interval, between 0 and 1.
    method : {"percentile", "bca"}
        Percentile interval, or bias-corrected and accelerated (BCa; acceleration from the
        jackknife over blocks).
    seed : int
        Seed of the resamples (and of a built-in ``learner``).
    client : distributed.Client, optional
        Where ``learner`` is fitted. Default: the current client, if any.

    Returns
    -------
    BlockBootstrap

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"block": np.repeat(np.arange(20), 10)})
    >>> df["y"] = rng.normal(size=200)
    >>> df["cv"] = df["y"] + rng.normal(size=20)[df["block"]]  # an error shared by a block
    >>> res = block_bootstrap(df, blocks="block", predictions="cv", label="y", measure="mae")
    >>> res.n_blocks, bool(res.low < res.estimate < res.high)
    (20, True)
    """
    spec = _spec(data, blocks, predictions, learner, folds, features, label, measure)
    _check_options(n_boot, level, method)
    frame = spec["frame"]
    if learner is not None:
        frame = _with_predictions(frame, spec, learner, seed, client)
    sums = block_sums(frame, spec["label"], spec["predictions"], spec["blocks"], spec["measure"])
    estimate, low, high = block_interval(sums, spec["measure"], n_boot, level, method, seed)
    return BlockBootstrap(
        spec["measure"],
        estimate,
        low,
        high,
        float(level),
        method,
        len(sums),
        int(sums[ROWS].sum()),
        int(n_boot),
        seed,
    )


def _spec(data, blocks, predictions, learner, folds, features, label, measure) -> dict:
    """The columns and measure, checked before any pass over the data."""
    table = data if isinstance(data, Table) else None
    if table is None and not isinstance(data, pd.DataFrame | dd.DataFrame):
        raise TypeError(f"data is a {type(data).__name__}; give a Table or a DataFrame")
    frame = data.data if table is not None else data
    if (predictions is None) == (learner is None):
        raise ValueError(
            "give either predictions (the column of each row's cross-validated prediction) or "
            "learner (fitted once per fold to make them), not " + ("both" if learner else "neither")
        )
    label = label if label is not None else getattr(table, "label", None)
    if not isinstance(label, str):
        raise ValueError("label is missing: name the column of observed values, e.g. label='y'")
    if isinstance(blocks, str):
        block_column = blocks
    else:
        frame, block_column = _size_blocks(table, blocks), SIZE_BLOCK
    needed = {label: "label", block_column: "blocks"}
    if predictions is not None:
        if folds is not None:
            raise ValueError("folds is for learner=; predictions were made with their folds")
        needed[predictions] = "predictions"
    else:
        features = tuple(features if features is not None else getattr(table, "features", ()))
        folds = folds if folds is not None else getattr(table, "fold", None)
        if not features or folds is None:
            raise ValueError(
                "learner= needs features= (the predictors) and folds= (the fold column), or a "
                "Table that has them"
            )
        needed |= {folds: "folds", **dict.fromkeys(features, "feature")}
    _check_columns(frame, needed)
    measure = _measure(measure, table, frame, label)
    return {
        "frame": frame,
        "label": label,
        "blocks": block_column,
        "predictions": predictions or "__cv_prediction__",
        "features": features,
        "folds": folds,
        "measure": measure,
    }


def _size_blocks(table: Table | None, size: Any) -> dd.DataFrame:
    """The table's rows with square blocks ``size`` wide (``spatial_blocks``, which checks
    the size against the coordinates' extent)."""
    if isinstance(size, bool) or not isinstance(size, int | float):
        raise ValueError(
            f"blocks={size!r}: give the block column's name, or a block size in coordinate units"
        )
    if table is None or not table.coords:
        raise ValueError(
            f"blocks={size!r} is a block size, which needs coordinates: give a Table loaded with "
            "coords=['x', 'y'], or name a column of blocks (e.g. from soak_dask.spatial_blocks)"
        )
    return spatial_blocks(table, size, column=SIZE_BLOCK).data


def _check_columns(frame: Any, needed: dict[str, str]) -> None:
    missing = [
        f"{role} column {name!r}" for name, role in needed.items() if name not in frame.columns
    ]
    if missing:
        raise ValueError(
            f"{', '.join(missing)} not in the data; its columns are {list(frame.columns)}"
        )


def _measure(measure: str | None, table: Table | None, frame: Any, label: str) -> str:
    known = (*LOSS_MEASURES["regression"], *LOSS_MEASURES["classification"])
    if measure is None:
        if table is None:
            raise ValueError(
                f"measure is missing: choose one of {list(known)} (a DataFrame does not say "
                "whether its label is a value or a class)"
            )
        return LOSS_MEASURES[table.task][0]
    if measure not in known:
        raise ValueError(
            f"measure={measure!r}: choose one of {list(known)} (measures of the total loss "
            "over the rows, which add up block by block)"
        )
    if table is not None and measure not in LOSS_MEASURES[table.task]:
        raise ValueError(
            f"measure={measure!r} does not fit the table's {table.task} task: choose one of "
            f"{list(LOSS_MEASURES[table.task])}"
        )
    if measure in LOSS_MEASURES["regression"] and not pd.api.types.is_numeric_dtype(
        frame[label].dtype
    ):
        raise ValueError(
            f"measure={measure!r} needs a numeric label; {label!r} is {frame[label].dtype}: use "
            "measure='error' for classes"
        )
    return measure


def _check_options(n_boot: Any, level: Any, method: Any) -> None:
    if isinstance(n_boot, bool) or not isinstance(n_boot, int | np.integer) or n_boot < MIN_BOOT:
        raise ValueError(f"n_boot={n_boot!r}: need an integer of at least {MIN_BOOT}, e.g. 1000")
    if isinstance(level, bool) or not isinstance(level, int | float) or not 0 < level < 1:
        raise ValueError(f"level={level!r}: need a confidence level between 0 and 1, e.g. 0.95")
    if method not in METHODS:
        raise ValueError(f"method={method!r}: choose one of {list(METHODS)}")


def _with_predictions(frame: Any, spec: dict, learner: Any, seed: int, client: Any) -> Any:
    """The training rows in memory with each row's CV prediction by ``learner``."""
    cols = [*spec["features"], spec["label"], spec["folds"], spec["blocks"]]
    rows = frame[list(dict.fromkeys(cols))]
    client = current_client() if client is None else client
    if isinstance(rows, dd.DataFrame):
        rows = client.compute(rows).result() if client is not None else rows.compute()
    rows = rows.reset_index(drop=True)
    fold = rows[spec["folds"]]
    if fold.isna().any():
        raise ValueError(
            f"fold column {spec['folds']!r} has {int(fold.isna().sum())} missing values; give "
            "every row a fold"
        )
    codes = pd.factorize(fold, sort=True)[0]
    if codes.max() < 1:
        raise ValueError(f"fold column {spec['folds']!r} has one fold; CV needs at least two")
    metric = "error_rate" if spec["measure"] in LOSS_MEASURES["classification"] else "rmse"
    args = (spec["features"], spec["label"], codes, learner, metric, seed)
    return rows.assign(**{spec["predictions"]: cv_predictions(rows, *args, client=client)})


def row_losses(observed: np.ndarray, predicted: np.ndarray, measure: str) -> np.ndarray:
    """Each row's loss: squared error (rmse, mse), absolute error (mae), or 1 when
    misclassified (error, accuracy)."""
    if measure in LOSS_MEASURES["classification"]:
        return (observed != predicted).astype(np.float64)
    diff = observed.astype(np.float64) - predicted.astype(np.float64)
    return np.abs(diff) if measure == "mae" else diff**2


def _partition_sums(
    part: pd.DataFrame, label: str, predictions: str, blocks: str, measure: str
) -> pd.DataFrame:
    loss = row_losses(part[label].to_numpy(), part[predictions].to_numpy(), measure)
    rows = pd.DataFrame({BLOCK: part[blocks].to_numpy(), LOSS: loss, ROWS: np.int64(1)})
    return rows.groupby(BLOCK, sort=False, observed=True).sum().reset_index()


def block_sums(
    frame: pd.DataFrame | dd.DataFrame, label: str, predictions: str, blocks: str, measure: str
) -> pd.DataFrame:
    """One row per block: ``block``, ``loss`` (the sum of its rows' ``row_losses``) and
    ``rows``, sorted by block; summed partition by partition and then across partitions in a
    tree, so only the per-block rows leave the workers. Missing labels, predictions or blocks
    are refused (each row needs all three)."""
    columns = [label, predictions, blocks]
    if isinstance(frame, dd.DataFrame):
        meta = pd.DataFrame(
            {
                BLOCK: frame[blocks]._meta.to_numpy(),
                LOSS: np.array([], np.float64),
                ROWS: np.array([], np.int64),
            }
        )
        parts = frame.map_partitions(
            _partition_sums, label, predictions, blocks, measure, meta=meta
        )
        summed = parts.groupby(BLOCK, sort=False, observed=True).sum(split_every=8)
        sums, missing = dask.compute(summed, frame[columns].isna().sum())
        sums = sums.reset_index()
    else:
        sums = _partition_sums(frame, label, predictions, blocks, measure)
        missing = frame[columns].isna().sum()
    _refuse_missing(missing, {label: "label", predictions: "predictions", blocks: "blocks"})
    sums = sums.sort_values(BLOCK, kind="stable", ignore_index=True)
    sums[LOSS] = [float(f"{v:.{DIGITS}g}") for v in sums[LOSS].to_numpy()]
    if len(sums) < 2:
        raise ValueError(
            f"every row is in one block ({blocks!r}): resampling blocks needs at least 2, and "
            "dozens for a useful interval; use smaller blocks"
        )
    return sums


def _refuse_missing(missing: pd.Series, roles: dict[str, str]) -> None:
    bad = {c: int(n) for c, n in missing.items() if n}
    if bad:
        named = ", ".join(f"{roles[c]} column {c!r} ({n:,} rows)" for c, n in bad.items())
        raise ValueError(
            f"missing values in {named}: every row needs its observed value, its cross-validated "
            "prediction and its block; drop those rows or fill them first"
        )


def measure_of(loss: np.ndarray, rows: np.ndarray, measure: str, axis: int = -1) -> Any:
    """``measure`` of the blocks (along ``axis``) from their loss sums and row counts."""
    mean = np.sum(loss, axis=axis) / np.sum(rows, axis=axis)
    if measure == "rmse":
        return np.sqrt(mean)
    if measure == "error":
        return 100.0 * mean
    return 1.0 - mean if measure == "accuracy" else mean


def block_interval(
    sums: pd.DataFrame, measure: str, n_boot: int, level: float, method: str, seed: int
) -> tuple[float, float, float]:
    """(estimate, low, high): ``measure`` over every block of ``sums`` (``block_sums``) and
    its interval over ``n_boot`` resamples of the blocks drawn with replacement."""
    loss, rows = sums[LOSS].to_numpy(np.float64), sums[ROWS].to_numpy(np.float64)
    statistic = partial(measure_of, measure=measure)
    estimate = float(statistic(loss, rows))
    per_block = loss / rows
    if np.all(per_block == per_block[0]):  # every resample gives the estimate (BCa: 0/0)
        return estimate, estimate, estimate
    rng = np.random.default_rng(int(seeded_hash(seed, salt("block_bootstrap"))[0]))
    res = stats.bootstrap(
        (loss, rows),
        statistic,
        n_resamples=int(n_boot),
        batch=max(1, BATCH_CELLS // len(loss)),
        vectorized=True,
        paired=True,
        confidence_level=level,
        method="BCa" if method == "bca" else "percentile",
        rng=rng,
    )
    return estimate, float(res.confidence_interval.low), float(res.confidence_interval.high)
