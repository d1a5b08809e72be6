"""Grouped folds on aztrees (region3 × polygon, K = 10): rows per test fold, and what it does to
the logistic regression's other − same, under each ``group_assignment`` and R's own folds.

Measures, per subset, the smallest and largest test fold (seeds 1..5 for soak_dask's two
assignments, and "rows" at K = 8; the R fixture's fold column of ../shared/data/mlr3resampling),
then runs SOAK (featureless and logistic, seed 1) on each and reports, for every subset and compare
type, the fold-mean difference (what the paired t-test tests), the row-weighted difference and
p. The numbers behind docs/method.md "Grouped folds" and the default ``group_assignment``.

Run: ``PYTHONPATH=. python -m benchmarks.group_balance`` (5 minutes on 2 cores at a load of 20).
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import pandas as pd

import soak_dask as sd
from soak_dask.results.stats import pvalues
from soak_dask.split.fold_options import GROUP_ASSIGNMENTS

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
FEATURES = [f"SAMPLE_{i}" for i in range(1, 22)]
FIXTURE = "aztrees3_subset_stratum_group_K10_sizes0_folds.csv"


def _tables(df: pd.DataFrame, seed: int) -> dict[str, sd.Table]:
    """Folded tables: R's fold column, each of soak_dask's assignments, and rows at K = 8 (the
    largest K that gives every fold of every subset both classes)."""
    r_folds = pd.read_csv(SHARED / "mlr3resampling" / FIXTURE).sort_values("row_id")["fold"]
    roles = {"label": "y", "subset": "region3", "group": "polygon", "features": FEATURES}
    out = {"R fixture": sd.load_table(df.assign(rfold=r_folds.to_numpy()), fold="rfold", **roles)}
    for assignment in GROUP_ASSIGNMENTS:
        table = sd.load_table(df, **roles)
        out[assignment] = sd.assign_folds(table, 10, seed, group_assignment=assignment)
    out["rows, K = 8"] = sd.assign_folds(sd.load_table(df, **roles), 8, seed)
    return out


def fold_ranges(df: pd.DataFrame, seeds: range) -> pd.DataFrame:
    """Smallest and largest test fold per subset, per fold source and seed."""
    rows = []
    for seed in seeds:
        for name, table in _tables(df, seed).items():
            if name == "R fixture" and seed != seeds[0]:
                continue
            data = table.data.compute()
            sizes = data.groupby([table.subset, table.fold]).size()
            classes = data.groupby([table.subset, table.fold])[table.label].nunique()
            for subset, part in sizes.groupby(level=0):
                one_class = int((classes.loc[subset] < 2).sum())
                rows.append((name, seed, subset, part.min(), part.max(), one_class))
    columns = ["folds", "seed", "subset", "smallest", "largest", "one_class_folds"]
    return pd.DataFrame(rows, columns=columns)


def logistic_differences(df: pd.DataFrame) -> pd.DataFrame:
    """other/all − same of logistic regression: fold mean, row-weighted, p (seed 1)."""
    parts = []
    for name, table in _tables(df, 1).items():
        learners = ["featureless", "logistic"]
        res = sd.soak(
            table, learners, seed=1, measures=["error"], options=sd.RunOptions(progress=False)
        )
        tests = pvalues(res, "error")
        keep = ["learner", "test_subset", "compare", "mean_diff", "weighted_diff", "p"]
        parts.append(tests[keep].assign(folds=name))
    return pd.concat(parts, ignore_index=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="seeds of the fold ranges (5)")
    args = parser.parse_args(argv)
    df = pd.read_parquet(SHARED / "aztrees.parquet")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the small-strata and uneven-folds warnings, known here
        ranges = fold_ranges(df, range(1, args.seeds + 1))
        diffs = logistic_differences(df)
    with pd.option_context("display.width", 160, "display.max_rows", 200):
        print("rows per test fold (K = 10):")
        print(ranges.to_string(index=False))
        print("\nsmallest / largest over seeds:")
        print(ranges.groupby(["folds", "subset"])[["smallest", "largest"]].agg(["min", "max"]))
        print("\nerror (%) differences to same, seed 1:")
        print(diffs.round(3).to_string(index=False))


if __name__ == "__main__":
    main()
