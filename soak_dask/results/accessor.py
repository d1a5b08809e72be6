"""The ``Dataset.soak`` accessor: statistics and figures on every kind of result.

One accessor serves every kind (``ds.soak.kind``: ``attrs["design"]``): ``summary()`` and
``pvalues()`` dispatch on it (SOAK's summary and tests; evaluate's mean ± SD; a transfer
matrix's or a subset search's paired tests; a split-sensitivity's per-ratio summary; a sampling
comparison's MAI table); ``by_fold()`` and ``compare()`` belong to evaluate results, and each
says which to call on the other kinds.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import xarray as xr

from . import comparisons, kinds, paired_tests, summaries
from .store import result_kind


def _transfer_tests(ds: xr.Dataset, measures: Any) -> pd.DataFrame:
    from ..pooling.matrix import transfer_pvalues

    return transfer_pvalues(ds, measures if isinstance(measures, str | None) else measures[0])


def _search_tests(ds: xr.Dataset, measures: Any) -> pd.DataFrame:
    from ..pooling.search import search_pvalues

    return search_pvalues(ds)


def _sensitivity_summary(ds: xr.Dataset, measures: Any) -> pd.DataFrame:
    from ..diagnose.sensitivity import split_sensitivity_summary

    return split_sensitivity_summary(ds)


def _mai(ds: xr.Dataset, measures: Any) -> pd.DataFrame:
    from ..diagnose.mai import mai_table

    return mai_table({str(ds.attrs.get("source", "results")): ds})


#: The summary of each kind of result other than SOAK's and evaluate's.
_SUMMARIES = {
    "transfer": _transfer_tests,
    "search_subsets": _search_tests,
    "split_sensitivity": _sensitivity_summary,
    "compare_sampling": _mai,
}
#: The paired tests of each kind of result other than SOAK's.
_TESTS = {"transfer": _transfer_tests, "search_subsets": _search_tests}


class SoakAccessor:
    """``Dataset.soak`` (registered by ``import soak_dask``): methods on a results Dataset,
    ``ds.soak.summary()``, ``ds.soak.pvalues()`` (SOAK), ``ds.soak.by_fold()`` and
    ``ds.soak.compare(a, b, measure)`` (evaluate)."""

    def __init__(self, ds: xr.Dataset) -> None:
        self._ds = ds

    @property
    def kind(self) -> str:
        """The kind of result: ``soak``, ``evaluate``, ``transfer``, ``search_subsets``,
        ``split_sensitivity`` or ``compare_sampling`` (``soak_dask.results.store.result_kind``)."""
        return result_kind(self._ds)

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
        ``summary()``. Evaluate results compare learners instead: use ``compare()``. A transfer
        matrix: ``transfer_pvalues`` (each cell against the diagonal); a subset search:
        ``search_pvalues`` (greedy against same and all).
        """
        if self.kind in _TESTS:
            return _TESTS[self.kind](self._ds, measures)
        if self.kind in _SUMMARIES:
            raise ValueError(
                f"{self.kind} results hold no paired test; ds.soak.summary() summarises them"
            )
        return paired_tests.pvalues(
            self._ds, measures, corrected=corrected, adjust=adjust, **kwargs
        )

    def summary(self, measures: Any = None) -> pd.DataFrame:
        """Mean ± SD over folds.

        SOAK results: per learner × test subset × train type, with the row-weighted mean and
        test rows (``soak_dask.results.stats.summary``). Evaluate results: per learner ×
        measure, with the test split's interval (``soak_dask.results.stats.evaluation_summary``).
        Other kinds: a transfer matrix's ``transfer_pvalues`` (each cell's mean and test), a
        subset search's ``search_pvalues``, ``split_sensitivity_summary``, ``mai_table``.
        """
        if self.kind in _SUMMARIES:
            return _SUMMARIES[self.kind](self._ds, measures)
        if kinds.is_evaluation(self._ds):
            return summaries.evaluation_summary(self._ds, measures)
        return summaries.summary(self._ds, measures)

    def by_fold(self, measures: Any = None) -> pd.DataFrame:
        """Every existing (learner, repeat, fold) cell of an evaluate result; see
        ``soak_dask.results.stats.by_fold``."""
        return summaries.by_fold(self._ds, measures)

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
