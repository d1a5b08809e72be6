"""Whether a run keeps the columns it reads in cluster memory (``persist=None``, the default).

Persisted, every pass of the run (the keys, each fit's statistics, each scoring pass) reads
the columns from the workers' memory; not persisted, each pass reads them from storage again.
Persisting a table the workers cannot hold makes them spill it to disk and pause, so the run
decides from the columns' size and the cluster's memory, and says which it chose and why.
"""

from __future__ import annotations

from typing import Any

import dask.dataframe as dd
import numpy as np
import psutil
from dask.utils import format_bytes

from ..workers import worker_memory
from .score_memory import n_workers

__all__ = ["OBJECT_BYTES", "PERSIST_SHARE", "choose_persist", "column_bytes"]

#: Share of the memory the workers have for tasks that the persisted columns may take: the
#: rest is the fits' and the scoring passes' (a fit holds its train rows beside them).
PERSIST_SHARE = 0.5
#: Bytes a value of a string (object) column is taken to hold in a pandas partition: the
#: pointer and a short Python string (a label, a region name); longer strings hold more.
OBJECT_BYTES = 64
_INDEX_BYTES = 8


def column_bytes(data: dd.DataFrame, rows: int) -> int:
    """Estimated bytes of `data`'s `rows` rows in the workers' memory (pandas partitions):
    each column's item size (`OBJECT_BYTES` a string, a category's codes), and the index.

    >>> import pandas as pd
    >>> frame = pd.DataFrame({"x": [1.0, 2.0], "y": ["a", "b"]})
    >>> column_bytes(dd.from_pandas(frame, npartitions=1), 1_000)
    80000
    """
    per_row = _INDEX_BYTES
    for dtype in data.dtypes:
        if isinstance(dtype, np.dtype) and dtype.kind != "O":
            per_row += dtype.itemsize
        elif str(dtype) == "category":
            per_row += 4  # the codes (int8 to int32); the categories are shared
        else:
            per_row += OBJECT_BYTES
    return rows * per_row


def choose_persist(
    persist: bool | None, data: dd.DataFrame, rows: int, client: Any
) -> tuple[bool, str]:
    """Whether to persist `data` (`rows` rows) on `client`, and why, in one line.

    ``persist`` True or False is the user's choice, kept. None: persist when the columns'
    estimated size (`column_bytes`) is at most `PERSIST_SHARE` of the memory the workers have
    for tasks (each worker's, as ``workers.worker_memory`` measures it, times the workers), or
    on Dask's local scheduler, of the memory this machine has available.
    """
    if persist is not None:
        given = "kept in cluster memory" if persist else "read from storage at each pass"
        return bool(persist), f"the columns are {given} (persist={persist} given)"
    size = column_bytes(data, rows)
    memory = worker_memory(client)
    if memory is not None:
        workers = n_workers(client)
        room, where = memory.free * workers, f"the {workers} workers' {{}} for tasks"
    else:
        room, where = psutil.virtual_memory().available, "this machine's {} available"
    keep = size <= PERSIST_SHARE * room
    verdict = "at most" if keep else "more than"
    what = (
        "kept in cluster memory for the run's passes"
        if keep
        else "read from storage at each pass (RunOptions(persist=True) keeps them in memory anyway)"
    )
    return keep, (
        f"the {rows:,} rows of the columns read, ~{format_bytes(size)}, are {what}: "
        f"{verdict} {PERSIST_SHARE:.0%} of {where.format(format_bytes(room))}"
    )
