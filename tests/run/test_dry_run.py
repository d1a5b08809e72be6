"""``dry_run`` and ``--dry-run``: a run's cost, known before any fit, equals what the run does."""

from __future__ import annotations

from functools import partial

import numpy as np
import pandas as pd
import pytest
from dask.callbacks import Callback
from sklearn.linear_model import LogisticRegression

import soak_dask as sd
from soak_dask.app import cli
from soak_dask.run.memory import fit_bytes
from soak_dask.workers import FitMemoryError, WorkerMemory

from ..conftest import toy_table

RUN = {"measures": ["error"]}


class FailsToFit(LogisticRegression):
    def fit(self, X, y, sample_weight=None):
        raise RuntimeError("this fit ran")


class Keys(Callback):
    """The keys of every task Dask's local scheduler starts."""

    def __init__(self) -> None:
        super().__init__()
        self.keys: list[str] = []

    def _pretask(self, key, dsk, state):
        self.keys.append(str(key))


@pytest.fixture(scope="module")
def table():
    return sd.load_table(toy_table(n=600, n_subsets=2, seed=1), label="y", subset="subset")


def pair_rows(res) -> pd.DataFrame:
    """(fit_id, learner) -> n_train of a result, as its cells record them."""
    frame = res[["fit_id", "n_train"]].to_dataframe().reset_index()
    return frame.drop_duplicates(["fit_id", "learner"]).set_index(["fit_id", "learner"])


def check_against(cost, res) -> None:
    assert cost.n_fits == res.attrs["n_fits"]
    assert cost.n_train_sets == res.attrs["n_distinct_train_sets"]
    predicted = cost.fits.set_index(["fit_id", "learner"])["train"]
    actual = pair_rows(res)["n_train"].reindex(predicted.index)
    assert (predicted == actual).all()  # every fit's train rows, whatever its strategy


def test_soak_cost_is_what_the_run_does_and_no_fit_runs(table):
    learners = {"featureless": "featureless", "lda": "lda", "logistic": FailsToFit()}
    with Keys() as seen:
        costs = sd.dry_run(
            sd.soak,
            table,
            learners,
            n_folds=3,
            **RUN,
            options=sd.RunOptions(progress=False, error_score="raise"),
        )
    assert seen.keys  # the dry run computed its keys and counts on this scheduler
    # No fit, batch, prediction or scoring task started (the learner's fit would have raised).
    assert not [k for k in seen.keys if "soak-" in k], seen.keys
    (cost,) = costs
    assert cost.design == "soak" and not cost.refused and cost.memory is None
    kinds = cost.fits.groupby("learner")["strategy"].unique().map(list).to_dict()
    assert kinds == {
        "featureless": ["one-pass statistics"],
        "lda": ["one-pass statistics"],
        "logistic": ["whole train set"],
    }
    whole = cost.fits[cost.fits["learner"] == "logistic"]
    assert (whole["gathered"] == whole["train"]).all()  # its test rows scored where they are
    assert cost.peak_bytes == fit_bytes(whole["gathered"].max(), 3)
    assert (cost.fits.loc[cost.fits["learner"] != "logistic", "gathered"] == 0).all()
    # one pass of block statistics, one per logistic train set, one scoring every model
    assert cost.n_passes == 2 + cost.n_train_sets
    assert "soak: 27 fits (9 train sets × 3 learners)" in str(cost)
    assert set(costs.table()["learner"]) == set(learners)
    res = sd.soak(
        table,
        ["featureless", "lda", "logistic"],
        n_folds=3,
        **RUN,
        options=sd.RunOptions(progress=False),
    )
    check_against(cost, res)


