"""A run whose workers all stay paused by their memory limit is stopped with an error naming
their memory (run/stall.py), not left waiting forever."""

from __future__ import annotations

import threading
import time

import pytest
from distributed import Client, LocalCluster

import soak_dask as sd
from soak_dask.run import stall
from soak_dask.run.stall import WorkerMemoryStall, stall_message, stalled

from ..conftest import toy_table


def _pause_at(fraction: float):
    def set_fraction(dask_worker):
        dask_worker.memory_manager.memory_pause_fraction = fraction

    return set_fraction


@pytest.mark.slow
def test_a_run_whose_workers_stay_paused_is_stopped_naming_their_memory(monkeypatch):
    monkeypatch.setattr(stall, "STALL_SECONDS", 1.5)
    monkeypatch.setattr(stall, "POLL_SECONDS", 0.25)
    table = sd.load_table(toy_table(n=120), label="y", subset="subset")
    # The worker in this process: the guard reads its state as a worker process's.
    with (
        LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0"
        ) as cluster,
        Client(cluster) as client,
    ):
        # Paused at any memory: as a worker whose libraries alone pass 80 % of its limit.
        client.run(_pause_at(1e-6))
        start = time.monotonic()
        with pytest.raises(WorkerMemoryStall, match=r"paused by its memory limit for 1.5 s") as err:
            sd.soak(
                table,
                "featureless",
                n_folds=2,
                options=sd.RunOptions(client=client, progress=False),
            )
        assert time.monotonic() - start < 60
        assert "of no limit" not in str(err.value) and "memory_limit=" in str(err.value)
        client.run(_pause_at(0.8))  # resumed: the same client runs the same run
        res = sd.soak(
            table, "featureless", n_folds=2, options=sd.RunOptions(client=client, progress=False)
        )
        assert res.sizes["fold"] == 2


def test_an_interrupt_the_run_lost_is_sent_again(monkeypatch):
    """A run that swallows the first interrupt (a finalizer it lands in, a library's handler)
    is interrupted again until it stops: never left waiting."""
    monkeypatch.setattr(stall, "POLL_SECONDS", 0.05)
    monkeypatch.setattr(stall, "RESEND_SECONDS", 0.3)

    class Paused:  # what the guard reads of a client: every worker paused, none executing
        def run(self, func):
            return {"tcp://a": ("paused", 0, 600 << 20, 700 << 20)}

    swallowed = []
    start = time.monotonic()
    with pytest.raises(WorkerMemoryStall, match=r"600.00 MiB of 700.00 MiB"):
        with stall.stall_guard(Paused(), seconds=0.2):
            try:
                while time.monotonic() - start < 30:
                    time.sleep(0.01)
            except BaseException:  # noqa: BLE001 -- as a careless handler would
                swallowed.append(time.monotonic() - start)
            while time.monotonic() - start < 30:
                time.sleep(0.01)
    assert len(swallowed) == 1 and time.monotonic() - start < 10


def test_a_stall_is_stopped_whatever_ctrl_c_does_and_off_the_main_thread(monkeypatch):
    """The interrupt is the guard's own exception in the run's thread: SIGINT ignored (a
    background job, a test runner) or a run in a thread of its own is stopped all the same."""
    import signal

    monkeypatch.setattr(stall, "POLL_SECONDS", 0.05)

    class Paused:
        def run(self, func):
            return {"tcp://a": ("paused", 0, 600 << 20, 700 << 20)}

    def wait_in_guard(out: list) -> None:
        start = time.monotonic()
        try:
            with stall.stall_guard(Paused(), seconds=0.2):
                while time.monotonic() - start < 20:
                    time.sleep(0.01)
        except WorkerMemoryStall as err:
            out.append(err)

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        here, there = [], []
        wait_in_guard(here)
        thread = threading.Thread(target=wait_in_guard, args=(there,))
        thread.start()
        thread.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert len(here) == 1 and len(there) == 1


def test_stalled_needs_every_worker_paused_and_idle():
    paused, busy = ("paused", 0, 600 << 20, 700 << 20), ("paused", 1, 600 << 20, 700 << 20)
    running = ("running", 0, 100 << 20, 700 << 20)
    assert stalled({"a": paused, "b": paused})
    assert not stalled({"a": paused, "b": busy})  # a long task may end and free memory
    assert not stalled({"a": paused, "b": running})
    assert not stalled({})
    text = stall_message({"a": paused}, 120)
    assert "600.00 MiB of 700.00 MiB" in text and "80%" in text
