"""Splitting: folds assigned on the cluster, and the plans of which train sets to fit."""