@pytest.mark.slow
def test_the_passes_are_the_sweeps_the_run_makes(monkeypatch):
    """Each pass is a task on every partition: count those of the real run."""
    from soak_dask.run import executor, strategies

    calls = {}

    def counted(owner, name):
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):
            calls[name] = calls.get(name, 0) + 1
            return original(*args, **kwargs)

        monkeypatch.setattr(owner, name, wrapper)

    # Run on each partition: a whole-train-set fit's rows, the one-pass fits' scores (by
    # (subset, fold) cell or by selection).
    per_partition = ["select_rows", "score_partition", "score_selections"]
    # Called once per pass: the block or per-fit statistics, the check that the features are
    # finite.
    per_pass = ["block_stats", "fit_stats", "check_features"]
    for name in per_partition + per_pass:
        counted(executor if name == "check_features" else strategies, name)
    frame = toy_table(n=600, n_subsets=2, seed=1)
    table = sd.load_table(frame, label="y", subset="subset", rows_per_partition=150)
    n_parts = table.data.npartitions
    assert n_parts > 1
    unpersisted = sd.RunOptions(persist=False, progress=False)
    for run in (
        partial(sd.soak, table, ["featureless", "logistic"], n_folds=3, **RUN, options=unpersisted),
        partial(sd.evaluate, table, ["logistic", "lda"], outer_folds=3, **RUN, options=unpersisted),
    ):
        calls.clear()
        (cost,) = sd.dry_run(run)
        assert not calls  # the dry run swept nothing for the fits
        run()
        swept = sum(calls.get(name, 0) for name in per_partition) / n_parts
        assert swept + sum(calls.get(name, 0) for name in per_pass) == cost.n_passes


def test_capped_rows_are_what_each_task_gathers(table):
    (cost,) = sd.dry_run(
        sd.soak,
        table,
        ["logistic"],
        n_folds=3,
        **RUN,
        options=sd.RunOptions(progress=False, max_train_rows=150),
    )
    assert (cost.fits["gathered"] == cost.fits["train"].clip(upper=150)).all()
    res = sd.soak(
        table,
        ["logistic"],
        n_folds=3,
        **RUN,
        options=sd.RunOptions(progress=False, max_train_rows=150),
    )
    assert (pair_rows(res)["n_train"] == cost.fits["train"].clip(upper=150).to_numpy()).all()


@pytest.mark.parametrize("outer", [{"outer": "cv", "outer_folds": 4}, {"outer": "bootstrap"}])
def test_evaluate_cost_is_what_the_run_does(table, outer):
    design = {**outer, "outer_repeats": 3, **RUN} if outer["outer"] != "cv" else {**outer, **RUN}
    quiet = sd.RunOptions(progress=False)
    (cost,) = sd.dry_run(sd.evaluate, table, ["lda", "logistic"], **design, options=quiet)
    strategy = cost.fits.set_index("learner")["strategy"]
    assert set(strategy["lda"]) == {"one-pass statistics"}
    assert set(strategy["logistic"]) == {"whole train set"}
    assert any("final models" in note for note in cost.notes)
    check_against(cost, sd.evaluate(table, ["lda", "logistic"], **design, options=quiet))


def test_every_entry_point_stops_at_its_plan(table, tmp_path):
    three = sd.load_table(toy_table(n=450, n_subsets=3, seed=2), label="y", subset="subset")
    checkpoint = tmp_path / "ck"
    (matrix,) = sd.dry_run(
        sd.transfer,
        three,
        ["lda"],
        n_folds=3,
        **RUN,
        options=sd.RunOptions(progress=False, checkpoint=checkpoint),
    )
    assert matrix.design == "transfer" and matrix.n_fits == 9
    (search,) = sd.dry_run(
        sd.search_subsets,
        three,
        ["lda", "logistic"],
        n_folds=3,
        options=sd.RunOptions(checkpoint=checkpoint, progress=False),
    )
    assert search.design == "search_subsets" and search.part is not None
    assert "first round" in str(search)
    design = sd.SplitTrials(n_repeats=3, n_folds=3)
    (trials,) = sd.dry_run(sd.split_sensitivity, table, "logistic", design)
    assert trials.n_fits == 4 * 3 * (3 + 1)  # ratios × trials × (K + the whole train part)
    rows = sd.load_table(toy_table(n=300, n_subsets=1, seed=3).drop(columns="subset"), label="y")
    methods = ["random", "stratified"]
    (sampling,) = sd.dry_run(
        sd.compare_sampling,
        rows,
        "lda",
        sd.SamplingSplits(methods, n_repeats=3),
        options=sd.RunOptions(progress=False),
    )
    assert sampling.design == "compare_sampling" and sampling.n_fits == len(methods) + 3
    assert not checkpoint.exists()  # a dry run writes no checkpoint
    with pytest.raises(ValueError, match="reached no plan"):
        sd.dry_run(sd.load_table, rows.data, label="y")


