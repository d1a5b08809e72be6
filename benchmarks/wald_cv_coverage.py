"""Coverage of the Wald CV interval (Bayle et al. 2020; ``compare(method="wald_cv")``) of two
learners' difference, and of one learner's (``wald_cv_intervals``), against the truth on a large
independent test set.

Each replicate draws a table of n = 300 rows (ten standard normal features, a binary label
``y ~ Bernoulli(sigmoid(x1 + x2/2 + x3/4))``), deals it into class-stratified 5-fold CV and fits
two learners on each train set: ``a`` logistic regression (C = 0.05, all ten features), ``b``
LDA on the first three features. Per row of each test fold, the learners' losses
(``loss_pairs.row_losses``: the 0/1 loss of ``error`` in percent, the log loss) give the
fold's Σd and Σd² (d = l_a − l_b), and ``stats.wald_cv.wald_cv_test`` (the function
``compare`` calls) gives the 90 % and 95 % intervals, with mlr3inferr's two variance estimates;
each learner's own Σl and Σl² give its own intervals (targets ``a`` and ``b``). A regression
table of the same rows (``y = x1 + x2/2 + x3/4 + ε``, ε standard normal), 5-fold CV of linear
regression on all ten features, gives its one-learner intervals of MSE and MAE (target
``linear``).

The target is Bayle et al.'s *test error* of these fitted models: the mean, over the 5 fold
models, of each one's expected loss on a new row (weighted by its fold's rows), estimated on a
fresh independent test set of 10⁵ rows drawn per replicate. (The learners' expected error over
new training samples is another target, which the interval is known to undercover.) Coverage
is the share of replicates whose interval holds the true value, with its Wilson 95 %
interval.

    python -m benchmarks.wald_cv_coverage                      # 200 replicates (~30 CPU s)
    python -m benchmarks.wald_cv_coverage --replicates 1000    # the issue's target

Writes the Markdown tables to stdout.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy import stats as sps
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.model_selection import KFold, StratifiedKFold

from soak_dask.learn.loss_pairs import row_losses
from soak_dask.stats.wald_cv import WALD_CV_VARIANCES, wald_cv_test

MEASURES = ("error", "log_loss")
LEVELS = (0.90, 0.95)
_BETA = np.array([1.0, 0.5, 0.25])
_SCALE = {"error": 100.0}  # error in percent: its per-row loss is 100 × the 0/1 loss


def draw(rng: np.random.Generator, n: int, p: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """n rows of the simulated table: features and 0/1 labels."""
    x = rng.standard_normal((n, p))
    prob = 1.0 / (1.0 + np.exp(-(x[:, :3] @ _BETA)))
    return x, (rng.random(n) < prob).astype(np.int64)


def learners() -> dict[str, tuple[object, slice]]:
    """The two learners and the features each sees."""
    return {
        "a": (LogisticRegression(C=0.05), slice(None)),
        "b": (LinearDiscriminantAnalysis(), slice(0, 3)),
    }


def losses(model, cols: slice, x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    """Per-row losses of a fitted model, in each measure's units."""
    pred = model.predict(x[:, cols])
    found = row_losses(MEASURES, y, pred, model.predict_proba(x[:, cols]), 2)
    return {"error": _SCALE["error"] * found["wrong"], "log_loss": found["log_loss"]}


