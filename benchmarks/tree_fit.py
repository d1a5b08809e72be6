"""Fit time of the built-in decision tree: rpart's rules on presorted features against the
tree it replaced, side by side on a table of the SOAK paper's shape.

The previous ``PrunedTreeClassifier`` wrapped scikit-learn's ``DecisionTreeClassifier``
(every node sorts every feature again, float32) with ``min_impurity_decrease = ccp_alpha =
cp × root Gini impurity``; it is rebuilt here as :func:`previous_tree`. The new one follows
rpart's rules (a different, larger grown tree, pruned on the misclassified weight) with each
feature sorted once per fit. Both fit the same rows (the paper workload's simulated table,
:func:`benchmarks.paper_workload.simulated_table`: 20 features, a binary label), in one
process on one thread, alternating, each ``--repeats`` times; the table reports the median
wall and CPU seconds (``time.process_time``: the machine is shared, so wall time depends on
the load, which is printed) and the ratios.

With ``--errors`` it also runs benchmark f's SOAK design (``sd.soak``, K = 10, seed 1, on
benchmark f's table) with both trees and prints their mean test errors per train type.

Run: ``PYTHONPATH=$PWD python -m benchmarks.tree_fit --rows 100000 --repeats 5 [--errors]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.tree import DecisionTreeClassifier
from threadpoolctl import threadpool_limits

import soak_dask as sd

from .paper_workload import N_FEATURES, mean_errors, simulated_table


def previous_tree(X: np.ndarray, y: np.ndarray, cp: float = 0.01) -> DecisionTreeClassifier:
    """The tree soak_dask shipped before rpart's rules: scikit-learn's, grown while a split
    gains ``cp`` × the root's Gini impurity and pruned at the same penalty."""
    share = np.unique(y, return_counts=True)[1] / y.size
    alpha = cp * float(1.0 - share @ share)
    tree = DecisionTreeClassifier(
        min_samples_split=20,
        min_samples_leaf=7,
        max_depth=30,
        min_impurity_decrease=alpha,
        ccp_alpha=alpha,
        random_state=0,
    )
    return tree.fit(X, y)


class PreviousTree(ClassifierMixin, BaseEstimator):
    """:func:`previous_tree` as an estimator, for ``sd.soak``."""

    def fit(self, X, y):
        self.tree_ = previous_tree(np.asarray(X), np.asarray(y))
        self.classes_ = self.tree_.classes_
        return self

    def predict(self, X):
        return self.tree_.predict(np.asarray(X))


def soak_errors(rows: int, seed: int) -> pd.DataFrame:
    """Mean test error (%) of both trees in benchmark f's design (its table and seed)."""
    table = sd.load_table(simulated_table(rows, seed), label="y", subset="subset")
    learners = {"previous tree": PreviousTree(), "rpart rules": sd.PrunedTreeClassifier()}
    res = sd.soak(table, learners, n_folds=10, seed=seed, options=sd.RunOptions(progress=False))
    return mean_errors(res)


def timed(fit) -> tuple[float, float, object]:
    wall, cpu = time.perf_counter(), time.process_time()
    model = fit()
    return time.perf_counter() - wall, time.process_time() - cpu, model


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1, help="table seed (benchmark f's: 1)")
    parser.add_argument("--errors", action="store_true", help="also benchmark f's errors")
    args = parser.parse_args(argv)
    df = simulated_table(args.rows, args.seed)
    X = df[[f"x{j + 1}" for j in range(N_FEATURES)]].to_numpy()
    y = df["y"].to_numpy()
    sd.PrunedTreeClassifier().fit(X[:200], y[:200])  # load (or compile) the kernels once
    fits = {"previous (scikit-learn)": lambda: previous_tree(X, y), "rpart rules (presorted)":
            lambda: sd.PrunedTreeClassifier().fit(X, y)}  # fmt: skip
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in fits}
    leaves = {}
    with threadpool_limits(1):
        for _ in range(args.repeats):
            for name, fit in fits.items():
                wall, cpu, model = timed(fit)
                times[name].append((wall, cpu))
                leaves[name] = model.get_n_leaves()
    print(f"tree fit, {args.rows:,} rows x {N_FEATURES} features, {args.repeats} repeats")
    print(f"load average (1, 5, 15 min), after the fits: {os.getloadavg()}")
    print(f"{'tree':26} {'wall s':>8} {'CPU s':>8} {'leaves':>7}")
    med = {}
    for name, pairs in times.items():
        med[name] = [statistics.median(p[k] for p in pairs) for k in (0, 1)]
        print(f"{name:26} {med[name][0]:8.3f} {med[name][1]:8.3f} {leaves[name]:7d}")
    old, new = med.values()
    print(f"ratio new/previous: wall {new[0] / old[0]:.2f}, CPU {new[1] / old[1]:.2f}")
    if args.errors:
        print("mean test error (%), SOAK K = 10 (benchmark f's design):")
        print(soak_errors(args.rows, args.seed).round(2).to_string())


if __name__ == "__main__":
    main()
