"""The run path every entry point shares, written once.

``soak``, ``evaluate``, ``transfer``, ``search_subsets``, ``split_sensitivity`` and
``compare_sampling`` are each a design plus options composed on this path: ``start`` checks the
table, resolves the learners and measures, takes the client and identifies the data for a
checkpoint (before keys are added: folds depend on the seed); the design adds its keys;
``prepared`` keeps the columns a run reads in cluster memory when they fit; the design
counts what it needs and checks it (``Design.counted``) and plans; ``Session.context``
and ``Session.run`` run the plan with the strategies that apply, saving each fit in the
checkpoint and honouring ``error_score``; ``result_attrs`` and ``assemble`` make the result.

A run of several plans (``search_subsets``: one per greedy round) keeps each plan's fits in a
part of its checkpoint (``Session.run(..., part=NAME)``): the directory ``part-NAME`` inside it,
beside the run's ``settings.json`` (``Session.open_parts``).
"""

from __future__ import annotations

import dataclasses
import glob
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import dask.dataframe as dd
import pandas as pd
import xarray as xr
from sklearn.base import BaseEstimator

from ..dask_client import current_client
from ..io.locations import locate
from ..learn.builtin import resolve_learners
from ..learn.lasso import prepare_kernels
from ..learn.measures import check_measures
from ..run_options import RunOptions
from ..split import folds as _folds
from ..split.plan import Plan
from ..tables.table import Table, check_table
from ..workers import WorkerMemory, worker_memory
from .assemble import build_dataset, encode_attrs, package_versions
from .checkpoint import SETTINGS as SETTINGS_FILE
from .checkpoint import open_checkpoint, remove_checkpoint
from .cost import dry_running, stop_dry_run
from .executor import Checkpoint, data_identity, run_plan
from .facts import current_facts, say_when_fitting
from .fitting import RunSpec
from .fitting_options import FittingOptions
from .memory import count_fit_rows, fit_rows
from .persist_choice import choose_persist
from .rowcap import train_class_rows
from .score_memory import auc_columns
from .strategies import (
    Context,
    WholeTrainSet,
    assign,
    scored_fits,
    whole_fits,
)

#: Prefix of the directory of one plan's fits inside a checkpoint of several plans.
PART = "part-"


@dataclass(frozen=True)
class Session:
    """A run's checked inputs: the table as given, the learners, measures and options every
    entry point shares, and the data's identity for its checkpoint."""

    table: Table
    estimators: dict[str, BaseEstimator]
    measures: tuple[str, ...]
    seed: int
    error_score: float | str
    client: Any
    progress: bool
    checkpoint: str | os.PathLike | None
    data_id: dict[str, Any] | None
    design: str = "soak"  # the entry point: names the run in its progress bar and messages
    fitting: FittingOptions = FittingOptions()  # onepass, max_train_rows, incremental, epochs

    def with_estimators(self, estimators: Mapping[str, BaseEstimator]) -> Session:
        """This session with other learners (as a procedure wrapped them), refusing
        ``incremental`` where the wrapping loses a learner's ``partial_fit``."""
        self.fitting.check_learners(self.estimators, wrapped=estimators)
        return dataclasses.replace(self, estimators=dict(estimators))

    def context(
        self,
        table: Table,
        data: dd.DataFrame,
        plan: Plan,
        classes: Sequence | None,
        *,
        estimators: Mapping[str, BaseEstimator] | None = None,
        measures: Sequence[str] | None = None,
        fold_column: str | None = None,
    ) -> Context:
        """The executor's context of ``plan`` on ``data`` (for ``estimators`` and
        ``measures``, default the session's). ``fold_column=""``: no (subset, fold) cells, so
        no one-pass fits (designs whose keys are not SOAK's folds)."""
        run = RunSpec(
            features=table.features,
            label=table.label,
            subset=table.subset,
            fold_column=table.fold if fold_column is None else fold_column,
            measures=tuple(self.measures if measures is None else measures),
            classes=tuple(classes) if classes else None,
            group=table.group,
            error_score=self.error_score,
            seed=self.seed,
        )
        chosen = self.estimators if estimators is None else estimators
        label = "SOAK" if self.design == "soak" else self.design
        return Context(table, data, plan, chosen, run, self.client, label=label)

    def run(
        self,
        ctx: Context,
        strategies: list[Any],
        settings: Mapping[str, Any],
        *,
        rows: Mapping[str, int] | None = None,
        part: str | None = None,
        counts: pd.DataFrame | None = None,
    ) -> list[dict[str, Any]]:
        """The records of ``ctx.plan``'s fits: those in the checkpoint (of these
        ``settings``, this data and its ``rows`` per stratum) loaded, the others computed and
        saved as they finish. ``part``: the plan's part of a checkpoint of several plans.

        Train sets are capped at the session's ``max_train_rows``, and a fit too large for a
        worker's memory is refused before any fit runs (``run.memory``): each fit's rows come
        from the plan's block ``counts`` when given, else from one count of its key columns.
        Under ``cost.dry_run`` the run stops here with the plan's cost, before any fit."""
        max_rows = self.fitting.max_train_rows
        memory = worker_memory(ctx.client)
        counted = counts is None and counts_rows(ctx, strategies, max_rows, memory)
        ctx = with_fit_rows(ctx, counts, memory, max_rows, count=counted or dry_running())
        stop_dry_run(ctx, strategies, self.design, part, counted=counted)
        checkpoint = None
        if self.checkpoint is not None:
            path = self.checkpoint if part is None else part_path(self.checkpoint, part)
            data = {**(self.data_id or {}), "rows": dict(rows or {})}
            checkpoint = Checkpoint(path, checkpoint_settings(settings), data)
        return run_plan(ctx, strategies, self.progress, checkpoint)

    def open_parts(self, settings: Mapping[str, Any]) -> None:
        """Create the checkpoint of a run of several plans (its ``settings.json``, checked
        against ``settings`` and the data when it exists), before any part is run."""
        if self.checkpoint is not None and not dry_running():  # a dry run writes nothing
            open_checkpoint(
                self.checkpoint, {**checkpoint_settings(settings), "data": self.data_id}
            )


