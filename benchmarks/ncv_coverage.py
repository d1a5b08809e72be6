"""Coverage of the nested CV interval (Bates, Hastie and Tibshirani 2023;
``evaluate(..., inference="ncv")``, ``compare(method="ncv")``) of the CV error, against naive
CV's interval, in the paper's sparse logistic setting.

Each replicate draws n = 90 rows of p = 1,000 standard normal features and a binary label
``y ~ Bernoulli(sigmoid(x1 + x2 + x3 + x4))`` (4 true coefficients of 1, the setting of the
paper's Section 6 and of its ``nestedcv`` vignette; Bayes error ≈ 0.2). The learner is L1
logistic regression (scikit-learn, liblinear, a fixed ``C``), the loss the 0/1 loss.

- **NCV**: R random splits into K folds; per split and outer fold, the model of the other
  folds scored on the fold, and a K − 1-fold CV on the other folds (R·K² fits). The per-block
  sums go to ``stats.nested_cv.ncv_test``, the function ``compare`` and ``ncv_intervals`` call.
- **NCV variants** from the same fits: without the bias correction, without the upper bound
  on se, and the interval of the paper's own experiments for a 0/1 loss (``vst``: on the
  arcsine scale asin(√p), binomial SE 1/(2√n) times NCV's inflation se / (σ_in/√n)).
- **naive CV**: the first split's K-fold CV, ``mean ± z σ̂/√n`` of its n per-row losses
  (``stats.wald_cv.wald_cv_test`` on one learner's losses: the usual CV interval).

The truth is the error of the model fitted on all n rows (Bates et al.'s Err_XY) over the
population: the limit of its error on an ever larger independent test set, computed exactly
(x is Gaussian, so the decision value w·x + b and β·x are jointly normal: a 1-D integral on a
fine grid). The table also gives the coverage of Err, the mean of Err_XY over replicates.
Coverage has its Wilson 95 % interval; the Monte-Carlo SE is √(c(1 − c)/replicates).

    python -m benchmarks.ncv_coverage                        # 400 replicates, K = 5, R = 10
    python -m benchmarks.ncv_coverage --replicates 50 --reps 5   # a smoke run, ~1 min

Writes the Markdown table to stdout.
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np
from scipy import stats as sps
from sklearn.linear_model import LogisticRegression

from soak_dask.stats.nested_cv import ncv_test
from soak_dask.stats.wald_cv import wald_cv_test

N, P, NONZERO = 90, 1000, 4
LEVEL = 0.90
# The grid of β·x (in its SDs) the true error is integrated on.
_GRID = np.linspace(-8.0, 8.0, 16001)
_WEIGHTS = sps.norm.pdf(_GRID) * (_GRID[1] - _GRID[0])


def draw(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """n rows: p standard normal features, 0/1 labels from the sparse logistic model."""
    x = rng.standard_normal((n, P))
    prob = 1.0 / (1.0 + np.exp(-x[:, :NONZERO].sum(axis=1)))
    return x, (rng.random(n) < prob).astype(np.int64)


def fit(x: np.ndarray, y: np.ndarray, c: float) -> tuple[np.ndarray, float]:
    """The L1 logistic regression's weights and intercept. A negative `c` is ``-c`` for n rows,
    scaled to the rows fitted (``-c · n / rows``): the penalty per row then stays the same on
    every train set, as glmnet's fixed λ of the paper's experiments (liblinear's penalises the
    sum of the losses, so a fixed ``C`` penalises a smaller train set relatively more)."""
    c = -c * N / len(y) if c < 0 else c
    with warnings.catch_warnings():  # liblinear's convergence notes on tiny train sets
        warnings.simplefilter("ignore")
        model = LogisticRegression(l1_ratio=1.0, solver="liblinear", C=c, random_state=0).fit(x, y)
    return model.coef_[0], float(model.intercept_[0])


def zero_one(model: tuple[np.ndarray, float], x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per-row 0/1 losses of the model (class 1 where w·x + b > 0)."""
    w, b = model
    return ((x @ w + b > 0).astype(np.int64) != y).astype(np.float64)


