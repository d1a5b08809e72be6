"""Type-I error and power of the learner comparisons of ``compare``, design by design.

Each simulation draws a fresh table of n = 200 rows (four standard normal features, a binary
label ``y = 1[x1 + b·x2 + ε > 0]``, ε ~ N(0, 1)) and compares two k-NN learners (k = 7): ``a``
sees (x1, x3), ``b`` sees (x2, x4). With b = 1 (the null) the two are equally good in
expectation by symmetry (swap x1↔x2, x3↔x4): 34.4 % and 34.3 % error on a large fresh test set
(60 tables), though on one table the two models' true errors differ by 2.0 points (SD) -- the
variation resampling within one table cannot see. With b = 0.5 (the alternative) ``a`` is
better: 30.2 % against 43.8 % (13.6 points). Each design resamples the table as ``evaluate`` does --
class-stratified 10-fold, 5 × 10-fold, 5 × 2-fold, class-stratified 90/10 random splits, Poisson(1)
bootstrap scored out of bag, a class-stratified reserved test split scored by models fitted
on the other rows -- with scikit-learn on in-memory numpy, and the tests of
``soak_dask.stats.mean_tests`` (the functions ``compare`` calls) run on the error
differences. The conservative Z test (``con_z``, Nadeau and Bengio 2003) also runs each design
inside R = 10 (``--pairs``) class-stratified random pairs of disjoint halves of the table, as
``evaluate(..., inference="con_z")`` does. The nested CV test (``compare(method="ncv")``) runs on
its own design, 10-fold CV in R = 10 fresh splits with each fold's inner CV (``nested_cv``); its
null is another (the all-rows models: ``benchmarks/ncv_difference.py`` measures its level there).
A test rejects when its p < 0.05; the Bayesian test
"declares" when P(a better) or P(b better) > 0.95, with a rope of 1 point of error.

    python -m benchmarks.test_level                     # 1000 nulls, 500 alternatives
    python -m benchmarks.test_level --quick             # 40 of each (smoke)
    python -m benchmarks.test_level --null 2000 --workers 2 --json level.json
    python -m benchmarks.test_level --only 1               # one design (numbered from 0)
    python -m benchmarks.test_level --pairs 5 --null 300   # con_z with R = 5 pairs of halves
    python -m benchmarks.test_level --check 100            # numpy k-NN == scikit-learn first

Writes the Markdown table to stdout (and JSON with ``--json``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed
from sklearn.model_selection import StratifiedKFold, StratifiedShuffleSplit, train_test_split
from sklearn.neighbors import KNeighborsClassifier

from soak_dask.stats.mean_tests import (
    MeanTest,
    bayesian_test,
    con_z_test,
    five_by_two_f,
    five_by_two_t,
    mcnemar_test,
    paired_test,
)
from soak_dask.stats.nested_cv import ncv_test

N_ROWS = 200
K_NEIGHBOURS = 7
ROPE = 1.0  # points of error
DECIDE = 0.95  # posterior probability the Bayesian test needs to declare a winner
FEATURES = {"a": [0, 2], "b": [1, 3]}
EFFECTS = {"null": 1.0, "alternative": 0.5}
TEST_SPLIT = 0.25
N_BOOT = 20
HALF_PAIRS = 10  # R of the conservative Z test (--pairs)
NCV_REPEATS = 10  # R of the nested CV test: evaluate's default inference_repeats


def table(rng: np.random.Generator, effect: float) -> tuple[np.ndarray, np.ndarray]:
    """X (n × 4 standard normal) and y = 1[x1 + effect·x2 + ε > 0]."""
    X = rng.standard_normal((N_ROWS, 4))
    y = (X[:, 0] + effect * X[:, 1] + rng.standard_normal(N_ROWS) > 0).astype(int)
    return X, y


def wrong(X: np.ndarray, y: np.ndarray, train: np.ndarray, test: np.ndarray) -> np.ndarray:
    """Per test row and learner (2 × n_test): 1 where the learner trained on `train` errs.

    Exact k-NN in numpy (squared Euclidean distances, the majority of the k nearest train
    rows, a repeated bootstrap row counted as often as drawn): the predictions of
    `KNeighborsClassifier(K_NEIGHBOURS)` (`sklearn_wrong`, checked by ``--check``) at ~1/20 of
    its cost on these small tables, so 1,000 nulls with con_z's extra fits take minutes."""
    out = []
    for cols in FEATURES.values():
        gap = X[test][:, None, cols] - X[train][None, :, cols]
        nearest = np.argpartition((gap**2).sum(axis=2), K_NEIGHBOURS - 1, axis=1)
        votes = y[train][nearest[:, :K_NEIGHBOURS]].mean(axis=1)
        out.append((votes > 0.5).astype(int) != y[test])  # binary, k odd: no tied vote
    return np.array(out, dtype=int)


