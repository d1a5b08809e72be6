"""Analysing results: the results store, tests and summaries, plots, the report and the
Dataset accessor (``Dataset.soak``, registered by ``import soak_dask``)."""
