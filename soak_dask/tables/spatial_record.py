"""What a result records of the spatial groups it was run with, and how its text and report
say it: ``spatial_blocks`` records ``blocks`` (the size), ``block_shape``, ``block_column``
(and ``block_origin`` where not (0, 0)); ``spatial_clusters`` records ``clusters`` (K),
``cluster_seed`` and ``cluster_column``. They travel with the table's roles
(``Table.spatial``) into every result's attrs and its store, and a checkpoint of a run with
other blocks is another run's.

Examples
--------
>>> attrs = {"group": "block", **blocks_record(400.0, "square", (0.0, 0.0), "block")}
>>> attrs
{'group': 'block', 'blocks': 400.0, 'block_shape': 'square', 'block_column': 'block'}
>>> spatial_group_text({**attrs, "crs": "EPSG:26911"}, "block")
'square blocks of 400 m (--blocks 400)'
>>> spatial_group_text({"group": "cluster", **clusters_record(8, 1, "cluster")}, "cluster")
'8 k-means clusters of the coordinates, seed 1 (--clusters 8)'
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from .crs import unit_symbol

#: How a hexagon's size reads (the distance across its flats, between neighbouring centres).
_SHAPES = {"square": "square blocks of {size}", "hex": "hexagonal blocks {size} across"}


def blocks_record(size: float, shape: str, origin: tuple[float, float], column: str) -> dict:
    """The attrs ``spatial_blocks`` records of its blocks (the origin only where not 0, 0)."""
    record: dict[str, Any] = {"blocks": float(size), "block_shape": shape, "block_column": column}
    if any(origin):
        record["block_origin"] = [float(v) for v in origin]
    return record


def clusters_record(n_clusters: int, seed: int, column: str) -> dict:
    """The attrs ``spatial_clusters`` records of its clusters."""
    return {"clusters": int(n_clusters), "cluster_seed": int(seed), "cluster_column": column}


def spatial_group_text(attrs: Mapping[str, Any], column: Any) -> str:
    """How ``column`` (a result's group or subset column) was made from the coordinates,
    with the flag that makes it again; "" where it was not (or the result predates the
    record). The size is in the CRS's unit where the attrs name a CRS."""
    if not isinstance(column, str) or not column:  # no role, or attrs read back as arrays
        return ""
    if attrs.get("block_column") == column and attrs.get("blocks") not in (None, ""):
        size = float(attrs["blocks"])
        shape = str(attrs.get("block_shape") or "square")
        made = _SHAPES.get(shape, shape + " blocks of {size}").format(size=_size(size, attrs))
        flag = f"--blocks {size:g}" + ("" if shape == "square" else f" --block-shape {shape}")
        origin = attrs.get("block_origin")
        where = f", origin ({', '.join(map(str, origin))})" if origin else ""
        return f"{made}{where} ({flag})"
    if attrs.get("cluster_column") == column and attrs.get("clusters") not in (None, ""):
        k = int(attrs["clusters"])
        seed = attrs.get("cluster_seed")
        return f"{k} k-means clusters of the coordinates, seed {seed} (--clusters {k})"
    return ""


def _size(size: float, attrs: Mapping[str, Any]) -> str:
    """``size`` with the unit of the attrs' CRS ("400 m"), else in coordinate units."""
    crs = attrs.get("crs") or None
    unit = None if crs is None else unit_symbol(str(crs))
    return f"{size:g} {unit}" if unit else f"{size:g} coordinate units"


def made_from_coordinates(attrs: Mapping[str, Any], column: Any) -> str:
    """A report's words after a role column's name: "; square blocks of 400 m (--blocks
    400)" where the column was made from the coordinates, else "" (HTML-escaped)."""
    text = spatial_group_text(attrs, column)
    return f"; {html.escape(text)}" if text else ""


def fold_file_text(attrs: Mapping[str, Any]) -> str:
    """Where a result's fold column came from, where a fold file gave it ("column
    'knndm_fold' of the fold file knndm/folds.parquet"); "" otherwise."""
    if not attrs.get("fold_file") or not attrs.get("fold"):
        return ""
    return f"column {attrs['fold']!r} of the fold file {attrs['fold_file']}"
