"""Object storage, end to end, against an S3-compatible server (moto) on loopback: a Parquet
table read lazily from ``s3://``, SOAK on a LocalCluster with its checkpoint on S3, results
written there and read back, a resume from the remote checkpoint, and refusals to write over
or into data that soak_dask did not write."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace

import dask.dataframe as dd
import fsspec
import pytest
import s3fs
import xarray as xr
from distributed import Client, LocalCluster
from moto.server import ThreadedMotoServer

import soak_dask as sd
from soak_dask.run.checkpoint import check_checkpoint_dir, remove_checkpoint
from soak_dask.tables.generated import write_pixel_parquet

from ..results.test_results_store import results
from .test_soak import FITS, CountingClassifier

TIMINGS = ["fit_seconds", "predict_seconds"]
BUCKET = "soak"


@pytest.fixture(scope="module")
def s3(tmp_path_factory) -> Iterator[SimpleNamespace]:
    """A moto S3 server on 127.0.0.1 (a free port) holding ``s3://soak/pixels/`` (Parquet)."""
    env = pytest.MonkeyPatch()
    # Fake credentials, set before any client is made, so nothing looks for real ones.
    env.setenv("AWS_ACCESS_KEY_ID", "testing")
    env.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    env.setenv("AWS_DEFAULT_REGION", "us-east-1")
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    options = {"endpoint_url": f"http://{host}:{port}"}
    fs = s3fs.S3FileSystem(**options)
    fs.mkdir(BUCKET)
    local = write_pixel_parquet(
        tmp_path_factory.mktemp("s3") / "pixels",
        n_files=2,
        n_pixels=600,
        n_polygons=60,
        tree_fraction=0.5,
    )
    fs.put(f"{local}/", f"{BUCKET}/pixels/", recursive=True)
    yield SimpleNamespace(options=options, fs=fs)
    server.stop()
    env.undo()


@pytest.fixture(scope="module")
def client(s3) -> Iterator[Client]:
    # Workers in this process, so that CountingClassifier's count is seen here.
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


@contextmanager
def endpoint(s3: SimpleNamespace) -> Iterator[None]:
    """fsspec's configuration for ``s3://``: how ``soak(checkpoint="s3://...")`` reaches the
    server, since soak takes no storage_options for its checkpoint."""
    with pytest.MonkeyPatch.context() as conf:
        conf.setitem(fsspec.config.conf, "s3", dict(s3.options))
        yield


def _table(s3: SimpleNamespace) -> sd.Table:
    return sd.load_table(
        f"s3://{BUCKET}/pixels",
        label="label",
        subset="region",
        group="polygon",
        exclude=["x", "y"],
        storage_options=s3.options,
    )


def _soak(s3: SimpleNamespace, client: Client, table: sd.Table, **kw) -> xr.Dataset:
    learners = {"count": CountingClassifier(), "base": "featureless"}
    options, kw = sd.RunOptions.among(kw, client=client, progress=False)
    with endpoint(s3):
        return sd.soak(table, learners, n_folds=2, **kw, options=options)


@pytest.mark.slow
def test_a_run_reads_writes_and_resumes_on_s3(s3, client):
    table = _table(s3)
    assert isinstance(table.data, dd.DataFrame) and table.source == f"s3://{BUCKET}/pixels"
    checkpoint = f"s3://{BUCKET}/ckpt"
    FITS.clear()
    full = _soak(s3, client, table, checkpoint=checkpoint)
    fitted = len(FITS)
    tasks = s3.fs.glob(f"{BUCKET}/ckpt/task-*.json")
    assert s3.fs.isfile(f"{BUCKET}/ckpt/settings.json") and tasks

    sibling = f"{BUCKET}/out.zarr.checkpoint/notes.txt"  # shares the store's name as a prefix
    s3.fs.pipe_file(sibling, b"mine")
    for name in ("out.zarr", "out.nc"):
        url = f"s3://{BUCKET}/{name}"
        assert sd.save_results(full, url, storage_options=s3.options) == url
        xr.testing.assert_equal(sd.open_results(url, storage_options=s3.options), full)
        sd.save_results(full, url, overwrite=True, storage_options=s3.options)  # ours: replaced
    assert s3.fs.cat_file(sibling) == b"mine"

    # A run stopped before these fits finished: only they are computed again.
    counted = [t for t in tasks if json.loads(s3.fs.cat_file(t))["learner"] == "count"][:3]
    missing = {json.loads(s3.fs.cat_file(t))["fit_id"] for t in counted}
    s3.fs.rm(counted)
    FITS.clear()
    again = _soak(s3, client, _table(s3), checkpoint=checkpoint)
    assert 0 < len(FITS) == len(missing) < fitted
    xr.testing.assert_equal(again.drop_vars(TIMINGS), full.drop_vars(TIMINGS))

    with pytest.raises(ValueError, match=f"checkpoint {checkpoint} was written by a run with"):
        _soak(s3, client, table, checkpoint=checkpoint, seed=2)
    with pytest.raises(ValueError, match="is inside the input table's directory"):
        _soak(s3, client, table, checkpoint=f"s3://{BUCKET}/pixels/ckpt")


@pytest.mark.slow
def test_data_soak_dask_did_not_write_is_never_written_over(s3):
    ours = results(source=f"s3://{BUCKET}/pixels")
    notes = f"s3://{BUCKET}/notes"
    s3.fs.pipe_file(f"{BUCKET}/notes/notes.txt", b"mine")
    options = {"storage_options": s3.options}
    with pytest.raises(FileExistsError, match=f"{notes} exists; pass overwrite=True"):
        sd.save_results(ours, notes, **options)
    with pytest.raises(FileExistsError, match=f"{notes} holds data that is not a soak_dask"):
        sd.save_results(ours, notes, overwrite=True, **options)
    with pytest.raises(FileExistsError, match=f"{notes} is not empty and not a SOAK checkpoint"):
        check_checkpoint_dir(notes, **options)
    with pytest.raises(ValueError, match="is the input table"):
        sd.save_results(ours, f"s3://{BUCKET}/pixels/", overwrite=True, **options)
    with pytest.raises(ValueError, match="holds the input table"):
        sd.save_results(ours, f"s3://{BUCKET}", overwrite=True, **options)
    assert s3.fs.cat_file(f"{BUCKET}/notes/notes.txt") == b"mine"
    assert s3.fs.ls(f"{BUCKET}/pixels") == [f"{BUCKET}/pixels/part-0000{i}.parquet" for i in (0, 1)]

    # A checkpoint's removal deletes its own files only.
    ckpt = f"{BUCKET}/other-ckpt"
    with endpoint(s3):
        sd.soak(
            _table(s3),
            "featureless",
            n_folds=2,
            options=sd.RunOptions(progress=False, checkpoint=f"s3://{ckpt}"),
        )
    s3.fs.pipe_file(f"{ckpt}/notes.txt", b"mine")
    remove_checkpoint(f"s3://{ckpt}", **options)
    assert s3.fs.ls(ckpt, refresh=True) == [f"{ckpt}/notes.txt"]
