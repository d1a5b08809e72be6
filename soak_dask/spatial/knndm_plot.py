"""``plot_knndm``: the nearest-neighbour distance ECDFs of kNNDM, as CAST's ``plot.knndm``."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..split.knndm import KNNDMResult


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
    import matplotlib.pyplot as plt

    if not isinstance(result, KNNDMResult):
        raise TypeError(f"plot_knndm takes a KNNDMResult, not a {type(result).__name__}")
    if ax is None:
        fig, ax = plt.subplots(figsize=(6, 4))
    else:
        fig = ax.figure
    split = result.shares is not None and result.shares.split
    held, kind = ("split", "train/test split") if split else ("CV", "folds")
    chosen = f"random {kind} kept" if result.n_clusters is None else f"{result.n_clusters} clusters"
    _ecdf(ax, result.Gij, f"prediction → train (Gij, {len(result.Gij):,} sampled)", color="k")
    _ecdf(ax, result.Gjstar, f"kNNDM {held} → train ({chosen}), W = {result.W:.3g}", color="C0")
    _ecdf(
        ax,
        result.Gjstar_random,
        f"random {held} → train, W = {result.W_random:.3g}",
        color="C3",
        linestyle="--",
    )
    ax.set_xlabel(f"nearest-neighbour distance ({result.unit})")
    ax.set_ylabel("ECDF")
    kind = f"{kind} (test_prop {result.shares.test_prop:g})" if split else kind
    ax.set_title(f"kNNDM, {'a' if split else result.n_folds} {kind} ({result.space} space)")
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(alpha=0.3)
    return fig
