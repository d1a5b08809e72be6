"""The transfer matrix and the train-subset search: real computations on a small table.

The matrix must be SOAK's folds and fits (its diagonal is ``soak``'s same, S·K fits); the
search must give the same pools and scores from block statistics as from refits on the rows,
and never see its outer test fold (poisoning that fold's labels leaves its pools unchanged).
"""

from __future__ import annotations

import argparse
import json

import dask
import matplotlib
import numpy as np
import pandas as pd
import pytest
import scipy.stats
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

import soak_dask as sd
from soak_dask import RunOptions
from soak_dask.app import cli, transfer_cli
from soak_dask.app.flags import UsageError
from soak_dask.io.outdir import MANIFEST
from soak_dask.pooling import (
    Transfer,
    cluster_subsets,
    inner_fit_bound,
    search_pools,
    search_pvalues,
    search_stability,
    search_subsets,
    transfer,
    transfer_distance,
    transfer_from_soak,
    transfer_pvalues,
)
from soak_dask.pooling import matrix as matrix_module
from soak_dask.pooling.report import write_transfer_report
from soak_dask.split.search import SearchRound

from ..conftest import n_examples, shared_file, toy_table

matplotlib.use("Agg")
K = 3
LEARNERS = ["featureless", "lda", "decision_tree"]


@pytest.fixture(autouse=True)
def synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


@pytest.fixture(scope="module")
def table():
    return sd.load_table(toy_table(360, 3, seed=2), label="y", subset="subset")


@pytest.fixture(scope="module")
def runs(table):
    """The matrix, SOAK (same and all) and the search, on one table and seed."""
    with dask.config.set(scheduler="synchronous"):
        matrix = transfer(table, LEARNERS, n_folds=K, seed=3, options=RunOptions(progress=False))
        soak = sd.soak(
            table,
            LEARNERS,
            n_folds=K,
            seed=3,
            train_types="same,all",
            options=sd.RunOptions(progress=False),
        )
        found = search_subsets(
            table, ["featureless", "lda"], n_folds=K, seed=3, options=RunOptions(progress=False)
        )
    return matrix, soak, found


@given(n_subsets=st.integers(1, 6), n_folds=st.integers(2, 8))
@settings(max_examples=n_examples(25), deadline=None)
def test_plan_has_s_times_k_fits_each_scoring_every_subset(n_subsets, n_folds):
    subsets = [f"r{i}" for i in range(n_subsets)]
    plan = Transfer(n_folds).plan_for(subsets)
    assert len(plan.fits) == n_subsets * n_folds  # not S²·K
    assert len(plan.splits) == n_subsets**2 * n_folds
    assert (plan.fits["blocks"].map(len) == n_subsets).all()
    for train, blocks in zip(plan.fits["train"], plan.fits["blocks"], strict=True):
        left_out = train.terms[1].values
        assert set(plan.blocks.loc[list(blocks), "fold"]) == set(left_out)


@pytest.mark.slow
def test_diagonal_is_soaks_same_and_fits_are_counted(runs):
    matrix, soak, _ = runs
    assert matrix.attrs["n_distinct_train_sets"] == 3 * K
    assert matrix.attrs["n_fits"] == 3 * K * len(LEARNERS)
    for s in matrix["test_subset"].values:
        diagonal = matrix.sel(train_subset=s, test_subset=s)
        same = soak.sel(test_subset=s, train_type="same")
        for var in ("error", "auc", "log_loss", "n_train", "n_test"):
            np.testing.assert_array_equal(diagonal[var].values, same[var].values, err_msg=var)


@pytest.mark.slow
def test_tests_against_the_diagonal_and_the_clustering(runs):
    matrix = runs[0]
    tests = transfer_pvalues(matrix)
    assert len(tests) == len(LEARNERS) * 9
    diagonal = tests["train_subset"] == tests["test_subset"]
    assert (tests.loc[diagonal, "verdict"] == "same").all()
    assert set(tests.loc[~diagonal, "verdict"]) <= {
        "worse",
        "better",
        "no evidence of a difference",
    }
    row = tests[(tests["learner"] == "lda") & ~diagonal].iloc[0]
    cell = matrix["error"].sel(learner="lda", train_subset=row["train_subset"])
    own = matrix["error"].sel(learner="lda", train_subset=row["test_subset"])
    diff = (cell - own).sel(test_subset=row["test_subset"]).values
    assert row["mean_diff"] == pytest.approx(diff.mean())
    t = diff.mean() / (diff.std(ddof=1) / np.sqrt(K))
    assert row["p"] == pytest.approx(2 * scipy.stats.t.sf(abs(t), K - 1))
    d = transfer_distance(matrix, "lda")
    assert np.allclose(d, d.T) and (np.diag(d) == 0).all() and (d.to_numpy() >= 0).all()
    order, tree = cluster_subsets(matrix, "lda")
    assert sorted(order) == ["s0", "s1", "s2"] and tree.shape == (2, 4)


