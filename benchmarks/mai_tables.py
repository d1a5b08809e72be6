"""Balanced sampling: the paper's AEV check and MAI tables (docs/balanced_sampling.md).

1. Validation: AEV ± SD of 100 random 75:25 splits of the breast-cancer (wdbc) data for k-NN
   (k = 6, unscaled, as R's class::knn) and a random forest (500 trees, randomForest's
   default), against the paper's Table 4 (0.930 ± 0.018 and 0.960 ± 0.016).
2. MAI tables like the paper's Tables 4-5 for the data sets that ship with scikit-learn
   (breast cancer, iris, wine, digits) and the aztrees pixel table, with the paper's four
   classifiers as scikit-learn stand-ins (k-NN k = 6; SVM with scaling, e1071's default;
   random forest; an rpart-like pruned tree for C5.0), seed 1, t = 0.75, 100 random splits.
3. The same methods drawn with more seeds (``--seeds``), each scored against seed 1's AEV and
   SD: a single split's MAI is one draw, so the mean |MAI| over seeds compares the methods.

    python -m benchmarks.mai_tables --out /tmp/soak_mai           # about 20 min on 2 cores
    python -m benchmarks.mai_tables --quick                         # iris and wine, 20 splits
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd
from sklearn import datasets
from sklearn.ensemble import RandomForestClassifier
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

import soak_dask as sd
from soak_dask import RunOptions, SamplingSplits
from soak_dask.diagnose.mai import compare_sampling, mai_summary, mai_table
from soak_dask.diagnose.sampling_plot import plot_mai
from soak_dask.split.sampling import METHODS

from .common import local_cluster

AZTREES = Path(__file__).resolve().parents[2] / "shared" / "data" / "aztrees.parquet"
#: The paper's Table 4, Wdbc rows: (AEV, SD).
PAPER_WDBC = {"knn6": (0.930, 0.018), "rf": (0.960, 0.016)}
RATIO = 0.75  # the paper's 75:25


def learners(seed: int, trees: int = 100) -> dict:
    """The paper's classifiers (Table 3) as scikit-learn stand-ins."""
    return {
        "knn6": KNeighborsClassifier(n_neighbors=6),
        "svm": make_pipeline(StandardScaler(), SVC()),
        "rf": RandomForestClassifier(n_estimators=trees, random_state=seed),
        "tree": sd.PrunedTreeClassifier(random_state=seed),
    }


def bundled(name: str) -> sd.Table:
    """A data set that ships with scikit-learn, or aztrees, as a Table."""
    if name == "aztrees":
        features = [f"SAMPLE_{i}" for i in range(1, 22)]
        return sd.load_table(str(AZTREES), label="y", features=features)
    loader = {
        "breast_cancer": datasets.load_breast_cancer,
        "iris": datasets.load_iris,
        "wine": datasets.load_wine,
        "digits": datasets.load_digits,
    }[name]
    bunch = loader(as_frame=True)
    frame = bunch.frame.rename(columns=lambda c: str(c).replace(" ", "_"))
    return sd.load_table(frame, label="target")


def validate(n_repeats: int) -> pd.DataFrame:
    """AEV ± SD of wdbc for k-NN (k = 6) and a 500-tree forest, against the paper."""
    res = compare_sampling(
        bundled("breast_cancer"),
        {"knn6": KNeighborsClassifier(n_neighbors=6), "rf": learners(1, trees=500)["rf"]},
        design=SamplingSplits(methods=["random"], train_ratio=RATIO, n_repeats=n_repeats),
        options=RunOptions(progress=False),
    )
    rows = []
    for name, (aev, sd_) in PAPER_WDBC.items():
        ours, our_sd = float(res["aev"].sel(learner=name)), float(res["sd"].sel(learner=name))
        rows.append(
            {
                "learner": name,
                "AEV": round(ours, 3),
                "SD": round(our_sd, 3),
                "paper AEV": aev,
                "paper SD": sd_,
                "within paper SD": abs(ours - aev) <= sd_,
            }
        )
    return pd.DataFrame(rows)


