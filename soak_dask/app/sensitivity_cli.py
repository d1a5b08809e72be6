"""``soak split-sensitivity``: run ``soak_dask.split_sensitivity`` on a table and write the
per-ratio summary (``summary.csv``), the per-trial scores (``trials.csv``), the figure
(``split_sensitivity.png``), the settings (``split_sensitivity.json``) and the result as a store
(``split_sensitivity.zarr``: ``open_results`` reads it, ``soak report`` renders it) into a
directory.

``split_sensitivity_command(args)`` runs it (``soak_dask.app.commands`` declares it: its
flags are the settings of ``soak_dask.settings`` it takes).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from ..run_options import RunOptions
from .flags import UsageError, check_command_out, run_settings, setting_values
from .resume import command_paths, discard

if TYPE_CHECKING:
    import xarray as xr

    from ..io.outdir import OutputDir

COMMAND = "split-sensitivity"
WRITER = f"soak {COMMAND}"
#: The settings file (``generator``: the command); the directory's manifest marks it as ours.
SETTINGS_FILE = "split_sensitivity.json"
GENERATOR = "soak_dask split-sensitivity"
#: The result's store (``save_results``), which ``soak report`` renders.
STORE = "split_sensitivity.zarr"
#: Every file the command writes (replaced on a rerun with --overwrite).
FILES = ("summary.csv", "trials.csv", "split_sensitivity.png", SETTINGS_FILE, STORE)


def split_sensitivity_command(args: argparse.Namespace) -> None:
    """``soak split-sensitivity``: check the options and ``--out``, load the table, run the
    diagnostic on the cluster, write its files and print the per-ratio summary."""
    settings = run_settings(args, COMMAND)  # checked before the engine loads
    learners = settings.learners()
    if learners is not None and len(learners) != 1:
        raise UsageError(
            f"--learners {','.join(learners)}: the diagnostic studies one learner at a time; "
            "run the command once per learner"
        )
    from .table_input import start_local_workers, table_on_cluster

    start_local_workers(settings)
    from ..diagnose.sensitivity import split_sensitivity as run
    from ..diagnose.sensitivity_report import sensitivity_text
    from ..split.trials import SplitTrials

    out, checkpoint = command_paths(WRITER, settings, settings.data)
    options = setting_values(settings, COMMAND, ("run", COMMAND))
    options.update(learners=learners, checkpoint=checkpoint)
    with table_on_cluster(settings, COMMAND, getattr(args, "debug", False)) as (table, client):
        how, given = RunOptions.among(options, client=client)
        design, given = SplitTrials.among(given)
        ds = run(table, **given, design=design, options=how)
    write_outputs(ds, out)
    discard(settings.checkpoint, checkpoint)
    print(sensitivity_text(ds))
    print(f"\nFiles: {', '.join(str(out.path / name) for name in FILES)}")
    print(f"HTML report: soak report {out.path / STORE} --out REPORT_DIR")


def write_outputs(ds: xr.Dataset, out: str | Path | OutputDir) -> None:
    """Write ``FILES`` into ``out`` (created if missing; a path is checked as ``check_command_out``
    checks it, without overwrite), each listed in its manifest before it is written."""
    import matplotlib.pyplot as plt

    from ..diagnose.sensitivity import split_sensitivity_summary, split_sensitivity_trials
    from ..diagnose.sensitivity_plot import plot_split_sensitivity
    from ..results.store import save_results

    out = check_command_out(WRITER, out, False, ds.attrs.get("source")).begin()
    settings = {"generator": GENERATOR, **ds.attrs}
    out.claim(SETTINGS_FILE).write_text(json.dumps(settings, indent=1, default=str) + "\n")
    split_sensitivity_summary(ds).to_csv(out.claim("summary.csv"), index=False)
    split_sensitivity_trials(ds).to_csv(out.claim("trials.csv"), index=False)
    fig = plot_split_sensitivity(ds)
    try:
        fig.savefig(out.claim("split_sensitivity.png"), dpi=150)
    finally:
        plt.close(fig)
    save_results(ds, out.claim(STORE))
    out.finish()
