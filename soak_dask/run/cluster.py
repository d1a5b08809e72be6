"""Connect to a Dask cluster: a scheduler address (TLS or not) or a new LocalCluster."""

from __future__ import annotations

import asyncio
import json
import logging
import multiprocessing
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from multiprocessing import forkserver, resource_tracker
from typing import Any

import dask
from dask.utils import parse_timedelta
from distributed import Client, LocalCluster
from distributed.client import AllExit
from distributed.comm import connect as open_comm
from distributed.core import Status
from distributed.diagnostics.plugin import WorkerPlugin
from distributed.gc import disable_gc_diagnosis
from distributed.security import Security

#: The only interface a LocalCluster started by `connect` listens on (scheduler, workers and
#: dashboard): other machines cannot reach it.
LOOPBACK = "127.0.0.1"


def make_security(
    ca_file: str | None = None, cert: str | None = None, key: str | None = None
) -> Security | None:
    """A ``distributed.Security`` for TLS from certificate files, or None without them.

    Without files, distributed's own configuration (``distributed.comm.tls.*`` in dask config
    or ``DASK_DISTRIBUTED__COMM__TLS__*`` variables) still applies.
    """
    given = {"ca_file": ca_file, "cert": cert, "key": key}
    if not any(given.values()):
        return None
    missing = [name for name, path in given.items() if path is None and name != "key"]
    if missing:
        raise ValueError(f"TLS needs {missing} too (given: {[k for k, v in given.items() if v]})")
    for name, path in given.items():
        if path is not None and not os.path.isfile(path):
            raise FileNotFoundError(f"TLS {name} file {path!r} does not exist")
    return Security(
        tls_ca_file=ca_file,
        tls_client_cert=cert,
        tls_client_key=key,
        require_encryption=True,
    )


def _tls_configured() -> bool:
    tls = dask.config.get("distributed.comm.tls", {})
    return bool(tls.get("ca-file") or tls.get("client", {}).get("cert"))


def _scheduler_address(scheduler: str) -> str:
    """The address `scheduler` names: itself, or the one a readable scheduler file holds."""
    if not os.path.isfile(scheduler):
        return scheduler
    try:
        with open(scheduler, encoding="utf-8") as f:
            return str(json.load(f)["address"])
    except (OSError, ValueError, KeyError, TypeError):
        return scheduler  # distributed's own message will say what is wrong with the file


def _check_scheme(scheduler: str, security: Security | None) -> None:
    """Refuse TLS certificates for a plain-TCP scheduler before any connection attempt.

    Without this, distributed fails deep inside the connection and the client then waits for
    its connect timeout.
    """
    address = _scheduler_address(scheduler)
    if security is not None and address.startswith("tcp://"):
        raise ValueError(
            f"scheduler {address} is plain TCP but TLS certificates were given; use the "
            "scheduler's tls:// address, or drop the certificates (CLI: --tls-ca-file, "
            "--tls-cert, --tls-key; Python: security=)"
        )
    if address.startswith("tls://") and security is None and not _tls_configured():
        raise ValueError(
            f"scheduler {address} uses TLS but no certificates were given; pass "
            "security=make_security(ca_file, cert, key) (CLI: --tls-ca-file, --tls-cert, "
            "--tls-key) or set distributed.comm.tls in the Dask config"
        )


class SchedulerUnreachable(TimeoutError):
    """A scheduler address that did not complete Dask's handshake within the connect timeout."""


def connect_timeout() -> float:
    """Seconds to wait for a scheduler: Dask's ``distributed.comm.timeouts.connect`` (30 s
    unless the user's Dask config or ``DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT`` says
    otherwise)."""
    return float(
        parse_timedelta(dask.config.get("distributed.comm.timeouts.connect"), default="seconds")
    )


def check_answers(address: str, security: Security | None, timeout: float) -> None:
    """Raise `SchedulerUnreachable` unless `address` completes Dask's handshake in `timeout` s.

    ``distributed.Client`` bounds the TCP connection but then waits for the handshake's reply
    without limit, so a port that accepts and never answers held it forever. The probe runs in
    its own thread and event loop, so it works with or without a running loop (notebooks);
    the thread is a daemon so that a Ctrl-C meanwhile does not wait for it.
    """
    args = (security or Security()).get_connection_args("client")
    outcome: list[BaseException | None] = []

    async def handshake() -> None:
        comm = await asyncio.wait_for(open_comm(address, timeout=timeout, **args), timeout)
        await comm.close()

    def probe() -> None:
        try:
            asyncio.run(handshake())
            outcome.append(None)
        except BaseException as err:  # handed to the calling thread
            outcome.append(err)

    thread = threading.Thread(target=probe, name="soak-scheduler-probe", daemon=True)
    thread.start()
    thread.join()
    if isinstance(outcome[0], TimeoutError):
        raise SchedulerUnreachable(
            f"scheduler {address} did not answer within {timeout:g} s; check the address and "
            "that a Dask scheduler runs there (a slow network may need a longer "
            "distributed.comm.timeouts.connect: Dask config, or the "
            "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT variable)"
        ) from outcome[0]
    if outcome[0] is not None:
        raise outcome[0]


