"""Analysing results: the results store, tests and summaries, plots, the report and the
Dataset accessor."""

# Importing any module of soak_dask.results imports this first: whoever reads, writes or
# summarises results gets the ``Dataset.soak`` accessor (``soak_dask.__getattr__`` imports this
# package with any public name, so ``sd.soak(...).soak.summary()`` works too).
from . import accessor  # noqa: F401  (registers the Dataset.soak accessor)