def with_fit_rows(
    ctx: Context,
    counts: pd.DataFrame | None,
    memory: WorkerMemory | None,
    max_rows: int | None = None,
    count: bool = False,
) -> Context:
    """``ctx`` with each fit's rows and the ``memory`` a worker has for a task, so that the
    strategies refuse a fit too large for a worker before any fit runs, and with ``max_rows``
    the row cap and each fit's train rows per class (the shares its sample keeps): from the
    block ``counts`` when the design has them, else, with ``count`` (``counts_rows`` said so, or
    a dry run's cost), counted in one pass over the plan's key columns."""
    classes = None if ctx.run.classes is None else list(ctx.run.classes)
    label, plan = ctx.table.label, ctx.plan
    if counts is not None:
        rows = fit_rows(plan, counts, label, classes)
        class_rows = train_class_rows(counts, plan.fits, label, classes) if max_rows else None
    elif count:
        class_rows, rows = count_fit_rows(ctx.data, plan, ctx.client, label, classes)
    else:
        return ctx
    ctx = dataclasses.replace(ctx, fit_rows=rows, memory=memory)
    if max_rows is None:
        return ctx
    return dataclasses.replace(ctx, max_rows=max_rows, class_rows=class_rows)


def counts_rows(
    ctx: Context, strategies: list[Any], max_rows: int | None, memory: WorkerMemory | None
) -> bool:
    """Whether a run without block counts makes a pass counting each fit's rows: under a
    row cap (its class shares), or where the workers' ``memory`` is known and some pair
    will be fitted on its gathered rows, or scored partition by partition (from one-pass
    statistics or fed block by block) with AUC (whose pieces hold every test row's score)."""
    if max_rows is not None:
        return True
    if memory is None:
        return False
    pairs = [(int(f), n) for f in ctx.plan.fits.index for n in ctx.estimators]
    chosen = assign(ctx, pairs, strategies)
    if auc_columns(ctx.run.measures, ctx.run.classes) and scored_fits(chosen, strategies):
        return True  # the AUC pieces of a scoring pass are checked by the test rows
    return isinstance(strategies[-1], WholeTrainSet) and bool(whole_fits(chosen, strategies))


def start(
    table: Table,
    caller: str,
    learners: Any,
    *,
    measures: Sequence[str] | str | None = None,
    seed: int = 1,
    options: RunOptions | None = None,
    prior_correction: bool = False,
) -> Session:
    """Check what every run checks first that needs the table, before any pass over the data:
    the table (for ``caller``), the measures of its task and the learners, and the checkpoint
    directory (then the data's fingerprint, which identifies the run's checkpoint); the options
    themselves are checked at the entry point's door (``option_checks.checked``) and when its
    ``RunOptions`` was made (default ``RunOptions()``). With ``prior_correction`` the default
    measures lead with balanced accuracy (the measure the correction maximises)."""
    options = RunOptions() if options is None else options
    fitting = FittingOptions.from_options(options.settings())
    check_table(table, caller)
    measures = check_measures(measures, table.task, prior_correction=prior_correction)
    estimators = resolve_learners(learners, table.task, seed)
    # lasso_cv's kernels compile here, said when not cached, not silently in the first fits.
    prepare_kernels(estimators, print if options.progress else (lambda message: None))
    client = current_client() if options.client is None else options.client
    data_id = data_identity(options.checkpoint, table)
    return Session(
        table, estimators, measures, seed, options.error_score, client, options.progress,
        options.checkpoint, data_id, caller, fitting,
    )  # fmt: skip


