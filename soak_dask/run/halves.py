"""The extra fits of the conservative Z test (Nadeau and Bengio 2003): the outer design run
again inside R random pairs of disjoint halves of the training rows, and each half's estimate
recorded by learner (``evaluate(..., inference="con_z", inference_repeats=R)``).

Each pair is the exact-share draw of the reserved test split (``split.outer.reserve`` at
share 1/2: whole groups with a group column, class-stratified within each subset otherwise),
seeded by its own salted hash of the run's seed, so the same seed draws the same halves
whatever the workers or partitions. Each half is then evaluated by the same engine with the
same options (the same outer strategy, K, repeats and learners), without a test split, saved
models or checkpoint.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import xarray as xr

from ..hashing import salt, seeded_hash
from ..schema import EVALUATION_DIMS
from ..settings import SETTINGS
from ..split.outer import reserve
from ..tables.table import Table

__all__ = ["DEFAULT_REPEATS", "HALF_DIMS", "check_inference", "half_seed", "with_halves"]

#: Pairs of halves when ``inference="con_z"`` is given without ``inference_repeats``.
DEFAULT_REPEATS = 10
#: Dims of the ``con_z_<measure>`` variables.
HALF_DIMS = ("learner", "inference_repeat", "half")
# What a half's run does not repeat: it only scores the design.
_NOT_IN_HALVES = {"test_split": 0.0, "models": None, "checkpoint": None, "progress": False}


def check_inference(inference: Any, repeats: Any) -> int | None:
    """The pairs of halves to run: None without ``inference``; ``repeats`` (default
    `DEFAULT_REPEATS`) with ``inference="con_z"``. Refuses ``inference_repeats`` given alone
    or below 2, and an unknown ``inference``, naming the option."""
    inference = SETTINGS["inference"].checked(inference)
    if inference is None:
        if repeats is not None:
            raise ValueError(
                f"inference_repeats={repeats!r} has no effect without inference: pass "
                "inference='con_z' to run the design in that many pairs of halves, or leave "
                "inference_repeats out"
            )
        return None
    if repeats is None:
        return DEFAULT_REPEATS
    return SETTINGS["inference_repeats"].checked(repeats)


def half_seed(seed: int, repeat: int) -> int:
    """The seed of pair `repeat`'s draw of halves: a salted hash of the run's `seed`."""
    return int(seeded_hash(seed, salt("con_z_halves"), np.uint64(repeat))[0] % np.uint64(2**32))


def halves(table: Table, seed: int) -> tuple[Table, Table]:
    """Two disjoint halves of `table`'s rows (whole groups; stratified as a test split)."""
    rest, held, _ = reserve(table, 0.5, seed)
    return rest, dataclasses.replace(table, data=held, files=None)


def with_halves(
    ds: xr.Dataset,
    table: Table,
    run: Callable[..., xr.Dataset],
    options: Mapping[str, Any],
    repeats: int,
) -> xr.Dataset:
    """`ds` with ``con_z_<measure>`` (`HALF_DIMS`): the mean over its cells of each half's
    ``run(half, **options)`` (evaluate with the run's own options, seeded per pair), for
    every measure of `ds`, and ``attrs["inference"]``, ``attrs["inference_repeats"]`` and
    ``attrs["inference_fits"]`` (the fits of every half's run)."""
    measures = list(ds.attrs["measures"])
    learners = [str(v) for v in ds["learner"].values]
    means = np.full((len(measures), len(learners), repeats, 2), np.nan)
    kwargs = {**options, **_NOT_IN_HALVES, "inference": None, "inference_repeats": None}
    fits = 0
    for r in range(repeats):
        pair_seed = half_seed(int(options["seed"]), r + 1)
        for h, part in enumerate(halves(table, pair_seed)):
            half = run(part, **{**kwargs, "seed": pair_seed})
            fits += int(half.attrs["n_fits"])
            for i, m in enumerate(measures):
                cells = half[m].sel(learner=learners).transpose(*EVALUATION_DIMS).values
                means[i, :, r, h] = np.nanmean(cells.reshape(len(learners), -1), axis=1)
    out = ds.assign_coords(inference_repeat=np.arange(1, repeats + 1), half=[1, 2])
    for i, m in enumerate(measures):
        out[f"con_z_{m}"] = (HALF_DIMS, means[i])
        out[f"con_z_{m}"].attrs["long_name"] = (
            f"{ds[m].attrs.get('long_name', m)}: mean over the design's cells in one of two "
            "disjoint halves of the rows (conservative Z test)"
        )
    out.attrs.update(inference="con_z", inference_repeats=repeats, inference_fits=fits)
    return out
