"""Resume: a stopped run computes only its missing fits and ends identical to an unstopped one."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from contextlib import closing

import pytest
import xarray as xr

import soak_dask as sd
from soak_dask import engine

from .conftest import toy_table
from .test_engine import FITS, CountingClassifier

TIMINGS = ["fit_seconds", "predict_seconds"]


def _table():
    return sd.load_table(toy_table(n=300, n_subsets=3, seed=8), label="y", subset="subset")


def test_resume_computes_only_missing_fits(tmp_path, monkeypatch):
    table = _table()
    learners = {"count": CountingClassifier(), "base": "featureless"}
    full = sd.soak(table, learners, n_folds=4, progress=False)
    total = full.attrs["n_fits"]

    real_run = engine._run

    def dies_after_ten(tasks, client, progress):
        with closing(real_run(tasks, client, progress)) as results:
            for i, result in enumerate(results):
                if i == 10:
                    raise KeyboardInterrupt  # the client is killed mid-run
                yield result

    monkeypatch.setattr(engine, "_run", dies_after_ten)
    with pytest.raises(KeyboardInterrupt):
        sd.soak(table, learners, n_folds=4, progress=False, checkpoint=tmp_path / "ck")
    monkeypatch.setattr(engine, "_run", real_run)
    fitted = len(FITS)
    time.sleep(0.5)
    assert len(FITS) == fitted  # nothing went on fitting behind the stopped run

    def learners_done() -> list[str]:
        tasks = [json.loads(f.read_text()) for f in (tmp_path / "ck").glob("task-*")]
        return [learner for _, learner in {(t["fit_id"], t["learner"]) for t in tasks}]

    before = learners_done()
    assert 0 < len(before) < total  # stopped mid-run (one-pass fits are scored per test block)

    FITS.clear()
    resumed = sd.soak(table, learners, n_folds=4, progress=False, checkpoint=tmp_path / "ck")
    # Only the counting learner's missing fits ran again.
    assert len(FITS) == total // 2 - before.count("count") > 0
    assert len(learners_done()) == total
    xr.testing.assert_identical(resumed.drop_vars(TIMINGS), full.drop_vars(TIMINGS))


def test_other_settings_are_refused(tmp_path):
    table = _table()
    sd.soak(table, "featureless", n_folds=3, progress=False, checkpoint=tmp_path / "ck")
    with pytest.raises(ValueError, match=r"other settings \(seed: 1 then, 2 now"):
        sd.soak(table, "featureless", n_folds=3, seed=2, progress=False, checkpoint=tmp_path / "ck")
    with pytest.raises(ValueError, match="learners"):
        sd.soak(table, "logistic", n_folds=3, progress=False, checkpoint=tmp_path / "ck")
    other_data = sd.load_table(toy_table(n=300, n_subsets=3, seed=9), label="y", subset="subset")
    with pytest.raises(ValueError, match="data"):
        sd.soak(other_data, "featureless", n_folds=3, progress=False, checkpoint=tmp_path / "ck")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="not a SOAK checkpoint"):
        sd.soak(table, "featureless", n_folds=3, progress=False, checkpoint=tmp_path / "busy")


SCRIPT = textwrap.dedent(
    """
    import sys, time
    import numpy as np
    from sklearn.base import BaseEstimator, ClassifierMixin
    from sklearn.dummy import DummyClassifier
    sys.path.insert(0, {root!r})
    import soak_dask as sd
    from tests.conftest import toy_table

    class SlowClassifier(ClassifierMixin, BaseEstimator):
        def fit(self, X, y):
            time.sleep(0.15)
            self.model_ = DummyClassifier().fit(X, y)
            self.classes_ = self.model_.classes_
            return self

        def predict(self, X):
            return self.model_.predict(X)

    table = sd.load_table(toy_table(n=300, n_subsets=3, seed=8), label="y", subset="subset")
    res = sd.soak(table, {{"slow": SlowClassifier()}}, n_folds=5, progress=False,
                  checkpoint=sys.argv[1])
    sd.save_results(res, sys.argv[2])
    """
)


def test_killed_process_resumes(tmp_path):
    root = str(__import__("pathlib").Path(__file__).resolve().parents[1])
    script = tmp_path / "run.py"
    script.write_text(SCRIPT.format(root=root))
    ck = tmp_path / "ck"
    proc = subprocess.Popen([sys.executable, str(script), str(ck), str(tmp_path / "a.nc")])
    deadline = time.time() + 60
    while len(list(ck.glob("task-*.json"))) < 5 and time.time() < deadline:
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    n_before = len(list(ck.glob("task-*.json")))
    assert 5 <= n_before < 35  # killed mid-run (35 distinct fits in all)
    subprocess.run(
        [sys.executable, str(script), str(ck), str(tmp_path / "b.nc")], check=True, timeout=120
    )
    subprocess.run(
        [sys.executable, str(script), str(tmp_path / "ck2"), str(tmp_path / "c.nc")],
        check=True,
        timeout=120,
    )
    resumed = sd.open_results(tmp_path / "b.nc").drop_vars(TIMINGS)
    xr.testing.assert_identical(resumed, sd.open_results(tmp_path / "c.nc").drop_vars(TIMINGS))
