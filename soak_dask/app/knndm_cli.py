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
from typing import Any

from ..spatial.knndm_out import FILES, FOLDS, GENERATOR, write_outputs
from .flags import UsageError, check_command_out, checked_flags
from .spatial_flags import KNNDM_OWN, KNNDM_SETTINGS


def knndm_command(args: argparse.Namespace) -> None:
    """``soak knndm``: check the options and ``--out``, load the table, choose the folds on
    the cluster, write the files and print W."""
    from ..io.locations import check_apart
    from ..run.cluster import command_client
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
    with command_client(scheduler, log_failures=getattr(args, "debug", False)) as client:
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
