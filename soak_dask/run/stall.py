"""A run whose workers are all paused by distributed's memory pause, with no task running, is
stopped with an error that names their memory; it is never left hanging.

distributed pauses a worker whose process memory passes 80 % of its limit
(``distributed.worker.memory.pause``) and resumes it when it falls back, spilling Dask's data
to disk meanwhile. Memory outside Dask's data (the libraries a task imports, buffers,
fragments of freed memory) cannot be spilled: a worker paused by it with nothing left to spill
stays paused, and a run whose every worker is so waits forever. ``stall_guard`` polls the
workers while a run's entry point runs (``entry.entry_point``) and, once every worker has been
paused with nothing executing for ``STALL_SECONDS``, interrupts the run's thread and raises
``WorkerMemoryStall``. The interrupt is an exception raised in that thread
(``PyThreadState_SetAsyncExc``), not a simulated Ctrl-C: that one does nothing where SIGINT is
ignored or handled elsewhere, as a clean clone's suite found (the stall test waited out its
600-s time-out), and never reaches a thread but the main one. An interrupt can still be lost
(raised inside a finalizer, or caught by a library's handler): it is sent again every
``RESEND_SECONDS`` until the run has stopped.
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import dask
from dask.utils import format_bytes

from ..workers import FitMemoryError

#: Seconds every worker must stay paused, none executing a task, before the run is stopped.
STALL_SECONDS = 120.0
#: Seconds between two looks at the workers.
POLL_SECONDS = 2.0
#: Seconds between two interrupts of a stalled run that has not stopped yet: longer than the
#: 10 s a distributed client's wait takes to see one.
RESEND_SECONDS = 15.0


class WorkerMemoryStall(FitMemoryError):
    """Every worker paused by its memory limit with nothing running: the run cannot go on."""


class StallInterrupt(BaseException):
    """Raised in a stalled run's thread by its guard, which turns it into ``WorkerMemoryStall``
    (a ``BaseException``, as ``KeyboardInterrupt`` is, so that no ``except Exception`` keeps
    the run waiting)."""


def interrupt_thread(ident: int) -> None:
    """Raise ``StallInterrupt`` in the thread ``ident`` at its next Python instruction."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(ident), ctypes.py_object(StallInterrupt)
    )


def worker_state(dask_worker: Any) -> tuple[str, int, int, int | None]:
    """A worker's status, tasks executing, process memory and memory limit (``client.run``)."""
    memory = dask_worker.monitor.get_process_memory()
    limit = dask_worker.memory_manager.memory_limit
    return str(dask_worker.status.name), len(dask_worker.state.executing), memory, limit


def stalled(states: dict[str, tuple[str, int, int, int | None]]) -> bool:
    """Whether every worker of ``states`` (``worker_state`` each) is paused, none executing."""
    return bool(states) and all(s == "paused" and not n for s, n, _, _ in states.values())


def stall_message(states: dict[str, tuple[str, int, int, int | None]], seconds: float) -> str:
    """The error of a run stopped because ``states`` stayed ``stalled`` for ``seconds``."""
    held = ", ".join(
        f"{format_bytes(memory)} of {format_bytes(limit) if limit else 'no limit'}"
        for _, _, memory, limit in states.values()
    )
    pause = dask.config.get("distributed.worker.memory.pause", 0.8)
    return (
        f"every worker has been paused by its memory limit for {seconds:g} s with no task "
        f"running (process memory {held}): distributed pauses a worker at {pause:.0%} of its "
        "limit and spills Dask's data to resume it, so these hold memory that cannot be "
        "spilled (the libraries tasks import, buffers); give each worker more memory "
        "(memory_limit=, e.g. twice the present), or read the table in smaller partitions; a "
        "run given a checkpoint keeps the fits it finished"
    )


@contextmanager
def stall_guard(client: Any, seconds: float | None = None) -> Iterator[None]:
    """Within the block, a stall of ``client``'s workers for ``seconds`` (default
    ``STALL_SECONDS``) interrupts the block and raises ``WorkerMemoryStall``. A no-op without a
    distributed client."""
    if client is None:
        yield
        return
    run_thread = threading.get_ident()
    seconds = STALL_SECONDS if seconds is None else seconds
    fired: list[str] = []
    stop = threading.Event()
    lock = threading.Lock()

    def interrupt(states: dict) -> None:
        with lock:  # never after the block has ended
            if not stop.is_set():
                fired.append(stall_message(states, seconds))
                interrupt_thread(run_thread)

    def watch() -> None:
        since = None
        while not stop.wait(POLL_SECONDS):
            try:
                states = client.run(worker_state)
            except Exception:  # noqa: BLE001 -- workers restarting, the client closing: look again
                continue
            since = (since or time.monotonic()) if stalled(states) else None
            if since is not None and time.monotonic() - since >= seconds:
                interrupt(states)
                break
        while not stop.wait(RESEND_SECONDS):  # the run goes on: the interrupt was lost
            interrupt(states)

    watcher = threading.Thread(target=watch, name="soak-stall-guard", daemon=True)
    watcher.start()
    try:
        yield
    except StallInterrupt:
        with lock:  # no interrupt after this one
            stop.set()
        if fired:
            raise WorkerMemoryStall(fired[0]) from None
        raise  # an enclosing guard's
    finally:
        with lock:
            stop.set()
        watcher.join()
