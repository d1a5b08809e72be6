"""The final model's test split is scored partition by partition (run/final_scores.py): the
record equals the one a plain pandas and scikit-learn computation of the whole split makes,
whatever the partitioning, however the model was fitted."""

from __future__ import annotations

from functools import cache

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import rankdata
from sklearn import metrics
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.neighbors import KNeighborsRegressor

import soak_dask as sd
from soak_dask.hashing import salt, seeded_hash
from soak_dask.learn.measures import finish
from soak_dask.run.final import score_final
from soak_dask.run.final_scores import RowPieces, partial_of, partition_outcome, split_scores
from soak_dask.run.fitting import FitState, RunSpec
from soak_dask.run.memory import fit_bytes, outcome_bytes
from soak_dask.schema import MEASURES
from soak_dask.split.outer import reserve
from soak_dask.workers import WorkerMemory, worker_memory

FEATURES = ("x0", "x1", "x2")


def _frame(task: str, n: int = 160, seed: int = 0, n_features: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, n_features))
    df = pd.DataFrame(x, columns=[f"x{i}" for i in range(n_features)])
    signal = x[:, 0] - 0.7 * x[:, 1] + rng.normal(scale=0.8, size=n)
    df["y"] = np.where(signal > 0, "yes", "no") if task == "classification" else signal
    df["subset"] = rng.choice(["a", "b"], size=n)
    df["g"] = df["subset"] + "-" + pd.Series(rng.integers(0, 6, n)).astype(str)  # in one subset
    return df


def _reference(y, pred, score, groups, seed, task, n_boot):
    """The gathered record's numbers from the whole split: each measure by scikit-learn, and
    its 95 % interval over ``n_boot`` resamples of the rows (or of whole groups, in their order
    of first appearance) drawn from the run's seeded generator, measured with numpy."""
    if task == "classification":
        estimate = {
            "error": 100 * np.mean(pred != y),
            "accuracy": metrics.accuracy_score(y, pred),
            "balanced_accuracy": metrics.balanced_accuracy_score(y, pred),
            "auc": metrics.roc_auc_score(y, score[:, 1]),
            "log_loss": metrics.log_loss(y, score, labels=[0, 1]),
        }
    else:
        mse = metrics.mean_squared_error(y, pred)
        estimate = {"mse": mse, "rmse": np.sqrt(mse), "mae": metrics.mean_absolute_error(y, pred),
                    "r2": metrics.r2_score(y, pred)}  # fmt: skip
    rng, within = (np.random.default_rng(int(seeded_hash(seed, salt(name))[0]))
                   for name in ("test_split_interval", "test_split_interval_rows"))  # fmt: skip
    units = None
    if groups is not None:
        codes = pd.factorize(groups)[0]
        order = np.argsort(codes, kind="stable")
        units = np.split(order, np.flatnonzero(np.diff(codes[order])) + 1)
    draws = {m: [] for m in estimate}
    for _ in range(n_boot):
        if units is not None:
            rows = np.concatenate([units[u] for u in rng.integers(0, len(units), len(units))])
        elif task == "regression":
            rows = rng.integers(0, len(y), len(y))
        else:  # how many rows of each confusion cell, then which rows of it
            rows = _rows_by_cell(y * 2 + pred, rng, within)
        for m, value in _numpy_measures(y[rows], pred[rows], score, rows, task).items():
            draws[m].append(value)
    out = {}
    for m, values in draws.items():
        values = np.asarray(values)
        low, high = np.percentile(values[np.isfinite(values)], [2.5, 97.5])
        out[m] = (estimate[m], low, high)
    return out


def _rows_by_cell(cell, rng, within):
    n_cells = np.bincount(cell, minlength=4)
    drawn = rng.multinomial(len(cell), n_cells / len(cell))
    rows = [np.flatnonzero(cell == c)[within.integers(0, n_cells[c], drawn[c])] for c in range(4)]
    return np.concatenate(rows)


