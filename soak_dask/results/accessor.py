"""The ``Dataset.soak`` accessor: statistics and figures on SOAK results."""

from __future__ import annotations

from typing import Any

import pandas as pd
import xarray as xr

from . import stats


@xr.register_dataset_accessor("soak")
class SoakAccessor:
    """SOAK methods on a results Dataset: ``ds.soak.pvalues()``, ``ds.soak.summary()``."""

    def __init__(self, ds: xr.Dataset) -> None:
        self._ds = ds

    def pvalues(self, measures: Any = None, **kwargs: Any) -> pd.DataFrame:
        """Paired t-tests of other and all vs same; see ``soak_dask.results.stats.pvalues``.

        Results of plain K-fold CV (one subset) have nothing to compare: a warning says so and
        the frame is empty; use ``summary()``.
        """
        return stats.pvalues(self._ds, measures, **kwargs)

    def summary(self, measures: Any = None) -> pd.DataFrame:
        """Mean ± SD, row-weighted mean and test rows per learner × test subset × train type;
        see ``soak_dask.results.stats.summary``."""
        return stats.summary(self._ds, measures)

    def plot(self, measure: str = "error", learners: Any = None, **kwargs: Any) -> Any:
        """Paper-style matplotlib Figure of each fold; see ``soak_dask.results.plot.plot_soak``."""
        from .plot import plot_soak  # matplotlib is imported only when a figure is drawn

        return plot_soak(self._ds, measure, learners, **kwargs)

    def plot_learners(self, measure: str = "error", learners: Any = None, **kwargs: Any) -> Any:
        """matplotlib Figure comparing the learners (``soak_dask.results.plot.plot_learners``)."""
        from .plot import plot_learners

        return plot_learners(self._ds, measure, learners, **kwargs)