@pytest.mark.slow
def test_two_subset_soak_is_a_transfer_matrix():
    table = sd.load_table(toy_table(200, 2, seed=5), label="y", subset="subset")
    res = sd.soak(table, ["featureless", "lda"], n_folds=3, options=sd.RunOptions(progress=False))
    matrix = transfer(table, ["featureless", "lda"], n_folds=3, options=RunOptions(progress=False))
    converted = transfer_from_soak(res)
    np.testing.assert_array_equal(
        converted["error"].transpose(*matrix["error"].dims).values, matrix["error"].values
    )
    with pytest.raises(ValueError, match="exactly 2 subsets"):
        transfer_from_soak(res.isel(test_subset=[0]))


def test_paper_results_make_transfer_matrices():
    scores = pd.read_csv(shared_file("paper", "soak_paper_fold_scores.csv"))
    one = scores.query("`data.name` == 'MNIST_FashionMNIST'")
    frame = pd.DataFrame(
        {
            "learner": one["algorithm"],
            "test_subset": one["test.group"],
            "fold": one["test.fold"],
            "train_type": one["train.groups"],
            "error": one["percent.error"],
        }
    )
    matrix = transfer_from_soak(sd.from_dataframe(frame, measures=["error"]))
    tests = transfer_pvalues(matrix).set_index(["learner", "train_subset", "test_subset"])
    # A model of MNIST digits does not predict clothing (and vice versa): far worse.
    assert tests.loc[("cv_glmnet", "MNIST", "FashionMNIST"), "verdict"] == "worse"
    assert tests.loc[("cv_glmnet", "MNIST", "FashionMNIST"), "mean_diff"] > 50


def test_search_scores_same_and_all_as_soak(runs):
    _, soak, found = runs
    for train_set in ("same", "all"):
        ours = found["error"].sel(train_set=train_set)
        theirs = soak["error"].sel(learner=["featureless", "lda"], train_type=train_set)
        np.testing.assert_array_equal(ours.values, theirs.values)
    chosen = found["chosen"]
    for s in found["test_subset"].values:  # every pool holds its test subset
        assert chosen.sel(test_subset=s, train_subset=s).all()
    pools = search_pools(found)
    assert (pools["size"] == pools["pool"].str.count(r"\+") + 1).all()
    assert (found["inner_greedy"] <= found["inner_same"]).all()
    assert (found["one_pass"] == 1).all()


@pytest.mark.slow
def test_one_pass_search_equals_refits_from_rows(table, runs):
    found = runs[2].sel(learner=["lda"])
    refit = search_subsets(
        table, ["lda"], n_folds=K, seed=3, options=RunOptions(progress=False, onepass=False)
    )
    assert (refit["one_pass"] == 0).all()
    assert (found["chosen"].sum("train_subset") > 1).any()  # the search did pool subsets
    assert (refit["pool"] == found["pool"]).all()
    xr.testing.assert_allclose(refit["inner_greedy"], found["inner_greedy"])
    np.testing.assert_array_equal(refit["error"].values, found["error"].values)
    # ...and the inner fits are exactly the plan's: equal counts either way.
    np.testing.assert_array_equal(refit["inner_fits"].values, found["inner_fits"].values)


def test_inner_plans_never_touch_the_outer_fold():
    asked = {(k, s): [(s,), (s, "b")] for k in (1, 2, 3) for s in ("a",)}
    plan = SearchRound(asked).plan_for(["a", "b"], n_folds=3)
    for _, split in plan.splits.iterrows():
        train = plan.fits.loc[split["fit_id"], "train"]
        assert split["outer_fold"] in train.terms[1].values  # left out of the train set
        assert plan.blocks.loc[split["block"], "fold"] == split["inner_fold"] != split["outer_fold"]


