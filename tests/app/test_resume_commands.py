"""``soak transfer``, ``soak split-sensitivity`` and ``soak compare-sampling`` killed (kill -9)
in the middle of their fits and resumed in a new process end identical to an undisturbed run,
as ``soak run`` does (tests/app/test_resume_cli.py).

Each stopped or resumed command runs in a subprocess (``python -m tests.slow_learner``: the
``soak`` command with the slow test learner as the built-in ``slow``), on the session's
LocalCluster (tests/conftest.py) given by address; the undisturbed run, in this process
(``slow`` registered here for the test only), as in tests/app/test_resume_cli.py: it needs no
process of its own.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import xarray as xr

import soak_dask as sd
from soak_dask.app import cli
from soak_dask.app.demo import write_pixel_parquet
from soak_dask.learn import builtin

from ..slow_learner import register

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
#: Timings differ from run to run; everything else must not.
TIMINGS = ["fit_seconds", "predict_seconds", "search_seconds"]


@pytest.fixture(scope="module")
def pixels(tmp_path_factory) -> Path:
    return write_pixel_parquet(
        tmp_path_factory.mktemp("data") / "pixels", n_files=3, n_pixels=600, n_regions=3, seed=1
    )


@pytest.fixture
def slow_here(monkeypatch) -> None:
    """``slow`` a built-in learner in this process too, for this test only."""
    for names in (builtin.BUILTIN, builtin.DESCRIPTIONS):
        monkeypatch.setitem(names, "slow", None)  # removed again after the test
    register()


def start(*argv: object) -> subprocess.Popen:
    """``soak argv`` (knowing the learner ``slow``) in a new process, output unbuffered."""
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    return subprocess.Popen(
        [sys.executable, "-m", "tests.slow_learner", *map(str, argv)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": path},
    )


def saved(checkpoint: Path) -> int:
    """Fits saved in a checkpoint, its parts included."""
    return len(list(checkpoint.rglob("task-*.json")))


def kill_after(argv: list, checkpoint: Path, n_fits: int) -> int:
    """Run ``soak argv``, kill -9 it once ``n_fits`` fits are saved; the fits saved."""
    proc = start(*argv)
    deadline = time.time() + 240
    while saved(checkpoint) < n_fits and proc.poll() is None:
        assert time.time() < deadline, "the run saved no fits in time"
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL, "the run ended before it was killed"
    return saved(checkpoint)


def finish(argv: list) -> str:
    """Run ``soak argv`` to the end; what it printed."""
    proc = start(*argv)
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr
    return stdout


def resumed_and_plain(argv: list, tmp_path: Path, n_fits: int) -> tuple[Path, Path, str]:
    """``argv`` killed after ``n_fits`` fits then resumed (``--checkpoint`` given, kept), and
    run undisturbed in this process (its own checkpoint, removed; needs ``slow_here``): the two
    ``--out`` and the resumed output."""
    ck, out, plain = tmp_path / "ck", tmp_path / "resumed", tmp_path / "plain"
    done = kill_after([*argv, "--checkpoint", ck, "--out", out], ck, n_fits)
    assert done >= n_fits
    stdout = finish([*argv, "--checkpoint", ck, "--out", out, "--overwrite"])
    assert f"{argv[0].replace('-', '_')}: resuming" in stdout  # named for its design
    assert saved(ck) > done and (ck / "settings.json").is_file()  # a given checkpoint is kept
    assert cli.main(list(map(str, [*argv, "--out", plain]))) == 0
    assert not (tmp_path / "plain.checkpoint").exists()  # its own checkpoint, removed
    return out, plain, stdout


def _zarr(path: Path) -> xr.Dataset:
    """The results store at ``path``, checked whole, without its timings."""
    return sd.open_results(path).load().drop_vars(TIMINGS, errors="ignore")


def test_transfer_and_search_resume_to_the_undisturbed_result(pixels, cluster, slow_here, tmp_path):
    argv = [
        "transfer", pixels, "--label", "label", "--subset", "region", "--exclude",
        "x,y,polygon", "--n-folds", 3, "--learner", "slow", "--scheduler",
        cluster.scheduler_address,
    ]  # fmt: skip
    # 9 matrix fits, then the search's rounds: killed inside the search.
    out, plain, _ = resumed_and_plain(argv, tmp_path, 14)
    for store in ("transfer.zarr", "search.zarr"):
        resumed, undisturbed = _zarr(out / store), _zarr(plain / store)
        xr.testing.assert_identical(resumed, undisturbed)
    assert _zarr(out / "search.zarr").attrs["design"] == "search_subsets"


def test_split_sensitivity_resumes_to_the_undisturbed_result(pixels, cluster, slow_here, tmp_path):
    argv = [
        "split-sensitivity", pixels, "--label", "label", "--exclude", "x,y,polygon,region",
        "--learner", "slow", "--ratios", "0.5,0.7", "--n-repeats", 3, "--n-folds", 3,
        "--scheduler", cluster.scheduler_address,
    ]  # fmt: skip
    out, plain, _ = resumed_and_plain(argv, tmp_path, 4)  # of 2 × 3 × (3 + 1) = 24 fits
    for name in ("summary.csv", "trials.csv", "split_sensitivity.json"):
        assert (out / name).read_text() == (plain / name).read_text(), name


def test_compare_sampling_resumes_to_the_undisturbed_result(pixels, cluster, slow_here, tmp_path):
    argv = [
        "compare-sampling", pixels, "--label", "label", "--exclude", "x,y,polygon,region",
        "--learner", "slow", "--methods", "random,stratified", "--n-repeats", 20,
        "--scheduler", cluster.scheduler_address,
    ]  # fmt: skip
    out, plain, _ = resumed_and_plain(argv, tmp_path, 1)  # 22 fits, 8 per task
    for name in ("mai.csv", "summary.csv", "random_accuracy.csv", "compare_sampling.json"):
        assert (out / name).read_text() == (plain / name).read_text(), name