def sklearn_wrong(X: np.ndarray, y: np.ndarray, train: np.ndarray, test: np.ndarray) -> np.ndarray:
    """`wrong` by scikit-learn's `KNeighborsClassifier`: the reference ``--check`` compares."""
    out = []
    for cols in FEATURES.values():
        model = KNeighborsClassifier(K_NEIGHBOURS).fit(X[np.ix_(train, cols)], y[train])
        out.append(model.predict(X[np.ix_(test, cols)]) != y[test])
    return np.array(out, dtype=int)


def cell(X, y, train, test) -> tuple[float, float]:
    """(error of a − error of b in percent, n_test / n_train) of one resampling cell."""
    w = wrong(X, y, train, test)
    return 100.0 * (w[0].mean() - w[1].mean()), len(test) / len(train)


def cells(X, y, splits) -> tuple[np.ndarray, float]:
    out = np.array([cell(X, y, tr, te) for tr, te in splits])
    return out[:, 0], float(out[:, 1].mean())


def resampled(diff: np.ndarray, ratio: float) -> dict[str, MeanTest]:
    """The tests over cells of every design."""
    return {
        "paired": paired_test(diff),
        "corrected": paired_test(diff, ratio),
        "bayesian": bayesian_test(diff, ratio, ROPE),
    }


def half_estimates(X, y, rng, make: Callable) -> np.ndarray:
    """(R, 2): the design `make` run inside each half of R class-stratified random pairs of
    disjoint halves, its mean difference per half (evaluate's ``inference="con_z"``)."""
    out = np.empty((HALF_PAIRS, 2))
    for r in range(HALF_PAIRS):
        first, second = train_test_split(
            np.arange(len(y)), test_size=0.5, stratify=y, random_state=int(rng.integers(2**31))
        )
        for h, rows in enumerate((first, second)):
            Xh, yh = X[rows], y[rows]
            out[r, h] = cells(Xh, yh, make(Xh, yh, rng))[0].mean()
    return out


def with_con_z(tests: dict, diff: np.ndarray, X, y, rng, make: Callable) -> dict[str, MeanTest]:
    """`tests` and the conservative Z test of `diff` (the cells of design `make` on X, y) from
    the design's runs in pairs of halves (none with ``--pairs 0``)."""
    if HALF_PAIRS:
        tests["con_z"] = con_z_test(float(diff.mean()), half_estimates(X, y, rng, make))
    return tests


def resampled_design(X, y, rng, make: Callable) -> dict[str, MeanTest]:
    """The tests over the cells of design `make` (its splits of X, y), with conservative Z."""
    diff, ratio = cells(X, y, make(X, y, rng))
    return with_con_z(resampled(diff, ratio), diff, X, y, rng, make)


def kfold_splits(X, y, rng, k: int = 10, repeats: int = 1) -> list:
    splits = []
    for _ in range(repeats):
        folds = StratifiedKFold(k, shuffle=True, random_state=int(rng.integers(2**31)))
        splits += list(folds.split(X, y))
    return splits


def subsampling_splits(X, y, rng) -> list:
    split = StratifiedShuffleSplit(15, test_size=0.1, random_state=int(rng.integers(2**31)))
    return list(split.split(X, y))


def bootstrap_splits(X, y, rng) -> list:
    splits = []
    while len(splits) < N_BOOT:
        counts = rng.poisson(1.0, len(y))
        oob = np.flatnonzero(counts == 0)
        if len(oob) and len(np.unique(y[oob])):  # evaluate scores every non-empty OOB set
            splits.append((np.repeat(np.arange(len(y)), counts), oob))
    return splits


def cv10(X, y, rng) -> dict[str, MeanTest]:
    return resampled_design(X, y, rng, kfold_splits)


def repeated_cv_splits(X, y, rng) -> list:
    return kfold_splits(X, y, rng, repeats=5)


