"""Folds from coordinates: the coordinates role, square and hexagonal blocks, seeded k-means
clusters, kNNDM and NNDM folds (against hand computations of their definitions, on a
generated clustered scene and CAST's farm), evaluate(outer="knndm"), the fold summary, the
figure and ``soak knndm``."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import cdist
from scipy.stats import wasserstein_distance

import soak_dask as sd
from soak_dask.app import cli
from soak_dask.spatial.blocks import block_id, hex_blocks
from soak_dask.split.knndm import cluster_grid, cv_distances, merge_clusters

from ..conftest import n_examples, shared_file


def clustered_scene(n_clusters=8, per=40, seed=1):
    """Training points in tight clusters, a regular prediction grid over the whole square."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0, 100, (n_clusters, 2))
    xy = np.concatenate([c + rng.normal(scale=3, size=(per, 2)) for c in centres])
    df = pd.DataFrame({"x": xy[:, 0], "y": xy[:, 1], "f": rng.normal(size=len(xy))})
    df["label"] = np.sin(df.x / 10) + df.f + rng.normal(scale=0.3, size=len(df))
    g = np.stack(np.meshgrid(np.arange(1, 100, 2.0), np.arange(1, 100, 2.0)), -1).reshape(-1, 2)
    return df, pd.DataFrame({"x": g[:, 0], "y": g[:, 1]})


def nn(a, b):
    return cdist(a, b).min(axis=1)


def hand_gjstar(points, folds):
    d = cdist(points, points)
    d[folds[:, None] == folds[None, :]] = np.inf
    return d.min(axis=1)


# ---------------------------------------------------------------------------- coordinates role
def test_coords_role_keeps_coordinates_out_of_the_features():
    df = pd.DataFrame({"x": [0.0, 1.0], "y": [2.0, 3.0], "b": [1.0, 2.0], "lat": [5.0, 6.0],
                       "label": [0, 1]})  # fmt: skip
    with pytest.warns(UserWarning, match=r"\['lat'\]"):  # other coordinate names still warn
        t = sd.load_table(df, label="label", coords=["x", "y"])
    assert t.coords == ("x", "y") and t.features == ("b",)
    assert {"x", "y"} <= set(t.data.columns) and t.roles["coords"] == ["x", "y"]
    with pytest.warns(UserWarning, match=r"\['x', 'y', 'lat'\]"):  # without the role: as today
        assert sd.load_table(df, label="label").features == ("b",)
    asked = sd.load_table(df, label="label", coords=["x", "y"], features=["b", "x"])
    assert asked.features == ("b", "x") and asked.coords == ("x", "y")


@pytest.mark.parametrize(
    ("coords", "message"),
    [
        (["x", "z"], "coords names columns that are not in"),
        ("x", "need a list of coordinate columns"),
        (["x", "x"], "names a column twice"),
        (["x", "label"], "already have a role"),
        (["x", "s"], "not numeric"),
    ],
)
def test_bad_coords(coords, message):
    df = pd.DataFrame({"x": [0.0, 1.0], "b": [1.0, 2.0], "s": ["a", "b"], "label": [0, 1]})
    with pytest.raises(ValueError, match=message):
        sd.load_table(df, label="label", coords=coords, exclude=["s"])


# ---------------------------------------------------------------------------- blocks, clusters
def test_square_blocks_hand_checked():
    x = np.array([0.0, 9.99, 10.0, -0.5, 25.0, 5.0])
    y = np.array([0.0, 9.99, 0.0, 3.0, -10.0, 19.0])
    df = pd.DataFrame({"x": x, "y": y, "b": np.arange(6.0), "label": [0, 1] * 3})
    want = block_id([0, 0, 1, -1, 2, 0], [0, 0, 0, 0, -1, 1])
    for rows in (6, 2):
        t = sd.load_table(df, label="label", coords=["x", "y"], rows_per_partition=rows)
        got = sd.spatial_blocks(t, size=10)
        assert got.group == "block"
        np.testing.assert_array_equal(got.data["block"].compute().to_numpy(), want)
    moved = sd.spatial_blocks(t, size=10, origin=(5.0, 5.0), column="b5")
    np.testing.assert_array_equal(
        moved.data["b5"].compute().to_numpy(),
        block_id([-1, 0, 0, -1, 2, 0], [-1, 0, -1, -1, -2, 1]),
    )


