"""Issue 42, item 3: kNNDM's outputs a user can use as input -- ``folds.parquet`` as a fold
file keyed by row position (``attach_folds`` joins it back, refusing another table's),
``candidates.csv`` with every candidate's W (random folds' too), both W printed by ``soak
knndm`` and ``evaluate --outer knndm``, kNNDM train/test splits (CAST 1.1.1's ``test_prop``)
and the ECDF figure's distance unit."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import cdist
from scipy.stats import wasserstein_distance

import soak_dask as sd
from soak_dask.results.soak_kinds import evaluation_printout
from soak_dask.split.fold_file import ROW, write_fold_file
from soak_dask.split.knndm import assess_candidate, knndm_note, merge_clusters
from soak_dask.split.knndm_shares import SCORED, Shares, fold_shares

from . import test_round4_knndm as round4
from .test_spatial_folds import clustered_scene, hand_gjstar

# CAST's farm (its 42 sensors, its raster) and the in-process cluster of ``soak knndm``
sensors, farm_tif, scheduler, run_cli = (
    round4.sensors,
    round4.farm_tif,
    round4.scheduler,
    round4.run_cli,
)


def scene_table(rows_per_partition=None, **roles):
    df, pred = clustered_scene()
    df = df.assign(g=np.arange(len(df)) % 37)
    table = sd.load_table(
        df, label="label", coords=["x", "y"], rows_per_partition=rows_per_partition, **roles
    )
    return df, pred, table


def no_empty_cell(path):
    """Every cell of the CSV at ``path`` holds text."""
    cells = pd.read_csv(path, keep_default_na=False, dtype=str)
    assert not (cells == "").any().any(), cells[(cells == "").any(axis=1)]
    return cells


# ---------------------------------------------------------------------------- the fold file
@pytest.mark.slow
def test_fold_file_holds_position_keys_and_fold_and_attaches_back(tmp_path):
    df, pred, table = scene_table(group="g")
    res = sd.knndm_folds(table, pred, n_folds=4, sample=2000, seed=3, n_candidates=10)
    path = tmp_path / "folds.parquet"
    assert write_fold_file(res.table, res.column, path) == len(df)
    written = pd.read_parquet(path)
    assert list(written.columns) == [ROW, "label", "x", "y", "g", "knndm_fold"]
    np.testing.assert_array_equal(written[ROW], np.arange(len(df)))
    pd.testing.assert_frame_equal(
        written[["label", "x", "y", "g"]], df[["label", "x", "y", "g"]], check_dtype=False
    )
    folds = res.table.data[res.column].compute().to_numpy()
    np.testing.assert_array_equal(written["knndm_fold"], folds)
    # another partitioning of the same table: each partition reads its own rows
    again = sd.load_table(df, label="label", coords=["x", "y"], group="g", rows_per_partition=37)
    attached = sd.attach_folds(again, path)
    assert attached.fold == "knndm_fold" and attached.data.npartitions == again.data.npartitions
    np.testing.assert_array_equal(attached.data["knndm_fold"].compute(), folds)
    # the attached folds are the kNNDM folds: fold_summary reads them as its fold role
    summary = sd.fold_summary(attached)
    assert summary["n_test"].tolist() == list(res.fold_sizes)


def test_attach_folds_refuses_another_table(tmp_path):
    df, pred, table = scene_table()
    res = sd.knndm_folds(table, pred, n_folds=4, sample=2000, seed=3, n_candidates=5)
    path = tmp_path / "folds.parquet"
    write_fold_file(res.table, res.column, path)
    swapped = df.copy()
    swapped.iloc[[10, 11]] = swapped.iloc[[11, 10]].to_numpy()  # two rows in another order
    other = sd.load_table(swapped, label="label", coords=["x", "y"], rows_per_partition=50)
    with pytest.raises(ValueError, match=r"row 10 of the table has label=.* another order"):
        sd.attach_folds(other, path)
    fewer = sd.load_table(df.iloc[:-1], label="label", coords=["x", "y"])
    with pytest.raises(ValueError, match=r"folds of 320 rows and the table has 319"):
        sd.attach_folds(fewer, path)
    with pytest.raises(ValueError, match="already has a column 'knndm_fold'"):
        sd.attach_folds(res.table, path)
    plain = tmp_path / "plain.parquet"
    df.to_parquet(plain)
    with pytest.raises(ValueError, match="is not a fold file"):
        sd.attach_folds(table, plain)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        sd.attach_folds(table, tmp_path / "nowhere.parquet")
    unrelated = sd.load_table(df.rename(columns={"label": "z"}), label="z", features=["f"])
    with pytest.raises(ValueError, match="none of the fold file's key columns"):
        sd.attach_folds(unrelated, path)


# ---------------------------------------------------------------------------- candidates
@pytest.fixture(scope="module")
def farm_folds(sensors, farm_tif) -> tuple[sd.Table, sd.KNNDMResult]:
    """The farm's sensors and their kNNDM folds (5, seed 2), computed once: tests read them."""
    t = sd.load_table(sensors, label="VW", coords=["Easting", "Northing"])
    return t, sd.knndm_folds(t, farm_tif, n_folds=5, seed=2)