def checkpoint_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` as a checkpoint is identified by: a local ``source`` as an absolute path,
    so that the same data named by a relative and then an absolute path is the same run (the
    data's fingerprint names its files by absolute path already)."""
    source = settings.get("source")
    if isinstance(source, str | os.PathLike):
        text = os.fspath(source)
        local = "://" not in text
        if local and (os.path.exists(text) or glob.has_magic(text)):
            return {**settings, "source": os.path.abspath(text)}
    return dict(settings)


def persisted(
    data: dd.DataFrame,
    persist: bool | None,
    client: Any,
    rows_of: Table | int,
    progress: bool = False,
) -> tuple[dd.DataFrame, bool]:
    """``data`` and whether it is kept in cluster memory (on `client`, else Dask's local
    scheduler): as ``persist`` says, or with None as its size against the workers' memory
    (``persist_choice.choose_persist``), printed when the fits start. `rows_of`: the rows,
    or the run's table before its keys (its rows from the run's shared counts, read only to
    decide). A dry run persists nothing (it reads only the keys its plan counts)."""
    if dry_running() or persist is False:
        return data, False
    if persist is None and isinstance(rows_of, Table):
        rows_of = int(_folds.table_partition_rows(rows_of).sum())
    keep, why = choose_persist(persist, data, int(rows_of) if persist is None else 0, client)
    if progress and persist is None:
        say_when_fitting(f"Persist: {why}")
    if not keep:
        return data, False
    return (client.persist(data) if client is not None else data.persist()), True


def prepared(
    table: Table, persist: bool | None, session: Session, rows_of: Table
) -> tuple[Table, dd.DataFrame, bool]:
    """The columns a run reads (every column of the keyed ``table`` but its coordinates that
    are not features: only the keys, drawn already, read them), persisted as ``persisted``
    decides, the table over them (so the counts before the plan read them from memory too), and
    whether they were kept."""
    unread = [c for c in table.coords if c not in table.features and c in table.data.columns]
    # A selection of every column would still copy each partition: none unless one is dropped.
    read = table.data.drop(columns=unread) if unread else table.data
    data, kept = persisted(read, persist, session.client, rows_of, session.progress)
    return (dataclasses.replace(table, data=data) if kept else table), data, kept


def stratum_rows(counts: pd.DataFrame, table: Table) -> dict[str, int]:
    """Rows per stratum (subset, and class): the data's shape, whatever the folds."""
    strata = [c for c in counts.columns if c not in (table.fold, "n")]
    rows = counts.groupby(strata, observed=True)["n"].sum()
    return {str(k): int(n) for k, n in rows.items()}


def result_attrs(settings: Mapping[str, Any]) -> dict[str, Any]:
    """A result's attrs: its settings, what the run learned as it ran
    (``facts.current_facts``: ``score_waves``, the most waves a scoring pass of AUC took, where
    more than one) and the package versions, as a store keeps them."""
    return encode_attrs({**settings, **current_facts(), "versions": package_versions()})


def assemble(
    records: list[dict[str, Any]],
    plan: Plan,
    learners: list[str],
    measures: Sequence[str],
    attrs: Mapping[str, Any],
    loss_pairs: bool = False,
) -> xr.Dataset:
    """The results Dataset of ``plan``'s records, its subset coordinates (``test_subset``,
    and ``train_subset`` of a transfer plan) named as strings (``loss_pairs``: with each
    pair of learners' sums of squared per-row loss differences, ``build_dataset``'s)."""
    splits = plan.splits.copy()
    coords = dict(plan.coords)
    for dim in ("train_subset", "test_subset"):
        if dim in coords:
            splits[dim] = splits[dim].map(str)
            coords[dim] = [str(s) for s in coords[dim]]
    return build_dataset(records, splits, coords, learners, measures, attrs, loss_pairs=loss_pairs)


def part_path(checkpoint: str | os.PathLike, part: str) -> str:
    """Where the part ``part`` of a checkpoint of several plans keeps its fits."""
    return locate(checkpoint).child(f"{PART}{part}").url


def remove_run_checkpoint(path: str | os.PathLike) -> None:
    """Delete a run's checkpoint: its parts (and theirs), then its own files
    (``remove_checkpoint``: only files a checkpoint wrote, and a directory only once empty)."""
    root = locate(path)
    root.fs.invalidate_cache(root.path)
    if not root.fs.isfile(root.child(SETTINGS_FILE).path):
        return
    for entry in root.entries():
        if entry.kind == "directory" and entry.name.startswith(PART):
            remove_run_checkpoint(entry.url)
    remove_checkpoint(path)