def test_hex_blocks_are_nearest_hexagon_centres():
    size, rng = 4.0, np.random.default_rng(0)
    pts = rng.uniform(-30, 30, (3000, 2))
    # every hexagon centre of the lattice: rows h = size*sqrt(3)/2 apart, odd rows shifted
    h = size * np.sqrt(3) / 2
    rows = np.arange(-12, 13)
    cols = np.arange(-12, 13)
    centres, ids = [], []
    for r in rows:
        for c in cols:
            centres.append(((c + 0.5 * (r % 2)) * size, r * h))
            ids.append(block_id(c, r))
    nearest = np.array(ids)[cdist(pts, np.array(centres)).argmin(axis=1)]
    np.testing.assert_array_equal(hex_blocks(pts[:, 0], pts[:, 1], size, (0.0, 0.0)), nearest)


def test_blocks_as_groups_and_subsets():
    df, _ = clustered_scene()
    t = sd.load_table(df, label="label", coords=["x", "y"], rows_per_partition=70)
    grouped = sd.assign_folds(sd.spatial_blocks(t, 20, shape="hex"), 3, seed=2).data.compute()
    assert (grouped.groupby("block")[sd.tables.table.FOLD_COLUMN].nunique() == 1).all()
    subsets = sd.spatial_blocks(t, 50, role="subset")
    assert subsets.subset == "block" and subsets.user_subset
    assert sd.tables.table.SUBSET_COLUMN not in subsets.data.columns
    with pytest.raises(ValueError, match="already in the table"):
        sd.spatial_blocks(subsets, 50)
    with pytest.raises(ValueError, match="needs the table's coordinates"):
        sd.spatial_blocks(sd.load_table(df, label="label", exclude=["x", "y"]), 10)


def test_clusters_same_for_a_seed_whatever_the_partitions():
    rng = np.random.default_rng(4)
    centres = np.array([[10, 10], [10, 90], [50, 50], [90, 10], [90, 90]])
    xy = np.concatenate([c + rng.normal(scale=3, size=(60, 2)) for c in centres])
    df = pd.DataFrame({"x": xy[:, 0], "y": xy[:, 1], "f": 1.0, "label": 0.5})
    labels = []
    for rows in (300, 37):
        t = sd.load_table(df, label="label", coords=["x", "y"], rows_per_partition=rows)
        got = sd.spatial_clusters(t, 5, seed=3)
        assert got.group == "cluster"
        labels.append(got.data["cluster"].compute().to_numpy())
    np.testing.assert_array_equal(labels[0], labels[1])
    # five tight, separated clusters are found: each generated cluster is one label
    truth = np.repeat(np.arange(5), 60)
    assert all(len(np.unique(labels[0][truth == k])) == 1 for k in range(5))
    assert len(np.unique(labels[0])) == 5


# ---------------------------------------------------------------------------- kNNDM
@pytest.fixture(scope="module")
def scene_result():
    df, pred = clustered_scene()
    t = sd.load_table(df, label="label", coords=["x", "y"], rows_per_partition=100)
    return df, pred, sd.knndm_folds(t, pred, n_folds=4, sample=5000, seed=3, n_candidates=30)


