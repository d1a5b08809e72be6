"""``checkpoint=`` means the same in every entry point, as in ``soak``: a run given the
checkpoint of an interrupted one computes only the missing fits and ends identical to an
uninterrupted run; other settings or other data are refused. (Resume in a new process after
kill -9: tests/app/test_resume_cli.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import xarray as xr

import soak_dask as sd
from soak_dask.run.session import remove_run_checkpoint

from ..conftest import toy_table
from .test_soak import FITS, CountingClassifier

TIMINGS = ["fit_seconds", "predict_seconds", "search_seconds"]
LEARNERS = {"count": CountingClassifier(), "base": "featureless"}
RUNS = {
    "evaluate": lambda t, **kw: sd.evaluate(t, LEARNERS, outer_folds=3, **kw),
    "transfer": lambda t, **kw: sd.transfer(t, LEARNERS, n_folds=3, **kw),
    "search_subsets": lambda t, **kw: sd.search_subsets(t, LEARNERS, n_folds=3, **kw),
    # The seed of these two is their design's.
    "split_sensitivity": lambda t, seed=1, **kw: sd.split_sensitivity(
        t,
        {"count": CountingClassifier()},
        design=sd.SplitTrials(ratios=(0.5, 0.7), n_repeats=3, n_folds=3, seed=seed),
        **kw,
    ),
    "compare_sampling": lambda t, seed=1, **kw: sd.compare_sampling(
        t,
        LEARNERS,
        design=sd.SamplingSplits(methods=["random", "stratified"], n_repeats=3, seed=seed),
        **kw,
    ),
}


def _table(seed: int = 5) -> sd.Table:
    return sd.load_table(toy_table(n=180, n_subsets=3, seed=seed), label="y", subset="subset")


def _tasks(checkpoint: Path, learner: str) -> list[Path]:
    """The task files of ``learner`` in a checkpoint and its parts."""
    files = sorted(checkpoint.rglob("task-*.json"))
    # By the file's own learner: another's records may name it (the pairs of the Wald CV test).
    return [p for p in files if json.loads(p.read_text())["learner"] == learner]


def _plain(ds: xr.Dataset) -> xr.Dataset:
    return ds.drop_vars(TIMINGS, errors="ignore").drop_attrs()


@pytest.mark.slow
@pytest.mark.parametrize("name", list(RUNS))
def test_a_resumed_run_fits_only_what_is_missing_and_ends_identical(name, tmp_path):
    table, ck, run = _table(), tmp_path / "ck", RUNS[name]
    options = sd.RunOptions(progress=False, checkpoint=ck)
    full = run(table, options=options)
    done = _tasks(ck, "count")
    lost = done[::2]  # as if the run had stopped before these fits finished
    # A fit's test blocks may be saved by several scoring tasks: a fit lost one of them is
    # missing (by part, whose fit ids are its own).
    missing = {(p.parent, json.loads(p.read_text())["fit_id"]) for p in lost}
    for path in lost:
        path.unlink()
    FITS.clear()
    resumed = run(table, options=options)
    assert len(FITS) == len(missing) > 0  # only the lost fits ran again
    xr.testing.assert_identical(_plain(resumed), _plain(full))
    assert resumed.attrs["design"] == full.attrs["design"] == name
    with pytest.raises(ValueError, match="other settings"):
        run(table, seed=2, options=options)
    with pytest.raises(ValueError, match="other settings"):
        run(_table(seed=6), options=options)  # other data
    remove_run_checkpoint(ck)
    assert not ck.exists()


def test_the_same_data_by_a_relative_then_an_absolute_path_resumes(tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    toy_table(n=180, n_subsets=3, seed=5).to_parquet(data / "a.parquet")
    monkeypatch.chdir(tmp_path)
    ck = tmp_path / "ck"
    run = {"n_folds": 3, "options": sd.RunOptions(progress=False, checkpoint=ck)}
    first = sd.soak(sd.load_table("data", label="y", subset="subset"), LEARNERS, **run)
    FITS.clear()
    again = sd.soak(sd.load_table(str(data), label="y", subset="subset"), LEARNERS, **run)
    assert not FITS  # every fit came from the checkpoint
    xr.testing.assert_equal(_plain(again), _plain(first))
