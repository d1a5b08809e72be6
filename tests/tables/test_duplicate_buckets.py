"""The duplicate check's bucket count (``tables.duplicates.shared_in_bucket``) on integer file
ids, against a plain count of the rows each file holds; and a row held by three files."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import soak_dask as sd
from soak_dask.tables.duplicates import file_ids, shared_in_bucket

from ..conftest import toy_table

pieces_of = st.lists(
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 12)), max_size=30), min_size=1, max_size=4
)


@given(pieces_of)
def test_counts_each_row_once_by_first_and_last_file_and_names_every_file(pieces):
    names = [f"f{i}.parquet" for i in (3, 0, 2, 1)]  # ids in another order than the names
    ids = file_ids(names)
    frames = [
        pd.DataFrame(
            {
                "file": ids[[f for f, _ in p]],
                "hash": np.array([h for _, h in p], dtype=np.uint64),
            }
        )
        for p in pieces
    ]
    held: dict[int, set] = defaultdict(set)
    for p in pieces:
        for f, h in p:
            held[h].add(names[f])
    expected: dict[tuple, int] = defaultdict(int)
    holding: set[str] = set()
    for files in held.values():
        if len(files) > 1:
            expected[min(files), max(files)] += 1
            holding |= files
    got = shared_in_bucket([dict(zip(ids.tolist(), names, strict=True))], *frames)
    assert {pair: int(n) for pair, n in got.counts.items()} == dict(expected)
    assert got.files == holding  # every file holding a shared row, not its first and last only


def test_a_row_in_three_files_is_counted_once(tmp_path):
    frame = toy_table(n=90, n_subsets=1, seed=2)
    for name, rows in {
        "a": [0, *range(1, 30)],
        "b": [0, *range(30, 60)],
        "c": [0, *range(60, 90)],
    }.items():
        frame.iloc[rows].to_parquet(tmp_path / f"{name}.parquet", index=False)
    with pytest.raises(
        ValueError, match=r"^1 distinct rows of .*\(a.parquet and c.parquet share 1\)"
    ):
        sd.load_table(tmp_path, label="y")
