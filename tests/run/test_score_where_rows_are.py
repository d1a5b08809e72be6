"""A fit made on its gathered train rows (``WholeTrainSet``, the row-capped fits too) returns
its model, and its test rows are scored partition by partition where they are: no task holds a
test set, the memory check counts the train rows alone, and the scores are scikit-learn's on
the same train and test rows."""

from __future__ import annotations

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from dask.callbacks import Callback
from dask.utils import key_split
from sklearn import metrics
from sklearn.base import clone

import soak_dask as sd
from soak_dask.learn.builtin import builtin_learner
from soak_dask.run.memory import fit_bytes
from soak_dask.run.rowcap import capped
from soak_dask.workers import WorkerMemory, worker_memory

N_FEATURES = 20
CLASSES = ("a", "b")
TIMINGS = ["fit_seconds", "predict_seconds"]


def _frame(n: int = 3000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        rng.normal(size=(n, N_FEATURES)), columns=[f"x{i}" for i in range(N_FEATURES)]
    )
    df["y"] = np.where(df["x0"] + 0.5 * df["x1"] + rng.normal(size=n) > 0, "a", "b")
    df["subset"] = np.where(np.arange(n) % 2, "s1", "s0")
    df["fold"] = np.arange(n) % 3 + 1
    return df


def _table(df: pd.DataFrame, npartitions: int) -> sd.Table:
    data = dd.from_pandas(df, npartitions=npartitions)
    return sd.load_table(data, label="y", subset="subset", fold="fold")


def _reference(df: pd.DataFrame, res, learner: str, max_rows: int | None) -> None:
    """Each cell of ``res`` equals scikit-learn's ``learner`` fitted in memory on the cell's
    train rows (capped at ``max_rows`` as ``rowcap.capped`` draws them) and scored on its
    test rows."""
    features = [f"x{i}" for i in range(N_FEATURES)]
    subsets = {"same": lambda s: [s], "other": lambda s: [o for o in ("s0", "s1") if o != s]}
    for s in ("s0", "s1"):
        for fold in (1, 2, 3):
            test = df[(df["subset"] == s) & (df["fold"] == fold)]
            for train_type in ("same", "other", "all"):
                chosen = subsets.get(train_type, lambda s: ["s0", "s1"])(s)
                train = df[df["subset"].isin(chosen) & (df["fold"] != fold)]
                if max_rows is not None:
                    rows = tuple(int((train["y"] == c).sum()) for c in CLASSES)
                    train = capped(train, max_rows, rows, 1, "y", CLASSES)
                model = clone(builtin_learner(learner, "classification"))
                model.fit(train[features].to_numpy(np.float64), train["y"].to_numpy())
                X = test[features].to_numpy(np.float64)
                score = model.predict_proba(X)[:, list(model.classes_).index("b")]
                cell = res.sel(learner=learner, test_subset=s, fold=fold, train_type=train_type)
                assert int(cell["n_train"]) == len(train)
                assert int(cell["n_test"]) == len(test)
                error = 100.0 * np.mean(model.predict(X) != test["y"].to_numpy())
                assert float(cell["error"]) == error
                auc = metrics.roc_auc_score(test["y"] == "b", score)
                assert float(cell["auc"]) == pytest.approx(auc, rel=1e-12)


class LargestInput(Callback):
    """The most rows any task of Dask's local scheduler receives in one of its inputs."""

    def __init__(self) -> None:
        super().__init__()
        self.most = 0

    def _pretask(self, key, dsk, state):
        for dep in state["dependencies"].get(key, ()):
            value = state["cache"].get(dep)
            if isinstance(value, pd.DataFrame) and "x0" in value.columns:
                self.most = max(self.most, len(value))


@pytest.mark.slow
def test_a_whole_train_set_fit_scores_as_scikit_learn_in_memory():
    """Before: fitted and scored in one task holding its test blocks; the scores are the
    same, scikit-learn's on the same rows."""
    df = _frame()
    res = sd.soak(
        _table(df, 5),
        ["logistic"],
        measures=["error", "auc"],
        options=sd.RunOptions(progress=False),
    )
    _reference(df, res, "logistic", None)


@pytest.mark.slow
def test_a_capped_fit_holds_no_test_set_and_scores_as_scikit_learn():
    """Under max_train_rows, no task receives more rows than a partition or a capped train
    set's sample: a test block (500 or more rows here) is never gathered."""
    df = _frame()
    with LargestInput() as seen, dask.config.set(scheduler="sync"):
        res = sd.soak(
            _table(df, 12),
            ["logistic"],
            measures=["error", "auc"],
            options=sd.RunOptions(max_train_rows=200, progress=False),
        )
    assert 250 <= seen.most < 500  # a partition (250 rows) or a sample of about 200 + margin
    _reference(df, res, "logistic", 200)