@pytest.mark.slow
def test_poisoned_outer_test_fold_does_not_change_its_pools():
    """Flip every label of fold 1: the searches of outer fold 1 must choose the same pools
    (they never see fold 1), while the other folds' inner errors change (they train on it).
    Fits from rows run the same inner plans (test_one_pass_search_equals_refits_from_rows)."""
    base = sd.assign_folds(
        sd.load_table(toy_table(300, 3, seed=4), label="y", subset="subset"), n_folds=3, seed=1
    )
    frame = base.data.compute()
    poisoned = frame.copy()
    in_fold = poisoned[base.fold] == 1
    poisoned.loc[in_fold, "y"] = poisoned.loc[in_fold, "y"].map({"yes": "no", "no": "yes"})
    results = [
        search_subsets(
            sd.load_table(data, label="y", subset="subset", fold=base.fold),
            "lda",
            threshold=0.0,
            options=RunOptions(progress=False),
        )
        for data in (frame, poisoned)
    ]
    clean, dirty = (r.sel(fold=1) for r in results)
    assert (clean["pool"] == dirty["pool"]).all()
    xr.testing.assert_equal(clean["inner_greedy"], dirty["inner_greedy"])
    others = [r.sel(fold=[2, 3])["inner_same"] for r in results]
    assert not np.allclose(others[0], others[1])


def test_budget_and_bad_options_are_refused_before_fitting(table):
    assert inner_fit_bound(4, 10, 4) == 1530
    with pytest.raises(ValueError, match="max_inner_fits=10"):
        search_subsets(
            table,
            ["decision_tree"],
            n_folds=3,
            max_inner_fits=10,
            options=RunOptions(progress=False),
        )
    with pytest.raises(ValueError, match="threshold"):
        search_subsets(table, "lda", threshold=-0.1)
    with pytest.raises(ValueError, match="max_pool=1"):
        search_subsets(table, "lda", n_folds=3, max_pool=1, options=RunOptions(progress=False))
    single = sd.load_table(toy_table(60, 1), label="y", subset="subset")
    with pytest.raises(ValueError, match="one subset"):
        search_subsets(single, "lda", n_folds=3, options=RunOptions(progress=False))


def test_stability_table(runs):
    found = runs[2]
    stable = search_stability(found)
    assert len(stable) == 2 * 3
    assert stable["jaccard"].between(0, 1).all() and stable["modal_share"].between(0, 1).all()
    featureless = stable[stable["learner"] == "featureless"]
    tests = search_pvalues(found)
    assert set(tests["compare"] + "-" + tests["reference"]) == {
        "greedy-same",
        "greedy-all",
        "all-same",
    }
    assert len(featureless) == 3


@pytest.mark.slow
def test_figures_and_report(runs, tmp_path):
    matrix, _, found = runs
    from soak_dask.pooling.report import check_out_dir

    page = write_transfer_report(matrix.sel(learner=["lda"]), tmp_path / "rep", found)
    html = page.read_text()
    assert 'id="transfer"' in html and 'id="search"' in html and "<script" not in html
    listed = json.loads((tmp_path / "rep" / MANIFEST).read_text())["files"]
    assert {"transfer_error.png", "search.png", "search_pvalues.csv", "report.html"} <= set(listed)
    assert (tmp_path / "rep" / "transfer_error.png").stat().st_size > 10_000
    with pytest.raises(FileExistsError, match="earlier output"):
        check_out_dir(tmp_path / "rep", overwrite=False)  # ours, but not without overwrite
    check_out_dir(tmp_path / "rep", overwrite=True).begin()  # what a new report does first
    assert [p.name for p in (tmp_path / "rep").iterdir()] == [MANIFEST]  # the listed files go
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="keep.txt"):
        check_out_dir(tmp_path / "other", overwrite=True)


def _parser() -> argparse.ArgumentParser:
    return cli.build_parser()  # soak's, with every command


