"""Reading tables: Parquet, CSV, Zarr and GeoTIFF rasters into a `Table`, with their checks
and fingerprints."""