def true_error(model: tuple[np.ndarray, float]) -> float:
    """The model's error over the population: E[σ(u) 1{v ≤ 0} + (1 − σ(u)) 1{v > 0}], u = β·x,
    v = w·x + b, jointly normal (x ~ N(0, I))."""
    w, b = model
    s_u = math.sqrt(NONZERO)
    cov = float(w[:NONZERO].sum())  # cov(u, v) = β·w
    var_v = float(w @ w)
    u = _GRID * s_u
    mean = b + cov / s_u**2 * u  # v | u
    sd = math.sqrt(max(var_v - cov**2 / s_u**2, 0.0))
    below = sps.norm.cdf(-mean / sd) if sd > 0 else (mean <= 0).astype(np.float64)
    p1 = 1.0 / (1.0 + np.exp(-u))
    return float(_WEIGHTS @ (p1 * below + (1 - p1) * (1 - below)))


def _sums(losses: np.ndarray) -> tuple[int, float, float]:
    return losses.size, float(losses.sum()), float((losses * losses).sum())


def nested(
    x: np.ndarray, y: np.ndarray, folds: int, reps: int, c: float, rng: np.random.Generator
) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...], list[np.ndarray]]:
    """NCV's per-block (rows, Σl, Σl²): outer (R, K), inner (R, K, K − 1); and each
    repetition's outer per-row losses."""
    outer = np.zeros((3, reps, folds))
    inner = np.zeros((3, reps, folds, folds - 1))
    firsts = []
    for r in range(reps):
        fold = rng.permutation(np.arange(len(y)) % folds)
        losses = []
        for k in range(folds):
            train, test = fold != k, fold == k
            losses.append(zero_one(fit(x[train], y[train], c), x[test], y[test]))
            outer[:, r, k] = _sums(losses[-1])
            for j, other in enumerate(f for f in range(folds) if f != k):
                fit_rows, scored = train & (fold != other), fold == other
                model = fit(x[fit_rows], y[fit_rows], c)
                inner[:, r, k, j] = _sums(zero_one(model, x[scored], y[scored]))
        firsts.append(np.concatenate(losses))
    return tuple(outer), tuple(inner), firsts


def replicate(seed: int, folds: int, reps: int, c: float) -> dict[str, float]:
    """One table's NCV and naive CV intervals and its truth."""
    rng = np.random.default_rng(seed)
    x, y = draw(rng, N)
    outer, inner, losses = nested(x, y, folds, reps, c, rng)
    ncv = ncv_test(outer, inner, level=LEVEL)
    plain = ncv_test(outer, inner, level=LEVEL, bias=False)
    root = math.sqrt(max(ncv.extra["mse"], 0.0))
    z = float(sps.norm.ppf(0.5 + LEVEL / 2))
    unbounded = max(ncv.extra["se"], root)  # the lower bound kept, the upper one dropped
    vst = arcsine_interval(ncv.extra["estimate"], ncv.extra["se"] / naive_se(inner), z)
    first = losses[0]
    naive = wald_cv_test(
        np.array([first.size]), np.array([first.sum()]), np.array([(first**2).sum()]), level=LEVEL
    )
    return {
        "truth": true_error(fit(x, y, c)),
        "ncv_low": ncv.ci_low, "ncv_high": ncv.ci_high,
        "no_bias_low": plain.ci_low, "no_bias_high": plain.ci_high,
        "no_upper_low": ncv.extra["estimate"] - z * unbounded,
        "no_upper_high": ncv.extra["estimate"] + z * unbounded,
        "vst_low": vst[0], "vst_high": vst[1],
        "naive_low": naive.ci_low, "naive_high": naive.ci_high,
        "at_upper": float(root > ncv.extra["se"]), "at_lower": float(root < ncv.extra["se"]),
        "naive_mean": float(first.mean()), "ncv_estimate": ncv.extra["estimate"],
    }  # fmt: skip


