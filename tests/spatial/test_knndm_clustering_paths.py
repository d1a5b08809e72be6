"""kNNDM's clustering (``clustering=``, ``--clustering``) taken the same way on every path that
makes kNNDM folds: ``knndm_folds``, the design ``KNNDMFolds``, ``evaluate(outer="knndm")``,
``soak evaluate --outer knndm`` (flag and run file) and ``soak knndm``: each passes it on (the
clustering used recorded as ``knndm_clustering``, the folds those of ``knndm_folds`` with it)
and refuses a bad value naming the option, before any work."""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import pytest

import soak_dask as sd

from . import test_round4_knndm as round4
from .test_spatial_folds import clustered_scene

scheduler, run_cli = round4.scheduler, round4.run_cli
LEARNER = "linear"


@pytest.fixture(scope="module")
def scene():
    """96 training points in 8 tight clusters, the prediction grid over the whole square."""
    df, area = clustered_scene(per=12)
    return df, area, sd.load_table(df, label="label", coords=["x", "y"])


@pytest.fixture(scope="module")
def reference(scene) -> Callable[[str], sd.KNNDMResult]:
    """``knndm_folds`` of the scene with a clustering: computed once per clustering for the
    module (tests only read it)."""
    _, area, table = scene

    @functools.cache
    def of(clustering: str) -> sd.KNNDMResult:
        return sd.knndm_folds(table, area, n_folds=4, seed=1, clustering=clustering)

    return of


@pytest.mark.slow
@pytest.mark.parametrize("clustering", ["hierarchical", "kmeans"])
def test_design_and_evaluate_pass_the_clustering_on(scene, reference, clustering):
    _, area, table = scene
    expected = reference(clustering)
    design = sd.KNNDMFolds(area, n_folds=4, seed=1, clustering=clustering)
    by_design = sd.run_design(table, design, LEARNER, options=sd.RunOptions(progress=False))
    by_evaluate = sd.evaluate(
        table,
        LEARNER,
        outer="knndm",
        outer_folds=4,
        prediction=area,
        clustering=clustering,
        options=sd.RunOptions(progress=False),
    )
    for res in (by_design, by_evaluate):
        assert res.attrs["knndm_clustering"] == clustering
        assert res.attrs["knndm_W"] == pytest.approx(expected.W)
        np.testing.assert_array_equal(res["n_test"].values.ravel(), expected.fold_sizes)
    assert design.result_.clustering == clustering
    np.testing.assert_allclose(by_design["rmse"].values, by_evaluate["rmse"].values)


@pytest.mark.slow
def test_the_clusterings_differ_on_this_scene(reference):
    """The test above would not see a clustering dropped on the way: here they differ."""
    ward, kmeans = (reference(c) for c in ("hierarchical", "kmeans"))
    assert ward.W != pytest.approx(kmeans.W)


@pytest.mark.slow
def test_default_is_kmeans_in_geographical_space(scene):
    _, area, table = scene
    res = sd.evaluate(
        table,
        LEARNER,
        outer="knndm",
        outer_folds=4,
        prediction=area,
        options=sd.RunOptions(progress=False),
    )
    assert res.attrs["knndm_clustering"] == "kmeans"
    assert sd.KNNDMFolds(area).clustering is None


def test_bad_clustering_refused_naming_the_option(scene):
    _, area, table = scene
    message = r"^clustering='ward': choose 'hierarchical' \(one Ward tree"
    with pytest.raises(ValueError, match=message):
        sd.KNNDMFolds(area, clustering="ward")
    with pytest.raises(ValueError, match=message):  # at the door: nothing read
        sd.evaluate(table, LEARNER, outer="knndm", prediction="no/such.parquet", clustering="ward")
    with pytest.raises(ValueError, match=r"^clustering='kmeans' has no effect with outer='cv'"):
        sd.evaluate(table, LEARNER, clustering="kmeans")


@pytest.mark.slow  # a few seconds: two commands on an in-process cluster
def test_soak_evaluate_takes_clustering_from_flag_and_run_file(
    scene, reference, tmp_path, capsys, scheduler
):
    df, area, _ = scene
    data, pred = tmp_path / "train.parquet", tmp_path / "area.parquet"
    df.to_parquet(data)
    area.to_parquet(pred)
    base = ["evaluate", data, "--label", "label", "--coords", "x,y", "--outer", "knndm",
            "--outer-folds", "4", "--prediction", pred, "--learner", LEARNER,
            "--no-progress"]  # fmt: skip
    code, printed, err = run_cli([*base, "--clustering", "hierarchical", "--out",
                                  tmp_path / "flag.zarr"], scheduler, capsys)  # fmt: skip
    assert code == 0, err
    config = tmp_path / "run.toml"
    config.write_text('[evaluation]\nclustering = "hierarchical"\n')
    code, _, err = run_cli([*base, "--config", config, "--out", tmp_path / "file.zarr"],
                           scheduler, capsys)  # fmt: skip
    assert code == 0, err
    expected = reference("hierarchical")
    for store in ("flag.zarr", "file.zarr"):
        stored = sd.open_results(tmp_path / store)
        assert stored.attrs["knndm_clustering"] == "hierarchical"
        assert stored.attrs["knndm_W"] == pytest.approx(expected.W)
    assert "hierarchical (Ward)" in printed or "random folds kept" in printed


def test_commands_refuse_a_bad_clustering_naming_the_flag(tmp_path, capsys, scheduler):
    """Refused before the table is read (it does not exist)."""
    missing = tmp_path / "none.parquet"
    evaluate = ["evaluate", missing, "--label", "y", "--coords", "x,y", "--outer", "knndm",
                "--prediction", missing, "--out", tmp_path / "o.zarr"]  # fmt: skip
    knndm = ["knndm", missing, missing, "--label", "y", "--coords", "x,y", "--out", tmp_path / "k"]
    for argv in (evaluate, knndm):
        code, _, err = run_cli([*argv, "--clustering", "ward"], scheduler, capsys)
        assert code == 2 and "--clustering" in err and "'ward'" in err, err
    code, _, err = run_cli(
        ["evaluate", missing, "--label", "y", "--clustering", "kmeans", "--out",
         tmp_path / "o.zarr"], scheduler, capsys,
    )  # fmt: skip
    assert code == 2 and "--clustering=" in err and "outer='cv'" in err, err
    config = tmp_path / "bad.toml"
    config.write_text('[evaluation]\nouter = "knndm"\nclustering = "ward"\n')
    code, _, err = run_cli(evaluate[:6] + ["--config", config, "--out", tmp_path / "o.zarr"],
                           scheduler, capsys)  # fmt: skip
    assert code == 2 and "clustering='ward'" in err and "bad.toml" in err, err
