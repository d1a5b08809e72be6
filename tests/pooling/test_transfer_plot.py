"""The transfer heat maps: one subset order and one colour scale for every learner."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest
from matplotlib.collections import QuadMesh

import soak_dask as sd
from soak_dask.pooling.plot import plot_transfer

from ..conftest import toy_table


@pytest.fixture(scope="module")
def matrix():
    table = sd.load_table(toy_table(n=600, n_subsets=4, seed=2), label="y", subset="subset")
    return sd.transfer(
        table,
        ["featureless", "lda"],
        n_folds=3,
        measures=["error"],
        options=sd.RunOptions(progress=False),
    )


def _panels(fig):
    """(tick labels of the test subsets, colour limits) of each heat map, left to right."""
    out = []
    for ax in fig.axes:
        meshes = [c for c in ax.collections if isinstance(c, QuadMesh)]
        if meshes and ax.get_xlabel() == "test subset":
            labels = [t.get_text() for t in ax.get_xticklabels()]
            out.append((labels, (meshes[0].norm.vmin, meshes[0].norm.vmax)))
    return out


@pytest.mark.parametrize("order", ["cluster", "name"])
def test_every_learner_shares_the_order_and_the_colour_scale(matrix, order):
    panels = _panels(plot_transfer(matrix, "error", order=order))
    assert len(panels) == 2
    (first_labels, first_limits), (labels, limits) = panels
    assert labels == first_labels and limits == first_limits
    means = matrix["error"].mean("fold")
    assert first_limits == pytest.approx((float(means.min()), float(means.max())))
    if order == "name":
        assert first_labels == [str(s) for s in matrix["test_subset"].values]


def test_the_best_learner_orders_the_maps_unless_told(matrix):
    from soak_dask.pooling.matrix import cluster_subsets

    for by in (None, "featureless"):
        fig = plot_transfer(matrix, "error", order_by=by)
        expected = cluster_subsets(matrix, by or "lda", "error")[0]  # lda errs least
        assert all(labels == expected for labels, _ in _panels(fig))
    with pytest.raises(ValueError, match="order_by='rf'"):
        plot_transfer(matrix, "error", order_by="rf")


def test_the_title_of_one_narrow_panel_stays_inside_the_figure(matrix):
    """One learner, three subsets: the narrowest heat map; its two-line title is wrapped to the
    figure's width, not cut at both edges."""
    three = ["s0", "s1", "s2"]
    few = matrix.sel(learner=["lda"], train_subset=three, test_subset=three)
    fig = plot_transfer(few, "error")
    fig.canvas.draw()
    box = fig._suptitle.get_window_extent()
    assert 0 <= box.x0 and box.x1 <= fig.bbox.width, (box, fig.bbox)


def test_a_cell_whose_pooled_estimate_disagrees_says_it_under_its_mean(matrix):
    """Folds made 10× apart in rows: every cell's text gives its pooled estimate
    (``transfer_summary``'s ``weighted_mean``); with even folds, none does."""
    from soak_dask.pooling.matrix import transfer_summary

    uneven = matrix.assign(n_test=matrix["n_test"].where(matrix["fold"] != 1, 1))
    pooled = transfer_summary(uneven, "error").query("learner == 'lda'")
    assert pooled["estimates_differ"].all()
    fig = plot_transfer(uneven, "error", learners="lda")
    texts = [t.get_text() for ax in fig.axes for t in ax.texts if "\n" in t.get_text()]
    shown = {text.rsplit("(pooled ", 1)[1].rstrip(")") for text in texts if "(pooled " in text}
    assert shown == {f"{v:.3g}" for v in pooled["weighted_mean"]}
    even = matrix.assign(n_test=matrix["n_test"] * 0 + 100)
    fig = plot_transfer(even, "error", learners="lda")
    assert not [t for ax in fig.axes for t in ax.texts if "(pooled " in t.get_text()]


def test_the_search_figure_ticks_each_train_set_s_pooled_estimate():
    """``plot_search`` marks each train set's pooled estimate (``search_summary``'s
    ``weighted_mean``) beside its mean ± SD over the outer folds, named in the legend."""
    from soak_dask.pooling import plot_search, search_summary

    table = sd.load_table(toy_table(n=600, n_subsets=3, seed=2), label="y", subset="subset")
    found = sd.search_subsets(
        table, "lda", n_folds=3, measures="error", options=sd.RunOptions(progress=False)
    )
    fig = plot_search(found)
    ticks = {
        tuple(line.get_gid().split(":")[1:]): line.get_xdata()[0]
        for ax in fig.axes
        for line in ax.lines
        if (line.get_gid() or "").startswith("pooled:")
    }
    expected = search_summary(found)
    assert len(ticks) == len(expected) == 3 * 3
    for row in expected.itertuples():
        tick = ticks[row.learner, row.test_subset, row.train_set]
        assert tick == pytest.approx(row.weighted_mean)
    assert "pooled (every test row once)" in [t.get_text() for t in fig.legends[0].texts]
