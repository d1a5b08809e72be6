"""``soak knndm``: kNNDM folds of a training table for a prediction area
(``soak_dask.knndm_folds``), written into a directory: the fold column with the coordinates
(``folds.parquet``, a Parquet dataset in the table's row order), the ECDF figure
(``knndm.png``), each candidate's W (``candidates.csv``) and the settings and W
(``knndm.json``).

``add_parser(command)`` registers the sub-command with the ``soak`` parser;
``knndm_command(args)`` runs it.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..settings import SETTINGS, check_run_options
from .flags import UsageError, add_output, add_settings, spell

if TYPE_CHECKING:
    from ..io.outdir import OutputDir

COMMAND = "knndm"
HELP = (
    "kNNDM folds of a training table that match the distances from a prediction area (table "
    "or raster) to the training points; writes the fold column, the ECDF figure and W"
)
SETTINGS_FILE = "knndm.json"
GENERATOR = "soak_dask knndm"
FOLDS = "folds.parquet"
FILES = (FOLDS, "knndm.png", "candidates.csv", SETTINGS_FILE)
#: The table's settings (the fold and subset roles play no part) and the cluster's.
_TABLE = (
    "data",
    *(s.name for s in SETTINGS.values() if s.scope == "table" and s.name not in ("subset", "fold")),
    "scheduler",
)
_SECTIONS = {"table": "the training table (soak_dask.load_table)", "app": "data and cluster"}


def add_parser(command: Callable[[str, str], argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Register ``soak knndm`` with ``command(name, help_text)``; the sub-parser."""
    sub = command(COMMAND, HELP)
    add_settings(sub, _TABLE, run_file=False, sections=_SECTIONS)
    run = sub.add_argument_group("the folds (soak_dask.knndm_folds)")
    run.add_argument(
        "prediction",
        metavar="PREDICTION",
        help="the prediction area: Parquet/CSV table with the coordinate (or feature) "
        "columns, or a GeoTIFF/Zarr raster",
    )
    run.add_argument("--n-folds", type=int, default=10, metavar="K", help="K (10)")
    run.add_argument(
        "--space",
        choices=("geographical", "feature"),
        default="geographical",
        help="distances between coordinates (default) or standardised features",
    )
    run.add_argument(
        "--sample", type=int, default=10_000, metavar="N", help="prediction points sampled (10000)"
    )
    run.add_argument("--maxp", type=float, default=0.5, help="largest share of one fold (0.5)")
    run.add_argument(
        "--candidates", type=int, default=100, metavar="N", help="cluster counts (100)"
    )
    run.add_argument("--seed", type=int, default=1, help="seed (1)")
    out = sub.add_argument_group("output")
    add_output(out, f"soak {COMMAND}")
    return sub


def knndm_command(args: argparse.Namespace) -> None:
    """``soak knndm``: check the options and ``--out``, load the table, choose the folds on
    the cluster, write the files and print W."""
    from ..io.locations import check_apart
    from ..io.outdir import check_out_dir
    from ..run.cluster import connect
    from ..split.knndm import knndm_folds
    from ..tables.table import load_table

    given = {s.name: getattr(args, s.dest) for s in map(SETTINGS.get, _TABLE) if s.cli}
    values = check_run_options(given, spell=spell(args))
    if not values.get("coords"):
        raise UsageError("soak knndm needs --coords (the coordinate columns, e.g. --coords x,y)")
    scheduler = values.pop("scheduler")
    out = check_out_dir(
        args.out, writer=GENERATOR, overwrite=args.overwrite, source=values["data"],
        name="--out", flag="--overwrite",
    )  # fmt: skip
    check_apart(out.path, args.prediction, "output")
    table = load_table(values.pop("data"), **values)
    with connect(scheduler, log_failures=getattr(args, "debug", False)) as client:
        res = knndm_folds(
            table,
            args.prediction,
            n_folds=args.n_folds,
            space=args.space,
            sample=args.sample,
            seed=args.seed,
            maxp=args.maxp,
            n_candidates=args.candidates,
            client=client,
        )
        write_outputs(res, out, vars(args))
    print(summary_text(res))
    print(f"\nFiles: {', '.join(str(out.path / name) for name in FILES)}")


def write_outputs(res: Any, out: OutputDir, options: dict[str, Any]) -> None:
    """Write ``FILES`` into ``out``, each listed in its manifest before it is written."""
    import matplotlib.pyplot as plt

    from ..spatial.knndm_plot import plot_knndm

    keep = ("data", "prediction", "label", "coords", "n_folds", "space", "sample", "seed", "maxp")
    settings = {"generator": GENERATOR, **{k: options.get(k) for k in keep}, **res.attrs()}
    settings["fold_sizes"] = list(res.fold_sizes)
    text = json.dumps(settings, indent=1, default=str) + "\n"
    out.claim(SETTINGS_FILE).write_text(text)
    columns = [*res.table.coords, res.column]
    res.table.data[columns].to_parquet(out.claim(FOLDS), overwrite=True, write_index=False)
    res.candidates.to_csv(out.claim("candidates.csv"), index=False)
    fig = plot_knndm(res)
    try:
        fig.savefig(out.claim("knndm.png"), dpi=150, bbox_inches="tight")
    finally:
        plt.close(fig)
    out.finish()


def summary_text(res: Any) -> str:
    """W of the chosen folds beside random folds', and the fold sizes."""
    chosen = (
        "random folds kept (training points not clustered against the prediction area)"
        if res.n_clusters is None
        else f"{res.n_clusters} k-means clusters"
    )
    return (
        f"kNNDM, {res.n_folds} folds in {res.space} space: {chosen}\n"
        f"W (kNNDM folds) = {res.W:.4g}; W (random folds) = {res.W_random:.4g}\n"
        f"rows per fold: {', '.join(map(str, res.fold_sizes))}"
    )