def tables(names: list[str], n_repeats: int, seeds: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The MAI table of seed 1, and |MAI| of every method for seeds 1..``seeds``."""
    results, repeats = {}, []
    for name in names:
        start = time.perf_counter()
        table = bundled(name)
        res = compare_sampling(
            table,
            learners(1),
            design=SamplingSplits(methods=METHODS, train_ratio=RATIO, n_repeats=n_repeats),
            options=RunOptions(progress=False),
        )
        results[name] = res
        repeats.append(_mai_frame(res, res, name, 1))
        for seed in range(2, seeds + 1):
            # Only the methods' splits are new; AEV and SD are seed 1's estimates.
            again = compare_sampling(
                table,
                learners(seed),
                design=SamplingSplits(methods=METHODS, train_ratio=RATIO, n_repeats=2, seed=seed),
                options=RunOptions(progress=False),
            )
            repeats.append(_mai_frame(again, res, name, seed))
        print(f"   {name}: {time.perf_counter() - start:.0f} s", flush=True)
    return mai_table(results), pd.concat(repeats, ignore_index=True)


def _mai_frame(res, reference, name: str, seed: int) -> pd.DataFrame:
    mai = (res["accuracy"] - reference["aev"]) / reference["sd"]
    frame = mai.to_dataframe(name="mai").reset_index()
    return frame.assign(data=name, seed=seed)


def markdown(frame: pd.DataFrame, digits: int = 3) -> str:
    """``frame`` as a Markdown table (index first), numbers rounded to ``digits``."""
    frame = frame.reset_index() if frame.index.name or frame.index.nlevels > 1 else frame
    head = [" ".join(map(str, c)) if isinstance(c, tuple) else str(c) for c in frame.columns]
    rows = [
        [f"{v:.{digits}f}" if isinstance(v, float) else str(v) for v in row]
        for row in frame.itertuples(index=False)
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=Path("/tmp/soak_mai_tables"))
    p.add_argument("--n-repeats", type=int, default=100)
    p.add_argument("--seeds", type=int, default=10, help="seeds of the methods' splits")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--quick", action="store_true", help="iris and wine, 20 splits, 3 seeds")
    args = p.parse_args(argv)
    names = ["breast_cancer", "iris", "wine", "digits", "aztrees"]
    if args.quick:
        names, args.n_repeats, args.seeds = ["iris", "wine"], 20, 3
    elif not AZTREES.exists():
        print(f"   {AZTREES} not found: aztrees left out")
        names.remove("aztrees")
    args.out.mkdir(parents=True, exist_ok=True)
    pd.set_option("display.width", 200)
    with local_cluster(args.workers):
        if not args.quick:
            check = validate(args.n_repeats)
            check.to_csv(args.out / "validation.csv", index=False)
            print(markdown(check), flush=True)
        table, repeats = tables(names, args.n_repeats, args.seeds)
    table.to_csv(args.out / "mai_table.csv")
    repeats.to_csv(args.out / "mai_seeds.csv", index=False)
    summary = mai_summary(table)
    summary.to_csv(args.out / "mai_summary.csv")
    absolute = repeats["mai"].abs().groupby(repeats["sampling"])
    by_method = pd.DataFrame({"mean |MAI|": absolute.mean(), "SD |MAI|": absolute.std()})
    by_method.to_csv(args.out / "mai_seeds_summary.csv")
    print(markdown(table))
    print(markdown(summary.rename_axis("statistic")))
    print(markdown(by_method.loc[list(METHODS)]))
    fig = plot_mai(table, title="MAI per method, seed 1 (text: mean |MAI|)")
    fig.savefig(args.out / "mai_figure8.png", dpi=120)
    print(f"   written to {args.out}")


if __name__ == "__main__":
    main()
