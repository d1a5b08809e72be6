"""Spatial validation: folds from coordinates (blocks, clusters, NNDM; kNNDM's folds are a
design of ``split/``, ``soak_dask.split.knndm``), fold diagnostics, kNNDM's plot and the area
of applicability, computed block by block on the cluster."""
