"""Does the block bootstrap's interval of a block-CV error hold the map error, where a row
bootstrap of a random-CV error does not? A simulation on Gaussian random fields of known range.

Each replicate draws a scene of ``--grid``² cells (``soak_dask.gaussian_random_field``, every
field of effective range ``--range`` cells): two covariates ``a``, ``b`` and a spatial
residual ``e``; the target is ``y = a + b²/2 + e``. ``--points`` training cells are sampled,
at random or in ``--clusters`` clusters (discs of radius ``--radius``, default
half the range), and a random forest
(``--trees`` trees; features a, b, x, y) is

* fitted on every training point and scored on every cell of the scene: the **map error**
  (RMSE), the truth each interval should hold;
* cross-validated with ``--folds`` folds of square blocks ``--block`` × ``--range`` wide
  (``block CV``; blocks hashed to folds, ``soak_dask.spatial.flattery.block_folds``) and
  with random folds (``random CV``) by ``soak_dask.spatial.error_profile.cv_predictions``.

Intervals (95 %, ``--boot`` resamples, ``soak_dask.block_bootstrap``): block CV with the
block bootstrap (percentile and BCa; the same blocks) and with a row bootstrap
(each row its own block); random CV with a row bootstrap. Reported per sampling design: the
mean errors, each interval's coverage of the map error (and how often the map error lies
above it), and its mean width.

Run: ``python -m benchmarks.block_bootstrap_coverage`` (``--quick``: a few replicates).
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pandas as pd
from sklearn.ensemble import RandomForestRegressor

import soak_dask as sd
from soak_dask.spatial.block_bootstrap import block_bootstrap
from soak_dask.spatial.blocks import square_blocks
from soak_dask.spatial.error_profile import cv_predictions
from soak_dask.spatial.flattery import block_folds, random_folds

from .common import Ratio, finish, header, parser

FEATURES = ["a", "b", "x", "y"]
#: (name, folds, bootstrap blocks, method) of each interval.
INTERVALS = (
    ("block CV, block bootstrap", "block", "block", "percentile"),
    ("block CV, block bootstrap BCa", "block", "block", "bca"),
    ("block CV, row bootstrap", "block", "row", "percentile"),
    ("random CV, row bootstrap", "random", "row", "percentile"),
)


def scene(grid: int, range_: float, seed: int) -> pd.DataFrame:
    """Covariates ``a``, ``b``, residual ``e`` (fields of effective range ``range_``) and the
    target ``value`` on every cell."""
    fields = [
        sd.gaussian_random_field((grid, grid), range_, seed=3 * seed + i, name=name)
        for i, name in enumerate("abe")
    ]
    df = fields[0].assign(b=fields[1]["b"], e=fields[2]["e"])
    return df.assign(value=df["a"] + df["b"] ** 2 / 2 + df["e"])


def sample(df: pd.DataFrame, design: str, args, rng: np.random.Generator) -> pd.DataFrame:
    """``args.points`` distinct cells: at random, or around ``args.clusters`` random centres
    (uniform in a disc of radius ``args.radius``)."""
    if design == "random":
        return df.iloc[rng.choice(len(df), args.points, replace=False)].reset_index(drop=True)
    xy = df[["x", "y"]].to_numpy()
    centres = xy[rng.choice(len(df), args.clusters, replace=False)]
    near = np.flatnonzero(
        (np.hypot(*(xy[:, None, :] - centres[None]).transpose(2, 0, 1)) < args.radius).any(1)
    )
    take = rng.choice(near, min(args.points, len(near)), replace=False)
    return df.iloc[take].reset_index(drop=True)


def replicate(design: str, seed: int, args) -> dict:
    """One scene and training sample: the map error and each interval's bounds."""
    df = scene(args.grid, args.range, seed)
    train = sample(df, design, args, np.random.default_rng(seed))
    forest = RandomForestRegressor(args.trees, min_samples_leaf=2, random_state=seed, n_jobs=1)
    fitted = forest.fit(train[FEATURES].to_numpy(), train["value"].to_numpy())
    map_error = float(
        np.sqrt(np.mean((fitted.predict(df[FEATURES].to_numpy()) - df["value"]) ** 2))
    )
    xy, size = train[["x", "y"]].to_numpy(), args.block * args.range
    folds = {
        "block": block_folds(xy, size, args.folds, seed),
        "random": random_folds(xy, args.folds, seed),
    }
    train = train.assign(
        block=square_blocks(xy[:, 0], xy[:, 1], size, (0.0, 0.0)), row=np.arange(len(train))
    )
    for name, codes in folds.items():
        codes = pd.factorize(codes, sort=True)[0]
        cv = cv_predictions(train, FEATURES, "value", codes, forest, "rmse", seed)
        train[f"cv_{name}"] = cv
    out = {"design": design, "seed": seed, "map_error": map_error}
    for name, fold, unit, method in INTERVALS:
        res = block_bootstrap(
            train,
            blocks=unit,
            predictions=f"cv_{fold}",
            label="value",
            measure="rmse",
            n_boot=args.boot,
            method=method,
            seed=seed,
        )
        out[name] = (res.estimate, res.low, res.high, res.n_blocks)
    return out