def test_knndm_matches_prediction_distances_on_a_clustered_scene(scene_result):
    df, pred, res = scene_result
    xy, g = df[["x", "y"]].to_numpy(), pred.to_numpy()
    assert res.method == "kmeans" and res.ks_pvalue < 0.05
    # Gij: every grid point (sample > grid) against the training points, by hand
    np.testing.assert_allclose(np.sort(res.Gij), np.sort(nn(g, xy)))
    folds = res.table.data[res.column].compute().to_numpy()
    assert res.table.fold == res.column and sorted(np.unique(folds)) == [1, 2, 3, 4]
    np.testing.assert_allclose(res.Gjstar, hand_gjstar(xy, folds))
    assert res.W == pytest.approx(wasserstein_distance(hand_gjstar(xy, folds), res.Gij))
    assert res.W < res.W_random / 3  # random folds: test points sit next to training points
    # the chosen CV -> train ECDF is close to prediction -> train: medians within 20 %
    assert abs(np.median(res.Gjstar) / np.median(res.Gij) - 1) < 0.2
    assert np.median(res.Gjstar_random) < np.median(res.Gij) / 3
    cand = res.candidates.dropna(subset=["W"])
    assert res.W == pytest.approx(cand["W"].min()) and (cand["largest_fold"] <= 0.5).all()
    assert res.n_clusters == int(cand.loc[cand["W"].idxmin(), "n_clusters"])


def test_knndm_same_folds_whatever_the_partitions(scene_result):
    df, pred, res = scene_result
    t = sd.load_table(df, label="label", coords=["x", "y"], rows_per_partition=33)
    again = sd.knndm_folds(t, dd_from(pred, 7), n_folds=4, sample=5000, seed=3, n_candidates=30)
    assert again.W == res.W and again.n_clusters == res.n_clusters
    np.testing.assert_array_equal(
        again.table.data[again.column].compute().to_numpy(),
        res.table.data[res.column].compute().to_numpy(),
    )


def dd_from(frame, npartitions):
    import dask.dataframe as dd

    return dd.from_pandas(frame, npartitions=npartitions)


def test_knndm_prediction_sample_is_seeded_and_a_subset():
    df, pred = clustered_scene()
    t = sd.load_table(df, label="label", coords=["x", "y"])
    a = sd.knndm_folds(t, pred, n_folds=4, sample=300, seed=5, n_candidates=5)
    b = sd.knndm_folds(t, dd_from(pred, 9), n_folds=4, sample=300, seed=5, n_candidates=5)
    assert len(a.Gij) == 300
    np.testing.assert_array_equal(np.sort(a.Gij), np.sort(b.Gij))
    full = nn(pred.to_numpy(), df[["x", "y"]].to_numpy())
    assert np.isin(np.round(a.Gij, 9), np.round(full, 9)).all()


def test_cluster_grid_follows_cast():
    # CAST: round(exp(seq(log(k), log(n - 2), length.out = nk_len))), duplicates dropped
    want = np.unique(np.round(np.exp(np.linspace(np.log(5), np.log(998), 100))).astype(int))
    np.testing.assert_array_equal(cluster_grid(5, 1000, 100, 10_000), want)
    assert cluster_grid(5, 1000, 100, 50).max() == 50


@settings(max_examples=n_examples(60), deadline=None)
@given(
    st.integers(2, 6),
    st.lists(st.integers(0, 11), min_size=6, max_size=80),
    st.integers(0, 2**32 - 1),
)
def test_merge_clusters_as_cast(n_folds, labels, seed):
    """Every present cluster gets one fold in 1..K; clusters of at least n/K points get
    folds of their own; folds are filled whenever there are at least K clusters."""
    labels = np.array(labels)
    points = np.random.default_rng(seed).normal(size=(len(labels), 2))
    fold_of = merge_clusters(points, labels, n_folds)
    counts = np.bincount(labels)
    present = np.flatnonzero(counts)
    big = present[counts[present] >= len(labels) / n_folds]
    if fold_of is None:  # every fold taken by a big cluster, small ones left over
        assert len(big) == n_folds and len(present) > n_folds
        return
    assert set(fold_of[present]) <= set(range(1, n_folds + 1))
    for c in big:
        assert (fold_of[present] == fold_of[c]).sum() == 1
    if len(present) >= n_folds:
        assert set(fold_of[present]) == set(range(1, n_folds + 1))


