"""The ``Dataset.soak`` accessor: statistics and figures on every kind of result.

One accessor serves every kind (``ds.soak.kind``: ``attrs["design"]``): ``summary()`` and
``pvalues()`` are those of the result's registered kind (``soak_dask.results.registry``:
SOAK's summary and tests; evaluate's mean ± SD; a transfer matrix's or a subset search's
paired tests; a split-sensitivity's per-ratio summary; a sampling comparison's MAI table);
``by_fold()`` and ``compare()`` belong to evaluate results, and each says which to call on the
other kinds. ``import soak_dask`` registers the accessor, whose first use registers the
built-in kinds (``soak_dask.result_kinds``).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import xarray as xr

from . import comparisons, summaries
from .registry import kind_of, result_kind


class SoakAccessor:
    """``Dataset.soak`` (registered by ``import soak_dask``): methods on a results Dataset,
    ``ds.soak.summary()``, ``ds.soak.pvalues()`` (SOAK), ``ds.soak.by_fold()`` and
    ``ds.soak.compare(a, b, measure)`` (evaluate)."""

    def __init__(self, ds: xr.Dataset) -> None:
        self._ds = ds

    @property
    def kind(self) -> str:
        """The kind of result: ``soak``, ``evaluate``, ``transfer``, ``search_subsets``,
        ``split_sensitivity``, ``compare_sampling`` or a kind registered since
        (``soak_dask.results.registry.result_kind``)."""
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
        ``search_pvalues`` (greedy against same and all); both take ``alpha`` and ``margin``
        and refuse SOAK's options. Any kind: its registered ``tests``
        (``soak_dask.results.registry``); a kind without says what to call instead.
        """
        kind = kind_of(self._ds)
        if kind.tests is None:
            raise ValueError(f"{kind.name} results hold no paired test; {kind.instead}")
        options = dict(kwargs)  # only the options given: each kind's tests take their own
        if corrected:
            options["corrected"] = corrected
        if adjust is not None:
            options["adjust"] = adjust
        return kind.tests(self._ds, measures, **options)

    def summary(self, measures: Any = None) -> pd.DataFrame:
        """Mean ± SD over folds.

        SOAK results: per learner × test subset × train type, with the row-weighted mean and
        test rows (``soak_dask.results.stats.summary``). Evaluate results: per learner ×
        measure, with the test split's interval (``soak_dask.results.stats.evaluation_summary``).
        Other kinds: a transfer matrix's ``transfer_pvalues`` (each cell's mean and test), a
        subset search's ``search_pvalues``, ``split_sensitivity_summary``, ``mai_table``; a
        kind registered since, its ``summary`` (``soak_dask.results.registry``).
        """
        return kind_of(self._ds).summary(self._ds, measures)

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
