"""``persist=None`` (the default): the run keeps the columns it reads in cluster memory when
they fit in a share of the workers' memory, reads them from storage otherwise, and says which
and why; True and False are kept as given."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from distributed import Client

import soak_dask as sd
from soak_dask.run import persist_choice
from soak_dask.run.persist_choice import choose_persist, column_bytes

from ..conftest import toy_table


def test_column_bytes_counts_item_sizes_strings_categories_and_the_index():
    frame = pd.DataFrame(
        {
            "f64": np.zeros(4),
            "i8": np.zeros(4, dtype="int8"),
            "s": list("abcd"),
            "c": pd.Categorical(list("abab")),
            "b": np.zeros(4, dtype=bool),
        }
    )
    data = dd.from_pandas(frame, npartitions=2)
    per_row = 8 + 1 + persist_choice.OBJECT_BYTES + 4 + 1 + 8  # + the index
    assert column_bytes(data, 1_000) == 1_000 * per_row


def test_given_values_are_kept_and_say_so():
    data = dd.from_pandas(pd.DataFrame({"x": np.zeros(3)}), npartitions=1)
    assert choose_persist(True, data, 10**12, None) == (
        True,
        "the columns are kept in cluster memory (persist=True given)",
    )
    keep, why = choose_persist(False, data, 1, None)
    assert not keep and "persist=False given" in why


def test_the_local_scheduler_compares_with_the_machine_s_available_memory(monkeypatch):
    data = dd.from_pandas(pd.DataFrame({"x": np.zeros(3)}), npartitions=1)

    class Memory:
        available = 1_000_000

    monkeypatch.setattr(persist_choice.psutil, "virtual_memory", lambda: Memory)
    assert choose_persist(None, data, 31_250, None)[0]  # 16 bytes a row: 0.5 MB, half of it
    keep, why = choose_persist(None, data, 31_251, None)
    assert not keep
    assert why.startswith("the 31,251 rows of the columns read, ~488.30 kiB, are read from ")
    assert "more than 50% of this machine's 0.95 MiB available" in why


@pytest.fixture(scope="module")
def client(cluster):
    with Client(cluster) as client:
        yield client


def _soak(table, client, **kw):
    return sd.soak(
        table, ["featureless", "lda"], n_folds=3, seed=2, options=sd.RunOptions(client=client, **kw)
    )


@pytest.mark.slow
def test_a_run_decides_says_why_and_gives_the_same_result_either_way(client, monkeypatch, capsys):
    table = sd.load_table(toy_table(n=300, n_subsets=2, seed=5), label="y", subset="subset")
    kept = _soak(table, client)
    said = capsys.readouterr().err
    assert "Persist: the 300 rows of the columns read, ~" in said
    assert "are kept in cluster memory for the run's passes: at most 50% of the 2 workers'" in said
    persisted = []
    real = client.persist
    monkeypatch.setattr(client, "persist", lambda data: persisted.append(data) or real(data))
    monkeypatch.setattr(persist_choice, "PERSIST_SHARE", 1e-12)  # nothing fits
    streamed = _soak(table, client)
    said = capsys.readouterr().err
    streams = "are read from storage at each pass (RunOptions(persist=True) keeps them in memory"
    assert streams in said
    assert persisted == []
    assert _soak(table, client, persist=True, progress=False) is not None and len(persisted) == 1
    assert "Persist:" not in capsys.readouterr().err  # a given value is not announced
    for measure in ("error", "auc"):
        np.testing.assert_array_equal(kept[measure].values, streamed[measure].values)