def test_cv_distances_by_hand():
    rng = np.random.default_rng(2)
    pts, folds = rng.uniform(size=(60, 2)), rng.integers(1, 4, 60)
    np.testing.assert_allclose(cv_distances(pts, folds), hand_gjstar(pts, folds))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"space": "map"}, "space='map'"),
        ({"maxp": 0.1}, "maxp=0.1"),
        ({"sample": 3}, "sample=3"),
        ({"n_folds": 1}, "n_folds"),
    ],
)
def test_knndm_bad_options(kwargs, message):
    df, pred = clustered_scene()
    t = sd.load_table(df, label="label", coords=["x", "y"])
    with pytest.raises(ValueError, match=message):
        sd.knndm_folds(t, pred, **kwargs)


def test_knndm_refusals():
    df, pred = clustered_scene()
    t = sd.load_table(df, label="label", coords=["x", "y"])
    with pytest.raises(ValueError, match="no coordinate columns"):
        sd.knndm_folds(t, pred.rename(columns={"x": "east"}))
    with pytest.raises(ValueError, match="needs the table's coordinates"):
        sd.knndm_folds(sd.load_table(df, label="label", exclude=["x", "y"]), pred)


# ---------------------------------------------------------------------------- CAST's farm
@pytest.fixture(scope="module")
def farm():
    cook = pd.read_parquet(shared_file("cast", "cookfarm.parquet"))
    tif = shared_file("cast", "predictors_2012-03-25.tif")
    cols = ["DEM", "TWI", "NDRE.M", "Easting", "Northing", "VW"]
    sensors = cook.groupby("SOURCEID", observed=True)[cols].mean().reset_index(drop=True)
    import rioxarray

    raster = rioxarray.open_rasterio(tif)
    names = list(raster.attrs["long_name"])
    cells = raster.values.reshape(len(names), -1).T  # (y, x) order
    yy, xx = np.meshgrid(raster.y.values, raster.x.values, indexing="ij")
    grid = pd.DataFrame(cells, columns=names).assign(cx=xx.ravel(), cy=yy.ravel())
    return sensors, grid[~grid[names].isna().any(axis=1)], tif


def test_cast_farm_geographical(farm):
    sensors, cells, tif = farm
    assert len(sensors) == 42
    t = sd.load_table(sensors, label="VW", coords=["Easting", "Northing"])
    res = sd.knndm_folds(t, tif, n_folds=5, seed=2)
    xy = sensors[["Easting", "Northing"]].to_numpy()
    gij = nn(cells[["cx", "cy"]].to_numpy(), xy)  # every valid cell (fewer than the sample)
    np.testing.assert_allclose(np.sort(res.Gij), np.sort(gij))
    d = cdist(xy, xy)
    np.fill_diagonal(d, np.inf)
    np.testing.assert_allclose(res.Gj, d.min(axis=1))
    # the sensors are spread over the farm: cells lie nearer a sensor than sensors to one
    # another (Gj larger than Gij), so CAST's rule keeps random folds
    assert np.median(res.Gj) > np.median(gij)
    assert res.method == "random CV" and res.n_clusters is None and res.ks_pvalue >= 0.05
    folds = res.table.data[res.column].compute().to_numpy()
    star = hand_gjstar(xy, folds)
    np.testing.assert_allclose(res.Gjstar, star)
    assert res.W == pytest.approx(wasserstein_distance(star, gij)) == res.W_random


