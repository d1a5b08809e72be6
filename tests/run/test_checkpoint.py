"""Resume: a stopped run computes only its missing fits and ends identical to an unstopped one."""

from __future__ import annotations

import json
import re
import shutil
import time
from contextlib import closing
from pathlib import Path

import pytest
import xarray as xr
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import soak_dask as sd
from soak_dask.run import executor
from soak_dask.run.checkpoint import remove_checkpoint

from ..conftest import toy_table
from .test_soak import FITS, CountingClassifier

TIMINGS = ["fit_seconds", "predict_seconds"]


def _table():
    return sd.load_table(toy_table(n=300, n_subsets=3, seed=8), label="y", subset="subset")


@pytest.mark.slow
def test_resume_computes_only_missing_fits(tmp_path, monkeypatch, capsys):
    table = _table()
    learners = {"count": CountingClassifier(), "base": "featureless"}
    full = sd.soak(table, learners, n_folds=4, options=sd.RunOptions(progress=False))
    total = full.attrs["n_fits"]

    real_run = executor._run

    def dies_after_ten(tasks, client, progress):
        with closing(real_run(tasks, client, progress)) as results:
            for i, result in enumerate(results):
                if i == 10:
                    raise KeyboardInterrupt  # the client is killed mid-run
                yield result

    monkeypatch.setattr(executor, "_run", dies_after_ten)
    with pytest.raises(KeyboardInterrupt):
        sd.soak(
            table,
            learners,
            n_folds=4,
            options=sd.RunOptions(progress=False, checkpoint=tmp_path / "ck"),
        )
    monkeypatch.setattr(executor, "_run", real_run)
    fitted = len(FITS)
    time.sleep(0.5)
    assert len(FITS) == fitted  # nothing went on fitting behind the stopped run

    def records_saved() -> dict[tuple[int, str], int]:
        """Records (test blocks scored) saved per (fit, learner): a fit's blocks are scored
        by several tasks (partition by partition), so a stopped run may hold some of them."""
        saved: dict[tuple[int, str], int] = {}
        for f in (tmp_path / "ck").glob("task-*"):
            task = json.loads(f.read_text())
            pair = (task["fit_id"], task["learner"])
            saved[pair] = saved.get(pair, 0) + len(task["records"])
        return saved

    before = records_saved()
    assert 0 < len(before) < total  # stopped mid-run (fits are scored per test block)

    FITS.clear()
    resumed = sd.soak(
        table,
        learners,
        n_folds=4,
        options=sd.RunOptions(progress=False, checkpoint=tmp_path / "ck"),
    )
    after = records_saved()
    assert len(after) == total
    # Said without progress bars too: part of the result comes from the checkpoint.
    out = capsys.readouterr().out
    said = re.search(rf"SOAK: resuming, (\d+) of {total} fits already done", out)
    assert said and 0 < int(said[1]) < total
    # Only the counting learner's fits not saved in full (every test block) ran again.
    whole = [learner for pair, n in before.items() if n == after[pair] for learner in pair[1:]]
    assert len(FITS) == total // 2 - whole.count("count") > 0
    xr.testing.assert_identical(resumed.drop_vars(TIMINGS), full.drop_vars(TIMINGS))


FAST = {"n_folds": 3}


@pytest.fixture(scope="module")
def featureless(tmp_path_factory) -> tuple[xr.Dataset, Path]:
    """A featureless run of ``_table()`` and its checkpoint, made once: each test that damages,
    resumes or removes it takes a copy of its own (``copied``)."""
    ck = tmp_path_factory.mktemp("featureless") / "ck"
    return sd.soak(
        _table(), "featureless", **FAST, options=sd.RunOptions(progress=False, checkpoint=ck)
    ), ck


def copied(run: tuple[xr.Dataset, Path], tmp_path: Path) -> Path:
    """A copy in ``tmp_path`` of the checkpoint of ``run``, as that run left it."""
    return Path(shutil.copytree(run[1], tmp_path / "ck"))


@pytest.mark.slow
def test_other_settings_are_refused(tmp_path, featureless):
    table = _table()
    copied(featureless, tmp_path)
    with pytest.raises(ValueError, match=r"other settings \(seed: 1 then, 2 now"):
        sd.soak(
            table,
            "featureless",
            n_folds=3,
            seed=2,
            options=sd.RunOptions(progress=False, checkpoint=tmp_path / "ck"),
        )
    with pytest.raises(ValueError, match="learners"):
        sd.soak(
            table,
            "logistic",
            n_folds=3,
            options=sd.RunOptions(progress=False, checkpoint=tmp_path / "ck"),
        )
    other_data = sd.load_table(toy_table(n=300, n_subsets=3, seed=9), label="y", subset="subset")
    with pytest.raises(ValueError, match="data"):
        sd.soak(
            other_data,
            "featureless",
            n_folds=3,
            options=sd.RunOptions(progress=False, checkpoint=tmp_path / "ck"),
        )
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="not a SOAK checkpoint"):
        sd.soak(
            table,
            "featureless",
            n_folds=3,
            options=sd.RunOptions(progress=False, checkpoint=tmp_path / "busy"),
        )


