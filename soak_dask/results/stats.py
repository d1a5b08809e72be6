"""Paired t-tests and mean ± SD summaries of SOAK and evaluate results, in one namespace.

Every function takes a results ``xarray.Dataset`` and returns a tidy ``pandas.DataFrame``, one
row per statistic, ready to print, filter or plot. SOAK results (``soak()``: dims ``learner``,
``test_subset``, ``fold``, ``train_type``) get `pvalues` and `summary`; evaluate results
(``evaluate()``: dims ``learner``, ``repeat``, ``fold``) get `evaluation_summary` and `by_fold`
(their learner comparisons are ``soak_dask.results.comparisons.compare``).

The functions live in modules of one job each, re-exported here:

- ``soak_dask.results.kinds``: which kind of result a Dataset is and which variables are
  measures (`validate_results`, `validate_evaluation`, `is_evaluation`, `no_tests_reason`);
- ``soak_dask.results.paired_tests``: SOAK's paired tests (`pvalues`, `adjust_pvalues`);
- ``soak_dask.results.summaries``: mean ± SD summaries (`summary`, `evaluation_summary`,
  `by_fold`, `timings`);
- ``soak_dask.results.text``: what the commands print (`results_text`, `pvalues_text`,
  `evaluation_text`, `text_table`);
- ``soak_dask.results.verdicts``: the one wording of every verdict (`with_verdicts`);
- ``soak_dask.results.shift``: shift summaries of SOAK and transfer results (`shift_summary`).
"""

from __future__ import annotations

from ..schema import EVALUATION_DIMS, RESULT_DIMS, TRAIN_TYPES
from .kinds import (
    is_evaluation,
    no_tests_reason,
    unequal_subsets,
    validate_evaluation,
    validate_results,
)
from .paired_tests import ADJUST_METHODS, CORRECTED_COLUMNS, PVALUE_COLUMNS, adjust_pvalues, pvalues
from .shift import shift_summary
from .summaries import (
    EVALUATION_SUMMARY_COLUMNS,
    SUMMARY_COLUMNS,
    by_fold,
    evaluation_summary,
    summary,
    timings,
)
from .text import (
    evaluation_text,
    nesting_lines,
    prior_correction_text,
    pvalues_text,
    results_text,
    text_table,
)
from .verdicts import with_verdicts

__all__ = [
    "ADJUST_METHODS",
    "CORRECTED_COLUMNS",
    "EVALUATION_DIMS",
    "EVALUATION_SUMMARY_COLUMNS",
    "PVALUE_COLUMNS",
    "RESULT_DIMS",
    "SUMMARY_COLUMNS",
    "TRAIN_TYPES",
    "adjust_pvalues",
    "by_fold",
    "evaluation_summary",
    "evaluation_text",
    "is_evaluation",
    "nesting_lines",
    "no_tests_reason",
    "prior_correction_text",
    "pvalues",
    "pvalues_text",
    "results_text",
    "shift_summary",
    "summary",
    "text_table",
    "timings",
    "unequal_subsets",
    "validate_evaluation",
    "validate_results",
    "with_verdicts",
]
