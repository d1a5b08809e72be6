"""What a task may hold on the workers (soak_dask.workers): the memory the allocators keep
after tasks free it is given back before a worker's memory at rest is read."""

from __future__ import annotations

import subprocess
import sys

import pytest

CHECK = """
import psutil
from soak_dask.workers import release_unused

process = psutil.Process()
start = process.memory_info().rss
chunks = [bytes(4096) + bytes(i % 7) for i in range(20_000)]  # ~80 MB, not pymalloc's
kept = chunks[::50]  # every 50th stays: the heap cannot shrink from its top
del chunks
freed = process.memory_info().rss - start
release_unused()
given_back = freed - (process.memory_info().rss - start)
print(len(kept), freed, given_back)
"""


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_memory_freed_in_the_middle_of_the_heap_is_given_back():
    # In a fresh process: one whose heap already has free holes (earlier tests') places the
    # chunks there, and its resident memory barely grows.
    out = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, check=True)
    kept, freed, given_back = map(int, out.stdout.split())
    assert kept == 400 and freed > 60e6 and given_back > 0.8 * freed