def _numpy_measures(y, pred, score, rows, task):
    if task == "regression":
        sse = np.sum((y - pred) ** 2)
        m2 = np.sum((y - y.mean()) ** 2)
        return {"mse": sse / len(y), "rmse": np.sqrt(sse / len(y)),
                "mae": np.mean(np.abs(y - pred)), "r2": 1 - sse / m2}  # fmt: skip
    p = score[rows]
    positive = y == 1
    n_pos, n_neg = positive.sum(), (~positive).sum()
    ranks = rankdata(p[:, 1])
    auc = (ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
    recall = [np.mean(pred[y == c] == c) for c in (0, 1) if (y == c).any()]
    eps = np.finfo(p.dtype).eps
    return {
        "error": 100 * np.mean(pred != y),
        "accuracy": np.mean(pred == y),
        "balanced_accuracy": np.mean(recall),
        "auc": auc if n_pos and n_neg else np.nan,
        "log_loss": -np.mean(np.log(np.clip(p[np.arange(len(y)), y], eps, 1 - eps))),
    }


LEARNERS = {
    ("classification", "additive"): LinearDiscriminantAnalysis,
    ("classification", "row by row"): LogisticRegression,
    ("regression", "additive"): LinearRegression,
    ("regression", "row by row"): KNeighborsRegressor,
}


@cache
def _gathered(task: str, kind: str, group: str | None, n_boot: int) -> tuple:
    """The test split, its model, the label and predicted codes and the reference record of
    the whole split (its interval over ``n_boot`` resamples): the same for every partitioning
    (shared, read only)."""
    df = _frame(task)
    train, test = df.iloc[:100], df.iloc[100:]
    X = test[list(FEATURES)].to_numpy()
    model = LEARNERS[task, kind]().fit(train[list(FEATURES)].to_numpy(), train["y"])
    pred = model.predict(X)
    if task == "classification":
        y, pred = (pd.Index(("no", "yes")).get_indexer(v) for v in (test["y"], pred))
        score = model.predict_proba(X)
    else:
        y, score = test["y"].to_numpy(), None
    groups = None if group is None else test[group].to_numpy()
    return test, model, y, pred, _reference(y, pred, score, groups, 7, task, n_boot)


@pytest.mark.parametrize("n_parts", [1, 3])
@pytest.mark.parametrize("group", [None, "g"])
@pytest.mark.parametrize("kind", ["additive", "row by row"])
@pytest.mark.parametrize("task", ["classification", "regression"])
def test_the_partition_wise_record_equals_the_gathered_one(
    task, kind, group, n_parts, few_interval_draws
):
    # the record and the reference draw the same resamples, whatever their number
    test, model, y, pred, want = _gathered(task, kind, group, few_interval_draws)
    classes = ("no", "yes") if task == "classification" else None
    run = RunSpec(FEATURES, "y", "subset", "", MEASURES[task], classes, group, seed=7)
    parts = dd.from_pandas(test, npartitions=n_parts).to_delayed()
    state = dask.delayed(FitState(model, n_train=100, started=True))
    outcomes = [dask.delayed(partition_outcome)(state, p, run) for p in parts]
    split = dask.delayed(split_scores)(outcomes, run)
    record = dask.delayed(score_final)(state, split, None, run).compute()
    assert record["message"] == "" and record["n_test"] == 60 and record["n_train"] == 100
    if task == "classification":
        np.testing.assert_array_equal(np.unpackbits(record["test_right"])[:60], pred == y)
    else:
        assert "test_right" not in record
    assert list(record["test"]) == list(run.measures)
    for m in run.measures:
        np.testing.assert_allclose(record["test"][m], want[m], rtol=1e-12, atol=1e-12, err_msg=m)


def _table(task: str, n_parts: int, n: int = 240, n_features: int = 3) -> sd.Table:
    data = dd.from_pandas(_frame(task, n, seed=3, n_features=n_features), npartitions=n_parts)
    return sd.load_table(data, label="y", subset="subset", group="g")


@pytest.mark.slow  # 3-8 s at a load of 16 on 2 cores: two evaluate runs with saved models
@pytest.mark.parametrize("task", ["classification", "regression"])
@pytest.mark.usefixtures("few_interval_draws")
def test_evaluate_scores_its_test_split_as_its_saved_models_predict_it(task, tmp_path):
    """Through ``evaluate``, a final model from statistics (lda, linear) and one fitted on its
    rows (logistic, knn): the test split's record at 1 and 3 partitions is the same, and is
    what the saved models' own predictions of the split's rows score."""
    learners = ["lda", "logistic"] if task == "classification" else ["linear", "knn"]
    run = {
        "outer_folds": 2,
        "test_split": 0.25,
        "seed": 5,
        "options": sd.RunOptions(progress=False),
    }
    got = {}
    for n_parts in (1, 3):
        table = _table(task, n_parts)
        got[n_parts] = sd.evaluate(table, learners, models=tmp_path / str(n_parts), **run)
    measures = [m for m in MEASURES[task] if f"test_{m}" in got[1]]
    assert len(measures) == len(MEASURES[task])
    for m in measures:
        np.testing.assert_allclose(got[1][f"test_{m}"], got[3][f"test_{m}"], rtol=1e-12)
    _, held, _ = reserve(_table(task, 3), 0.25, 5)
    test = held.compute()
    for name in learners:
        kd_tree = ["sklearn.metrics._dist_metrics.EuclideanDistance64",
                   "sklearn.neighbors._kd_tree.KDTree"]  # fmt: skip
        model = sd.load_model(tmp_path / "3" / f"{name}.skops", trusted=kd_tree)
        X = test[list(FEATURES)]
        if task == "classification":
            y = (test["y"] == "yes").to_numpy()
            score = np.asarray(model.predict_proba(X))[:, list(model.classes_).index("yes")]
            want = {"accuracy": metrics.accuracy_score(test["y"], model.predict(X)),
                    "auc": metrics.roc_auc_score(y, score)}  # fmt: skip
        else:
            want = {"r2": metrics.r2_score(test["y"], model.predict(X))}
        for m, value in want.items():
            assert got[3][f"test_{m}"].sel(learner=name, interval="estimate") == pytest.approx(
                value, rel=1e-12
            )
        assert int(got[3]["n_test_split"].sel(learner=name)) == len(test)


@pytest.mark.slow  # 8 s at a load of 16 on 2 cores: a LocalCluster and an evaluate run
@pytest.mark.usefixtures("few_interval_draws")
def test_a_test_split_larger_than_the_workers_memory_limit_completes(tmp_path, monkeypatch):
    """A LocalCluster whose worker's memory limit is below the test split's estimated size
    (``fit_bytes`` of its rows) but above a partition's: evaluate with a test split and saved
    models completes (before: refused, FitMemoryError)."""
    # the AUC shares this example's limit (in bytes, a few partitions' rows) was sized for
    monkeypatch.setattr("soak_dask.run.score_memory.SCORE_SHARE", 0.3)
    monkeypatch.setattr("soak_dask.run.score_memory.MERGE_COPIES", 3)
    from distributed import Client, LocalCluster

    n_features = 20
    table = _table("classification", 8, n=600, n_features=n_features)
    _, held, _ = reserve(table, 0.25, 1)
    parts = held.map_partitions(len).compute()
    n_test, largest = int(parts.sum()), int(parts.max())
    assert len(table.features) == n_features and n_test > 100 and largest < 40  # whole groups
    limit = int(fit_bytes(2 * largest, n_features) / 0.8)  # about 2 partitions' rows
    assert fit_bytes(n_test, n_features) > limit > fit_bytes(largest, n_features)
    assert outcome_bytes(n_test, 2) < 0.8 * limit
    # the limit is reported, never acted on (no spilling, pausing or restarting); the worker
    # shares this process, whose memory at rest is the test's, not the run's: counted as none
    quiet = {f"distributed.worker.memory.{k}": False for k in ("target", "spill", "pause")}
    for module in ("session", "final"):
        monkeypatch.setattr(
            f"soak_dask.run.{module}.worker_memory", lambda c: WorkerMemory(worker_memory(c).limit)
        )
    with dask.config.set(quiet):
        with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                          memory_limit=limit, dashboard_address=None) as cluster:  # fmt: skip
            with Client(cluster) as client:
                assert worker_memory(client).limit == limit
                res = sd.evaluate(
                    table,
                    ["lda"],
                    outer_folds=3,
                    test_split=0.25,
                    seed=1,
                    models=tmp_path / "m",
                    options=sd.RunOptions(client=client, progress=False),
                )
    assert int(res["n_test_split"].item()) == n_test
    assert np.isfinite(res["test_error"].values).all()
    assert (tmp_path / "m" / "lda.skops").exists()


