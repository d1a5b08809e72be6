"""Loading: Parquet (file, directory, glob, hive), Zarr, fsspec URLs, in-memory frames."""

from __future__ import annotations

import os
import warnings

import dask
import dask.dataframe as dd
import fsspec
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from sklearn.utils.multiclass import type_of_target

import soak_dask as sd
from soak_dask.tables.roles import is_coordinate_name

from ..conftest import AZTREES_FEATURES, shared_file


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
        "excluded_coordinates": [],
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


# --- coordinates, column names and the task (issue 11) ----------------------------------------


def test_coordinate_columns_are_left_out_with_a_warning(frame):
    frame = frame.assign(Lat=np.linspace(30, 31, len(frame)), row_id=np.arange(len(frame)))
    with pytest.warns(UserWarning, match=r"coordinate columns \['xcoord', 'Lat'\] are left out"):
        table = sd.load_table(frame, label="y", subset="region", group="poly")
    assert table.features == ("b1", "b2", "row_id")
    assert table.excluded_coordinates == ("xcoord", "Lat")
    assert table.roles["excluded_coordinates"] == ["xcoord", "Lat"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # asked for: no warning
        # but row_id, a default feature, is warned about as an id (tests/tables/test_input_traps)
        warnings.filterwarnings("ignore", message="integer columns that look like ids")
        given = sd.load_table(frame, label="y", subset="region", features=["b1", "xcoord"])
        included = sd.load_table(frame, label="y", subset="region", coordinates="include")
        excluded = sd.load_table(frame, label="y", subset="region", exclude=["xcoord", "Lat"])
    assert given.features == ("b1", "xcoord") and given.excluded_coordinates == ()
    assert included.features == ("b1", "b2", "xcoord", "poly", "Lat", "row_id")
    assert excluded.features == ("b1", "b2", "poly", "row_id")
    assert excluded.excluded_coordinates == ()
    with pytest.raises(ValueError, match="coordinates='both' is not 'exclude' or 'include'"):
        sd.load_table(frame, label="y", coordinates="both")


@pytest.mark.parametrize(
    ("name", "coordinate"),
    [
        *[(n, True) for n in ["x", "Y", "X_Coord", "y-coord", "coord_x", "lon", "LONGITUDE"]],
        *[(n, True) for n in ["lat", "Easting", "northing", "row", "col", "x coordinate"]],
        *[(n, False) for n in ["x1", "B04", "row_id", "latency", "colour", "index", "y_hat"]],
    ],
)
def test_coordinate_names(name, coordinate):
    assert is_coordinate_name(name) is coordinate


def test_only_coordinates_left_is_an_error_saying_how_to_use_them():
    df = pd.DataFrame({"x": np.arange(8.0), "y": list("abababab")})
    with pytest.raises(ValueError, match=r"coordinate columns \['x'\] are left out unless"):
        sd.load_table(df, label="y")
    assert sd.load_table(df, label="y", coordinates="include").features == ("x",)


def test_aztrees_coordinates_are_left_out_with_a_warning():
    path = shared_file("aztrees.parquet")
    with pytest.warns(UserWarning, match=r"\['xcoord', 'ycoord'\].*coordinates='include'"):
        table = sd.load_table(path, label="y", subset="region3", group="polygon")
    assert table.features == tuple(AZTREES_FEATURES)
    assert table.excluded_coordinates == ("xcoord", "ycoord")


@pytest.mark.parametrize(
    "values",
    [
        [0.0, 1.0, 1.0, 0.0, 1.0, 0.0],
        [1.0, 2.0, 3.0, 2.0, 1.0, 3.0],
        [-1.0, 1.0, -1.0, 1.0, 1.0, -1.0],
        [0.0, 0.5, 1.0, 0.0, 1.0, 0.0],
        [0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
        [0.0, 1.0, np.inf, 0.0, 1.0, 0.0],
    ],
)
def test_float_label_task_as_scikit_learn_type_of_target(values):
    df = pd.DataFrame({"b1": np.arange(6.0), "label": np.float32(values)})
    target = type_of_target(np.asarray(values)) if np.isfinite(values).all() else "continuous"
    expected = "classification" if target in ("binary", "multiclass") else "regression"
    for source in (df, dd.from_pandas(df, npartitions=3)):
        assert sd.load_table(source, label="label").task == expected


def test_task_is_inferred_without_a_pass_unless_the_label_is_float(frame, tmp_path):
    directory = _write_files(frame.assign(b3=frame["b2"] % 2 * 1.0), tmp_path / "pixels")
    # Several files: without duplicates="allow" their rows would be compared in a pass.
    allow = {"duplicates": "allow"}
    for label, task, passes in [("y", "classification", 0), ("b2", "classification", 0)]:
        computes = []
        with dask.callbacks.Callback(start=computes.append):
            table = sd.load_table(directory, label=label, features=["b1"], **allow)
        assert (table.task, len(computes)) == (task, passes)
    computes = []
    with dask.callbacks.Callback(start=computes.append):
        table = sd.load_table(directory, label="b3", features=["b1"], **allow)
    assert table.task == "classification" and len(computes) == 1  # one pass, over b3 alone
    with dask.callbacks.Callback(start=computes.append):
        sd.load_table(directory, label="b3", features=["b1"], task="regression", **allow)
    assert len(computes) == 1  # the override needs no pass


def test_source_files_are_never_modified(frame, tmp_path):
    directory = _write_files(frame, tmp_path / "pixels")
    before = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in directory.iterdir()}
    table = sd.load_table(directory, label="y", subset="region", group="poly", exclude=["xcoord"])
    sd.soak(table, "featureless", n_folds=3, options=sd.RunOptions(progress=False))
    after = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in directory.iterdir()}
    assert before == after


