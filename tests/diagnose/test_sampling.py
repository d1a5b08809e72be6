"""Sampling methods, MAI and overlap-balanced folds (soak_dask.split.sampling, .balance,
soak_dask.diagnose.mai, .sampling_plot, soak_dask.app.sampling_cli): exact split sizes per
group, the same split whatever the partitioning, each method against a direct computation of
the paper's definition, and MAI = (ACC − AEV) / SD from refitted models."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import dask
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import cdist
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

import soak_dask as sd
from soak_dask import RunOptions, SamplingSplits
from soak_dask.diagnose import mai
from soak_dask.split import balance, sampling
from soak_dask.split.overlap import DO_COLUMN, POSITION, overlap_degrees
from soak_dask.split.shares import ranks, share_sizes
from soak_dask.tables.table import FOLD_COLUMN

from ..conftest import n_examples

NOTES = Path("/tmp/notes")


@pytest.fixture(autouse=True)
def _sync():
    with dask.config.set(scheduler="sync"):
        yield


def frame(n: int = 240, seed: int = 0, n_classes: int = 2) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    score = X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=0.8, size=n)
    cuts = np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1])
    y = np.array(list("abcde"))[np.searchsorted(cuts, score)]
    return pd.DataFrame(X, columns=["b0", "b1", "b2"]).assign(y=y)


def table_of(df: pd.DataFrame, parts: int = 1, **kw) -> sd.Table:
    return sd.load_table(df, label="y", rows_per_partition=-(-len(df) // parts), **kw)


def split_of(method: str, df: pd.DataFrame, parts: int, ratio: float, seed: int, **kw):
    out = sampling.SPLITTERS[method](table_of(df, parts), ratio, seed, column="train", **kw)
    got = out.data[[POSITION, "train"]].compute().sort_values(POSITION)
    assert got[POSITION].tolist() == list(range(len(df)))
    return got["train"].to_numpy()


# --- exact sizes, the same split whatever the partitioning --------------------------------------


@settings(max_examples=n_examples(40), deadline=None)
@given(
    rows=st.lists(st.integers(0, 200), min_size=1, max_size=8),
    ratio=st.floats(0.05, 0.95),
    seed=st.integers(0, 2**32 - 1),
)
def test_train_sizes(rows, ratio, seed):
    rows = np.array(rows)
    sizes = share_sizes(rows, ratio, seed)
    assert sizes.sum() == round(rows.sum() * ratio)
    assert (sizes >= np.floor(rows * ratio)).all() and (sizes <= np.ceil(rows * ratio)).all()


@pytest.mark.slow
@settings(max_examples=n_examples(3), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(20, 300),
    n_classes=st.integers(2, 4),
    ratio=st.sampled_from([0.5, 0.7, 0.75]),
    seed=st.integers(0, 2**32 - 1),
    parts=st.integers(2, 5),
)
def test_stratified_sizes_and_partitioning(n, n_classes, ratio, seed, parts):
    df = frame(n, seed=n, n_classes=n_classes)
    one = split_of("stratified", df, 1, ratio, seed)
    np.testing.assert_array_equal(one, split_of("stratified", df, parts, ratio, seed))
    rows = df["y"].value_counts().sort_index()
    expected = share_sizes(rows.to_numpy(), ratio, seed)
    np.testing.assert_array_equal(pd.Series(one).groupby(df["y"]).sum().to_numpy(), expected)


@pytest.fixture(scope="module")
def overlap_rows() -> tuple[pd.DataFrame, np.ndarray]:
    """200 rows and their degrees of overlap (5 folds): the same for every example below."""
    df = frame(200, seed=1)
    return df, overlap_degrees(table_of(df), 5).data.compute()[DO_COLUMN].to_numpy()


@pytest.mark.slow
@settings(max_examples=n_examples(2), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ratio=st.sampled_from([0.6, 0.75]), seed=st.integers(0, 2**32 - 1), parts=st.integers(2, 4))
def test_overlap_split_per_level(overlap_rows, ratio, seed, parts):
    """Algorithm 4: within each degree of overlap, the share t trains (exactly, by largest
    remainder); the same split with any partitioning; overlap_class also per class."""
    df, degrees = overlap_rows
    got = split_of("overlap", df, 1, ratio, seed)
    np.testing.assert_array_equal(got, split_of("overlap", df, parts, ratio, seed))
    rows = np.bincount(degrees, minlength=6)
    expected = share_sizes(rows[rows > 0], ratio, seed)  # the levels present are the strata
    trained = np.bincount(degrees, weights=got, minlength=6)[rows > 0]
    np.testing.assert_array_equal(trained, expected)
    by_class = split_of("overlap_class", df, parts, ratio, seed)
    cells = degrees * 2 + (df["y"].to_numpy() == "b")
    rows = np.bincount(cells, minlength=12)
    expected = share_sizes(rows[rows > 0], ratio, seed)
    trained = np.bincount(cells, weights=by_class, minlength=12)[rows > 0]
    np.testing.assert_array_equal(trained, expected)


def test_hash_split_is_the_exact_share_draw():
    """Each key column is one draw of ``soak_dask.split.shares``: the round(t·N) rows of
    smallest rank in the seeded permutation of their positions, draw by draw."""
    n = 9000
    df = pd.DataFrame({"b0": np.arange(n, dtype=float), "y": np.repeat(["a", "b"], n // 2)})
    table = sampling.ensure_positions(table_of(df, 3))
    split = sampling.hash_split(table, 0.3, 7, "test", ["k1", "k2"])
    keys = split.data[["k1", "k2"]].compute().to_numpy()
    for r in range(2):
        rank = ranks(np.zeros(n, int), np.arange(n), np.array([n]), 7, r + 1, "sampling:test")
        np.testing.assert_array_equal(keys[:, r], (rank < round(0.3 * n)).astype(np.int8))
    assert not np.array_equal(keys[:, 0], keys[:, 1])


@pytest.mark.parametrize("method", ["random", "clustering", "mdc", "doptimal"])
def test_methods_independent_of_partitioning(method):
    df = frame(150, seed=2, n_classes=3)
    one = split_of(method, df, 1, 0.7, 5)
    assert one.sum() == 105
    np.testing.assert_array_equal(one, split_of(method, df, 3, 0.7, 5))


# --- each method against its definition ---------------------------------------------------------


def naive_mdc(X: np.ndarray, n_take: int) -> list[int]:
    """Algorithm 2 as written: ranks recomputed from the remaining rows at every step."""
    left, chosen = list(range(len(X))), []
    for _ in range(n_take):
        sub = X[left]
        d = cdist(sub, sub, "sqeuclidean")
        rank = np.argsort(np.argsort(d, axis=0, kind="stable"), axis=0, kind="stable") + 1
        value = (1.0 / rank).sum(axis=1)
        best = left[int(np.argmax(value))]
        chosen.append(best)
        left.remove(best)
    return chosen


def test_mdc_matches_algorithm_2():
    X = np.random.default_rng(5).normal(size=(40, 3))
    got = sampling.mdc_select(cdist(X, X, "sqeuclidean"), 25).tolist()
    assert got == naive_mdc(X, 25)


def test_mdc_sample_above_the_limit():
    df = frame(300, seed=6)
    with pytest.warns(UserWarning, match="MDC needs all rows.*sample of 120 rows"):
        got = split_of("mdc", df, 2, 0.7, 1, max_rows=120)
    assert abs(got.mean() - 0.7) < 0.1  # other rows follow their nearest sampled row


def test_doptimal_picks_the_largest_determinant():
    df = frame(120, seed=7)
    got = split_of("doptimal", df, 2, 0.7, 3, n_repeats=6)
    X = df[["b0", "b1", "b2"]].to_numpy() / df[["b0", "b1", "b2"]].std().to_numpy()
    trains = []
    for r in range(1, 7):
        rank = ranks(np.zeros(120, int), np.arange(120), np.array([120]), 3, r, "sampling:doptimal")
        trains.append(rank < 84)
    logdets = [np.linalg.slogdet(X[t].T @ X[t])[1] for t in trains]
    np.testing.assert_array_equal(got.astype(bool), trains[int(np.argmax(logdets))])


def test_clustering_shares_per_cluster():
    from sklearn.cluster import KMeans

    df = frame(180, seed=8, n_classes=3)
    got = split_of("clustering", df, 2, 0.7, 4)
    Z = df[["b0", "b1", "b2"]].to_numpy()
    Z = (Z - Z.mean(axis=0)) / Z.std(axis=0, ddof=1)
    clusters = KMeans(3, n_init=10, random_state=4).fit_predict(Z)
    per = pd.Series(got).groupby(clusters).agg(["sum", "size"])
    np.testing.assert_array_equal(
        per["sum"].to_numpy(), share_sizes(per["size"].to_numpy(), 0.7, 4)
    )


# --- MAI ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compared():
    df = frame(160, seed=9)
    with dask.config.set(scheduler="sync"):
        table = table_of(df, 2)
        res = mai.compare_sampling(
            table,
            {"lda": LinearDiscriminantAnalysis()},
            design=SamplingSplits(
                methods=["stratified", "overlap"], train_ratio=0.75, n_repeats=6, seed=2
            ),
            options=RunOptions(progress=False),
        )
    return df, res


@pytest.mark.slow
def test_mai_formula_and_refits(compared):
    df, res = compared
    X, y = df[["b0", "b1", "b2"]].to_numpy(), df["y"].to_numpy()
    for method in ["stratified", "overlap"]:
        train = split_of(method, df, 1, 0.75, 2).astype(bool)
        acc = LinearDiscriminantAnalysis().fit(X[train], y[train]).score(X[~train], y[~train])
        assert res["accuracy"].sel(learner="lda", sampling=method) == pytest.approx(acc)
        assert int(res["n_train"].sel(sampling=method)) == 120
    rand = res["random_accuracy"].sel(learner="lda").to_numpy()
    aev, sd_ = rand.mean(), rand.std(ddof=1)
    assert float(res["aev"].sel(learner="lda")) == pytest.approx(aev)
    expected = (res["accuracy"].sel(learner="lda") - aev) / sd_
    np.testing.assert_allclose(res["mai"].sel(learner="lda"), expected)
    assert len(set(np.round(rand, 6))) > 1  # the random splits differ


def test_mai_table_and_plot(compared):
    _, res = compared
    table = mai.mai_table({"toy": res, "again": res})
    assert list(table.index.names) == ["data", "learner"] and len(table) == 2
    assert list(table.columns) == [
        "AEV", "SD", "ACC stratified", "ACC overlap", "MAI stratified", "MAI overlap",
    ]  # fmt: skip
    summary = mai.mai_summary(table)
    value = abs(float(res["mai"].sel(learner="lda", sampling="overlap")))
    assert summary.loc["mean |MAI|", "overlap"] == pytest.approx(value)
    assert summary.loc["SD |MAI|", "overlap"] == pytest.approx(0.0)
    from soak_dask.diagnose.sampling_plot import plot_mai

    fig = plot_mai(table)
    assert len(fig.axes[0].get_xticklabels()) == 2
    if NOTES.is_dir():
        fig.savefig(NOTES / "sampling_test_plot.png", dpi=80)


def test_compare_sampling_refusals():
    df = frame(40)
    with pytest.raises(ValueError, match="group column 'g'"):
        mai.compare_sampling(table_of(df.assign(g=np.arange(40) // 4), group="g"), "lda")
    with pytest.raises(ValueError, match=r"\['bogus'\] are not sampling methods"):
        mai.compare_sampling(
            table_of(df), "lda", design=SamplingSplits(methods=["random", "bogus"])
        )
    with pytest.raises(ValueError, match="n_repeats=1"):
        mai.compare_sampling(table_of(df), "lda", design=SamplingSplits(n_repeats=1))
    with pytest.raises(TypeError, match=r"k= is an option of its design: .*\(n_neighbors="):
        mai.compare_sampling(table_of(df), "lda", k=3)
    with pytest.raises(ValueError, match="train_ratio=1.5"):
        mai.compare_sampling(table_of(df), "lda", design=SamplingSplits(train_ratio=1.5))
    with pytest.raises(ValueError, match="regression"):
        mai.compare_sampling(sd.load_table(df.assign(y=np.linspace(0, 1, 40)), label="y"), "lda")


# --- overlap-balanced folds ---------------------------------------------------------------------


@pytest.mark.slow
def test_overlap_folds_balance_levels():
    df = frame(300, seed=10).assign(region=np.repeat(["N", "S"], 150))
    with pytest.warns(UserWarning, match="overlap level"):
        folded = balance.overlap_folds(table_of(df, 1, subset="region"), 4, seed=3)
    with pytest.warns(UserWarning, match="overlap level"):
        again = balance.overlap_folds(table_of(df, 3, subset="region"), 4, seed=3)
    folds = folded.data[FOLD_COLUMN].compute().to_numpy()
    np.testing.assert_array_equal(folds, again.data[FOLD_COLUMN].compute().to_numpy())
    assert folded.fold == FOLD_COLUMN and set(folds) == {1, 2, 3, 4}
    degrees = overlap_degrees(table_of(df), 5).data.compute()[DO_COLUMN].to_numpy()
    strata = pd.DataFrame({"r": df["region"], "d": degrees, "y": df["y"], "fold": folds})
    spread = strata.groupby(["r", "d", "y"])["fold"].apply(
        lambda f: np.ptp(np.bincount(f, minlength=5)[1:])
    )
    assert spread.max() <= 1  # each (subset, level, class) spread evenly
    counts = strata.groupby(["r", "fold", "y"]).size().rename("n").reset_index()
    known = folded.fold_counts.rename(columns={"region": "r", FOLD_COLUMN: "fold"})
    pd.testing.assert_frame_equal(
        known.sort_values(["r", "fold", "y"]).reset_index(drop=True), counts, check_dtype=False
    )
    res = sd.soak(folded, "lda", train_types=["same"], options=sd.RunOptions(progress=False))
    assert res.sizes["fold"] == 4


def test_overlap_folds_groups():
    df = frame(200, seed=11).assign(region="all")
    df["poly"] = df["y"] + (np.arange(200) // 5).astype(str)
    folded = balance.overlap_folds(table_of(df, 2, group="poly"), 3, seed=1, n_levels=2)
    got = folded.data[["poly", FOLD_COLUMN]].compute()
    assert got.groupby("poly")[FOLD_COLUMN].nunique().max() == 1  # whole groups
    with pytest.raises(ValueError, match="already has the fold column"):
        balance.overlap_folds(folded, 3)


# --- command line -------------------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    """``soak``'s parser (``soak_dask.app.commands`` declares compare-sampling's flags)."""
    from soak_dask.app.cli import build_parser

    return build_parser()


@pytest.mark.slow
def test_cli_writes_tables_and_figure(tmp_path):
    from distributed import LocalCluster

    from soak_dask.app.sampling_cli import compare_sampling_command

    frame(120, seed=12).to_csv(tmp_path / "rows.csv", index=False)
    out = tmp_path / "out"
    argv = ["compare-sampling", str(tmp_path / "rows.csv"), "--label", "y", "--learner", "lda"]
    argv += ["--methods", "random,overlap", "--n-repeats", "4", "--out", str(out)]
    with LocalCluster(n_workers=1, processes=False, dashboard_address=":0") as cluster:
        args = parser().parse_args([*argv, "--scheduler", cluster.scheduler_address])
        compare_sampling_command(args)
        written = {p.name for p in out.iterdir()}
        assert written == {"mai.csv", "summary.csv", "random_accuracy.csv", "mai.png",
                           "compare_sampling.json", "compare_sampling.zarr",
                           "soak_dask_output.json"}  # fmt: skip
        table = pd.read_csv(out / "mai.csv", index_col=[0, 1])
        assert list(table.columns[:2]) == ["AEV", "SD"] and "MAI overlap" in table
        with pytest.raises(FileExistsError, match="earlier output.*--overwrite"):
            compare_sampling_command(args)
        overwrite = [*argv, "--scheduler", cluster.scheduler_address, "--overwrite"]
        compare_sampling_command(parser().parse_args(overwrite))
        # A run file gives the same run: shared settings at the top, its own in its table.
        conf = tmp_path / "run.toml"
        conf.write_text(
            'data = "rows.csv"\nlabel = "y"\nlearners = ["lda"]\nout = "from_file"\n'
            '[compare_sampling]\nmethods = ["random", "overlap"]\nn_repeats = 4\n'
        )
        config = ["compare-sampling", "--config", str(conf), "--scheduler"]
        compare_sampling_command(parser().parse_args([*config, cluster.scheduler_address]))
        pd.testing.assert_frame_equal(
            pd.read_csv(tmp_path / "from_file" / "mai.csv"), pd.read_csv(out / "mai.csv")
        )
        if NOTES.is_dir():
            shutil.copy(out / "mai.png", NOTES / "sampling_cli_mai.png")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("mine")
    argv[-1] = str(foreign)
    with pytest.raises(FileExistsError, match="did not write \\(it holds keep.txt"):
        compare_sampling_command(parser().parse_args([*argv, "--overwrite"]))


def test_mai_figure_is_linear_and_labels_the_points_beyond_its_range():
    import matplotlib

    matplotlib.use("Agg")
    from soak_dask.diagnose.sampling_plot import plot_mai

    index = pd.MultiIndex.from_product([["wdbc", "pima"], ["knn", "rf"]], names=["data", "learner"])
    table = pd.DataFrame({"MAI random": [0.5, -0.3, 1.2, 0.1], "MAI mdc": [0.2, -20.3, 0.4, 1.0]})
    table.index = index
    ax = plot_mai(table).axes[0]
    assert ax.get_yscale() == "linear"
    low, high = ax.get_ylim()
    assert -20.3 < low and high < 20  # the far point does not set the range...
    assert [t.get_text() for t in ax.texts] == ["-20.3"]  # ...it is labelled at the edge
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[:4] == ["wdbc", "pima", "knn", "rf"] and "random split" in labels[4]


def test_mdc_on_a_sample_says_it_changes_the_method():
    from soak_dask.diagnose.sampling_report import notes_text

    with pytest.warns(UserWarning, match="mdc: MDC needs all rows"):
        with dask.config.set(scheduler="synchronous"):
            res = mai.compare_sampling(
                table_of(frame(300, seed=8)),
                "lda",
                design=SamplingSplits(methods=["random", "mdc"], n_repeats=2, mdc_max_rows=100),
                options=RunOptions(progress=False),
            )
    note = json.loads(res.attrs["notes"])["mdc"]
    assert "the table has 300 rows" in note and "sample of 100 rows" in note
    assert "This changes the method" in note and "not those of the paper's MDC" in note
    printed = " ".join(notes_text(res).split())
    assert printed.startswith("Note, mdc: MDC needs all rows") and "changes the method" in printed
    assert notes_text(res.assign_attrs(notes="{}")) == ""
