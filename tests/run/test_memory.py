"""A fit that cannot fit a worker's memory is refused before any fit, with its numbers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

import soak_dask as sd
from soak_dask.run.memory import check_fit_memory, fit_bytes, fit_rows
from soak_dask.workers import FitMemoryError, WorkerMemory, worker_memory

from ..conftest import plan_rows, task_memory, toy_table


@pytest.fixture(scope="module")
def planned():
    table = sd.load_table(toy_table(n=400, n_subsets=3, seed=5), label="y", subset="subset")
    table = sd.assign_folds(table, n_folds=4, seed=2)
    counts = sd.block_counts(table)
    plan = sd.SameOtherAll(n_folds=4).plan(table, counts)
    return table, counts, plan


@pytest.mark.slow
def test_fit_rows_are_the_rows_each_task_gathers(planned):
    table, counts, plan = planned
    rows = fit_rows(plan, counts, table.label, sorted(counts[table.label].unique()))
    actual = plan_rows(table, plan)  # rows selected from the lazy table, as the tasks do
    for fit_id, (train, tests) in actual.items():
        assert rows.at[fit_id, "train"] == len(train)
        assert rows.at[fit_id, "test"] == sum(len(t) for t in tests.values())


def test_a_fit_over_the_limit_is_refused_with_its_numbers(planned):
    table, counts, plan = planned
    rows = fit_rows(plan, counts, table.label, None)
    learners = {f: ["logistic"] for f in plan.fits.index}
    biggest = int(rows["train"].max())  # its test rows are scored where they are
    enough = fit_bytes(biggest, 3)
    check_fit_memory(rows, plan, learners, 3, task_memory(enough))  # fits: no error
    check_fit_memory(rows, plan, learners, 3, None)  # no limit known: no check
    with pytest.raises(FitMemoryError) as err:
        check_fit_memory(rows, plan, learners, 3, task_memory(enough - 1))
    message = str(err.value)
    assert f"gathers {biggest:,} rows × 3 features" in message
    assert "'logistic'" in message and "max_train_rows=" in message
    assert "incremental=True" in message and "more memory" in message
    # a row cap that brings every train set under the limit lets it run
    check_fit_memory(rows, plan, learners, 3, task_memory(enough - 1000), max_rows=10)


def test_the_cap_a_refusal_suggests_lets_the_run_through(planned):
    """A fit holds its train rows alone (its test rows are scored partition by partition):
    the suggested ``max_train_rows`` is the largest cap that lets the run through, however
    large the test blocks."""
    import re

    table, counts, plan = planned
    rows = fit_rows(plan, counts, table.label, None)
    learners = {f: ["logistic"] for f in plan.fits.index}
    assert rows["test"].max() > 50  # test rows that would not fit beside the train rows
    memory = task_memory(fit_bytes(50, 3))
    with pytest.raises(FitMemoryError) as err:
        check_fit_memory(rows, plan, learners, 3, memory)
    (cap,) = re.search(r"RunOptions\(max_train_rows=(\d+)\)", str(err.value)).groups()
    cap = int(cap)
    assert cap == 50
    check_fit_memory(rows, plan, learners, 3, memory, max_rows=cap)
    with pytest.raises(FitMemoryError):
        check_fit_memory(rows, plan, learners, 3, memory, max_rows=cap + 1)
    # a worker that holds not one row: no cap is suggested
    with pytest.raises(FitMemoryError) as err:
        check_fit_memory(rows, plan, learners, 3, task_memory(fit_bytes(1, 3) - 1))
    assert "max_train_rows" not in str(err.value)


def test_what_a_worker_holds_at_rest_is_not_for_its_tasks(planned):
    """A limit that holds the largest fit refuses it once the worker's own memory is counted:
    the message names the limit, the memory at rest and what is left."""
    table, counts, plan = planned
    rows = fit_rows(plan, counts, table.label, None)
    learners = {f: ["logistic"] for f in plan.fits.index}
    need = fit_bytes(int(rows["train"].max()), 3)
    limit = int(need / 0.8) + 10
    check_fit_memory(rows, plan, learners, 3, WorkerMemory(limit))
    with pytest.raises(FitMemoryError) as err:
        check_fit_memory(rows, plan, learners, 3, WorkerMemory(limit, resting=need // 2))
    memory = WorkerMemory(limit, need // 2)
    assert memory.free == int(0.8 * limit) - need // 2
    assert f"more than the {memory}" in str(err.value)
    assert "a worker has for a task (80% of its memory limit" in str(err.value)
    assert "it holds at rest" in str(err.value)
    assert WorkerMemory(100, resting=200).free == 0  # more at rest than the limit: nothing


def test_worker_memory_is_the_worker_with_least_for_a_task():
    class Client:  # what worker_memory reads: each worker's (limit, memory at rest)
        def run(self, func, **kwargs):
            assert kwargs == {"on_error": "return"}  # a worker closing answers with its error
            return {"a": (1000, 100), "b": (2000, 1500), "c": (None, 10**9), "d": OSError()}

    assert worker_memory(Client()) == WorkerMemory(2000, 1500)  # 100 bytes free, against 700
    assert worker_memory(None) is None


def test_worker_memory_reads_each_worker_after_the_fit_tasks_imports():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      memory_limit="4GB", dashboard_address=None) as cluster:  # fmt: skip
        with Client(cluster) as client:
            memory = worker_memory(client)
            assert memory.limit == 4_000_000_000
            # this process's own memory, scikit-learn and the learners imported
            assert 50_000_000 < memory.resting < memory.limit
            assert memory.free == int(0.8 * memory.limit) - memory.resting


def test_the_estimate_holds_the_measured_peak():
    """tracemalloc's peak of a fit task (LDA, the largest measured) stays under the estimate."""
    import tracemalloc

    from soak_dask.learn.builtin import builtin_learner
    from soak_dask.run.fitting import FitSpec, RunSpec, fit_and_score
    from soak_dask.split.plan import Selection, Term

    n, p = 20_000, 10
    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.normal(size=(n, p)), columns=[f"x{i}" for i in range(p)])
    df["y"] = np.where(df["x0"] > 0, "a", "b")
    df["subset"], df["fold"] = "s", np.arange(n) % 5 + 1
    run = RunSpec(tuple(df.columns[:p]), "y", "subset", "fold", ("error",), ("a", "b"))
    test = Selection((Term("fold", (1,)),))
    train = Selection((Term("fold", (1,), exclude=True),))
    spec = FitSpec("lda", 0, train, ((0, test, "s"),))
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    fit_and_score(df, builtin_learner("lda", "classification"), spec, run)
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    frame = df.memory_usage(deep=True).sum()
    assert peak + frame < fit_bytes(n, p)


