"""A scoring pass's AUC pieces (run.score_memory): scored in waves when they do not fit the
workers at once, with the records of one wave; a block no wave can hold is refused before any
fit, with its numbers and the measures without AUC."""

from __future__ import annotations

from functools import partial

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from dask.core import get_dependencies
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.linear_model import SGDClassifier
from sklearn.metrics import roc_auc_score

import soak_dask as sd
from soak_dask import Selection, Term
from soak_dask.run import strategies
from soak_dask.run.executor import run_plan
from soak_dask.run.fitting import RunSpec
from soak_dask.run.score_memory import (
    AUC_ROW_BYTES,
    MERGE_COPIES,
    SCORE_SHARE,
    auc_columns,
    block_pieces,
    check_resubstitution_memory,
    check_score_memory,
    waves,
)
from soak_dask.run.session import with_fit_rows
from soak_dask.run.strategies import Context, OnePass, WholeTrainSet, make_tasks
from soak_dask.split.plan import Fit, build_plan
from soak_dask.workers import FitMemoryError

from ..conftest import task_memory, toy_table


@pytest.fixture
def shares_of_the_examples(monkeypatch):
    """The shares the waves' examples below were sized for (their limits are in bytes)."""
    monkeypatch.setattr("soak_dask.run.score_memory.SCORE_SHARE", 0.3)
    monkeypatch.setattr("soak_dask.run.score_memory.MERGE_COPIES", 3)


TIMINGS = ["fit_seconds", "predict_seconds"]
SGD = SGDClassifier(loss="log_loss", random_state=0)


def test_a_block_sums_the_pieces_of_every_pair_predicting_it():
    """SOAK's test block is predicted by its same, other and all fits, each learner: one merge
    holds all their pieces, and only a merge no wave can hold is refused."""
    assert auc_columns(["error", "auc"], ["a", "b"]) == 1
    assert auc_columns(["error", "auc"], ["a", "b", "c"]) == 3
    assert auc_columns(["error"], ["a", "b"]) == 0 and auc_columns(["mse"], None) == 0
    rows, pairs = {0: 1000, 1: 500}, {0: 6, 1: 2}  # block 0: 3 train types × 2 learners
    assert block_pieces(rows, pairs, 3) == {0: 1000 * 6 * 3 * 16, 1: 500 * 2 * 3 * 16}
    fits = {"measures": ["error", "auc"], "classes": ["a", "b"]}
    merge = 1000 * 6 * AUC_ROW_BYTES * MERGE_COPIES  # block 0's merge: 288,000 bytes
    check_score_memory(rows, pairs, memory=task_memory(int(merge / SCORE_SHARE) + 1), **fits)
    with pytest.raises(FitMemoryError) as err:
        check_score_memory(rows, pairs, memory=task_memory(int(merge / SCORE_SHARE) - 10), **fits)
    text = str(err.value)
    assert "test block 0 is predicted by 6 fits" in text and "1,000 test rows × 6 fits" in text
    assert "measures=['error']" in text and "more folds" in text
    check_score_memory(rows, pairs, ["error"], ["a", "b"], task_memory(1))  # no AUC: nothing held


def test_the_wave_split_is_consecutive_and_deterministic():
    pieces = [3, 3, 3, 5, 1, 1, 9]
    assert waves(pieces, None) == [list(range(7))]
    assert waves(pieces, 9) == [[0, 1, 2], [3, 4, 5], [6]] == waves(pieces, 9)
    assert waves(pieces, 4) == [[0], [1], [2], [3], [4, 5], [6]]  # a block over it: alone
    assert waves([], 4) == []


def test_a_resubstitution_too_large_for_one_merge_is_refused():
    fits = {"measures": ["error", "auc"], "classes": ["a", "b"]}
    need = 1000 * AUC_ROW_BYTES * MERGE_COPIES
    check_resubstitution_memory(
        "lda", 1000, memory=task_memory(int(need / SCORE_SHARE) + 1), **fits
    )
    with pytest.raises(FitMemoryError, match=r"'lda', final model.*1,000 rows.*measures=\['error'"):
        check_resubstitution_memory(
            "lda", 1000, memory=task_memory(int(need / SCORE_SHARE) - 1), **fits
        )


