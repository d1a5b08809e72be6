"""``soak knndm``: kNNDM folds of a training table for a prediction area
(``soak_dask.knndm_folds``), or a kNNDM train/test split (``--test-prop``), written into a
directory: the fold file (``folds.parquet``: each row's position in the table's row order,
its label, coordinates and group, and its fold; ``soak_dask.attach_folds`` joins it back on
the position), the ECDF figure (``knndm.png``), every candidate's W, random folds' included
(``candidates.csv``), the distances of the figure's ECDFs (``distances.csv``), the settings
and both W (``knndm.json``), and the report page of them all (``report.html``:
``soak_dask.spatial.knndm_page``; ``soak report`` draws it again from the directory).

``knndm_command(args)`` runs it (``soak_dask.app.commands`` declares it, its flags are
``spatial_flags.add_knndm_flags``).
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from .flags import UsageError, check_command_out, checked_flags
from .spatial_flags import KNNDM_OWN, KNNDM_SETTINGS

if TYPE_CHECKING:
    from ..io.outdir import OutputDir

SETTINGS_FILE = "knndm.json"
GENERATOR = "soak_dask knndm"
FOLDS = "folds.parquet"
FILES = (FOLDS, SETTINGS_FILE, "distances.csv", "candidates.csv", "knndm.png", "report.html")


def knndm_command(args: argparse.Namespace) -> None:
    """``soak knndm``: check the options and ``--out``, load the table, choose the folds on
    the cluster, write the files and print W."""
    from ..io.locations import check_apart
    from ..run.cluster import connect
    from ..split.knndm import knndm_folds
    from ..tables.load import load_table

    values = checked_flags(args, (*KNNDM_SETTINGS, *KNNDM_OWN))
    own = {name: values.pop(name) for name in KNNDM_OWN}
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
            **own,
        )
        settings = write_outputs(res, out, vars(args))
    print(summary_text(settings, out.path / FOLDS))
    print(f"\nFiles: {', '.join(str(out.path / name) for name in FILES)}")


def knndm_settings(res: Any, options: dict[str, Any]) -> dict[str, Any]:
    """``knndm.json``: the options ``options`` (the command's), ``res.attrs()``, the fold
    sizes and how to read the fold file."""
    from ..split.fold_file import ROW

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
    return settings


def write_outputs(res: Any, out: OutputDir, options: dict[str, Any]) -> dict[str, Any]:
    """Write ``FILES`` into ``out``, each listed in its manifest before it is written; the
    page last, with its figure and tables (``soak_dask.results.pages.write_page``). The
    settings written (``knndm.json``)."""
    from ..results.pages import write_page
    from ..spatial.knndm_page import DISTANCES, distances_frame, knndm_page
    from ..spatial.knndm_plot import knndm_distances
    from ..split.fold_file import write_fold_file

    settings = knndm_settings(res, options)
    text = json.dumps(settings, indent=1, default=str) + "\n"
    out.claim(SETTINGS_FILE).write_text(text)
    write_fold_file(res.table, res.column, out.claim(FOLDS))
    distances = knndm_distances(res)
    distances_frame(distances).to_csv(out.claim(DISTANCES), index=False)
    # candidates.csv and knndm.png are the page's table and figure
    settings = json.loads(text)  # as a reader of knndm.json sees them
    write_page(knndm_page(settings, distances, candidates_table(res)), out)
    return settings


def candidates_table(res: Any) -> Any:
    """``candidates.csv``: every candidate clustering tried (named by its clustering,
    "kmeans" or "hierarchical") and random folds, each with the W of its folds, its largest
    fold's share and its status (chosen, eligible, or why it may not be chosen); "none" only
    where a candidate has no such value (random folds have no clusters; k-means that found
    no clustering has no folds)."""
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
    both.insert(0, "candidate", [res.clustering] * len(rows) + ["random"])
    return both.astype({"n_clusters": "Int64"})


def summary_text(info: dict[str, Any], folds: Any = FOLDS) -> str:
    """W of the chosen folds beside random folds', the fold (or split) sizes, and how to use
    the fold file ``folds``; from ``knndm.json``'s ``info`` (``knndm_settings``)."""
    from ..split.knndm import CANDIDATE_NAMES, knndm_note

    split = "knndm_test_prop" in info
    if split:
        n, test = sum(info["fold_sizes"]), info["knndm_test_rows"]
        lo, hi = info["knndm_test_bounds"]
        sizes = (
            f"test rows: {test:,} of {n:,} ({test / n:.1%}; asked "
            f"{info['knndm_test_prop']:g}, {lo:g} to {hi:g} allowed)"
        )
    else:
        sizes = f"rows per fold: {', '.join(map(str, info['fold_sizes']))}"
    kind = "a train/test split" if split else f"{info['n_folds']} folds"
    tried = CANDIDATE_NAMES[info.get("knndm_clustering", "kmeans")]
    return (
        f"kNNDM, {kind} in {info['knndm_space']} space (candidates: {tried})\n"
        f"{knndm_note(info)}\n{sizes}\n{_use_hint(split, folds)}"
    )


def _use_hint(split: bool, folds: Any) -> str:
    """How to use the fold file: its path as --fold-column of the commands (folds only), or
    ``attach_folds`` in Python (folds and splits alike)."""
    python = f"soak_dask.attach_folds(table, '{folds}') joins them to the table (Python)"
    if split:
        return f"Use them: {python}"
    return f"Use them: soak evaluate (or run, transfer, info) ... --fold-column {folds}; {python}"
