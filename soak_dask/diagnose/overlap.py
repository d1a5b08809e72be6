"""Moved: the degree of overlap and its k-NN assign keys, so they live in
``soak_dask.split.overlap``; these names stay importable from here."""

from ..split.overlap import DEFAULT_K as DEFAULT_K
from ..split.overlap import DO_COLUMN as DO_COLUMN
from ..split.overlap import MAX_K as MAX_K
from ..split.overlap import POSITION as POSITION
from ..split.overlap import approximate_neighbours as approximate_neighbours
from ..split.overlap import block_candidates as block_candidates
from ..split.overlap import check_k as check_k
from ..split.overlap import degrees as degrees
from ..split.overlap import feature_scaling as feature_scaling
from ..split.overlap import merge_candidates as merge_candidates
from ..split.overlap import overlap_degrees as overlap_degrees
from ..split.overlap import overlap_levels as overlap_levels
from ..split.overlap import without_self as without_self
