"""Spatial validation: folds from coordinates, kNNDM, fold diagnostics and the area of
applicability (``aoa``), on tables and rasters larger than memory."""
