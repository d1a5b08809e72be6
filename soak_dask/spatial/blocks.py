"""Groups from coordinates: square or hexagonal blocks, and k-means clusters.

Both add a column to the table, computed partition by partition from each row's
coordinates (nothing is gathered but the coordinates' extent, which is checked first), and
give it the table's group role (rows of a block stay in one fold, in every design) or subset
role (blocks as SOAK subsets).

Block ids are sparse int64s (column and row index packed, ``block_id``): whatever reads them
counts rows by their distinct values (groupby, factorize), never sizes an array by an id.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

import dask.dataframe as dd
import numpy as np
import pandas as pd

from ..dask_client import current_client
from ..option_checks import checked
from ..split.kmeans import FIT_ROWS, dask_kmeans, nearest_centre
from ..split.neighbours import coords_of, table_parts
from ..tables.crs import metric_only
from ..tables.spatial_record import blocks_record, clusters_record
from ..tables.table import SUBSET_COLUMN, Table

Role = Literal["group", "subset"]
#: Block indices are packed into one int64: ``column * 2**32 + (row + 2**31)``.
_HALF = 2**31
_SQRT3 = np.sqrt(3.0)


def block_id(ix: np.ndarray, iy: np.ndarray) -> np.ndarray:
    """One int64 per (column ``ix``, row ``iy``) block index pair (|index| < 2**31).

    Examples
    --------
    >>> block_id(np.array([0, 0, 1]), np.array([0, -1, 0])).tolist()
    [2147483648, 2147483647, 6442450944]
    """
    ix, iy = np.asarray(ix, dtype=np.float64), np.asarray(iy, dtype=np.float64)
    # (NaN fails the comparison too: a missing coordinate is never cast to a block)
    if not ((np.abs(ix) < _HALF).all() and (np.abs(iy) < _HALF).all()):
        raise ValueError(
            "block indices beyond ±2**31 or not finite: the coordinates are missing, infinite "
            "or more than 2**31 block sizes from the origin; use a larger size"
        )
    return ix.astype(np.int64) * 2**32 + (iy.astype(np.int64) + _HALF)


def square_index(x: np.ndarray, y: np.ndarray, size: float, origin: tuple) -> tuple:
    """The (column, row) index, as floats, of each point's square block: ``size`` wide
    from ``origin``."""
    return np.floor((x - origin[0]) / size), np.floor((y - origin[1]) / size)


def hex_index(x: np.ndarray, y: np.ndarray, size: float, origin: tuple) -> tuple:
    """The (column, row) index, as floats, of each point's hexagon (pointy-top, ``size``
    across its flats, one centre at ``origin``): the nearer of the two rectangular lattices of
    centres, even rows at ``(i size, 2j h)`` and odd rows at ``((i + 1/2) size, (2j + 1) h)``,
    h = size √3 / 2."""
    u, v = (x - origin[0]) / size, (y - origin[1]) / (size * _SQRT3)
    ia, ja = np.round(u), np.round(v)  # even rows
    ib, jb = np.floor(u) + 0.5, np.floor(v) + 0.5  # odd rows, centres at half steps
    da = (u - ia) ** 2 + 3 * (v - ja) ** 2
    db = (u - ib) ** 2 + 3 * (v - jb) ** 2
    odd = db < da
    return np.where(odd, ib - 0.5, ia), np.where(odd, 2 * (jb - 0.5) + 1, 2 * ja)


def square_blocks(x: np.ndarray, y: np.ndarray, size: float, origin: tuple) -> np.ndarray:
    """The square block of each point (``square_index``)."""
    return block_id(*square_index(x, y, size, origin))


def hex_blocks(x: np.ndarray, y: np.ndarray, size: float, origin: tuple) -> np.ndarray:
    """The hexagon of each point (``hex_index``)."""
    return block_id(*hex_index(x, y, size, origin))


_INDEX = {"square": square_index, "hex": hex_index}


def coordinate_extent(table: Table, caller: str) -> pd.DataFrame:
    """The smallest and largest value (``min``, ``max``) of each coordinate column of
    ``table``, from one pass over them; missing or infinite coordinates are refused, naming
    each column and its rows (such a row has no place: no block, cluster or distance)."""
    coords = list(coords_of(table, caller))
    values = table.data[coords]
    n_na, n_inf, low, high = dd.compute(
        values.isna().sum(), np.isinf(values).sum(), values.min(), values.max()
    )
    bad = n_na + n_inf
    if bad.any():
        named = ", ".join(
            f"{c!r} ({int(n_na[c]):,} missing, {int(n_inf[c]):,} infinite)"
            for c in coords
            if bad[c]
        )
        raise ValueError(
            f"{caller}: coordinate columns {named} have rows that are not finite; drop or fix "
            f"those rows first (e.g. df = df[np.isfinite(df[{coords}]).all(axis=1)])"
        )
    return pd.DataFrame({"min": low, "max": high}).astype(np.float64)


def check_block_size(size: float, shape: str, origin: tuple, extent: pd.DataFrame) -> None:
    """Refuse a block ``size`` the coordinates' ``extent`` (``coordinate_extent``) does not
    allow: so small that block indices leave ±2**31 (they would wrap into wrong blocks), or so
    large that every row falls in one block (nothing to hold out). Blocks are convex, so the
    extent's four corners decide both."""
    (x0, x1), (y0, y1) = extent.to_numpy()
    corners = np.array([x0, x1, x0, x1]), np.array([y0, y0, y1, y1])
    col, row = _INDEX[shape](*corners, size, origin)
    spans = f"x from {x0:g} to {x1:g}, y from {y0:g} to {y1:g}"
    side = max(x1 - x0, y1 - y0)
    if not ((np.abs(col) < _HALF - 2).all() and (np.abs(row) < _HALF - 2).all()):
        reach = np.abs(np.concatenate([corners[0] - origin[0], corners[1] - origin[1]])).max()
        least = reach / 2**30
        fix = (
            f"use a size of at least {least:.3g} (blocks {least:.3g} wide keep their "
            "indices within ±2**31)"
            if np.isfinite(least) and least > 0
            else "the coordinates are too large to divide: check the columns and origin"
        )
        raise ValueError(
            f"size={size!r}: blocks this small would be numbered beyond ±2**31 for the "
            f"coordinates' extent ({spans}, origin {origin}); {fix}"
        )
    if len(set(block_id(col, row).tolist())) == 1:
        fix = (
            f"use a size below {side:g}, the extent's longer side (e.g. {side / 5:.3g} "
            "gives about 5 blocks across)"
            if side > 0
            else "every row is at one point, so blocks cannot split them"
        )
        raise ValueError(
            f"size={size!r}: every row falls in one {shape} block ({spans}): the blocks "
            f"would hold nothing out; {fix}"
        )