@pytest.mark.slow
def test_every_candidate_has_its_w_when_random_folds_are_kept(sensors, farm_tif, farm_folds):
    t, res = farm_folds
    assert res.method == "random CV"
    cand = res.candidates
    assert cand["W_folds"].notna().all() and len(cand) > 10
    xy = sensors[["Easting", "Northing"]].to_numpy()
    # each candidate's W, recomputed from its own folds by hand
    for nk in cand["n_clusters"].iloc[[0, 5, -1]]:
        _, w, largest, status, centres, fold_of = assess_candidate(
            xy, res.Gij, nk, Shares(5, 0.5), 2, None
        )
        folds = fold_of[np.argmin(cdist(xy, centres), axis=1)]
        assert w == pytest.approx(wasserstein_distance(hand_gjstar(xy, folds), res.Gij))
        row = cand.set_index("n_clusters").loc[nk]
        assert row["W_folds"] == pytest.approx(w) and row["status"] == status
    assert res.unit == sd.nndm_folds(t, farm_tif).unit == "metre, EPSG:26911"
    note = knndm_note(res.attrs())
    assert "random folds kept" in note and f"W = {res.W:.4g} (metre, EPSG:26911)" in note


def test_discarded_candidates_keep_their_w_and_say_why():
    df, pred, table = scene_table()
    res = sd.knndm_folds(table, pred, n_folds=3, maxp=0.4, sample=2000, seed=3, n_candidates=12)
    cand = res.candidates
    over = cand["largest_fold"] > 0.4
    assert over.any() and (~over).any()
    assert (cand.loc[over, "status"] == "a fold over maxp=0.4").all()
    assert cand.loc[over, "W"].isna().all() and cand.loc[over, "W_folds"].notna().all()
    assert (cand.loc[~over, "status"] == SCORED).all()
    assert res.W == pytest.approx(cand["W"].min())


# ---------------------------------------------------------------------------- soak knndm
@pytest.mark.slow
def test_cli_outputs_complete_and_evaluate_uses_the_fold_file(tmp_path, capsys, scheduler):
    df, pred, table = scene_table()
    data, area, out = tmp_path / "train.parquet", tmp_path / "area.parquet", tmp_path / "out"
    df.to_parquet(data)
    pred.to_parquet(area)
    argv = ["knndm", data, area, "--label", "label", "--coords", "x,y", "--n-folds", "4",
            "--candidates", "10", "--sample", "2000", "--seed", "3", "--out", out]  # fmt: skip
    code, printed, err = run_cli(argv, scheduler, capsys)
    assert code == 0, err
    res = sd.knndm_folds(table, pred, n_folds=4, sample=2000, seed=3, n_candidates=10)
    assert f"W = {res.W:.4g} (coordinate units)" in printed
    assert f"random folds: W = {res.W_random:.4g} (coordinate units)" in printed
    assert "attach_folds" in printed and str(out / "folds.parquet") in printed
    cells = no_empty_cell(out / "candidates.csv")
    assert cells["candidate"].tolist() == ["kmeans"] * len(res.candidates) + ["random"]
    chosen = cells[cells["status"].str.startswith("chosen")]
    assert chosen["n_clusters"].tolist() == [str(res.n_clusters)]
    assert float(chosen["W"].iloc[0]) == pytest.approx(res.W)
    random = cells.iloc[-1]
    assert random["n_clusters"] == "none" and float(random["W"]) == pytest.approx(res.W_random)
    assert random["status"].startswith("not kept (training points clustered")
    written = json.loads((out / "knndm.json").read_text())
    assert written["knndm_W"] == pytest.approx(res.W)
    assert written["knndm_W_random"] == pytest.approx(res.W_random)
    assert written["knndm_unit"] == "coordinate units" and written["fold_file"]["row_id"] == ROW
    # the fold file, attached to the training table read from disk, is what evaluate scores
    attached = sd.attach_folds(
        sd.load_table(data, label="label", coords=["x", "y"]), out / "folds.parquet"
    )
    ev = sd.evaluate(attached, "linear", options=sd.RunOptions(progress=False))
    by_hand = sd.evaluate(
        sd.load_table(res.table.data.compute(), label="label", coords=["x", "y"], fold=res.column),
        "linear",
        options=sd.RunOptions(progress=False),
    )
    np.testing.assert_allclose(ev["rmse"].values, by_hand["rmse"].values)
    np.testing.assert_array_equal(ev["n_test"].values.ravel(), res.fold_sizes)


