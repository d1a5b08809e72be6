"""Issue 42, item 7: kNNDM's hierarchical clustering (CAST's ``clustering = "hierarchical"``):
one Ward tree cut with scipy's ``fcluster`` at every cluster count, the cuts nested, Gj* and
W as brute force gives them, the refusal above ``HIERARCHICAL_MAX_ROWS`` rows naming the rows
and bytes, the defaults per space, and ``soak knndm --clustering`` end to end."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import cdist, pdist
from scipy.stats import wasserstein_distance

import soak_dask as sd
from soak_dask.split.fold_options import check_clustering
from soak_dask.split.knndm import knndm_note, merge_clusters
from soak_dask.split.knndm_ward import HIERARCHICAL_MAX_ROWS, WardTree, ward_bytes

from . import test_round4_knndm as round4
from .test_spatial_folds import clustered_scene, hand_gjstar

scheduler, run_cli = round4.scheduler, round4.run_cli
FEATURES = [f"f{i}" for i in range(6)]


def feature_scene(n=400, seed=0):
    """Training points in 6 clusters of a 6-feature space (unequal scales), prediction
    points spread over it: clustered against the area, so kNNDM chooses a clustering."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(6, len(FEATURES))) * 4
    train = centres[rng.integers(0, 6, n)] + rng.normal(size=(n, len(FEATURES)))
    scale = np.arange(1, len(FEATURES) + 1, dtype=float)
    df = pd.DataFrame(train * scale, columns=FEATURES).assign(
        label=rng.normal(size=n), x=rng.uniform(size=n), y=rng.uniform(size=n)
    )
    area = pd.DataFrame(rng.normal(size=(1500, len(FEATURES))) * 4 * scale, columns=FEATURES)
    return df, area


def standardised(df):
    z = df[FEATURES].to_numpy()
    return (z - z.mean(axis=0)) / z.std(axis=0, ddof=1)


def table_of(df, **kwargs):
    return sd.load_table(df, label="label", coords=["x", "y"], features=FEATURES, **kwargs)


# ---------------------------------------------------------------------------- the tree
def test_cuts_are_scipys_fcluster_on_the_ward_tree_and_nested():
    points = np.random.default_rng(4).normal(size=(60, 3))
    tree = WardTree.fit(points, 20)
    np.testing.assert_allclose(tree.distances, pdist(points), rtol=1e-13, atol=1e-13)
    reference = linkage(pdist(points), method="ward")
    np.testing.assert_allclose(tree.linkage, reference, rtol=1e-12)
    counts = np.array([2, 3, 5, 8, 13, 20])
    coarse = None
    for nk, labels, minima in tree.cuts(counts):  # finest first
        expected = fcluster(reference, nk, criterion="maxclust") - 1
        np.testing.assert_array_equal(labels, expected)
        np.testing.assert_array_equal(tree.cut(nk), expected)
        assert len(np.unique(labels)) == nk
        if coarse is not None:  # each finer cluster lies in one coarser cluster
            pairs = pd.DataFrame({"fine": coarse, "coarse": labels}).drop_duplicates()
            assert pairs["fine"].is_unique
        coarse = labels
        d = cdist(points, points)
        np.fill_diagonal(d, np.inf)
        for c in range(nk):  # each point's distance to each cluster's nearest other member
            np.testing.assert_allclose(minima[c], d[:, labels == c].min(axis=1))
    np.testing.assert_allclose(tree.loo(), np.sort(cdist(points, points), axis=1)[:, 1])


def test_gjstar_of_any_folds_equals_brute_force():
    points = np.random.default_rng(5).normal(size=(80, 4))
    tree = WardTree.fit(points, 30)
    by_cut = np.array([1, 2, 3, 1, 2, 3, 1, 2, 3, 1])[tree.cut(10)]  # whole clusters
    random = np.random.default_rng(6).integers(1, 5, len(points))  # not made of clusters
    moved = by_cut.copy()
    moved[:5] = 3  # a group's stray rows moved: a cluster split between folds
    rows = np.array([0, 7, 40, 79])
    for folds in (by_cut, random, moved):
        np.testing.assert_allclose(tree.cv(folds), hand_gjstar(points, folds))
        np.testing.assert_allclose(tree.cv(folds, rows), hand_gjstar(points, folds)[rows])


# ---------------------------------------------------------------------------- knndm_folds
def test_hierarchical_w_matches_brute_force_and_is_the_feature_default():
    df, area = feature_scene()
    res = sd.knndm_folds(table_of(df), area, n_folds=5, space="feature", seed=2, n_candidates=25)
    assert res.clustering == "hierarchical" and res.method == "hierarchical"
    assert res.ks_pvalue < 0.05 and res.n_clusters is not None
    z = standardised(df)
    folds = res.table.data[res.column].compute().to_numpy()
    brute = wasserstein_distance(hand_gjstar(z, folds), res.Gij)
    assert abs(res.W / brute - 1) < 0.01
    assert res.W == pytest.approx(brute, rel=1e-12)
    # every candidate's W is that of its cut merged into folds, by brute force
    row = res.candidates.dropna(subset=["W"]).iloc[3]
    tree = linkage(pdist(z), method="ward")
    labels = fcluster(tree, int(row["n_clusters"]), criterion="maxclust") - 1
    fold_of = merge_clusters(z, labels, 5)
    cand = wasserstein_distance(hand_gjstar(z, fold_of[labels]), res.Gij)
    assert row["W"] == pytest.approx(cand, rel=1e-12)
    # the chosen folds are the chosen cut's
    labels = fcluster(tree, res.n_clusters, criterion="maxclust") - 1
    np.testing.assert_array_equal(folds, merge_clusters(z, labels, 5)[labels])


