"""What summing the learners' per-row loss differences (for ``compare(method="wald_cv")``) and
squared losses (for ``wald_cv_intervals``) costs the scoring pass: ``evaluate(["featureless",
"lda"], outer="cv")`` (or ``--learners``) on a generated table, with the sums and with them
switched off (``fitting.row_losses`` returning nothing, as before they existed), alternated in
one process, wall and CPU seconds.

    python -m benchmarks.wald_cv_overhead                  # 200,000 rows, 3 runs each
    python -m benchmarks.wald_cv_overhead --rows 50000 --runs 1
    python -m benchmarks.wald_cv_overhead --learners lda   # one learner: its Σ l² alone
"""

from __future__ import annotations

import argparse
import resource
import time
from unittest import mock

import numpy as np
import pandas as pd

import soak_dask as sd
from soak_dask.run import fitting


def table(rows: int, seed: int = 0) -> sd.Table:
    """A classification table: ten normal features, a label from the first two."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, 10))
    df = pd.DataFrame(x, columns=[f"x{i}" for i in range(10)])
    df["y"] = np.where(x[:, 0] + 0.5 * x[:, 1] + rng.standard_normal(rows) > 0, "a", "b")
    return sd.load_table(df, label="y", features=list(df.columns[:10]), rows_per_partition=50_000)


def cpu() -> float:
    """CPU seconds of this process and its children so far."""
    own, children = (
        resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def run(data: sd.Table, learners: list[str], pairs: bool) -> tuple[float, float, bool]:
    """Wall and CPU seconds of one evaluate, and whether it recorded the sums."""
    patch = mock.patch.object(fitting, "row_losses", lambda *a, **k: {}) if not pairs else None
    wall, used = time.perf_counter(), cpu()
    with patch or mock.patch.object(fitting, "row_losses", fitting.row_losses):
        ds = sd.evaluate(data, learners, outer="cv", options=sd.RunOptions(progress=False))
    recorded = bool(np.isfinite(ds["loss_sq_log_loss"].values).any())
    return time.perf_counter() - wall, cpu() - used, recorded


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--learners", default="featureless,lda", help="comma-separated")
    args = parser.parse_args(argv)
    data = table(args.rows)
    learners = args.learners.split(",")
    run(data, learners, True)  # warm up: imports, compiled kernels
    print(f"evaluate({learners}, outer='cv') on {args.rows:,} rows\n")
    print("| run | sums recorded | wall s | CPU s |")
    print("|---|---|---|---|")
    for i in range(args.runs):
        for pairs in (False, True):
            wall, used, recorded = run(data, learners, pairs)
            assert recorded == pairs
            print(f"| {i + 1} | {'yes' if pairs else 'no'} | {wall:.2f} | {used:.2f} |")


if __name__ == "__main__":
    main()
