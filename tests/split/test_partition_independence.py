"""No key depends on the partitioning (issue 41, item 2): folds, repeats' folds and bootstrap
counts, sampling draws and degrees of overlap are the same for a Parquet table read whole, as
a 2-column projection, and with ``dataframe.parquet.minimum-partition-size`` at 1 MB and
1 GB -- read by ``load_table`` from the path, or handed to it as Dask's ``read_parquet``
frame, whose partitions change with the columns selected (dask #12193)."""

from __future__ import annotations

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import soak_dask as sd
from soak_dask.split.outer import Bootstrap, KFoldDesign
from soak_dask.split.overlap import DO_COLUMN, overlap_degrees
from soak_dask.split.sampling import random_split, stratified_split

N_ROWS = 3000
FEATURES = ["b0", "b1", "b2", "b3"]
MIN_SIZE = "dataframe.parquet.minimum-partition-size"


@pytest.fixture(autouse=True)
def _sync():
    with dask.config.set(scheduler="sync"):
        yield


@pytest.fixture(scope="module")
def parquet_dir(tmp_path_factory):
    """3,000 rows in 3 files of 4 row groups each: two overlapping classes in 4 bands."""
    path = tmp_path_factory.mktemp("pixels")
    rng = np.random.default_rng(7)
    X = rng.normal(size=(N_ROWS, len(FEATURES)))
    y = np.where(X[:, 0] + rng.normal(size=N_ROWS) > 0, "a", "b")
    df = pd.DataFrame(X, columns=FEATURES).assign(y=y)
    for i, start in enumerate(range(0, N_ROWS, 1000)):
        df.iloc[start : start + 1000].to_parquet(
            path / f"part{i}.parquet", row_group_size=250, index=False
        )
    return str(path)


def loads(path: str, features: list[str], frames: bool = True) -> dict[str, sd.Table]:
    """The same rows and ``features``: read by ``load_table`` from the path at each minimum
    partition size, and (``frames``) handed to it as ``read_parquet``'s projection at 1 MB and
    1 GB and whole at 1 GB."""
    out = {}
    for size in (None, "1MB", "1GB"):
        with dask.config.set({MIN_SIZE: size} if size else {}):
            out[f"path {size}"] = sd.load_table(path, label="y", features=features)
            if frames and size:
                frame = dd.read_parquet(path, columns=[*features, "y"])
                out[f"read_parquet {size}"] = sd.load_table(frame, label="y")
    if frames:
        with dask.config.set({MIN_SIZE: "1GB"}):  # every column read, the others not features
            whole = dd.read_parquet(path)
            out["whole 1GB"] = sd.load_table(whole, label="y", features=features)
    return out


def column(table: sd.Table, name: str) -> np.ndarray:
    return table.data[name].compute().to_numpy()


def added(before: sd.Table, after: sd.Table) -> dict[str, np.ndarray]:
    return {c: column(after, c) for c in after.data.columns if c not in before.data.columns}


def fold_keys(table: sd.Table) -> dict[str, np.ndarray]:
    """``assign_folds``' folds and two repeats' folds of repeated CV."""
    out = {"folds": column(f := sd.assign_folds(table, 5, seed=3), f.fold)}
    return out | added(table, KFoldDesign(5, n_repeats=2, seed=3).add_keys(table))


def drawn_keys(table: sd.Table) -> dict[str, np.ndarray]:
    """Three bootstrap resamples' counts, a random and a stratified train/test draw."""
    out = added(table, Bootstrap(3, seed=3).add_keys(table))
    out["random"] = column(random_split(table, 0.7, seed=3), "train")
    out["stratified"] = column(stratified_split(table, 0.7, seed=3), "train")
    return out


def assert_same(tables: dict[str, sd.Table], keys, n_keys: int) -> None:
    first, *others = (keys(t) for t in tables.values())
    assert len(first) == n_keys
    for name, got in zip(list(tables)[1:], others, strict=True):
        assert got.keys() == first.keys(), name
        for key, values in first.items():
            np.testing.assert_array_equal(got[key], values, err_msg=f"{key}: {name}")


