"""The extra fits of ``evaluate``'s ``inference`` option, and those of the conservative Z test
(Nadeau and Bengio 2003): the outer design run again inside R random pairs of disjoint halves of
the training rows, and each half's estimate recorded by learner (``evaluate(...,
inference="con_z", inference_repeats=R)``).

Shared by every ``inference``: the door (`check_inference`, which also refuses a design the
nested CV interval cannot run on), the seeds of the repeats (`inference_seed`) and one re-run
of the design on a part of the rows (`rerun`); ``run.nested_folds`` makes ``inference="ncv"``'s
fits with them.

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

__all__ = [
    "DEFAULT_REPEATS",
    "HALF_DIMS",
    "NCV_DESIGNS",
    "check_inference",
    "half_seed",
    "inference_seed",
    "rerun",
    "with_halves",
]

#: Repeats (con_z's pairs of halves, ncv's K-fold splits) when ``inference`` is given without
#: ``inference_repeats`` (mlr3inferr's default for both).
DEFAULT_REPEATS = 10
#: The designs ``inference="ncv"`` runs on: K-fold CV, to be nested.
NCV_DESIGNS = ("cv", "repeated_cv")
#: Dims of the ``con_z_<measure>`` variables.
HALF_DIMS = ("learner", "inference_repeat", "half")
# What a half's run does not repeat: it only scores the design.
_NOT_IN_HALVES = {"test_split": 0.0, "models": None}  # nor a checkpoint or a progress bar


def check_inference(
    inference: Any,
    repeats: Any,
    outer: str = "cv",
    table: Table | None = None,
    outer_folds: Any = None,
) -> int | None:
    """The repeats to run: None without ``inference``; ``repeats`` (default
    `DEFAULT_REPEATS`) with ``inference="con_z"`` or ``"ncv"``. Refuses ``inference_repeats``
    given alone or below 2, and an unknown ``inference``, naming the option; for ``"ncv"`` an
    `outer` design other than K-fold CV (`NCV_DESIGNS`), a `table` with a group or fold
    column and `outer_folds` below 3."""
    inference = SETTINGS["inference"].checked(inference)
    if inference is None:
        if repeats is not None:
            raise ValueError(
                f"inference_repeats={repeats!r} has no effect without inference: pass "
                "inference='con_z' (pairs of halves) or inference='ncv' (nested K-fold "
                "splits) to run that many, or leave inference_repeats out"
            )
        return None
    if inference == "ncv":
        _check_ncv_design(outer, table, outer_folds)
    if repeats is None:
        return DEFAULT_REPEATS
    return SETTINGS["inference_repeats"].checked(repeats)


def _check_ncv_design(outer: str, table: Table | None, outer_folds: Any) -> None:
    """Refuse a design whose folds the nested CV interval cannot nest."""
    if outer not in NCV_DESIGNS:
        raise ValueError(
            f"inference='ncv' nests a (K-1)-fold CV in each fold of K-fold CV: it needs "
            f"outer='cv' or outer='repeated_cv', not outer={outer!r}; use inference='con_z' on "
            "this design"
        )
    if table is not None and table.group is not None:
        raise ValueError(
            f"inference='ncv' treats the rows as independent (its b term is the variance of a "
            f"fold's per-row losses; mlr3inferr refuses grouped rows too), but the table has the "
            f"group column {table.group!r}: use inference='con_z', which keeps whole groups"
        )
    if table is not None and table.fold is not None:
        raise ValueError(
            f"inference='ncv' draws inference_repeats fresh K-fold splits, but the table's "
            f"fold column {table.fold!r} fixes the folds: load the table without fold= (and "
            "pass outer_folds=K), or use inference='con_z'"
        )
    if isinstance(outer_folds, int) and outer_folds < 3:
        raise ValueError(
            f"inference='ncv' needs outer_folds >= 3 (the inner CV has K - 1 >= 2 folds); "
            f"got outer_folds={outer_folds}"
        )


def inference_seed(seed: int, purpose: str, repeat: int) -> int:
    """The seed of repeat `repeat`'s draw for `purpose`: a salted hash of the run's `seed`."""
    return int(seeded_hash(seed, salt(purpose), np.uint64(repeat))[0] % np.uint64(2**32))


def half_seed(seed: int, repeat: int) -> int:
    """The seed of pair `repeat`'s draw of halves: a salted hash of the run's `seed`."""
    return inference_seed(seed, "con_z_halves", repeat)


def rerun(
    run: Callable[..., xr.Dataset],
    part: Table,
    options: Mapping[str, Any],
    seed: int,
    **changed: Any,
) -> xr.Dataset:
    """``run(part, **options)`` (evaluate with the run's own `options`, less what only the
    design's own run does: no test split, saved models, checkpoint, progress or inference),
    seeded by `seed`, with the options `changed`."""
    kwargs = {**options, **_NOT_IN_HALVES, "inference": None, "inference_repeats": None}
    how = dataclasses.replace(options["options"], checkpoint=None, progress=False)
    return run(part, **{**kwargs, **changed, "seed": seed, "options": how})


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
    fits = 0
    for r in range(repeats):
        pair_seed = half_seed(int(options["seed"]), r + 1)
        for h, part in enumerate(halves(table, pair_seed)):
            half = rerun(run, part, options, pair_seed)
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
