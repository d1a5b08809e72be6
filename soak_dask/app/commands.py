"""The table of ``soak``'s commands: one `CommandSpec` per command, from which
``soak_dask.app.cli`` builds every sub-parser and dispatches.

A command is either one of the functions that run learners on a table (``scope``: its flags,
run-file keys and ``--dry-run`` come from the settings declared in ``soak_dask.settings``) or
has flags of its own (``flags``). Its function is named, not imported: it loads when the command
runs (`CommandSpec.function`), so ``soak --help`` imports no command's dependencies.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import import_module
from typing import Any

from ..settings import SETTINGS, Command
from .flags import SECTIONS, add_setting, add_settings
from .spatial_flags import add_aoa_flags, add_extract_flags, add_knndm_flags, add_spatial_flags

#: What a command reads (its positional inputs) and writes (``--out``).
INPUTS = ("table", "raster", "store")
OUTPUTS = ("store", "directory", "table", "report")
#: The heading of the built-in learners' list after the flags of a command that fits.
LEARNERS = "built-in learners (--learner NAME):"


@dataclass(frozen=True)
class CommandSpec:
    """One ``soak`` command.

    Attributes
    ----------
    name, help : str
        ``soak NAME``; its one-line help (``soak --help``) and description (``--help``).
    function : str
        ``"module:function"`` of ``soak_dask.app`` that runs it, given the parsed flags;
        imported when the command runs.
    scope : str or None
        The settings command (``soak_dask.settings.Command``) whose settings are its flags
        and run-file keys (``--config``), with ``--dry-run``; None for a command whose
        ``flags`` declare them all.
    kinds : tuple of str
        The result kinds it saves (``soak_dask.results.registry`` names).
    reads : tuple of str
        Its inputs, of `INPUTS`.
    writes : str or None
        What ``--out`` is, of `OUTPUTS`; None for a command that only prints.
    flags : callable or None
        ``flags(parser)`` adds the flags of its own (after its settings').
    sections : mapping
        ``--help`` section titles of its settings, by scope (with ``scope``).
    learners : str or None
        The heading of the built-in learners' list shown after the flags, or None.
    """

    name: str
    help: str
    function: str
    scope: Command | None = None
    kinds: tuple[str, ...] = ()
    reads: tuple[str, ...] = ("table",)
    writes: str | None = "directory"
    flags: Callable[[argparse.ArgumentParser], None] | None = None
    sections: Mapping[str, str] = field(default_factory=lambda: SECTIONS)
    learners: str | None = None

    def load(self) -> Callable[[argparse.Namespace], None]:
        """The function that runs the command (its module imported now)."""
        module, name = self.function.split(":")
        return getattr(import_module(f".{module}", __package__), name)

    def __call__(self, args: argparse.Namespace) -> None:
        """Run the command on the parsed flags ``args``."""
        self.load()(args)


#: ``soak info``'s settings: the table's, and K and the group assignment for its warnings.
INFO_SETTINGS = (
    "data",
    *(s.name for s in SETTINGS.values() if s.scope == "table"),
    "blocks",
    "block_shape",
    "clusters",
    "n_folds",
    "group_assignment",
)
#: The settings ``soak demo`` takes, as flags of the same names as ``soak run``'s.
DEMO_SETTINGS = ("n_folds", "seed", "scheduler", "progress")


def _info_flags(parser: argparse.ArgumentParser) -> None:
    add_settings(parser, INFO_SETTINGS, run_file=False)
    add_spatial_flags(parser)


def _report_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "results",
        nargs="+",
        help="results store of any kind: written by soak run, soak evaluate or save_results "
        "(transfer, search_subsets, split_sensitivity, compare_sampling results too), or the "
        "--out directory of soak split-sensitivity or soak compare-sampling (its one store); "
        "also an AOA Zarr store, or the --out directory of soak aoa or soak knndm. Several: "
        "one page with a section for each (soak run and soak evaluate results, AOA, kNNDM), "
        "e.g. soak report eval.zarr aoa knndm --out farm_report",
    )
    parser.add_argument("--out", required=True, help="report directory")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing report")


def _demo_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default="soak_demo_output", help="output directory")
    parser.add_argument("--pixels", type=int, default=60_000, help="pixels to generate")
    parser.add_argument("--regions", type=int, default=3, help="regions (subsets)")
    for name in DEMO_SETTINGS:
        add_setting(parser, SETTINGS[name], SETTINGS[name].default)


def _sections(run: str, **own: Any) -> dict[str, str]:
    """``--help`` sections of a command's settings: the table's, ``run`` (the shared run
    settings and the command's own scopes, ``own``: scope -> title), data, output and cluster."""
    return {"table": "the table (soak_dask.load_table)", "run": run, **own, "app": SECTIONS["app"]}


_EVALUATION = "the evaluation (soak_dask.evaluate)"
_SENSITIVITY = "the diagnostic (soak_dask.split_sensitivity)"
_SAMPLING = "the comparison (soak_dask.compare_sampling)"

#: Every ``soak`` command, in ``soak --help``'s order.
COMMAND_TABLE: tuple[CommandSpec, ...] = (
    CommandSpec(
        "run",
        "run SOAK on a table and save the results",
        "run_cli:run_command",
        scope="run",
        kinds=("soak",),
        writes="store",
        learners=LEARNERS,
    ),
    CommandSpec(
        "evaluate",
        "estimate how well learners predict new rows (K-fold, repeated, subsampling, LOO, "
        "LODO or bootstrap; optional reserved test split) and save the results",
        "run_cli:evaluate_command",
        scope="evaluate",
        kinds=("evaluate",),
        writes="store",
        sections=_sections(_EVALUATION, evaluate=_EVALUATION),
        learners=LEARNERS,
    ),
    CommandSpec(
        "transfer",
        "train on each subset and test on every subset (the transfer matrix, S*K fits per "
        "learner), then search which train subsets to pool for each test subset (nested "
        "greedy selection); save the results, tables, figures and an HTML report in --out",
        "transfer_cli:transfer_command",
        scope="transfer",
        kinds=("transfer", "search_subsets"),
        sections=_sections(
            "the transfer matrix (soak_dask.pooling.transfer)",
            search="the search (soak_dask.pooling.search_subsets)",
        ),
        learners=LEARNERS,
    ),
    CommandSpec(
        "split-sensitivity",
        "how much does the estimate depend on the train/test ratio? K-fold CV on the train "
        "part against the test score, over random splits per ratio; writes the results "
        "store (for 'soak report'), CSV files and a figure",
        "sensitivity_cli:split_sensitivity_command",
        scope="split-sensitivity",
        kinds=("split_sensitivity",),
        sections=_sections(_SENSITIVITY, **{"split-sensitivity": _SENSITIVITY}),
        learners="built-in learners:",
    ),
    CommandSpec(
        "compare-sampling",
        "compare train/test sampling methods by MAI = (ACC - AEV) / SD: random, stratified, "
        "clustering, MDC, D-optimal and degree-of-overlap balanced sampling",
        "sampling_cli:compare_sampling_command",
        scope="compare-sampling",
        kinds=("compare_sampling",),
        sections=_sections(_SAMPLING, **{"compare-sampling": _SAMPLING}),
        learners=LEARNERS,
    ),
    CommandSpec(
        "aoa",
        "area of applicability: the dissimilarity index of a raster or table against a "
        "training table (Meyer & Pebesma 2021, as CAST); writes the DI/AOA store and a map",
        "aoa_cli:aoa_command",
        reads=("table", "raster"),
        flags=add_aoa_flags,
    ),
    CommandSpec(
        "knndm",
        "kNNDM folds of a training table that match the distances from a prediction area "
        "(table or raster) to the training points; writes the fold column, the ECDF figure "
        "and W",
        "knndm_cli:knndm_command",
        reads=("table", "raster"),
        flags=add_knndm_flags,
    ),
    CommandSpec(
        "extract",
        "values of a raster's bands at points (nearest cell, window or buffer mean), any CRS; "
        "writes the points' table with one column per band as Parquet",
        "extract_cli:extract_command",
        reads=("raster", "table"),
        writes="table",
        flags=add_extract_flags,
    ),
    CommandSpec(
        "info",
        "describe a table: task, features, rows per subset × label, warnings",
        "info:info_command",
        writes=None,
        flags=_info_flags,
    ),
    CommandSpec(
        "report",
        "write an HTML report of saved results",
        "render:report_command",
        reads=("store",),
        writes="report",
        flags=_report_flags,
    ),
    CommandSpec(
        "demo",
        "run SOAK on a generated pixel table (the README's job)",
        "demo:demo_command",
        reads=(),
        flags=_demo_flags,
    ),
)
