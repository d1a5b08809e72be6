"""Type-I error and power of the Friedman test and the Nemenyi critical difference over test
subsets (``soak_dask.stats.friedman``, the code ``friedman_nemenyi`` runs).

Each simulation draws a SOAK-like score table: N test subsets (blocks), each with its own true
error rate p_b ~ Uniform(10 %, 40 %); k learners; K = 5 test folds of 60 rows per subset.
A learner's fold error is 100 · Binomial(60, p_b + shift) / 60 percent (so equal errors, ties,
happen as they do on real test folds), and its subset score is the mean over the folds. Under
the null every learner has the same error rate in every subset (shift 0: identical score
distributions per block); under the alternative the first learner's rate is lower by
``--shift`` points. A test rejects when its p < α (the permutation p of ``permutation_p`` from
999 draws); the Nemenyi test "rejects" when some pair's
average ranks differ by more than CD (its family-wise error under the null); its power is how
often the better learner differs significantly from at least one other.

    python -m benchmarks.friedman_level                 # 1000 nulls and 1000 alternatives
    python -m benchmarks.friedman_level --quick         # 100 of each (smoke)
    python -m benchmarks.friedman_level --json friedman_level.json

Writes a Markdown table to stdout (and JSON with ``--json``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from soak_dask.stats.friedman import block_ranks, friedman_test, nemenyi_cd, permutation_p

ALPHA = 0.05
# Fewer draws than friedman_nemenyi's 9999, for time: (1 + #) / (1 + B) is a valid p for any B.
PERMUTATIONS = 999
N_FOLDS = 5
FOLD_ROWS = 60
#: (learners k, test subsets N) simulated: from a few regions to many images.
DESIGNS: list[tuple[int, int]] = [(3, 4), (3, 8), (4, 6), (5, 10), (6, 20)]
#: The columns of the table, in order.
METHODS: tuple[str, ...] = ("chi2", "f", "permutation", "nemenyi")


def scores(rng: np.random.Generator, k: int, n: int, shift: float) -> np.ndarray:
    """N × k subset scores (fold means of percent error), learner 0 better by `shift` points."""
    rate = rng.uniform(0.10, 0.40, size=(n, 1, 1))
    rates = np.broadcast_to(rate, (n, k, N_FOLDS)).copy()
    rates[:, 0, :] -= shift / 100
    errors = 100 * rng.binomial(FOLD_ROWS, rates) / FOLD_ROWS
    return errors.mean(axis=2)


def simulate(k: int, n: int, shift: float, runs: int, seed: int) -> dict[str, float]:
    """Rejection rates of χ², Iman–Davenport F, the permutation p and Nemenyi over `runs`
    tables."""
    rng = np.random.default_rng(seed)
    cd = nemenyi_cd(k, n, ALPHA)[1]
    chi2 = f = permutation = nemenyi = 0
    for _ in range(runs):
        ranks = block_ranks(scores(rng, k, n, shift))
        test = friedman_test(ranks)
        chi2 += test.p < ALPHA
        f += test.f_p < ALPHA
        permutation += permutation_p(ranks, PERMUTATIONS) < ALPHA
        average = ranks.mean(axis=0)
        if shift == 0:  # family-wise: any pair found different
            nemenyi += average.max() - average.min() > cd
        else:  # the better learner found better than some other
            nemenyi += average[1:].max() - average[0] > cd
    rates = {"chi2": chi2, "f": f, "permutation": permutation, "nemenyi": nemenyi}
    return {name: count / runs for name, count in rates.items()} | {"cd": cd}


def markdown(rows: list[dict[str, float]], n_null: int, n_alt: int, shift: float) -> str:
    """The table of rates: type-I error (null) and power (shift) per design."""
    lines = [
        f"Rejection rate at α = {ALPHA} ({n_null} null tables, {n_alt} with learner 0 "
        f"{shift:g} points better; Monte Carlo SE of a rate near .05: "
        f"{np.sqrt(0.05 * 0.95 / n_null):.3f})",
        "",
        "| k learners | N subsets | CD | χ² level | F level | permutation level | Nemenyi FWER "
        "| χ² power | F power | permutation power | Nemenyi power |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['k']} | {r['n']} | {r['cd']:.2f} | "
            + " | ".join(f"{r[f'{kind}_{m}']:.3f}" for kind in ("null", "alt") for m in METHODS)
            + " |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--null", type=int, default=1000, help="simulations under the null")
    p.add_argument("--alternative", type=int, default=1000, help="simulations for power")
    p.add_argument("--shift", type=float, default=3.0, help="learner 0's advantage (points)")
    p.add_argument("--seed", type=int, default=20240)
    p.add_argument("--quick", action="store_true", help="100 of each")
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    n_null, n_alt = (100, 100) if args.quick else (args.null, args.alternative)
    start = time.perf_counter()
    rows = []
    for i, (k, n) in enumerate(DESIGNS):
        null = simulate(k, n, 0.0, n_null, args.seed + i)
        alt = simulate(k, n, args.shift, n_alt, args.seed + 1000 + i)
        rows.append(
            {"k": k, "n": n, "cd": null["cd"]}
            | {f"null_{m}": null[m] for m in METHODS}
            | {f"alt_{m}": alt[m] for m in METHODS}
        )
    seconds = time.perf_counter() - start
    print(markdown(rows, n_null, n_alt, args.shift))
    print(f"\n{len(DESIGNS) * (n_null + n_alt)} simulations in {seconds:.0f} s")
    result = {"rows": rows, "n_null": n_null, "n_alternative": n_alt, "shift": args.shift}
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