def _orphaned_wait(record: logging.LogRecord) -> bool:
    """Logging filter: False for asyncio's "Task exception was never retrieved" of an `AllExit`.

    ``Client.gather`` waits on one asyncio task per key, which raises distributed's own
    `AllExit` to stop the wait early, and quiets them when one fails, but not when the gather
    is cancelled, as Ctrl-C does: closing the client then cancels the keys, each task raises
    `AllExit` unobserved, and asyncio printed one traceback per task. `AllExit` never carries
    an error of a task (the gather raises that itself), so nothing is lost.
    """
    return not (record.exc_info and isinstance(record.exc_info[1], AllExit))


def _unstarted_cancel(record: logging.LogRecord) -> bool:
    """Logging filter: False for the ``NameError`` of distributed's ``sync`` cancelled early.

    Ctrl-C while ``distributed.utils.sync`` waits schedules its ``cancel``, which reads the
    coroutine's ``future`` before it is assigned when the interrupt came first (distributed
    2025.x): tornado logs a ``NameError`` traceback although nothing was lost, the
    ``KeyboardInterrupt`` goes on as it should. Only that error, from that function, is dropped.
    """
    error = record.exc_info[1] if record.exc_info else None
    if not isinstance(error, NameError) or "'future'" not in str(error):
        return True
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    code = None if tb is None else tb.tb_frame.f_code
    return not (
        code is not None
        and code.co_name == "cancel"
        and code.co_filename.endswith(os.path.join("distributed", "utils.py"))
    )


def quiet_orphaned_waits() -> None:
    """Keep asyncio and tornado from logging what an interrupted ``Client.gather`` leaves.

    Process-wide and for good: the tasks are collected when the client's event loop closes,
    which may be after the ``with connect(...)`` block. Installed once.
    """
    for name, keep in [("asyncio", _orphaned_wait), ("tornado.application", _unstarted_cancel)]:
        logger = logging.getLogger(name)
        if keep not in logger.filters:
            logger.addFilter(keep)


def _handlers(name: str) -> list[logging.Handler]:
    """The handlers that the records of logger `name` reach, as ``Logger.callHandlers`` walks."""
    found: list[logging.Handler] = []
    logger: logging.Logger | None = logging.getLogger(name)
    while logger is not None:
        found += logger.handlers
        logger = logger.parent if logger.propagate else None
    return found


@contextmanager
def _logs_dropped(name: str) -> Iterator[None]:
    """Drop every record that logger `name` and its children send to this process's handlers."""
    handlers = _handlers(name)
    for handler in handlers:
        handler.addFilter(_drop)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(_drop)


def _drop(record: logging.LogRecord) -> bool:
    return False


class _QuietFailures(WorkerPlugin):
    """Worker plugin: the worker does not log a failed task, nor a failed fetch of data from
    another worker, nor anything once it is closing.

    A failed task's exception reaches the client anyway, with its traceback; a LocalCluster's
    workers would print it again (and their shutdown warnings) on the client's terminal. A
    failed fetch is fetched again or recomputed by distributed; its traceback came from a
    worker still running while another closed after Ctrl-C.
    """

    name = "soak-quiet-failures"
    _closing = frozenset({Status.closing, Status.closing_gracefully, Status.closed})

    def setup(self, worker: Any) -> None:
        # No teardown: the filter must outlive the plugins, which are torn down while closing.
        for handler in _handlers("distributed.worker"):
            handler.addFilter(lambda record: self._keep(worker, record))

    def _keep(self, worker: Any, record: logging.LogRecord) -> bool:
        failed = str(record.msg).startswith(("Compute Failed", "failed during get data"))
        return not failed and worker.status not in self._closing


@contextmanager
def _sigint_blocked() -> Iterator[None]:
    """SIGINT blocked in this thread, and so in the processes it starts meanwhile (POSIX)."""
    if os.name != "posix":
        yield
        return
    # Started here first: multiprocessing unblocks SIGINT in the thread that starts its tracker.
    resource_tracker.ensure_running()
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # a pending Ctrl-C is delivered now


