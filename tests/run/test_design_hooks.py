"""Designs carry what the run path used to ask their names for (issue 39): kNNDM is a design
(``KNNDMFolds``) that ``evaluate(outer="knndm")`` and ``run_design`` run alike; the bootstrap's
.632 estimates and leave-one-out's batched fits follow from the designs' hooks; ``run_design``
fits with the fitting options every entry point takes."""

from __future__ import annotations

import dask
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.naive_bayes import GaussianNB

import soak_dask as sd
from soak_dask.run import strategies
from soak_dask.split.outer import (
    Bootstrap,
    KFoldDesign,
    LeaveOneGroupOutDesign,
    LeaveOneOutDesign,
    key_name,
)

from ..conftest import toy_table

FOLD = key_name("fold", 1)


def scene(per: int = 12, seed: int = 1) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Training points in 6 tight clusters, a regular prediction grid over the square."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0, 100, (6, 2))
    xy = np.concatenate([c + rng.normal(scale=3, size=(per, 2)) for c in centres])
    df = pd.DataFrame({"x": xy[:, 0], "y": xy[:, 1], "f": rng.normal(size=len(xy))})
    df["label"] = np.sin(df.x / 10) + df.f + rng.normal(scale=0.3, size=len(df))
    g = np.stack(np.meshgrid(np.arange(1, 100, 4.0), np.arange(1, 100, 4.0)), -1).reshape(-1, 2)
    return df, pd.DataFrame({"x": g[:, 0], "y": g[:, 1]})


FAST = {"n_candidates": 8, "sample": 500}


def knndm_fold_column(table: sd.Table, prediction: pd.DataFrame, seed: int) -> pd.Series:
    design = sd.KNNDMFolds(prediction, 4, seed, **FAST)
    keyed = design.add_keys(table)
    frame = keyed.data[["x", "y", FOLD]].compute()
    return frame.set_index(["x", "y"])[FOLD].sort_index()


@pytest.mark.slow
def test_run_design_of_knndm_folds_is_evaluate_outer_knndm():
    df, pred = scene()
    t = sd.load_table(df, label="label", coords=["x", "y"])
    design = sd.KNNDMFolds(pred, n_folds=4, seed=2)
    with dask.config.set(scheduler="sync"):
        got = sd.run_design(t, design, "linear", options=sd.RunOptions(progress=False))
        want = sd.evaluate(
            t,
            "linear",
            outer="knndm",
            outer_folds=4,
            prediction=pred,
            seed=2,
            options=sd.RunOptions(progress=False),
        )
    folds = sd.knndm_folds(t, pred, n_folds=4, seed=2)
    assert design.W_ == pytest.approx(folds.W) and design.W_random_ == pytest.approx(folds.W_random)
    assert design.learned_ == {"outer_folds": 4}
    for name in ("rmse", "n_train", "n_test"):
        np.testing.assert_allclose(got[name].values, want[name].values, rtol=1e-12)
    np.testing.assert_array_equal(got["n_test"].values.ravel(), folds.fold_sizes)
    for key in ("knndm_W", "knndm_W_random", "knndm_n_clusters", "knndm_method"):
        assert got.attrs[key] == want.attrs[key]
    assert got.attrs["design"] == want.attrs["design"] == "evaluate"  # one kind, either path
    for key in ("outer", "outer_folds", "outer_repeats", "train_ratio", "n_distinct_train_sets"):
        assert got.attrs[key] == want.attrs[key], key
    assert got.attrs["design_repr"] == "KNNDMFolds(prediction=<DataFrame>, n_folds=4, seed=2)"
    assert got.attrs["notes"] == [n for n in want.attrs["notes"] if n.startswith("kNNDM")]


@pytest.mark.slow
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.sampled_from([7, 20, 45]), seed=st.integers(0, 2**32 - 1))
def test_same_seed_same_knndm_folds_whatever_the_partitions(rows, seed):
    df, pred = scene(per=8)
    whole = sd.load_table(df, label="label", coords=["x", "y"])
    parted = sd.load_table(df, label="label", coords=["x", "y"], rows_per_partition=rows)
    assert parted.data.npartitions > 1
    pd.testing.assert_series_equal(
        knndm_fold_column(whole, pred, seed), knndm_fold_column(parted, pred, seed)
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("n_folds", 1),
        ("seed", -1),
        ("space", "sphere"),
        ("sample", 2),
        ("maxp", 0.1),
        ("n_candidates", 0),
        ("max_clusters", 3),
        ("cv_sample", 1.5),
    ],
)
def test_knndm_folds_refuses_a_bad_parameter_when_made(option, value):
    with pytest.raises(ValueError, match=rf"^{option}={value!r}"):
        sd.KNNDMFolds("area.parquet", **{option: value})


def test_knndm_folds_refuses_a_missing_or_unusable_area_and_a_fold_column():
    with pytest.raises(ValueError, match=r"KNNDMFolds needs prediction="):
        sd.KNNDMFolds(None)
    with pytest.raises(TypeError, match=r"prediction is a int: give a Table"):
        sd.KNNDMFolds(3)
    df, pred = scene(per=6)
    folded = sd.load_table(df.assign(k=np.arange(len(df)) % 3 + 1), label="label",
                           coords=["x", "y"], fold="k")  # fmt: skip
    with pytest.raises(ValueError, match="kNNDM assigns the folds.*fold column 'k'"):
        sd.KNNDMFolds(pred).add_keys(folded)