def _kfold_context(limit, n_folds=8, n=240):
    """A hand-made K-fold plan scored by LDA from statistics, its rows counted and the bytes
    a worker has for a task set to ``limit`` (Dask's local scheduler, one worker)."""
    rng = np.random.default_rng(5)
    df = pd.DataFrame({"x0": rng.normal(size=n), "x1": rng.normal(size=n), "s": "all"})
    df["fold"] = np.arange(n) % n_folds + 1
    df["y"] = np.where(df["x0"] + rng.normal(size=n) > 0, "p", "q")
    rows, tests = [], {}
    for k in range(1, n_folds + 1):
        tests[k] = Selection((Term("fold", (k,)),))
        rows.append(({"fold": k}, Fit(Selection((Term("fold", (k,), exclude=True),))), k))
    plan = build_plan(rows, tests, {"fold": list(range(1, n_folds + 1))})
    table = sd.load_table(df, label="y", subset="s", fold="fold", features=["x0", "x1"])
    run = RunSpec(("x0", "x1"), "y", "s", "fold", ("error", "auc"), classes=("p", "q"))
    data = dd.from_pandas(df, npartitions=4)
    ctx = Context(table, data, plan, {"lda": LinearDiscriminantAnalysis()}, run)
    memory = None if limit is None else task_memory(limit)
    return df, plan, with_fit_rows(ctx, None, memory, count=True)


@pytest.mark.usefixtures("shares_of_the_examples")
def test_waves_score_as_one_pass_and_as_scikit_learn():
    """8 blocks of 30 rows (480 bytes of pieces each): a 5,000-byte worker holds 3 blocks a
    wave, so 3 waves; the records are those of one wave, AUC scikit-learn's."""
    df, plan, one = _kfold_context(None)
    _, _, three = _kfold_context(5000)
    pairs = [(f, "lda") for f in plan.fits.index]
    chosen = strategies.assign(three, pairs, [OnePass(), WholeTrainSet()])
    budget = strategies.score_budget(three, chosen, [OnePass(), WholeTrainSet()])
    assert budget == (0.3 * 5000, 3)  # the share of the examples
    got = {}
    for name, ctx in (("one", one), ("three", three)):
        records = run_plan(ctx, [OnePass(), WholeTrainSet()], progress=False)
        frame = pd.DataFrame(records).drop(columns=TIMINGS)
        got[name] = frame.sort_values("block").reset_index(drop=True)
    pd.testing.assert_frame_equal(got["one"], got["three"])
    for _, record in got["three"].iterrows():
        fit = plan.fits.loc[record["fit_id"]]
        train = df[fit["train"].mask(df)]
        test = df[plan.blocks.loc[record["block"], "test"].mask(df)]
        model = LinearDiscriminantAnalysis().fit(train[["x0", "x1"]], train["y"])
        expected = roc_auc_score(test["y"] == "q", model.predict_proba(test[["x0", "x1"]])[:, 1])
        assert record["auc"] == pytest.approx(expected, abs=1e-12)


@pytest.mark.usefixtures("shares_of_the_examples")
def test_a_wave_reads_its_partitions_after_the_last_waves_scores():
    """Each wave's partition tasks are its own (keys of their own) and depend on the last
    wave's block scores: no partition is read and held waiting for them."""
    _, plan, ctx = _kfold_context(5000)
    pairs = [(f, "lda") for f in plan.fits.index]
    tasks, _, n_waves = make_tasks(ctx, pairs, [OnePass(), WholeTrainSet()])
    assert n_waves == 3 and len(tasks) == 8
    graph = {}
    for task in tasks:
        graph.update(dict(task.__dask_graph__()))
    name = lambda key: key[0] if isinstance(key, tuple) else key  # noqa: E731
    predict = [k for k in graph if name(k).startswith("soak-predict-")]
    assert len(predict) == 3 * ctx.data.npartitions  # each wave reads every partition
    for key in predict:
        wave = int(name(key).split("-")[3])
        held = ("fitted", "wave-blocks", "wave-options")  # the models, the wave's arguments
        (part,) = [d for d in get_dependencies(graph, key) if not any(h in name(d) for h in held)]
        barriers = {d for d in get_dependencies(graph, part) if "soak-wave" in name(d)}
        assert len(barriers) == (1 if wave else 0), (key, barriers)
        # The barrier is the last wave's block scores, not a node of the same key.
        for barrier in barriers:
            scores = [d for d in get_dependencies(graph, barrier) if "soak-score-" in name(d)]
            assert scores, (barrier, get_dependencies(graph, barrier))
    assert len({name(k) for k in predict}) == 3 * ctx.data.npartitions
    assert dask.compute(tasks[0])[0][0]["n_test"] == 30


WAVED = {  # a call, its run options, the workers' limit, its largest pass's waves, extra reads
    "soak": (partial(sd.soak, learners=["lda", "featureless"], n_folds=3), {}, 100_000, 2, 1),
    "evaluate": (
        partial(sd.evaluate, learners=["lda"], outer="repeated_cv", outer_repeats=3),
        {},
        20_000,
        5,
        4,
    ),
    # One-pass and incremental models share one scoring pass, and its whole budget: 2 waves,
    # one more read (two passes of two waves each read the table twice more).
    "soak, fed and one-pass": (
        partial(sd.soak, learners={"lda": "lda", "sgd": SGD}, n_folds=3),
        {"incremental": True},
        100_000,
        2,
        1,
    ),
}


