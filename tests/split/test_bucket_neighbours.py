"""Block-wise approximate k-NN in k-means buckets (soak_dask.split.bucket_neighbours): recall
against the exact search, the same degrees whatever the partitioning, no task holding more than
a group's rows and the rows probing them, and ``overlap_degrees(method="blockwise")`` end to end."""

from __future__ import annotations

import tracemalloc

import dask
import dask.dataframe as dd
import distributed
import numpy as np
import pandas as pd
import pytest

import soak_dask as sd
from soak_dask.split.bucket_neighbours import (
    TARGET,
    below_hash,
    bucket_centres,
    bucket_neighbour_codes,
    bucket_neighbours,
    check_search,
    exchange,
    group_search,
    probe_counts,
    rank_block,
    route_block,
    search_bytes,
    search_groups,
    seeded_sample,
    sized_groups,
)
from soak_dask.split.overlap import (
    DO_COLUMN,
    POSITION,
    block_arrays,
    block_candidates,
    degrees,
    feature_scaling,
    overlap_degrees,
    with_positions,
)
from soak_dask.workers import FitMemoryError, WorkerMemory

from ..conftest import task_memory


@pytest.fixture(autouse=True)
def _sync():
    with dask.config.set(scheduler="sync"):
        yield


def frame(n: int, seed: int = 0) -> pd.DataFrame:
    """Four blobs in 4 dimensions (neighbours are local), two overlapping classes."""
    rng = np.random.default_rng(seed)
    centre = rng.integers(0, 4, n)
    X = rng.normal(size=(n, 4)) + 3.0 * np.eye(4)[centre]
    y = np.where(X[:, 0] - X[:, 1] + rng.normal(scale=1.0, size=n) > 0, "a", "b")
    return pd.DataFrame(X, columns=[f"b{i}" for i in range(4)]).assign(y=y)


def blocks_of(df: pd.DataFrame, rows_per_partition: int):
    """The overlap search's blocks (standardised features, codes, positions) of ``df``."""
    table = sd.load_table(df, label="y", rows_per_partition=rows_per_partition)
    mean, sd_, lengths = feature_scaling(table)
    table = with_positions(table, lengths)
    classes = pd.Index(["a", "b"])
    parts = table.data.to_delayed()
    blocks = [
        dask.delayed(block_arrays)(p, table.features, table.label, classes, mean, sd_)
        for p in parts
    ]
    return blocks, lengths


def bucket_degrees(
    df, rows_per_partition, k=5, bucket_rows=60, probes=2, seed=3, group_rows=250
) -> np.ndarray:
    blocks, lengths = blocks_of(df, rows_per_partition)
    found = bucket_neighbour_codes(blocks, lengths, k, seed, bucket_rows, probes, group_rows)
    return np.concatenate([degrees(*f) for f in dask.compute(*found)])


@pytest.mark.slow
def test_recall_against_the_exact_search():
    df = frame(1500)
    (whole,), lengths = blocks_of(df, 1500)
    arrays = dask.compute(whole)[0]
    exact = block_candidates(arrays, arrays, 5)[1]
    centres, _ = bucket_centres([arrays[0]], 1500, seed=3, bucket_rows=60)
    assert 22 <= len(centres) <= 28  # ~1500 / 60

    def recall(probes: int, group_rows: int = 250) -> float:
        found = bucket_neighbours([whole], lengths, 5, 3, 60, probes, group_rows)
        found = dask.compute(found)[0][0][1]
        return np.mean([len(np.intersect1d(a, b)) / 5 for a, b in zip(exact, found, strict=True)])

    one, three, every = recall(1), recall(3), recall(25, group_rows=100)
    assert 0.7 < one < three < 1.0 and three >= 0.95  # approximate, and close
    assert every == 1.0  # searching every bucket is the exact search
    assert recall(3, group_rows=10_000) == three  # one group or six: the same neighbours


@pytest.mark.parametrize("rows_per_partition", [400, 170, 1200])
def test_same_degrees_whatever_the_partitions(rows_per_partition):
    df = frame(1200)
    np.testing.assert_array_equal(bucket_degrees(df, rows_per_partition), bucket_degrees(df, 1200))


def test_seed_changes_the_buckets_not_the_shape():
    df = frame(1200)
    a, b = bucket_degrees(df, 400, seed=1), bucket_degrees(df, 400, seed=2)
    assert a.shape == b.shape and (a == b).mean() > 0.9