@settings(max_examples=25, deadline=None)
@given(
    k=st.integers(2, 4),
    n=st.integers(1, 60),
    seed=st.integers(0, 10_000),
    one_column=st.booleans(),
)
def test_row_pieces_of_any_resample_equal_the_resampled_rows_pieces(k, n, seed, one_column):
    # A resample's pieces from each row's share (no re-sorting) are those of its rows gathered.
    rng = np.random.default_rng(seed)
    y, pred = rng.integers(0, k, n), rng.integers(0, k, n)
    raw = np.round(rng.random((n, k)), 1) + 1e-3  # ties among the scores
    proba = raw / raw.sum(axis=1, keepdims=True)
    if one_column and k == 2:
        proba = proba[:, 1:]  # binary decision scores
    run = RunSpec(FEATURES, "y", "subset", "", tuple(MEASURES["classification"]),
                  classes=tuple(range(k)))  # fmt: skip
    pieces = RowPieces.of(y, pred, proba, run)
    rows = rng.integers(0, n, n)
    expected = finish(run.measures, partial_of(run, y[rows], pred[rows], proba[rows]))
    got = finish(run.measures, pieces.of_rows(rows))
    for m in run.measures:
        assert got[m] == pytest.approx(expected[m], rel=1e-12, nan_ok=True), m


