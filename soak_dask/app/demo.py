"""``soak demo``: the README's main job on a generated pixel table
(``tables.generated.write_pixel_parquet``): SOAK on a cluster, its results saved and reported."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..run_options import RunOptions
from ..schema import DEFAULT_N_FOLDS
from ..tables.generated import write_pixel_parquet
from .commands import DEMO_SETTINGS

__all__ = ["run_demo"]


def run_demo(
    out: str | Path = "soak_demo_output",
    *,
    n_pixels: int = 60_000,
    n_regions: int = 3,
    n_folds: int = DEFAULT_N_FOLDS,
    seed: int = 1,
    scheduler: str | None = None,
    learners: Any = None,
    progress: bool = True,
) -> Any:
    """The README's main job: generate a pixel table, run SOAK on a cluster, save the results.

    Writes ``out/pixels/`` (Parquet, regenerated each time), ``out/results.zarr``,
    ``out/pvalues.csv`` and the report ``out/report/report.html`` (with its tables and
    figures), prints the p-value table and the paths, and returns the results Dataset.

    Parameters
    ----------
    out : path
        Output directory: new, empty, or an earlier demo's (whose files are replaced); a
        directory holding anything else is refused (``soak_dask.io.outdir``).
    n_pixels : int
        Pixels in the generated table.
    n_regions : int
        Regions (the subsets).
    n_folds : int
        K.
    seed : int
        Seed of the data, the folds and the learners.
    scheduler : str, optional
        Address of a running Dask scheduler; default: a LocalCluster on this machine.
    learners : optional
        As for ``soak_dask.soak``; default featureless and logistic regression.
    progress : bool
        Show the progress bar.
    """
    from ..io.outdir import check_out_dir
    from ..results.report import write_report
    from ..results.stats import pvalues_text
    from ..results.store import save_results
    from ..run.cluster import command_client
    from ..run.soak import soak
    from ..tables.load import load_table

    # The rule of every output: a new directory or the demo's own (replaced), nothing else.
    out = check_out_dir(out, writer="soak demo", overwrite=True, name="--out").begin()
    pixels = write_pixel_parquet(
        out.claim("pixels"), n_pixels=n_pixels, n_regions=n_regions, seed=seed
    )
    learners = learners or {"featureless": "featureless", "logistic": "logistic"}
    with command_client(scheduler) as client:
        table = load_table(
            pixels, label="label", subset="region", group="polygon", exclude=["x", "y"]
        )
        print(table)
        how = RunOptions(progress=progress, client=client)
        res = soak(table, learners, n_folds=n_folds, seed=seed, options=how)
    store = save_results(res, out.claim("results.zarr"))
    res.soak.pvalues(measures=["error"]).to_csv(out.claim("pvalues.csv"), index=False)
    report = write_report(res, out.claim("report"))
    out.finish()
    print(pvalues_text(res, "error"))
    print(f"\nResults: {store}  p-values: {out.path / 'pvalues.csv'}\nReport: {report}")
    return res


def demo_command(args: argparse.Namespace) -> None:
    """``soak demo``: the README's job (`run_demo`) on a generated pixel table."""
    given = {name: getattr(args, name) for name in DEMO_SETTINGS}
    run_demo(
        args.out,
        n_pixels=args.pixels,
        n_regions=args.regions,
        **{name: value for name, value in given.items() if value is not None},  # else run_demo's
    )