@pytest.mark.parametrize("damage", ["truncated", "empty", "binary", "wrong keys", "settings"])
def test_a_damaged_checkpoint_file_is_named_with_the_way_out(tmp_path, featureless, damage):
    table = _table()
    ck = copied(featureless, tmp_path)
    target = ck / "settings.json" if damage == "settings" else sorted(ck.glob("task-*"))[0]
    text = target.read_text()
    target.write_bytes(
        {
            "truncated": text[: len(text) // 2].encode(),
            "empty": b"",
            "binary": bytes(range(256)),
            "wrong keys": json.dumps({"fit_id": 1, "message": "x"}).encode(),
            "settings": text[:-10].encode(),
        }[damage]
    )
    with pytest.raises(ValueError, match=re.escape(f"checkpoint file {target} ")) as info:
        sd.soak(table, "featureless", **FAST, options=sd.RunOptions(progress=False, checkpoint=ck))
    assert f"delete the checkpoint {ck} to start over" in str(info.value)


def test_forged_or_foreign_records_are_refused(tmp_path, featureless):
    table = _table()
    full, ck = featureless[0], copied(featureless, tmp_path)
    task_file = sorted(ck.glob("task-*"))[0]
    task = json.loads(task_file.read_text())
    task["records"][0]["error"] = 0.0  # a better score, written by hand
    task_file.write_text(json.dumps(task))
    forged = re.escape(f"checkpoint file {task_file} does not match this run's settings")
    with pytest.raises(ValueError, match=forged):
        sd.soak(table, "featureless", **FAST, options=sd.RunOptions(progress=False, checkpoint=ck))
    # The same task of a run with another seed, under the name this run gives it.
    sd.soak(
        table,
        "featureless",
        seed=2,
        **FAST,
        options=sd.RunOptions(progress=False, checkpoint=tmp_path / "other"),
    )
    shutil.copy(tmp_path / "other" / task_file.name, task_file)
    with pytest.raises(ValueError, match=forged):
        sd.soak(table, "featureless", **FAST, options=sd.RunOptions(progress=False, checkpoint=ck))
    task_file.unlink()  # as the message says: that file's fits are computed again
    resumed = sd.soak(
        table, "featureless", **FAST, options=sd.RunOptions(progress=False, checkpoint=ck)
    )
    xr.testing.assert_identical(resumed.drop_vars(TIMINGS), full.drop_vars(TIMINGS))


def test_one_pass_fits_rescored_alone_score_like_the_full_run(tmp_path, featureless):
    """A resumed run may score one test block of one fit from block statistics: rows of the
    subsets it does not test must stay out of that block."""
    table = _table()
    full, ck = featureless[0], copied(featureless, tmp_path)
    for task in sorted(ck.glob("task-*"))[:2]:
        task.unlink()
    resumed = sd.soak(
        table, "featureless", **FAST, options=sd.RunOptions(progress=False, checkpoint=ck)
    )
    xr.testing.assert_identical(resumed.drop_vars(TIMINGS), full.drop_vars(TIMINGS))


def test_a_changed_parameter_shows_where_the_settings_differ(tmp_path):
    def learner(c: float):
        return make_pipeline(
            StandardScaler(), LogisticRegression(C=c, class_weight="balanced", max_iter=500)
        )

    table = _table()
    sd.soak(
        table,
        {"lr": learner(0.5)},
        **FAST,
        options=sd.RunOptions(progress=False, checkpoint=tmp_path / "ck"),
    )
    with pytest.raises(ValueError, match="other settings") as info:
        sd.soak(
            table,
            {"lr": learner(2.0)},
            **FAST,
            options=sd.RunOptions(progress=False, checkpoint=tmp_path / "ck"),
        )
    message = str(info.value)
    # The reprs are alike for their first 80 characters: the part shown is where they differ.
    assert "learners.lr: " in message and "C=0.5" in message and "C=2.0" in message


@pytest.mark.parametrize("rewrite", ["values", "order"])
def test_a_rewritten_parquet_file_is_refused_not_resumed(tmp_path, rewrite):
    df = toy_table(n=300, n_subsets=3, seed=8)
    data = tmp_path / "data"
    data.mkdir()
    df.iloc[:150].to_parquet(data / "a.parquet")
    df.iloc[150:].to_parquet(data / "b.parquet")
    table = sd.load_table(data, label="y", subset="subset")
    sd.soak(
        table,
        "featureless",
        **FAST,
        options=sd.RunOptions(progress=False, checkpoint=tmp_path / "ck"),
    )
    part = df.iloc[150:]
    part = part.assign(x0=part["x0"] + 1) if rewrite == "values" else part.iloc[::-1]
    part.to_parquet(data / "b.parquet")
    changed = re.escape(f"other settings (data.parquet.{data / 'b.parquet'}: ")
    # The table loaded before the rewrite (its files are stat'ed when the run starts), or anew.
    for again in (table, sd.load_table(data, label="y", subset="subset")):
        with pytest.raises(ValueError, match=changed):
            sd.soak(
                again,
                "featureless",
                **FAST,
                options=sd.RunOptions(progress=False, checkpoint=tmp_path / "ck"),
            )


def test_a_checkpoint_inside_the_input_is_refused(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    toy_table(n=90).to_parquet(data / "a.parquet")
    table = sd.load_table(data, label="y", subset="subset")
    with pytest.raises(ValueError, match="is inside the input table's directory"):
        sd.soak(
            table,
            "featureless",
            **FAST,
            options=sd.RunOptions(progress=False, checkpoint=data / "ck"),
        )
    assert [p.name for p in data.iterdir()] == ["a.parquet"]


def test_removing_a_checkpoint_deletes_only_its_own_files(tmp_path, featureless):
    ck = copied(featureless, tmp_path)
    (ck / "notes.txt").write_text("mine")
    remove_checkpoint(ck)
    assert [p.name for p in ck.iterdir()] == ["notes.txt"]
    (ck / "notes.txt").unlink()
    sd.soak(_table(), "featureless", **FAST, options=sd.RunOptions(progress=False, checkpoint=ck))
    remove_checkpoint(ck)
    assert not ck.exists()
    other = tmp_path / "other"
    other.mkdir()
    (other / "task-1-abc.json").write_text("{}")  # looks like a task, but no settings.json
    remove_checkpoint(other)
    assert (other / "task-1-abc.json").exists()
