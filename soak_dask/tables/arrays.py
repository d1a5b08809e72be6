"""A partition's columns as NumPy arrays, as the tasks on the workers use them."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd


def category_codes(values: pd.Series, categories: pd.Index) -> np.ndarray:
    """Position of each value among ``categories`` (-1 if absent or missing).

    Only the distinct values are looked up: hashing a column of Arrow strings natively is
    several times faster than ``categories.get_indexer`` on the column.
    """
    codes, uniques = pd.factorize(values)
    return np.append(categories.get_indexer(uniques), -1)[codes]


def float_array(frame: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    """``frame[columns]`` as a read-only float64 array (missing values NaN).

    A view of the frame's block when the columns are float64 already: pandas copies whenever
    a dtype is asked of ``to_numpy``, a pass over the data that this saves. Read-only, so that
    nothing writes through it into the (perhaps persisted) partition; scikit-learn accepts
    read-only input and copies where it needs to.
    """
    z = frame[list(columns)].to_numpy(na_value=np.nan)
    if z.dtype != np.float64:
        z = z.astype(np.float64)
    z.flags.writeable = False
    return z
