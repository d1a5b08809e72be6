"""Spatial validation: folds from coordinates (blocks, clusters, kNNDM, NNDM), fold
diagnostics and the area of applicability, computed block by block on the cluster."""