@pytest.mark.slow
def test_cli_writes_results_report_and_refuses_foreign_dirs(tmp_path, capsys, monkeypatch):
    import contextlib

    from soak_dask.run import cluster

    # Dask's local scheduler instead of a cluster: what runs there is the Python API's.
    monkeypatch.setattr(cluster, "connect", lambda *a, **k: contextlib.nullcontext())
    data = tmp_path / "toy.csv"
    toy_table(240, 3, seed=6).to_csv(data, index=False)
    out = tmp_path / "out"
    argv = [str(data), "--label", "y", "--subset", "subset", "--n-folds", "3", "--learner",
            "lda", "--no-progress", "--out", str(out)]  # fmt: skip
    transfer_cli.transfer_command(_parser().parse_args(["transfer", *argv]))
    printed = capsys.readouterr().out
    assert "search: nested greedy estimate" in printed and "Report:" in printed
    matrix = xr.open_zarr(out / "transfer.zarr", consolidated=False)
    assert dict(matrix.sizes) == {"learner": 1, "train_subset": 3, "test_subset": 3, "fold": 3}
    assert xr.open_zarr(out / "search.zarr", consolidated=False).attrs["design"] == "search_subsets"
    assert len(pd.read_csv(out / "transfer.csv")) == 27
    assert (out / "transfer_error.png").stat().st_size > 10_000
    no_subset = [a for a in argv if a not in ("--subset", "subset")]
    with pytest.raises(UsageError, match="--subset"):
        transfer_cli.transfer_command(_parser().parse_args(["transfer", *no_subset]))
    with pytest.raises(ValueError, match="--threshold=2.0: need a relative decrease"):
        transfer_cli.transfer_command(_parser().parse_args(["transfer", *argv, "--threshold", "2"]))
    # A search over its budget is refused before any fit of the matrix: the search runs first.
    made = []
    budget = ["--learner", "decision_tree", "--max-inner-fits", "10", "--out", str(tmp_path / "b")]
    with monkeypatch.context() as patched, pytest.raises(ValueError, match="max_inner_fits=10"):
        patched.setattr(matrix_module, "transfer", lambda *a, **k: made.append(a))
        transfer_cli.transfer_command(_parser().parse_args(["transfer", *argv[:7], *budget]))
    assert not made and not (tmp_path / "b").exists()
    # A run file gives the same matrix: the search's own settings in [search_subsets].
    conf = tmp_path / "run.toml"
    conf.write_text(
        'data = "toy.csv"\nlabel = "y"\nsubset = "subset"\nn_folds = 3\nlearners = ["lda"]\n'
        'progress = false\nsearch = false\nout = "from_file"\n[search_subsets]\nthreshold = 0.5\n'
    )
    transfer_cli.transfer_command(_parser().parse_args(["transfer", "--config", str(conf)]))
    assert not (tmp_path / "from_file" / "search.zarr").exists()
    timings = ["fit_seconds", "predict_seconds"]
    pd.testing.assert_frame_equal(
        pd.read_csv(tmp_path / "from_file" / "transfer.csv").drop(columns=timings),
        pd.read_csv(out / "transfer.csv").drop(columns=timings),
    )
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    args = _parser().parse_args(["transfer", *argv[:-1], str(foreign), "--overwrite"])
    with pytest.raises(FileExistsError, match="did not write \\(it holds notes.txt"):
        transfer_cli.transfer_command(args)


def test_the_top_level_names_are_the_functions():
    assert sd.transfer is transfer and sd.search_subsets is search_subsets
    with pytest.raises(TypeError, match="transfer takes a Table"):
        sd.transfer("not a table", "lda")


@pytest.mark.slow
def test_the_search_draws_its_folds_on_the_run_client(cluster, monkeypatch):
    """search_subsets adds its keys as every run does (``run_design.keyed_and_counted``): on
    the run's client, also when it is not the default one (their counting passes then run on
    the workers, not in this process)."""
    from distributed import Client

    from soak_dask.dask_client import current_client
    from soak_dask.split.transfer import Transfer

    seen, add_keys = [], Transfer.add_keys

    def noting(self, table):
        seen.append(current_client())
        return add_keys(self, table)

    monkeypatch.setattr(Transfer, "add_keys", noting)
    table = sd.load_table(toy_table(90, 3, seed=6), label="y", subset="subset")
    with Client(cluster, set_as_default=False) as client:
        options = RunOptions(client=client, progress=False)
        found = search_subsets(table, "featureless", n_folds=3, options=options)
        assert seen == [client] and found.attrs["design"] == "search_subsets"