@pytest.mark.slow
def test_the_predicted_refusal_is_the_real_one(table, monkeypatch):
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False) as cluster:
        with Client(cluster) as client:
            run = {"outer_folds": 3, **RUN}
            quiet = sd.RunOptions(client=client, progress=False)
            raising = sd.RunOptions(client=client, progress=False, error_score="raise")
            monkeypatch.setattr(
                "soak_dask.run.session.worker_memory", lambda c: WorkerMemory(50_000) if c else None
            )
            learners = {"logistic": FailsToFit()}
            (cost,) = sd.dry_run(sd.evaluate, table, learners, **run, options=raising)
            assert cost.refused and cost.over_limit and cost.memory == WorkerMemory(50_000)
            # Nothing persisted by the dry run: at most its row counts, still being released.
            held = [key for keys in client.has_what().values() for key in keys]
            assert all(key.startswith("_count_part") for key in held), held
            assert "REFUSED before any fit" in str(cost)
            with pytest.raises(FitMemoryError) as err:
                sd.evaluate(table, learners, **run, options=raising)
            assert cost.refusal == str(err.value)
            monkeypatch.setattr(
                "soak_dask.run.session.worker_memory", lambda c: WorkerMemory(2**34)
            )
            (cost,) = sd.dry_run(sd.evaluate, table, ["logistic"], **run, options=quiet)
            assert not cost.refused and not cost.over_limit
            # one repeat of K-fold knows its blocks' rows from the strata's sizes; repeats'
            # joint counts are counted in a pass of their own
            assert "counting each fit's rows" not in [what for _, what in cost.passes]
            (again,) = sd.dry_run(sd.evaluate, table, ["logistic"], outer_repeats=2,
                                  **{**run, "outer": "repeated_cv"}, options=quiet)  # fmt: skip
            assert again.passes[0] == (1, "counting each fit's rows")
            assert np.isfinite(
                sd.evaluate(table, ["logistic"], **run, options=quiet)["error"]
            ).all()


@pytest.mark.parametrize(
    "command",
    [
        ["run", "--folds", "3", "--learners", "featureless,logistic"],
        ["evaluate", "--outer-folds", "3", "--learners", "logistic"],
        ["transfer", "--n-folds", "3", "--learners", "lda"],
        ["split-sensitivity", "--n-repeats", "3", "--n-folds", "3"],
        ["compare-sampling", "--n-repeats", "3", "--learners", "lda", "--methods", "random"],
    ],
)
@pytest.mark.parametrize("given_out", [True, False], ids=["out", "no-out"])
def test_cli_dry_run_prints_the_cost_and_writes_nothing(tmp_path, capsys, command, given_out):
    from distributed import LocalCluster

    frame = toy_table(n=450, n_subsets=3, seed=4)
    frame.to_parquet(data := tmp_path / "table.parquet")
    out = tmp_path / "out"
    name, *flags = command
    subsets = name in ("run", "transfer")
    table = ["--label", "y", *(["--subset", "subset"] if subsets else ["--exclude", "subset"])]
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False) as cluster:
        where = ["--out", out] if given_out else []  # a dry run writes nothing: --out optional
        argv = [name, data, *table, *flags, *where, "--no-progress", "--dry-run"]
        code = cli.main([str(a) for a in [*argv, "--scheduler", cluster.scheduler_address]])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert f"soak {name} --dry-run: nothing was fitted or written" in printed
    assert "fits (" in printed and "worker memory: " in printed
    if name == "transfer":  # the matrix and the search's first round
        assert "transfer: " in printed and "search_subsets (part" in printed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table.parquet"]  # no out, checkpoint