@contextmanager
def _sigint_deferred() -> Iterator[list[bool]]:
    """Hold back Ctrl-C while a LocalCluster starts, and keep it from its worker processes.

    SIGINT is blocked in this thread meanwhile, so the cluster's event-loop thread, created
    here, inherits the block and passes it on to every worker process it starts (restarts
    included): Ctrl-C reaches only this process, which closes the cluster, instead of
    printing a KeyboardInterrupt traceback from each worker. A Ctrl-C during the start is
    recorded in the yielded list rather than raised half-way through it.
    """
    if threading.current_thread() is not threading.main_thread() or os.name != "posix":
        yield []  # handlers are set in the main thread only; masks are POSIX
        return
    interrupted: list[bool] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: interrupted.append(True))
    try:
        with _sigint_blocked():
            yield interrupted
    finally:
        signal.signal(signal.SIGINT, previous)


#: Environment of the worker processes of a LocalCluster that ``connect`` starts, where the
#: user's environment does not set the variable (workers inherit this process's environment,
#: read before the worker's first import: a nanny's ``env`` comes too late for Arrow).
#: Arrow's Acero (Parquet reads with filters) prints a warning on stderr, once per worker, for
#: buffers pandas made unaligned; copying them is safe and silent.
WORKER_ENV = {"ACERO_ALIGNMENT_HANDLING": "reallocate"}


def set_worker_env() -> None:
    """Set ``WORKER_ENV`` in this process's environment for the worker processes it starts,
    and Arrow's allocator (``ARROW_DEFAULT_MEMORY_POOL``) to jemalloc where this pyarrow has
    it, keeping a value the user set. Arrow's default, mimalloc, keeps the pages of the
    Parquet buffers it freed, memory Dask neither counts as data nor can spill: after four
    scans of 6M pixels a worker held 381 MiB with it, 246 MiB with jemalloc (which gives them
    back after a second) and with the system allocator, whose scans took twice as long
    (``benchmarks/arrow_pool.py``)."""
    for name, value in {**WORKER_ENV, **_jemalloc()}.items():
        os.environ.setdefault(name, value)


def _jemalloc() -> dict[str, str]:
    """``{"ARROW_DEFAULT_MEMORY_POOL": "jemalloc"}`` if pyarrow was built with it, else {}
    (Arrow would warn in every worker and keep its default)."""
    import pyarrow

    try:
        pyarrow.jemalloc_memory_pool()
    except NotImplementedError:  # pyarrow.lib.ArrowNotImplementedError is one
        return {}
    return {"ARROW_DEFAULT_MEMORY_POOL": "jemalloc"}


#: What a worker imports to run soak's tasks, imported once by the server its processes are
#: forked from (`forked_workers`), not by each worker on its first task.
WORKER_PRELOAD = ("distributed", "soak_dask.run.fitting")


#: Dask's setting for worker processes forked from a server (its default, ``spawn``, starts
#: each worker in a fresh interpreter).
FORKED = {"distributed.worker.multiprocessing-method": "forkserver"}


def forks() -> bool:
    """Whether this platform has multiprocessing's fork server (not Windows)."""
    return "forkserver" in multiprocessing.get_all_start_methods()


def start_fork_server() -> None:
    """Start this process's server for forked worker processes (`forked_workers`), once.

    It imports `WORKER_PRELOAD` (1.5–1.9 s that each spawned worker paid on its first task,
    and again after a restart), with the environment Dask gives a spawned worker
    (``distributed.nanny.pre-spawn-environ``: one BLAS thread, the malloc trim threshold; a
    Nanny's hash seed) and `WORKER_ENV`, which a forked worker cannot set for itself, and
    starts with SIGINT blocked, so its workers leave Ctrl-C to this process as `connect`'s
    spawned ones do. It imports while this process goes on: a command calls this as early as
    it knows it will start a cluster. Where there is no fork server (Windows), nothing.
    """
    if not forks():
        return
    from distributed.utils import get_mp_context

    with dask.config.set(FORKED):  # distributed sets its preload on first use: ours after it
        get_mp_context().set_forkserver_preload(list(WORKER_PRELOAD))
    environ = {k: str(v) for k, v in dask.config.get("distributed.nanny.pre-spawn-environ").items()}
    if environ.get("PYTHONHASHSEED") in (None, "0"):
        environ["PYTHONHASHSEED"] = "6640"  # a Nanny's, so every worker hashes strings alike
    # As a Nanny does before it spawns: in this process's environment, inherited by the server.
    os.environ.update(environ)
    set_worker_env()
    with _sigint_blocked():
        forkserver.ensure_running()


@contextmanager
def forked_workers() -> Iterator[None]:
    """Dask's worker processes started in the block (a LocalCluster's, restarts included)
    forked from `start_fork_server`'s server, which imported the engine once.

    For the command line, whose standard streams stay the same to its end: a forked worker
    writes to the server's, fixed when it started (a test capturing ``stderr`` after that
    would not see it). Where there is no fork server (Windows), Dask's setting as it is.
    """
    start_fork_server()
    with dask.config.set(FORKED if forks() else {}):
        yield


