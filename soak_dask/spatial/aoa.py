"""The area of applicability (Meyer & Pebesma 2021) as CAST computes it, on tables and rasters
larger than memory.

Definitions (CAST's ``trainDI`` and ``aoa``, R/trainDI.R and R/aoa.R of HannaMeyer/CAST, and
its ``.di_threshold`` in R/aoa-helpers.R):

- predictors are standardised by the training mean and SD (n - 1, R's ``scale``) and then
  multiplied by their weights (variable importance; 1 by default);
- the mean distance is the mean over training points of the mean distance to every *other*
  training point, whatever the folds (CAST's ``trainDist_avrgmean``): the mean of the
  n(n - 1) off-diagonal pairwise distances;
- a training point's DI is its distance to the nearest other training point -- the nearest
  one outside its own CV fold when folds are given -- divided by the mean distance;
- the threshold is the 75 % quantile of the training DI plus 1.5 interquartile ranges (R's
  default ``quantile`` type 7, numpy's "linear"), lowered to the largest training DI when it
  exceeds it; it is the whisker value itself, not the largest training DI below it (the
  ``boxplot.stats`` rule of CAST before version 0.7);
- a new point's DI is its distance to the nearest training point over the mean distance; it
  lies inside the AOA (1) when DI <= threshold, outside (0) when above; a point with any
  missing predictor has DI, AOA and LPD missing (NaN), as CAST's NA;
- LPD (local point density) counts the training points whose distance over the mean
  distance is *below* the threshold (strictly, as CAST's ``sum(DI < threshold)``); a training
  point's LPD counts the other training points outside its fold.

The training pass compares all pairs of training points block by block on the workers (the
mean distance needs every pair). New points are searched block by block on the workers too:
the small standardised training matrix is broadcast once, each task builds a k-d tree of it
(scipy's ``cKDTree``) and queries its own block of the raster or table, read by the worker.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import xarray as xr
from dask.utils import format_bytes
from scipy.spatial import cKDTree

from ..dask_client import current_client
from ..tables.arrays import float_array
from ..tables.raster import DEFAULT_CHUNK, X, Y
from ..tables.table import Table
from ..workers import FitMemoryError, worker_memory

__all__ = ["TrainDI", "aoa", "di_threshold", "new_di", "train_di"]

#: Distances computed per task of the training pass (64 MB of float64).
PAIRS_PER_TASK = 2**23
#: Training rows per task of the nearest-neighbour passes (each builds its k-d trees).
ROWS_PER_TASK = 20_000
#: Dims of the results: a table's rows, and the training points.
ROW, TRAIN = "row", "train"


@dataclass(frozen=True)
class TrainDI:
    """What the AOA of new data needs from the training data (CAST's ``trainDI`` object).

    Attributes
    ----------
    features : tuple of str
        Predictors, in order.
    center, scale, weights : ndarray
        Training mean and SD (n - 1) of each predictor, and its weight.
    matrix : ndarray
        The training points standardised and weighted, (n, p).
    mean_distance : float
        Mean distance between training points (CAST's ``trainDist_avrgmean``).
    di : ndarray
        DI of each training point.
    threshold : float
        The AOA threshold on the DI.
    lpd : ndarray or None
        LPD of each training point, when asked.
    n_folds : int
        Folds the training DI was computed with (0: none, every other point counts).
    """

    features: tuple[str, ...]
    center: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    matrix: np.ndarray
    mean_distance: float
    di: np.ndarray
    threshold: float
    lpd: np.ndarray | None
    n_folds: int


def aoa(
    train: Table | pd.DataFrame | dd.DataFrame,
    new: Table | pd.DataFrame | dd.DataFrame | xr.Dataset,
    *,
    features: Sequence[str] | str,
    weights: Mapping[str, float] | pd.Series | None = None,
    folds: str | Sequence | np.ndarray | pd.Series | None = None,
    lpd: bool = False,
    client: Any = None,
) -> xr.Dataset:
    """Dissimilarity index and area of applicability of ``new`` with respect to ``train``.

    Parameters
    ----------
    train : Table, pandas or Dask DataFrame
        The training points (small: held in memory, compared pair by pair).
    new : Table, pandas or Dask DataFrame, or xarray.Dataset
        The points to assess: rows of a table, or a raster whose ``features`` are 2-D
        variables over (y, x), in memory or lazy (``xarray.open_zarr``,
        ``soak_dask.tables.raster.open_geotiffs``). Values equal to a variable's ``nodata`` or
        ``_FillValue`` attribute are missing.
    features : sequence of str
        The predictors, columns of ``train`` and of ``new`` (variables of a raster).
    weights : dict or Series, optional
        ``{feature: weight}`` for every feature, e.g. the model's variable importance; the
        standardised predictors are multiplied by them. Default: all 1.
    folds : str or array-like, optional
        The CV fold of each training point (a column of ``train``, or one value per row):
        each training point's DI is then measured against the points outside its fold.
    lpd : bool
        Also count the local point density (``lpd``, ``train_lpd``).
    client : distributed.Client, optional
        Default: the current client, if any; otherwise Dask's local scheduler.

    Returns
    -------
    xarray.Dataset
        ``di`` and ``aoa`` (1 inside, 0 outside, NaN where a predictor is missing) over
        ``new``'s dims (``y``, ``x`` with its coordinates for a raster; ``row``, the position in
        the table, for a table), lazy (Dask) unless ``new`` is a pandas frame; ``train_di``
        over ``train``; ``lpd`` and ``train_lpd`` with ``lpd=True``. ``attrs["threshold"]``,
        ``attrs["mean_distance"]`` and the settings.

    Examples
    --------
    >>> import pandas as pd
    >>> train = pd.DataFrame({"a": [0.0, 1.0, 2.0, 3.0], "b": [0.0, 1.0, 0.0, 1.0]})
    >>> new = pd.DataFrame({"a": [1.0, 10.0], "b": [1.0, 0.0]})
    >>> ds = aoa(train, new, features=["a", "b"])
    >>> ds["aoa"].values.tolist(), round(ds.attrs["threshold"], 4)
    ([1.0, 0.0], 0.7952)
    """
    check_new(new, check_features(features))  # before any pass over the training data
    params = train_di(
        train, features=features, weights=weights, folds=folds, lpd=lpd, client=client
    )
    return new_di(params, new, lpd=lpd, client=client)


def train_di(
    train: Table | pd.DataFrame | dd.DataFrame,
    *,
    features: Sequence[str] | str,
    weights: Mapping[str, float] | pd.Series | None = None,
    folds: str | Sequence | np.ndarray | pd.Series | None = None,
    lpd: bool = False,
    client: Any = None,
) -> TrainDI:
    """The DI of the training points and the AOA threshold (CAST's ``trainDI``); parameters
    as ``aoa``."""
    features = check_features(features)
    client = current_client() if client is None else client
    frame = train_frame(train, features, folds, client)
    x = float_array(frame, features)
    _check_train_values(x, features)
    w = check_weights(weights, features)
    codes = _fold_codes(frame, folds)
    center, scale = x.mean(axis=0), x.std(axis=0, ddof=1)
    z = (x - center) / scale * w
    ref = broadcast(z, client)
    n = len(z)
    sums = _row_pass(_distance_sums, (z, ref), max(1, PAIRS_PER_TASK // n), client)
    mean = float(sums.sum() / (n * (n - 1)))
    di = _row_pass(_nearest_other, (z, ref), ROWS_PER_TASK, client, codes) / mean
    threshold = di_threshold(di)
    lpd_values = None
    if lpd:
        args = (codes, mean, threshold)
        counts = _row_pass(_train_lpd, (z, ref), ROWS_PER_TASK, client, *args)
        lpd_values = counts.astype(np.int64)
    n_folds = 0 if codes is None else int(codes.max() + 1)
    return TrainDI(features, center, scale, w, z, mean, di, threshold, lpd_values, n_folds)


def di_threshold(train_di: np.ndarray) -> float:
    """The AOA threshold: Q3 + 1.5 IQR of the training DI, at most its largest value.

    As CAST's ``.di_threshold`` (R/aoa-helpers.R; R/trainDI.R before it): ``quantile(DI, 0.75)
    + 1.5 * IQR(DI)`` with R's default type 7 (numpy's default "linear"), capped at
    ``max(DI)``; missing values are left out.

    Examples
    --------
    >>> di_threshold(np.array([1.0, 2.0, 3.0, 4.0, 100.0]))
    7.0
    >>> di_threshold(np.array([1.0, 2.0, 3.0]))
    3.0
    """
    values = np.asarray(train_di, dtype=float)
    values = values[np.isfinite(values)]
    q1, q3 = np.quantile(values, [0.25, 0.75])
    return float(min(q3 + 1.5 * (q3 - q1), values.max()))


def new_di(
    params: TrainDI,
    new: Table | pd.DataFrame | dd.DataFrame | xr.Dataset,
    *,
    lpd: bool = False,
    client: Any = None,
) -> xr.Dataset:
    """DI, AOA (and LPD) of ``new`` against the training data of ``params``, as ``aoa``
    returns them (CAST's ``aoa`` given a ``trainDI``)."""
    if lpd and params.lpd is None:
        raise ValueError("lpd=True needs the training LPD: call train_di(..., lpd=True)")
    client = current_client() if client is None else client
    check_new(new, params.features)
    if isinstance(new, Table):
        new = new.data
    dims, coords = (ROW,), None
    if isinstance(new, xr.Dataset):
        out, dims = _raster_blocks(params, new, lpd, client), (Y, X)
        coords = {k: v for k, v in new[params.features[0]].coords.items()}
    elif isinstance(new, dd.DataFrame):
        out = _table_blocks(params, new, lpd, client)
    else:
        out = block_di(float_array(new, params.features), params.matrix, *_consts(params, lpd))
    return _result(params, out, dims, coords, lpd)


def check_new(new: Any, features: tuple[str, ...]) -> None:
    """Refuse ``new`` unless it is a table or raster holding every feature (numeric 2-D band
    variables over (y, x) for a raster)."""
    if isinstance(new, Table):
        new = new.data
    if isinstance(new, xr.Dataset):
        for name in features:
            band_array(new, name)
    elif isinstance(new, pd.DataFrame | dd.DataFrame):
        _check_columns(list(new.columns), features, "new")
    else:
        raise TypeError(
            f"new is a {type(new).__name__}; give a Table, a pandas or Dask DataFrame, or an "
            "xarray.Dataset of 2-D band variables over (y, x)"
        )


def check_features(features: Any) -> tuple[str, ...]:
    """``features`` as a non-empty tuple of distinct names."""
    if isinstance(features, str):
        features = [features]
    if features is None or not len(features) or not all(isinstance(f, str) for f in features):
        raise ValueError(f"features={features!r}: give the predictors' names, e.g. ['B1', 'B2']")
    if len(set(features)) != len(features):
        raise ValueError(f"features={list(features)} names a feature twice")
    return tuple(features)


def check_weights(weights: Any, features: tuple[str, ...]) -> np.ndarray:
    """One non-negative finite weight per feature, in ``features``' order (all 1 by default).

    Unlike CAST, which ignores malformed weights and sets negative ones to 0 with a message,
    wrong weights are refused."""
    if weights is None:
        return np.ones(len(features))
    if not isinstance(weights, Mapping | pd.Series):
        raise TypeError(f"weights is a {type(weights).__name__}; give {{feature: weight}}")
    given = dict(weights)
    unknown = [k for k in given if k not in features]
    missing = [f for f in features if f not in given]
    if unknown or missing:
        raise ValueError(
            f"weights must name exactly the features {list(features)}: "
            + "; ".join(
                [f"unknown {unknown}"] * bool(unknown) + [f"missing {missing}"] * bool(missing)
            )
        )
    w = np.array([given[f] for f in features], dtype=float)
    bad = [f for f, v in zip(features, w, strict=True) if not np.isfinite(v) or v < 0]
    if bad:
        raise ValueError(f"weights of {bad} are negative or not finite; give weights >= 0")
    if not w.sum():
        raise ValueError("weights are all 0: at least one feature must count")
    return w


def train_frame(
    train: Any, features: tuple, folds: Any, client: Any, extra: Mapping[str, str] | None = None
) -> pd.DataFrame:
    """The training columns (the fold column, and ``extra``: ``{column: its role}``, e.g. the
    label) as a pandas frame, gathered from the cluster (the training points are small)."""
    if isinstance(train, Table):
        train = train.data
    if not isinstance(train, pd.DataFrame | dd.DataFrame):
        raise TypeError(f"train is a {type(train).__name__}; give a Table or a DataFrame")
    cols = list(features)
    if isinstance(folds, str):
        _check_columns(list(train.columns), (folds,), "train", what="fold column")
        cols.append(folds)
    for column, role in (extra or {}).items():
        _check_columns(list(train.columns), (column,), "train", what=f"{role} column")
        cols.append(column)
    _check_columns(list(train.columns), features, "train")
    frame = train[list(dict.fromkeys(cols))]
    if isinstance(frame, dd.DataFrame):
        frame = client.compute(frame).result() if client is not None else frame.compute()
    if len(frame) < 2:
        raise ValueError(f"train has {len(frame)} rows; the DI needs at least two")
    if folds is not None and not isinstance(folds, str) and len(folds) != len(frame):
        raise ValueError(
            f"folds has {len(folds)} values but train has {len(frame)} rows; give one fold "
            "per training row (or the name of train's fold column)"
        )
    return frame.reset_index(drop=True)


def _check_columns(columns: list, needed: Sequence[str], where: str, what: str = "feature") -> None:
    missing = [c for c in needed if c not in columns]
    if missing:
        raise ValueError(
            f"{what}s {missing} not in {where}, whose columns are {[str(c) for c in columns]}"
        )


def _check_train_values(x: np.ndarray, features: tuple[str, ...]) -> None:
    """Refuse missing or infinite training values and predictors without variance."""
    bad = {f: int(n) for f, n in zip(features, (~np.isfinite(x)).sum(axis=0), strict=True) if n}
    if bad:
        raise ValueError(
            f"train has missing or infinite values (rows per feature: {bad}); a training "
            "point needs every predictor: drop or fill those rows first"
        )
    flat = [f for f, sd in zip(features, np.ptp(x, axis=0), strict=True) if sd == 0]
    if flat:
        raise ValueError(f"features {flat} are constant in train; leave them out of features")


def _fold_codes(frame: pd.DataFrame, folds: Any) -> np.ndarray | None:
    """Integer codes 0.. of the folds (None without folds)."""
    if folds is None:
        return None
    values = frame[folds] if isinstance(folds, str) else pd.Series(np.asarray(folds))
    if values.isna().any():
        raise ValueError(f"folds has {int(values.isna().sum())} missing values; give every row one")
    codes, uniques = pd.factorize(values, sort=True)
    if len(uniques) < 2:
        raise ValueError(
            f"folds has one value ({uniques[0]!r}): no training point has points outside "
            "its fold; give two or more folds, or folds=None"
        )
    return codes


def broadcast(matrix: Any, client: Any) -> Any:
    """The training matrix (or frame) as one object every task reads: scattered to every
    worker once with a client, else a delayed constant of the local scheduler."""
    if client is not None:
        return dask.delayed(client.scatter(matrix, broadcast=True, hash=False))
    return dask.delayed(matrix, traverse=False)


def compute_tasks(tasks: list, client: Any) -> list:
    """The results of delayed ``tasks``, on ``client`` if given, else Dask's local scheduler."""
    if client is not None:
        return client.gather(client.compute(tasks))
    return list(dask.compute(*tasks))


def _row_pass(func, matrix: tuple, step: int, client: Any, *args) -> np.ndarray:
    """``func(matrix, start, stop, *args)`` over blocks of training rows, concatenated;
    ``matrix`` is (the training matrix, its broadcast reference). One block without a
    client runs here, without a graph."""
    z, ref = matrix
    n = len(z)
    if client is None and n <= step:
        return func(z, 0, n, *args)
    tasks = [
        dask.delayed(func, pure=True)(ref, start, min(start + step, n), *args)
        for start in range(0, n, step)
    ]
    return np.concatenate(compute_tasks(tasks, client))


def _distance_sums(z: np.ndarray, start: int, stop: int) -> np.ndarray:
    """Sum of the distances of rows ``start:stop`` to every training row, from one matrix
    product (|a|^2 + |b|^2 - 2 a.b, in place). Where that may cancel (squared distance below
    1e-6 of |a|^2 + the largest |b|^2: near-duplicates), the pair is recomputed from its
    differences, so a duplicate's 0 stays 0 and every distance keeps about 10 digits."""
    sq = np.einsum("ij,ij->i", z, z)
    d2 = z[start:stop] @ z.T
    d2 *= -2.0
    d2 += sq[start:stop, None]
    d2 += sq[None, :]
    tol = 1e-6 * (sq[start:stop] + sq.max())
    i, j = np.nonzero(d2 < tol[:, None])
    d2[i, j] = ((z[start + i] - z[j]) ** 2).sum(axis=1)
    np.maximum(d2, 0.0, out=d2)
    return np.sqrt(d2, out=d2).sum(axis=1)


def _neighbours(z: np.ndarray, codes, start: int, stop: int):
    """For rows ``start:stop``: (positions in the block, the training rows they may be
    compared with, whether those include the row itself), one group per fold."""
    rows = np.arange(start, stop)
    if codes is None:
        return [(rows - start, z, True)]
    return [
        (np.flatnonzero(codes[start:stop] == f), z[codes != f], False)
        for f in np.unique(codes[start:stop])
    ]


def _nearest_other(z: np.ndarray, start: int, stop: int, codes) -> np.ndarray:
    """Distance of each row ``start:stop`` to its nearest other training row (outside its
    fold with folds), exact: a k-d tree (k = 2 when the row itself is in the tree: its own 0,
    or a duplicate's, comes first)."""
    out = np.empty(stop - start)
    for at, others, with_self in _neighbours(z, codes, start, stop):
        dist, _ = cKDTree(others).query(z[start:stop][at], k=2 if with_self else 1)
        out[at] = dist[:, 1] if with_self else dist
    return out


def _train_lpd(z, start: int, stop: int, codes, mean: float, threshold: float) -> np.ndarray:
    """LPD of rows ``start:stop``: other training rows (outside the fold) with distance / mean
    below the threshold."""
    out = np.empty(stop - start)
    for at, others, with_self in _neighbours(z, codes, start, stop):
        rows = np.arange(start, stop)[at] if with_self else None
        out[at] = count_below(cKDTree(others), others, z[start:stop][at], mean, threshold, rows)
    return out


def count_below(tree, ref, q, mean: float, threshold: float, self_rows=None) -> np.ndarray:
    """How many points of ``ref`` (in ``tree``) lie at distance / mean < threshold from each
    point of ``q``, as CAST compares (``sum(DI < threshold)``), leaving out ``ref[self_rows]``.

    Two ball counts just inside and just outside the radius settle every point but those
    within 1e-9 of it, which are counted from their exact distances."""
    radius = threshold * mean
    low = tree.query_ball_point(q, radius * (1 - 1e-9), return_length=True).astype(np.int64)
    high = tree.query_ball_point(q, radius * (1 + 1e-9), return_length=True)
    if self_rows is not None:
        low -= 1  # the point itself, at distance 0
    for i in np.flatnonzero(high != low + (self_rows is not None)):
        d = np.sqrt(((ref - q[i]) ** 2).sum(axis=1))
        if self_rows is not None:
            d[self_rows[i]] = np.inf
        low[i] = int((d / mean < threshold).sum())
    return low


def _consts(params: TrainDI, lpd: bool) -> tuple:
    """The small parameters every block task gets beside the training matrix."""
    return (
        params.center,
        params.scale,
        params.weights,
        params.mean_distance,
        (params.threshold if lpd else None),
    )


def block_di(
    x: np.ndarray,
    matrix: np.ndarray,
    center: np.ndarray,
    scale: np.ndarray,
    weights: np.ndarray,
    mean_distance: float,
    threshold: float | None,
) -> np.ndarray:
    """DI (row 0) and LPD (row 1, when ``threshold`` is given) of the points ``x`` (m, p):
    NaN where a predictor is missing."""
    out = np.full((2, len(x)), np.nan)
    ok = np.isfinite(x).all(axis=1)
    if not ok.any():
        return out
    q = (x[ok] - center) / scale * weights
    tree = cKDTree(matrix)
    dist, _ = tree.query(q, k=1)
    out[0, ok] = dist / mean_distance
    if threshold is not None:
        out[1, ok] = count_below(tree, matrix, q, mean_distance, threshold)
    return out


#: Bytes a block task holds per cell and predictor: the cells as float64, standardised, and
#: the k-d tree's query arrays (about three copies).
BYTES_PER_VALUE = 3 * 8


def check_block_memory(cells: int, params: TrainDI, client: Any, what: str, fix: str) -> None:
    """Refuse, before any work, blocks that would not fit the memory a worker has for a task
    (``workers.worker_memory``): their cells and the training matrix with its k-d tree."""
    memory = worker_memory(client)
    need = cells * len(params.features) * BYTES_PER_VALUE + 3 * params.matrix.nbytes
    if memory is not None and need > memory.free:
        raise FitMemoryError(
            f"a {what} of {cells:,} cells needs about {format_bytes(need)} on a worker (its "
            f"{len(params.features)} predictors and the training matrix), more than the "
            f"{memory}; {fix}"
        )


def _raster_block(matrix: np.ndarray, consts: tuple, *bands: np.ndarray) -> np.ndarray:
    x = np.stack([b.ravel() for b in bands], axis=1).astype(np.float64, copy=False)
    return block_di(x, matrix, *consts).reshape(2, *bands[0].shape)


def _raster_blocks(params: TrainDI, ds: xr.Dataset, lpd: bool, client: Any) -> da.Array:
    """DI and LPD of a raster's cells, one task per spatial chunk."""
    bands = [band_array(ds, f) for f in params.features]
    bands = da.core.unify_chunks(*[x for b in bands for x in (b, "yx")])[1]
    cells = max(bands[0].chunks[0]) * max(bands[0].chunks[1])
    check_block_memory(cells, params, client, "raster chunk", "rechunk the raster smaller")
    ref = broadcast(params.matrix, client)
    return da.map_blocks(
        _raster_block,
        ref,
        _consts(params, lpd),
        *bands,
        new_axis=0,
        chunks=((2,), *bands[0].chunks),
        dtype=np.float64,
        meta=np.array((), dtype=np.float64),
    )


def band_array(ds: xr.Dataset, name: str) -> da.Array:
    """Variable ``name`` of a raster as a lazy float64 (y, x) array, nodata as NaN."""
    if name not in ds.data_vars:
        raise ValueError(
            f"feature {name!r} is not a variable of the raster, whose variables are "
            f"{[str(v) for v in ds.data_vars]}"
        )
    var = ds[name]
    if set(var.dims) != {Y, X}:
        raise ValueError(
            f"raster variable {name!r} has dims {var.dims}; the AOA takes 2-D band variables "
            f"over ({Y}, {X}) (select one time or band first)"
        )
    if not np.issubdtype(var.dtype, np.number):
        raise ValueError(f"raster variable {name!r} is {var.dtype}, not numeric")
    var = var.transpose(Y, X)
    data = (
        var.data
        if isinstance(var.data, da.Array)
        else da.from_array(var.values, chunks=(DEFAULT_CHUNK, DEFAULT_CHUNK))
    )
    data = data.astype(np.float64)
    fill = var.attrs.get("nodata", var.attrs.get("_FillValue", var.encoding.get("_FillValue")))
    if fill is not None and np.isfinite(fill):
        data = da.where(data == fill, np.nan, data)
    return data


def _frame_block(frame: pd.DataFrame, matrix: np.ndarray, features, consts: tuple) -> np.ndarray:
    return block_di(float_array(frame, features), matrix, *consts)


def _table_blocks(params: TrainDI, ddf: dd.DataFrame, lpd: bool, client: Any) -> da.Array:
    """DI and LPD of a Dask table's rows, one task per partition (read by the worker)."""
    data = ddf[list(params.features)]
    (lengths,) = compute_tasks([ddf[params.features[0]].map_partitions(len)], client)
    check_block_memory(int(lengths.max()), params, client, "partition", "repartition the table")
    ref = broadcast(params.matrix, client)
    consts = _consts(params, lpd)
    blocks = [
        da.from_delayed(
            dask.delayed(_frame_block, pure=True)(part, ref, params.features, consts),
            shape=(2, n),
            dtype=np.float64,
        )
        for part, n in zip(data.to_delayed(), lengths.tolist(), strict=True)
    ]
    return da.concatenate(blocks, axis=1)


def _result(params: TrainDI, out: Any, dims: tuple, coords: Any, lpd: bool) -> xr.Dataset:
    """The Dataset of ``out`` (DI and LPD stacked) over ``dims``, with the training DI."""
    di = xr.DataArray(out[0], dims=dims, coords=coords)
    inside = xr.where(di <= params.threshold, np.float32(1), np.float32(0))
    data = {
        "di": di.assign_attrs(long_name="dissimilarity index"),
        "aoa": inside.where(di.notnull())
        .astype(np.float32)
        .assign_attrs(long_name="area of applicability (1 inside, 0 outside)"),
        "train_di": xr.DataArray(params.di, dims=TRAIN),
    }
    if lpd:
        data["lpd"] = xr.DataArray(out[1], dims=dims, coords=coords).astype(np.float32)
        data["lpd"].attrs["long_name"] = "local point density (training points within threshold)"
        data["train_lpd"] = xr.DataArray(params.lpd, dims=TRAIN)
    attrs = {
        "threshold": params.threshold,
        "mean_distance": params.mean_distance,
        "features": list(params.features),
        "weights": [float(w) for w in params.weights],
        "n_train": len(params.matrix),
        "n_folds": params.n_folds,
        "definition": "Meyer & Pebesma (2021); CAST trainDI/aoa, Euclidean (L2)",
    }
    return xr.Dataset(data, attrs=attrs)
