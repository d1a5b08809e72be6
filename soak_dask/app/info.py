"""What a table holds before SOAK runs on it: task, features, rows per subset × label, groups,
and the problems that would make folds empty or fits fail.

Everything is computed in one pass over the data: each partition is summarised where it lies
(counts, distinct groups, missing and infinite values) and only those small summaries reach
the client. The warnings are those a run with the same settings gives (the messages of
``soak_dask.tables.checks``, from the same counts), plus the errors it would stop with.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import dask
import numpy as np
import pandas as pd

from ..option_checks import checked
from ..split.fold_options import MAX_FOLDS, check_assignment_groups, fold_count
from ..split.folds import (
    check_fold_values,
    fold_rows,
    strata_keys,
)
from ..tables.arrays import float_array
from ..tables.checks import (
    infinite_features_error,
    missing_features_warning,
    named,
    one_class_warning,
    small_strata_warning,
    unequal_folds_warning,
)
from ..tables.roles import check_one_type, coordinates_warning
from ..tables.spatial_record import fold_file_text, spatial_group_text
from ..tables.table import Table
from .commands import INFO_SETTINGS
from .flags import checked_flags
from .spatial_flags import spatial_options

if TYPE_CHECKING:
    from ..spatial.variogram import SpatialRange

#: The settings of ``soak info`` that are not ``open_table``'s.
_NOT_TABLE = ("data", "n_folds", "group_assignment")


@dataclass(frozen=True)
class TableInfo:
    """Summary of a table, from ``describe_table``.

    Attributes
    ----------
    source, task, label : str
    subset, group, fold : str or None
        Role columns (``subset`` None: one subset, plain K-fold CV).
    features : tuple of str
    excluded_coordinates : tuple of str
        Columns named like coordinates that the default features left out.
    n_rows : int
    n_folds : int
        K: the fold column's largest fold, else the requested (default 10).
    rows : pandas.DataFrame
        Rows per subset (index). Classification: one column per class. Regression: columns
        ``rows``, ``label_mean``, ``label_min``, ``label_max``.
    groups : pandas.Series or None
        Distinct groups per subset.
    fold_rows : pandas.DataFrame or None
        Rows per subset (index) × fold (columns), when the table has a fold column.
    missing : dict
        Column -> number of missing values, for columns that have any.
    warnings : list of str
        The warnings a run would give, and the problems that would stop it, each naming the
        columns, values and the fix.
    group_made, fold_source : str
        How the group column was made from the coordinates (``--blocks``, ``--clusters``), and
        the fold file the fold column came from; "" otherwise
        (``soak_dask.tables.spatial_record``).
    """

    source: str
    task: str
    label: str
    subset: str | None
    group: str | None
    fold: str | None
    features: tuple[str, ...]
    n_rows: int
    n_folds: int
    rows: pd.DataFrame
    groups: pd.Series | None
    fold_rows: pd.DataFrame | None
    missing: dict[str, int]
    warnings: list[str]
    excluded_coordinates: tuple[str, ...] = ()
    group_made: str = ""
    fold_source: str = ""

    def __str__(self) -> str:
        return format_info(self)


@checked("run", only=("n_folds", "seed", "stratify", "group_assignment"))
def describe_table(
    table: Table,
    n_folds: int | None = None,
    *,
    seed: int = 1,
    stratify: bool = True,
    group_assignment: str = "rows",
) -> TableInfo:
    """Summarise ``table`` for SOAK in one pass over its partitions.

    Parameters
    ----------
    table : Table
        From ``soak_dask.load_table``.
    n_folds : int, optional
        K the run will use (default 10). With a fold column, K is read from the column and a
        different ``n_folds`` is reported as a warning.
    seed : int
        As the run's ``seed``, which decides the folds SOAK assigns, and so (with groups) how
        much their sizes differ.
    stratify : bool
        As the run's ``stratify``: whether folds are balanced within subset × label, which
        decides the strata checked for having fewer rows (or groups) than folds.
    group_assignment : {"rows", "mlr3resampling"}
        As the run's: how whole groups are dealt to folds, which decides (with groups) how
        much the folds' sizes differ. Other than "rows" it needs a group column, as ``soak``.

    Returns
    -------
    TableInfo
        Prints readably; its fields are pandas objects for further use.

    Examples
    --------
    >>> import pandas as pd, soak_dask as sd
    >>> df = pd.DataFrame({"b1": range(8), "y": list("abab") * 2, "s": list("AAAABBBB")})
    >>> info = describe_table(sd.load_table(df, label="y", subset="s"), n_folds=2)
    >>> info.rows.to_dict("index")
    {'A': {'a': 2, 'b': 2}, 'B': {'a': 2, 'b': 2}}
    """
    assignment = group_assignment  # checked at the door, as the run's options are
    check_assignment_groups(table.group, assignment)  # as soak refuses it: nothing to deal
    c = _count(table)
    blocks, missing, infinite, known = c.blocks, c.missing, c.infinite, c.known
    group_rows, members = c.group_rows, c.members
    notes = [coordinates_warning(table.excluded_coordinates)] if table.excluded_coordinates else []
    notes += _missing_role_warnings(table, missing)
    in_features = {c: n for c, n in missing.items() if c in table.features}
    notes += [missing_features_warning(in_features), infinite_features_error(infinite)]
    k = fold_count(n_folds)
    fold_rows = None
    if table.fold is not None:
        k, fold_notes = _fold_k(known, table.fold, n_folds)
        notes += fold_notes
        fold_rows = _table(known, table.subset, table.fold)
        notes += _empty_block_warnings(fold_rows, table, k)
    if table.task == "classification":
        rows = _table(known, table.subset, table.label)
        notes.append(one_class_warning(known, table.subset, table.label))
    else:
        rows = _regression_rows(known, c.labels, table.subset)
    if table.fold is None:
        notes.append(_strata_warning(table, known, members, k, stratify))
    folds = (k, seed, stratify, assignment)
    notes.append(_unequal_folds(table, known, group_rows, fold_rows, *folds))
    groups = None
    if members is not None:
        groups = members.groupby(table.subset, observed=True)[table.group].nunique()
        notes += _group_warnings(members, groups, table, k)
    return TableInfo(
        source=table.source,
        task=table.task,
        label=table.label,
        subset=table.subset if table.user_subset else None,
        group=table.group,
        fold=table.fold,
        features=table.features,
        excluded_coordinates=table.excluded_coordinates,
        n_rows=int(blocks.sum()),
        n_folds=int(k),
        rows=rows,
        groups=groups,
        fold_rows=fold_rows,
        missing=missing,
        warnings=[note for note in notes if note],
        group_made=spatial_group_text(table.roles, table.group),
        fold_source=fold_file_text(table.roles),
    )


@dataclass(frozen=True)
class _Counts:
    """What one pass over a table's partitions counts (see ``_count``)."""

    blocks: pd.Series  # rows per (subset, label[, fold]) block, as counted
    known: pd.DataFrame  # the blocks as columns and "n", without missing role values
    missing: dict[str, int]  # missing values per column that has any
    infinite: pd.Series  # infinite values per feature
    group_rows: pd.DataFrame | None  # rows per (role values, group); None without groups
    members: pd.DataFrame | None  # the (role values, group) pairs; None without groups
    labels: Any  # the summed label summaries (regression)