@contextmanager
def command_client(scheduler: str | None, **kwargs: Any) -> Iterator[Client]:
    """`connect` for a command-line process: to ``scheduler``, or to a LocalCluster whose
    workers are forked (`forked_workers`); ``kwargs`` are `connect`'s."""
    with forked_workers() if scheduler is None else nullcontext():
        with connect(scheduler, **kwargs) as client:
            yield client


def _local_cluster(n_workers: int, cluster_kwargs: dict[str, Any]) -> LocalCluster:
    """A LocalCluster listening on `LOOPBACK` only (dashboard, and scheduler and workers when
    they are processes), unless told otherwise."""
    options = {"dashboard_address": f"{LOOPBACK}:0", "processes": True, **cluster_kwargs}
    set_worker_env()
    # Threads-only clusters talk in-process (inproc://) and refuse a host.
    if options["processes"] and "host" not in options and "interface" not in options:
        options["host"] = LOOPBACK
    return LocalCluster(n_workers=n_workers, **options)


@contextmanager
def connect(
    scheduler: str | None = None,
    *,
    security: Security | None = None,
    n_workers: int | None = None,
    threads_per_worker: int = 1,
    memory_limit: str | float = "auto",
    log_failures: bool = True,
    **cluster_kwargs: Any,
) -> Iterator[Client]:
    """A client for the duration of a ``with`` block.

    Parameters
    ----------
    scheduler : str, optional
        Address of a running scheduler (``tcp://host:8786``, ``tls://host:8786``) or the path of
        a scheduler file. Without it, a LocalCluster of worker processes is started and closed
        afterwards.
    security : distributed.Security, optional
        TLS settings, e.g. from ``make_security``.
    n_workers : int, optional
        Workers of the LocalCluster (default: one per core).
    threads_per_worker : int
        Threads per worker (default 1: scikit-learn fits mostly hold the GIL).
    memory_limit : str or float
        Memory limit per worker ("auto": the machine's memory shared among the workers).
    log_failures : bool, default True
        Whether the LocalCluster logs failures on this terminal: a failed task ("Compute
        Failed" and its traceback, from the worker) and the warnings of closing the cluster
        after an exception or Ctrl-C. The exception is raised here either way, so ``soak``
        passes False unless ``--debug``. Workers of a running scheduler log where they run.
    **cluster_kwargs
        Other ``distributed.LocalCluster`` arguments. By default the scheduler, the workers
        and the dashboard listen on 127.0.0.1 only (``host``, ``dashboard_address``); pass
        ``host=`` or ``interface=`` and ``dashboard_address=`` to open them to other machines.

    Raises
    ------
    ValueError
        If TLS certificates are given for a ``tcp://`` scheduler, or none for a ``tls://`` one
        (checked before connecting).
    SchedulerUnreachable
        If the scheduler does not answer within ``distributed.comm.timeouts.connect`` (Dask
        config; 30 s by default), e.g. a port that accepts connections and says nothing.
    """
    quiet_orphaned_waits()
    if scheduler is not None:
        _check_scheme(scheduler, security)
        timeout = connect_timeout()
        address = _scheduler_address(scheduler)
        if address != scheduler or not os.path.isfile(scheduler):  # else distributed says why
            check_answers(address, security, timeout)
        kwargs: dict[str, Any] = {"security": security} if security else {}
        where = (
            {"scheduler_file": scheduler} if os.path.isfile(scheduler) else {"address": scheduler}
        )
        # Not the process-wide default until it works: a failed connection leaves none behind.
        client = Client(**where, set_as_default=False, timeout=timeout, **kwargs)
        try:
            with client.as_current():
                yield client
        finally:
            client.close()
        return
    n_workers = n_workers or os.cpu_count() or 1
    options = {"threads_per_worker": threads_per_worker, "memory_limit": memory_limit}
    with _sigint_deferred() as interrupted:
        cluster = _local_cluster(n_workers, {**options, **cluster_kwargs})
    # The in-process scheduler turned on distributed's GC diagnosis, a gc callback: a Ctrl-C
    # that lands while it runs is "ignored" by Python (exceptions in gc callbacks are), and
    # the run went on to its end. It only logs long collections; off in this process.
    disable_gc_diagnosis(force=True)
    try:
        if interrupted:
            raise KeyboardInterrupt
        # The link names where the dashboard listens (an in-process cluster's address names
        # the machine's IP instead); kept for the block, as the link is read when shown.
        link = {"distributed.dashboard.link": f"{{scheme}}://{LOOPBACK}:{{port}}/status"}
        loopback = "dashboard_address" not in cluster_kwargs
        with Client(cluster) as client, dask.config.set(link if loopback else {}):
            if not log_failures:
                client.register_plugin(_QuietFailures())
            yield client
    except BaseException:
        with _logs_dropped("distributed") if not log_failures else nullcontext():
            cluster.close()
        raise
    cluster.close()
