"""Where soak_dask reads and writes: locations (local paths and fsspec URLs) and the checks
before writing there, and the one rule for output directories."""
