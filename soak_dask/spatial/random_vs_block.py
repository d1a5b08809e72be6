"""``random_vs_block_cv``: how much random CV flatters a learner on the user's own table
(Ploton et al. 2020): ``evaluate`` run twice with the same learner and K, random K-fold
over rows and K-fold of whole square blocks (``spatial_blocks``), side by side.

Each design's score follows the project's estimate rule (``results.estimates``): the fold
mean ± SD and the pooled estimate, which counts every test row once. The measure is error
(percent misclassified) for classification and RMSE for regression, as the spatial layer
reports errors; the pooled RMSE is the RMSE of all test rows, √(pooled MSE), not a
row-weighted mean of the folds' RMSEs.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from ..learn.builtin import resolve_learners
from ..option_checks import checked
from ..results.estimates import UNTESTED_BASIS, estimate_banner, estimates_differ
from ..results.summaries import evaluation_summary
from ..run.evaluate import evaluate
from ..run_options import RunOptions
from ..schema import DEFAULT_N_FOLDS
from ..split.neighbours import coords_of
from ..tables.crs import metric_only, unit_symbol
from ..tables.table import Table
from .blocks import spatial_blocks
from .variogram import spatial_range

#: The group column of the block design (the table's own group and fold play no part).
BLOCK = "__cv_block__"
#: The rows of the result, in order.
DESIGNS = ("random", "blocks")


@checked("run", only=("seed", "n_folds", "progress"))
def random_vs_block_cv(
    table: Table,
    learner: Any,
    *,
    block_size: float | None = None,
    shape: str = "square",
    n_folds: int = DEFAULT_N_FOLDS,
    unit: str | None = None,
    seed: int = 1,
    client: Any = None,
    progress: bool = True,
) -> pd.DataFrame:
    """Random-CV and block-CV error of the same learner, side by side.

    Parameters
    ----------
    table : Table
        Loaded with ``coords=(x, y)`` (projected). Its group and fold columns play no part:
        both designs draw their own folds (class-stratified rows; whole blocks).
    learner : str, estimator, list or dict
        As ``evaluate``'s ``learners``: each is scored by both designs. Checked before any
        pass over the data.
    block_size : float, optional
        Side of the blocks, in the coordinates' unit; default the size ``spatial_range``
        proposes (the range of the label's autocorrelation, rounded up).
    shape : {"square", "hex"}
        The blocks' shape (``spatial_blocks``).
    n_folds : int
        K of both designs: capped at the number of blocks (with ``evaluate``'s warning), for
        random CV too, so that both train on the same share of the rows.
    unit : str, optional
        Unit of the coordinates; default the unit of the table's CRS.
    seed, client, progress
        As for ``evaluate`` (the same seed for both designs).

    Returns
    -------
    pandas.DataFrame
        Per learner, one row per design (``random``, ``blocks``): ``block_size`` (NaN for
        random), ``unit``, ``n_folds`` (K used), ``measure``, ``mean`` and ``sd`` over folds,
        ``weighted_mean`` (pooled), ``n_test`` (test rows per fold), ``n_test_min``,
        ``n_test_max``, ``estimates_differ`` (``results.estimates``), and ``ratio`` /
        ``ratio_mean``: the pooled estimate / fold mean over random CV's (block CV's ratio is
        how much random CV flatters the model). ``flattery_text`` says it in words.

    Examples
    --------
    >>> import soak_dask as sd
    >>> df = sd.gaussian_random_field((24, 24), 8.0, seed=3)
    >>> df["band"] = sd.gaussian_random_field((24, 24), 8.0, seed=4)["value"]
    >>> t = sd.load_table(df, label="value", coords=["x", "y"], features=["band", "x", "y"])
    >>> res = sd.random_vs_block_cv(t, "linear", block_size=8, n_folds=4, progress=False)
    >>> res[["design", "block_size", "n_folds"]].values.tolist()
    [['random', nan, 4], ['blocks', 8.0, 4]]
    """
    coords = coords_of(table, "random_vs_block_cv")
    metric_only(table.crs, "random_vs_block_cv")
    if len(coords) != 2:
        raise ValueError(f"random_vs_block_cv needs 2 coordinates (x, y); the table has {coords}")
    learners = resolve_learners(learner, table.task, seed)  # an unknown name: before any pass
    base = replace(table, group=None, fold=None, fold_counts=None, files=None)
    if block_size is None:
        block_size = spatial_range(base, n_folds=n_folds, n_boot=0, seed=seed).block_size
    blocked = spatial_blocks(base, block_size, shape=shape, column=BLOCK)
    measures = ["error"] if table.task == "classification" else ["mse", "rmse"]
    options = {"seed": seed, "measures": measures}
    options["options"] = RunOptions(client=client, progress=progress)
    # Blocks first: fewer blocks than K cap K (evaluate warns), and random CV then takes the
    # same K, so that both train on the same share of the rows.
    by_blocks = evaluate(blocked, learners, outer_folds=n_folds, **options)
    by_rows = evaluate(base, learners, outer_folds=int(by_blocks.attrs["outer_folds"]), **options)
    unit = unit or unit_symbol(table.crs) or "coordinate units"
    runs = {"random": by_rows, "blocks": by_blocks}
    scores = [_scores(ds, design, float(block_size), unit) for design, ds in runs.items()]
    return _with_ratios(pd.concat(scores, ignore_index=True))


def _scores(ds: Any, design: str, size: float, unit: str) -> pd.DataFrame:
    """One row per learner of ``evaluate``'s result ``ds``: the estimate rule's columns."""
    measure = "error" if "error" in ds.data_vars else "rmse"
    out = evaluation_summary(ds, [measure])[["learner", "mean", "sd", "weighted_mean"]]
    if measure == "rmse":  # the RMSE of every test row, not the mean of the folds' RMSEs
        out["weighted_mean"] = np.sqrt(evaluation_summary(ds, ["mse"])["weighted_mean"])
    sizes = ds["n_test"].transpose("learner", ...).values.reshape(len(out), -1)
    out["n_test"] = [tuple(int(n) for n in row[np.isfinite(row)]) for row in sizes]
    out["n_test_min"] = [min(n) for n in out["n_test"]]
    out["n_test_max"] = [max(n) for n in out["n_test"]]
    out.insert(1, "design", design)
    out.insert(2, "block_size", size if design == "blocks" else math.nan)
    out.insert(3, "unit", unit)
    out.insert(4, "n_folds", int(ds.attrs["outer_folds"]))
    out.insert(5, "measure", measure)
    return out


def _with_ratios(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the `estimates_differ` flag and each estimate over random CV's."""
    frame["estimates_differ"] = estimates_differ(
        frame["mean"], frame["sd"], frame["weighted_mean"], frame["n_test_min"],
        frame["n_test_max"],
    )  # fmt: skip
    random = frame[frame["design"] == "random"].set_index("learner")
    with np.errstate(divide="ignore", invalid="ignore"):
        for column, of in (("ratio", "weighted_mean"), ("ratio_mean", "mean")):
            frame[column] = frame[of].to_numpy() / random.loc[frame["learner"], of].to_numpy()
    # Each learner's rows together, in the learners' order: random, then blocks (concat's).
    order = {name: i for i, name in enumerate(dict.fromkeys(frame["learner"]))}
    out = frame.sort_values("learner", key=lambda c: c.map(order), kind="stable")
    return out.reset_index(drop=True)


def _score(row: pd.Series) -> str:
    """``"error 12.3 % ± 2.1 (pooled 12.1 %)"`` or ``"RMSE 0.0412 ± 0.01 (pooled 0.0405)"``."""
    pct, name = (" %", "error") if row["measure"] == "error" else ("", "RMSE")
    return (
        f"{name} {row['mean']:.3g}{pct} ± {row['sd']:.2g} (pooled {row['weighted_mean']:.3g}{pct})"
    )


def _rows(row: pd.Series) -> str:
    low, high = row["n_test_min"], row["n_test_max"]
    return f"{low:,}" if low == high else f"{low:,} to {high:,}"


def flattery_text(frame: pd.DataFrame) -> str:
    """The comparison of `random_vs_block_cv` in words, two lines per learner (and the
    estimate rule's note where a design's fold mean and pooled estimate disagree): what
    ``soak info --spatial --learner`` prints."""
    lines = []
    for learner, rows in frame.groupby("learner", sort=False):
        random, blocks = (rows[rows["design"] == d].iloc[0] for d in DESIGNS)
        unit = "" if blocks["unit"] == "coordinate units" else f" {blocks['unit']}"
        verdict = "flatters" if blocks["ratio"] > 1 else "does not flatter"
        lines += [
            f"{learner}: random {random['n_folds']}-fold CV: {_score(random)}; "
            f"{blocks['n_folds']}-fold CV of blocks of {blocks['block_size']:g}{unit}: "
            f"{_score(blocks)}",
            f"  random CV {verdict} the model: ×{blocks['ratio']:.3g} (block CV's error over "
            f"random CV's, pooled; ×{blocks['ratio_mean']:.3g} as fold means); test rows per "
            f"fold {_rows(random)} (random), {_rows(blocks)} (blocks)",
        ]
    label = "{learner} {design} CV"
    note = estimate_banner(frame.copy(), label, frame["measure"].iloc[0], UNTESTED_BASIS)
    return "\n".join(lines + ([note] if note else []))
