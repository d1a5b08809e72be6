"""``soak split-sensitivity``: run ``soak_dask.split_sensitivity`` on a table and write the
per-ratio summary (``summary.csv``), the per-trial scores (``trials.csv``), the figure
(``split_sensitivity.png``) and the settings (``split_sensitivity.json``) into a directory.

``add_parser(command)`` registers the sub-command with the ``soak`` parser (``command`` is
``build_parser``'s helper: ``command(name, help_text)`` returns a sub-parser);
``split_sensitivity_command(args)`` runs it.
"""

from __future__ import annotations

import argparse
import json
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import xarray as xr

from ..settings import SETTINGS, check_run_options
from .flags import add_output, add_settings, check_command_out, spell
from .resume import command_checkpoint, discard

if TYPE_CHECKING:
    from ..results.outdir import OutputDir

COMMAND = "split-sensitivity"
COMMAND_NAME = f"soak {COMMAND}"
HELP = (
    "how much does the estimate depend on the train/test ratio? K-fold CV on the train part "
    "against the test score, over random splits per ratio; writes CSV files and a figure"
)
#: The settings file (``generator``: the command); the directory's manifest marks it as ours.
SETTINGS_FILE = "split_sensitivity.json"
GENERATOR = "soak_dask split-sensitivity"
#: Every file the command writes (replaced on a rerun with --overwrite).
FILES = ("summary.csv", "trials.csv", "split_sensitivity.png", SETTINGS_FILE)
#: The table's settings (as ``soak info`` takes them, but subsets and folds, which the
#: diagnostic does not use) and the cluster's.
_TABLE = (
    "data",
    *(s.name for s in SETTINGS.values() if s.scope == "table" and s.name not in ("subset", "fold")),
    "scheduler",
    "checkpoint",
    "error_score",
)
_SECTIONS = {
    "table": "the table (soak_dask.load_table)",
    "run": "resuming and failed fits (as soak run's)",
    "app": "data and cluster",
}
#: Learner and measure when not given, by task.
_DEFAULTS = {"classification": ("logistic", "accuracy"), "regression": ("linear", "rmse")}


def _floats(text: str) -> list[float]:
    try:
        return [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: need comma-separated numbers, e.g. 0.5,0.7,0.8,0.9"
        ) from None