@pytest.mark.slow
def test_cli_farm_random_folds_kept_printed_with_w(
    sensors, farm_tif, farm_folds, tmp_path, capsys, scheduler
):
    data = tmp_path / "sensors.parquet"
    sensors.to_parquet(data)
    argv = ["knndm", data, farm_tif, "--label", "VW", "--coords", "Easting,Northing",
            "--n-folds", "5", "--seed", "2", "--out", tmp_path / "o"]  # fmt: skip
    code, printed, err = run_cli(argv, scheduler, capsys)
    assert code == 0, err
    _, res = farm_folds
    assert "random folds kept (training points not clustered" in printed
    assert f"W = {res.W:.4g} (metre, EPSG:26911)" in printed
    cells = no_empty_cell(tmp_path / "o" / "candidates.csv")
    assert cells.iloc[-1]["status"].startswith("chosen (training points not clustered")
    assert cells["W"].map(float).notna().all()


# ---------------------------------------------------------------------------- evaluate
@pytest.mark.slow
def test_evaluate_outer_knndm_prints_both_w(sensors, farm_tif):
    t = sd.load_table(sensors, label="VW", coords=["Easting", "Northing"])
    ds = sd.evaluate(
        t, "linear", outer="knndm", prediction=farm_tif, options=sd.RunOptions(progress=False)
    )
    folds = sd.knndm_folds(t, farm_tif, n_folds=5, seed=1)
    text = evaluation_printout(ds)
    assert "Note: kNNDM: random folds kept" in text
    assert f"W = {folds.W:.4g} (metre, EPSG:26911)" in text
    assert ds.attrs["knndm_unit"] == "metre, EPSG:26911"


# ---------------------------------------------------------------------------- train/test split
def test_split_matches_cast_rules_on_a_clustered_scene():
    df, pred, table = scene_table()
    res = sd.knndm_folds(table, pred, test_prop=0.3, sample=2000, seed=3, n_candidates=20)
    assert res.method == "kmeans" and res.table.fold is None and res.n_folds == 2
    split = res.table.data[res.column].compute()
    assert set(split) == {"train", "test"} and (split == "test").sum() == res.test_rows
    share = res.test_rows / len(df)
    assert 0.2 <= share <= 0.4  # test_prop ± the default tolerance 0.1
    # W of the two parts as CAST scores a split: every point against the other part
    xy = df[["x", "y"]].to_numpy()
    parts = np.where(split == "test", 2, 1)
    assert res.W == pytest.approx(wasserstein_distance(hand_gjstar(xy, parts), res.Gij))
    eligible = res.candidates["status"] == SCORED
    assert res.W == pytest.approx(res.candidates.loc[eligible, "W"].min())
    outside = res.candidates.loc[~eligible, "status"]
    assert (outside == "no part of 0.2 to 0.4 of the rows (test_prop ± test_tolerance)").all()
    attrs = res.attrs()
    assert attrs["knndm_test_prop"] == 0.3 and attrs["knndm_test_rows"] == res.test_rows
    assert "random split: W =" in knndm_note(attrs)


def test_split_clusters_dealt_in_turn_along_the_first_component():
    """CAST's test_prop: no cluster gets a part of its own; clusters ordered along PC1 go to
    parts 1, 2, 1, 2, ..."""
    xy = np.array([[0.0, 0], [1, 0], [10, 0], [11, 0], [20, 0], [21, 0], [30, 0]])
    labels = np.array([0, 0, 1, 1, 2, 2, 3])
    assert merge_clusters(xy, labels, 2, split=True).tolist() == [1, 2, 1, 2]
    # K-fold CV: the clusters of at least n/K = 3.5 points take folds of their own (none here)
    assert merge_clusters(xy, labels, 2).tolist() == [1, 2, 1, 2]


