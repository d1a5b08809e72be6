"""kNNDM's names where earlier code imports them: kNNDM assigns folds (a design's keys), so it
is ``soak_dask.split.knndm``, below ``run/`` (``evaluate(outer="knndm")``); its plot stays in
``soak_dask.spatial.knndm_plot``."""

from ..split.knndm import CANDIDATE_FIT as CANDIDATE_FIT
from ..split.knndm import DEFAULT_SAMPLE as DEFAULT_SAMPLE
from ..split.knndm import Folding as Folding
from ..split.knndm import KNNDMResult as KNNDMResult
from ..split.knndm import Space as Space
from ..split.knndm import cluster_grid as cluster_grid
from ..split.knndm import cv_distances as cv_distances
from ..split.knndm import cv_rows as cv_rows
from ..split.knndm import knndm_folds as knndm_folds
from ..split.knndm import knndm_outer as knndm_outer
from ..split.knndm import merge_clusters as merge_clusters
from ..split.knndm import score_candidate as score_candidate