def add_parser(command: Callable[[str, str], argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Register ``soak split-sensitivity`` with ``command(name, help_text)``; the sub-parser."""

    sub = command(COMMAND, HELP)
    add_settings(sub, _TABLE, run_file=False, sections=_SECTIONS)
    run = sub.add_argument_group("the diagnostic (soak_dask.split_sensitivity)")
    run.add_argument(
        "--learner",
        metavar="NAME",
        help="one built-in learner (default: logistic, or linear for regression)",
    )
    run.add_argument(
        "--ratios",
        type=_floats,
        default=[0.5, 0.7, 0.8, 0.9],
        metavar="R,R,...",
        help="train ratios, comma-separated (default 0.5,0.7,0.8,0.9)",
    )
    run.add_argument("--trials", type=int, default=20, metavar="N", help="splits per ratio (20)")
    run.add_argument("--n-folds", type=int, default=5, metavar="K", help="K of the CV (5)")
    run.add_argument(
        "--measure", metavar="NAME", help="one measure (default: accuracy, or rmse for regression)"
    )
    run.add_argument(
        "--alpha", type=float, default=0.05, help="level of intervals and tests (0.05)"
    )
    run.add_argument("--seed", type=int, default=1, help="seed of splits and learners (1)")
    out = sub.add_argument_group("output")
    add_output(out, COMMAND_NAME)
    out.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="show a progress bar of the fits",
    )
    return sub


def split_sensitivity_command(args: argparse.Namespace) -> None:
    """``soak split-sensitivity``: check the options and ``--out``, load the table, run the
    diagnostic on the cluster, write its files and print the per-ratio summary."""
    from ..diagnose.sensitivity import SplitTrials, check_alpha, check_measure, one_learner
    from ..diagnose.sensitivity import split_sensitivity as run
    from ..run.cluster import connect
    from ..tables.table import load_table

    given = {s.name: getattr(args, s.dest) for s in map(SETTINGS.get, _TABLE) if s.cli}
    values = check_run_options(given, spell=spell(args))
    scheduler = values.pop("scheduler")
    given, error_score = values.pop("checkpoint"), values.pop("error_score")
    SplitTrials(args.ratios, args.trials, args.n_folds, args.seed, names=_FLAGS)
    alpha = check_alpha(args.alpha, "--alpha")
    out = check_command_out(COMMAND_NAME, args.out, args.overwrite, values["data"])
    checkpoint = command_checkpoint(out.path, given, values["data"])
    table = load_table(values.pop("data"), **values)
    learner, measure = _DEFAULTS[table.task]
    measure = check_measure(args.measure or measure, table.task, "--measure")
    learners = one_learner(args.learner or learner, table.task, args.seed)
    options = {"ratios": args.ratios, "trials": args.trials, "n_folds": args.n_folds}
    with connect(scheduler, log_failures=getattr(args, "debug", False)) as client:
        ds = run(
            table,
            learners,
            **options,
            measure=measure,
            alpha=alpha,
            seed=args.seed,
            client=client,
            progress=args.progress,
            checkpoint=checkpoint,
            error_score=error_score,
        )
    write_outputs(ds, out)
    discard(given, checkpoint)
    print(summary_text(ds))
    print(f"\nFiles: {', '.join(str(out.path / name) for name in FILES)}")


#: How the command's messages name the builder's options.
_FLAGS = {"ratios": "--ratios", "trials": "--trials", "n_folds": "--n-folds", "seed": "--seed"}


def write_outputs(ds: xr.Dataset, out: str | Path | OutputDir) -> None:
    """Write ``FILES`` into ``out`` (created if missing; a path is checked as ``check_out``
    checks it, without overwrite), each listed in its manifest before it is written."""
    import matplotlib.pyplot as plt

    from ..diagnose.sensitivity import split_sensitivity_summary, split_sensitivity_trials
    from ..diagnose.sensitivity_plot import plot_split_sensitivity

    out = check_command_out(COMMAND_NAME, out, False, ds.attrs.get("source")).begin()
    settings = {"generator": GENERATOR, **ds.attrs}
    out.claim(SETTINGS_FILE).write_text(json.dumps(settings, indent=1, default=str) + "\n")
    split_sensitivity_summary(ds).to_csv(out.claim("summary.csv"), index=False)
    split_sensitivity_trials(ds).to_csv(out.claim("trials.csv"), index=False)
    fig = plot_split_sensitivity(ds)
    try:
        fig.savefig(out.claim("split_sensitivity.png"), dpi=150)
    finally:
        plt.close(fig)
    out.finish()


def summary_text(ds: xr.Dataset) -> str:
    """The per-ratio summary as a few lines of text, and the recommended ratios."""
    from ..diagnose.sensitivity import split_sensitivity_summary

    table = split_sensitivity_summary(ds)
    cv = (
        table["cv_estimate_mean"].map("{:.4f}".format)
        + " ± "
        + table["cv_estimate_sd"].map("{:.4f}".format)
    )
    test = (
        table["test_score_mean"].map("{:.4f}".format)
        + " ± "
        + table["test_score_sd"].map("{:.4f}".format)
    )
    shown = table[["ratio"]].assign(
        cv_estimate=cv,
        test_score=test,
        behind_best=table["test_score_behind_best"].map("{:.4f}".format),
        levene_p=table["levene_p"].round(4),
        f_p=table["f_p"].round(4),
        in_interval=table["consistent_share"].map("{:.0%}".format),
        correlation=table["correlation"].round(3),
        recommended=table["recommended"].map({True: "yes", False: ""}),
    )
    chosen = ", ".join(ds.attrs["recommended"]) if ds.attrs["recommended"] else "none"
    head = (
        f"{ds.attrs['learner']}, {ds.attrs['measure']} (mean ± SD over {ds.sizes['trial']} "
        f"trials per ratio, {ds.attrs['n_folds']}-fold CV on each train part)"
    )
    best = ", ".join(f"{r:g}" for r in table.loc[table["best_test_score"], "ratio"])
    caveat = (
        "The recommendation asks only whether the CV estimate's spread agrees with the test "
        "score's; it ignores how good the model is and favours small ratios (less training "
        f"data). Best mean test score: ratio {best or 'none'} (behind_best: how far each "
        "ratio's mean test score falls short of it)."
    )
    return (
        f"{head}\n{shown.to_string(index=False)}\nRecommended ratio(s): {chosen}\n"
        f"{textwrap.fill(caveat, 100)}"
    )
