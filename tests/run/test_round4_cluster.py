"""Issue 38, round 4: a scheduler that accepts and never answers is refused within Dask's
connect timeout, naming its address (API and CLI); Ctrl-C during a gather leaves no asyncio
"Task exception was never retrieved" tracebacks behind."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import dask
import pytest

from soak_dask.app import cli
from soak_dask.run.cluster import SchedulerUnreachable, connect, quiet_orphaned_waits
from soak_dask.tables.generated import write_pixel_parquet

from ..app.test_cli import default_ctrl_c, soak_process

#: The connect timeout the tests set through Dask's own key, as a user would.
SHORT = {"distributed.comm.timeouts.connect": "1s"}


@pytest.fixture
def silent_address() -> Iterator[str]:
    """A loopback port whose kernel accepts connections (the listen backlog) while nothing
    reads or writes them: a scheduler that never answers. Closed at the end."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield f"tcp://127.0.0.1:{server.getsockname()[1]}"


def scheduler_file(tmp_path: Path, address: str) -> str:
    path = tmp_path / "scheduler.json"
    path.write_text(json.dumps({"address": address}))
    return str(path)


@pytest.mark.slow
@pytest.mark.timeout(60)  # it waited forever
@pytest.mark.parametrize("as_file", [False, True])
def test_a_silent_scheduler_is_refused_naming_its_address(silent_address, tmp_path, as_file):
    scheduler = scheduler_file(tmp_path, silent_address) if as_file else silent_address
    start = time.monotonic()
    with dask.config.set(SHORT), pytest.raises(SchedulerUnreachable) as info:
        with connect(scheduler):
            pass
    assert time.monotonic() - start < 10
    assert f"scheduler {silent_address} did not answer within 1 s" in str(info.value)
    assert "distributed.comm.timeouts.connect" in str(info.value)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_soak_run_with_a_silent_scheduler_fails_in_one_line(silent_address, tmp_path, capsys):
    data = write_pixel_parquet(tmp_path / "pixels", n_files=1, n_pixels=200, n_regions=2, seed=1)
    argv = ["run", str(data), "--label", "label", "--subset", "region", "--no-progress",
            "--scheduler", silent_address, "--out", str(tmp_path / "r.zarr")]  # fmt: skip
    start = time.monotonic()
    with dask.config.set(SHORT):
        code = cli.main(argv)
    err = [line for line in capsys.readouterr().err.splitlines() if "soak: warning" not in line]
    assert time.monotonic() - start < 30
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith(f"soak: error: scheduler {silent_address} did not answer within 1 s")
    assert not (tmp_path / "r.zarr").exists()


#: A child that interrupts its own main thread (as Ctrl-C does) while it waits in
#: ``Client.gather``, on a threads-only LocalCluster started by `connect`.
_GATHER_INTERRUPTED = """
import signal, sys, threading, time
from soak_dask.run.cluster import connect

START, SENT = time.monotonic(), []

def slow(i):
    time.sleep(2)
    return i

def ctrl_c():
    SENT.append(time.monotonic() - START)
    signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

def gather(client):
    futures = client.map(slow, range(4))
    threading.Timer(0.5, ctrl_c).start()
    return client.gather(futures)

try:
    with connect(n_workers=1, threads_per_worker=4, processes=False, log_failures=False) as c:
        gather(c)
        # Not interrupted: say when the Ctrl-C went and what would have caught it.
        print(f"gather returned at {time.monotonic() - START:.2f} s; Ctrl-C sent at {SENT}; "
              f"SIGINT handler {signal.getsignal(signal.SIGINT)!r}, blocked "
              f"{signal.pthread_sigmask(signal.SIG_BLOCK, [])}", file=sys.stderr)
except KeyboardInterrupt:
    print("interrupted")
"""


@pytest.mark.slow
def test_ctrl_c_during_a_gather_leaves_no_unretrieved_tasks():
    child = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_GATHER_INTERRUPTED)],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=default_ctrl_c,  # pytest started in the background hands on SIGINT ignored
    )
    assert child.returncode == 0 and child.stdout == "interrupted\n", child.stderr
    assert "Task exception was never retrieved" not in child.stderr, child.stderr
    assert "AllExit" not in child.stderr, child.stderr


def aoa_inputs(tmp_path: Path) -> list[str]:
    """A training table whose DI pass keeps a cluster busy for several seconds, and a raster."""
    import numpy as np
    import pandas as pd
    import xarray as xr

    rng = np.random.default_rng(0)
    train = pd.DataFrame(rng.normal(size=(12000, 3)), columns=["a", "b", "c"])
    train.to_parquet(tmp_path / "train.parquet")
    bands = {name: (("y", "x"), rng.normal(size=(600, 600))) for name in train}
    raster = xr.Dataset(bands, coords={"y": np.arange(600), "x": np.arange(600)})
    raster.chunk({"y": 150, "x": 150}).to_zarr(tmp_path / "raster.zarr", consolidated=False)
    return [str(tmp_path / "train.parquet"), str(tmp_path / "raster.zarr")]


@pytest.mark.slow
def test_ctrl_c_of_soak_aoa_prints_one_line(tmp_path):
    psutil = pytest.importorskip("psutil")
    argv = ["aoa", *aoa_inputs(tmp_path), "--features", "a,b,c", "--out", tmp_path / "out"]
    proc = soak_process(argv, tmp_path)
    deadline = time.monotonic() + 120
    while len(psutil.Process(proc.pid).children()) < 2 and proc.poll() is None:  # workers up
        assert time.monotonic() < deadline, "no cluster started in time"
        time.sleep(0.2)
    # Into the run (its reads and training pass): on an idle machine the whole run ends a few
    # seconds after its workers are up, so the interrupt comes early.
    time.sleep(2)
    assert proc.poll() is None, proc.communicate()
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the whole group, workers included
    _, err = proc.communicate(timeout=120)
    last = err.strip().splitlines()[-1]
    assert proc.returncode == 130 and last.startswith("soak: interrupted"), err
    assert "Task exception was never retrieved" not in err and "Traceback" not in err, err


def _logged_error(path: str, name: str) -> logging.LogRecord:
    """The record tornado logs for a ``NameError`` raised by function `name` of file `path`."""
    namespace: dict = {}
    exec(compile(f"def {name}():\n    return future\n", path, "exec"), namespace)
    try:
        namespace[name]()
    except NameError:
        error = sys.exc_info()
    error[1].args = ("cannot access free variable 'future'",)
    return logging.LogRecord("tornado.application", logging.ERROR, "", 0, "x", (), error)


def test_ctrl_c_before_sync_started_logs_nothing():
    """distributed's ``sync`` cancelled before its coroutine assigned ``future`` (the CI log of
    stop 43): tornado's NameError traceback is dropped, any other NameError is kept."""
    quiet_orphaned_waits()  # as connect() does
    logger = logging.getLogger("tornado.application")
    library = os.path.join("site-packages", "distributed", "utils.py")
    assert not logger.filter(_logged_error(library, "cancel"))
    assert logger.filter(_logged_error(library, "other"))
    assert logger.filter(_logged_error(os.path.join("mine", "utils.py"), "cancel"))
