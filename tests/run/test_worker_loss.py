"""A worker process killed mid-run: the run completes with the results of an undisturbed run."""

from __future__ import annotations

import os
import signal
import threading
import time

import distributed
import pytest
import xarray as xr

import soak_dask as sd

from ..conftest import toy_table
from ..slow_learner import SlowClassifier

#: Subprocesses, clusters and notebooks: minutes, not seconds (`make test-fast` skips them).
pytestmark = pytest.mark.slow

TIMINGS = ["fit_seconds", "predict_seconds"]
#: The scheduler's HTTP server on a free port, without the Bokeh dashboard.
NO_DASHBOARD = {"dashboard": False, "dashboard_address": ":0"}
#: Dask key prefix of the engine's fit tasks (``soak-fit-{fit_id}-{learner}-{token}``).
FIT_KEY = "soak-fit-"


class FitKiller(threading.Thread):
    """Waits until a worker is running a fit task, then SIGKILLs that worker's process.

    Attributes
    ----------
    killed : int or None
        Pid of the killed worker process.
    killed_at : float or None
        ``time.monotonic()`` of the kill.
    """

    def __init__(self, client: distributed.Client, timeout: float = 30.0) -> None:
        super().__init__(daemon=True)
        self.client = client
        self.pids = client.run(os.getpid)
        self.timeout = timeout
        self.killed: int | None = None
        self.killed_at: float | None = None

    def run(self) -> None:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            for worker, keys in self.client.processing().items():
                if any(str(key).startswith(FIT_KEY) for key in keys):
                    self.killed = self.pids[worker]
                    os.kill(self.killed, signal.SIGKILL)
                    self.killed_at = time.monotonic()
                    return
            time.sleep(0.02)


def wait_for_replacement(client: distributed.Client, before: set[str], timeout: float) -> str:
    """Wait until the cluster has as many workers as ``before``, one of them new; return it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        workers = set(client.scheduler_info(n_workers=-1)["workers"])
        if len(workers) == len(before) and workers - before:
            (new,) = workers - before
            return new
        time.sleep(0.2)
    raise AssertionError(f"no worker replaced one of {sorted(before)} within {timeout} s")


@pytest.mark.timeout(240)
def test_killed_worker_run_equals_undisturbed_run():
    table = sd.load_table(toy_table(n=400, n_subsets=2, seed=3), label="y", subset="subset")
    # 3K = 12 distinct fits, each sleeping 0.3 s: about 2 s of fits on two workers.
    learners = {"slow": SlowClassifier(seconds=0.3), "featureless": "featureless"}
    kwargs = {"n_folds": 4, "seed": 5, "options": sd.RunOptions(progress=False)}
    undisturbed = sd.soak(table, learners, **kwargs)
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, scheduler_kwargs=NO_DASHBOARD
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        killer = FitKiller(client)
        killer.start()
        res = sd.soak(table, learners, **kwargs)
        finished_at = time.monotonic()
        killer.join()
        assert killer.killed is not None, "no fit task was seen running"
        assert killer.killed_at < finished_at
        # The nanny starts a new worker process in place of the killed one.
        new = wait_for_replacement(client, set(killer.pids), timeout=90)
        pids = set(client.run(os.getpid, workers=[new]).values())
    assert killer.killed not in pids
    assert res.attrs["n_fits"] == undisturbed.attrs["n_fits"] == 24
    xr.testing.assert_equal(res.drop_vars(TIMINGS), undisturbed.drop_vars(TIMINGS))
    assert res["error"].notnull().all()
