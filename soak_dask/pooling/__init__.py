"""Beyond SOAK: which subsets predict which (the transfer matrix), and which train subsets to
pool for a test subset (a nested greedy search).

``soak_dask.transfer`` is this package and, called, its main function:
``soak_dask.transfer(table, learners, *, n_folds=None, seed=1, ...)`` is
``soak_dask.pooling.transfer(...)``.

Figures and the report need matplotlib: ``plot_transfer``, ``plot_search`` and
``write_transfer_report`` import it on first use, not with the package.
"""

from ..split.transfer import Transfer
from .matrix import (
    cluster_subsets,
    transfer,
    transfer_distance,
    transfer_from_soak,
    transfer_pvalues,
    transfer_summary,
    transfer_table,
)
from .search import (
    inner_fit_bound,
    search_pools,
    search_pvalues,
    search_stability,
    search_subsets,
    search_summary,
)

_LAZY = {
    "plot_transfer": "plot",
    "plot_search": "plot",
    "search_text": "report",
    "transfer_text": "report",
    "write_transfer_report": "report",
}


def __getattr__(name: str):
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Transfer",
    "cluster_subsets",
    "inner_fit_bound",
    "plot_search",
    "plot_transfer",
    "search_pools",
    "search_pvalues",
    "search_stability",
    "search_subsets",
    "search_summary",
    "search_text",
    "transfer",
    "transfer_distance",
    "transfer_from_soak",
    "transfer_pvalues",
    "transfer_summary",
    "transfer_table",
    "transfer_text",
    "write_transfer_report",
]
