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
        Each point is one (data set, learner), coloured by data set (jittered sideways); the
        box spans the quartiles; under each method's name, its mean |MAI|. The band between
        −1 and 1 is where a single random split lands about two times in three. The axis is
        linear within ±2 and logarithmic beyond when some |MAI| exceeds 4.
    """
    import matplotlib.pyplot as plt

    columns = [c for c in table.columns if c.startswith("MAI ")]
    if not columns:
        raise ValueError("table has no 'MAI <method>' columns; pass the output of mai_table")
    methods = [c.removeprefix("MAI ") for c in columns]
    if ax is None:
        _, ax = plt.subplots(figsize=(1.3 * len(methods) + 2.5, 4.2), layout="constrained")
    data = [table[c].dropna().to_numpy() for c in columns]
    ax.axhspan(-1, 1, color="0.93", zorder=0)
    ax.axhline(0, color="0.5", lw=0.8, zorder=1)
    ax.boxplot(data, positions=np.arange(len(methods)), widths=0.5, showfliers=False, zorder=2)
    names = table.index.get_level_values(0) if table.index.nlevels > 1 else table.index
    sets = list(dict.fromkeys(names))
    colours = plt.get_cmap("tab10")
    for i, column in enumerate(columns):
        values = table[column].to_numpy()
        jitter = (uniform(seeded_hash(i, np.arange(len(values)))) - 0.5) * 0.3
        for j, name in enumerate(sets):
            rows = np.asarray(names == name) & np.isfinite(values)
            ax.scatter(
                i + jitter[rows],
                values[rows],
                s=16,
                color=colours(j % 10),
                label=str(name) if i == 0 else None,
                zorder=3,
            )
    means = [f"{np.mean(np.abs(d)):.2f}" if len(d) else "–" for d in data]
    ax.set_xticks(
        np.arange(len(methods)),
        [f"{LABELS.get(m, m)}\n|MAI| {v}" for m, v in zip(methods, means, strict=True)],
    )
    if max((float(np.max(np.abs(d))) for d in data if len(d)), default=0.0) > 4:
        # Linear within ±2, logarithmic beyond: far-off methods do not flatten the others.
        ax.set_yscale("symlog", linthresh=2)
        every = np.concatenate([d for d in data if len(d)])
        low, high = min(float(every.min()), -2.0) * 1.3, max(float(every.max()), 2.0) * 1.3
        steps = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)
        ticks = [-t for t in steps[::-1] if -t >= low] + [0] + [t for t in steps if t <= high]
        ax.set_yticks(ticks)
        ax.yaxis.set_major_formatter("{x:g}")
        ax.set_ylim(low, high)
    ax.set_ylabel("MAI = (ACC − AEV) / SD")
    ax.set_title(title or "MAI of each sampling method")
    if len(sets) > 1:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    return ax.figure