def repeated_cv(X, y, rng) -> dict[str, MeanTest]:
    return resampled_design(X, y, rng, repeated_cv_splits)


def subsampling(X, y, rng) -> dict[str, MeanTest]:
    return resampled_design(X, y, rng, subsampling_splits)


def five_by_two_splits(X, y, rng) -> list:
    return kfold_splits(X, y, rng, 2, 5)


def five_by_two(X, y, rng) -> dict[str, MeanTest]:
    diff = cells(X, y, five_by_two_splits(X, y, rng))[0]
    grid = diff.reshape(5, 2)  # repeat by fold
    tests = {**resampled(diff, 1.0), "5x2cv": five_by_two_t(grid), "5x2cv_f": five_by_two_f(grid)}
    return with_con_z(tests, diff, X, y, rng, five_by_two_splits)


def bootstrap(X, y, rng) -> dict[str, MeanTest]:
    return resampled_design(X, y, rng, bootstrap_splits)


def reserved_split(X, y, rng) -> dict[str, MeanTest]:
    train, test = train_test_split(
        np.arange(N_ROWS), test_size=TEST_SPLIT, stratify=y, random_state=int(rng.integers(2**31))
    )
    w = wrong(X, y, train, test)
    b = int(((w[0] == 0) & (w[1] == 1)).sum())  # a right, b wrong
    c = int(((w[0] == 1) & (w[1] == 0)).sum())
    return {
        "mcnemar": mcnemar_test(b, c, len(test)),
        "mcnemar_chi2": mcnemar_test(b, c, len(test), exact=False),
    }


def nested_cv(X, y, rng, k: int = 10) -> dict[str, MeanTest]:
    """The nested CV test (Bates et al. 2023) of the per-row differences of a's and b's 0/1
    losses, as ``evaluate(..., outer="cv", inference="ncv")`` makes its blocks
    (``run.nested_folds``): `NCV_REPEATS` fresh class-stratified K-fold splits, each fold
    scored by the models of the other K − 1 folds (outer) and those other folds' own
    (K − 1)-fold CV (inner, its folds the other outer folds)."""
    outer = np.zeros((3, NCV_REPEATS, k))
    inner = np.zeros((3, NCV_REPEATS, k, k - 1))
    for r in range(NCV_REPEATS):
        fold = np.empty(len(y), dtype=int)
        for j, (_, test) in enumerate(kfold_splits(X, y, rng, k)):
            fold[test] = j
        for f in range(k):
            outer[:, r, f] = _loss_sums(X, y, fold != f, fold == f)
            for i, other in enumerate(o for o in range(k) if o != f):
                inner[:, r, f, i] = _loss_sums(X, y, (fold != f) & (fold != other), fold == other)
    return {"ncv": ncv_test(tuple(outer), tuple(inner))}


def _loss_sums(X, y, train: np.ndarray, test: np.ndarray) -> tuple[int, float, float]:
    """(rows, Σ d, Σ d²) of the per-row loss differences d = a's − b's on `test`."""
    w = wrong(X, y, np.flatnonzero(train), np.flatnonzero(test))
    d = (w[0] - w[1]).astype(float)
    return d.size, float(d.sum()), float((d * d).sum())


DESIGNS: dict[str, Callable] = {
    "10-fold CV": cv10,
    "5 × 10-fold CV": repeated_cv,
    "15 × 90/10 subsampling": subsampling,
    "5×2cv": five_by_two,
    f"bootstrap ({N_BOOT} resamples, out of bag)": bootstrap,
    f"test split ({TEST_SPLIT:.0%}), final models": reserved_split,
    f"nested CV (10-fold, R = {NCV_REPEATS})": nested_cv,
}


def decided(test: MeanTest) -> bool:
    """Rejection (p < 0.05), or for the Bayesian test a declared winner."""
    if "p_left" in test.extra:  # the Bayesian test (ncv's extra holds its estimates)
        return max(test.extra["p_left"], test.extra["p_right"]) > DECIDE
    return test.rejects()


def simulate(
    effect: float, seed: int, designs: list[str], pairs: int = HALF_PAIRS
) -> dict[str, dict[str, tuple[bool, bool]]]:
    """One table: per design and test, (decided, interval excludes 0); `pairs` of halves for
    the conservative Z test (0: none)."""
    global HALF_PAIRS  # set in the worker process, which does not see main's arguments
    HALF_PAIRS = pairs
    rng = np.random.default_rng(seed)
    X, y = table(rng, effect)
    out = {}
    for name in designs:
        design = DESIGNS[name]
        tests = design(X, y, rng)
        out[name] = {k: (decided(t), bool(t.ci_low > 0 or t.ci_high < 0)) for k, t in tests.items()}
    return out