def test_files_whose_columns_differ_only_in_order_are_read_by_name(frame, tmp_path):
    directory = tmp_path / "pixels"
    directory.mkdir()
    frame.iloc[:60].to_parquet(directory / "a.parquet")
    frame.iloc[60:][frame.columns[::-1]].to_parquet(directory / "b.parquet")
    table = sd.load_table(directory, label="y", subset="region", features=["b1", "b2"])
    got = table.data.compute().reset_index(drop=True)
    pd.testing.assert_frame_equal(got, frame[["b1", "b2", "y", "region"]], check_dtype=False)


def test_parquet_without_rows_is_refused_by_name(frame, tmp_path):
    zero = tmp_path / "zero.parquet"
    frame.iloc[:0].to_parquet(zero)
    with pytest.raises(ValueError, match=f"the Parquet data at '{zero}' has no rows"):
        sd.load_table(zero, label="y", subset="region")
    empty = dd.from_pandas(frame.iloc[:0], npartitions=1)
    table = sd.load_table(empty, label="y", subset="region")
    with pytest.raises(ValueError, match=r"the table \(dask DataFrame\) has no rows"):
        sd.soak(table, "featureless", n_folds=3, options=sd.RunOptions(progress=False))


def test_a_file_corrupt_in_the_middle_is_named(frame, tmp_path):
    path = tmp_path / "pixels.parquet"
    frame.to_parquet(path, row_group_size=40)
    data = bytearray(path.read_bytes())
    middle = len(data) // 3
    data[middle : middle + 200] = bytes(200)  # a page destroyed; the footer is intact
    path.write_bytes(bytes(data))
    table = sd.load_table(path, label="y", subset="region", features=["b1", "b2"])
    with pytest.raises(OSError, match=rf"cannot read row groups \[0, 1, 2\] of {path}: .*corrupt"):
        table.data.compute()


def test_parquet_fingerprint_sees_files_and_footers(frame, tmp_path):
    """Same files: same fingerprint; a rewrite that keeps size and modification time but
    changes a value's statistics: another one."""
    path = tmp_path / "pixels.parquet"
    kw = {"compression": None, "use_dictionary": False, "row_group_size": 40}
    frame.to_parquet(path, **kw)

    def fingerprint() -> dict[str, str]:
        table = sd.load_table(path, label="y", subset="region", exclude=["xcoord"])
        return table.files.fingerprint()

    before = fingerprint()
    assert before == fingerprint() and list(before) == [str(path)]
    stat = path.stat()
    frame.assign(b1=frame["b1"].where(frame.index != 5, 99.0)).to_parquet(path, **kw)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size and path.stat().st_mtime_ns == stat.st_mtime_ns
    assert fingerprint() != before  # the first row group's maximum of b1 is now 99


def test_zarr_fingerprint_sees_a_rewritten_chunk(frame, tmp_path):
    store = tmp_path / "pixels.zarr"
    ds = xr.Dataset({c: ("pixel", frame[c].to_numpy()) for c in ["b1", "b2", "poly"]})
    ds.chunk({"pixel": 50}).to_zarr(store, consolidated=False)
    table = sd.load_table(store, label="poly")
    before = table.files.fingerprint()
    assert set(before) == {"b1", "b2", "poly", "zarr.json"}
    assert before == sd.load_table(store, label="poly").files.fingerprint()
    changed = ds.assign(b2=ds["b2"] + 1).isel(pixel=slice(50, 100)).chunk({"pixel": 50})
    changed.drop_vars(["b1", "poly"]).to_zarr(
        store, region={"pixel": slice(50, 100)}, consolidated=False
    )
    after = table.files.fingerprint()
    assert {k for k in before if before[k] != after[k]} == {"b2"}


def test_fingerprint_of_files_on_a_store_without_local_paths(frame):
    """fsspec's in-memory file system stands for an object store: files listed per folder."""
    fs = fsspec.filesystem("memory")
    root = "/soak-fingerprint-test"
    try:
        for i, part in enumerate((frame.iloc[:60], frame.iloc[60:])):
            with fs.open(f"{root}/part-{i}.parquet", "wb") as f:
                part.to_parquet(f)
        table = sd.load_table(f"memory://{root}", label="y", subset="region", exclude=["xcoord"])
        before = table.files.fingerprint()
        assert sorted(before) == [f"{root}/part-0.parquet", f"{root}/part-1.parquet"]
        assert before == table.files.fingerprint()
        with fs.open(f"{root}/part-1.parquet", "wb") as f:
            frame.iloc[60:].iloc[::-1].to_parquet(f)
        after = table.files.fingerprint()
        assert [k for k in before if before[k] != after[k]] == [f"{root}/part-1.parquet"]
    finally:
        fs.rm(root, recursive=True)


@pytest.mark.parametrize(
    ("role", "typo", "meant"), [("label", "Y", "y"), ("subset", "regoin", "region")]
)
def test_a_mistyped_role_column_is_named_with_its_close_matches(role, typo, meant):
    frame = pd.DataFrame({"x": [1.0, 2.0], "y": ["a", "b"], "region": ["N", "S"]})
    roles = {"label": "y", role: typo}
    hint = rf"{role} column '{typo}' is not in .* \(did you mean '{meant}'\?\)"
    with pytest.raises(ValueError, match=hint):
        sd.load_table(frame, **roles)
