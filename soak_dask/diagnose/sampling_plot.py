"""Figure 8 of the balanced-sampling paper: the MAI of each sampling method as a box plot, one
point per (data set, learner). matplotlib is imported when a figure is drawn."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..hashing import seeded_hash, uniform

#: Names of the methods on the figure's axis.
LABELS = {
    "random": "random",
    "stratified": "stratified",
    "clustering": "clustering",
    "mdc": "MDC",
    "doptimal": "D-optimal",
    "overlap": "overlap\n(proposed)",
    "overlap_class": "overlap\n× class",
}


#: Markers of the learners, in the order they first appear.
MARKERS = ("o", "s", "D", "^", "v", "P", "X", "*")
#: Half-height of the linear axis when every |MAI| is small; wider values stretch it up to
#: the 90th percentile of |MAI|, and points beyond are drawn at its edge with their values.
_MIN_LIMIT = 2.5


def plot_mai(table: pd.DataFrame, *, ax: Any = None, title: str | None = None) -> Any:
    """Box plot of MAI = (ACC − AEV) / SD per sampling method (the paper's Figure 8).

    Parameters
    ----------
    table : DataFrame
        From ``soak_dask.diagnose.mai.mai_table``: one row per (data set, learner), columns
        ``MAI <method>``.
    ax : matplotlib Axes, optional
        Where to draw; default a new figure.
    title : str, optional

    Returns
    -------
    matplotlib Figure
        Each point is one (data set, learner): coloured by data set, shaped by learner (both in
        the legend), jittered sideways; the box spans the quartiles; under each method's name,
        its mean |MAI|. The grey band between −1 and 1 is where a single random split lands
        about two times in three (its ACC within one SD of the AEV), as the legend says. The
        axis is linear; points beyond its range (a method far off on some data set) are drawn
        as ▲ / ▼ at its edge, labelled with their value, so they do not flatten the others.
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    columns = [c for c in table.columns if c.startswith("MAI ")]
    if not columns:
        raise ValueError("table has no 'MAI <method>' columns; pass the output of mai_table")
    methods = [c.removeprefix("MAI ") for c in columns]
    if ax is None:
        _, ax = plt.subplots(figsize=(1.3 * len(methods) + 3.2, 4.4), layout="constrained")
    data = [table[c].dropna().to_numpy() for c in columns]
    limit = _axis_limit(data)
    ax.axhspan(-1, 1, color="0.93", zorder=0)
    ax.axhline(0, color="0.5", lw=0.8, zorder=1)
    clipped = [np.clip(d, -limit, limit) for d in data]
    ax.boxplot(clipped, positions=np.arange(len(methods)), widths=0.5, showfliers=False, zorder=2)
    handles = _points(ax, table, columns, limit)
    means = [f"{np.mean(np.abs(d)):.2f}" if len(d) else "–" for d in data]
    ax.set_xticks(
        np.arange(len(methods)),
        [f"{LABELS.get(m, m)}\n|MAI| {v}" for m, v in zip(methods, means, strict=True)],
    )
    ax.set_ylim(-limit * 1.12, limit * 1.12)
    ax.set_ylabel("MAI = (ACC − AEV) / SD")
    ax.set_title(title or "MAI of each sampling method")
    band = Patch(color="0.93", label="|MAI| ≤ 1: a random split\nlands here 2 times in 3")
    ax.legend(
        handles=[*handles, band],
        fontsize=7,
        loc="upper left",
        bbox_to_anchor=(1.0, 1.0),
        frameon=False,
    )
    return ax.figure


def _axis_limit(data: list[np.ndarray]) -> float:
    """Half-height of the axis: every |MAI| when all are small, else the 90th percentile."""
    every = np.abs(np.concatenate([d for d in data if len(d)] or [np.zeros(1)]))
    if every.max() <= 2 * _MIN_LIMIT:
        return max(_MIN_LIMIT, float(every.max()))
    return max(2 * _MIN_LIMIT, float(np.quantile(every, 0.9)))


def _points(ax: Any, table: pd.DataFrame, columns: list[str], limit: float) -> list:
    """One point per (data set, learner) and method; those beyond ``limit`` at the edge as
    ▲ / ▼ with their value. Returns the legend handles (data sets, then learners)."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    index = table.index
    names = index.get_level_values(0) if index.nlevels > 1 else index
    learners = index.get_level_values(1) if index.nlevels > 1 else pd.Index([""] * len(index))
    sets, kinds = list(dict.fromkeys(names)), list(dict.fromkeys(learners))
    colours = plt.get_cmap("tab10")
    colour = np.array([sets.index(n) % 10 for n in names])
    marker = np.array([kinds.index(k) % len(MARKERS) for k in learners])
    for i, column in enumerate(columns):
        values = table[column].to_numpy()
        x = i + (uniform(seeded_hash(i, np.arange(len(values)))) - 0.5) * 0.3
        for row in np.flatnonzero(np.isfinite(values)):
            value, c = values[row], colours(colour[row])
            if abs(value) <= limit:
                ax.scatter(x[row], value, s=18, color=c, marker=MARKERS[marker[row]], zorder=3)
                continue
            edge = np.sign(value) * limit
            ax.scatter(x[row], edge, s=30, color=c, marker="^" if value > 0 else "v", zorder=3)
            ax.annotate(
                f"{value:.3g}", (x[row], edge), xytext=(4, 0), textcoords="offset points",
                fontsize=6, va="center", color=c,
            )  # fmt: skip
    handles = [Line2D([], [], ls="", marker="o", color=colours(j % 10), label=str(n))
               for j, n in enumerate(sets)]  # fmt: skip
    if len(kinds) > 1:
        handles += [Line2D([], [], ls="", marker=MARKERS[j % len(MARKERS)], color="0.3",
                           label=str(k)) for j, k in enumerate(kinds)]  # fmt: skip
    return handles