def summarise(results: list[dict]) -> list[dict]:
    """Per design and interval: mean CV error, coverage of the map error, share of map errors
    above the interval, mean width."""
    rows = []
    for design in dict.fromkeys(r["design"] for r in results):
        runs = [r for r in results if r["design"] == design]
        truth = np.array([r["map_error"] for r in runs])
        for name, *_ in INTERVALS:
            est, low, high, blocks = np.array([r[name] for r in runs]).T
            rows.append(
                {
                    "design": design,
                    "interval": name,
                    "replicates": len(runs),
                    "map error": round(float(truth.mean()), 3),
                    "CV error": round(float(est.mean()), 3),
                    "coverage": round(float(np.mean((low <= truth) & (truth <= high))), 3),
                    "map error above": round(float(np.mean(truth > high)), 3),
                    "width": round(float(np.mean(high - low)), 3),
                    "blocks": round(float(blocks.mean()), 1),
                }
            )
    return rows


def main(argv: list[str] | None = None) -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--grid", type=int, default=100, help="cells per side (100)")
    p.add_argument("--range", type=float, default=15.0, help="effective range, cells (15)")
    p.add_argument("--points", type=int, default=250, help="training points (250)")
    p.add_argument("--clusters", type=int, default=6, help="clusters of the clustered design (6)")
    p.add_argument("--radius", type=float, help="radius of a cluster, cells (half the range)")
    p.add_argument("--designs", nargs="+", default=["random", "clustered"], help="sampling")
    p.add_argument("--block", type=float, default=1.0, help="block size / range (1)")
    p.add_argument("--folds", type=int, default=5, help="CV folds (5)")
    p.add_argument("--trees", type=int, default=40, help="trees of the forest (40)")
    p.add_argument("--boot", type=int, default=1000, help="bootstrap resamples (1000)")
    p.add_argument("--replicates", type=int, default=100, help="replicates per design (100)")
    args = p.parse_args(argv)
    # scikit-learn's note on every forest fitted in a Dask thread (its joblib config unseen)
    warnings.filterwarnings("ignore", message=".*sklearn.utils.parallel.delayed")
    if args.quick:
        args.replicates, args.boot = 4, 200
    args.radius = args.range / 2 if args.radius is None else args.radius
    facts = header(
        "block bootstrap coverage on Gaussian random fields",
        "benchmarks.block_bootstrap_coverage",
        argv,
        args,
    )
    start, results = time.perf_counter(), []
    for i in range(args.replicates):
        for design in args.designs:
            results.append(replicate(design, args.seed * 100_003 + i, args))
        if (i + 1) % 10 == 0:
            print(f"   {i + 1} replicates, {time.perf_counter() - start:.0f} s", flush=True)
    rows = summarise(results)
    cover = {(r["design"], r["interval"]): r["coverage"] for r in rows}
    ratios = [
        Ratio(f"{d}: coverage, block CV + block bootstrap", cover[d, INTERVALS[0][0]], 0.9, True)
        for d in args.designs
    ] + [
        Ratio(f"{d}: coverage, random CV + row bootstrap", cover[d, INTERVALS[3][0]], 0.5, False)
        for d in args.designs
    ]
    extra = {"seconds": round(time.perf_counter() - start, 1), "replicates": results}
    finish("block_bootstrap_coverage", args, facts, rows, ratios, extra)


if __name__ == "__main__":
    main()
