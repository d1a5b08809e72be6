"""Moved: the sampling methods add key columns, so they live in ``soak_dask.split.sampling``
(overlap-balanced folds in ``soak_dask.split.balance``); these names stay importable from
here."""

from ..split.balance import overlap_folds as overlap_folds
from ..split.overlap import attach as attach
from ..split.overlap import degree_frame as degree_frame
from ..split.overlap import ensure_positions as ensure_positions
from ..split.sampling import D_OPTIMAL_REPEATS as D_OPTIMAL_REPEATS
from ..split.sampling import MDC_MAX_ROWS as MDC_MAX_ROWS
from ..split.sampling import METHODS as METHODS
from ..split.sampling import SPLITTERS as SPLITTERS
from ..split.sampling import check_ratio as check_ratio
from ..split.sampling import classes_of as classes_of
from ..split.sampling import clustering_split as clustering_split
from ..split.sampling import doptimal_split as doptimal_split
from ..split.sampling import hash_split as hash_split
from ..split.sampling import mdc_select as mdc_select
from ..split.sampling import mdc_split as mdc_split
from ..split.sampling import overlap_split as overlap_split
from ..split.sampling import random_split as random_split
from ..split.sampling import random_splits as random_splits
from ..split.sampling import stratified_split as stratified_split
