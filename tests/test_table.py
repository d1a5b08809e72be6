"""Loading: Parquet (file, directory, glob, hive), Zarr, fsspec URLs, in-memory frames."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
import xarray as xr

import soak_dask as sd


@pytest.fixture()
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    n = 120
    return pd.DataFrame(
        {
            "b1": rng.normal(size=n),
            "b2": rng.integers(0, 100, n).astype("int32"),
            "xcoord": np.arange(n, dtype=float),
            "region": np.repeat(["N", "S", "E"], n // 3),
            "poly": np.arange(n) // 4,
            "y": np.where(np.arange(n) // 4 % 2 == 0, "tree", "other"),  # one per poly
        }
    )


def _write_files(df: pd.DataFrame, directory, n_files: int = 3):
    directory.mkdir()
    bounds = np.linspace(0, len(df), n_files + 1).astype(int)
    for i, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
        df.iloc[lo:hi].to_parquet(directory / f"part-{i}.parquet", row_group_size=15)
    return directory


def test_roles_and_default_features(frame):
    table = sd.load_table(frame, label="y", subset="region", group="poly", exclude=["xcoord"])
    assert table.features == ("b1", "b2")
    assert table.task == "classification"
    assert isinstance(table.data, dd.DataFrame)
    assert table.roles == {
        "label": "y",
        "subset": "region",
        "group": "poly",
        "fold": None,
        "features": ["b1", "b2"],
    }


@pytest.mark.parametrize("kind", ["file", "directory", "glob", "url"])
def test_parquet_sources_give_the_same_rows(frame, tmp_path, kind):
    directory = _write_files(frame, tmp_path / "pixels")
    single = tmp_path / "one.parquet"
    frame.to_parquet(single)
    source = {
        "file": str(single),
        "directory": str(directory),
        "glob": str(directory / "part-*.parquet"),
        "url": f"file://{directory}",
    }[kind]
    table = sd.load_table(source, label="y", subset="region", features=["b1", "b2"])
    got = table.data.compute().reset_index(drop=True)
    pd.testing.assert_frame_equal(got, frame[["b1", "b2", "y", "region"]], check_dtype=False)
    if kind != "file":
        # One partition per group of row groups, fixed whatever columns a query needs.
        assert table.data.npartitions == 3
        assert table.data[["b1"]].npartitions == 3


def test_rows_per_partition(frame, tmp_path):
    directory = _write_files(frame, tmp_path / "pixels")  # 3 files of 40 rows, row groups of 15
    for rows, parts in [(15, 9), (30, 6), (1000, 3)]:
        table = sd.load_table(directory, label="y", subset="region", rows_per_partition=rows)
        assert table.data.npartitions == parts  # row groups combined, files never joined
        assert len(table.data.compute()) == len(frame)
    assert sd.load_table(frame, label="y", rows_per_partition=50).data.npartitions == 3
    with pytest.raises(ValueError, match=r"rows_per_partition=0: need a positive integer"):
        sd.load_table(frame, label="y", rows_per_partition=0)


def test_hive_partitioned_directory(frame, tmp_path):
    frame.to_parquet(tmp_path / "hive", partition_cols=["region"])
    table = sd.load_table(tmp_path / "hive", label="y", subset="region", features=["b1"])
    got = table.data.compute()
    assert sorted(got["region"].unique()) == ["E", "N", "S"]
    assert len(got) == len(frame)


def test_zarr_store_and_xarray_dataset(frame, tmp_path):
    ds = xr.Dataset({c: ("pixel", frame[c].to_numpy()) for c in ["b1", "b2", "poly"]})
    ds["y"] = ("pixel", frame["y"].to_numpy().astype(object))
    ds["region"] = ("pixel", frame["region"].to_numpy().astype(object))
    store = tmp_path / "pixels.zarr"
    ds.chunk({"pixel": 50}).to_zarr(store, consolidated=False)
    for source in (store, ds):
        table = sd.load_table(source, label="y", subset="region", group="poly")
        assert sorted(table.features) == ["b1", "b2"]  # a store lists variables in any order
        got = table.data.compute()
        np.testing.assert_array_equal(got["b1"].to_numpy(), frame["b1"].to_numpy())
        np.testing.assert_array_equal(got["y"].astype(str).to_numpy(), frame["y"].to_numpy())
    assert sd.load_table(store, label="y").data.npartitions == 3


def test_errors_name_the_problem(frame, tmp_path):
    with pytest.raises(ValueError, match="subset column 'regin' is not in"):
        sd.load_table(frame, label="y", subset="regin")
    with pytest.raises(ValueError, match=r"feature columns \['region'\] are not numeric"):
        sd.load_table(frame, label="y", features=["b1", "region"])
    with pytest.raises(ValueError, match="cannot also be features"):
        sd.load_table(frame, label="y", subset="region", features=["b1", "poly"], group="poly")
    with pytest.raises(FileNotFoundError, match="matches no file"):
        sd.load_table(str(tmp_path / "nothing-*.parquet"), label="y")
    with pytest.raises(FileNotFoundError, match="no file or directory"):
        sd.load_table(tmp_path / "missing.parquet", label="y")
    empty = tmp_path / "empty.parquet"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="empty file"):
        sd.load_table(empty, label="y")
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    frame.to_parquet(mixed / "a.parquet")
    frame.assign(b1=frame["b1"].astype(str)).to_parquet(mixed / "b.parquet")
    with pytest.raises(ValueError, match=r"different schemas.*\['b1'\]"):
        sd.load_table(mixed, label="y")
    dup = pd.DataFrame(np.ones((3, 2)), columns=["a", "a"]).assign(y="t")
    with pytest.raises(ValueError, match=r"duplicate column names \['a'\]"):
        sd.load_table(dup, label="y")


def test_float_label_means_regression_and_task_override(frame):
    assert sd.load_table(frame, label="b1").task == "regression"
    table = sd.load_table(frame, label="b2", task="classification", features=["b1"])
    assert table.task == "classification"
    with pytest.raises(ValueError, match="task='clustering'"):
        sd.load_table(frame, label="y", task="clustering")


def test_source_files_are_never_modified(frame, tmp_path):
    directory = _write_files(frame, tmp_path / "pixels")
    before = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in directory.iterdir()}
    table = sd.load_table(directory, label="y", subset="region", group="poly", exclude=["xcoord"])
    sd.soak(table, "featureless", n_folds=3, progress=False)
    after = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in directory.iterdir()}
    assert before == after
