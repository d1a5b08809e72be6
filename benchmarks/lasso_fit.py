"""CPU seconds of one ``lasso_cv`` fit (``LassoCVClassifier``): this tree's kernels against a
baseline revision's, side by side in one process, on benchmark f's train-set shapes and on
aztrees.

The baseline is ``soak_dask/learn/lasso.py`` as it is at ``--baseline`` (a git revision,
default ``main``), written once under ``--workdir`` and imported from there (numba caches its
kernels beside it, so only the first run compiles them). Both versions fit the same rows in
one process on one BLAS thread, alternating, ``--repeats`` times; the table gives the median
CPU seconds (``time.process_time``: the machine is shared, so wall time depends on the load,
which is printed) and their ratio, and checks that both chose the same ``lambda_`` and agree on
the coefficients and the predicted probabilities.

Benchmark f (``benchmarks.paper_workload``, 100k rows × 20, three subsets, K = 10) fits
``lasso_cv`` on 70 distinct train sets: 30 of about 30k rows (same), 30 of 60k (other) and
10 of 90k (all); the first rows of f's table stand in for them, and the line "f's 70 fits"
adds the medians with those counts.

Run: ``PYTHONPATH=$PWD python -m benchmarks.lasso_fit [--repeats 3] [--baseline main]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

import soak_dask.learn.lasso as current

from .common import DEFAULT_WORKDIR
from .paper_workload import AZTREES, N_FEATURES, simulated_table

#: Benchmark f's lasso_cv train sets: rows → number of distinct fits.
F_FITS = {30_000: 30, 60_000: 30, 90_000: 10}


def baseline_module(revision: str, workdir: Path) -> ModuleType:
    """``soak_dask/learn/lasso.py`` at ``revision``, imported from a file under ``workdir``."""
    root = Path(__file__).resolve().parents[1]
    sha = subprocess.run(
        ["git", "rev-parse", revision], cwd=root, capture_output=True, text=True, check=True
    ).stdout.strip()
    name = f"lasso_baseline_{sha[:10]}"
    path = Path(workdir) / "lasso_baseline" / f"{name}.py"
    if not path.exists():  # written once: numba's cache is keyed on the file's time stamp
        path.parent.mkdir(parents=True, exist_ok=True)
        source = subprocess.run(
            ["git", "show", f"{sha}:soak_dask/learn/lasso.py"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def datasets(seed: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """aztrees (when ../shared is present) and the first rows of benchmark f's table."""
    data = {}
    if AZTREES.exists():
        az = pd.read_parquet(AZTREES)
        data["aztrees"] = (az[[f"SAMPLE_{i}" for i in range(1, 22)]].to_numpy(float), az["y"])
    df = simulated_table(100_000, seed)
    X, y = df[[f"x{j + 1}" for j in range(N_FEATURES)]].to_numpy(), df["y"].to_numpy()
    for rows in F_FITS:
        data[f"f {rows // 1000}k"] = (X[:rows], y[:rows])
    return data


def compare(models: dict[str, object], X: np.ndarray) -> dict[str, float]:
    """Whether both versions chose the same λ (to 1e-12); their largest relative coefficient
    and absolute probability gaps."""
    base, new = models["baseline"], models["this tree"]
    coef_scale = max(float(np.abs(base.coef_).max()), 1e-300)
    return {
        # λ_max is a sum of products whose rounding may differ: compare beyond rounding.
        "same_lambda": bool(np.allclose(base.lambda_, new.lambda_, rtol=1e-12, atol=0)),
        "coef_rel": float(np.abs(base.coef_ - new.coef_).max() / coef_scale),
        "proba_abs": float(np.abs(base.predict_proba(X) - new.predict_proba(X)).max()),
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3, help="fits per version and table")
    p.add_argument("--seed", type=int, default=1, help="table and fold seed (benchmark f's: 1)")
    p.add_argument("--baseline", default="main", help="git revision to compare against")
    p.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR)
    args = p.parse_args(argv)
    versions = {"baseline": baseline_module(args.baseline, args.workdir), "this tree": current}
    data = datasets(args.seed)
    load_before = os.getloadavg()
    for module in versions.values():  # load (or compile) the kernels once
        module.LassoCVClassifier(random_state=0).fit(*data["f 30k"])
    print(f"lasso_cv fit, baseline {args.baseline!r}, {args.repeats} repeats, one BLAS thread")
    print(f"{'data':10} {'rows':>7} {'base CPU s':>11} {'new CPU s':>10} {'ratio':>6}  checks")
    medians = {}
    with threadpool_limits(1):
        for name, (X, y) in data.items():
            cpu: dict[str, list[float]] = {v: [] for v in versions}
            models = {}
            for _ in range(args.repeats):
                for version, module in versions.items():
                    start = time.process_time()
                    models[version] = module.LassoCVClassifier(random_state=args.seed).fit(X, y)
                    cpu[version].append(time.process_time() - start)
            medians[name] = [statistics.median(cpu[v]) for v in versions]
            base, new = medians[name]
            checks = compare(models, X)
            print(
                f"{name:10} {len(y):7d} {base:11.3f} {new:10.3f} {base / new:6.2f}  "
                f"same λ {checks['same_lambda']}, coef rel {checks['coef_rel']:.1e}, "
                f"proba abs {checks['proba_abs']:.1e}",
                flush=True,
            )
    total = [sum(F_FITS[r] * medians[f"f {r // 1000}k"][k] for r in F_FITS) for k in (0, 1)]
    label = "f's 70 fits"
    print(f"{label:18} {total[0]:11.1f} {total[1]:10.1f} {total[0] / total[1]:6.2f}")
    print(f"load average (1, 5, 15 min): before {load_before}, after {os.getloadavg()}")


if __name__ == "__main__":
    main()
