"""Stores that never lie (issue 38, item 4; item 8's AOA names): a results store or AOA store
is complete or absent, and one missing a file, with a file altered, or whose write did not
finish is refused in one line naming it and what is wrong, where it used to read as NaN or as
wrong numbers. A full disk is injected (``ENOSPC`` from Zarr's file writes), as are a deleted,
bit-flipped or truncated chunk.
"""

from __future__ import annotations

import errno
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
import zarr
import zarr.storage._local as zarr_local
from fsspec.implementations.local import LocalFileSystem

import soak_dask as sd
from soak_dask.app import cli
from soak_dask.io.stores import MARK, StoreError
from soak_dask.spatial.aoa_io import open_aoa

from .test_results_store import results

CHUNK = "error/c/0/0/0/0"  # the one chunk of the error variable of ``results()``


def files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (hidden ones too) and its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def refused(path: Path, *words: str, opener=sd.open_results) -> str:
    """The one-line message with which ``opener`` refuses ``path``, holding ``words``."""
    with pytest.raises(StoreError) as info:
        opener(path)
    message = str(info.value)
    assert "\n" not in message and str(path) in message, message
    for word in words:
        assert word in message, message
    return message


class Stopped(Exception):
    """A write stopped half-way (what a ``KeyboardInterrupt`` would be, which Zarr's event
    loop thread does not survive)."""


def full_disk_after(monkeypatch, writes: int, error: BaseException | None = None) -> None:
    """Zarr's local file writes fail after ``writes`` succeed: ``ENOSPC``, or ``error``."""
    real, done = zarr_local._put, []

    def put(path, value, exclusive=False):
        done.append(path)
        if len(done) > writes:
            raise error or OSError(errno.ENOSPC, "No space left on device")
        return real(path, value, exclusive)

    monkeypatch.setattr(zarr_local, "_put", put)


