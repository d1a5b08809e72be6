"""``soak knndm``: kNNDM folds of a training table for a prediction area
(``soak_dask.knndm_folds``), or a kNNDM train/test split (``--test-prop``), written into a
directory: the fold file (``folds.parquet``: each row's position in the table's row order,
its label, coordinates and group, and its fold; ``soak_dask.attach_folds`` joins it back on
the position), the ECDF figure (``knndm.png``), every candidate's W, random folds' included
(``candidates.csv``), and the settings and both W (``knndm.json``).

``add_parser(command)`` registers the sub-command with the ``soak`` parser;
``knndm_command(args)`` runs it.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..settings import SETTINGS, check_run_options
from .flags import UsageError, add_output, add_settings, check_command_out, spell

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
#: The table settings kNNDM has no use for: it makes the folds (subsets play no part), and
#: keeps the groups it is given whole, not blocks of its own.
_NOT_KNNDM = ("subset", "fold", "blocks", "block_shape", "clusters")
#: The table's settings and the cluster's.
_TABLE = (
    "data",
    *(s.name for s in SETTINGS.values() if s.scope == "table" and s.name not in _NOT_KNNDM),
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
    run.add_argument("--n-folds", type=int, metavar="K", help="K (10)")
    run.add_argument(
        "--space",
        choices=("geographical", "feature"),
        default="geographical",
        help="distances between coordinates (default) or standardised features",
    )
    run.add_argument(
        "--sample", type=int, default=10_000, metavar="N", help="prediction points sampled (10000)"
    )
    run.add_argument("--maxp", type=float, help="largest share of one fold (0.5)")
    run.add_argument(
        "--test-prop",
        type=float,
        metavar="P",
        help="a train/test split instead of K folds (CAST 1.1.1's test_prop): one part holds "
        "P ± --test-tolerance of the rows, the part nearer P is the test part",
    )
    run.add_argument(
        "--test-tolerance",
        type=float,
        metavar="T",
        help="allowed deviation of the test share from --test-prop (0.1)",
    )
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
    from ..run.cluster import connect
    from ..split.knndm import knndm_folds
    from ..tables.load import load_table

    given = {s.name: getattr(args, s.dest) for s in map(SETTINGS.get, _TABLE) if s.cli}
    values = check_run_options(given, spell=spell(args))
    if not values.get("coords"):
        raise UsageError("soak knndm needs --coords (the coordinate columns, e.g. --coords x,y)")
    scheduler = values.pop("scheduler")
    out = check_command_out(GENERATOR, args.out, args.overwrite, values["data"])
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
            test_prop=args.test_prop,
            test_tolerance=args.test_tolerance,
            n_candidates=args.candidates,
            client=client,
        )
        write_outputs(res, out, vars(args))
    print(summary_text(res, out.path / FOLDS))
    print(f"\nFiles: {', '.join(str(out.path / name) for name in FILES)}")


def write_outputs(res: Any, out: OutputDir, options: dict[str, Any]) -> None:
    """Write ``FILES`` into ``out``, each listed in its manifest before it is written."""
    import matplotlib.pyplot as plt

    from ..spatial.knndm_plot import plot_knndm
    from ..split.fold_file import ROW, write_fold_file

    keep = ("data", "prediction", "label", "coords", "group", "space", "sample", "seed")
    settings = {"generator": GENERATOR, **{k: options.get(k) for k in keep}, **res.attrs()}
    settings.update(n_folds=res.n_folds, maxp=res.shares.maxp, fold_sizes=list(res.fold_sizes))
    if res.shares.split:
        settings.update(test_prop=res.shares.test_prop, maxp=None)
    settings["fold_file"] = {
        "row_id": ROW,
        "row_id_is": "the row's 0-based position in the training table's row order",
        "fold_column": res.column,
    }
    text = json.dumps(settings, indent=1, default=str) + "\n"
    out.claim(SETTINGS_FILE).write_text(text)
    write_fold_file(res.table, res.column, out.claim(FOLDS))
    candidates_table(res).to_csv(out.claim("candidates.csv"), index=False, na_rep="none")
    fig = plot_knndm(res)
    try:
        fig.savefig(out.claim("knndm.png"), dpi=150, bbox_inches="tight")
    finally:
        plt.close(fig)
    out.finish()


def candidates_table(res: Any) -> Any:
    """``candidates.csv``: every k-means candidate tried and random folds, each with the W of
    its folds, its largest fold's share and its status (chosen, eligible, or why it may not
    be chosen); "none" only where a candidate has no such value (random folds have no
    clusters; k-means that found no clustering has no folds)."""
    import pandas as pd

    kmeans = res.candidates.rename(columns={"W": "eligible_W", "W_folds": "W"})
    status = kmeans["status"].replace({"scored": "eligible"})
    if res.n_clusters is not None:
        status = status.mask(kmeans["n_clusters"] == res.n_clusters, "chosen (smallest W)")
    rows = kmeans[["n_clusters", "W", "largest_fold"]].assign(status=status)
    sizes = res.random_fold_sizes
    test = f"KS p = {res.ks_pvalue:.3g}"
    random = {
        "n_clusters": None,
        "W": res.W_random,
        "largest_fold": max(sizes) / sum(sizes),
        "status": f"chosen (training points not clustered against the prediction area: {test})"
        if res.n_clusters is None
        else f"not kept (training points clustered against the prediction area: {test})",
    }
    both = pd.concat([rows, pd.DataFrame([random])], ignore_index=True)
    both.insert(0, "candidate", ["kmeans"] * len(rows) + ["random"])
    return both.astype({"n_clusters": "Int64"})


def summary_text(res: Any, folds: Any = FOLDS) -> str:
    """W of the chosen folds beside random folds', the fold (or split) sizes, and how to use
    the fold file ``folds``."""
    from ..split.knndm import knndm_note

    if res.shares.split:
        n = sum(res.fold_sizes)
        sizes = (
            f"test rows: {res.test_rows:,} of {n:,} ({res.test_rows / n:.1%}; asked "
            f"{res.shares.test_prop:g}, {res.shares.minp:g} to {res.shares.maxp:g} allowed)"
        )
    else:
        sizes = f"rows per fold: {', '.join(map(str, res.fold_sizes))}"
    kind = "a train/test split" if res.shares.split else f"{res.n_folds} folds"
    return (
        f"kNNDM, {kind} in {res.space} space\n{knndm_note(res.attrs())}\n{sizes}\n"
        f"{_use_hint(res, folds)}"
    )


def _use_hint(res: Any, folds: Any) -> str:
    """How to use the fold file: its path as --fold-column of the commands (folds only), or
    ``attach_folds`` in Python (folds and splits alike)."""
    python = f"soak_dask.attach_folds(table, '{folds}') joins them to the table (Python)"
    if res.shares.split:
        return f"Use them: {python}"
    return f"Use them: soak evaluate (or run, transfer, info) ... --fold-column {folds}; {python}"
