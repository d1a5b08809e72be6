"""Issue 38, item 2: an id column's values never size anything. A user's fold column holding
{1, 10**9} is refused before any range of folds is built (soak, evaluate, describe_table and
``soak info``, ``soak run``), naming the column and its largest value; an infinite fold is
refused as a value, not an OverflowError.

Each case runs with the address space capped at what the process holds plus 1 GiB
(``capped_memory``): on code that sizes folds 1..10**9 it fails with MemoryError in a second,
instead of taking the machine's memory."""

from __future__ import annotations

import resource
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import soak_dask as sd
from soak_dask.app import cli
from soak_dask.app.info import describe_table
from soak_dask.split.folds import check_fold_values

HUGE = 10**9
REFUSED = r"fold column 'k' has values up to 1,000,000,000 .*renumber them 1\.\.K"


@contextmanager
def capped_memory(extra: int = 2**30) -> Iterator[None]:
    """Cap this process's address space at its present size plus ``extra`` bytes (the soft
    limit, restored after): an allocation sized by a stray id fails with MemoryError."""
    statm = Path("/proc/self/statm")
    if not statm.exists():
        pytest.skip("needs /proc/self/statm (Linux) to cap memory")
    size = int(statm.read_text().split()[0]) * resource.getpagesize()
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = size + extra if hard == resource.RLIM_INFINITY else min(size + extra, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def stray_fold_frame(n: int = 40) -> pd.DataFrame:
    """Two folds, numbered 1 and 10**9 (a fold column with one stray id)."""
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {"f": rng.normal(size=n), "label": [0, 1] * (n // 2), "k": [1, HUGE] * (n // 2)}
    )


def test_a_huge_fold_number_is_refused_before_folds_are_sized():
    t = sd.load_table(stray_fold_frame(), label="label", fold="k")
    with capped_memory():
        for run in (sd.soak, sd.evaluate):
            with pytest.raises(ValueError, match=REFUSED):
                run(t, "featureless", options=sd.RunOptions(progress=False))


def test_check_fold_values_names_the_largest_value_and_refuses_infinity():
    counts = pd.DataFrame({"k": [1, 2, HUGE]})
    with capped_memory(), pytest.raises(ValueError, match=r"up to 1,000,000,000 \(3 distinct\)"):
        check_fold_values(counts, "k", None)
    with pytest.raises(ValueError, match=r"has values \['inf'\]; folds must be integers"):
        check_fold_values(pd.DataFrame({"k": [1.0, 2.0, np.inf]}), "k", None)
    assert check_fold_values(pd.DataFrame({"k": [3, 1, 2]}), "k", None) == 3  # as before


def test_describe_table_reports_the_huge_fold_without_sizing_it():
    t = sd.load_table(stray_fold_frame(), label="label", fold="k")
    with capped_memory():
        info = describe_table(t)
    assert info.n_folds == HUGE
    assert [w for w in info.warnings if "values up to 1,000,000,000" in w]
    assert not [w for w in info.warnings if "blocks of" in w]  # no empty-block list of 10**9


@pytest.mark.slow
def test_cli_info_and_run_refuse_the_huge_fold(tmp_path, capsys, cluster):
    data = tmp_path / "t.parquet"
    stray_fold_frame().to_parquet(data)
    table = [data, "--label", "label", "--fold-column", "k"]
    with capped_memory():
        assert cli.main([str(a) for a in ["info", *table]]) == 0
        assert "fold column 'k' has values up to 1,000,000,000" in capsys.readouterr().out
        argv = ["run", *table, "--learner", "featureless", "--out", tmp_path / "r.zarr"]
        argv += ["--scheduler", cluster.scheduler_address]
        assert cli.main([str(a) for a in argv]) == cli.USAGE_ERROR
    err = capsys.readouterr().err
    assert err.startswith("soak: error: fold column 'k' has values up to 1,000,000,000")
    assert not (tmp_path / "r.zarr").exists()