def replicate(seed: int, n: int, folds: int, n_test: int) -> dict[tuple, float]:
    """Whether each (target, measure, variance, level) interval of one table covers the truth
    (target ``a − b``: the difference; ``a``, ``b``, ``linear``: one learner's loss), and per
    target and measure (key ``(target, measure, "z")``) the estimate's error in standard
    errors, (mean − truth) / (σ̂/√n) (all-pairs σ̂): standard normal if the interval is right."""
    rng = np.random.default_rng(seed)
    x, y = draw(rng, n)
    x_new, y_new = draw(rng, n_test)
    # Per target and measure, per fold: rows, Σ loss, Σ loss²; and the truth.
    sums: dict[tuple[str, str], np.ndarray] = {}
    truth: dict[tuple[str, str], float] = {}

    def add(key: tuple[str, str], k: int, loss: np.ndarray, new: np.ndarray) -> None:
        sums.setdefault(key, np.zeros((folds, 3)))[k] = len(loss), loss.sum(), loss @ loss
        truth[key] = truth.get(key, 0.0) + len(loss) / n * float(np.mean(new))

    split = StratifiedKFold(folds, shuffle=True, random_state=seed)
    for k, (train, test) in enumerate(split.split(x, y)):
        fold, new = {}, {}
        for name, (est, cols) in learners().items():
            model = est.fit(x[train][:, cols], y[train])
            fold[name] = losses(model, cols, x[test], y[test])
            new[name] = losses(model, cols, x_new, y_new)
        for m in MEASURES:
            add(("a − b", m), k, fold["a"][m] - fold["b"][m], new["a"][m] - new["b"][m])
            for name in fold:
                add((name, m), k, fold[name][m], new[name][m])
    # The regression table: the same features, a linear signal plus standard normal noise.
    signal, signal_new = x[:, :3] @ _BETA, x_new[:, :3] @ _BETA
    y, y_new = signal + rng.standard_normal(n), signal_new + rng.standard_normal(n_test)
    for k, (train, test) in enumerate(KFold(folds, shuffle=True, random_state=seed).split(x)):
        model = LinearRegression().fit(x[train], y[train])
        r, r_new = y[test] - model.predict(x[test]), y_new - model.predict(x_new)
        add(("linear", "mse"), k, r * r, r_new * r_new)
        add(("linear", "mae"), k, np.abs(r), np.abs(r_new))
    return _covered(sums, truth)


def _covered(sums: dict[tuple[str, str], np.ndarray], truth: dict) -> dict[tuple, float]:
    """`replicate`'s answer from each target's per-fold sums and its truth."""
    out = {}
    for key, per_fold in sums.items():
        rows, total, squares = per_fold.T
        for variance in WALD_CV_VARIANCES:
            for level in LEVELS:
                r = wald_cv_test(rows, total, squares, level=level, variance=variance)
                out[(*key, variance, level)] = r.ci_low <= truth[key] <= r.ci_high
        r = wald_cv_test(rows, total, squares)
        out[(*key, "z")] = (r.extra["estimate"] - truth[key]) / r.extra["se"]
    return out


def wilson(hits: int, total: int) -> tuple[float, float]:
    """Wilson's 95 % interval of a binomial share."""
    z = sps.norm.ppf(0.975)
    share = hits / total
    centre = (share + z * z / (2 * total)) / (1 + z * z / total)
    half = z * math.sqrt(share * (1 - share) / total + z * z / (4 * total**2)) / (1 + z * z / total)
    return centre - half, centre + half


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=200)
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--test-rows", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    wall, cpu = time.perf_counter(), time.process_time()
    runs = [
        replicate(args.seed * 100_003 + r, args.n, args.folds, args.test_rows)
        for r in range(args.replicates)
    ]
    print(f"Wald CV coverage: {args.replicates} replicates, n = {args.n}, {args.folds}-fold CV, "
          f"truth on {args.test_rows:,} new rows; {time.perf_counter() - wall:.0f} s wall, "
          f"{time.process_time() - cpu:.0f} s CPU\n")  # fmt: skip
    print("| target | measure | variance | nominal | coverage | Wilson 95 % interval |")
    print("|---|---|---|---|---|---|")
    for key in [k for k in runs[0] if k[-1] != "z"]:
        hits = sum(run[key] for run in runs)
        low, high = wilson(hits, len(runs))
        target, m, variance, level = key
        share = hits / len(runs)
        print(f"| {target} | {m} | {variance} | {level:.2f} | {share:.3f} | {low:.3f}–{high:.3f} |")
    print("\n| target | measure | mean of (estimate − truth)/(σ̂/√n) | its SD (1 if σ̂ is right) |")
    print("|---|---|---|---|")
    for key in [k for k in runs[0] if k[-1] == "z"]:
        z = np.array([run[key] for run in runs])
        print(f"| {key[0]} | {key[1]} | {z.mean():+.3f} | {z.std(ddof=1):.3f} |")


if __name__ == "__main__":
    main()
