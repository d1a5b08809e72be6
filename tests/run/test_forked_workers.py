"""The command line's LocalCluster forks its workers from a server that imported the engine
(`run.cluster.forked_workers`), with what a spawned worker would have had."""

from __future__ import annotations

import os
import signal
import sys

import dask
import pytest

from soak_dask.run.cluster import WORKER_PRELOAD, connect, forked_workers

pytestmark = pytest.mark.slow

METHOD = "distributed.worker.multiprocessing-method"


def worker_state() -> dict:
    return {
        "preloaded": [name for name in WORKER_PRELOAD if name in sys.modules],
        "omp": os.environ.get("OMP_NUM_THREADS"),
        "trim": os.environ.get("MALLOC_TRIM_THRESHOLD_"),
        "hash_seed": os.environ.get("PYTHONHASHSEED"),
        "sigint_blocked": signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, []),
        "parent": os.getppid(),
    }


def test_forked_workers_start_with_the_engine_and_a_spawned_worker_s_environment():
    before = dask.config.get(METHOD)
    with forked_workers(), connect(n_workers=2) as client:
        assert dask.config.get(METHOD) == "forkserver"
        states = list(client.run(worker_state).values())
        client.restart()  # a restarted worker is forked again
        states += list(client.run(worker_state).values())
    assert dask.config.get(METHOD) == before  # the process's setting back after the block
    for state in states:
        assert state["preloaded"] == list(WORKER_PRELOAD), state
        assert (state["omp"], state["trim"], state["hash_seed"]) == ("1", "65536", "6640")
        assert state["sigint_blocked"], state  # Ctrl-C left to this process
    # forked by one server (their parent), not spawned by this process's nannies
    assert {state["parent"] for state in states} != {os.getpid()}
    assert len({state["parent"] for state in states}) == 1


def test_spawned_workers_start_without_the_engine():
    """The comparison the fork server exists for (Dask's default, `connect` alone)."""
    with connect(n_workers=1) as client:
        (state,) = client.run(worker_state).values()
    assert "soak_dask.run.fitting" not in state["preloaded"] and state["parent"] == os.getpid()


def test_without_a_fork_server_the_workers_are_dask_s_own(monkeypatch):
    """Windows has no fork server: the command line's cluster keeps Dask's setting."""
    import multiprocessing

    from soak_dask.run import cluster

    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    started = []
    monkeypatch.setattr(cluster.forkserver, "ensure_running", lambda: started.append(1))
    before = dask.config.get(METHOD)
    with forked_workers():
        assert dask.config.get(METHOD) == before
    assert not started
