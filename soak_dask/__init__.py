"""SOAK: Same/Other/All K-fold cross-validation on Dask.

Does a model trained on some subsets of the data (regions, years, images) predict another
subset, and does pooling subsets help? See ``soak`` and ``load_table``.
"""

from .diagnose.mai import compare_sampling, mai_summary, mai_table
from .diagnose.sensitivity import (
    split_sensitivity,
    split_sensitivity_summary,
    split_sensitivity_trials,
)
from .learn.builtin import BUILTIN as BUILTIN_LEARNERS
from .learn.builtin import builtin_learner
from .learn.calibration import PlattCalibrated
from .learn.lasso import LassoCVClassifier, LassoCVRegressor
from .learn.model_dir import check_models_dir
from .learn.priors import PriorCorrected
from .learn.pruned_tree import PrunedTreeClassifier, PrunedTreeRegressor
from .learn.tuning import Search
from .pooling import search_subsets, transfer
from .results import accessor as _accessor  # noqa: F401  (registers the Dataset.soak accessor)
from .results.comparisons import compare
from .results.stats import adjust_pvalues, by_fold, evaluation_summary, pvalues, summary
from .results.store import from_dataframe, load_results, open_results, save_results
from .run.cost import PlanCost, PlanCosts, dry_run
from .run.engine import soak
from .run.evaluate import evaluate
from .run.run_design import run_design
from .schema import TRAIN_TYPES
from .spatial.aoa import aoa
from .spatial.aoa_coverage import aoa_coverage, aoa_sentences
from .spatial.aoa_io import write_aoa
from .spatial.blocks import spatial_blocks, spatial_clusters
from .spatial.diagnostics import fold_summary
from .spatial.nndm import NNDMResult, nndm_folds
from .split.balance import overlap_folds
from .split.design import Design
from .split.designs import SameOtherAll, make_plan
from .split.folds import assign_folds, block_counts
from .split.knndm import KNNDMResult, knndm_folds
from .split.plan import Plan, Selection, Term
from .split.splitter import SameOtherAllCV
from .tables.raster import NodataWarning, raster_table
from .tables.table import Table, load_table
from .version import __version__ as __version__

# Figures and reports need matplotlib: imported on first use, not with the package.
_LAZY = {
    "plot_soak": "results.plot",
    "plot_datasets": "results.plot",
    "plot_evaluation": "results.plot",
    "plot_mai": "diagnose.sampling_plot",
    "plot_aoa": "spatial.aoa_plot",
    "plot_split_sensitivity": "diagnose.sensitivity_plot",
    "plot_knndm": "spatial.knndm_plot",
    "write_report": "results.report",
    # skops loads in about a second: only when a model is saved or loaded.
    **dict.fromkeys(
        ["SavedModel", "UntrustedModelError", "load_model", "predict_table", "save_model"],
        "learn.persist",
    ),
}


def __getattr__(name: str):
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'soak_dask' has no attribute {name!r}")

__all__ = [
    "BUILTIN_LEARNERS",
    "Design",
    "KNNDMResult",
    "LassoCVClassifier",
    "LassoCVRegressor",
    "NNDMResult",
    "NodataWarning",
    "Plan",
    "PlanCost",
    "PlanCosts",
    "PlattCalibrated",
    "PriorCorrected",
    "PrunedTreeClassifier",
    "PrunedTreeRegressor",
    "SameOtherAll",
    "SameOtherAllCV",
    "SavedModel",
    "Search",
    "Selection",
    "TRAIN_TYPES",
    "Table",
    "Term",
    "UntrustedModelError",
    "adjust_pvalues",
    "aoa",
    "aoa_coverage",
    "aoa_sentences",
    "assign_folds",
    "block_counts",
    "builtin_learner",
    "by_fold",
    "check_models_dir",
    "compare_sampling",
    "compare",
    "dry_run",
    "evaluate",
    "evaluation_summary",
    "fold_summary",
    "from_dataframe",
    "knndm_folds",
    "load_model",
    "load_results",
    "load_table",
    "mai_summary",
    "mai_table",
    "make_plan",
    "nndm_folds",
    "open_results",
    "overlap_folds",
    "plot_aoa",
    "plot_datasets",
    "plot_evaluation",
    "plot_knndm",
    "plot_mai",
    "plot_soak",
    "plot_split_sensitivity",
    "predict_table",
    "pvalues",
    "raster_table",
    "run_design",
    "save_model",
    "save_results",
    "soak",
    "spatial_blocks",
    "spatial_clusters",
    "split_sensitivity",
    "split_sensitivity_summary",
    "split_sensitivity_trials",
    "search_subsets",
    "summary",
    "transfer",
    "write_aoa",
    "write_report",
]
