"""Names moved down a floor (scripts/house.py) are still importable where users and earlier code
import them, as the very same objects."""

from __future__ import annotations

import importlib

import pytest

MOVED = {
    "soak_dask.io.locations": (
        "soak_dask.results.store",
        ["Location", "locate", "check_apart", "check_writable", "overlaps"],
    ),
    "soak_dask.run.assemble": (
        "soak_dask.results.store",
        ["build_dataset", "encode_attrs", "package_versions", "RESULTS_TITLE"],
    ),
    "soak_dask.io.outdir": (
        "soak_dask.results.outdir",
        ["MANIFEST", "FORMAT", "OutputDir", "check_out_dir", "local_path", "digest"],
    ),
    "soak_dask.split.knndm": (
        "soak_dask.spatial.knndm",
        ["knndm_folds", "KNNDMResult", "Folding", "knndm_outer", "cluster_grid", "cv_distances"],
    ),
    "soak_dask.dask_client": ("soak_dask.run.executor", ["current_client"]),
    "soak_dask.workers": (
        "soak_dask.run.memory",
        ["FitMemoryError", "WorkerMemory", "worker_memory", "worker_at_rest", "LIMIT_SHARE"],
    ),
}


@pytest.mark.parametrize("home", sorted(MOVED))
def test_a_moved_name_is_the_same_object_at_its_old_path(home):
    old, names = MOVED[home]
    new_mod, old_mod = importlib.import_module(home), importlib.import_module(old)
    for name in names:
        assert getattr(old_mod, name) is getattr(new_mod, name), f"{old}.{name}"


def test_every_mean_test_is_at_its_old_path():
    new = importlib.import_module("soak_dask.stats.mean_tests")
    old = importlib.import_module("soak_dask.results.mean_tests")
    assert list(old.__all__) == list(new.__all__)
    for name in new.__all__:
        assert getattr(old, name) is getattr(new, name), name


def test_the_package_exports_knndm_from_its_home():
    import soak_dask as sd
    from soak_dask.split import knndm

    assert sd.knndm_folds is knndm.knndm_folds and sd.KNNDMResult is knndm.KNNDMResult
