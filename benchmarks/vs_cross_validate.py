"""evaluate on a 2-worker LocalCluster vs scikit-learn's cross_validate(n_jobs=2), K-fold.

The same Parquet table, the same learner (``soak_dask.builtin_learner``), K-fold stratified
CV on both sides. scikit-learn's side reads the files into one pandas DataFrame (timed apart and
added: a user has to) and runs ``cross_validate(estimator, X, y, cv=StratifiedKFold(K),
n_jobs=2)``; soak_dask's side is ``evaluate(table, learner, outer="cv", outer_folds=K)`` on the
cluster (reading the files itself), with ``prior_correction=False`` (the class of largest
probability, as scikit-learn predicts). The folds differ (each side draws its own), so the
mean errors agree to within the fold noise only.

``--profile``: where evaluate's seconds go beyond the fits -- worker compute seconds per task
name (Dask's task stream), and the client's own seconds per function (cProfile: planning, graph
building, waiting, gathering), for the row-by-row learner.

    python -m benchmarks.vs_cross_validate --rows 300000 --profile
    python -m benchmarks.vs_cross_validate --quick
"""

from __future__ import annotations

import cProfile
import glob
import io
import pstats
from typing import Any

import numpy as np
import pandas as pd
from sklearn.model_selection import StratifiedKFold, cross_validate

import soak_dask as sd

from .common import (
    Ratio,
    finish,
    header,
    load_pixels,
    local_cluster,
    parser,
    pixel_parquet,
    task_seconds,
    timed,
)

MODULE = "benchmarks.vs_cross_validate"
#: Targets of issue 24: as fast for row-by-row learners, 10x faster for additive ones.
TARGETS = {"row-by-row": 1.0, "additive": 10.0}


def read_table(source: str) -> pd.DataFrame:
    return pd.concat([pd.read_parquet(f) for f in sorted(glob.glob(source))], ignore_index=True)


def sklearn_side(df: pd.DataFrame, features: tuple[str, ...], learner: str, args) -> dict:
    estimator = sd.builtin_learner(learner, "classification", args.seed)
    X = df[list(features)].to_numpy(np.float64)
    y = df["label"].to_numpy()
    cv = StratifiedKFold(args.folds, shuffle=True, random_state=args.seed)
    scores, seconds = timed(
        lambda: cross_validate(estimator, X, y, cv=cv, n_jobs=2, scoring="accuracy")
    )
    return {
        "cv_s": seconds,
        "cv_fit_s_sum": float(np.sum(scores["fit_time"])),
        "cv_error": 100 * (1 - float(np.mean(scores["test_score"]))),
    }


def soak_side(client: Any, source: str, learner: str, args, profile: bool) -> dict:
    def run() -> Any:
        return sd.evaluate(
            load_pixels(source),
            {learner: learner},
            outer="cv",
            outer_folds=args.folds,
            seed=args.seed,
            options=sd.RunOptions(client=client, progress=False),
            prior_correction=False,  # argmax, as cross_validate predicts
            measures=args.measures,
        )

    out: dict[str, Any] = {}
    if not profile:
        res, out["evaluate_s"] = timed(run)
    else:
        prof = cProfile.Profile()
        with task_seconds(client) as tasks:
            prof.enable()
            res, out["evaluate_s"] = timed(run)
            prof.disable()
        out["worker_task_s"] = {k: round(v, 3) for k, v in list(tasks.items())[:15]}
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(45)
        out["client_profile"] = text.getvalue()
    errors = res["error"].sel(learner=learner) if "error" in res else None  # the headline
    out["evaluate_error"] = float(errors.mean()) if errors is not None else float("nan")
    out["n_fits"] = int(res.attrs.get("n_fits", -1))
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=300_000)
    p.add_argument("--rows-per-file", type=int, default=75_000, help="rows per partition")
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--learners", nargs="+", default=["logistic", "lda"])
    p.add_argument("--additive", nargs="*", default=["lda"], help="learners fitted in one pass")
    p.add_argument("--profile", action="store_true", help="profile evaluate (row-by-row)")
    p.add_argument("--repeat", type=int, default=2, help="timed runs per side (best counts)")
    p.add_argument("--measures", nargs="*", help="evaluate's measures (default: all five; "
                   "cross_validate scores accuracy only)")  # fmt: skip
    args = p.parse_args(argv)
    if args.quick:
        args.rows, args.rows_per_file, args.repeat = 40_000, 10_000, 1
    facts = header("evaluate vs scikit-learn cross_validate(n_jobs=2)", MODULE, argv, args)
    source = pixel_parquet(args.workdir, args.rows, args.seed, rows_per_file=args.rows_per_file)
    features = load_pixels(source).features
    df, read_s = timed(lambda: read_table(source))
    rows, ratios, profiles = [], [], {}
    with local_cluster(2) as client:
        client.run(lambda: None)
        for learner in args.learners:
            kind = "additive" if learner in args.additive else "row-by-row"
            sk = min((sklearn_side(df, features, learner, args) for _ in range(args.repeat)),
                     key=lambda r: r["cv_s"])  # fmt: skip
            ours = min((soak_side(client, source, learner, args, False)
                        for _ in range(args.repeat)), key=lambda r: r["evaluate_s"])  # fmt: skip
            row = {
                "learner": learner,
                "kind": kind,
                "rows": args.rows,
                "partitions": len(glob.glob(source)),
                "read_s": round(read_s, 2),
                "cv_s": round(sk["cv_s"], 2),
                "cv_plus_read_s": round(sk["cv_s"] + read_s, 2),
                "cv_fit_s_sum": round(sk["cv_fit_s_sum"], 2),
                "evaluate_s": round(ours["evaluate_s"], 2),
                "evaluate_fits": ours["n_fits"],
                "cv_error": round(sk["cv_error"], 3),
                "evaluate_error": round(ours["evaluate_error"], 3),
            }
            rows.append(row)
            print(row, flush=True)
            ratios.append(
                Ratio(
                    f"{learner}: (cv + read) s / evaluate s",
                    row["cv_plus_read_s"] / row["evaluate_s"],
                    TARGETS[kind],
                    True,
                )  # fmt: skip
            )
            if args.profile and kind == "row-by-row":
                profiles[learner] = soak_side(client, source, learner, args, True)
                print(f"   profile of {learner}: worker task seconds", flush=True)
                for name, seconds in profiles[learner]["worker_task_s"].items():
                    print(f"      {name}: {seconds}")
                print(profiles[learner]["client_profile"], flush=True)
    return finish("vs_cross_validate", args, facts, rows, ratios, {"profiles": profiles})


if __name__ == "__main__":
    main()
