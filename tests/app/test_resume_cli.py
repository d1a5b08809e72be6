"""``soak run`` on a Parquet table, stopped (Ctrl-C: exit 130 and one line; then kill -9) and
resumed in new processes, ends identical to an undisturbed run; ``--out`` on the input is refused
and the input kept.

Each stopped ``soak`` runs in a subprocess (``python -m soak_dask.app.cli``), with a slow test
learner named by a run file, on the session's LocalCluster (tests/conftest.py) given by address;
the last resume, the undisturbed run and the refusal run in this process (``cli.main``): what
they test is not the process. (A rewritten file refused by name: tests/app/test_cli.py and
tests/run/test_checkpoint.py.)
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import xarray as xr
from distributed import LocalCluster

from soak_dask import open_results
from soak_dask.app import cli
from soak_dask.tables.generated import write_pixel_parquet

from .test_cli import default_ctrl_c, not_warnings

#: Subprocesses, clusters and notebooks: minutes, not seconds (`make test-fast` skips them).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
TIMINGS = ["fit_seconds", "predict_seconds"]
N_SLOW = 21  # distinct train sets of 3 subsets and 3 folds: 7 per fold
#: A run file naming the slow test learner.
SLOW = """
[learners.slow]
estimator = "tests.slow_learner:SlowClassifier"
params = {seconds = 0.2}
"""


@pytest.fixture(scope="module")
def pixels(tmp_path_factory) -> Path:
    return write_pixel_parquet(
        tmp_path_factory.mktemp("data") / "pixels", n_files=3, n_pixels=1500, n_regions=3, seed=1
    )


@pytest.fixture(scope="module")
def run_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("conf") / "slow.toml"
    path.write_text(SLOW, encoding="utf-8")
    return path


def start(*argv: object) -> subprocess.Popen:
    """``soak argv`` in a new process (``tests`` importable), its output unbuffered (a killed
    process keeps it)."""
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    return subprocess.Popen(
        [sys.executable, "-m", "soak_dask.app.cli", *map(str, argv)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": path},
        preexec_fn=default_ctrl_c,  # the Ctrl-C sent below must reach it
    )


def run_flags(data: Path, cluster: LocalCluster, run_file: Path) -> list:
    return [
        "run", data, "--label", "label", "--subset", "region", "--exclude", "x,y,polygon",
        "--folds", 3, "--config", run_file, "--allow-modules", "tests.slow_learner",
        "--learner", "slow,featureless", "--scheduler", cluster.scheduler_address,
    ]  # fmt: skip


def slow_fits_done(checkpoint: Path) -> int:
    tasks = [json.loads(p.read_text()) for p in checkpoint.glob("task-*.json")]
    return len({t["fit_id"] for t in tasks if t["learner"] == "slow"})


def stop_after(
    proc: subprocess.Popen, checkpoint: Path, n_slow: int, sig: int
) -> tuple[int, str, str]:
    """Send ``sig`` to ``proc`` once ``n_slow`` slow fits are saved; return how many are saved
    and what it printed (stdout, stderr)."""
    deadline = time.time() + 120
    while slow_fits_done(checkpoint) < n_slow and proc.poll() is None:
        assert time.time() < deadline, "the run saved no fits in time"
        time.sleep(0.02)
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == (130 if sig == signal.SIGINT else -sig), stderr  # stopped
    done = slow_fits_done(checkpoint)
    assert n_slow <= done < N_SLOW
    return done, stdout, stderr


def test_interrupted_and_killed_run_resumes_to_the_undisturbed_result(
    pixels, cluster, run_file, tmp_path, capsys
):
    ck, out = tmp_path / "ck", tmp_path / "resumed.zarr"
    flags = run_flags(pixels, cluster, run_file)
    argv = [*flags, "--checkpoint", ck, "--out", out]
    first, _, stderr = stop_after(start(*argv), ck, 3, signal.SIGINT)  # Ctrl-C
    # Ctrl-C ends the progress bar with one line, the way to resume (its own LocalCluster's
    # workers stopped with it too: tests/run/test_round4_cluster.py's soak aoa).
    assert not_warnings(stderr)[-1] == (
        "soak: interrupted; the fits finished so far are in the checkpoint: run the same "
        "command again (same --out and --checkpoint) to resume"
    )
    assert "Traceback" not in stderr and not out.exists()
    # Resumed in a new process, then killed (kill -9) in the middle of its fits.
    after_kill, stdout, _ = stop_after(start(*argv), ck, first + 3, signal.SIGKILL)
    assert "SOAK: resuming" in stdout
    assert cli.main(list(map(str, argv))) == 0, capsys.readouterr().err  # resumed to the end
    stdout = capsys.readouterr().out
    resumed_line = next(line for line in stdout.splitlines() if "SOAK: resuming" in line)
    assert int(resumed_line.split(", ")[1].split(" of ")[0]) >= after_kill  # fits reused
    plain_argv = [*flags, "--out", tmp_path / "plain.zarr"]
    assert cli.main(list(map(str, plain_argv))) == 0, capsys.readouterr().err  # undisturbed
    assert not (tmp_path / "plain.zarr.checkpoint").exists()  # its own checkpoint, removed
    resumed = open_results(out).drop_vars(TIMINGS)
    plain = open_results(tmp_path / "plain.zarr").drop_vars(TIMINGS)
    xr.testing.assert_identical(resumed, plain)
    assert slow_fits_done(ck) == N_SLOW and resumed.attrs["n_fits"] == 2 * N_SLOW


def _files(folder: Path) -> dict[str, tuple[str, int, int]]:
    return {
        str(p.relative_to(folder)): (
            hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "",
            p.stat().st_mtime_ns,
            p.stat().st_size,
        )
        for p in sorted(folder.rglob("*"))
    }


def test_out_on_the_input_directory_is_refused_and_the_input_kept(pixels, tmp_path, capsys):
    data = tmp_path / "pixels"
    data.mkdir()
    for part in pixels.iterdir():
        data.joinpath(part.name).write_bytes(part.read_bytes())
    before = _files(data)
    argv = ["run", data, "--label", "label", "--subset", "region", "--out", data, "--overwrite"]
    assert cli.main(list(map(str, argv))) == 2
    assert capsys.readouterr().err.strip() == (
        f"soak: error: {data} is the input table ({data}); write the results outside it"
    )
    assert _files(data) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pixels"]
