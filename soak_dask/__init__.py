"""SOAK: Same/Other/All K-fold cross-validation on Dask.

Does a model trained on some subsets of the data (regions, years, images) predict another
subset, and does pooling subsets help? See ``soak`` and ``load_table``.
"""

from importlib.metadata import PackageNotFoundError, version

from . import accessor as _accessor  # noqa: F401  (registers the Dataset.soak accessor)
from .engine import soak
from .folds import assign_folds, block_counts
from .lasso import LassoCVClassifier, LassoCVRegressor
from .learners import BUILTIN as BUILTIN_LEARNERS
from .learners import builtin_learner
from .plan import TRAIN_TYPES, make_plan
from .pruned_tree import PrunedTreeClassifier, PrunedTreeRegressor
from .raster import NodataWarning, raster_table
from .results import from_dataframe, open_results, save_results
from .splitter import SameOtherAllCV
from .stats import pvalues, summary
from .table import Table, load_table

# Figures and reports need matplotlib: imported on first use, not with the package.
_LAZY = {"plot_soak": "plot", "plot_datasets": "plot", "write_report": "report"}


def __getattr__(name: str):
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'soak_dask' has no attribute {name!r}")


try:
    __version__ = version("soak_dask")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0+unknown"

__all__ = [
    "BUILTIN_LEARNERS",
    "LassoCVClassifier",
    "LassoCVRegressor",
    "NodataWarning",
    "PrunedTreeClassifier",
    "PrunedTreeRegressor",
    "SameOtherAllCV",
    "TRAIN_TYPES",
    "Table",
    "assign_folds",
    "block_counts",
    "builtin_learner",
    "from_dataframe",
    "load_table",
    "make_plan",
    "open_results",
    "plot_datasets",
    "plot_soak",
    "pvalues",
    "raster_table",
    "save_results",
    "soak",
    "summary",
    "write_report",
]
