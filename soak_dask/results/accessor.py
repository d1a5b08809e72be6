"""The ``Dataset.soak`` accessor: statistics and figures on SOAK and evaluate results.

One accessor serves both kinds of result: ``summary()`` dispatches on
``ds.attrs["design"] == "evaluate"``; ``pvalues()`` belongs to SOAK results, ``by_fold()`` and
``compare()`` to evaluate results, and each says which to call on the other kind.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import xarray as xr

from . import comparisons, stats


@xr.register_dataset_accessor("soak")
class SoakAccessor:
    """Methods on a results Dataset: ``ds.soak.summary()``, ``ds.soak.pvalues()`` (SOAK),
    ``ds.soak.by_fold()`` and ``ds.soak.compare(a, b, measure)`` (evaluate)."""

    def __init__(self, ds: xr.Dataset) -> None:
        self._ds = ds

    def pvalues(
        self,
        measures: Any = None,
        *,
        corrected: bool = False,
        adjust: str | None = None,
        **kwargs: Any,
    ) -> pd.DataFrame:
        """Paired t-tests of other and all vs same; see ``soak_dask.results.stats.pvalues``.

        ``corrected=True`` (or ``method="corrected"``, ``"bayesian"``) adds the corrected
        resampled t-test (Nadeau and Bengio 2003) and ``adjust="holm"`` or ``"bh"`` a
        ``p_adjusted`` column. Results of plain K-fold CV (one
        subset) have nothing to compare: a warning says so and the frame is empty; use
        ``summary()``. Evaluate results compare learners instead: use ``compare()``.
        """
        return stats.pvalues(self._ds, measures, corrected=corrected, adjust=adjust, **kwargs)

    def summary(self, measures: Any = None) -> pd.DataFrame:
        """Mean ± SD over folds.

        SOAK results: per learner × test subset × train type, with the row-weighted mean and
        test rows (``soak_dask.results.stats.summary``). Evaluate results: per learner ×
        measure, with the test split's interval (``soak_dask.results.stats.evaluation_summary``).
        """
        if stats.is_evaluation(self._ds):
            return stats.evaluation_summary(self._ds, measures)
        return stats.summary(self._ds, measures)

    def by_fold(self, measures: Any = None) -> pd.DataFrame:
        """Every existing (learner, repeat, fold) cell of an evaluate result; see
        ``soak_dask.results.stats.by_fold``."""
        return stats.by_fold(self._ds, measures)

    def compare(
        self, a: str, b: str, measure: Any = None, method: str | None = None, **kwargs: Any
    ) -> pd.DataFrame:
        """Learner `a` against `b` over the same cells of an evaluate result, with the
        design's recommended test or `method`, and a 95 % interval of the mean difference;
        see ``soak_dask.results.comparisons.compare``."""
        return comparisons.compare(self._ds, a, b, measure, method, **kwargs)

    def plot(self, measure: str = "error", learners: Any = None, **kwargs: Any) -> Any:
        """Paper-style matplotlib Figure of each fold; see ``soak_dask.results.plot.plot_soak``."""
        from .plot import plot_soak  # matplotlib is imported only when a figure is drawn

        return plot_soak(self._ds, measure, learners, **kwargs)

    def plot_learners(self, measure: str = "error", learners: Any = None, **kwargs: Any) -> Any:
        """matplotlib Figure comparing the learners (``soak_dask.results.plot.plot_learners``)."""
        from .plot import plot_learners

        return plot_learners(self._ds, measure, learners, **kwargs)
