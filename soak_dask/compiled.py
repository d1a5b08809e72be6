"""Compile every numba kernel of soak_dask once, into numba's disk cache beside the sources, so
that no process of a run (the client, each Dask worker, each test process) compiles its own
copy on first use: compiled concurrently by a dozen fresh processes, they had cost a clean
checkout's test suite minutes. ``make`` runs this after installing (``python -m
soak_dask.compiled``); a kernel it misses, or one whose source changed, still compiles on first
use, as before."""

from __future__ import annotations

import time
import warnings


def compile_all() -> float:
    """Run each kernel on tiny data of the types real runs give it (or load it from the
    cache); the seconds it took."""
    import dask
    import numpy as np
    import pandas as pd

    from .learn.exact_sum import significand_sums
    from .learn.lasso import compile_kernels
    from .learn.pruned_tree import PrunedTreeClassifier, PrunedTreeRegressor
    from .split.knndm_ward import WardTree
    from .split.overlap import block_candidates, overlap_degrees
    from .split.sampling import mdc_select
    from .split.shares import ranks
    from .tables.load import load_table

    start = time.perf_counter()
    compile_kernels()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] + rng.normal(size=60) > 0).astype(np.int64)
    frozen = (X.copy(), X[:, 1].copy())
    for array in frozen:  # arrays from Arrow or a worker's inputs are read-only
        array.flags.writeable = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for features, target in ((X, X[:, 1]), frozen):  # numba compiles the two apart
            PrunedTreeClassifier().fit(features, y)
            PrunedTreeRegressor().fit(features, target)
    tree = WardTree.fit(X, 6)
    list(tree.cuts(np.array([2, 3])))
    tree.cv(np.arange(len(X)) % 2)  # folds that split clusters: one more pass over distances
    mdc_select((X[:, None, 0] - X[None, :, 0]) ** 2, 5)
    ranks(np.zeros(10, np.int64), np.arange(10), np.array([10]), 1, 1, "compile")
    frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(y=np.where(y, "p", "n"))
    table = load_table(frame, label="y")
    with dask.config.set(scheduler="sync"):
        for method in ("exact", "blockwise"):
            overlap_degrees(table, k=3, method=method).data.compute()
    rows = (X, y, np.arange(len(X)))  # writable positions, as a worker's deserialised blocks
    block_candidates(rows, rows, 3)
    for array in (X[:, 0].copy(), frozen[1]):  # a block's losses, and read-only values
        significand_sums(array)
    return time.perf_counter() - start


if __name__ == "__main__":
    print(f"soak_dask: numba kernels compiled (or loaded from the cache) in {compile_all():.1f} s")