def test_cast_farm_feature_space(farm):
    sensors, cells, tif = farm
    features = ["DEM", "TWI", "NDRE.M"]
    t = sd.load_table(sensors, label="VW", coords=["Easting", "Northing"], features=features)
    res = sd.knndm_folds(t, tif, n_folds=4, space="feature", seed=2, n_candidates=20)
    train = sensors[features].to_numpy()
    centre, scale = train.mean(axis=0), train.std(axis=0, ddof=1)  # R's scale()
    z, zc = (train - centre) / scale, (cells[features].to_numpy() - centre) / scale
    np.testing.assert_allclose(np.sort(res.Gij), np.sort(nn(zc, z)))
    folds = res.table.data[res.column].compute().to_numpy()
    np.testing.assert_allclose(res.Gjstar, hand_gjstar(z, folds))
    assert res.W == pytest.approx(wasserstein_distance(hand_gjstar(z, folds), res.Gij))
    assert res.W <= res.W_random + 1e-12 or res.method == "random CV"


def test_cast_farm_nndm(farm):
    sensors, cells, tif = farm
    t = sd.load_table(sensors, label="VW", coords=["Easting", "Northing"])
    res = sd.nndm_folds(t, tif)
    # Gj is already larger than Gij: removing neighbours cannot help, LOO stays plain
    np.testing.assert_allclose(res.Gjstar, res.Gj)
    assert all(len(e) == 0 for e in res.exclude) and res.get_n_splits() == 42
    assert res.W == pytest.approx(res.W_loo)


def test_nndm_excludes_neighbours_on_a_clustered_scene():
    df, pred = clustered_scene(per=15)
    t = sd.load_table(df, label="label", coords=["x", "y"])
    res = sd.nndm_folds(t, pred)
    xy = df[["x", "y"]].to_numpy()
    assert res.W < res.W_loo / 2 and any(len(e) for e in res.exclude)
    for i, (train, test) in enumerate(res.split()):
        assert i not in train and list(test) == [i]
        assert set(train) | set(res.exclude[i]) | {i} == set(range(len(xy)))
        assert res.Gjstar[i] == pytest.approx(cdist(xy[[i]], xy[train]).min())
    assert (res.Gjstar >= res.Gj - 1e-12).all()


# ---------------------------------------------------------------------------- evaluate, summary
@pytest.mark.slow
def test_evaluate_outer_knndm_is_cv_on_the_knndm_folds():
    df, pred = clustered_scene(per=12)
    t = sd.load_table(df, label="label", coords=["x", "y"])
    res = sd.evaluate(
        t,
        "linear",
        outer="knndm",
        outer_folds=4,
        prediction=pred,
        options=sd.RunOptions(progress=False),
    )
    folds = sd.knndm_folds(t, pred, n_folds=4, seed=1)
    assert res.attrs["outer"] == "knndm" and res.attrs["outer_folds"] == 4
    assert res.attrs["knndm_W"] == pytest.approx(folds.W)
    assert res.attrs["knndm_W_random"] == pytest.approx(folds.W_random)
    np.testing.assert_array_equal(res["n_test"].values.ravel(), folds.fold_sizes)
    by_hand = sd.evaluate(
        sd.load_table(
            folds.table.data.compute(), label="label", coords=["x", "y"], fold=folds.column
        ),
        "linear",
        options=sd.RunOptions(progress=False),
    )
    np.testing.assert_allclose(res["rmse"].values, by_hand["rmse"].values)
    with pytest.raises(ValueError, match="needs prediction="):
        sd.evaluate(t, "linear", outer="knndm", options=sd.RunOptions(progress=False))
    with pytest.raises(ValueError, match="prediction=<DataFrame> has no effect with outer='cv'"):
        sd.evaluate(t, "linear", prediction=pred, options=sd.RunOptions(progress=False))