def _block_column(
    part: pd.DataFrame, coords: tuple, size: float, shape: str, origin: tuple, column: str
) -> pd.DataFrame:
    x = part[coords[0]].to_numpy(dtype=np.float64)
    y = part[coords[1]].to_numpy(dtype=np.float64)
    blocks = (square_blocks if shape == "square" else hex_blocks)(x, y, size, origin)
    return part.assign(**{column: blocks})


def spatial_blocks(
    table: Table,
    size: float,
    *,
    shape: Literal["square", "hex"] = "square",
    origin: tuple[float, float] = (0.0, 0.0),
    column: str = "block",
    role: Role = "group",
) -> Table:
    """The table with a column of square or hexagonal blocks of its coordinates.

    Parameters
    ----------
    table : Table
        Loaded with ``coords=(x, y)`` (two coordinate columns, projected: same units on both).
    size : float
        Side of a square, or distance across the flats of a hexagon (between neighbouring
        hexagon centres), in coordinate units. One pass over the coordinates finds their
        extent first: missing or infinite coordinates are refused, and so is a size that
        would number blocks beyond ±2**31 or put every row in one block
        (``check_block_size``).
    shape : {"square", "hex"}
    origin : (float, float)
        A corner of a square block, or the centre of a hexagon: blocks do not depend on the
        data's extent, so every partition computes its rows' blocks alone.
    column : str
        Name of the new column (int64 block ids, see ``block_id``).
    role : {"group", "subset"}
        The role the column takes: group (a block's rows share a fold, in every design) or
        subset (blocks as SOAK subsets).

    Returns
    -------
    Table
        Its results record the blocks (``blocks``: the size, ``block_shape``,
        ``block_column``; ``soak_dask.tables.spatial_record``).

    Examples
    --------
    >>> import pandas as pd, soak_dask as sd
    >>> df = pd.DataFrame({"x": [5.0, 15.0, 12.0], "y": [5.0, 5.0, 25.0], "b": [1.0, 2.0, 3.0],
    ...                    "label": [0, 1, 0]})
    >>> t = sd.spatial_blocks(sd.load_table(df, label="label", coords=["x", "y"]), size=10)
    >>> t.group, t.data["block"].compute().tolist()
    ('block', [2147483648, 6442450944, 6442450946])
    """
    coords = coords_of(table, "spatial_blocks")
    metric_only(table.crs, "spatial_blocks")
    if len(coords) != 2:
        raise ValueError(f"spatial_blocks needs 2 coordinates (x, y); the table has {coords}")
    if isinstance(size, bool) or not isinstance(size, int | float) or not size > 0:
        raise ValueError(f"size={size!r}: need a positive block size in coordinate units")
    if shape not in ("square", "hex"):
        raise ValueError(f"shape={shape!r}: choose 'square' or 'hex'")
    if len(origin) != 2 or not np.isfinite(np.asarray(origin, dtype=np.float64)).all():
        raise ValueError(f"origin={origin!r}: need (x, y), two finite numbers")
    _check_column(table, column)
    origin = tuple(map(float, origin))
    check_block_size(float(size), shape, origin, coordinate_extent(table, "spatial_blocks"))
    # An explicit meta: Dask then infers nothing by running the function on made-up rows.
    meta = table.data._meta.assign(**{column: np.int64(0)})
    data = table.data.map_partitions(
        _block_column, coords, float(size), shape, origin, column, meta=meta
    )
    made = blocks_record(size, shape, origin, column)
    return with_role(replace(table, spatial={**table.spatial, **made}), data, column, role)


