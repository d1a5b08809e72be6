"""The roles ``load_table`` gives columns, checked: label, subset, group, fold, features and
coordinates, each refused with the column named and the fix when it cannot be what was meant."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any, Literal

import dask.dataframe as dd
import pandas as pd

from .table import Task

Coordinates = Literal["exclude", "include"]

#: Column names that ``load_table`` takes for coordinates, compared in lower case without
#: "_", "-", "." or spaces (so ``X_Coord``, ``x-coord`` and ``coord_x`` all match ``xcoord``).
COORDINATE_NAMES = frozenset(
    {
        *("x", "y", "xcoord", "ycoord", "coordx", "coordy", "xcoordinate", "ycoordinate"),
        *("lon", "lng", "long", "longitude", "lat", "latitude", "easting", "northing"),
        *("row", "col"),
    }
)


def check_roles(
    source: Any,
    ddf: dd.DataFrame,
    roles: dict[str, str | None],
    exclude: Sequence[str],
    name: str,
) -> None:
    """Refuse duplicate column names, role columns (label, subset, group, fold) that are not
    columns of ``ddf`` or name one column twice or have the wrong type, and unknown ``exclude``
    names; ``source`` is what ``ddf`` was opened from, ``name`` names it in messages."""
    columns = list(ddf.columns)
    duplicated = sorted({c for c in columns if columns.count(c) > 1})
    if duplicated:
        raise ValueError(f"duplicate column names {duplicated} in {name}: rename them first")
    for role, col in roles.items():
        if col is not None and col not in columns:
            raise ValueError(
                f"{role} column {col!r} is not in {name}{did_you_mean(col, columns)}; "
                f"available columns: {columns}"
            )
    check_one_role(roles)
    check_known(exclude, columns, "exclude", name)
    check_role_types(source, ddf, roles)


def check_coords(
    coords: Sequence[str] | None, ddf: dd.DataFrame, roles: dict[str, str | None], name: str
) -> tuple[str, ...]:
    """The coordinate columns ``coords`` checked: column names of ``ddf``, numeric, distinct,
    with no other role; ``()`` when none are given."""
    if coords is None:
        return ()
    if isinstance(coords, str) or len(coords) < 1:
        raise ValueError(f"coords={coords!r}: need a list of coordinate columns, e.g. ['x', 'y']")
    coords = tuple(coords)
    check_known(coords, list(ddf.columns), "coords", name)
    if len(set(coords)) < len(coords):
        raise ValueError(f"coords={list(coords)} names a column twice")
    taken = {col: role for role, col in roles.items() if col in coords}
    if taken:
        raise ValueError(f"coords={list(coords)}: {taken} already have a role; a column has one")
    bad = [c for c in coords if not pd.api.types.is_numeric_dtype(ddf[c].dtype)]
    if bad:
        raise ValueError(
            f"coordinate columns {bad} are not numeric (dtypes "
            f"{[str(ddf[c].dtype) for c in bad]}): give projected coordinates as numbers"
        )
    return coords


def is_coordinate_name(column: Any) -> bool:
    """Whether ``column`` is named like a coordinate (see ``COORDINATE_NAMES``).

    Examples
    --------
    >>> [is_coordinate_name(c) for c in ["X_Coord", "Latitude", "B04", "row_id"]]
    [True, True, False, False]
    """
    return (
        isinstance(column, str)
        and "".join(ch for ch in column.lower() if ch not in "_-. ") in COORDINATE_NAMES
    )


def coordinates_warning(columns: Sequence[str]) -> str:
    """The warning that the default features leave out the coordinate columns ``columns``
    (given by ``load_table``, listed by ``soak_dask.describe_table``)."""
    return (
        f"coordinate columns {list(columns)} are left out of the features (a model that "
        "learns where rows are changes what same, other and all compare); to use them, pass "
        "coordinates='include' (soak: --coordinates include) or name them in features; "
        "exclude them to leave them out without this warning"
    )


def default_features(
    ddf: dd.DataFrame, used: set, exclude: Sequence[str], coordinates: Coordinates, name: str
) -> tuple[list[str], list[str]]:
    """The default features: numeric or boolean columns without a role, not excluded; and the
    coordinate columns left out of them."""
    numeric = [
        c
        for c in ddf.columns
        if c not in used
        and c not in exclude
        and (pd.api.types.is_numeric_dtype(ddf[c].dtype) or ddf[c].dtype == bool)
    ]
    skipped = [c for c in numeric if coordinates == "exclude" and is_coordinate_name(c)]
    features = [c for c in numeric if c not in skipped]
    if not features:
        also = (
            f"; the coordinate columns {skipped} are left out unless you pass "
            "coordinates='include' or name them in features"
            if skipped
            else ""
        )
        raise ValueError(
            f"no numeric feature columns in {name} besides the role columns{also}; "
            f"pass features=[...] (columns: {list(ddf.columns)})"
        )
    return features, skipped


def check_one_role(roles: dict[str, str | None]) -> None:
    """Refuse a column named for two roles (label, subset, group, fold)."""
    seen: dict[str, str] = {}
    for role, col in roles.items():
        if col is None:
            continue
        if col in seen:
            raise ValueError(
                f"column {col!r} is given as both the {seen[col]} and the {role}; a column has "
                f"one role: name another column for the {role}"
            )
        seen[col] = role


def did_you_mean(name: Any, columns: list) -> str:
    """`` (did you mean 'y'?)`` naming the columns close to ``name`` (ignoring case: 'Y' finds
    'y'), or ""."""
    by_lower: dict[str, list[str]] = {}
    for col in columns:
        by_lower.setdefault(str(col).lower(), []).append(str(col))
    near = difflib.get_close_matches(str(name).lower(), list(by_lower), n=3)
    close = [c for lower in near for c in by_lower[lower]]
    return f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""


def check_known(names: Sequence[str], columns: list, what: str, name: str) -> None:
    """Refuse names in ``what`` (features or exclude) that are not columns, with close
    matches."""
    if isinstance(names, str):
        raise ValueError(f"{what}={names!r}: need a list of column names, e.g. [{names!r}]")
    unknown = [c for c in names if c not in columns]
    if not unknown:
        return
    described = [f"{col!r}{did_you_mean(col, columns)}" for col in unknown]
    raise ValueError(
        f"{what} names columns that are not in {name}: {', '.join(described)}; "
        f"available columns: {columns}"
    )


def check_features(ddf: dd.DataFrame, features: list[str], used: set, name: str) -> None:
    """Refuse features that are not columns of ``ddf``, named twice, with a role (``used``) or
    not numeric."""
    check_known(features, list(ddf.columns), "features", name)
    twice = list(dict.fromkeys(c for c in features if features.count(c) > 1))
    if twice:
        raise ValueError(f"features names {twice} more than once; give each feature column once")
    roles = sorted(set(features) & used)
    if roles:
        raise ValueError(
            f"columns {roles} have a role (label/subset/group/fold) and cannot also be features"
        )
    bad = [c for c in features if not pd.api.types.is_numeric_dtype(ddf[c].dtype)]
    if bad:
        raise ValueError(
            f"feature columns {bad} are not numeric (dtypes "
            f"{[str(ddf[c].dtype) for c in bad]}); encode them as numbers or leave them out"
        )


def check_role_types(source: Any, ddf: dd.DataFrame, roles: dict[str, str | None]) -> None:
    """Refuse a fold column that is not numeric, and label, subset or group columns of a pandas
    frame that mix value types (Dask would turn 1 and '1' into one string; other sources are
    checked where their values are first counted, on the cluster)."""
    pandas = isinstance(source, pd.DataFrame)
    fold = roles["fold"]
    # A pandas frame's own dtype: Dask would show an object column of ints as strings.
    dtype = None if fold is None else (source if pandas else ddf)[fold].dtype
    if dtype is not None and (
        pd.api.types.is_bool_dtype(dtype) or not pd.api.types.is_numeric_dtype(dtype)
    ):
        raise ValueError(
            f"fold column {fold!r} has dtype {dtype}, not integers 1..K; cast it to integers "
            f"first (e.g. df[{fold!r}] = df[{fold!r}].astype(int))"
        )
    if pandas:
        for role in ("label", "subset", "group"):
            if roles[role] is not None:
                check_one_type(source[roles[role]], roles[role], role)


def check_one_type(values: pd.Series, column: str, role: str = "") -> None:
    """Refuse a column whose values mix Python types (e.g. 1 and '1'), naming some of them.

    Such values are merged or kept apart depending on the step (Dask casts them to strings,
    pandas groups them apart), so subsets, classes or groups would not be what the user meant.

    Parameters
    ----------
    values : Series
        The column, or its distinct values; only an object or categorical column can mix.
    column : str
        Its name, for the message.
    role : str
        "label", "subset" or "group", for the message.
    """
    if isinstance(values.dtype, pd.CategoricalDtype):
        values = pd.Series(values.dtype.categories)
    if values.dtype != object:
        return
    if not pd.api.types.infer_dtype(values, skipna=True).startswith("mixed"):
        return
    distinct = pd.Series(values.dropna().unique())
    clash = distinct[distinct.map(str).duplicated(keep=False)]
    types = distinct.map(lambda v: type(v).__name__)
    shown = clash if len(clash) else distinct[~types.duplicated()]
    examples = ", ".join(f"{v!r} ({type(v).__name__})" for v in shown.head(6))
    same = " that read the same" if len(clash) else ""
    raise ValueError(
        f"{role + ' ' if role else ''}column {column!r} mixes value types{same}: {examples}; "
        f"cast it to one type first (e.g. df[{column!r}] = df[{column!r}].astype(str))"
    )


def infer_task(ddf: dd.DataFrame, label: str, name: str) -> Task:
    """The task of ``label``, as scikit-learn's ``type_of_target`` calls it: a float column is
    a class label ("binary"/"multiclass") when all its values are whole numbers, else
    "continuous" (regression); any other dtype is a class label.

    Only a float column is read, in one pass over that column that returns two counts; its
    missing values are refused first, since a 0/1 label with a gap would otherwise be read as
    a float and taken for a quantity.
    """
    y = ddf[label]
    if not pd.api.types.is_float_dtype(y.dtype):
        return "classification"
    missing = y.isna()
    n_missing, n_fractional = dd.compute(missing.sum(), (~missing & (y % 1 != 0)).sum())
    if n_missing:
        raise ValueError(
            f"label column {label!r} has {int(n_missing)} missing values in {name}; drop those "
            f"rows first (e.g. df = df.dropna(subset=[{label!r}])), or fill them"
        )
    return "regression" if n_fractional else "classification"
