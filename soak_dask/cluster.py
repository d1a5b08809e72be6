"""Connect to a Dask cluster: a scheduler address (TLS or not) or a new LocalCluster."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import dask
from distributed import Client, LocalCluster
from distributed.security import Security


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


@contextmanager
def connect(
    scheduler: str | None = None,
    *,
    security: Security | None = None,
    n_workers: int | None = None,
    threads_per_worker: int = 1,
    memory_limit: str | float = "auto",
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
    **cluster_kwargs
        Other ``distributed.LocalCluster`` arguments.
    """
    if scheduler is not None:
        if scheduler.startswith("tls://") and security is None and not _tls_configured():
            raise ValueError(
                f"scheduler {scheduler} uses TLS but no certificates were given; pass "
                "security=make_security(ca_file, cert, key) (CLI: --tls-ca-file, --tls-cert, "
                "--tls-key) or set distributed.comm.tls in the Dask config"
            )
        kwargs: dict[str, Any] = {"security": security} if security else {}
        where = (
            {"scheduler_file": scheduler} if os.path.isfile(scheduler) else {"address": scheduler}
        )
        # Not the process-wide default until it works: a failed connection leaves none behind.
        client = Client(**where, set_as_default=False, **kwargs)
        try:
            with client.as_current():
                yield client
        finally:
            client.close()
        return
    n_workers = n_workers or os.cpu_count() or 1
    with (
        LocalCluster(
            n_workers=n_workers,
            threads_per_worker=threads_per_worker,
            memory_limit=memory_limit,
            processes=True,
            dashboard_address=":0",
            **cluster_kwargs,
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client
