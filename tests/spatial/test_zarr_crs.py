"""A raster saved as Zarr by rioxarray keeps its CRS when soak_dask reads it: the CRS variable
(CF's grid mapping) is read as a coordinate, so the outputs carry it and their maps' axes are in
the CRS's unit, as with a GeoTIFF."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from soak_dask.app.aoa_cli import open_input
from soak_dask.spatial.aoa_plot import axis_unit
from soak_dask.spatial.extract_raster import open_raster
from soak_dask.tables.crs import raster_crs

rioxarray = pytest.importorskip("rioxarray")


@pytest.fixture
def zarr_raster(tmp_path):
    grid = {
        "y": np.arange(5_181_000.0, 5_180_900.0, -10.0),
        "x": np.arange(493_200.0, 493_300, 10.0),
    }
    bands = {
        name: (("y", "x"), np.random.default_rng(i).random((10, 10)).astype("float32"))
        for i, name in enumerate(["DEM", "TWI"])
    }
    ds = xr.Dataset(bands, coords=grid).rio.write_crs("EPSG:26911")
    path = tmp_path / "raster.zarr"
    ds.to_zarr(path, mode="w", consolidated=False)
    return str(path)


def test_the_crs_is_a_coordinate_and_the_maps_unit_is_the_metre(zarr_raster):
    ds = open_input(zarr_raster, raster=True)
    assert "spatial_ref" in ds.coords and sorted(ds.data_vars) == ["DEM", "TWI"]
    assert axis_unit(ds[["DEM"]]) == "metre"  # a selection of bands keeps it
    assert "26911" in raster_crs(ds[["DEM"]])


def test_extract_reads_the_bands_not_the_crs(zarr_raster):
    ds, bands, _ = open_raster(zarr_raster, None, None)
    assert sorted(bands) == ["DEM", "TWI"] and "spatial_ref" in ds.coords
