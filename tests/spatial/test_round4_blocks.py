"""Issue 38, items 2, 5 and 8 for blocks: coordinates that are not finite are refused by
``spatial_blocks``, ``spatial_clusters`` and ``fold_summary`` naming the column and its rows; a
block size the coordinates' extent does not allow (indices beyond ±2**31, or one block) is
refused up front with the extent and a size that works, not inside Dask's meta inference;
``fold_summary`` of a column of block ids (≈ 10**10) counts the ids it holds and measures
distances in memory that grows with the sampled rows, not with the ids' values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import cdist

import soak_dask as sd
from soak_dask.spatial import blocks

from ..split.test_round4_ids import capped_memory


def frame(x, y) -> pd.DataFrame:
    n = len(x)
    return pd.DataFrame({"x": x, "y": y, "f": np.arange(n, dtype=float), "label": np.arange(n) % 2})


def table(x, y, **kwargs) -> sd.Table:
    return sd.load_table(frame(x, y), label="label", coords=["x", "y"], **kwargs)


GRID = np.arange(0.0, 40.0, 5.0)  # 8 rows on the diagonal: x, y from 0 to 35


@pytest.mark.parametrize("shape", ["square", "hex"])
def test_coordinates_that_are_not_finite_are_refused_naming_the_column(shape):
    x = np.array([0.0, 5, np.nan, 7, np.inf, -np.inf])
    t = table(x, np.arange(6.0), rows_per_partition=2)
    want = r"coordinate columns 'x' \(1 missing, 2 infinite\) have rows that are not finite"
    with pytest.raises(ValueError, match="spatial_blocks: " + want):
        sd.spatial_blocks(t, 2.0, shape=shape)
    with pytest.raises(ValueError, match="spatial_clusters: " + want):
        sd.spatial_clusters(t, 2)
    with pytest.raises(ValueError, match="fold_summary: " + want):
        sd.fold_summary(t, "f")


@pytest.mark.parametrize(
    ("size", "shape", "message"),
    [
        (1e-12, "square", r"size=1e-12: blocks this small would be numbered beyond ±2\*\*31 .*x "
         r"from 0 to 35, y from 0 to 35.*use a size of at least 3\.26e-08"),
        (1e-300, "hex", r"size=1e-300: .*beyond ±2\*\*31"),
        (1e9, "square", r"size=1000000000.0: every row falls in one square block .*use a size "
         r"below 35, the extent's longer side"),
        (1e3, "hex", r"size=1000.0: every row falls in one hex block"),
    ],
)  # fmt: skip
def test_a_size_the_extent_does_not_allow_is_refused_up_front(size, shape, message):
    t = table(GRID, GRID, rows_per_partition=3)
    with pytest.raises(ValueError, match=message):
        sd.spatial_blocks(t, size, shape=shape)


def test_coordinates_too_large_to_divide_are_refused():
    t = table(GRID * 1e299, GRID)
    with pytest.raises(ValueError, match=r"beyond ±2\*\*31 .*use a size of at least 3\.26e\+291"):
        sd.spatial_blocks(t, 10.0)
    with pytest.raises(ValueError, match=r"origin=\(nan, 0\): need \(x, y\), two finite numbers"):
        sd.spatial_blocks(table(GRID, GRID), 10.0, origin=(np.nan, 0))
    with pytest.raises(ValueError, match="every row is at one point"):
        sd.spatial_blocks(table(np.ones(4), np.ones(4)), 1e-3)
    # sizes within the range work, and blocks are what they were
    got = sd.spatial_blocks(t, 1e300).data["block"].compute().to_numpy()
    np.testing.assert_array_equal(got, blocks.square_blocks(GRID * 1e299, GRID, 1e300, (0, 0)))


def test_partition_errors_are_not_wrapped_by_meta_inference(monkeypatch):
    def fails(*args):
        raise RuntimeError("raised in a partition")

    monkeypatch.setattr(blocks, "_block_column", fails)
    t = sd.spatial_blocks(table(GRID, GRID), 10.0)  # lazy: no partition is run here
    assert t.data["block"].dtype == np.int64
    with pytest.raises(RuntimeError, match="^raised in a partition$"):
        t.data.compute()


def test_fold_summary_of_block_ids_counts_the_ids_it_holds():
    rng = np.random.default_rng(3)
    xy = rng.uniform(0, 100, (300, 2))
    t = table(xy[:, 0], xy[:, 1], rows_per_partition=70)
    blocked = sd.spatial_blocks(t, 25.0, origin=(-1e6, 3e6))  # ids near 1.5e10
    ids = blocks.square_blocks(xy[:, 0], xy[:, 1], 25.0, (-1e6, 3e6))
    assert ids.min() > 10**10
    with capped_memory():
        s = sd.fold_summary(blocked, "block", sample=1000)
    counts = pd.Series(ids).value_counts().sort_index()
    assert s.index.tolist() == counts.index.tolist() and s["n_test"].tolist() == counts.tolist()
    # every row is measured: its nearest row of another block, by hand
    d = cdist(xy, xy)
    d[ids[:, None] == ids[None, :]] = np.inf
    nearest = pd.Series(d.min(axis=1)).groupby(ids)
    np.testing.assert_allclose(s["nn_min"], nearest.min())
    np.testing.assert_allclose(s["nn_median"], nearest.median())
    assert s["nn_measured"].tolist() == counts.tolist() and not s["empty"].any()


def test_fold_summary_samples_each_block_alike_whatever_the_partitions():
    rng = np.random.default_rng(4)
    xy = rng.uniform(0, 50, (200, 2))
    summaries = [
        sd.fold_summary(
            sd.spatial_blocks(table(xy[:, 0], xy[:, 1], rows_per_partition=rows), 10.0),
            "block",
            sample=3,
            seed=5,
        )
        for rows in (200, 33)
    ]
    pd.testing.assert_frame_equal(*summaries)
    assert (summaries[0]["nn_measured"] <= 3).all()
