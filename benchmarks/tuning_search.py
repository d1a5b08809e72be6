"""g. tuning inside the folds: scikit-learn vs dask-ml searchers, 5 outer folds on LocalCluster(2).

Nested tuning tunes a learner on each outer fold's training part. Three ways to run the searches
of the 5 outer folds on a ``LocalCluster(n_workers=2, threads_per_worker=1)``, compared side by
side (interleaved repeats, their order rotated; median wall seconds and the ratio to ``a``):

- ``a`` scikit-learn ``GridSearchCV`` / ``RandomizedSearchCV`` (``n_jobs=1``) inside one task per
  outer fold: 5 tasks, each builds its fold's arrays on the worker and returns a small summary;
- ``b`` dask-ml's searcher with ``scheduler="sync"`` inside the same tasks (it fits pipeline
  stages that candidates share once per split);
- ``c`` dask-ml's searcher driven from the client on the cluster, one outer fold after the other
  (each search parallel over candidates × inner splits; the data is a delayed task that a
  worker computes, never an array sent from the client).

Each task makes its data from a numpy Generator seeded from (seed, case size), so nothing large
travels. Inner splits are explicit (train, test) lists (stratified 5-fold, or 5-fold over 40
groups), the same for all three; the script checks that all three give the same candidates,
the same per-split scores (to 1e-10) and the same ``best_params_``, and stops with an
AssertionError after the report otherwise. A thread samples the workers' resident memory, and
the workers' CPU seconds are recorded beside the wall time (on a shared machine they move less).
``--outer 1`` tunes one outer fold only: a single search, as for ``nested=False`` or the final
model, where one task per fold leaves a worker idle and ``c`` can use both.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import psutil
from dask import delayed
from distributed import Client
from scipy.stats import loguniform
from sklearn import model_selection as skms
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.feature_selection import SelectKBest, f_classif
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from .common import MemorySampler, finish, header, local_cluster, parser, task_seconds, timed

MODULE = "benchmarks.tuning_search"
OUTER_FOLDS = 5
INNER_FOLDS = 5
N_GROUPS = 40
N_ITER = 8
TOLERANCE = 1e-10
OPTIONS = ("a", "b", "c")
OPTION_NAMES = {
    "a": "scikit-learn search in one task per fold",
    "b": "dask-ml search, scheduler='sync', in one task per fold",
    "c": "dask-ml search from the client, folds one after the other",
}


@dataclass(frozen=True)
class Case:
    """One tuning problem: the table's size, the learner, the inner splits and the search."""

    name: str
    rows: int
    features: int
    learner: str  # "pipeline" | "hgb" | "logistic"
    inner: str = "stratified"  # "stratified" | "groups"
    search: str = "grid"  # "grid" | "random"


CASES = (
    Case("pipeline", 4_000, 500, "pipeline"),
    Case("pipeline-groups", 4_000, 500, "pipeline", inner="groups"),
    Case("pipeline-random", 4_000, 500, "pipeline", search="random"),
    Case("hgb", 20_000, 20, "hgb"),
    Case("cheap", 500, 10, "logistic"),
)


# --- data and searches (run on the workers, except c's driver) ---------------------------------