def _count(table: Table) -> _Counts:
    """Count ``table`` in one pass over its partitions, and refuse role columns whose counted
    values mix types."""
    roles = _roles(table)
    parts = [dask.delayed(_summarise_part)(part, **roles) for part in table.data.to_delayed()]
    summaries = dask.compute(*parts)
    blocks = _sum(s["blocks"] for s in summaries)
    missing = _sum(s["missing"] for s in summaries)
    missing = {str(c): int(n) for c, n in missing.items() if n}
    infinite = _sum(s["infinite"] for s in summaries)
    group_rows = _sum(s["groups"] for s in summaries).rename("n") if table.group else None
    group_rows = None if group_rows is None else group_rows.reset_index()
    members = None if group_rows is None else group_rows.drop(columns="n")
    counts = blocks.rename("n").reset_index()
    for frame in (counts, members):  # the role columns' distinct values, as counted
        for column in [] if frame is None else frame.columns.drop("n", errors="ignore"):
            check_one_type(frame[column], column)
    known = counts.dropna(subset=[c for c in counts.columns if c != "n"])
    labels = _sum_frames(s["label"] for s in summaries) if table.task != "classification" else None
    return _Counts(blocks, known, missing, infinite, group_rows, members, labels)


def _roles(table: Table) -> dict[str, Any]:
    return {
        "subset": table.subset,
        "label": table.label,
        "group": table.group,
        "fold": table.fold,
        "features": list(table.features),
        "classification": table.task == "classification",
    }


