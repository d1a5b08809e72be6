"""A pytest plugin that measures the CPU seconds of every test, its processes included.

``--durations`` gives wall seconds, which on a shared two-core machine say more about the load
than about the test. This plugin adds up, around each test (set-up and tear-down included), the
CPU time of the test process, of every process below it (the shared cluster's workers, a
notebook's kernel and its cluster, a ``soak`` subprocess) and of the children that ended
meanwhile, and prints the files that cost most at the end::

    python -m pytest -p tests.cpu_seconds -n 0 tests/app

``CPU_SECONDS_OUT=path.jsonl`` also writes one line per test (``id``, ``cpu``, ``wall``). Under
``-n 2`` only the file tells (each process adds its own lines; the summary needs ``-n 0``).
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections import defaultdict
from collections.abc import Iterator

import psutil
import pytest

#: Files listed at the end of the session, most CPU first.
TOP_FILES = 15

_ME = psutil.Process()
_seconds: dict[str, tuple[float, float]] = {}


def cpu_seconds() -> float:
    """User and system seconds of this process, its live descendants and its ended children."""
    total = 0.0
    for process in [_ME, *_ME.children(recursive=True)]:
        try:
            times = process.cpu_times()
        except psutil.Error:  # ended between the listing and the reading
            continue
        total += times.user + times.system
    ended = resource.getrusage(resource.RUSAGE_CHILDREN)
    return total + ended.ru_utime + ended.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    cpu, wall = cpu_seconds(), time.monotonic()
    yield
    cpu, wall = cpu_seconds() - cpu, time.monotonic() - wall
    _seconds[item.nodeid] = (cpu, wall)
    out = os.environ.get("CPU_SECONDS_OUT")
    if out:
        line = {"id": item.nodeid, "cpu": round(cpu, 3), "wall": round(wall, 3)}
        with open(out, "a", encoding="utf-8") as file:
            file.write(json.dumps(line) + "\n")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _seconds:  # the controller of pytest-xdist runs no test itself
        return
    files: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for nodeid, (cpu, wall) in _seconds.items():
        row = files[nodeid.split("::")[0]]
        row[0], row[1], row[2] = row[0] + cpu, row[1] + wall, row[2] + 1
    cpu = sum(row[0] for row in files.values())
    terminalreporter.section(f"CPU seconds: {cpu:.0f} in {len(_seconds)} tests")
    for name, (cpu, wall, n) in sorted(files.items(), key=lambda kv: -kv[1][0])[:TOP_FILES]:
        terminalreporter.write_line(f"{cpu:7.1f} CPU s {wall:7.1f} s {n:4d} tests  {name}")