def test_same_seed_same_folds_whatever_the_partitions():
    df, area = feature_scene(seed=3)
    folds = [
        sd.knndm_folds(
            table_of(df, rows_per_partition=rows), area, n_folds=4, space="feature", seed=7,
            n_candidates=15, clustering="hierarchical",
        ).table.data["knndm_fold"].compute().to_numpy()
        for rows in (None, 37, 150)
    ]  # fmt: skip
    for other in folds[1:]:
        np.testing.assert_array_equal(folds[0], other)


def test_groups_kept_whole_with_hierarchical_cuts():
    df, area = feature_scene(seed=8)
    df = df.assign(g=np.arange(len(df)) % 23)
    res = sd.knndm_folds(
        table_of(df, group="g"), area, n_folds=4, space="feature", seed=1, n_candidates=10
    )
    data = res.table.data.compute()
    assert (data.groupby("g")["knndm_fold"].nunique() == 1).all()
    folds = data["knndm_fold"].to_numpy()
    np.testing.assert_allclose(res.Gjstar, hand_gjstar(standardised(df), folds))


def test_geographical_default_stays_kmeans_and_options_are_checked():
    df, pred = clustered_scene()
    t = sd.load_table(df, label="label", coords=["x", "y"])
    res = sd.knndm_folds(t, pred, n_folds=4, sample=2000, seed=3, n_candidates=5)
    assert res.clustering == "kmeans" and res.attrs()["knndm_clustering"] == "kmeans"
    ward = sd.knndm_folds(
        t, pred, n_folds=4, sample=2000, seed=3, n_candidates=5, clustering="hierarchical"
    )
    assert ward.method == "hierarchical" and "Ward" in knndm_note(ward.attrs())
    xy = df[["x", "y"]].to_numpy()
    folds = ward.table.data[ward.column].compute().to_numpy()
    np.testing.assert_allclose(ward.Gjstar, hand_gjstar(xy, folds))
    with pytest.raises(ValueError, match=r"clustering='ward': choose 'hierarchical'"):
        sd.knndm_folds(t, pred, clustering="ward")
    assert check_clustering(None, "feature") == "hierarchical"


def test_hierarchical_refused_above_its_rows_naming_rows_and_bytes():
    n = HIERARCHICAL_MAX_ROWS + 1
    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.normal(size=(n, 2)), columns=["a", "b"]).assign(
        label=0.0, x=rng.uniform(size=n), y=rng.uniform(size=n)
    )
    t = sd.load_table(df, label="label", coords=["x", "y"], features=["a", "b"])
    assert ward_bytes(n) == 1_600_080_000
    message = (
        r"clustering='hierarchical' \(the default in feature space\) on 20,001 training rows"
        r".*1,600,080,000 bytes \(1\.6 GB.*refused above 20,000 rows.*clustering='kmeans'"
    )
    with pytest.raises(ValueError, match=message):  # before the area (a missing file) is read
        sd.knndm_folds(t, "no/such/area.parquet", space="feature")
    with pytest.raises(ValueError, match=r"^clustering='hierarchical' on 20,001"):
        sd.knndm_folds(t, "no/such/area.parquet", clustering="hierarchical")


# ---------------------------------------------------------------------------- soak knndm
@pytest.mark.slow
@pytest.mark.parametrize("clustering", ["hierarchical", "kmeans"])
def test_cli_clustering_flag_end_to_end(clustering, tmp_path, capsys, scheduler):
    df, area = feature_scene(n=200, seed=9)
    data, pred, out = tmp_path / "train.parquet", tmp_path / "area.parquet", tmp_path / "out"
    df.to_parquet(data)
    area.to_parquet(pred)
    argv = ["knndm", data, pred, "--label", "label", "--coords", "x,y", "--features",
            ",".join(FEATURES), "--space", "feature", "--clustering", clustering,
            "--n-folds", "4", "--candidates", "8", "--seed", "5", "--out", out]  # fmt: skip
    code, printed, err = run_cli(argv, scheduler, capsys)
    assert code == 0, err
    res = sd.knndm_folds(
        table_of(df), area, n_folds=4, space="feature", seed=5, n_candidates=8,
        clustering=clustering,
    )  # fmt: skip
    assert res.method == clustering
    words = "hierarchical (Ward) clusters" if clustering == "hierarchical" else "k-means clusters"
    assert f"kNNDM: {res.n_clusters} {words}, W = {res.W:.4g}" in printed
    written = json.loads((out / "knndm.json").read_text())
    assert written["knndm_clustering"] == clustering
    cells = pd.read_csv(out / "candidates.csv")
    assert cells["candidate"].tolist() == [clustering] * len(res.candidates) + ["random"]
    folds = pd.read_parquet(out / "folds.parquet")["knndm_fold"].to_numpy()
    np.testing.assert_array_equal(folds, res.table.data[res.column].compute().to_numpy())


def test_hierarchical_train_test_split():
    df, area = feature_scene(seed=11)
    res = sd.knndm_folds(
        table_of(df), area, space="feature", test_prop=0.3, test_tolerance=0.2, n_candidates=30
    )
    parts = res.table.data[res.column].compute()
    assert res.method == "hierarchical" and set(parts) == {"train", "test"}
    assert 0.1 <= (parts == "test").mean() <= 0.5 and (parts == "test").sum() == res.test_rows