def test_the_hooks_evaluate_reads():
    assert Bootstrap.resubstitution and not KFoldDesign.resubstitution
    assert LeaveOneOutDesign.batch == LeaveOneGroupOutDesign.batch == 64
    assert KFoldDesign.batch is Bootstrap.batch is sd.KNNDMFolds.batch is None
    assert sd.KNNDMFolds("a.parquet").recorded() == {} == KFoldDesign().recorded()
    assert sd.KNNDMFolds("a.parquet").notes() == []


@pytest.mark.parametrize(
    "design",
    [KFoldDesign(3, seed=2), Bootstrap(2, seed=2), sd.SameOtherAll(n_folds=3, seed=2)],
    ids=["kfold", "bootstrap", "same_other_all"],
)
@pytest.mark.parametrize(
    "fitting", [{"onepass": True}, {"onepass": False, "incremental": True}], ids=["onepass", "fed"]
)
def test_run_design_fits_as_every_entry_point(design, fitting, monkeypatch):
    """One-pass fits (LDA, featureless: from statistics) and incremental fits (Gaussian naive
    Bayes fed block by block) give the scores of whole-train-set fits, and are made so."""
    made = []
    for strategy in (strategies.OnePass, strategies.PartialFit):
        monkeypatch.setattr(strategy, "models", spy(strategy.models, made))
    table = sd.load_table(toy_table(n=150, n_subsets=2, seed=3), label="y", subset="subset",
                          rows_per_partition=40)  # fmt: skip
    if fitting["onepass"]:
        learners = ["lda", "featureless"]
    else:  # var_smoothing 0: partial_fit would take its epsilon from the first block alone
        learners = {"nb": GaussianNB(var_smoothing=0.0)}
    with dask.config.set(scheduler="sync"):
        got = sd.run_design(
            table, design, learners, options=sd.RunOptions(progress=False, **fitting)
        )
        whole = sd.run_design(
            table, design, learners, options=sd.RunOptions(progress=False, onepass=False)
        )
    kind = strategies.OnePass if fitting["onepass"] else strategies.PartialFit
    n_pairs = len(got["fit_seconds"].values.ravel())  # one (fit, learner) pair a cell, or less
    assert {type(s) for s, _ in made} == {kind} and 0 < sum(n for _, n in made) <= n_pairs
    np.testing.assert_array_equal(got["error"].values, whole["error"].values)
    np.testing.assert_array_equal(got["n_train"].values, whole["n_train"].values)
    np.testing.assert_allclose(got["log_loss"].values, whole["log_loss"].values, rtol=1e-6)
    assert bool(got.attrs["onepass"]) == fitting["onepass"]
    assert bool(got.attrs["incremental"]) == ("incremental" in fitting)


def spy(tasks, made):
    """``tasks`` of a strategy, noting each call's strategy and its number of pairs."""

    def noted(self, ctx, pairs):
        made.append((self, len(pairs)))
        return tasks(self, ctx, pairs)

    return noted


def test_run_design_checks_its_fitting_options_first():
    table = sd.load_table(toy_table(n=60), label="y", subset="subset")
    with pytest.raises(ValueError, match="epochs=3"):
        sd.run_design(table, KFoldDesign(3), "lda", options=sd.RunOptions(epochs=3, progress=False))
    with pytest.raises(ValueError, match="max_train_rows"):
        sd.run_design(
            table, KFoldDesign(3), "lda", options=sd.RunOptions(max_train_rows=0, progress=False)
        )
    sized = sd.SameOtherAll(n_folds=3, sizes=0)
    with pytest.raises(ValueError, match=r"RunOptions\(incremental=True\) with sizes=0"):
        sd.run_design(
            table,
            sized,
            {"nb": GaussianNB()},
            options=sd.RunOptions(incremental=True, progress=False),
        )


def test_run_design_caps_train_rows():
    table = sd.load_table(toy_table(n=120), label="y", subset="subset")
    res = sd.run_design(
        table, KFoldDesign(3), "lda", options=sd.RunOptions(max_train_rows=30, progress=False)
    )
    assert (res["n_train"].values == 30).all() and res.attrs["max_train_rows"] == 30


@pytest.mark.slow  # the session's cluster of worker processes
def test_a_design_draws_its_keys_on_the_run_client(cluster):
    """kNNDM scores its candidates on the current client: inside a run, the run's, also when
    it is not the default client (``entry.entry_point``); outside, none is made current."""
    from distributed import Client

    from soak_dask.dask_client import current_client

    seen = []

    class Noting(KFoldDesign):
        def add_keys(self, table):
            seen.append(current_client())
            return super().add_keys(table)

    table = sd.load_table(toy_table(n=60), label="y", subset="subset")
    with Client(cluster, set_as_default=False) as client:
        options = sd.RunOptions(client=client, progress=False)
        res = sd.run_design(table, Noting(3), "featureless", options=options)
        assert seen == [client] and res.attrs["design"] == "evaluate"
        assert current_client() is not client  # the run's scope ended with it
