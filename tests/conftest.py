"""Shared fixtures: the reference data in ../shared (skipped when absent, a failure under
``CI=true``, where it is always laid out) and small tables."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import settings

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
AZTREES_FEATURES = [f"SAMPLE_{i}" for i in range(1, 22)]

# ``make test-fast`` sets HYPOTHESIS_PROFILE=fast: a fifth of the examples (``n_examples``), 10
# where a test names none.
# Every profile runs without hypothesis' 200 ms deadline: two processes and their clusters share
# two cores, and an example that waits for a core is no slower code (two such tests flaked).
settings.register_profile("soak", deadline=None)
settings.register_profile("fast", settings.get_profile("soak"), max_examples=10)
FAST = os.environ.get("HYPOTHESIS_PROFILE") == "fast"
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "soak"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules with the most ``slow`` tests first, each module's tests kept together and in
    order (its fixtures set up once): under ``-n 2`` the long tests (notebooks, docs,
    subprocesses) start early, and the short ones left at the end keep both processes busy to
    the last, instead of one process running a long test alone while the other waits."""
    slow: dict[Path, int] = {}
    for item in items:
        slow[item.path] = slow.get(item.path, 0) + (item.get_closest_marker("slow") is not None)
    first = {path: i for i, path in enumerate(slow)}
    items.sort(key=lambda item: (-slow[item.path], first[item.path]))


def n_examples(n: int) -> int:
    """``max_examples`` for a property test: ``n``, or a fifth of it (at least 2) under the fast
    profile, since a test's own ``max_examples`` overrides the profile's."""
    return max(2, n // 5) if FAST else n


def shared_file(*parts: str) -> Path:
    """Path of a reference file in ../shared/data, or skip the test with the reason.

    Under ``CI=true`` the file must be there: a missing one fails the test instead of silently
    skipping the comparisons with the paper and the reference implementation.
    """
    path = SHARED.joinpath(*parts)
    if not path.exists():
        reason = f"reference data {path} not present (../shared is not checked out here)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}; CI=true requires it")
        pytest.skip(reason)
    return path


@pytest.fixture(scope="session")
def aztrees() -> pd.DataFrame:
    """The real aztrees pixel table with a 1-based ``row_id`` column, as in the R fixtures."""
    df = pd.read_parquet(shared_file("aztrees.parquet"))
    return df.assign(row_id=np.arange(1, len(df) + 1))


@pytest.fixture(scope="session")
def cluster():
    """A LocalCluster of two single-threaded worker processes, shared by every test of the session
    (of each pytest-xdist process) that needs a cluster of worker processes and changes nothing in
    it: started once, its workers' imports paid once, not once per module. A test that kills or
    reconfigures workers starts its own (tests/run/test_worker_loss.py)."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster:
        yield cluster


def toy_table(n: int = 300, n_subsets: int = 3, seed: int = 0, n_groups: int | None = None):
    """A small classification frame whose subsets differ, for fast engine tests."""
    rng = np.random.default_rng(seed)
    subset = rng.choice([f"s{i}" for i in range(n_subsets)], size=n)
    x = rng.normal(size=(n, 3))
    shift = pd.Series(subset).str[1:].astype(int).to_numpy()
    y = np.where(x[:, 0] + 0.5 * shift * x[:, 1] + rng.normal(scale=0.5, size=n) > 0, "yes", "no")
    df = pd.DataFrame({"x0": x[:, 0], "x1": x[:, 1], "x2": x[:, 2], "subset": subset, "y": y})
    if n_groups:
        df["group"] = subset + "-" + y + "-" + pd.Series(rng.integers(0, n_groups, n)).astype(str)
    return df


def plan_rows(table, plan) -> dict:
    """``{fit_id: (train rows, {block: test rows})}`` of ``plan`` on ``table``, selected from the
    lazy table as the engine's tasks select them (``fitting.select_rows``, ``split_frame``)."""
    import dask

    from soak_dask.run.fitting import select_rows, split_frame

    lazy = {}
    for fit_id, fit in plan.fits.iterrows():
        tests = plan.blocks.loc[list(fit["blocks"])]
        args = (fit["train"], tuple(tests["test"]), None, 1, table.label, None)
        lazy[fit_id] = table.data.map_partitions(select_rows, *args, meta=table.data._meta)
    out = {}
    for fit_id, frame in zip(lazy, dask.compute(*lazy.values()), strict=True):
        tests = plan.blocks.loc[list(plan.fits.loc[fit_id, "blocks"])]
        blocks = zip(tests.index, tests["test"], tests["name"], strict=True)
        out[fit_id] = split_frame(frame, plan.fits.loc[fit_id, "train"], list(blocks))
    return out


def task_memory(free: int, resting: int = 0):
    """A ``WorkerMemory`` with exactly ``free`` bytes for a task (its limit made to fit)."""
    from soak_dask.workers import LIMIT_SHARE, WorkerMemory

    limit = int((free + resting) / LIMIT_SHARE) + 2
    memory = WorkerMemory(limit, int(LIMIT_SHARE * limit) - free)
    assert memory.free == free and memory.resting >= resting
    return memory
