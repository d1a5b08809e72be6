"""Degree of overlap (soak_dask.split.overlap): the block-by-block exact k-NN on Dask against
brute force in numpy, its tie rule, its independence of the partitioning, and the levels."""

from __future__ import annotations

import dask
import numpy as np
import pandas as pd
import pytest
from dask.callbacks import Callback
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import soak_dask as sd
from soak_dask.split.overlap import (
    DO_COLUMN,
    POSITION,
    block_candidates,
    degree_frame,
    merge_candidates,
    overlap_degrees,
    overlap_levels,
    without_self,
)

from ..conftest import n_examples


@pytest.fixture(autouse=True)
def _sync():
    with dask.config.set(scheduler="sync"):
        yield


def brute_degrees(X: np.ndarray, y: np.ndarray, k: int) -> np.ndarray:
    """The paper's Definition 2 by brute force: all pairwise distances of the standardised
    features, each row's k nearest others (ties to the earlier row), those of another class."""
    Z = (X - X.mean(axis=0)) / X.std(axis=0, ddof=1)
    d = ((Z[:, None, :] - Z[None, :, :]) ** 2).sum(axis=-1)
    np.fill_diagonal(d, np.inf)
    position = np.broadcast_to(np.arange(len(X)), d.shape)
    nearest = np.lexsort((position, d), axis=-1)[:, :k]
    return (y[nearest] != y[:, None]).sum(axis=1)


def frame(n: int, n_features: int = 3, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features)) * [1.0, 50.0, 0.01][:n_features]
    y = np.where(X[:, 0] + rng.normal(scale=0.7, size=n) > 0, "a", "b")
    return pd.DataFrame(X, columns=[f"b{i}" for i in range(n_features)]).assign(y=y)


def degrees_of(df: pd.DataFrame, k: int, rows_per_partition: int, **kw) -> np.ndarray:
    table = sd.load_table(df, label="y", rows_per_partition=rows_per_partition)
    out = overlap_degrees(table, k, **kw).data[[POSITION, DO_COLUMN]].compute()
    assert out[POSITION].tolist() == list(range(len(df)))
    return out[DO_COLUMN].to_numpy()


@pytest.mark.parametrize("rows_per_partition", [400, 90])
def test_matches_brute_force(rows_per_partition):
    df = frame(400)
    expected = brute_degrees(df[["b0", "b1", "b2"]].to_numpy(), df["y"].to_numpy(), 5)
    got = degrees_of(df, 5, rows_per_partition)
    np.testing.assert_array_equal(got, expected)
    assert got.dtype == np.int8 and got.min() >= 0 and got.max() <= 5


@pytest.mark.parametrize("method", ["exact", "blockwise"])
def test_degree_frame_is_the_degrees_without_holding_the_table(method):
    df = frame(400)
    table = sd.load_table(df, label="y", rows_per_partition=90)
    ran = []
    with Callback(pretask=lambda key, dsk, state: ran.append(str(key))):
        found = degree_frame(table, 5, method)
    got = found.compute()
    assert found.npartitions == table.data.npartitions
    assert list(got.columns) == [POSITION, DO_COLUMN] and got[DO_COLUMN].dtype == np.int8
    np.testing.assert_array_equal(got[POSITION], np.arange(400))
    np.testing.assert_array_equal(got[DO_COLUMN], degrees_of(df, 5, 90, method=method))
    # made from the search's results: no task joined them to the table's partitions, which
    # were therefore not held while the search ran
    assert ran and not [key for key in ran if "_attach" in key]


def test_ties_go_to_the_earlier_row():
    # Rows 0-2 coincide: each has the other two at distance 0; row 3 is equally far from all
    # three, so its 2 nearest are the first two of them.
    df = pd.DataFrame({"b": [0.0, 0.0, 0.0, 5.0], "y": ["a", "b", "a", "b"]})
    assert degrees_of(df, 2, 4).tolist() == [1, 2, 1, 1]
    assert degrees_of(df, 2, 1).tolist() == [1, 2, 1, 1]


@settings(max_examples=n_examples(4), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    values=st.lists(st.integers(0, 30), min_size=8, max_size=60),
    flips=st.lists(st.booleans(), min_size=60, max_size=60),
    k=st.integers(1, 6),
    parts=st.integers(1, 4),
)
def test_integer_feature_with_ties(values, flips, k, parts):
    """One integer feature: many exact ties, which standardising turns into rounding noise;
    the degrees still follow the tie rule, whatever the partitioning."""
    x = np.array(values, dtype=np.float64)
    y = np.where(np.array(flips[: len(x)]), "a", "b")
    k = min(k, len(x) - 1)
    # Brute force on the integers themselves: exact distances, ties to the earlier row.
    d = (x[:, None] - x[None, :]) ** 2
    np.fill_diagonal(d, np.inf)
    nearest = np.lexsort((np.broadcast_to(np.arange(len(x)), d.shape), d), axis=-1)[:, :k]
    expected = (y[nearest] != y[:, None]).sum(axis=1)
    df = pd.DataFrame({"b": x, "y": y})
    got = degrees_of(df, k, -(-len(x) // parts))
    np.testing.assert_array_equal(got, expected)


def test_blocks_merge_to_the_whole():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 4))
    codes, pos = rng.integers(0, 3, 120), np.arange(120)
    whole = block_candidates((X, codes, pos), (X, codes, pos), 4)
    pieces = [(X[i : i + 50], codes[i : i + 50], pos[i : i + 50]) for i in range(0, 120, 50)]
    merged = merge_candidates([block_candidates((X, codes, pos), p, 4) for p in pieces])
    for a, b in zip(whole, merged, strict=True):
        np.testing.assert_array_equal(a, b)
    # A block smaller than k pads with missing neighbours.
    small = block_candidates((X, codes, pos), (X[:2], codes[:2], pos[:2]), 4)
    assert np.isinf(small[0][:, 2:]).all() and (small[2][:, 2:] == -1).all()


def test_without_self():
    graph = np.array([[0, 3, 1], [0, 2, 3], [2, 1, 0]])
    assert without_self(graph, 2).tolist() == [[3, 1], [0, 2], [1, 0]]


def test_levels_pool_the_top_degrees():
    assert overlap_levels(5).tolist() == [0, 1, 2, 3, 4, 5]  # the paper's k + 1 groups
    assert overlap_levels(5, 2).tolist() == [0, 1, 1, 1, 1, 1]
    assert overlap_levels(5, 9).tolist() == [0, 1, 2, 3, 4, 5]
    assert overlap_levels(1, 1).tolist() == [0, 0]
    with pytest.raises(ValueError, match="n_levels=0"):
        overlap_levels(5, 0)


def test_refusals():
    df = frame(30)
    table = sd.load_table(df, label="y")
    with pytest.raises(ValueError, match="k=0"):
        overlap_degrees(table, 0)
    with pytest.raises(ValueError, match="more than 40 rows"):
        overlap_degrees(table, 40)
    with pytest.raises(ValueError, match="method='ball'"):
        overlap_degrees(table, 3, method="ball")
    regression = sd.load_table(df.assign(y=np.linspace(0, 1, 30)), label="y")
    with pytest.raises(ValueError, match="task='regression'"):
        overlap_degrees(regression, 3)
    missing = sd.load_table(df.assign(b1=df["b1"].where(df.index != 3)), label="y")
    with pytest.raises(ValueError, match=r"columns \['b1'\] have missing"):
        overlap_degrees(missing, 3)
