"""SOAK on a TLS-only Dask cluster (127.0.0.1) through ``soak_dask.run.cluster`` from Python."""

from __future__ import annotations

import json
import logging
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import distributed
import psutil
import pytest
import xarray as xr

import soak_dask as sd
from soak_dask.run.cluster import connect, make_security

from .. import tls_certs
from ..conftest import toy_table

TIMINGS = ["fit_seconds", "predict_seconds"]
#: The scheduler's HTTP server on a free port, without the Bokeh dashboard.
NO_DASHBOARD = {"dashboard": False, "dashboard_address": "127.0.0.1:0"}


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> tls_certs.TLSFiles:
    """A test CA and one certificate/key it signed, shared by scheduler, workers and client."""
    return tls_certs.make_tls_files(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def tls_address(certs) -> Iterator[str]:
    """Address of a LocalCluster that accepts only TLS connections with the test CA."""
    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        protocol="tls",
        host="127.0.0.1",
        security=tls_certs.cluster_security(certs),
        scheduler_kwargs=NO_DASHBOARD,
    ) as cluster:
        yield cluster.scheduler_address


def client_security(files: tls_certs.TLSFiles) -> distributed.security.Security:
    """The client's side of ``files``, made the way users make it."""
    return make_security(str(files.ca_file), str(files.cert), str(files.key))


@pytest.mark.slow
def test_soak_over_tls_equals_local_scheduler(certs, tls_address):
    assert tls_address.startswith("tls://127.0.0.1:")
    table = sd.load_table(toy_table(n=200, n_subsets=2, seed=7), label="y", subset="subset")
    kwargs = {
        "learners": ["featureless", "logistic"],
        "n_folds": 3,
        "seed": 2,
        "options": sd.RunOptions(progress=False),
    }
    with connect(tls_address, security=client_security(certs)) as client:
        with distributed.get_task_stream(client) as stream:
            res = sd.soak(table, **kwargs)
        workers = client.scheduler_info(n_workers=-1)["workers"]
    fits = [t for t in stream.data if str(t["key"]).startswith(("soak-fit-", "soak-score-"))]
    assert res.attrs["n_fits"] == 2 * 3 * 3  # 3K fits per learner for S=2
    # Logistic regression is fitted on its rows (one task per fit, returning its model);
    # featureless from block statistics. Both learners' models are scored in one pass: each
    # partition predicted by both, merged by one task per test block (2 subsets × 3 folds).
    assert sum(str(t["key"]).startswith("soak-fit-") for t in fits) == 3 * 3
    assert sum(str(t["key"]).startswith("soak-score-") for t in fits) == 2 * 3
    assert {t["worker"] for t in fits} <= set(workers)
    assert all(address.startswith("tls://") for address in workers)
    local = sd.soak(table, **kwargs)
    xr.testing.assert_equal(res.drop_vars(TIMINGS), local.drop_vars(TIMINGS))


@pytest.mark.slow
def test_connect_without_certificates_says_what_is_missing(tls_address):
    with pytest.raises(ValueError, match="make_security") as info:
        with connect(tls_address):
            pass
    assert tls_address in str(info.value)


@pytest.mark.parametrize(
    "scheme",
    [
        "tls",
        "tcp",
    ],
)
def test_failed_connect_leaves_no_default_client(tls_address, scheme):
    with pytest.raises((TypeError, ValueError, OSError)):
        with connect(tls_address.replace("tls://", f"{scheme}://")):
            pass
    with pytest.raises(ValueError, match="No clients found"):
        distributed.default_client()


def test_connect_with_another_ca_is_refused(tls_address, tmp_path):
    stranger = tls_certs.make_tls_files(tmp_path)
    with pytest.raises(OSError, match="certificate"):
        with connect(tls_address, security=client_security(stranger)):
            pass


def test_connect_over_plain_tcp_is_refused(certs, tls_address):
    with pytest.raises(OSError):
        with connect(tls_address.replace("tls://", "tcp://")):
            pass


def test_make_security(certs, tmp_path):
    ca, cert, key = str(certs.ca_file), str(certs.cert), str(certs.key)
    security = make_security(ca, cert, key)
    assert security.require_encryption
    assert (security.tls_ca_file, security.tls_client_cert, security.tls_client_key) == (
        ca,
        cert,
        key,
    )
    assert make_security() is None
    absent = str(tmp_path / "absent.pem")
    with pytest.raises(FileNotFoundError, match=f"cert file '{absent}' does not exist"):
        make_security(ca, absent, key)
    with pytest.raises(FileNotFoundError, match="ca_file"):
        make_security(absent, cert, key)
    with pytest.raises(ValueError, match=r"TLS needs \['ca_file'\] too"):
        make_security(cert=cert, key=key)
    with pytest.raises(ValueError, match=r"TLS needs \['cert'\] too"):
        make_security(ca, key=key)


