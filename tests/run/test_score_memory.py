"""One-pass scoring's AUC pieces (run.score_memory): a pass that cannot hold every test row's
score is refused before any fit, with its numbers and the measures without AUC."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import soak_dask as sd
from soak_dask.run import strategies
from soak_dask.run.memory import FitMemoryError
from soak_dask.run.score_memory import (
    AUC_ROW_BYTES,
    MERGE_COPIES,
    SCORE_SHARE,
    auc_columns,
    check_score_memory,
)

from ..conftest import toy_table


def test_the_estimate_and_the_refusal_name_the_numbers():
    rows = pd.Series({0: 1000, 1: 1000, 2: 1000})
    learners = {0: ["lda"], 1: ["lda"], 2: ["lda", "featureless"]}  # 4,000 rows of pieces
    assert auc_columns(["error", "auc"], ["a", "b"]) == 1
    assert auc_columns(["error", "auc"], ["a", "b", "c"]) == 3
    assert auc_columns(["error"], ["a", "b"]) == 0 and auc_columns(["mse"], None) == 0
    total = 4000 * AUC_ROW_BYTES  # 64,000 bytes held at once
    largest = 2000 * AUC_ROW_BYTES * MERGE_COPIES  # fit 2's block, both learners: 96,000
    fits = {"measures": ["error", "auc"], "classes": ["a", "b"]}
    enough = int(largest / SCORE_SHARE) + 1  # one worker holds the largest merge, and all
    check_score_memory(rows, learners, limit=enough, n_workers=1, **fits)
    with pytest.raises(FitMemoryError) as err:  # all the pieces do not fit the two workers
        check_score_memory(rows, learners, limit=int(total / SCORE_SHARE / 2) - 10,
                           n_workers=2, **fits)  # fmt: skip
    text = str(err.value)
    assert "4,000 test rows × 1 AUC column(s) × 16 bytes" in text and "4 fits" in text
    assert "measures=['error']" in text and "(2 × " in text
    with pytest.raises(FitMemoryError, match="largest block's merge"):  # whatever the workers
        check_score_memory(rows, learners, limit=enough - 1000, n_workers=100, **fits)
    check_score_memory(rows, learners, ["error"], ["a", "b"], limit=1, n_workers=1)


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
                "soak_dask.run.session.worker_memory_limit", lambda c: 20_000 if c else None
            )
            both = {"measures": ["error", "auc"], "client": client, "progress": False}
            (cost,) = sd.dry_run(run, **both)  # the dry run shows the refusal
            assert cost.refused and "AUC is scored exactly" in cost.refusal
            real = strategies.OnePass.tasks
            monkeypatch.setattr(strategies.OnePass, "tasks", lambda *a: pytest.fail("a fit ran"))
            with pytest.raises(FitMemoryError, match=r"AUC is scored exactly.*measures=\['error'"):
                run(**both)
            monkeypatch.setattr(strategies.OnePass, "tasks", real)
            res = run(measures=["error"], client=client, progress=False)
            assert np.isfinite(res["error"].values).all()
