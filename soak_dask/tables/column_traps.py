"""Columns whose values betray a role they were not meant for, found in one pass before any fit.

- A **continuous role column**: a subset or group column holding floats that are not whole
  numbers (e.g. NDVI given as ``subset``). A subset is a category many rows share, a group an
  id: no measurement is either, so such a column is refused. A float column of whole numbers
  (a year read as 2019.0 because of a gap) is accepted. (A fold column's values are checked to
  be integers 1..K by ``soak`` before any fit, naming the values that are not.)
- An **id-like feature**: an integer column left among the default features that is named like
  an id (``row_id``, ``pixelID``, ``FID``, ``image``, ``tree_number``...; `ID_TOKENS`) or whose
  values number the rows: strictly increasing or decreasing over the table, or nearly all
  distinct (`DISTINCT_SHARE`) and dense (spanning at most `SPAN_SHARE` times the rows, as a
  numbering with few gaps, shuffled or not, does), in tables of at least `ID_MIN_ROWS` rows.
  A model can learn such a column as a map of where each row came from, so it is warned about
  (as coordinates are), and kept: never dropped without the user's word.

The pass reads only the float role columns and the integer default features; each partition
returns a few numbers per column, merged in order on the cluster (no column leaves a worker).
Distinct values are counted (HyperLogLog, ``nunique_approx``) only for the columns refused or
still in doubt after it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

#: Name parts (split at "_", "-", ".", spaces, digits and case changes; lower case) that mark
#: an id. "number", "num" and "nr" count only as the last of several parts ("tree_number",
#: not "number_of_trees").
ID_TOKENS = frozenset(
    {"id", "ids", "idx", "index", "fid", "oid", "gid", "uid", "uuid", "objectid", "rowid"}
    | {"key", "image", "img", "scene"}
)
NUMBER_TOKENS = frozenset({"number", "num", "nr"})
#: Below this many rows the values of a column say nothing about it being an id.
ID_MIN_ROWS = 50
#: "Nearly all distinct": at least this share of the rows hold distinct values...
DISTINCT_SHARE = 0.95
#: ... and the values span at most this many times the rows (a numbering with few gaps;
#: n random integers spread over 1.5 n values are only about 73 % distinct).
SPAN_SHARE = 1.5
#: Partitions' summaries merged per task of the tree reduction.
_SPLIT_EVERY = 8

_PARTS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def name_parts(column: object) -> list[str]:
    """The lower-case parts of a column name.

    Examples
    --------
    >>> name_parts("pixelID"), name_parts("row_id"), name_parts("OBJECTID")
    (['pixel', 'id'], ['row', 'id'], ['objectid'])
    """
    return [p.lower() for p in _PARTS.findall(str(column))]


def is_id_name(column: object) -> bool:
    """Whether ``column`` is named like an id (see `ID_TOKENS`).

    Examples
    --------
    >>> [is_id_name(c) for c in ["row_id", "FID", "ImageNumber", "n_trees", "valid", "B04"]]
    [True, True, True, False, False, False]
    """
    parts = name_parts(column)
    numbered = len(parts) > 1 and parts[-1] in NUMBER_TOKENS
    return numbered or any(p in ID_TOKENS for p in parts)


@dataclass(frozen=True)
class Summary:
    """What one pass learns of one column (of a partition, then of the table, merged in order).

    Attributes
    ----------
    n : int
        Non-missing values.
    low, high, first, last : float
        Smallest, largest, first and last of them (NaN when there are none).
    rising, falling : bool
        Whether they strictly increase (decrease) in row order.
    fractional : int
        Values that are not whole numbers.
    example : float
        The first of those (NaN if none).
    distinct : int
        Distinct values per partition, summed: at least the table's (equal with one partition).
    """

    n: int
    low: float
    high: float
    first: float
    last: float
    rising: bool
    falling: bool
    fractional: int
    example: float
    distinct: int


def summarise(frame: pd.DataFrame, columns: Sequence[str]) -> dict[str, Summary]:
    """The `Summary` of each of ``columns`` in one partition."""
    out = {}
    for column in columns:
        v = frame[column].dropna().to_numpy(dtype=np.float64)
        steps = np.diff(v)
        whole = np.floor(v) == v
        out[column] = Summary(
            n=len(v),
            low=v.min() if len(v) else np.nan,
            high=v.max() if len(v) else np.nan,
            first=v[0] if len(v) else np.nan,
            last=v[-1] if len(v) else np.nan,
            rising=bool((steps > 0).all()),
            falling=bool((steps < 0).all()),
            fractional=int((~whole).sum()),
            example=v[~whole][0] if (~whole).any() else np.nan,
            distinct=len(pd.unique(v)),
        )
    return out


def merge(a: Summary, b: Summary) -> Summary:
    """The `Summary` of rows ``a`` followed by rows ``b``."""
    if not a.n or not b.n:
        return b if not a.n else a
    return Summary(
        n=a.n + b.n,
        low=min(a.low, b.low),
        high=max(a.high, b.high),
        first=a.first,
        last=b.last,
        rising=a.rising and b.rising and a.last < b.first,
        falling=a.falling and b.falling and a.last > b.first,
        fractional=a.fractional + b.fractional,
        example=a.example if a.fractional else b.example,
        distinct=a.distinct + b.distinct,
    )


def merge_all(*parts: dict[str, Summary]) -> dict[str, Summary]:
    """Summaries of consecutive pieces of the table, merged in their order."""
    out = dict(parts[0])
    for part in parts[1:]:
        out = {c: merge(out[c], s) for c, s in part.items()}
    return out


def scan(ddf: dd.DataFrame, columns: Sequence[str]) -> dict[str, Summary]:
    """Summaries of ``columns`` of ``ddf``: one pass, a tree reduction that keeps row order."""
    columns = list(columns)
    level = [dask.delayed(summarise)(p, columns) for p in ddf[columns].to_delayed()]
    while len(level) > 1:
        level = [
            dask.delayed(merge_all)(*level[i : i + _SPLIT_EVERY])
            for i in range(0, len(level), _SPLIT_EVERY)
        ]
    (summaries,) = dask.compute(level[0])
    return summaries


def float_roles(ddf: dd.DataFrame, roles: dict[str, str | None]) -> dict[str, str]:
    """``{role: column}`` of the subset and group columns of float dtype."""
    dtypes = ddf.dtypes  # once: a column's dtype through ddf[column] builds an expression
    return {
        role: col
        for role in ("subset", "group")
        if (col := roles.get(role)) is not None and pd.api.types.is_float_dtype(dtypes[col])
    }


def integer_features(ddf: dd.DataFrame, features: Sequence[str]) -> list[str]:
    """The integer (not boolean) columns among ``features``."""
    dtypes = ddf.dtypes
    return [
        c
        for c in features
        if pd.api.types.is_integer_dtype(dtypes[c]) and not pd.api.types.is_bool_dtype(dtypes[c])
    ]


def continuous_role_error(role: str, column: str, s: Summary, distinct: float, name: str) -> str:
    """The refusal of a ``role`` column ``column`` holding fractional floats."""
    binned = (
        f"or make categories of it first (e.g. df[{column + '_class'!r}] = "
        f"pd.cut(df[{column!r}], bins=4, labels=False))"
    )
    what, fix = {
        "subset": ("a subset is a category that many rows share (a region, a year, an image)",
                   f"name a categorical column as subset, {binned}"),
        "group": ("a group is an id that the rows of one unit share (a polygon, a plot)",
                  f"name the column of the units as group, {binned}"),
    }[role]  # fmt: skip
    return (
        f"{role} column {column!r} in {name} has about {int(round(distinct)):,} distinct float "
        f"values, {s.fractional:,} of {s.n:,} not whole numbers (e.g. {s.example:g}): {what}, "
        f"not a measurement; {fix}"
    )


def id_like_warning(reasons: dict[str, str]) -> str:
    """The warning about integer feature columns that look like ids (``reasons``: column ->
    why)."""
    listed = ", ".join(f"{c!r} ({why})" for c, why in reasons.items())
    names = list(reasons)
    return (
        f"integer columns that look like ids are used as features: {listed}; a model can learn "
        "an id as a map of where rows come from, which changes what same, other and all "
        f"compare. To leave them out, pass exclude={names} (soak: --exclude "
        f"{','.join(names)}); to keep them without this warning, name the features with "
        "features=[...]"
    )


def dense(s: Summary) -> bool:
    """Whether the values could be a numbering of the rows: enough rows, a span that holds at
    least `DISTINCT_SHARE` of them and at most `SPAN_SHARE` times them, and enough distinct
    values in the partitions (an exact count with one partition, else an upper bound)."""
    span = s.high - s.low + 1
    enough = DISTINCT_SHARE * s.n
    return s.n >= ID_MIN_ROWS and enough <= span <= SPAN_SHARE * s.n and s.distinct >= enough


def count_distinct(ddf: dd.DataFrame, columns: Sequence[str]) -> dict[str, float]:
    """About how many distinct values each of ``columns`` holds (HyperLogLog, in one pass)."""
    counts = dd.compute(*(ddf[c].nunique_approx() for c in columns))
    return dict(zip(columns, map(float, counts), strict=True))


def id_values(ddf: dd.DataFrame, summaries: dict[str, Summary]) -> dict[str, str]:
    """Why each integer column summarised in ``summaries`` numbers the rows, from its values:
    strictly monotone, or nearly all distinct and `dense` (counted only for dense columns)."""
    reasons = {
        c: f"strictly {'increasing' if s.rising else 'decreasing'} over {s.n:,} rows"
        for c, s in summaries.items()
        if s.n >= ID_MIN_ROWS and (s.rising or s.falling)
    }
    doubt = [c for c, s in summaries.items() if c not in reasons and dense(s)]
    for c, distinct in count_distinct(ddf, doubt).items():
        s = summaries[c]
        if distinct >= DISTINCT_SHARE * s.n:
            reasons[c] = f"about {distinct / s.n:.0%} distinct values, {s.low:g} to {s.high:g}"
    return reasons


def check_column_traps(
    ddf: dd.DataFrame, roles: dict[str, str | None], features: Sequence[str], name: str
) -> str | None:
    """Refuse a continuous subset or group column; return the warning about id-like
    integer ``features`` (pass the default features only: those the user names are not
    doubted), or None.

    Costs one pass over the float role columns and the integer features not named like ids
    (none when there are none), and a count of distinct values of the few columns that need it.
    """
    floats = float_roles(ddf, roles)
    integers = integer_features(ddf, features)
    named = [c for c in integers if is_id_name(c)]
    scanned = list(dict.fromkeys([*floats.values(), *(c for c in integers if c not in named)]))
    summaries = scan(ddf, scanned) if scanned else {}
    refused = [(role, col) for role, col in floats.items() if summaries[col].fractional]
    if refused:
        role, col = refused[0]
        distinct = count_distinct(ddf, [col])[col]
        raise ValueError(continuous_role_error(role, col, summaries[col], distinct, name))
    reasons = {c: "named like an id" for c in named}
    reasons |= id_values(ddf, {c: summaries[c] for c in integers if c in summaries})
    ordered = {c: reasons[c] for c in integers if c in reasons}
    return id_like_warning(ordered) if ordered else None
