"""The plain-text output of results, for terminals and logs: what ``soak run``,
``soak evaluate`` and ``soak report`` print.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from ..tables.checks import UNEQUAL_FOLDS
from ..tables.spatial_record import fold_file_text, spatial_group_text
from .estimates import FOLD_MEAN_BASIS, UNTESTED_BASIS, evaluation_banner, soak_banner
from .kinds import no_tests_reason, unequal_subsets
from .paired_tests import pvalues
from .summaries import evaluation_summary, nesting_choices, summary
from .verdicts import NO_EVIDENCE, with_verdicts

__all__ = [
    "evaluation_text",
    "nesting_lines",
    "prior_correction_text",
    "pvalues_text",
    "results_text",
    "text_table",
]


def prior_correction_text(attrs: Mapping[str, Any]) -> str:
    """Whether a classification run predicted with the prior correction, in words.

    >>> prior_correction_text({"prior_correction": 0})
    'prior correction off: the class of largest probability'
    """
    if int(attrs.get("prior_correction", 0)):
        return (
            "prior correction on: the class of largest probability ÷ its share of the train "
            "rows (maximises balanced accuracy; plain error usually rises when classes are "
            "imbalanced)"
        )
    return "prior correction off: the class of largest probability"


def _printable(value: Any) -> Any:
    """A text cell with its unprintable characters (terminal escapes, line breaks) escaped."""
    if not isinstance(value, str) or value.isprintable():
        return value
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in value)


def pvalues_text(ds: xr.Dataset, measure: str = "error") -> str:
    """The paired t-tests of one measure as a plain-text table, for terminals and logs.

    Each row carries its 95 % interval and its verdict (``results.verdicts``: "better" /
    "worse" at p < 0.05, else "no evidence of a difference").

    Where a subset's test folds differ by more than 3× in rows (`unequal_subsets`), the table
    adds ``weighted_diff`` (compare − same pooled over the test rows) beside ``mean_diff`` (the
    fold mean, which ``p`` tests) and a ``flag`` column marking the rows of those
    subsets whose two differences disagree in sign.

    Names are printed as they are, except unprintable characters, shown as escapes
    (``\\x1b``): a subset name cannot move the cursor or recolour the terminal.
    """
    keep = [
        "learner",
        "test_subset",
        "compare",
        "reference_mean",
        "compare_mean",
        "mean_diff",
        "ci_low",
        "ci_high",
        "p",
        "verdict",
    ]
    table = with_verdicts(pvalues(ds, measures=[measure]))
    uneven = unequal_subsets(ds)
    title = (
        f"{measure}: other / all vs same (paired t-test over folds; ci_low..ci_high: 95 % "
        f"interval of mean_diff, in {measure}'s units; p ≥ 0.05 reads {NO_EVIDENCE!r}, "
        "which is not evidence of equality)"
    )
    if uneven:
        keep.insert(keep.index("mean_diff") + 1, "weighted_diff")
        # sign_agrees is NA where a train type is absent: no flag there.
        disagree = table["sign_agrees"].eq(False).fillna(False).astype(bool)
        differs = table["test_subset"].isin(uneven) & disagree
        table = table.assign(flag=np.where(differs, "SIGN DIFFERS", ""))
        keep.append("flag")
        title += "\n" + _unequal_note(uneven, int(differs.sum()))
    columns = [c for c in table.columns if c in keep or c == "train_size"]
    return text_table(title, table[columns])


def _unequal_note(uneven: list[Any], n_differ: int) -> str:
    """What the CLI and report say above a table of subsets with unequal folds."""
    flagged = (
        f"; {n_differ} comparison{' is' if n_differ == 1 else 's are'} marked SIGN DIFFERS: "
        "there the fold mean and the pooled rows disagree on which train type is better"
        if n_differ
        else "; the two agree in sign everywhere"
    )
    return (
        f"test folds of {', '.join(map(str, uneven))} differ by more than {UNEQUAL_FOLDS:g}× "
        "in rows: weighted_diff pools compare − same over the test rows, mean_diff is the mean "
        f"over folds (a row of a small fold counts more), and p tests mean_diff{flagged}"
    )


def results_text(ds: xr.Dataset, measure: str = "error") -> str:
    """What ``soak run`` prints: `pvalues_text`, or when the results hold nothing to compare
    (plain K-fold CV), the mean ± SD over folds of each learner, saying why; under it, the
    note of ``estimates.soak_banner`` where a cell's fold mean and pooled estimate disagree.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"learner": "lr", "test_subset": "all_rows", "fold": [1, 2],
    ...                    "train_type": "same", "error": [10.0, 20.0], "n_test": [100, 150]})
    >>> ds = df.set_index(["learner", "test_subset", "fold", "train_type"]).to_xarray()
    >>> print(results_text(ds))
    one subset: plain K-fold CV, no 'other' or 'all' train set to compare with 'same': no p-values
    error: mean ± SD over the folds of each learner (weighted_mean: folds weighted by test rows)
    learner  n  mean     sd  weighted_mean  n_test_min  n_test_max
         lr  2  15.0 7.0711           16.0         100         150
    """
    reason = no_tests_reason(ds)
    banner = soak_banner(ds, measure, UNTESTED_BASIS if reason else FOLD_MEAN_BASIS)
    if not reason:
        return _with_banner(_with_settings_lines(ds, pvalues_text(ds, measure)), banner)
    table = summary(ds, [measure])
    drop = ["train_type", "measure"] + (["test_subset"] if ds.sizes["test_subset"] == 1 else [])
    title = (
        f"{reason}: no p-values\n{measure}: mean ± SD over the folds of each learner "
        "(weighted_mean: folds weighted by test rows)"
    )
    rows = {c: "Int64" for c in ("n_test_min", "n_test_max")}  # counts, printed as such
    text = _with_settings_lines(ds, text_table(title, table.drop(columns=drop).astype(rows)))
    return _with_banner(text, banner)


def _with_banner(text: str, banner: str) -> str:
    """`text` over the note where fold means and pooled estimates disagree, if any."""
    return f"{text}\n{banner}" if banner else text


def _with_settings_lines(ds: xr.Dataset, text: str) -> str:
    """`text` over lines saying where the folds came from (a fold file) and how a group
    column made from the coordinates was made (``--blocks``, ``--clusters``), and one saying
    whether a classification run used the prior correction."""
    group = ds.attrs.get("group")
    made = spatial_group_text(ds.attrs, group)
    if fold_file_text(ds.attrs):
        text += f"\nFolds: {fold_file_text(ds.attrs)}"
    if made:
        text += f"\nGroups: {group}, {made}: the rows of a group share one fold"
    if ds.attrs.get("task") != "classification":
        return text
    return f"{text}\nPrediction: {prior_correction_text(ds.attrs)}"


def text_table(title: str, table: pd.DataFrame) -> str:
    """`title` over `table` as plain text, numbers to 4 decimals, names printable."""
    text = table.round(4)
    names = text.select_dtypes(exclude="number").columns
    text[names] = text[names].map(_printable)
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        return f"{title}\n{text.to_string(index=False)}"


def evaluation_text(ds: xr.Dataset) -> str:
    """What ``soak evaluate`` and ``soak report`` print of an evaluate result: each learner's
    mean ± SD (and range) over the resampling cells per measure, and the test split's estimate
    with its 95 % interval when there is one."""
    table = evaluation_summary(ds)
    title = (
        f"outer={ds.attrs.get('outer')}: mean ± SD over the n resampling cells (repeat × fold) "
        "of each learner; SD, not a standard error; weighted_mean: the pooled estimate (every "
        "test row once), n_test_min-max: test rows of a cell"
    )
    split = table["n_test_split"].dropna()
    if len(split):
        title += (
            f"; test_*: the reserved test split ({int(split.max()):,} rows) scored by the final "
            "models, with its bootstrap 95 % interval"
        )
    else:
        table = table.drop(columns=["test_estimate", "test_low", "test_high"])
    counts = {c: "Int64" for c in ("n_test_min", "n_test_max")}  # printed as counts
    shown = table.drop(columns="n_test_split").astype(counts)
    text = _with_settings_lines(ds, text_table(title, shown))
    # The first measure's, as the learners compared below: one note, not one per measure.
    banner = evaluation_banner(ds, str(table["measure"].iloc[0])) if len(table) else ""
    return "\n".join([text, *filter(None, [banner]), *nesting_lines(ds)])


def nesting_lines(ds: xr.Dataset) -> list[str]:
    """What an evaluate result says about its nesting: the optimism warning of
    ``nested=False``, skipped steps, what each learner chose (each value with its count over
    the folds; every fold in ``summaries.nesting_choices``), and the timings."""
    lines = []
    if ds.attrs.get("optimistic"):
        lines.append(f"\nWARNING: {ds.attrs['optimistic']}")
    notes = ds.attrs.get("notes", [])
    lines += [f"Note: {note}" for note in ([notes] if isinstance(notes, str) else notes) if note]
    choices = nesting_choices(ds)
    for learner, rows in choices.groupby("learner", sort=False):
        folds, final = rows[rows["model"] == "fold"], rows[rows["model"] == "final"]
        for column in rows.columns[4:]:
            counts = folds[column].dropna().astype(str).value_counts(sort=False)
            if counts.empty:
                continue
            shown = ", ".join(f"{v} ×{n}" if n > 1 else v for v, n in counts.items())
            chosen = final[column].dropna()
            tail = f"; final model: {chosen.iloc[0]}" if len(chosen) else ""
            lines.append(f"{learner} {column} over the {len(folds)} outer cells: {shown}{tail}")
    if "outer_seconds" in ds.attrs:
        lines.append(
            f"Timings: outer loop {float(ds.attrs['outer_seconds']):.1f} s, final models "
            f"{float(ds.attrs['final_seconds']):.1f} s"
        )
    return lines
