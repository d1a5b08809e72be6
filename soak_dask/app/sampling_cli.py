"""``soak compare-sampling``: the MAI of train/test sampling methods on a table, written as CSV
files and a Figure-8 style box plot (``soak_dask.diagnose.mai``).

Wired into ``soak`` by ``build_parser`` calling ``add_parser(command)`` and ``COMMANDS``
mapping ``"compare-sampling"`` to ``compare_sampling_command``.
"""

from __future__ import annotations

import argparse
import json
import os
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..learn.builtin import describe_builtins
from ..settings import SETTINGS, check_run_options
from .flags import add_output, add_settings, spell
from .resume import command_checkpoint, discard

NAME = "compare-sampling"
#: The files the command writes (and the settings it ran with, in ``SETTINGS_FILE``); --out is
#: checked and marked as every output directory is (``soak_dask.results.outdir``).
SETTINGS_FILE = "compare_sampling.json"
FILES = ("mai.csv", "summary.csv", "random_accuracy.csv", "mai.png", SETTINGS_FILE)
#: The settings shared with ``soak run``: the table's (not its subset, group and fold columns,
#: which rows sampled one by one ignore or refuse) and the scheduler.
_SHARED = (
    "data",
    *(
        s.name
        for s in SETTINGS.values()
        if s.scope == "table" and s.name not in ("subset", "group", "fold")
    ),
    "scheduler",
    "progress",
    "checkpoint",
    "error_score",
)
_SECTIONS = {
    "table": "the table (soak_dask.load_table)",
    "run": "progress, resuming and failed fits (as soak run's)",
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
    add_settings(parser, _SHARED, run_file=False, sections=_SECTIONS)
    own = parser.add_argument_group("the comparison (soak_dask.compare_sampling)")
    own.add_argument(
        "--learner",
        "--learners",
        dest="learners",
        action="extend",
        type=_names,
        metavar="NAME",
        help="built-in learners, comma-separated or repeated (default: featureless and logistic)",
    )
    own.add_argument("--seed", type=int, default=1, help="seed of the splits and learners (1)")
    own.add_argument(
        "--methods",
        default="random,stratified,clustering,mdc,doptimal,overlap",
        metavar="A,B,...",
        help="comma-separated, from random, stratified, clustering, mdc, doptimal, overlap, "
        "overlap_class (default: all but overlap_class)",
    )
    own.add_argument(
        "--train-ratio",
        type=float,
        default=0.7,
        metavar="T",
        help="share of rows that train (default 0.7; the paper's is 0.75)",
    )
    own.add_argument(
        "--n-random",
        type=int,
        default=100,
        metavar="N",
        help="random splits of the AEV and its SD (default 100)",
    )
    own.add_argument("--k", type=int, default=5, help="neighbours of the degree of overlap (5)")
    own.add_argument(
        "--n-levels",
        type=int,
        default=None,
        metavar="L",
        help="overlap levels (default: the paper's k + 1)",
    )
    own.add_argument(
        "--knn",
        choices=("exact", "nndescent", "blockwise"),
        default="exact",
        help="nearest-neighbour search of the degree of overlap (default exact)",
    )
    out = parser.add_argument_group("output")
    add_output(out, f"soak {NAME}", f"directory for {', '.join(FILES[:-1])}")
    return parser


def _names(value: str) -> list[str]:
    names = [v.strip() for v in value.split(",") if v.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"{value!r}: name at least one learner")
    return names


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


def check_out_dir(path: str | os.PathLike, overwrite: bool, source: Any) -> Any:
    """``--out`` checked before any work (``soak_dask.results.outdir.check_out_dir``): a new
    or empty directory, or (with ``--overwrite``) this command's earlier output; never the
    input. An ``OutputDir``."""
    from ..results.outdir import check_out_dir as check

    return check(
        path, writer=f"soak {NAME}", overwrite=overwrite, source=source, name="--out",
        flag="--overwrite",
    )  # fmt: skip


def compare_sampling_command(args: argparse.Namespace) -> None:
    """``soak compare-sampling``: load the table, compare the sampling methods on the
    cluster, write ``mai.csv`` (ACC, AEV, SD and MAI per learner and method), ``summary.csv``
    (mean and SD of |MAI| per method), ``random_accuracy.csv`` (the random splits) and
    ``mai.png`` to ``--out``; print the table."""
    from ..diagnose.mai import check_methods, compare_sampling, mai_summary, mai_table
    from ..run.cluster import connect
    from ..tables.table import load_table

    given = {s.name: getattr(args, s.dest) for s in map(SETTINGS.get, _SHARED) if s.cli}
    values = check_run_options(given, spell=spell(args))
    scheduler, data = values.pop("scheduler"), values.pop("data")
    given, error_score = values.pop("checkpoint"), values.pop("error_score")
    progress = values.pop("progress")
    methods = check_methods(args.methods)
    out = check_out_dir(args.out, args.overwrite, data)
    checkpoint = command_checkpoint(out.path, given, data)
    table = load_table(data, **values)
    with connect(scheduler, log_failures=args.debug) as client:
        res = compare_sampling(
            table,
            args.learners,  # None: the default learners, as soak run's
            methods=methods,
            train_ratio=args.train_ratio,
            n_random=args.n_random,
            seed=args.seed,
            k=args.k,
            n_levels=args.n_levels,
            knn=args.knn,
            client=client,
            progress=progress,
            checkpoint=checkpoint,
            error_score=error_score,
        )
    frame = mai_table({Path(os.fspath(data)).name: res})
    write_outputs(out, res, frame, mai_summary(frame))
    discard(given, checkpoint)
    print(frame.round(3).to_string())
    if notes := notes_text(res):
        print(f"\n{notes}")
    print(f"\n{out.path}")


def notes_text(res: Any) -> str:
    """Each method's notes from the result's attrs (e.g. MDC on a sample changes the
    method), one paragraph per method; empty when there are none."""
    notes = json.loads(res.attrs.get("notes") or "{}")
    return "\n".join(
        textwrap.fill(f"Note, {method}: {text}", 100) for method, text in notes.items()
    )


def write_outputs(out: Any, res: Any, frame: Any, summary: Any) -> None:
    """The CSV files, the figure and the settings, into the ``OutputDir`` ``out`` (each listed
    in its manifest before it is written)."""
    from ..diagnose.sampling_plot import plot_mai

    frame.to_csv(out.claim("mai.csv"))
    summary.to_csv(out.claim("summary.csv"))
    res["random_accuracy"].to_dataframe().to_csv(out.claim("random_accuracy.csv"))
    fig = plot_mai(frame)
    fig.savefig(out.claim("mai.png"), dpi=120)
    import matplotlib.pyplot as plt

    plt.close(fig)
    settings = {k: res.attrs[k] for k in ("source", "methods", "train_ratio", "n_random", "seed")}
    text = json.dumps({"files": list(FILES), **settings}, default=str)
    out.claim(SETTINGS_FILE).write_text(text)
    out.finish()