def make_table(case: Case, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Features, binary label, group (0..39) and outer fold of the case's whole table.

    Ten informative features (a linear signal plus one interaction a tree can use), the rest
    noise. With groups, the outer folds follow the groups too (8 groups per outer fold).
    """
    rng = np.random.default_rng([seed, case.rows, case.features])
    x = rng.standard_normal((case.rows, case.features))
    informative = min(10, case.features)
    logit = 0.7 * x[:, :informative] @ rng.normal(size=informative) + x[:, 0] * x[:, 1]
    y = (rng.random(case.rows) < 1.0 / (1.0 + np.exp(-logit))).astype(np.int64)
    groups = rng.integers(0, N_GROUPS, case.rows)
    if case.inner == "groups":
        outer = groups % OUTER_FOLDS
    else:
        outer = rng.permutation(np.arange(case.rows) % OUTER_FOLDS)
    return x, y, groups, outer


def fold_part(case: Case, seed: int, fold: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The training part of outer fold ``fold``: features, label, group."""
    x, y, groups, outer = make_table(case, seed)
    keep = outer != fold
    return x[keep], y[keep], groups[keep]


def inner_splits(case: Case, seed: int, y: np.ndarray, groups: np.ndarray) -> list[tuple]:
    """The explicit inner (train, test) index lists of one training part."""
    rows = np.zeros((len(y), 1))
    if case.inner == "groups":
        return list(skms.GroupKFold(INNER_FOLDS).split(rows, y, groups))
    cv = skms.StratifiedKFold(INNER_FOLDS, shuffle=True, random_state=seed)
    return list(cv.split(rows, y))


def fold_splits(case: Case, seed: int, fold: int) -> list[tuple]:
    """Inner splits of outer fold ``fold``, computed on a worker (c's driver needs them)."""
    _, y, groups = fold_part(case, seed, fold)
    return inner_splits(case, seed, y, groups)


def learner(case: Case, seed: int) -> tuple[Any, dict[str, Any]]:
    """The case's estimator and its search space (a grid, or distributions for a random search)."""
    if case.learner == "pipeline":
        est = Pipeline(
            [
                ("scale", StandardScaler()),
                ("select", SelectKBest(f_classif)),
                ("logistic", LogisticRegression(max_iter=1000)),
            ]
        )
        c_values: Any = loguniform(1e-3, 1e2) if case.search == "random" else [0.01, 0.1, 1, 10]
        return est, {"select__k": [10, 50], "logistic__C": c_values}
    if case.learner == "hgb":
        # early stopping off: with it, >10k rows draw a validation split per fit
        est = HistGradientBoostingClassifier(early_stopping=False, random_state=seed)
        return est, {"max_depth": [3, None], "learning_rate": [0.05, 0.2]}
    if case.learner == "logistic":
        return LogisticRegression(max_iter=1000), {"C": list(np.logspace(-3, 2, 6))}
    raise ValueError(f"learner={case.learner!r}: use 'pipeline', 'hgb' or 'logistic'")


def searcher(case: Case, seed: int, option: str, cv: list[tuple]) -> Any:
    """The search of ``option`` (a: scikit-learn; b, c: dask-ml), unfitted.

    dask-ml gets ``iid=False`` (its default, True, weights the mean score by test-set sizes,
    which scikit-learn no longer does) and c uses the default client as its scheduler.
    """
    est, space = learner(case, seed)
    common: dict[str, Any] = {"cv": cv, "refit": True, "error_score": "raise"}
    common["return_train_score"] = False
    if option == "a":
        from sklearn.model_selection import GridSearchCV, RandomizedSearchCV

        extra: dict[str, Any] = {"n_jobs": 1}
    else:
        from dask_ml.model_selection import GridSearchCV, RandomizedSearchCV

        extra = {"iid": False, "scheduler": "sync" if option == "b" else None}
    if case.search == "random":
        return RandomizedSearchCV(est, space, n_iter=N_ITER, random_state=seed, **common, **extra)
    return GridSearchCV(est, space, **common, **extra)


def summary(search: Any) -> dict[str, Any]:
    """What the check compares: candidates, per-split scores, the winner and its score."""
    res = search.cv_results_
    scores = np.column_stack([res[f"split{i}_test_score"] for i in range(INNER_FOLDS)])
    return {
        "params": list(res["params"]),
        "scores": scores,
        "best_params": dict(search.best_params_),
        "best_score": float(search.best_score_),
    }


def tune_in_task(case: Case, seed: int, fold: int, option: str) -> dict[str, Any]:
    """One outer fold, inside one task: build the training part, search, refit (a and b)."""
    x, y, groups = fold_part(case, seed, fold)
    return summary(searcher(case, seed, option, inner_splits(case, seed, y, groups)).fit(x, y))


# --- the three ways, as seen from the client ----------------------------------------------------


def run_in_tasks(
    client: Client, case: Case, seed: int, option: str, folds: int = OUTER_FOLDS
) -> list[dict[str, Any]]:
    """a or b: one task per outer fold (the first ``folds`` of them), gathered at the end."""
    futures = [
        client.submit(tune_in_task, case, seed, fold, option, pure=False) for fold in range(folds)
    ]
    return client.gather(futures)


def run_from_client(
    client: Client, case: Case, seed: int, option: str = "c", folds: int = OUTER_FOLDS
) -> list[dict]:
    """c: one dask-ml search per outer fold from the client, each parallel on the cluster.

    The split lists (small index arrays) come from a worker; the training part is a delayed
    task, so a worker builds it and the search's tasks read it there.
    """
    out = []
    for fold in range(folds):
        cv = client.submit(fold_splits, case, seed, fold, pure=False).result()
        part = delayed(fold_part, pure=True, nout=3)(case, seed, fold)
        search = searcher(case, seed, option, cv).fit(part[0], part[1])
        out.append(summary(search))
    return out


RUNNERS: dict[str, Callable[..., list[dict[str, Any]]]] = {
    "a": run_in_tasks,
    "b": run_in_tasks,
    "c": run_from_client,
}


# --- checks and report --------------------------------------------------------------------


def compare(first: list[dict], other: list[dict]) -> tuple[float, bool]:
    """Largest |score difference| over folds, candidates and splits; same candidates and winners.

    Different candidate lists give an infinite difference.
    """
    diff, same_best = 0.0, True
    for a, b in zip(first, other, strict=True):
        if a["params"] != b["params"]:
            return float("inf"), False
        diff = max(diff, float(np.max(np.abs(a["scores"] - b["scores"]))))
        diff = max(diff, abs(a["best_score"] - b["best_score"]))
        same_best &= a["best_params"] == b["best_params"]
    return diff, same_best


def _process_cpu() -> float:
    """CPU seconds (user + system) this process has used."""
    cpu = psutil.Process().cpu_times()
    return cpu.user + cpu.system


def time_option(
    client: Client, case: Case, option: str, args: Any
) -> tuple[list[dict], float, dict[str, float]]:
    """One timed run of ``option`` on ``case`` (``args.outer`` folds): results, seconds, facts.

    The facts: the workers' compute seconds (all tasks, from the task stream), the CPU seconds
    of the workers and of this client process (less sensitive than wall time to other load on
    the machine) and the workers' peak resident memory (MiB).
    """
    cpu, client_cpu = client.run(_process_cpu), _process_cpu()
    run = RUNNERS[option]
    with MemorySampler(client, args.interval) as mem, task_seconds(client) as busy:
        results, seconds = timed(lambda: run(client, case, args.seed, option, args.outer))
    after = client.run(_process_cpu)
    facts = {
        "busy_s": sum(busy.values()),
        "cpu_s": sum(after[w] - cpu[w] for w in cpu),
        "client_cpu_s": _process_cpu() - client_cpu,
        "peak_mib": max(mem.peaks.values(), default=0) / 2**20,
        "rise_mib": max((mem.peaks[w] - mem.first[w] for w in mem.peaks), default=0) / 2**20,
    }
    return results, seconds, facts


def report_rows(cases: tuple[Case, ...], runs: dict, checks: dict) -> list[dict[str, Any]]:
    """One row per (case, option): wall seconds (median, range), ratios to a, CPU, memory, check.

    ``paired_vs_a`` is the range of the per-repeat ratios (each against a's run in the same
    repeat); ``cpu_vs_a`` compares the workers' median CPU seconds.
    """
    rows = []
    for case in cases:
        base = runs[case.name, "a"]
        for option in OPTIONS:
            runs_of = runs[case.name, option]
            seconds = [s for s, _ in runs_of]
            paired = [s / b for s, (b, _) in zip(seconds, base, strict=True)]

            def med(key: str, of: list = runs_of) -> float:
                return statistics.median(m[key] for _, m in of)

            diff, same_best = checks[case.name, option]
            median = statistics.median(seconds)
            rows.append(
                {
                    "case": case.name,
                    "search": case.search,
                    "option": option,
                    "median_s": round(median, 2),
                    "min_s": round(min(seconds), 2),
                    "max_s": round(max(seconds), 2),
                    "vs_a": round(median / statistics.median(s for s, _ in base), 2),
                    "paired_vs_a": f"{min(paired):.2f}-{max(paired):.2f}",
                    "busy_s": round(med("busy_s"), 1),
                    "cpu_s": round(med("cpu_s"), 1),
                    "cpu_vs_a": round(med("cpu_s") / med("cpu_s", base), 2),
                    "client_cpu_s": round(med("client_cpu_s"), 1),
                    "peak_mib": round(max(m["peak_mib"] for _, m in runs_of)),
                    "rise_mib": round(max(m["rise_mib"] for _, m in runs_of)),
                    "max_diff": f"{diff:.1e}",
                    "same_best": same_best,
                }
            )
    return rows


def scaled(case: Case, scale: float) -> Case:
    """The case with ``scale`` times its rows (at least 200: 5 × 5 folds need rows to split)."""
    return replace(case, rows=max(200, round(case.rows * scale)))


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=3, help="timed runs per case and option")
    p.add_argument("--scale", type=float, default=1.0, help="multiply every case's rows")
    p.add_argument("--cases", default="", help="comma-separated case names (default all)")
    p.add_argument(
        "--outer",
        type=int,
        default=OUTER_FOLDS,
        help=f"tune the first OUTER of the {OUTER_FOLDS} outer folds (1: a single search, as "
        "for nested=False or the final model)",
    )
    p.add_argument("--interval", type=float, default=0.5, help="memory sampling period (s)")
    args = p.parse_args(argv)
    if args.quick:
        args.repeat, args.scale = 1, 0.1
    if not 1 <= args.outer <= OUTER_FOLDS:
        p.error(f"--outer={args.outer}: choose 1 to {OUTER_FOLDS}")
    wanted = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = sorted(set(wanted) - {c.name for c in CASES})
    if unknown:
        p.error(f"--cases has unknown names {unknown}; choose from {[c.name for c in CASES]}")
    cases = tuple(scaled(c, args.scale) for c in CASES if not wanted or c.name in wanted)
    facts = header("g. tuning inside the folds: scikit-learn vs dask-ml", MODULE, argv, args)
    runs: dict[tuple[str, str], list] = {(c.name, o): [] for c in cases for o in OPTIONS}
    checks: dict[tuple[str, str], tuple[float, bool]] = {}
    with local_cluster(2) as client:
        threads = client.run(lambda: os.environ.get("OMP_NUM_THREADS"))
        warm = scaled(CASES[-1], 1.0)
        for option in OPTIONS:  # imports (sklearn, dask-ml) on the workers, untimed
            RUNNERS[option](client, warm, args.seed, option)
        for r in range(args.repeat):
            for i, case in enumerate(cases):
                shift = (r + i) % len(OPTIONS)  # rotate the order: no option always first
                results = {}
                for option in OPTIONS[shift:] + OPTIONS[:shift]:
                    results[option], s, mem = time_option(client, case, option, args)
                    runs[case.name, option].append((s, mem))
                    print(f"   repeat {r + 1}, {case.name}, {option}: {s:.2f} s", flush=True)
                for option in OPTIONS:  # the worst over the repeats
                    diff, same = compare(results["a"], results[option])
                    before = checks.get((case.name, option), (0.0, True))
                    checks[case.name, option] = (max(before[0], diff), before[1] and same)
                chosen = [
                    {k: f"{v:.4g}" if isinstance(v, float) else v for k, v in b.items()}
                    for b in (res["best_params"] for res in results["a"])
                ]
                print(f"   {case.name}: chosen per outer fold {chosen}", flush=True)
    rows = report_rows(cases, runs, checks)
    extra = {"options": OPTION_NAMES, "worker_omp_threads": threads}
    extra["cases"] = [c.__dict__ for c in cases]
    result = finish("g", args, facts, rows, [], extra)
    bad = [r for r in rows if not (float(r["max_diff"]) <= TOLERANCE and r["same_best"])]
    if bad:
        raise AssertionError(f"the searches disagree (tolerance {TOLERANCE}): {bad}")
    return result


if __name__ == "__main__":
    main()
