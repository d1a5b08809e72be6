"""Diagnostics of train/test splits: split-ratio sensitivity, balanced sampling."""