def listening_ips(ports: set[int]) -> dict[int, set[str]]:
    """Port -> addresses that this process or its children listen on, for `ports`."""
    me = psutil.Process()
    found: dict[int, set[str]] = {port: set() for port in ports}
    for process in (me, *me.children(recursive=True)):
        for c in process.net_connections(kind="inet"):
            if c.status == psutil.CONN_LISTEN and c.laddr.port in ports:
                found[c.laddr.port].add(c.laddr.ip)
    return found


def sigint_blocked() -> bool:
    return signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])


def arrow_pool() -> str:
    import pyarrow

    return pyarrow.default_memory_pool().backend_name


def test_local_workers_use_jemalloc_unless_the_environment_says(monkeypatch):
    from soak_dask.run.cluster import set_worker_env

    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    monkeypatch.setenv("ACERO_ALIGNMENT_HANDLING", "ignore")  # the user's: kept
    set_worker_env()
    assert os.environ["ARROW_DEFAULT_MEMORY_POOL"] == "jemalloc"  # the wheels have it
    assert os.environ["ACERO_ALIGNMENT_HANDLING"] == "ignore"
    monkeypatch.setenv("ARROW_DEFAULT_MEMORY_POOL", "system")
    set_worker_env()
    assert os.environ["ARROW_DEFAULT_MEMORY_POOL"] == "system"


@pytest.mark.slow
def test_local_cluster_listens_on_loopback_only_and_its_workers_ignore_ctrl_c():
    with connect(n_workers=2) as client:
        info = client.scheduler_info(n_workers=-1)
        dashboard = info["services"]["dashboard"]
        addresses = [info["address"], *info["workers"]]
        addresses += [w["nanny"] for w in info["workers"].values()]
        ports = {dashboard} | {int(a.rsplit(":", 1)[1]) for a in addresses}
        listening = listening_ips(ports)
        assert client.dashboard_link == f"http://127.0.0.1:{dashboard}/status"
        # Ctrl-C reaches the terminal's whole process group; only the client acts on it.
        assert set(client.run(sigint_blocked).values()) == {True}
        assert set(client.run(arrow_pool).values()) == {"jemalloc"}  # cluster.set_worker_env
        client.restart()  # new worker processes, as after a worker is lost
        assert set(client.run(sigint_blocked).values()) == {True}
        assert set(client.run(arrow_pool).values()) == {"jemalloc"}
        assert not sigint_blocked()
    assert len(ports) == 6 and all(a.startswith("tcp://127.0.0.1:") for a in addresses)
    # The dashboard was on 0.0.0.0 (every interface); nothing of the cluster is any more.
    assert listening == dict.fromkeys(ports, {"127.0.0.1"})


@pytest.mark.parametrize("as_file", [False, True])
def test_certificates_for_a_tcp_scheduler_are_refused_at_once(certs, tmp_path, as_file):
    address = "tcp://127.0.0.1:9"  # nothing listens: any connection attempt would wait
    scheduler = address
    if as_file:
        scheduler = str(tmp_path / "scheduler.json")
        Path(scheduler).write_text(json.dumps({"address": address}))
    start = time.monotonic()
    with pytest.raises(ValueError, match="plain TCP but TLS certificates were given") as info:
        with connect(scheduler, security=client_security(certs)):
            pass
    assert time.monotonic() - start < 2
    assert address in str(info.value) and "tls://" in str(info.value)


def failing_task(x: int) -> int:
    raise ZeroDivisionError(f"task {x} fails")


def log_failed_fetch() -> None:
    logging.getLogger("distributed.worker").error(
        "failed during get data with tcp://127.0.0.1:1 -> tcp://127.0.0.1:2"
    )


@pytest.mark.slow
@pytest.mark.parametrize("log_failures", [True, False])
def test_local_workers_log_failed_tasks_and_fetches_only_when_asked(capfd, log_failures):
    """A failed task's traceback, and a worker's failed fetch from a peer closing after Ctrl-C
    (it printed its traceback below soak's one line), both only when asked: one cluster each
    way."""
    with connect(n_workers=1, log_failures=log_failures) as client:
        with pytest.raises(ZeroDivisionError, match="task 1 fails"):
            client.submit(failing_task, 1).result()
        client.run(log_failed_fetch)
    err = capfd.readouterr().err  # the worker process writes to the same stderr
    assert ("Compute Failed" in err and "task 1 fails" in err) is log_failures, err
    assert ("failed during get data" in err) is log_failures, err