def naive_se(inner: tuple[np.ndarray, ...]) -> float:
    """σ_in/√n: the naive standard error of ``ncv_test``'s lower bound (n = the rows of one
    split, each in K − 1 inner test folds)."""
    n, total, squares = (float(a.sum()) for a in inner)
    rows = n / (inner[0].shape[1] - 1) / inner[0].shape[0]
    return math.sqrt((squares - total**2 / n) / (n - 1)) / math.sqrt(rows)


def arcsine_interval(estimate: float, inflation: float, z: float) -> tuple[float, float]:
    """The interval of Bates et al.'s experiments for a 0/1 loss: on the arcsine scale
    asin(√p), whose binomial SE is 1/(2√n), widened by NCV's inflation of the naive SE."""
    centre = math.asin(math.sqrt(min(max(estimate, 0.0), 1.0)))
    half = z * inflation / (2 * math.sqrt(N))
    low, high = max(centre - half, 0.0), min(centre + half, math.pi / 2)
    return math.sin(low) ** 2, math.sin(high) ** 2


def wilson(hits: int, n: int) -> tuple[float, float]:
    """Wilson 95 % interval of a proportion."""
    z = sps.norm.ppf(0.975)
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def table(rows: list[dict[str, float]]) -> str:
    """The Markdown table of coverage (of Err_XY and of Err) and mean width, per interval."""
    truth = np.array([r["truth"] for r in rows])
    err = float(truth.mean())
    out = [
        "| interval | covers Err_XY (Wilson 95 %) | MC SE | covers Err | mean width |",
        "|---|---|---|---|---|",
    ]
    for name in ("ncv", "no_bias", "no_upper", "vst", "naive"):
        low = np.array([r[f"{name}_low"] for r in rows])
        high = np.array([r[f"{name}_high"] for r in rows])
        hits = int(((low <= truth) & (truth <= high)).sum())
        cover = hits / len(rows)
        lo, hi = wilson(hits, len(rows))
        mc_se = math.sqrt(cover * (1 - cover) / len(rows))
        err_cover = float(((low <= err) & (err <= high)).mean())
        out.append(
            f"| {name} | {cover:.3f} ({lo:.3f}-{hi:.3f}) | {mc_se:.3f} | {err_cover:.3f} | "
            f"{float((high - low).mean()):.3f} |"
        )
    upper, lower = (float(np.mean([r[k] for r in rows])) for k in ("at_upper", "at_lower"))
    bias = {k: float(np.mean([r[k] for r in rows]) - err) for k in ("ncv_estimate", "naive_mean")}
    out.append(
        f"\nErr (mean Err_XY) = {err:.3f}; SD of Err_XY = {truth.std(ddof=1):.3f}; mean "
        f"estimate − Err: NCV {bias['ncv_estimate']:+.3f}, CV {bias['naive_mean']:+.3f}; the NCV "
        f"standard error was held at √K σ_in/√n in {upper:.1%} of replicates, at σ_in/√n in "
        f"{lower:.1%}."
    )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicates", type=int, default=400)
    parser.add_argument("--folds", type=int, default=5, help="K (default 5, mlr3inferr's)")
    parser.add_argument("--reps", type=int, default=10, help="NCV's R (default 10)")
    parser.add_argument(
        "--C",
        type=float,
        default=0.1,
        help="inverse L1 penalty; negative: -C for n rows, scaled to each train set's rows",
    )
    parser.add_argument("--seed", type=int, default=2023)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    rows = [
        replicate(args.seed * 100_003 + i, args.folds, args.reps, args.C)
        for i in range(args.replicates)
    ]
    seconds = time.perf_counter() - start
    print(
        f"NCV vs naive CV, {LEVEL:.0%} intervals: {args.replicates} replicates, n = {N}, "
        f"p = {P}, K = {args.folds}, R = {args.reps}, C = {args.C} "
        f"({args.reps * args.folds**2} fits a replicate; {seconds:.0f} s)\n"
    )
    print(table(rows))


if __name__ == "__main__":
    main()