def test_a_search_task_holds_its_group_not_the_table():
    blocks, lengths = blocks_of(frame(2400), 300)
    arrays = dask.compute(*blocks)
    centres, _ = bucket_centres([a[0] for a in arrays], 2400, seed=3, bucket_rows=60)
    ranked = [rank_block(a, centres, 7) for a in arrays]
    sizes = sum(np.bincount(r[:, 0], minlength=len(centres)) for r in ranked)
    group = search_groups(sizes, 8)
    routed = [route_block(a, r, sizes, group, 8, 5, 2) for a, r in zip(arrays, ranked, strict=True)]
    for g in range(8):
        pieces = [r[g] for r in routed]
        rows = sum(len(p["pos"]) for p in pieces)
        refs = sum(int(p["ref"].sum()) for p in pieces)
        assert 200 <= refs <= 400 and rows < 2400 / 2  # its buckets' 300 rows, and those probing
        assert len(group_search(pieces, len(centres), 5)[0]) == rows
    assert sum(int(r[g]["ref"].sum()) for r in routed for g in range(8)) == 2400  # each row once
    copies = sum(len(r[g]["pos"]) for r in routed for g in range(8))
    assert 2400 <= copies <= 2400 * 2  # each row goes to at most its probe count of groups


def routed_groups(n: int, rows_per_partition: int, n_groups: int, k: int = 5):
    """The pieces each of ``n_groups`` search tasks gets, of ``frame(n)``'s blocks."""
    arrays = dask.compute(*blocks_of(frame(n), rows_per_partition)[0])
    centres, sample = bucket_centres([a[0] for a in arrays], n, seed=3, bucket_rows=60)
    ranked = [rank_block(a, centres, 5) for a in arrays]
    sizes = sum(np.bincount(r[:, 0], minlength=len(centres)) for r in ranked)
    group = search_groups(sizes, n_groups)
    routed = [
        route_block(a, r, sizes, group, n_groups, k, 2) for a, r in zip(arrays, ranked, strict=True)
    ]
    return [[r[g] for r in routed] for g in range(n_groups)], centres, sample


def test_search_bytes_bound_a_search_tasks_measured_peak():
    (pieces, *_), centres, _ = routed_groups(20_000, 5_000, 2)
    rows = sum(len(p["pos"]) for p in pieces)
    held = sum(a.nbytes for p in pieces for a in p.values())
    tracemalloc.start()
    group_search(pieces, len(centres), 5)
    peak = tracemalloc.get_traced_memory()[1] + held
    tracemalloc.stop()
    assert 0.7 * search_bytes(rows, 4, 5) <= peak <= search_bytes(rows, 4, 5)