def _summarise_part(
    part: pd.DataFrame,
    subset: str,
    label: str,
    group: str | None,
    fold: str | None,
    features: list[str],
    classification: bool,
) -> dict[str, Any]:
    """Small summaries of one partition; runs where the partition is."""
    keys = [subset, *([label] if classification else []), *([fold] if fold else [])]
    out: dict[str, Any] = {
        "blocks": part.groupby(keys, dropna=False, observed=True).size(),
        "missing": part.isna().sum(),
        "infinite": pd.Series(np.isinf(float_array(part, features)).sum(axis=0), index=features),
    }
    if group is not None:
        members = [subset, *([label] if classification else []), group]
        out["groups"] = part.groupby(members, dropna=False, observed=True).size()
    if not classification:
        y = part[label]
        stats = pd.DataFrame({"sum": y, "count": y.notna(), "min": y, "max": y})
        out["label"] = stats.groupby(part[subset], observed=True).agg(
            {"sum": "sum", "count": "sum", "min": "min", "max": "max"}
        )
    return out


def _sum(series: Any) -> pd.Series:
    """Add per-partition counts (Series with the same index levels), keeping missing keys."""
    frame = pd.concat(list(series))
    levels = list(range(frame.index.nlevels))
    return frame.groupby(level=levels, dropna=False, observed=True).sum()


def _sum_frames(frames: Any) -> pd.DataFrame:
    frame = pd.concat(list(frames))
    return frame.groupby(level=0, observed=True).agg(
        {"sum": "sum", "count": "sum", "min": "min", "max": "max"}
    )


def _table(counts: pd.DataFrame, index: str, columns: str) -> pd.DataFrame:
    out = counts.pivot_table(index=index, columns=columns, values="n", aggfunc="sum", fill_value=0)
    out = out.astype("int64")
    out.columns.name = columns
    return out.sort_index()


def _regression_rows(counts: pd.DataFrame, label: pd.DataFrame, subset: str) -> pd.DataFrame:
    rows = counts.groupby(subset, observed=True)["n"].sum().rename("rows").sort_index()
    label = label.reindex(rows.index)
    return pd.DataFrame(
        {
            "rows": rows.astype("int64"),
            "label_mean": label["sum"] / label["count"],
            "label_min": label["min"],
            "label_max": label["max"],
        }
    )


def _missing_role_warnings(table: Table, missing: dict[str, int]) -> list[str]:
    """Missing values in role columns, which stop a run."""
    roles = {table.label: "label", table.subset: "subset", table.group: "group", table.fold: "fold"}
    role_cols = [f"{roles[c]} column {c!r}: {n}" for c, n in missing.items() if c in roles]
    if not role_cols:
        return []
    return [f"missing values in role columns ({named(role_cols)}) stop SOAK: drop those rows"]


