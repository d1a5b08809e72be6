"""The built-in kinds of result, registered (``soak_dask.results.registry``): one line per kind.

Above every package that defines a kind, as the package's ``__init__`` is: ``results/`` knows
no kind but its own, and each kind comes from its own package. Importing this module
registers them; the ``ds.soak`` accessor and ``soak report`` (``soak_dask.app.render``) import
it before they look a kind up, and the package exports the registry's functions from here
(``soak_dask.kind_of`` finds the built-in kinds without the accessor having been used first).
A new design adds its kind here: one line.
"""

from __future__ import annotations

from .diagnose.kind import COMPARE_SAMPLING, SPLIT_SENSITIVITY
from .pooling.kind import SEARCH_SUBSETS, TRANSFER
from .results.registry import ResultKind, kind_of, register_kind
from .results.soak_kinds import EVALUATE, SOAK

__all__ = ["ResultKind", "kind_of", "register_kind"]

register_kind(SOAK)
register_kind(EVALUATE)
register_kind(TRANSFER)
register_kind(SEARCH_SUBSETS)
register_kind(SPLIT_SENSITIVITY)
register_kind(COMPARE_SAMPLING)
