"""``soak compare-sampling``: the MAI of train/test sampling methods on a table, written as CSV
files, a Figure-8 style box plot (``soak_dask.diagnose.mai``) and the result as a store
(``compare_sampling.zarr``: ``open_results`` reads it, ``soak report`` renders it).

``compare_sampling_command(args)`` runs it (``soak_dask.app.commands`` declares it: its
flags are the settings of ``soak_dask.settings`` it takes).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from ..run_options import RunOptions
from .flags import run_settings, setting_values
from .resume import command_paths, discard

COMMAND = "compare-sampling"
#: The writer named in the manifest of its --out directory.
WRITER = f"soak {COMMAND}"
#: The files the command writes (and the settings it ran with, in ``SETTINGS_FILE``); --out is
#: checked and marked as every output directory is (``soak_dask.io.outdir``).
SETTINGS_FILE = "compare_sampling.json"
#: The result's store (``save_results``), which ``soak report`` renders.
STORE = "compare_sampling.zarr"
FILES = ("mai.csv", "summary.csv", "random_accuracy.csv", "mai.png", SETTINGS_FILE, STORE)


def compare_sampling_command(args: argparse.Namespace) -> None:
    """``soak compare-sampling``: load the table, compare the sampling methods on the
    cluster, write ``mai.csv`` (ACC, AEV, SD and MAI per learner and method), ``summary.csv``
    (mean and SD of |MAI| per method), ``random_accuracy.csv`` (the random splits) and
    ``mai.png`` to ``--out``; print the table."""
    settings = run_settings(args, COMMAND)  # checked before the engine loads
    from .table_input import start_local_workers, table_on_cluster

    start_local_workers(settings)
    from ..diagnose.mai import compare_sampling, mai_summary, mai_table
    from ..diagnose.sampling_report import notes_text
    from ..split.sampling_splits import SamplingSplits

    data = settings.data
    out, checkpoint = command_paths(WRITER, settings, data)
    options = setting_values(settings, COMMAND, ("run", COMMAND))
    options.update(learners=settings.learners(), checkpoint=checkpoint)  # None: the defaults
    with table_on_cluster(settings, COMMAND, args.debug) as (table, client):
        run, given = RunOptions.among(options, client=client)
        design, given = SamplingSplits.among(given)
        res = compare_sampling(table, **given, design=design, options=run)
    frame = mai_table({Path(os.fspath(data)).name: res})
    write_outputs(out, res, frame, mai_summary(frame))
    discard(settings.checkpoint, checkpoint)
    print(frame.round(3).to_string())
    if notes := notes_text(res):
        print(f"\n{notes}")
    print(f"\nFiles: {', '.join(str(out.path / name) for name in FILES)}")
    print(f"HTML report: soak report {out.path / STORE} --out REPORT_DIR")


def write_outputs(out: Any, res: Any, frame: Any, summary: Any) -> None:
    """The CSV files, the figure, the settings and the store, into the ``OutputDir`` ``out``
    (each listed in its manifest before it is written)."""
    from ..diagnose.sampling_plot import plot_mai
    from ..results.store import save_results

    frame.to_csv(out.claim("mai.csv"))
    summary.to_csv(out.claim("summary.csv"))
    res["random_accuracy"].to_dataframe().to_csv(out.claim("random_accuracy.csv"))
    fig = plot_mai(frame)
    fig.savefig(out.claim("mai.png"), dpi=120)
    import matplotlib.pyplot as plt

    plt.close(fig)
    settings = {k: res.attrs[k] for k in ("source", "methods", "train_ratio", "seed")}
    # n_random: the name in the stores written before the rename
    settings["n_repeats"] = res.attrs.get("n_repeats", res.attrs.get("n_random"))
    text = json.dumps({"files": list(FILES), **settings}, default=str)
    out.claim(SETTINGS_FILE).write_text(text)
    save_results(res, out.claim(STORE))
    out.finish()