def _fold_k(counts: pd.DataFrame, fold: str, n_folds: int | None) -> tuple[int, list[str]]:
    try:
        return check_fold_values(counts, fold, n_folds), []
    except ValueError as err:
        numeric = pd.to_numeric(counts[fold], errors="coerce").astype(np.float64)
        finite = numeric[np.isfinite(numeric)]
        return int(finite.max()) if len(finite) else 0, [str(err)]


def _empty_block_warnings(fold_rows: pd.DataFrame, table: Table, k: int) -> list[str]:
    if k > MAX_FOLDS:  # refused in the fold note already; folds 1..k would not fit in memory
        return []
    full = fold_rows.reindex(columns=range(1, k + 1), fill_value=0)
    empty = [(s, f) for s, row in full.iterrows() for f, n in row.items() if n == 0]
    if not empty:
        return []
    return [
        f"{len(empty)} (subset, fold) blocks of ({table.subset}, {table.fold}) have no rows, e.g. "
        f"{named(empty)}: SOAK needs every subset in every fold; renumber the folds"
    ]


def _strata_warning(
    table: Table, counts: pd.DataFrame, members: pd.DataFrame | None, k: int, stratify: bool
) -> str | None:
    """The strata that ``soak_dask.assign_folds`` would find smaller than K: rows per subset
    (× label when stratified), or with groups, groups per stratum."""
    keys = strata_keys(table, stratify)
    if members is None:
        strata = counts.groupby(keys, observed=True)["n"].sum().sort_index()
        return small_strata_warning(strata, keys, k)
    known = members.dropna()
    strata = known.groupby(keys, observed=True)[table.group].nunique()
    rows = counts.groupby(keys, observed=True)["n"].sum()
    return small_strata_warning(strata, keys, k, f"groups of {table.group!r}", rows)


def _unequal_folds(
    table: Table,
    counts: pd.DataFrame,
    group_rows: pd.DataFrame | None,
    user_folds: pd.DataFrame | None,
    k: int,
    seed: int,
    stratify: bool,
    assignment: str = "rows",
) -> str | None:
    """The run's warning about test folds of very different sizes, from the fold column's
    rows or the folds SOAK would assign (computed from the counts: no pass)."""
    if user_folds is not None:
        return unequal_folds_warning(user_folds.stack())
    keys = strata_keys(table, stratify)
    if group_rows is None:
        return unequal_folds_warning(fold_rows(counts, keys, k, seed))
    sizes = group_rows.dropna().groupby([*keys, table.group], observed=True)["n"].sum()
    sizes = sizes[sizes > 0].reset_index()
    if sizes[table.group].duplicated().any():
        return None  # a group in two strata stops the run before folds (listed below)
    return unequal_folds_warning(fold_rows(sizes, keys, k, seed, table.group, assignment))


def _group_warnings(members: pd.DataFrame, groups: pd.Series, table: Table, k: int) -> list[str]:
    notes = []
    group = table.group
    keys = [table.subset] + ([table.label] if table.task == "classification" else [])
    for key in keys:
        spans = members.groupby(group, observed=True)[key].nunique()
        spanning = spans[spans > 1].index
        if len(spanning):
            notes.append(
                f"{len(spanning)} groups of {group!r} have more than one {key!r} value "
                f"(e.g. {named(spanning)}); assigning folds needs one value per group"
            )
    few = groups[groups < k]
    if table.fold is None and len(few):
        notes.append(
            f"subsets with fewer groups of {group!r} than the {k} folds: "
            f"{named(f'{s}: {n}' for s, n in few.items())}; some test folds would be empty, "
            "use fewer folds"
        )
    return notes


