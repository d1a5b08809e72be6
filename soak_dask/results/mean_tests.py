"""The tests of a mean difference where earlier code imports them: they are
``soak_dask.stats.mean_tests`` (statistics on arrays, below ``run/``, whose ``evaluate`` counts
McNemar's cells with them)."""

from ..stats.mean_tests import *  # noqa: F403
from ..stats.mean_tests import __all__ as __all__
