"""SOAK: Same/Other/All K-fold cross-validation on Dask.

Does a model trained on some subsets of the data (regions, years, images) predict another
subset, and does pooling subsets help? See :func:`soak` and :func:`load_table`.
"""

from importlib.metadata import PackageNotFoundError, version

from . import accessor as _accessor  # noqa: F401  (registers the Dataset.soak accessor)
from .engine import soak
from .folds import assign_folds, block_counts
from .learners import BUILTIN as BUILTIN_LEARNERS
from .learners import builtin_learner
from .plan import TRAIN_TYPES, make_plan
from .raster import NodataWarning, raster_table
from .results import from_dataframe, open_results, save_results
from .splitter import SameOtherAllCV
from .stats import pvalues, summary
from .table import Table, load_table

try:
    __version__ = version("soak_dask")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0+unknown"

__all__ = [
    "BUILTIN_LEARNERS",
    "NodataWarning",
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
    "pvalues",
    "raster_table",
    "save_results",
    "soak",
    "summary",
]
