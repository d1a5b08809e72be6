"""The blocks' size and shape and the clusters' K recorded (issue 42): ``spatial_blocks`` and
``spatial_clusters`` (and ``--blocks SIZE --block-shape``, ``--clusters K``) put them in the
results' attrs beside the group they make, the store keeps them, and the text and the report
say them where they name the group, in the CRS's unit."""

from __future__ import annotations

import dask
import numpy as np
import pandas as pd
import pytest

import soak_dask as sd
from soak_dask.app.info import describe_table
from soak_dask.results.text import evaluation_text, results_text
from soak_dask.tables.spatial_record import spatial_group_text

from . import test_round4_knndm as round4

scheduler, run_cli = round4.scheduler, round4.run_cli
HEX = "hexagonal blocks 250 m across (--blocks 250 --block-shape hex)"
CLUSTERS = "4 k-means clusters of the coordinates, seed 1 (--clusters 4)"


@pytest.fixture(autouse=True)
def _sync():
    with dask.config.set(scheduler="sync"):
        yield


@pytest.fixture(scope="module")
def pixels():
    rng = np.random.default_rng(0)
    n = 300
    df = pd.DataFrame({"x": rng.uniform(0, 1000, n), "y": rng.uniform(0, 1000, n)})
    df["f"] = rng.normal(size=n)
    df["z"] = df.f + rng.normal(size=n)
    df["label"] = np.where(df.z > 0, "a", "b")
    return df


def utm(df, label="label"):
    return sd.load_table(df, label=label, coords=["x", "y"], crs="EPSG:26911")


@pytest.mark.slow
def test_blocks_recorded_in_attrs_text_store_and_report(pixels, tmp_path):
    table = sd.spatial_blocks(utm(pixels), 250, shape="hex")
    res = sd.evaluate(table, "lda", options=sd.RunOptions(progress=False))
    a = res.attrs
    assert (a["group"], a["blocks"], a["block_shape"], a["block_column"]) == (
        "block", 250.0, "hex", "block",
    )  # fmt: skip
    assert "block_origin" not in a  # the default (0, 0)
    assert f"Groups: block, {HEX}" in evaluation_text(res)
    sd.save_results(res, tmp_path / "res.zarr")
    stored = sd.open_results(tmp_path / "res.zarr")
    assert (stored.attrs["blocks"], stored.attrs["block_shape"]) == (250.0, "hex")
    page = sd.write_report(stored, tmp_path / "report").read_text()
    assert HEX in page


@pytest.mark.slow
def test_clusters_recorded_in_soak_results(pixels, tmp_path):
    table = sd.spatial_clusters(utm(pixels.drop(columns="label"), "z"), 4)
    res = sd.soak(table, "linear", n_folds=3, options=sd.RunOptions(progress=False))
    a = res.attrs
    assert (a["group"], a["clusters"], a["cluster_seed"], a["cluster_column"]) == (
        "cluster", 4, 1, "cluster",
    )  # fmt: skip
    assert f"Groups: cluster, {CLUSTERS}" in results_text(res, "rmse")
    page = sd.write_report(res, tmp_path / "report").read_text()
    assert CLUSTERS in page


def test_size_words_without_a_crs_and_other_origins(pixels):
    table = sd.load_table(pixels, label="label", coords=["x", "y"])
    made = sd.spatial_blocks(table, 300, origin=(5.0, 0.0), column="tile", role="subset")
    roles = made.roles
    assert roles["subset"] == "tile" and roles["block_origin"] == [5.0, 0.0]
    assert spatial_group_text(roles, "tile") == (
        "square blocks of 300 coordinate units, origin (5.0, 0.0) (--blocks 300)"
    )
    assert spatial_group_text(roles, "label") == ""  # not made from the coordinates
    assert spatial_group_text({"group": "block"}, "block") == ""  # a result from before


def test_plain_groups_print_no_groups_line(pixels):
    table = sd.load_table(pixels.assign(g=np.arange(len(pixels)) % 10), label="label", group="g")
    res = sd.evaluate(table, "lda", options=sd.RunOptions(progress=False))
    assert "Groups:" not in evaluation_text(res) and "blocks" not in res.attrs


@pytest.mark.slow  # a few seconds: two commands on an in-process cluster
def test_commands_record_blocks_and_clusters(pixels, tmp_path, capsys, scheduler):
    data = tmp_path / "pixels.parquet"
    pixels.to_parquet(data)
    base = [data, "--coords", "x,y", "--crs", "EPSG:26911", "--no-progress"]
    hexes = ["--blocks", "250", "--block-shape", "hex", "--label", "label", "--learner", "lda"]
    clusters = ["--n-folds", "3", "--clusters", "4", "--label", "z", "--exclude", "label"]
    runs = {
        "ev.zarr": (["evaluate", *base, *hexes], HEX),
        "run.zarr": (["run", *base, *clusters, "--learner", "linear"], CLUSTERS),
    }
    for store, (argv, words) in runs.items():
        code, printed, err = run_cli([*argv, "--out", tmp_path / store], scheduler, capsys)
        assert code == 0, err
        assert words in printed, printed
    ev, run = (sd.open_results(tmp_path / s).attrs for s in runs)
    assert (ev["blocks"], ev["block_shape"], run["clusters"]) == (250.0, "hex", 4)


def test_soak_info_says_how_the_group_was_made(pixels):
    info = describe_table(sd.spatial_blocks(utm(pixels), 250, shape="hex"), stratify=False)
    assert f"group:    block, {HEX}\n" in str(info)
    plain = describe_table(utm(pixels))
    assert "group:    (none)\n" in str(plain)
