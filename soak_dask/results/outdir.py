"""The output rule's names where earlier code imports them: the rule itself is
``soak_dask.io.outdir`` (below ``learn/``, which saves models by it)."""

from ..io.outdir import FORMAT as FORMAT
from ..io.outdir import MANIFEST as MANIFEST
from ..io.outdir import OutputDir as OutputDir
from ..io.outdir import check_out_dir as check_out_dir
from ..io.outdir import digest as digest
from ..io.outdir import local_path as local_path
