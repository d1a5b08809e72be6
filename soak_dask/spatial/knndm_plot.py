"""``plot_knndm``: the nearest-neighbour distance ECDFs of kNNDM, as CAST's ``plot.knndm``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..split.knndm import KNNDMResult

__all__ = ["ECDFS", "knndm_distances", "knndm_info", "plot_knndm", "plot_knndm_ecdfs"]

#: The distances whose ECDFs the figure draws: prediction -> train, kNNDM's and random folds'.
ECDFS = ("Gij", "Gjstar", "Gjstar_random")


def _ecdf(ax: Any, values: np.ndarray, label: str, **style: Any) -> None:
    x = np.sort(values)
    ax.step(x, np.arange(1, len(x) + 1) / len(x), where="post", label=label, **style)


def plot_knndm(result: KNNDMResult, ax: Any = None) -> Any:
    """The ECDFs of the nearest-neighbour distances prediction -> train (Gij), CV test ->
    train of the kNNDM folds (Gj*) and of random folds, with both W in the legend; the x
    axis in the distances' unit (``KNNDMResult.unit``: the CRS's, else "coordinate units";
    "standardised feature distance" in feature space).

    Parameters
    ----------
    result : KNNDMResult
        From ``soak_dask.knndm_folds``.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    if not isinstance(result, KNNDMResult):
        raise TypeError(f"plot_knndm takes a KNNDMResult, not a {type(result).__name__}")
    return plot_knndm_ecdfs(knndm_info(result), knndm_distances(result), ax)


def knndm_info(result: KNNDMResult) -> dict[str, Any]:
    """What the figure says of ``result``: its ``attrs()`` and ``n_folds`` (as ``soak knndm``
    writes them in ``knndm.json``)."""
    return {**result.attrs(), "n_folds": result.n_folds}


def knndm_distances(result: KNNDMResult) -> dict[str, np.ndarray]:
    """The nearest-neighbour distances of the figure's ECDFs, by name (``ECDFS``)."""
    return {name: np.asarray(getattr(result, name)) for name in ECDFS}


def plot_knndm_ecdfs(
    info: Mapping[str, Any], distances: Mapping[str, np.ndarray], ax: Any = None
) -> Any:
    """``plot_knndm``'s figure from ``info`` (``knndm_info``, or ``soak knndm``'s
    ``knndm.json``) and ``distances`` (``knndm_distances``, or its ``distances.csv``)."""
    import matplotlib.pyplot as plt

    own = ax is None
    if own:
        fig, ax = plt.subplots(figsize=(6, 4.6), layout="constrained")
    else:
        fig = ax.figure
    split = "knndm_test_prop" in info
    held, kind = ("split", "train/test split") if split else ("CV", "folds")
    clusters = info["knndm_n_clusters"]
    chosen = f"random {kind} kept" if clusters < 0 else f"{clusters} clusters"
    gij = distances["Gij"]
    _ecdf(ax, gij, f"prediction → train (Gij, {len(gij):,} sampled)", color="k")
    w, w_random = info["knndm_W"], info["knndm_W_random"]
    _ecdf(ax, distances["Gjstar"], f"kNNDM {held} → train ({chosen}), W = {w:.3g}", color="C0")
    _ecdf(
        ax,
        distances["Gjstar_random"],
        f"random {held} → train, W = {w_random:.3g}",
        color="C3",
        linestyle="--",
    )
    ax.set_xlabel(f"nearest-neighbour distance ({info['knndm_unit']})")
    ax.set_ylabel("ECDF")
    kind = f"{kind} (test_prop {info['knndm_test_prop']:g})" if split else kind
    ax.set_title(f"kNNDM, {'a' if split else info['n_folds']} {kind} ({info['knndm_space']} space)")
    if own:  # under the axis label: inside, the legend hides the curves' lower ends
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.15), frameon=False)
    else:
        ax.legend(fontsize=8, loc="lower right")
    ax.grid(alpha=0.3)
    return fig