@pytest.mark.parametrize(
    ("k", "measures", "group"),
    [
        (2, ("error",), None),  # the confusion cells' counts and a bit a row
        (2, ("error",), "g"),  # whole groups resampled: the rows' codes
        (2, tuple(MEASURES["classification"]), None),
        (5, ("auc", "log_loss"), None),
    ],
)
def test_the_joined_outcomes_peak_stays_under_their_estimate(k, measures, group, monkeypatch):
    import tracemalloc

    from soak_dask.run import final_scores
    from soak_dask.run.final import score_columns
    from soak_dask.run.final_scores import Outcome, counts_only

    monkeypatch.setattr(final_scores, "N_BOOT", 5)  # a resample's memory is freed before the next
    run = RunSpec(FEATURES, "y", "subset", "", measures, classes=tuple(range(k)), group=group,
                  seed=3)  # fmt: skip
    rng, n, columns, counts = (
        np.random.default_rng(0),
        200_000,
        score_columns(run),
        counts_only(run),
    )
    outcomes = []
    for _ in range(4):
        y, pred = (rng.integers(0, k, n // 4).astype(np.int32) for _ in range(2))
        proba = rng.dirichlet(np.ones(k), n // 4) if columns else None
        if counts:
            cells = np.bincount(y * k + pred, minlength=k * k)
            outcomes.append(Outcome(n // 4, cells=cells, right=y == pred))
        elif group:
            groups, uniques = pd.factorize(rng.integers(0, 1000, n // 4))
            outcomes.append(Outcome(n // 4, y, pred, proba, groups, uniques))
        else:
            outcomes.append(Outcome(n // 4, y, pred, proba))
    held = sum(
        sum(getattr(o, a).nbytes for a in ("y", "pred", "proba", "groups", "right")
            if getattr(o, a) is not None)
        for o in outcomes
    )  # fmt: skip
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        split_scores(outcomes, run)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert held + peak < outcome_bytes(n, columns, counts)


@pytest.mark.parametrize("n_parts", [1, 4])
def test_a_split_scored_by_its_cells_counts_equals_the_one_scored_by_its_rows(n_parts):
    """Confusion measures without groups: each partition returns its cells' counts and a bit a
    row, not its rows; the record's estimates, intervals and right/wrong bits are those of the
    rows scored with AUC and log loss beside them (the cells' counts are drawn first)."""
    from soak_dask.run.final_scores import counts_only, interval

    df = _frame("classification", n=300, seed=4)
    train, test = df.iloc[:100], df.iloc[100:]
    model = LogisticRegression().fit(train[list(FEATURES)].to_numpy(), train["y"])
    confusion = ("error", "accuracy", "balanced_accuracy")
    run = RunSpec(FEATURES, "y", "subset", "", confusion, ("no", "yes"), seed=11)
    assert counts_only(run)
    state = FitState(model, n_train=100, started=True)
    cuts = np.linspace(0, len(test), n_parts + 1).astype(int)
    parts = [test.iloc[a:b] for a, b in zip(cuts[:-1], cuts[1:], strict=True)]
    outcomes = [partition_outcome(state, p, run) for p in parts]
    assert all(
        o.y is None and o.cells.sum() == len(p) for o, p in zip(outcomes, parts, strict=True)
    )
    record = split_scores(outcomes, run)
    every = RunSpec(FEATURES, "y", "subset", "", MEASURES["classification"], ("no", "yes"), seed=11)
    y = pd.Index(["no", "yes"]).get_indexer(test["y"])
    pred = pd.Index(["no", "yes"]).get_indexer(model.predict(test[list(FEATURES)].to_numpy()))
    rows = interval(y, pred, model.predict_proba(test[list(FEATURES)].to_numpy()), every)
    for m in confusion:
        assert record["test"][m] == pytest.approx(rows[m], rel=1e-12), m
    np.testing.assert_array_equal(np.unpackbits(record["test_right"])[: len(y)], pred == y)


def test_the_cells_interval_is_the_bootstrap_of_a_proportion():
    """At 20,000 rows and 10 % error the bootstrap interval of the error is the normal one,
    ±1.96 √(p(1-p)/n), within its Monte Carlo noise; another seed gives other draws."""
    from soak_dask.run.final_scores import cell_interval

    run = RunSpec(FEATURES, "y", "subset", "", ("error",), (0, 1), seed=2)
    cells = np.array([9_000, 1_000, 1_000, 9_000])  # 2,000 of 20,000 rows wrong
    estimate, low, high = cell_interval(cells, run)["error"]
    half = 100 * 1.96 * np.sqrt(0.1 * 0.9 / 20_000)
    assert estimate == 10.0
    assert low == pytest.approx(10 - half, abs=0.1 * half)
    assert high == pytest.approx(10 + half, abs=0.1 * half)
    other = RunSpec(FEATURES, "y", "subset", "", ("error",), (0, 1), seed=3)
    assert cell_interval(cells, other)["error"] != (estimate, low, high)