@pytest.mark.slow
@pytest.mark.usefixtures("shares_of_the_examples")
@pytest.mark.parametrize("call", WAVED)
def test_a_run_in_waves_reports_them_and_gives_the_records_of_one(monkeypatch, capsys, call):
    from distributed import Client, LocalCluster

    table = sd.load_table(toy_table(n=600, n_subsets=2, seed=2), label="y", subset="subset",
                          rows_per_partition=100)  # fmt: skip
    design, fitting, limit, n_waves, extra = WAVED[call]
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False) as cluster:
        with Client(cluster) as client:
            options = sd.RunOptions(client=client, progress=True, **fitting)
            both = {"measures": ["error", "auc"], "options": options}
            whole = design(table, **both)
            monkeypatch.setattr(
                "soak_dask.run.session.worker_memory", lambda c: task_memory(limit) if c else None
            )
            (cost,) = sd.dry_run(design, table, **both)
            assert not cost.refused and cost.score_waves == n_waves
            assert f"scored in {n_waves} waves" in str(cost)
            assert (extra, "more scoring reads, AUC's pieces scored in waves") in cost.passes
            capsys.readouterr()
            waved = design(table, **both)
    assert f"scoring in {n_waves} waves" in capsys.readouterr().out
    # the result records its waves (more than one: one-wave results have no such attr)
    assert waved.attrs["score_waves"] == n_waves and "score_waves" not in whole.attrs
    # Values, not attrs: evaluate's attrs record its seconds.
    xr.testing.assert_equal(waved.drop_vars(TIMINGS), whole.drop_vars(TIMINGS))


@pytest.mark.parametrize("call", ["evaluate", "soak"])
def test_a_pass_too_large_for_its_auc_is_refused_before_any_fit(monkeypatch, call):
    from distributed import Client, LocalCluster

    table = sd.load_table(toy_table(n=600, n_subsets=2, seed=2), label="y", subset="subset")
    run = {"evaluate": lambda **kw: sd.evaluate(table, ["lda"], outer="repeated_cv",
                                                 outer_repeats=3, **kw),
           "soak": lambda **kw: sd.soak(table, ["lda"], n_folds=3, **kw)}[call]  # fmt: skip
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False) as cluster:
        with Client(cluster) as client:
            monkeypatch.setattr(
                "soak_dask.run.session.worker_memory", lambda c: task_memory(10_000) if c else None
            )
            quiet = sd.RunOptions(client=client, progress=False)
            both = {"measures": ["error", "auc"], "options": quiet}
            (cost,) = sd.dry_run(run, **both)  # the dry run shows the refusal
            assert cost.refused and "AUC is scored exactly" in cost.refusal  # no wave holds it
            real = strategies.OnePass.models
            monkeypatch.setattr(strategies.OnePass, "models", lambda *a: pytest.fail("a fit ran"))
            with pytest.raises(FitMemoryError, match=r"AUC is scored exactly.*measures=\['error'"):
                run(**both)
            monkeypatch.setattr(strategies.OnePass, "models", real)
            res = run(measures=["error"], options=quiet)
            assert np.isfinite(res["error"].values).all()


def test_a_final_models_resubstitution_is_checked_before_any_fit(monkeypatch):
    """The bootstrap's final model scores its own 600 training rows, merged in one task
    (28,800 bytes of pieces at its peak): refused where the outer fits' pieces fit."""
    from distributed import Client, LocalCluster

    table = sd.load_table(toy_table(n=600, n_subsets=2, seed=2), label="y", subset="subset")
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False) as cluster:
        with Client(cluster) as client:
            monkeypatch.setattr(
                "soak_dask.run.session.worker_memory", lambda c: task_memory(50_000) if c else None
            )
            monkeypatch.setattr(
                "soak_dask.run.final.worker_memory", lambda c: task_memory(50_000) if c else None
            )
            run = {
                "measures": ["error", "auc"],
                "options": sd.RunOptions(client=client, progress=False),
            }
            with pytest.raises(FitMemoryError, match=r"'lda', final model: its resubstitution"):
                sd.evaluate(table, ["lda"], outer="bootstrap", outer_repeats=3, **run)


def test_run_facts_keep_the_largest_within_one_run_s_scope():
    from soak_dask.run.facts import current_facts, record_most, run_facts

    record_most("score_waves", 3)  # outside a run: kept nowhere
    assert current_facts() == {}
    with run_facts():
        record_most("score_waves", 2)
        with run_facts():  # an entry point inside another adds to the outer run's facts
            record_most("score_waves", 4)
        record_most("score_waves", 3)
        assert current_facts() == {"score_waves": 4}
    assert current_facts() == {}