@pytest.mark.slow
def test_scores_are_the_same_whatever_the_partitions():
    df = _frame(n=900, seed=3)
    runs = [
        sd.soak(
            _table(df, n),
            ["logistic", "decision_tree"],
            measures=["error", "auc", "log_loss"],
            options=sd.RunOptions(max_train_rows=120, progress=False),
        )  # fmt: skip
        for n in (1, 4, 9)
    ]
    first = runs[0].drop_vars(TIMINGS)
    for res in runs[1:]:
        # The tree's scores are identical (its class shares are the same in any batch of
        # rows); logistic regression's class scores come from BLAS, whose result for a row
        # may differ in the last bit with the rows predicted beside it: its log loss within
        # that, its counts and AUC identical.
        res = res.drop_vars(TIMINGS).drop_attrs()
        tree = {"learner": "decision_tree"}
        xr.testing.assert_identical(res.sel(tree), first.drop_attrs().sel(tree))
        for var in ("error", "auc", "n_train", "n_test"):
            xr.testing.assert_identical(res[var], first[var].drop_attrs())
        np.testing.assert_allclose(res["log_loss"], first["log_loss"], rtol=1e-14)


class TaskNames(Callback):
    """How many tasks of each name (``key_split``) Dask's local scheduler ran."""

    def __init__(self) -> None:
        super().__init__()
        self.names: dict[str, int] = {}

    def _pretask(self, key, dsk, state):
        self.names[key_split(key)] = self.names.get(key_split(key), 0) + 1


@pytest.mark.parametrize("npartitions", [1, 3])
def test_a_fit_of_a_one_partition_table_selects_its_rows_in_its_own_task(npartitions):
    """With the table in one partition, each fit's task selects its train rows in it: no task
    apart selects them (on a cluster it would run where the partition is, behind the fits
    there, while another worker waited for the rows). With more partitions, a task per
    partition and train set selects them next to the data, as before. The scores are the same
    either way (``test_scores_are_the_same_whatever_the_partitions``)."""
    with TaskNames() as seen, dask.config.set(scheduler="sync"):
        sd.soak(
            _table(_frame(n=600), npartitions),
            ["decision_tree", "lda"],
            options=sd.RunOptions(progress=False),
        )
    # The tree's fits: 3 folds × 3 distinct train sets (s0's rows, s1's, both); LDA is fitted
    # from one pass of statistics.
    assert seen.names["soak-fit"] == 9
    assert seen.names.get("select_rows", 0) == (0 if npartitions == 1 else 9 * npartitions)


@pytest.mark.slow  # a LocalCluster of two workers: about 6 s on 2 busy cores
def test_a_capped_fit_whose_test_set_exceeded_the_gather_check_completes(monkeypatch):
    """Workers whose memory for a task holds a capped train set but not its test rows beside
    it: before, the run was refused up front ("... and 1,000 test rows, gathers 1,200 rows");
    now it completes, scored as scikit-learn scores the same rows in memory."""
    from distributed import Client, LocalCluster

    df = _frame()
    cap = 200
    (cost,) = sd.dry_run(
        sd.soak,
        _table(df, 12),
        ["logistic"],
        measures=["error", "auc"],
        options=sd.RunOptions(max_train_rows=cap, progress=False),
    )
    largest_test = int(cost.fits["test"].max())
    assert (cost.fits["gathered"] == cap).all()  # the train sample alone, never its test rows
    free = fit_bytes(2 * cap, N_FEATURES)
    assert fit_bytes(cap + largest_test, N_FEATURES) > free  # what the old check gathered
    limit = int(free / 0.8) + 2
    # The limit is reported, never acted on (no spilling, pausing or restarting); the workers
    # share this process, whose memory at rest is the test's, not the run's: counted as none.
    quiet = {f"distributed.worker.memory.{k}": False for k in ("target", "spill", "pause")}
    monkeypatch.setattr(
        "soak_dask.run.session.worker_memory", lambda c: WorkerMemory(worker_memory(c).limit)
    )
    with dask.config.set(quiet):
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                          memory_limit=limit, dashboard_address=None) as cluster:  # fmt: skip
            with Client(cluster) as client:
                res = sd.soak(
                    _table(df, 12),
                    ["logistic"],
                    measures=["error", "auc"],
                    options=sd.RunOptions(max_train_rows=cap, client=client, progress=False),
                )
    _reference(df, res, "logistic", cap)
    # a cap the workers cannot hold is still refused up front, by its train rows alone
    with pytest.raises(sd.FitMemoryError, match=r"its train rows .* gathers 500 rows"):
        with dask.config.set(quiet):
            with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                              memory_limit=limit, dashboard_address=None) as cluster:  # fmt: skip
                with Client(cluster) as client:
                    sd.soak(
                        _table(df, 12),
                        ["logistic"],
                        measures=["error", "auc"],
                        options=sd.RunOptions(max_train_rows=500, client=client, progress=False),
                    )
