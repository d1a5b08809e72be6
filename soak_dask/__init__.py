"""SOAK: Same/Other/All K-fold cross-validation on Dask.

Does a model trained on some subsets of the data (regions, years, images) predict another
subset, and does pooling subsets help? See ``soak`` and ``load_table``.
"""

# Every public name loads with its module on first use (PEP 562), not with the package: the
# ``soak`` command, Dask workers and notebooks import only what they use (sklearn, dask.dataframe
# and matplotlib each take a second or so). The imports under TYPE_CHECKING are the one
# list of public names: type checkers and the docs read them as written, ``__getattr__`` reads
# them from this file's source.
from importlib import import_module
from typing import TYPE_CHECKING, Any

import xarray as _xr

from .version import __version__ as __version__


# Any Dataset has ``ds.soak`` once soak_dask is imported, a store opened by xarray alone
# included (xarray itself: 0.4 s); the accessor's modules load when it is first used.
@_xr.register_dataset_accessor("soak")
def _soak_accessor(ds: _xr.Dataset) -> Any:
    from . import result_kinds  # noqa: F401  (registers the built-in kinds of result)
    from .results.accessor import SoakAccessor

    return SoakAccessor(ds)


if TYPE_CHECKING:
    from .diagnose.mai import compare_sampling, mai_summary, mai_table
    from .diagnose.sampling_plot import plot_mai
    from .diagnose.sensitivity import (
        split_sensitivity,
        split_sensitivity_summary,
        split_sensitivity_trials,
    )
    from .diagnose.sensitivity_plot import plot_split_sensitivity
    from .learn.builtin import BUILTIN as BUILTIN_LEARNERS
    from .learn.builtin import builtin_learner
    from .learn.calibration import PlattCalibrated
    from .learn.lasso import LassoCVClassifier, LassoCVRegressor
    from .learn.model_dir import check_models_dir
    from .learn.persist import (
        SavedModel,
        UntrustedModelError,
        load_model,
        predict_table,
        save_model,
    )
    from .learn.priors import PriorCorrected
    from .learn.pruned_tree import PrunedTreeClassifier, PrunedTreeRegressor
    from .learn.tuning import Search
    from .pooling import search_subsets, search_summary, transfer, transfer_summary
    from .result_kinds import ResultKind, kind_of, register_kind
    from .results.cd_plot import plot_critical_difference
    from .results.comparisons import compare
    from .results.friedman import friedman_nemenyi
    from .results.ncv import ncv_intervals
    from .results.plot import plot_datasets, plot_evaluation, plot_soak
    from .results.report import write_report
    from .results.shift import shift_summary
    from .results.stats import adjust_pvalues, by_fold, evaluation_summary, pvalues, summary
    from .results.store import from_dataframe, load_results, open_results, save_results
    from .results.verdicts import with_verdicts
    from .results.wald_cv_intervals import wald_cv_intervals
    from .run.cost import PlanCost, PlanCosts, dry_run
    from .run.evaluate import evaluate
    from .run.run_design import run_design
    from .run.soak import soak
    from .run_options import RunOptions
    from .schema import TRAIN_TYPES
    from .spatial.aoa import aoa
    from .spatial.aoa_coverage import aoa_coverage, aoa_sentences
    from .spatial.aoa_io import open_aoa, write_aoa
    from .spatial.aoa_plot import plot_aoa, plot_error_profile
    from .spatial.block_bootstrap import BlockBootstrap, block_bootstrap
    from .spatial.blocks import spatial_blocks, spatial_clusters
    from .spatial.diagnostics import fold_summary
    from .spatial.error_profile import ErrorProfile, error_profile, expected_error
    from .spatial.extract import ExtractSummary, ExtractWarning, extract
    from .spatial.knndm_out import save_knndm
    from .spatial.knndm_plot import plot_knndm
    from .spatial.nndm import NNDMResult, nndm_folds
    from .spatial.random_field import gaussian_random_field
    from .spatial.random_vs_block import random_vs_block_cv
    from .spatial.variogram import SpatialRange, spatial_range
    from .spatial.variogram_plot import plot_variogram
    from .split.balance import overlap_folds
    from .split.design import Design
    from .split.fold_file import attach_folds
    from .split.folds import assign_folds, block_counts
    from .split.knndm import KNNDMResult, knndm_folds
    from .split.outer import (
        Bootstrap,
        FiveByTwoCV,
        KFoldDesign,
        KNNDMFolds,
        LeaveOneGroupOutDesign,
        LeaveOneOutDesign,
        OuterDesign,
        Subsampling,
    )
    from .split.plan import Plan, Selection, Term
    from .split.same_other_all import SameOtherAll, make_plan
    from .split.sampling_splits import SamplingSplits
    from .split.splitter import SameOtherAllCV
    from .split.transfer import Transfer
    from .split.trials import SplitTrials
    from .tables.load import load_table
    from .tables.raster import NodataWarning, raster_table
    from .tables.table import Table
    from .workers import FitMemoryError, WorkerMemory, worker_memory


def _exports() -> dict[str, tuple[str, str]]:
    """``{public name: (module, name in it)}`` from the imports under ``if TYPE_CHECKING:``."""
    import ast

    tree = ast.parse(__loader__.get_source(__name__))
    (block,) = [
        n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"
    ]
    return {
        alias.asname or alias.name: (f".{node.module}", alias.name)
        for node in block.body
        for alias in node.names
    }


_EXPORTS = _exports()
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attr = _EXPORTS[name]
    value = globals()[name] = getattr(import_module(module, __name__), attr)
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