def test_fold_summary_hand_checked():
    df = pd.DataFrame({
        "x": [0.0, 1, 10, 11, 20, 21.5], "y": [0.0] * 6, "f": np.arange(6.0),
        "label": ["a", "b", "a", "a", "b", "b"], "k": [1, 1, 2, 2, 4, 4],
    })  # fmt: skip
    for rows in (6, 2):
        t = sd.load_table(df, label="label", coords=["x", "y"], fold="k", rows_per_partition=rows)
        s = sd.fold_summary(t)
        assert list(s.index) == [1, 2, 3, 4]
        assert s["n_test"].tolist() == [2, 2, 0, 2] and s["n_train"].tolist() == [4, 4, 6, 4]
        assert s["empty"].tolist() == [False, False, True, False]
        assert s["one_class"].tolist() == [False, True, False, True]
        assert s["n_a"].tolist() == [1, 2, 0, 0]
        assert s.loc[1, "nn_min"] == 9 and s.loc[1, "nn_median"] == 9.5  # 0->10, 1->10
        assert s.loc[4, "nn_median"] == pytest.approx(9.75)  # 20->11, 21.5->11
    few = sd.fold_summary(t, sample=1)
    assert few["nn_measured"].fillna(0).tolist() == [1, 1, 0, 1]


def test_plot_knndm_draws_three_ecdfs(scene_result):
    import matplotlib

    matplotlib.use("Agg")
    fig = sd.plot_knndm(scene_result[2])
    lines = fig.axes[0].get_lines()
    assert len(lines) == 3 and "W =" in fig.axes[0].get_legend().get_texts()[1].get_text()


# ---------------------------------------------------------------------------- CLI
@pytest.mark.slow
def test_cli_knndm_end_to_end(tmp_path, capsys):
    from distributed import LocalCluster

    df, pred = clustered_scene()
    data, area = tmp_path / "train.parquet", tmp_path / "area.parquet"
    df.to_parquet(data)
    pred.to_parquet(area)
    out = tmp_path / "out"
    argv = ["knndm", data, area, "--label", "label", "--coords", "x,y", "--n-folds", "4",
            "--candidates", "20", "--seed", "3", "--out", out]  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
        ) as cluster:
            given = [str(a) for a in [*argv, "--scheduler", cluster.scheduler_address]]
            code = cli.main(given)
            printed = capsys.readouterr().out
            assert code == 0, printed
            assert cli.main(given) == 2  # its own output again: only with --overwrite
            assert "--overwrite" in capsys.readouterr().err
            assert cli.main([*given, "--overwrite"]) == 0
            store = tmp_path / "ev.zarr"
            ev = ["evaluate", data, "--label", "label", "--coords", "x,y", "--outer", "knndm",
                  "--outer-folds", "4", "--prediction", area, "--learner", "linear",
                  "--no-progress", "--out", store]  # fmt: skip
            ev += ["--scheduler", cluster.scheduler_address]
            assert cli.main([str(a) for a in ev]) == 0, capsys.readouterr().err
    capsys.readouterr()
    t = sd.load_table(df, label="label", coords=["x", "y"])
    res = sd.knndm_folds(t, pred, n_folds=4, seed=3, n_candidates=20)
    written = json.loads((out / "knndm.json").read_text())
    assert written["knndm_W"] == pytest.approx(res.W) and f"{res.W:.4g}" in printed
    folds = pd.read_parquet(out / "folds.parquet")
    np.testing.assert_array_equal(folds["knndm_fold"], res.table.data["knndm_fold"].compute())
    assert (out / "knndm.png").stat().st_size > 0
    stored = sd.open_results(store)
    by_api = sd.knndm_folds(t, pred, n_folds=4, seed=1)
    assert stored.attrs["outer"] == "knndm"
    assert stored.attrs["knndm_W"] == pytest.approx(by_api.W)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    assert cli.main([str(a) for a in [*argv[:-1], foreign]]) == 2  # not ours, not empty
    assert "did not write" in capsys.readouterr().err
    assert (foreign / "notes.txt").read_text() == "mine"
    assert cli.main([str(a) for a in argv[:4] + argv[6:]]) == 2  # no --coords
    assert "needs --coords" in capsys.readouterr().err
