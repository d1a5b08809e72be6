"""The coordinate reference system of a table's coordinate columns: part of the coordinates role.

A table's CRS comes from where its rows were read -- a GeoParquet file's ``geo`` metadata, the
``soak_dask.crs`` key that ``soak extract`` writes, a raster's ``spatial_ref`` (rioxarray) --
or is given (``load_table(coords=..., crs="EPSG:32632")``, ``--crs``); two that differ are
refused. It is kept as text (an authority code such as ``EPSG:26911`` where the CRS has one,
else WKT) so a ``Table`` stays small and picklable; pyproj (installed with rioxarray,
``soak_dask[raster]``) reads it where a unit or the kind of CRS is needed, and without pyproj
those checks are skipped, never guessed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq

if TYPE_CHECKING:
    import xarray as xr

__all__ = [
    "CRS_KEY",
    "as_crs",
    "crs_name",
    "crs_text",
    "crs_unit",
    "geoparquet_crs",
    "metric_only",
    "parquet_crs",
    "raster_crs",
    "source_crs",
    "unit_symbol",
]

#: The Parquet metadata key naming the CRS of a table's coordinate columns (``soak extract``
#: writes it: its points in the raster's CRS), for files that are not GeoParquet.
CRS_KEY = b"soak_dask.crs"


def as_crs(value: Any, what: str = "crs") -> Any:
    """``value`` (``"EPSG:4326"``, an EPSG code, WKT, PROJJSON, a pyproj CRS) as a pyproj CRS;
    a value pyproj does not know is refused, naming `what`. None without pyproj."""
    try:
        from pyproj import CRS
        from pyproj.exceptions import CRSError
    except ImportError:
        return None
    try:
        return CRS.from_json_dict(value) if isinstance(value, dict) else CRS.from_user_input(value)
    except (CRSError, TypeError) as err:
        raise ValueError(
            f"{what}={value!r} is not a coordinate reference system pyproj knows: give an "
            "authority code such as 'EPSG:32632' (or WKT)"
        ) from err


def crs_name(crs: Any) -> str:
    """``EPSG:26911`` where the pyproj CRS has an authority code, else its name."""
    code = crs.to_authority()
    return ":".join(code) if code else repr(crs.name)


def crs_text(value: Any, what: str = "crs") -> str | None:
    """The text a ``Table`` keeps of a CRS: its authority code, else its WKT (None for None;
    without pyproj, ``value`` as given, if text)."""
    if value is None:
        return None
    crs = as_crs(value, what)
    if crs is None:
        return value if isinstance(value, str) else None
    code = crs.to_authority()
    return ":".join(code) if code else crs.to_wkt()


def crs_unit(crs: Any) -> str | None:
    """The unit of the pyproj CRS's first axis ("metre", "US survey foot", "degree"), or None
    where it is not known."""
    axes = [] if crs is None else crs.axis_info
    if not axes or not axes[0].unit_name or axes[0].unit_name == "unknown":
        return None
    return str(axes[0].unit_name)


#: How to leave degrees: metric_only's default fix.
PROJECT_TABLE = (
    "project the table to a CRS in metres (e.g. its UTM zone, with pyproj or soak extract's "
    "--crs) and load it again"
)


def metric_only(crs_value: Any, what: str, fix: str = PROJECT_TABLE) -> None:
    """Refuse geographic coordinates (degrees of longitude and latitude) for `what`, which
    measures Euclidean distances or squares in coordinate units: a degree of longitude is
    shorter than one of latitude away from the equator. ``crs_value``: a CRS as text (a
    Table's), a pyproj CRS, or None (unknown: nothing is refused); ``fix`` ends the message."""
    crs = None if crs_value is None else as_crs(crs_value)
    if crs is not None and crs.is_geographic:
        raise ValueError(
            f"{what}: the coordinates are longitude and latitude in degrees ({crs_name(crs)}), "
            "and its distances would be in degrees, which are not the same length east and "
            f"north: {fix}"
        )


def geoparquet_crs(metadata: dict[bytes, bytes]) -> Any:
    """The pyproj CRS named by a Parquet file's schema ``metadata``: GeoParquet's primary
    geometry column's ``crs`` (OGC:CRS84 when the key is absent; None for ``"crs": null``), or
    the `CRS_KEY` that ``soak extract`` writes; None for a plain Parquet file."""
    if CRS_KEY in metadata:
        return as_crs(metadata[CRS_KEY].decode(), CRS_KEY.decode())
    if b"geo" not in metadata:
        return None
    geo = json.loads(metadata[b"geo"])
    column = geo.get("columns", {}).get(geo.get("primary_column"), {})
    crs = column.get("crs", "OGC:CRS84")
    return None if crs is None else as_crs(crs, "the GeoParquet crs")


def parquet_crs(fs: Any, path: str) -> Any:
    """The CRS of the Parquet file ``path`` on ``fs`` (see `geoparquet_crs`)."""
    with fs.open(path, "rb") as f:
        return geoparquet_crs(pq.read_schema(f).metadata or {})


def source_crs(
    files: Any, given: Any, coords: tuple[str, ...], name: str, source: Any = None
) -> str | None:
    """The CRS text of a table's coordinates: ``given`` (``load_table(crs=)``), else the one
    its Parquet files name (GeoParquet ``geo``, `CRS_KEY`) or an in-memory ``source`` frame
    holds in its attrs under `CRS_KEY` (``soak_dask.extract``'s result); two that differ are
    refused, and so is a CRS given without coordinate columns. None where neither says."""
    if given is not None and not coords:
        raise ValueError(
            f"crs={given!r} names the CRS of the coordinate columns, and {name} was loaded "
            "without coords=: give coords=(x, y) too"
        )
    stated = crs_text(given)
    found = None
    if coords and files is not None and files.kind == "parquet" and files.paths:
        read = parquet_crs(files.fs, files.paths[0])
        found = None if read is None else crs_text(read)
    attrs = getattr(source, "attrs", None)
    if coords and found is None and isinstance(attrs, dict) and attrs.get(CRS_KEY.decode()):
        found = crs_text(attrs[CRS_KEY.decode()])
    if stated is not None and found is not None and as_crs(stated) != as_crs(found):
        raise ValueError(
            f"crs={given!r}, and {name} says its coordinates are in {found}: leave crs out "
            "to use the file's, or reproject the file"
        )
    return stated if stated is not None else found


#: Symbols of the units pyproj names, for printouts ("442 m").
_SYMBOLS = {"metre": "m", "kilometre": "km", "foot": "ft", "US survey foot": "US survey ft"}


def unit_symbol(crs_value: str | None) -> str | None:
    """The symbol of the unit of a table's CRS text (``"m"`` for metres), or None where the
    CRS, its unit or pyproj is not known."""
    crs = None if crs_value is None else as_crs(crs_value)
    unit = crs_unit(crs)
    return None if unit is None else _SYMBOLS.get(unit, unit)


def raster_crs(ds: xr.Dataset | xr.DataArray, variables: Sequence[str] = ()) -> str | None:
    """The CRS of ``variables`` of a raster, as WKT: from their grid mapping (CF's
    ``grid_mapping`` attribute naming a variable whose ``crs_wkt`` or ``spatial_ref`` attribute
    holds it, as rioxarray writes it), else from a ``spatial_ref`` coordinate; None where the
    raster states none (no ``variables``: the ``spatial_ref`` coordinate). Variables on
    different CRSs are refused, naming them."""
    found: dict[str, str] = {}
    for var in variables or [None]:
        attrs = {} if var is None else {**ds[var].encoding, **ds[var].attrs}
        source = ds.coords.get(attrs.get("grid_mapping", "spatial_ref"))
        if source is None and hasattr(ds, "data_vars"):  # a Dataset's data variable
            source = ds.variables.get(attrs.get("grid_mapping", "spatial_ref"))
        if source is not None:
            wkt = source.attrs.get("crs_wkt") or source.attrs.get("spatial_ref")
            if wkt:
                found[str(var)] = str(wkt)
    if len(set(found.values())) > 1:
        listed = "; ".join(f"{var}: {_shortened(wkt)}" for var, wkt in found.items())
        raise ValueError(
            f"the raster's variables are on different CRSs ({listed}); reproject them onto one "
            "grid (rioxarray's reproject_match) before reading the table"
        )
    return next(iter(found.values()), None)


def _shortened(text: str, width: int = 60) -> str:
    """``text`` cut to ``width`` characters for a message (a WKT runs to a page)."""
    return text if len(text) <= width else f"{text[:width]}..."
