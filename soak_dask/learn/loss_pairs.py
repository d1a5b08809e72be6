"""Per test block, the sums of squared differences of two learners' per-row losses, for the
Wald CV test of Bayle et al. (2020) (``compare(method="wald_cv")``), and of one learner's
squared per-row losses, for its own intervals (``wald_cv_intervals``, ``ncv_intervals``).

A test block's learners (the models of one train set) are predicted together, partition by
partition; each partition adds, per pair of learners (a, b), ``Σ (l_a(i) − l_b(i))²`` over
its rows of the block (exactly: an integer count for the 0/1 loss, an ``ExactSum`` of the
rounded squared differences otherwise), and per learner, its pair with itself, ``Σ l_a(i)²``
(the same exact sum; not for the 0/1 loss, whose squares follow from its sum), so no task
holds more than a partition's losses and the sums are the same whatever the partitions. With
the block's loss sums (its measure times its rows) they give the mean and variance of the
per-row losses and differences. Summing ``(l_a − l_b)²`` rather than the cross products
``l_a l_b`` keeps a small difference of two large losses from cancelling away.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np

from .exact_sum import ExactSum
from .measures import row_log_loss

#: The per-row loss each pointwise measure averages, and its scale: error is in percent, so
#: its loss is 100 × the 0/1 loss (its squared difference 100² × the 0/1 one).
_KIND = {"error": "wrong", "accuracy": "wrong", "log_loss": "log_loss", "mse": "mse", "mae": "mae"}
_SCALE = {"error": 1e4}

Pairs = dict[tuple[str, str], dict[str, Any]]


def row_losses(
    measures: Collection[str],
    y_true: np.ndarray,
    y_pred: np.ndarray,
    proba: np.ndarray | None,
    n_classes: int | None,
) -> dict[str, np.ndarray]:
    """The per-row losses of ``measures``' pointwise ones, by kind (``wrong``: the 0/1 loss
    of error and accuracy, as booleans; ``log_loss``, left out without class probabilities;
    ``mse``: squared errors; ``mae``: absolute errors). Arguments as
    ``measures.partial_scores``'."""
    out: dict[str, np.ndarray] = {}
    if n_classes is None:
        residual = np.asarray(y_true, dtype=np.float64) - y_pred
        if "mse" in measures:
            out["mse"] = residual * residual
        if "mae" in measures:
            out["mae"] = np.abs(residual)
        return out
    if {"error", "accuracy"} & set(measures):
        out["wrong"] = y_true != y_pred
    if "log_loss" in measures:
        loss = row_log_loss(y_true, proba, n_classes)
        if loss is not None:
            out["log_loss"] = loss
    return out


def pair_sums(losses: Mapping[str, Mapping[str, np.ndarray]]) -> Pairs:
    """For each pair of learners (a, b), a before b in ``losses`` (learner -> its
    ``row_losses`` on the same rows): per loss kind both have, ``Σ (l_a − l_b)²``; and for
    each learner its pair with itself (a, a): per loss kind that is not the 0/1 loss,
    ``Σ l_a²``."""
    names = list(losses)
    out: Pairs = {}
    for i, a in enumerate(names):
        own = {k: _squares(loss) for k, loss in losses[a].items() if loss.dtype != bool}
        if own:
            out[a, a] = own
        for b in names[i + 1 :]:
            kinds = [k for k in losses[a] if k in losses[b]]
            out[a, b] = {k: _diff_squares(losses[a][k], losses[b][k]) for k in kinds}
    return out


def _diff_squares(x: np.ndarray, y: np.ndarray) -> int | ExactSum:
    if x.dtype == bool:  # the 0/1 loss: its squared differences count the rows that differ
        return int(np.count_nonzero(x != y))
    return _squares(x - y)


def _squares(d: np.ndarray) -> ExactSum:
    # Each row's square rounded once, then summed exactly: the same whatever the partitions,
    # at a third of the cost of summing the squares' rounding errors too (``of_squares``).
    return ExactSum.of(d * d)


def merge_pairs(pieces: Sequence[Mapping[tuple[str, str], Mapping[str, Any]]]) -> Pairs:
    """``pair_sums`` of disjoint rows of one block added up (a partition without the block's
    rows has no pairs: it adds nothing)."""
    out: Pairs = {}
    for piece in pieces:
        for pair, sums in piece.items():
            held = out.setdefault(pair, {})
            for kind, value in sums.items():
                held[kind] = held[kind] + value if kind in held else value
    return out


def pair_values(
    sums: Mapping[tuple[str, str], Mapping[str, Any]],
    learner: str,
    measures: Sequence[str],
    others: Collection[str],
) -> dict[str, dict[str, float]]:
    """What a record of ``learner`` on a block stores: ``{measure: {other learner: Σ (l −
    l_other)²}}`` in the measure's units, for its pointwise ``measures`` and the learners
    ``others`` (those that scored the block); with ``learner`` among ``others``, its pair
    with itself, ``{measure: {learner: Σ l²}}`` (measures whose loss is not 0/1)."""
    out: dict[str, dict[str, float]] = {}
    for (a, b), kinds in sums.items():
        if learner not in (a, b) or (other := b if learner == a else a) not in others:
            continue
        for m in measures:
            if m in _KIND and _KIND[m] in kinds:
                value = float(kinds[_KIND[m]]) * _SCALE.get(m, 1.0)
                out.setdefault(m, {})[other] = value
    return out