@checked("run", only=("seed",))
def spatial_clusters(
    table: Table,
    n_clusters: int,
    *,
    seed: int = 1,
    column: str = "cluster",
    role: Role = "group",
    sample: int = FIT_ROWS,
    max_iter: int = 10,
    client: Any = None,
) -> Table:
    """The table with a column of k-means clusters of its coordinates.

    The same seed gives the same clusters whatever the partitioning (``soak_dask.spatial.
    kmeans``: scikit-learn's k-means on a seeded sample of ``sample`` points chosen by hash,
    refined by up to ``max_iter`` Lloyd passes over every partition). Labels 0..n_clusters-1
    are each row's nearest centre, computed partition by partition.

    Parameters
    ----------
    table : Table
        Loaded with ``coords=``.
    n_clusters : int
    seed : int
    column : str
        Name of the new column.
    role : {"group", "subset"}
        As for ``spatial_blocks``.
    sample, max_iter : int
        Points of the starting fit; Lloyd passes over the table.
    client : distributed.Client, optional

    Returns
    -------
    Table
        Its results record the clusters (``clusters``: K, ``cluster_seed``,
        ``cluster_column``; ``soak_dask.tables.spatial_record``).
    """
    coords = coords_of(table, "spatial_clusters")
    metric_only(table.crs, "spatial_clusters")
    if (
        isinstance(n_clusters, bool)
        or not isinstance(n_clusters, int | np.integer)
        or n_clusters < 2
    ):
        raise ValueError(f"n_clusters={n_clusters!r}: need an integer of at least 2")
    _check_column(table, column)
    coordinate_extent(table, "spatial_clusters")  # a missing coordinate has no nearest centre
    client = current_client() if client is None else client
    centres = dask_kmeans(
        table_parts(table.data, coords), int(n_clusters), seed, sample, max_iter, client
    )
    meta = table.data._meta.assign(**{column: np.int64(0)})
    data = table.data.map_partitions(_cluster_column, coords, centres, column, meta=meta)
    made = clusters_record(n_clusters, seed, column)
    return with_role(replace(table, spatial={**table.spatial, **made}), data, column, role)


def _cluster_column(
    part: pd.DataFrame, coords: tuple, centres: np.ndarray, column: str
) -> pd.DataFrame:
    points = part[list(coords)].to_numpy(dtype=np.float64)
    return part.assign(**{column: nearest_centre(points, centres)})


def _check_column(table: Table, column: str) -> None:
    if not isinstance(column, str) or not column:
        raise ValueError(f"column={column!r}: need a column name")
    if column in table.data.columns:
        raise ValueError(f"column {column!r} is already in the table: name another column=")


def with_role(table: Table, data: Any, column: str, role: Role) -> Table:
    """``table`` over ``data``, whose new column ``column`` takes the group or subset role."""
    if role == "group":
        return replace(table, data=data, group=column, fold_counts=None, files=None)
    if role == "subset":
        if not table.user_subset:
            data = data.drop(columns=SUBSET_COLUMN)
        return replace(
            table, data=data, subset=column, user_subset=True, fold_counts=None, files=None
        )
    raise ValueError(f"role={role!r}: choose 'group' or 'subset'")