def degrees(table: sd.Table, method: str) -> np.ndarray:
    return column(overlap_degrees(table, 5, method=method, seed=3), DO_COLUMN)


def test_the_loads_differ_in_partitions(parquet_dir):
    """The comparison means something: Dask fuses a projected read into fewer partitions."""
    tables = {**loads(parquet_dir, FEATURES), **loads(parquet_dir, ["b0"])}
    counts = {t.data.optimize().npartitions for t in tables.values()}
    assert len(counts) > 1


@pytest.mark.slow  # about 10-20 s: 8-9 tables, a pass per key
def test_drawn_keys_are_the_same_whatever_the_read(parquet_dir):
    tables = loads(parquet_dir, FEATURES)  # the keys do not read the features: one projection
    tables["b0 projection"] = loads(parquet_dir, ["b0"])["read_parquet 1MB"]
    assert_same(tables, drawn_keys, 3 + 2)


@pytest.mark.slow  # about 10-20 s: 8-9 tables, a pass per key
def test_folds_are_the_same_whatever_the_read(parquet_dir):
    tables = loads(parquet_dir, FEATURES, frames=False)
    tables |= {f"b0 {k}": t for k, t in loads(parquet_dir, ["b0"], frames=False).items()}
    assert_same(tables, fold_keys, 1 + 2)


@pytest.mark.slow  # about 10-20 s: 8 tables, a pass per key
def test_folds_of_a_read_parquet_frame_are_the_same(parquet_dir):
    """Dask's ``read_parquet`` frames (whole, as a projection, at 1 MB and 1 GB) get the folds
    of the path read whole: their key columns' projection is fused into fewer partitions
    than the frame's, which the folds are dealt over (dask #12193)."""
    tables = loads(parquet_dir, FEATURES)
    tables |= {f"b0 {k}": t for k, t in loads(parquet_dir, ["b0"]).items() if "path" not in k}
    frames = [t for name, t in tables.items() if "path" not in name]
    fused = [t for t in frames if t.data[[t.subset, t.label]].optimize().npartitions
             < t.data.optimize().npartitions]  # fmt: skip
    assert fused, "no frame's key projection is fused: the test would not test the fix"
    assert_same(tables, fold_keys, 1 + 2)


def test_folds_of_a_fused_frame_read_with_other_columns(parquet_dir):
    """Folds dealt over a frame whose key projection is fused come out the same read alone,
    beside a feature, or with every column, each fold within a row of balance per class."""
    with dask.config.set({MIN_SIZE: "1MB"}):
        frame = sd.load_table(dd.read_parquet(parquet_dir, columns=["b0", "y"]), label="y")
        folded = sd.assign_folds(frame, 5, seed=3)
        alone = column(folded, folded.fold)
        beside = folded.data[["b0", folded.fold]].compute()[folded.fold].to_numpy()
        whole = folded.data.compute()[folded.fold].to_numpy()
    reference = sd.assign_folds(sd.load_table(parquet_dir, label="y", features=["b0"]), 5, seed=3)
    expected = column(reference, reference.fold)
    for got in (alone, beside, whole):
        np.testing.assert_array_equal(got, expected)
    sizes = np.bincount(expected)[1:]
    assert len(sizes) == 5 and sizes.max() - sizes.min() <= 2  # within one a class


@pytest.mark.parametrize("method", ["exact", pytest.param("blockwise", marks=pytest.mark.slow)])
@pytest.mark.parametrize("features", [FEATURES, ["b0"]])
def test_overlap_degrees_are_the_same_whatever_the_read(parquet_dir, method, features):
    tables = loads(parquet_dir, features)
    first, *others = (degrees(t, method) for t in tables.values())
    assert len(first) == N_ROWS and 0 < first.mean() < 5
    for name, got in zip(list(tables)[1:], others, strict=True):
        np.testing.assert_array_equal(got, first, err_msg=name)
