"""What a task may hold on the workers, read from them before a run (``worker_memory``), and
the error of work refused up front because it would not fit (``FitMemoryError``): shared by the
run path's checks (``run.memory``), the block-wise neighbour search (``split``) and the area of
applicability's blocks (``spatial``)."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import importlib
import sys
from dataclasses import dataclass
from typing import Any

from dask.utils import format_bytes

#: Share of a worker's memory limit its process may reach: distributed pauses a worker at 80 %.
LIMIT_SHARE = 0.8


class FitMemoryError(ValueError):
    """Work whose memory cannot fit a worker's (a fit's rows, a search's task), refused before
    any of it runs."""


@dataclass(frozen=True)
class WorkerMemory:
    """What a task may hold on the workers: ``LIMIT_SHARE`` of a worker's memory ``limit``
    (where distributed pauses it), less the memory it holds at rest (``resting``: its process
    memory outside Dask's data, the libraries a fit task imports among it), of the worker with
    the least of it (``worker_memory``). Prints as the checks' messages name it."""

    limit: int
    resting: int = 0

    @property
    def free(self) -> int:
        """Bytes a task may take."""
        return max(int(LIMIT_SHARE * self.limit) - self.resting, 0)

    def __str__(self) -> str:
        return (
            f"{format_bytes(self.free)} a worker has for a task ({LIMIT_SHARE:.0%} of its "
            f"memory limit, {format_bytes(self.limit)}, less the {format_bytes(self.resting)} "
            "it holds at rest)"
        )


def worker_memory(client: Any) -> WorkerMemory | None:
    """The ``WorkerMemory`` of ``client``'s worker with the least memory for a task (None: no
    client, or no worker with a limit; Dask's local scheduler has none).

    Each worker first imports what a fit task imports, as its first fit would: a fresh
    worker holds about 70 MB, and 0.3 GB once scikit-learn and soak_dask's learners are in.
    What it holds at rest is then its process memory less Dask's data in memory (which it can
    spill), once it has given back the memory its allocators keep free (``release_unused``):
    the libraries, buffers and what earlier tasks left, which a task cannot use."""
    if client is None:
        return None
    # a worker closing or restarting answers with its error: the others tell
    held = [h for h in client.run(worker_at_rest, on_error="return").values() if type(h) is tuple]
    known = [WorkerMemory(int(limit), int(rest)) for limit, rest in held if limit]
    return min(known, key=lambda m: m.free) if known else None


async def worker_at_rest(dask_worker: Any) -> tuple[int | None, int]:
    """A worker's memory limit and the process memory it holds outside Dask's data, after
    importing what a fit task imports (``client.run``; the import in a thread, so that the
    worker's event loop keeps answering the scheduler)."""
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, importlib.import_module, "soak_dask.run.fitting")
    release_unused()
    memory = dask_worker.monitor.get_process_memory()
    limit = dask_worker.memory_manager.memory_limit
    return limit, max(int(memory) - int(dask_worker.state.nbytes), 0)


def release_unused() -> None:
    """Give back to the system the memory that pyarrow's pool and glibc's heap keep after
    tasks free it (Dask's advice for unmanaged memory): on 700 MB workers after a pass over
    Parquet files, 51 MB of the 0.42 GB a worker held outside Dask's data."""
    pyarrow = sys.modules.get("pyarrow")  # only where a task used it: importing it costs memory
    if pyarrow is not None:
        pyarrow.default_memory_pool().release_unused()
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):  # another C library than glibc
            ctypes.CDLL("libc.so.6").malloc_trim(0)
