"""Level of the nested CV test of a difference (``compare(method="ncv")``) on its own null: the
coverage of its 95 % interval of the two models' true difference, beside its rejections of the
resampling tests' null.

The tables, learners and nested CV are ``benchmarks/test_level.py``'s (n = 200, two 7-nearest-
neighbour learners on (x1, x3) and (x2, x4); NCV with K = 10 and R = 10 splits, as
``evaluate(..., outer="cv", outer_folds=10, inference="ncv")`` makes them; ``nested_cv``).
The NCV test is about the learners *fitted on all these rows* (Bates et al.'s Err_XY): its null
is that the two models of the whole table err equally on new rows. On one table of the
symmetric null (b = 1) they do not (their true errors differ by about 2 points, SD), so a
rejection there is not a false one for this test; its level is 1 − the coverage of the true
difference, which each replicate computes from the two all-rows models on a fresh test set of
``--truth`` rows. Also given, for the table in docs/evaluation.md: how often it rejects at
α = 0.05 on the symmetric null (the resampling tests' null: the learners on a new sample of
this size) and on the alternative (b = 0.5).

    python -m benchmarks.ncv_difference                   # 1000 nulls, 500 alternatives
    python -m benchmarks.ncv_difference --null 40 --alternative 40   # a smoke run

Writes a Markdown table to stdout.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from joblib import Parallel, delayed

from .ncv_coverage import wilson
from .test_level import EFFECTS, nested_cv, table, wrong

TRUTH_ROWS = 20_000


def replicate(effect: float, seed: int, truth_rows: int) -> tuple[bool, bool]:
    """One table: (the NCV test rejects at 0.05, its 95 % interval holds the true difference
    of the all-rows models' errors)."""
    rng = np.random.default_rng(seed)
    X, y = table(rng, effect)
    test = nested_cv(X, y, rng)["ncv"]
    fresh = [table(rng, effect) for _ in range(truth_rows // len(y))]
    Xt = np.concatenate([X, *(f[0] for f in fresh)])
    yt = np.concatenate([y, *(f[1] for f in fresh)])
    w = wrong(Xt, yt, np.arange(len(y)), np.arange(len(y), len(yt)))
    truth = float(w[0].mean() - w[1].mean())
    return test.rejects(), bool(test.ci_low <= truth <= test.ci_high)


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--null", type=int, default=1000)
    p.add_argument("--alternative", type=int, default=500)
    p.add_argument("--truth", type=int, default=TRUTH_ROWS, help="fresh rows of the truth")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--seed", type=int, default=20231)
    args = p.parse_args(argv)
    start = time.perf_counter()
    pool = Parallel(n_jobs=args.workers, batch_size=8)
    lines = [
        "| table | replicates | rejects at α = 0.05 | 95 % interval holds the truth "
        "[Wilson 95 %] | level on its own null |",
        "|---|---|---|---|---|",
    ]
    out = {}
    for kind, n in (("null", args.null), ("alternative", args.alternative)):
        seeds = [args.seed + (0 if kind == "null" else 10**6) + i for i in range(n)]
        runs = np.array(pool(delayed(replicate)(EFFECTS[kind], s, args.truth) for s in seeds))
        rejects, covers = runs.mean(axis=0)
        low, high = wilson(int(runs[:, 1].sum()), n)
        out[kind] = {"rejects": float(rejects), "covers": float(covers)}
        lines.append(
            f"| {kind} (b = {EFFECTS[kind]}) | {n} | {rejects:.3f} | {covers:.3f} "
            f"[{low:.3f}, {high:.3f}] | {1 - covers:.3f} |"
        )
    print("\n".join(lines))
    seconds = time.perf_counter() - start
    print(
        f"\n{args.null + args.alternative} replicates in {seconds:.0f} s on {args.workers} "
        f"worker(s); load average {os.getloadavg()[0]:.1f}"
    )
    return out


if __name__ == "__main__":
    main()
