"""Results stores: ``overwrite=True`` replaces only a store that ``save_results`` wrote, never
other data or the input table; ``open_results`` names a path that is not a results store."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import soak_dask as sd

from ..conftest import toy_table


def results(**attrs) -> xr.Dataset:
    scores = pd.DataFrame(
        {
            "learner": "glm",
            "test_subset": np.repeat(["A", "B"], 2),
            "fold": [1, 2, 1, 2],
            "train_type": "same",
            "error": [10.0, 12.0, 9.0, 11.0],
        }
    )
    return sd.from_dataframe(scores, **attrs)


def contents(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("name", ["r.zarr", "r.nc"])
def test_a_results_store_is_replaced_only_when_asked(tmp_path, name):
    path = tmp_path / name
    sd.save_results(results(), path)
    with pytest.raises(FileExistsError, match=re.escape(f"{path} exists; pass overwrite=True")):
        sd.save_results(results(note="new"), path)
    sd.save_results(results(note="new"), path, overwrite=True)
    back = sd.open_results(path)
    assert back.attrs["note"] == "new" and "soak_dask_results" not in back.attrs
    xr.testing.assert_equal(back, results(note="new"))  # (NetCDF flattens 1-item lists)


def test_overwrite_refuses_a_directory_of_other_data(tmp_path):
    parquet = tmp_path / "pixels"
    parquet.mkdir()
    toy_table(n=30).to_parquet(parquet / "part-0.parquet")
    foreign = tmp_path / "foreign.zarr"  # a Zarr store, but not one of results
    xr.Dataset({"a": ("x", np.arange(3))}).to_zarr(foreign, consolidated=False)
    crowded = tmp_path / "crowded.zarr"  # results, with a file of the user's inside
    sd.save_results(results(), crowded)
    (crowded / "notes.txt").write_text("mine")
    netcdf = tmp_path / "other.nc"
    xr.Dataset({"a": ("x", np.arange(3))}).to_netcdf(netcdf)
    for path in (parquet, foreign, crowded, netcdf):
        before = contents(path) if path.is_dir() else {"": path.read_bytes()}
        with pytest.raises(FileExistsError, match=f"{path} holds data that is not a soak_dask"):
            sd.save_results(results(), path, overwrite=True)
        assert before == (contents(path) if path.is_dir() else {"": path.read_bytes()})


def test_overwrite_accepts_an_empty_directory_and_a_store_of_0_1_0(tmp_path):
    empty = tmp_path / "empty.zarr"
    empty.mkdir()
    sd.save_results(results(), empty, overwrite=True)
    old = tmp_path / "old.zarr"  # soak_dask 0.1.0 wrote no mark, only soak's title
    results(title="SOAK: Same/Other/All K-fold cross-validation").to_zarr(old, consolidated=False)
    sd.save_results(results(note="new"), old, overwrite=True)
    assert sd.open_results(old).attrs["note"] == "new"


def test_results_are_never_written_into_or_over_the_input(tmp_path):
    data = tmp_path / "pixels"
    data.mkdir()
    toy_table(n=30).to_parquet(data / "part-0.parquet")
    before = contents(data)
    for path, relation in [
        (data, "is the input table"),
        (data / "r.zarr", "is inside the input table's directory"),
        (tmp_path, "holds the input table"),
    ]:
        with pytest.raises(ValueError, match=re.escape(f"{path} {relation} ({data})")):
            sd.save_results(results(source=str(data)), path, overwrite=True)
    glob = str(data / "part-*.parquet")
    with pytest.raises(ValueError, match="is inside the input table's directory"):
        sd.save_results(results(source=glob), data / "r.nc")
    assert contents(data) == before


def test_open_results_names_what_is_not_a_results_store(tmp_path):
    with pytest.raises(FileNotFoundError, match=f"no results store at {tmp_path / 'absent'}"):
        sd.open_results(tmp_path / "absent")
    (tmp_path / "empty").mkdir()
    (tmp_path / "text.nc").write_text("not NetCDF")
    xr.Dataset({"a": ("x", np.arange(3))}).to_zarr(tmp_path / "plain.zarr", consolidated=False)
    for name in ("empty", "text.nc", "plain.zarr"):
        with pytest.raises(ValueError, match=f"{tmp_path / name} is not a soak results store"):
            sd.open_results(tmp_path / name)