class FailsToFit(LogisticRegression):
    def fit(self, X, y, sample_weight=None):
        raise RuntimeError("this fit ran")


def test_soak_refuses_before_any_fit_and_one_pass_learners_pass(monkeypatch):
    from distributed import Client, LocalCluster

    table = sd.load_table(toy_table(n=600, n_subsets=2, seed=1), label="y", subset="subset")
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False) as cluster:
        with Client(cluster) as client:
            limit = 20_000  # bytes: every whole-train-set fit of this table is too large
            monkeypatch.setattr(
                "soak_dask.run.session.worker_memory", lambda c: WorkerMemory(limit) if c else None
            )
            run = {"n_folds": 3, "measures": ["error"]}
            quiet = sd.RunOptions(client=client, progress=False)
            # A learner whose fit raises, with error_score="raise": had any fit run before the
            # check, its error would surface instead of the refusal.
            learners = {"featureless": "featureless", "logistic": FailsToFit()}
            with pytest.raises(FitMemoryError, match=r"learner 'logistic'.* kiB at its peak"):
                sd.soak(
                    table,
                    learners,
                    **run,
                    options=sd.RunOptions(client=client, progress=False, error_score="raise"),
                )
            # one-pass learners never gather their rows: nothing to refuse
            res = sd.soak(table, ["featureless", "lda"], **run, options=quiet)
            assert np.isfinite(res["error"].values).all()


def test_every_design_is_checked_from_one_count_of_its_keys(monkeypatch):
    from distributed import Client, LocalCluster

    from soak_dask.run.memory import count_fit_rows

    frame = toy_table(n=500, n_subsets=1, seed=3).drop(columns="subset")
    table = sd.load_table(frame, label="y")
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False) as cluster:
        with Client(cluster) as client:
            seen = {}

            def counted(data, plan, client, label, classes):  # what the check sees, kept
                class_rows, seen["rows"] = count_fit_rows(data, plan, client, label, classes)
                seen["data"], seen["plan"], seen["class_rows"] = data, plan, class_rows
                return class_rows, seen["rows"]

            monkeypatch.setattr("soak_dask.run.session.count_fit_rows", counted)
            monkeypatch.setattr(
                "soak_dask.run.session.worker_memory", lambda c: WorkerMemory(50_000) if c else None
            )
            quiet = sd.RunOptions(client=client, progress=False)
            run = {"outer_repeats": 3, "measures": ["error"], "options": quiet}
            with pytest.raises(FitMemoryError, match=r"learner 'logistic'"):
                sd.evaluate(table, ["logistic"], outer="bootstrap", **run)
            rows, plan, data = seen["rows"], seen["plan"], seen["data"].compute()
            for fit_id, fit in plan.fits.iterrows():  # bootstrap: the resample's weights
                mask = fit["train"].mask(data)
                weights = data[fit["weights"]].to_numpy()
                assert rows.at[fit_id, "train"] == weights[mask].sum()
                for c in ("no", "yes"):  # per class, the weights summed too
                    mine = mask & (data["y"] == c).to_numpy()
                    assert seen["class_rows"].at[fit_id, c] == weights[mine].sum()
            monkeypatch.setattr(
                "soak_dask.run.session.worker_memory", lambda c: WorkerMemory(2**34)
            )
            res = sd.evaluate(table, ["logistic"], outer="bootstrap", **run)
            assert np.isfinite(res["error"].values).all()
