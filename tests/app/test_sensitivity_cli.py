"""Tests of ``soak split-sensitivity`` (``soak_dask.app.sensitivity_cli``): the files it writes
equal the Python API's results, ``--out`` is guarded, and bad flags give one-line errors naming
the flag. The runs are real computations on a small Parquet table, on a LocalCluster of two
workers passed by address."""

from __future__ import annotations

import json
from pathlib import Path

import dask
import pandas as pd
import pytest
from distributed import LocalCluster

import soak_dask as sd
from soak_dask import RunOptions, SplitTrials
from soak_dask.app import cli
from soak_dask.app.flags import check_command_out
from soak_dask.app.sensitivity_cli import FILES, WRITER
from soak_dask.diagnose.sensitivity import (
    split_sensitivity,
    split_sensitivity_summary,
    split_sensitivity_trials,
)
from soak_dask.io.outdir import MANIFEST

from ..conftest import toy_table

FEATURES = ["x0", "x1", "x2"]
FLAGS = [
    "--label", "y", "--features", ",".join(FEATURES), "--learners", "gaussian_nb",
    "--ratios", "0.8,0.6", "--n-repeats", "3", "--n-folds", "3", "--seed", "4", "--no-progress",
]  # fmt: skip


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return toy_table(240, seed=5)


@pytest.fixture(scope="module")
def data(frame, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("data") / "pixels.parquet"
    frame.to_parquet(path)
    return path


@pytest.fixture(scope="module")
def scheduler():
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
    ) as cluster:
        yield cluster.scheduler_address


def soak(argv: list, capsys) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.slow
def test_writes_the_python_api_results(data, scheduler, tmp_path, capsys):
    out = tmp_path / "sens"
    argv = ["split-sensitivity", data, *FLAGS, "--scheduler", scheduler, "--out", out]
    code, printed, err = soak(argv, capsys)
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == sorted([*FILES, MANIFEST])
    table = sd.load_table(str(data), label="y", features=FEATURES)
    with dask.config.set(scheduler="synchronous"):
        ds = split_sensitivity(
            table,
            "gaussian_nb",
            design=SplitTrials(ratios=(0.6, 0.8), n_repeats=3, n_folds=3, seed=4),
            options=RunOptions(progress=False),
        )
    pd.testing.assert_frame_equal(
        pd.read_csv(out / "summary.csv"), split_sensitivity_summary(ds), check_dtype=False
    )
    pd.testing.assert_frame_equal(
        pd.read_csv(out / "trials.csv"), split_sensitivity_trials(ds), check_dtype=False
    )
    settings = json.loads((out / "split_sensitivity.json").read_text())
    assert settings["generator"] == "soak_dask split-sensitivity"
    assert settings["seed"] == 4 and settings["ratios"] == ["0.6", "0.8"]
    assert (out / "split_sensitivity.png").stat().st_size > 10_000
    assert "gaussian_nb, accuracy" in printed and "Recommended ratio(s):" in printed
    assert str(out / "summary.csv") in printed
    check_command_out(WRITER, str(out), True, str(data))  # our own directory: may replace
    with pytest.raises(FileExistsError, match="earlier output of soak split-sensitivity"):
        check_command_out(WRITER, str(out), False, str(data))  # but only with --overwrite


@pytest.mark.slow
def test_run_file_gives_the_same_run(data, scheduler, tmp_path, capsys):
    """``--config``: the shared settings at the top level, the diagnostic's own in its
    ``[split_sensitivity]`` table; the files equal the Python API's."""
    conf = tmp_path / "run.toml"
    conf.write_text(
        f'data = "{data}"\nlabel = "y"\nfeatures = {FEATURES!r}\nlearners = ["gaussian_nb"]\n'
        'n_folds = 3\nseed = 4\nprogress = false\nout = "sens"\n'
        "[split_sensitivity]\nratios = [0.8, 0.6]\nn_repeats = 3\n".replace("'", '"')
    )
    code, _, err = soak(["split-sensitivity", "--config", conf, "--scheduler", scheduler], capsys)
    assert code == 0, err
    table = sd.load_table(str(data), label="y", features=FEATURES)
    with dask.config.set(scheduler="synchronous"):
        ds = split_sensitivity(
            table,
            "gaussian_nb",
            design=SplitTrials(ratios=(0.6, 0.8), n_repeats=3, n_folds=3, seed=4),
            options=RunOptions(progress=False),
        )
    pd.testing.assert_frame_equal(
        pd.read_csv(tmp_path / "sens" / "summary.csv"),
        split_sensitivity_summary(ds),
        check_dtype=False,
    )


def test_out_is_guarded(data, tmp_path, capsys):
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine")
    code, _, err = soak(["split-sensitivity", data, *FLAGS, "--out", taken], capsys)
    assert code == cli.USAGE_ERROR
    assert "did not write" in err and "notes.txt" in err and err.count("\n") == 1
    with pytest.raises(FileExistsError, match="notes.txt"):  # not even with --overwrite
        check_command_out(WRITER, str(taken), True, str(data))
    (tmp_path / "file").write_text("")
    with pytest.raises(FileExistsError, match="is not a directory"):
        check_command_out(WRITER, str(tmp_path / "file"), True, str(data))
    with pytest.raises(ValueError, match="is inside the input table's directory"):
        check_command_out(WRITER, str(data.parent / "x"), False, str(data.parent))


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--ratios", "0.5,abc"], "need comma-separated numbers"),
        (["--ratios", "0.5,1.5"], "--ratios=[0.5, 1.5]: need shares of rows to train"),
        (["--n-repeats", "2"], "--n-repeats=2: need an integer of at least 3"),
        (["--n-folds", "1"], "--n-folds=1: need an integer of at least 2"),
        (["--alpha", "0"], "--alpha=0.0: need a level in (0, 0.5]"),
        (["--measures", "mse"], "measures ['mse'] are not all classification measures"),
        (["--learner", "linear"], "learner 'linear' does not do classification"),
        (["--learners", "lda,knn"], "--learners lda,knn: the diagnostic studies one learner"),
        (["--measure", "mse"], "--measure is now --measures"),
        (["--trials", "3"], "--trials is now --n-repeats"),
        (["--label", "nope"], "nope"),
    ],
)
def test_bad_flags(data, scheduler, tmp_path, capsys, flags, message):
    base = FLAGS
    if flags[0].startswith("--learner"):  # a repeated --learners adds to the list
        at = FLAGS.index("--learners")
        base = [*FLAGS[:at], *FLAGS[at + 2 :]]
    # Those found once the table is read (its task) are found on the module's cluster.
    argv = ["split-sensitivity", data, *base, *flags, "--scheduler", scheduler]
    argv += ["--out", tmp_path / "o"]
    code, _, err = soak(argv, capsys)
    assert code == cli.USAGE_ERROR
    assert err.startswith("soak: error:") and message in err, err
    assert not (tmp_path / "o").exists()


def test_help_lists_the_flags(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["split-sensitivity", "--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    for flag in ["DATA", "--label", "--group", "--features", "--scheduler", "--ratios",
                 "--n-repeats", "--n-folds", "--measures", "--alpha", "--seed", "--out",
                 "--config"]:  # fmt: skip
        assert flag in text