def format_info(info: TableInfo) -> str:
    """The readable report ``soak info`` prints."""
    subset = info.subset or "(none: one subset, plain K-fold CV)"
    fold = info.fold_source or (f"{info.fold!r}" if info.fold else "assigned by SOAK")
    made = f", {info.group_made}" if info.group_made else ""
    lines = [
        f"source:   {info.source}",
        f"task:     {info.task} (label {info.label!r})",
        f"rows:     {info.n_rows:,}",
        f"subset:   {subset}",
        f"group:    {info.group or '(none)'}{made}",
        f"folds:    {info.n_folds} ({fold})",
        f"features ({len(info.features)}): {', '.join(info.features)}",
        *_left_out(info.excluded_coordinates),
        "",
        f"rows per subset × {'label' if info.task == 'classification' else 'label summary'}:",
        _with_total(info.rows)
        if info.task == "classification"
        else info.rows.to_string(float_format="{:.4g}".format),
    ]
    if info.groups is not None:
        lines += ["", "groups per subset:", info.groups.to_frame("groups").to_string()]
    if info.fold_rows is not None:
        lines += ["", "rows per subset × fold:", info.fold_rows.to_string()]
    if info.missing:
        lines += ["", "missing values:", *(f"  {c}: {n}" for c, n in info.missing.items())]
    lines += ["", "warnings:" if info.warnings else "warnings: none"]
    lines += [f"  - {w}" for w in info.warnings]
    return "\n".join(lines)


def _left_out(columns: tuple[str, ...]) -> list[str]:
    """The line naming the coordinate columns left out of the features, if any."""
    return [f"left out (coordinates): {', '.join(columns)}"] if columns else []


def _with_total(rows: pd.DataFrame) -> str:
    out = rows.assign(total=rows.sum(axis=1))
    out.index = out.index.astype(str)  # a categorical subset index cannot take "total"
    out.loc["total"] = out.sum()
    return out.to_string()


def spatial_info(table: Table, n_folds: int | None = None, **options: Any) -> SpatialRange:
    """``soak info --spatial``: ``soak_dask.spatial_range`` of the table's label, with the
    folds of the run (``n_folds``, default 10) for its flattery line; ``options`` are
    ``spatial_range``'s (``sample``, ``model``, ``unit``...). Prints as the section ``soak info``
    adds: the range, its interval, the suggested ``--blocks`` size and the flattery line."""
    from ..spatial.variogram import spatial_range

    return spatial_range(table, n_folds=fold_count(n_folds), **options)


def compared_info(
    table: Table, learners: list[str], ranged: SpatialRange, values: dict[str, Any]
) -> str:
    """``soak info --spatial --learner L``: ``random_vs_block_cv`` of the learners with the
    run's K (``--n-folds``, default 10) and blocks (``--blocks`` and its shape, else the size
    ``ranged`` suggests), in words."""
    from ..spatial.random_vs_block import flattery_text, random_vs_block_cv

    size = values["blocks"] if values["blocks"] is not None else ranged.block_size
    frame = random_vs_block_cv(
        table, learners, block_size=size, shape=values["block_shape"] or "square",
        n_folds=fold_count(values["n_folds"]), unit=ranged.unit, progress=False,
    )  # fmt: skip
    return flattery_text(frame)


def info_command(args: argparse.Namespace) -> None:
    """``soak info``: print `describe_table` of the table (and `spatial_info` with
    ``--spatial``, `compared_info` with ``--learner`` too)."""
    from ..learn.builtin import resolve_learners
    from .table_input import open_table

    values = checked_flags(args, INFO_SETTINGS)
    spatial = spatial_options(args)
    learners = None if spatial is None else spatial.pop("learners")
    n_folds, assignment = values["n_folds"], values["group_assignment"]
    table = open_table(values["data"], {k: v for k, v in values.items() if k not in _NOT_TABLE})
    if learners:
        resolve_learners(learners, table.task)  # an unknown learner: before any pass
    # The range first: a table without coordinates is refused before the pass of describe.
    ranged = None if spatial is None else spatial_info(table, n_folds, **spatial)
    print(describe_table(table, n_folds=n_folds, group_assignment=assignment))
    if ranged is not None:
        print(f"\n{ranged}")
    if learners:
        print(compared_info(table, learners, ranged, values), flush=True)