def flip_a_bit(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x10
    path.write_bytes(bytes(data))


@pytest.fixture
def store(tmp_path) -> Path:
    return sd.save_results(results(), tmp_path / "r.zarr")


# --- results stores ----------------------------------------------------------------------


@pytest.mark.parametrize("replace", [False, True])
def test_a_full_disk_leaves_no_store_and_names_the_path(tmp_path, monkeypatch, replace):
    path = tmp_path / "r.zarr"
    if replace:
        sd.save_results(results(note="earlier"), path)
    before = files(tmp_path)
    full_disk_after(monkeypatch, 3)
    with pytest.raises(OSError, match="the disk is full") as info:
        sd.save_results(results(), path, overwrite=replace)
    assert info.value.errno == errno.ENOSPC and str(path) in str(info.value)
    assert files(tmp_path) == before  # no partial store, no temporary left beside it
    monkeypatch.undo()
    if replace:
        assert sd.open_results(path).attrs["note"] == "earlier"


def test_a_full_disk_leaves_no_netcdf_file(tmp_path, monkeypatch):
    real = LocalFileSystem.pipe_file

    def half_then_full(self, path, value, **kwargs):
        real(self, path, value[: len(value) // 2], **kwargs)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(LocalFileSystem, "pipe_file", half_then_full)
    with pytest.raises(OSError, match=f"the disk is full: writing the results store {tmp_path}"):
        sd.save_results(results(), tmp_path / "r.nc")
    assert list(tmp_path.iterdir()) == []


def test_a_store_stopped_mid_write_is_absent(tmp_path, monkeypatch):
    full_disk_after(monkeypatch, 4, Stopped())
    with pytest.raises(Stopped):
        sd.save_results(results(), tmp_path / "r.zarr")
    assert list(tmp_path.iterdir()) == []


def test_a_missing_chunk_is_refused_not_read_as_nan(store):
    (store / CHUNK).unlink()
    refused(store, "variable 'error' chunk 0.0.0.0 missing")


def test_a_flipped_bit_is_refused_not_read_as_another_error(store):
    flip_a_bit(store / CHUNK)
    refused(store, "variable 'error' chunk 0.0.0.0 checksum mismatch (the store was altered)")


def test_a_truncated_chunk_is_refused_in_one_line_not_a_raw_zstd_error(store):
    chunk = store / CHUNK
    chunk.write_bytes(chunk.read_bytes()[:10])
    message = refused(store, "variable 'error' chunk 0.0.0.0 checksum mismatch")
    assert "Zstd" not in message


def test_an_added_chunk_and_edited_attributes_are_refused(store, tmp_path):
    added = Path(shutil.copytree(store, tmp_path / "added.zarr"))
    (added / "error/c/0/0/0/1").write_bytes((added / CHUNK).read_bytes())
    refused(added, "variable 'error' chunk 0.0.0.1 was added after the store was written")
    group = zarr.open_group(str(store), mode="r+")
    group.attrs["measures"] = ["accuracy"]
    refused(store, "root attributes checksum mismatch")


def test_a_store_without_its_completion_mark_is_refused(store):
    del zarr.open_group(str(store), mode="r+").attrs[MARK]
    refused(store, "missing completion mark", "the write did not finish")


def test_an_altered_netcdf_file_is_refused(tmp_path):
    path = sd.save_results(results(), tmp_path / "r.nc")
    data = bytearray(path.read_bytes())
    at = data.find(np.array([10.0, 12.0]).tobytes())  # the error values, as stored
    data[at + 7] ^= 0x01
    path.write_bytes(bytes(data))
    refused(path, "variable 'error' checksum mismatch")


def test_an_older_store_needs_an_explicit_opt_in(tmp_path):
    old = tmp_path / "old.zarr"  # as soak_dask wrote results before the completion mark
    results().assign_attrs(soak_dask_results=1).to_zarr(old, consolidated=False)
    refused(old, "older soak_dask", "allow_unverified=True")
    back = sd.open_results(old, allow_unverified=True)
    xr.testing.assert_equal(back, results())
    (old / CHUNK).write_bytes((old / CHUNK).read_bytes()[:10])  # then damaged: one line
    with pytest.raises(ValueError, match="is damaged") as info:
        sd.open_results(old, allow_unverified=True)
    assert "\n" not in str(info.value)


def test_soak_report_of_a_damaged_store_prints_one_error_line(store, tmp_path, capsys):
    flip_a_bit(store / CHUNK)
    assert cli.main(["report", str(store), "--out", str(tmp_path / "report")]) != 0
    err = capsys.readouterr().err
    assert err.startswith("soak: error: ") and len(err.strip().splitlines()) == 1, err
    assert str(store) in err and "checksum mismatch" in err, err
    assert not (tmp_path / "report").exists()


# --- AOA stores --------------------------------------------------------------------------


@pytest.fixture
def aoa_ds() -> xr.Dataset:
    """The AOA of a small raster (12 x 10 cells, chunked 6 x 5) from 20 training points."""
    rng = np.random.default_rng(1)
    train = pd.DataFrame(rng.normal(size=(20, 2)), columns=["a", "b"])
    cells = rng.normal(scale=2.0, size=(2, 12, 10))
    raster = xr.Dataset(
        {name: (("y", "x"), layer) for name, layer in zip("ab", cells, strict=True)},
        coords={"y": np.arange(12.0)[::-1], "x": np.arange(10.0)},
    ).chunk({"y": 6, "x": 5})
    return sd.aoa(train, raster, features=["a", "b"])


def test_an_aoa_store_opens_whole_and_a_damaged_one_is_refused(aoa_ds, tmp_path):
    store = sd.write_aoa(aoa_ds, tmp_path / "aoa.zarr")
    back = open_aoa(store)
    xr.testing.assert_equal(back[["di", "aoa"]].compute(), aoa_ds[["di", "aoa"]].compute())
    assert MARK not in back.attrs
    chunks = sorted(p for p in (store / "di").rglob("*") if p.is_file() and p.name != "zarr.json")
    chunks[1].unlink()  # as a copy stopped half-way, or a store killed before the rename
    refused(store, "variable 'di' chunk", "missing", opener=open_aoa)
    del zarr.open_group(str(store), mode="r+").attrs[MARK]
    refused(store, "missing completion mark", opener=open_aoa)


KILLED_MID_WRITE = """
import os, signal, sys
import numpy as np, pandas as pd, xarray as xr
import zarr.storage._local as zarr_local
import soak_dask as sd

real, done = zarr_local._put, []
def put(path, value, exclusive=False):
    done.append(path)
    if len(done) > 6:
        os.kill(os.getpid(), signal.SIGKILL)
    return real(path, value, exclusive)
zarr_local._put = put
train = pd.DataFrame({"a": np.arange(8.0), "b": np.arange(8.0) ** 2})
raster = xr.Dataset({v: (("y", "x"), np.ones((8, 8))) for v in "ab"}).chunk(4)
sd.write_aoa(sd.aoa(train, raster, features=["a", "b"]), sys.argv[1])
"""


@pytest.mark.slow
def test_an_aoa_store_killed_mid_write_is_absent_not_nan(tmp_path):
    store = tmp_path / "aoa.zarr"
    proc = subprocess.run(
        [sys.executable, "-c", KILLED_MID_WRITE, str(store)], capture_output=True, timeout=120
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]
    assert not store.exists()  # (its partial sibling is hidden beside it)
    with pytest.raises(FileNotFoundError, match=f"no AOA store at {store}"):
        open_aoa(store)


def test_write_aoa_refuses_a_netcdf_name_and_a_place_inside_a_store(aoa_ds, store, tmp_path):
    with pytest.raises(ValueError, match=r"x\.nc ends in \.nc, but write_aoa writes a Zarr"):
        sd.write_aoa(aoa_ds, tmp_path / "x.nc")
    with pytest.raises(ValueError, match=f"is inside the store {store}"):
        sd.write_aoa(aoa_ds, store / "aoa.zarr")
    aoa_store = sd.write_aoa(aoa_ds, tmp_path / "aoa.zarr")
    with pytest.raises(ValueError, match=f"is inside the store {aoa_store}"):
        sd.save_results(results(), aoa_store / "r.zarr")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["aoa.zarr", "r.zarr"]
