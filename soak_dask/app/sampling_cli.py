"""``soak compare-sampling``: the MAI of train/test sampling methods on a table, written as CSV
files, a Figure-8 style box plot (``soak_dask.diagnose.mai``) and the result as a store
(``compare_sampling.zarr``: ``open_results`` reads it, ``soak report`` renders it).

Wired into ``soak`` by ``build_parser`` calling ``add_parser(command)`` and ``COMMANDS``
mapping ``"compare-sampling"`` to ``compare_sampling_command``.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..learn.builtin import describe_builtins
from .flags import (
    add_dry_run,
    add_settings,
    command_names,
    run_settings,
    setting_values,
)
from .resume import command_paths, discard

NAME = "compare-sampling"
#: The writer named in the manifest of its --out directory.
WRITER = f"soak {NAME}"
#: The files the command writes (and the settings it ran with, in ``SETTINGS_FILE``); --out is
#: checked and marked as every output directory is (``soak_dask.results.outdir``).
SETTINGS_FILE = "compare_sampling.json"
#: The result's store (``save_results``), which ``soak report`` renders.
STORE = "compare_sampling.zarr"
FILES = ("mai.csv", "summary.csv", "random_accuracy.csv", "mai.png", SETTINGS_FILE, STORE)
#: ``--help`` sections, by scope (the table's settings but its subset, group and fold
#: columns, which rows sampled one by one ignore or refuse).
_SECTIONS = {
    "table": "the table (soak_dask.load_table)",
    "run": "the comparison (soak_dask.compare_sampling)",
    "compare-sampling": "the comparison (soak_dask.compare_sampling)",
    "app": "data, output and cluster",
}


def add_parser(command: Callable[..., argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add ``soak compare-sampling``: ``command(name, help_text, **kwargs)`` makes a subparser
    (as in ``soak_dask.app.cli.build_parser``); returns it."""
    parser = command(
        NAME,
        "compare train/test sampling methods by MAI = (ACC - AEV) / SD: random, stratified, "
        "clustering, MDC, D-optimal and degree-of-overlap balanced sampling",
        epilog=f"built-in learners (--learner NAME):\n{_indent(describe_builtins())}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_settings(parser, command_names(NAME), run_file=True, sections=_SECTIONS, command=NAME)
    add_dry_run(parser)
    return parser


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


def compare_sampling_command(args: argparse.Namespace) -> None:
    """``soak compare-sampling``: load the table, compare the sampling methods on the
    cluster, write ``mai.csv`` (ACC, AEV, SD and MAI per learner and method), ``summary.csv``
    (mean and SD of |MAI| per method), ``random_accuracy.csv`` (the random splits) and
    ``mai.png`` to ``--out``; print the table."""
    settings = run_settings(args, NAME)  # checked before the engine loads
    from ..diagnose.mai import compare_sampling, mai_summary, mai_table
    from ..diagnose.sampling_report import notes_text
    from ..run.cluster import connect, make_security
    from ..tables.load import load_table

    data = settings.data
    out, checkpoint = command_paths(WRITER, settings, data)
    security = make_security(settings.tls_ca_file, settings.tls_cert, settings.tls_key)
    options = setting_values(settings, NAME, ("run", NAME))
    options.update(learners=settings.learners(), checkpoint=checkpoint)  # None: the defaults
    with connect(settings.scheduler, security=security, log_failures=args.debug) as client:
        # Loaded on the cluster: the table's passes over the data are read by the workers.
        table = load_table(data, **setting_values(settings, NAME, ("table",)))
        res = compare_sampling(table, **options, client=client)
    frame = mai_table({Path(os.fspath(data)).name: res})
    write_outputs(out, res, frame, mai_summary(frame))
    discard(settings.checkpoint, checkpoint)
    print(frame.round(3).to_string())
    if notes := notes_text(res):
        print(f"\n{notes}")
    print(f"\n{out.path}")
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