def test_random_split_on_the_farm_has_floor_test_prop_rows(sensors, farm_tif):
    t = sd.load_table(sensors, label="VW", coords=["Easting", "Northing"])
    res = sd.knndm_folds(t, farm_tif, test_prop=0.3, seed=2, n_candidates=10)
    assert res.method == "random CV" and res.test_rows == math.floor(0.3 * 42) == 12
    xy = sensors[["Easting", "Northing"]].to_numpy()
    parts = np.where(res.table.data[res.column].compute() == "test", 2, 1)
    assert res.W == res.W_random
    assert res.W == pytest.approx(wasserstein_distance(hand_gjstar(xy, parts), res.Gij))
    again = sd.knndm_folds(t, farm_tif, test_prop=0.3, seed=2, n_candidates=10)
    np.testing.assert_array_equal(
        again.table.data[res.column].compute(), res.table.data[res.column].compute()
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"test_prop": 0.3, "n_folds": 5}, r"n_folds=5 with test_prop=0.3: .* leave n_folds"),
        ({"test_prop": 0.3, "maxp": 0.6}, r"maxp=0.6 with test_prop=0.3"),
        ({"test_tolerance": 0.1}, r"test_tolerance=0.1 without test_prop"),
        ({"test_prop": 1.0}, r"test_prop=1.0: need a share between 0 and 1"),
        ({"test_prop": np.nan}, r"test_prop=nan"),
        ({"test_prop": True}, r"test_prop=True"),
        ({"test_prop": 0.3, "test_tolerance": -0.1}, r"test_tolerance=-0.1"),
        ({"test_prop": 0.05}, r"0.05 ± test_tolerance=0.1 is -0.05 to 0.15: .* below 0.05"),
        ({"test_prop": 0.8, "test_tolerance": 0.25}, r"is 0.55 to 1.05"),
    ],
)
def test_split_options_refused_by_name(kwargs, message):
    df, pred, table = scene_table()
    with pytest.raises(ValueError, match=message):
        sd.knndm_folds(table, pred, **kwargs)


def test_fold_shares_defaults_as_cast():
    assert fold_shares(None, None, None, None) == Shares(10, 0.5)
    split = fold_shares(None, None, 0.3, None)
    assert (split.n_folds, split.minp, split.test_prop) == (2, pytest.approx(0.2), 0.3)
    assert split.maxp == pytest.approx(0.4)
    # a part of exactly 0.4 is inside 0.3 + 0.1 (0.39999... in floats)
    assert split.verdict(np.array([1] * 6 + [2] * 4))[1] == SCORED
    assert split.test_fold(np.array([1] * 6 + [2] * 4)) == 2  # 0.4 is nearer 0.3 than 0.6


@pytest.mark.slow
def test_cli_test_prop_writes_a_split_that_attaches(tmp_path, capsys, scheduler):
    df, pred, table = scene_table()
    data, area, out = tmp_path / "train.parquet", tmp_path / "area.parquet", tmp_path / "out"
    df.to_parquet(data)
    pred.to_parquet(area)
    argv = ["knndm", data, area, "--label", "label", "--coords", "x,y", "--test-prop", "0.3",
            "--test-tolerance", "0.15", "--candidates", "10", "--sample", "2000",
            "--out", out]  # fmt: skip
    code, printed, err = run_cli(argv, scheduler, capsys)
    assert code == 0, err
    res = sd.knndm_folds(
        table, pred, test_prop=0.3, test_tolerance=0.15, sample=2000, n_candidates=10
    )
    assert f"test rows: {res.test_rows:,} of 320" in printed and "0.15 to 0.45 allowed" in printed
    attached = sd.attach_folds(table, out / "folds.parquet")
    assert attached.fold is None
    np.testing.assert_array_equal(
        attached.data["knndm_fold"].compute(), res.table.data["knndm_fold"].compute()
    )
    code, printed, err = run_cli([*argv[:-1], tmp_path / "o2", "--n-folds", "4"], scheduler, capsys)
    assert code == 2 and "n_folds=4 with test_prop=0.3" in err


# ---------------------------------------------------------------------------- the figure
def test_ecdf_axis_names_the_distance_unit(sensors, farm_tif):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = sd.load_table(sensors, label="VW", coords=["Easting", "Northing"], features=["DEM"])
    df, pred, table = scene_table()
    cases = {
        "metre, EPSG:26911": sd.knndm_folds(t, farm_tif, n_folds=4, seed=2, n_candidates=5),
        "coordinate units": sd.knndm_folds(table, pred, n_folds=4, sample=500, n_candidates=5),
        "standardised feature distance": sd.knndm_folds(
            t, farm_tif, n_folds=4, space="feature", seed=2, n_candidates=5
        ),
    }
    for unit, res in cases.items():
        fig = sd.plot_knndm(res)
        assert fig.axes[0].get_xlabel() == f"nearest-neighbour distance ({unit})"
        plt.close(fig)
    split = sd.knndm_folds(table, pred, test_prop=0.3, sample=500, n_candidates=5)
    fig = sd.plot_knndm(split)
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert legend[2] == f"random split → train, W = {split.W_random:.3g}"
    assert "train/test split (test_prop 0.3)" in fig.axes[0].get_title()
    plt.close(fig)
