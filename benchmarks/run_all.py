"""Run the benchmarks a–g in turn, in one process, and print their ratios against the targets.

    python -m benchmarks.run_all --quick      # smoke run, about five minutes on 2 cores
    python -m benchmarks.run_all              # the issue's sizes (long; see docs/benchmarks.md)

Each benchmark also runs alone: ``python -m benchmarks.vs_sklearn`` (a), ``onepass_scan`` (b),
``out_of_core`` (c), ``folds_scan`` (d), ``overhead`` (e), ``paper_workload`` (f),
``tuning_search`` (g); ``--help``
lists its options.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

from . import (
    folds_scan,
    onepass_scan,
    out_of_core,
    overhead,
    paper_workload,
    tuning_search,
    vs_sklearn,
)
from .common import DEFAULT_WORKDIR

BENCHMARKS: dict[str, ModuleType] = {
    "a": vs_sklearn,
    "b": onepass_scan,
    "c": out_of_core,
    "d": folds_scan,
    "e": overhead,
    "f": paper_workload,
    "g": tuning_search,
}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small smoke runs")
    p.add_argument("--only", default="abcdefg", help="which benchmarks, e.g. 'bd' (default all)")
    p.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR, help="generated data cache")
    p.add_argument("--json-dir", type=Path, help="write each benchmark's results as KEY.json")
    p.add_argument("--clean", action="store_true", help="delete --workdir at the end")
    args = p.parse_args(argv)
    unknown = sorted(set(args.only) - set(BENCHMARKS))
    if unknown:
        p.error(f"--only has unknown benchmarks {unknown}; choose from {''.join(BENCHMARKS)}")
    if args.json_dir is not None:
        args.json_dir.mkdir(parents=True, exist_ok=True)
    results = {}
    try:
        for key in args.only:
            sub = ["--workdir", str(args.workdir), *(["--quick"] if args.quick else [])]
            if args.json_dir is not None:
                sub += ["--json", str(args.json_dir / f"{key}.json")]
            results[key] = BENCHMARKS[key].main(sub)
            print()
    finally:
        if args.clean:
            shutil.rmtree(args.workdir, ignore_errors=True)
    print("== summary")
    for key, result in results.items():
        for ratio in result["ratios"]:
            verdict = "met" if ratio["met"] else "NOT met"
            sign = ">=" if ratio["higher_is_better"] else "<="
            print(
                f"   {key}. {ratio['name']}: {ratio['value']:.2f} "
                f"(target {sign} {ratio['target']:g}: {verdict})"
            )
    if "c" in results:
        runs = results["c"]["runs"]
        print(
            f"   c. completed: {all(r['completed'] for r in runs)}; peak/limit per run: "
            f"{[r['peak_over_limit'] for r in runs]}"
        )
    if "e" in results:
        for r in results["e"]["rows"]:
            print(f"   e. {r['scheduler']}, onepass={r['onepass']}: {r['s_per_fit']} s per fit")
    return results


if __name__ == "__main__":
    main()