def rates(runs: list[dict]) -> dict[str, dict[str, list[float]]]:
    """Share deciding / interval excluding 0, per design and test."""
    out: dict[str, dict[str, list[float]]] = {}
    for design in runs[0]:
        out[design] = {}
        for test in runs[0][design]:
            flags = np.array([r[design][test] for r in runs], dtype=float)
            out[design][test] = flags.mean(axis=0).tolist()
    return out


def markdown(level: dict, power: dict, n_null: int, n_alt: int) -> str:
    se = math.sqrt(0.05 * 0.95 / n_null)
    lines = [
        f"Type-I error (over {n_null} true nulls; its Monte-Carlo SE at 0.05 is {se:.3f}) and "
        f"power (over {n_alt} alternatives) at α = 0.05; in brackets, how often the 95 % "
        "interval excludes 0.",
        "",
        "| design | test | type-I error | power |",
        "|---|---|---|---|",
    ]
    for design in level:
        for test in level[design]:
            (l_rej, l_ci), (p_rej, p_ci) = level[design][test], power[design][test]
            lines.append(
                f"| {design} | {test} | {l_rej:.3f} ({l_ci:.3f}) | {p_rej:.3f} ({p_ci:.3f}) |"
            )
    return "\n".join(lines)


def check_knn(n_tables: int, seed: int) -> str:
    """How many predictions `wrong` and `sklearn_wrong` disagree on, over every split of every
    resampling design of `n_tables` null tables."""
    rng = np.random.default_rng(seed)
    makers = [kfold_splits, subsampling_splits, five_by_two_splits, bootstrap_splits]
    differ = total = 0
    for _ in range(n_tables):
        X, y = table(rng, EFFECTS["null"])
        for train, test in (s for make in makers for s in make(X, y, rng)):
            ours, theirs = wrong(X, y, train, test), sklearn_wrong(X, y, train, test)
            differ, total = differ + int((ours != theirs).sum()), total + ours.size
    if differ:
        raise SystemExit(f"the numpy k-NN differs from scikit-learn's on {differ} of {total}")
    return f"k-NN check: numpy and scikit-learn agree on all {total:,} predictions"


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--null", type=int, default=1000, help="simulations under the null")
    p.add_argument("--alternative", type=int, default=500, help="simulations for power")
    p.add_argument("--workers", type=int, default=2, help="processes (at most 2 here)")
    p.add_argument("--seed", type=int, default=20231)
    p.add_argument("--quick", action="store_true", help="40 of each")
    p.add_argument(
        "--pairs",
        type=int,
        default=HALF_PAIRS,
        help=f"pairs of halves of the conservative Z test (default {HALF_PAIRS}; 0: no con_z)",
    )
    p.add_argument("--json", type=Path)
    p.add_argument(
        "--check",
        type=int,
        default=0,
        metavar="N",
        help="first compare the numpy k-NN with scikit-learn's on N tables (every design's splits)",
    )
    p.add_argument(
        "--only", nargs="+", type=int, help=f"designs by number (default all): {list(DESIGNS)}"
    )
    args = p.parse_args(argv)
    names = list(DESIGNS)
    designs = names if args.only is None else [names[i] for i in args.only]
    n_null, n_alt = (40, 40) if args.quick else (args.null, args.alternative)
    start = time.perf_counter()
    if args.check:
        print(check_knn(args.check, args.seed))
    pool = Parallel(n_jobs=args.workers, batch_size=8)
    out = {}
    for kind, n in (("null", n_null), ("alternative", n_alt)):
        seeds = [args.seed + (0 if kind == "null" else 10**6) + i for i in range(n)]
        runs = pool(delayed(simulate)(EFFECTS[kind], s, designs, args.pairs) for s in seeds)
        out[kind] = rates(runs)
    seconds = time.perf_counter() - start
    text = markdown(out["null"], out["alternative"], n_null, n_alt)
    print(text)
    print(
        f"\n{n_null + n_alt} simulations in {seconds:.0f} s on {args.workers} worker(s); "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    result = {**out, "n_null": n_null, "n_alternative": n_alt, "seconds": seconds}
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
