"""Benchmarks of soak_dask (not part of the test suite): run ``python -m benchmarks.run_all``."""
