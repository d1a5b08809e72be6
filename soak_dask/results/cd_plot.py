"""The critical-difference diagram of Demšar (2006) for a `FriedmanNemenyi` result
(`plot_critical_difference`), matplotlib only.

An axis of average ranks, 1 (best) on the left; each treatment hangs from its average rank by
an elbow line to its name, the better half on the left, the worse half on the right; thick bars
under the axis join the treatments no pair of which differs by more than the critical
difference (``groups``); the CD itself is drawn as a bar of its length above the axis.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes

from ..stats.friedman import FriedmanNemenyi
from .plot import format_pvalue

__all__ = ["plot_critical_difference"]

# Layout in data units of the y axis (pointing down): the CD bar and the tick labels above the
# axis (y = 0), the group bars under it, then one row per label.
_CD_Y, _TICK_Y, _GROUP_Y0, _GROUP_STEP, _ROW_STEP = -0.75, -0.12, 0.22, 0.16, 0.32
_HEIGHT_PER_ROW = 0.3  # inches


def _draw_axis(ax: Axes, k: int) -> None:
    """The rank axis from 1 to k, ticks and labels above it."""
    ax.plot([1, k], [0, 0], color="black", lw=1)
    for tick in range(1, k + 1):
        ax.plot([tick, tick], [0, -0.06], color="black", lw=1)
        ax.text(tick, _TICK_Y, str(tick), ha="center", va="bottom", fontsize=9)
    for half in np.arange(1.5, k, 1.0):
        ax.plot([half, half], [0, -0.03], color="black", lw=0.7)


def _draw_cd(ax: Axes, cd: float, alpha: float) -> None:
    """A bar of length CD from rank 1, labelled with its value and level."""
    bar = ax.plot([1, 1 + cd], [_CD_Y, _CD_Y], color="black", lw=1.5)[0]
    bar.set_gid("cd")
    for end in (1, 1 + cd):
        ax.plot([end, end], [_CD_Y - 0.05, _CD_Y + 0.05], color="black", lw=1)
    ax.text(1 + cd / 2, _CD_Y - 0.08, f"CD = {cd:.2f} (α = {alpha:g})", ha="center", va="bottom")


def _draw_labels(ax: Axes, result: FriedmanNemenyi, first_row: float) -> float:
    """Elbow lines from each average rank to its name; returns the lowest row's y."""
    ranks = result.average_ranks
    k = len(ranks)
    n_left = (k + 1) // 2
    y = first_row
    for i, (name, rank) in enumerate(ranks.items()):
        left = i < n_left
        # Rows grow outward: the best on the left and the worst on the right sit nearest the axis.
        row = i if left else k - 1 - i
        y = first_row + row * _ROW_STEP
        end = 1 - 0.1 if left else k + 0.1
        ax.plot([rank, rank, end], [0, y, y], color="black", lw=0.8)
        ax.text(
            end - 0.05 if left else end + 0.05,
            y,
            f"{name} ({rank:.2f})",
            ha="right" if left else "left",
            va="center",
            fontsize=9,
        )
    return first_row + (max(n_left, k - n_left) - 1) * _ROW_STEP


def plot_critical_difference(result: FriedmanNemenyi, ax: Axes | None = None) -> Axes:
    """Critical-difference diagram (Demšar 2006) of a Friedman–Nemenyi result.

    Parameters
    ----------
    result : soak_dask.stats.friedman.FriedmanNemenyi
        From ``friedman_nemenyi(ds)`` (learners over test subsets) or
        ``soak_dask.stats.friedman.friedman_nemenyi_scores(table)``.
    ax : matplotlib.axes.Axes, optional
        Where to draw; default a new figure sized to the treatments.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on: the rank axis (1 = best, left), each treatment's name and average
        rank, a thick bar (gid ``"group"``) under the treatments of each of ``result.groups``
        (no two of them differ significantly) and the CD bar (gid ``"cd"``); the title gives
        the Friedman test's p-values (χ², permutation). Close the figure with
        ``plt.close(ax.figure)`` when drawing many.

    Examples
    --------
    >>> import pandas as pd
    >>> from soak_dask.stats.friedman import friedman_nemenyi_scores
    >>> table = pd.DataFrame({"a": [1.0, 1, 2, 1, 1], "b": [2.0, 3, 1, 2, 2],
    ...                       "c": [3.0, 2, 3, 3, 3]})
    >>> ax = plot_critical_difference(friedman_nemenyi_scores(table))
    >>> [t.get_text() for t in ax.texts if "(" in t.get_text() and "CD" not in t.get_text()]
    ['a (1.20)', 'b (2.00)', 'c (2.80)']
    >>> plt.close(ax.figure)
    """
    if not isinstance(result, FriedmanNemenyi):
        raise TypeError(
            "plot_critical_difference draws a FriedmanNemenyi result: pass "
            f"friedman_nemenyi(ds), not {type(result).__name__}"
        )
    k = result.n_treatments
    rows_start = _GROUP_Y0 + len(result.groups) * _GROUP_STEP + 0.1
    n_rows = (k + 1) // 2
    if ax is None:
        height = 1.2 + _HEIGHT_PER_ROW * (n_rows + len(result.groups))
        ax = plt.subplots(figsize=(max(5.0, 1.2 * k + 2.5), height))[1]
    _draw_axis(ax, k)
    _draw_cd(ax, result.cd, result.alpha)
    for i, group in enumerate(result.groups):
        low, high = (float(result.average_ranks[name]) for name in (group[0], group[-1]))
        y = _GROUP_Y0 + i * _GROUP_STEP
        ax.plot([low - 0.03, high + 0.03], [y, y], color="black", lw=3.5, gid="group")
    bottom = _draw_labels(ax, result, rows_start)
    ax.set_xlim(1 - 0.3 * k - 0.8, k + 0.3 * k + 0.8)
    ax.set_ylim(bottom + 0.25, _CD_Y - 0.35)
    ax.set_axis_off()
    treatments = str(result.scores.columns.name or "treatment").replace("_", " ")
    blocks = str(result.scores.index.name or "block").replace("_", " ")
    ax.set_title(
        f"{result.measure}: {k} {treatments}s ranked over {result.n_blocks} {blocks}s, "
        f"Friedman {format_pvalue(result.p)} (permutation {format_pvalue(result.p_permutation)})",
        fontsize=9,
    )
    return ax