@pytest.mark.slow
def test_groups_are_cut_finer_where_the_largest_would_not_fit_a_worker():
    n, per_part = 20_000, 1_000
    lengths = np.full(n // per_part, per_part)
    _, centres, sample = routed_groups(n, per_part, 1)
    assert sized_groups(sample, centres, lengths, 5, 2, 10**9, None) == 1
    roomy = WorkerMemory(limit=10**9)
    assert sized_groups(sample, centres, lengths, 5, 2, 10**9, roomy) == 1
    tight = WorkerMemory(limit=int(search_bytes(n, 4, 5) / 4 / 0.8))  # a quarter of the rows
    n_groups = sized_groups(sample, centres, lengths, 5, 2, 10**9, tight)
    assert 4 < n_groups < 30
    groups, *_ = routed_groups(n, per_part, n_groups)
    largest = max(sum(len(p["pos"]) for p in pieces) for pieces in groups)
    assert search_bytes(largest, 4, 5) <= tight.free  # the real groups fit, not only the sample's
    with pytest.raises(FitMemoryError, match="routing of a partition of 5,000 rows.*smaller part"):
        sized_groups(sample, centres, np.full(4, 5_000), 5, 2, 10**9, WorkerMemory(2 * 10**6))
    with pytest.raises(FitMemoryError, match=r"search of \d+ groups' largest.*method='exact'"):
        sized_groups(sample, centres, np.full(400, 50), 5, 2, 10**9, WorkerMemory(limit=10**5))


@pytest.mark.slow
def test_overlap_degrees_sizes_its_search_by_the_workers_memory(monkeypatch):
    """End to end: groups cut finer for a small worker (3 groups, not 1) give the same
    degrees; a worker too small for a partition's routing is refused before any search."""
    table = sd.load_table(frame(20_000), label="y", rows_per_partition=2_500)
    groups = []
    sized = sized_groups
    monkeypatch.setattr(
        "soak_dask.split.bucket_neighbours.sized_groups",
        lambda *a: groups.append(sized(*a)) or groups[-1],
    )
    roomy = overlap_degrees(table, 5, method="blockwise").data[DO_COLUMN].compute()
    monkeypatch.setattr("soak_dask.split.overlap.worker_memory", lambda c: task_memory(6 * 10**6))
    tight = overlap_degrees(table, 5, method="blockwise").data[DO_COLUMN].compute()
    assert groups == [1, 3]
    np.testing.assert_array_equal(tight.to_numpy(), roomy.to_numpy())
    monkeypatch.setattr("soak_dask.split.overlap.worker_memory", lambda c: task_memory(10**6))
    with pytest.raises(FitMemoryError, match=r"partition of 2,500 rows needs about 1\.18 MiB"):
        overlap_degrees(table, 5, method="blockwise")


def test_exchange_puts_each_target_in_its_own_partition():
    rows = pd.DataFrame({TARGET: [3, 0, 3, 1, 0], "v": np.arange(5.0)})
    moved = exchange(dd.from_pandas(rows, npartitions=2), 5)
    parts = dask.compute(*moved.to_delayed())
    assert [sorted(p["v"].tolist()) for p in parts] == [[1.0, 4.0], [3.0], [], [0.0, 2.0], []]


@pytest.mark.slow
def test_the_rows_travel_through_a_p2p_shuffle_on_a_cluster(cluster):
    """On a distributed cluster the two exchanges are Dask's P2P shuffles (disk-buffered): the
    graph holds no task per (partition, group) pair, and the degrees are the same as the
    in-process search's, whatever the partitions."""
    df = frame(2400)
    blocks, lengths = blocks_of(df, 100)
    expected = bucket_degrees(df, 2400)
    with distributed.Client(cluster) as client, dask.config.set(scheduler=client.get):
        found = bucket_neighbour_codes(blocks, lengths, 5, 3, 60, 2, 100)
        names = {str(key[0] if isinstance(key, tuple) else key) for key in dask.delayed(found).dask}
        assert any(name.startswith("p2pshuffle") for name in names)
        got = dask.compute(*found)
    np.testing.assert_array_equal(np.concatenate([degrees(*f) for f in got]), expected)


def test_probes_grow_where_buckets_are_small():
    ranked = np.array([[0, 1, 2, 3], [2, 3, 0, 1]])
    sizes = np.array([2, 1, 10, 10])
    assert probe_counts(ranked, sizes, k=5, probes=1).tolist() == [3, 1]
    assert probe_counts(ranked, sizes, k=5, probes=2).tolist() == [3, 2]


def test_overlap_degrees_blockwise_end_to_end():
    df = frame(300)
    table = sd.load_table(df, label="y", rows_per_partition=100)
    got = overlap_degrees(table, 4, method="blockwise").data[[POSITION, DO_COLUMN]].compute()
    exact = overlap_degrees(table, 4).data[DO_COLUMN].compute()
    assert got[POSITION].tolist() == list(range(300))
    # 300 rows, one bucket of 2,000 rows: the search is exact
    np.testing.assert_array_equal(got[DO_COLUMN].to_numpy(), exact.to_numpy())


@pytest.mark.parametrize(
    ("bucket_rows", "probes", "match"),
    [(5, 2, "bucket_rows=5"), (100, 0, "probes=0"), (100, True, "probes=True")],
)
def test_refusals(bucket_rows, probes, match):
    with pytest.raises(ValueError, match=match):
        check_search(bucket_rows, probes)
    with pytest.raises(ValueError, match="blockwise"):
        overlap_degrees(sd.load_table(frame(50), label="y"), method="blocks")


def test_float32_features_same_degrees_whatever_the_partitions():
    # float32 bands: their means, summed in float32, would differ with the partitioning
    df = frame(1200)
    df[[f"b{i}" for i in range(4)]] = (df[[f"b{i}" for i in range(4)]] + 0.3).astype(np.float32)
    np.testing.assert_array_equal(bucket_degrees(df, 170), bucket_degrees(df, 1200))


def test_the_sample_sends_a_share_of_each_partition_not_n():
    X = np.random.default_rng(1).normal(size=(20_000, 3))
    limit, limit_rows = np.uint64(2**64 * 1.5 * 500 / 20_000), []
    for n_parts in (1, 20):
        blocks = np.array_split(X, n_parts)
        parts = [dask.delayed(p) for p in blocks]
        limit_rows.append(sum(len(below_hash(p, 3, limit)[0]) for p in blocks))
        sample = seeded_sample(parts, 20_000, 500, 3)
        assert len(sample) == 500
        if n_parts == 1:
            first = sample
    np.testing.assert_array_equal(sample, first)  # the same rows, in the same order
    assert limit_rows[0] == limit_rows[1] < 1_000  # ~750 rows sent in all, not 500 per part


def test_compare_sampling_takes_the_blockwise_search():
    from soak_dask.split.sampling_splits import SamplingSplits

    assert SamplingSplits(methods=["overlap"], knn="blockwise").knn == "blockwise"
    with pytest.raises(ValueError, match="'blockwise'"):
        SamplingSplits(methods=["overlap"], knn="blocks")
