"""``soak transfer``, ``soak split-sensitivity`` and ``soak compare-sampling`` interrupted in the
middle of their fits and resumed end identical to an undisturbed run, as ``soak run`` does.

Each command runs in this process through ``cli.main``, on the session's LocalCluster
(tests/conftest.py) given by address: the interrupted run stops by a Ctrl-C (KeyboardInterrupt)
raised once it has saved ``n`` fits, so it leaves the checkpoint a stopped run leaves. The same
checkpoint code serves every command; that a run killed (kill -9) in another process resumes is
tested once, on ``soak run`` (tests/app/test_resume_cli.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import xarray as xr

import soak_dask as sd
from soak_dask.app import cli
from soak_dask.run import executor
from soak_dask.tables.generated import write_pixel_parquet

from ..results.test_every_kind_report import check_page

#: Three runs of each command (stopped, resumed, undisturbed): `make test-fast` skips them.
pytestmark = pytest.mark.slow
#: Timings differ from run to run; everything else must not.
TIMINGS = ["fit_seconds", "predict_seconds", "search_seconds"]


@pytest.fixture(scope="module")
def pixels(tmp_path_factory) -> Path:
    return write_pixel_parquet(
        tmp_path_factory.mktemp("data") / "pixels", n_files=3, n_pixels=600, n_regions=3, seed=1
    )


def saved(checkpoint: Path) -> int:
    """Task files saved in a checkpoint, its parts included."""
    return len(list(checkpoint.rglob("task-*.json")))


def interrupt_after(argv: list, checkpoint: Path, n_files: int, monkeypatch, capsys) -> int:
    """Run ``soak argv``, stopped by Ctrl-C once ``n_files`` task files are saved; those saved."""
    save = executor.save_task

    def save_then_stop(*args, **kwargs) -> None:
        save(*args, **kwargs)
        if saved(checkpoint) >= n_files:
            raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(executor, "save_task", save_then_stop)
        assert cli.main(list(map(str, argv))) == cli.INTERRUPTED
    assert "soak: interrupted" in capsys.readouterr().err
    return saved(checkpoint)


def resumed_and_plain(
    argv: list, tmp_path: Path, n_files: int, monkeypatch, capsys, resumes: str | None = None
):
    """``argv`` stopped after ``n_files`` task files, then resumed (``--checkpoint`` given,
    kept; the run that ``resumes``, by default the command's own design, says so), and run
    undisturbed (its own checkpoint, removed): the two ``--out`` and the resumed output."""
    ck, out, plain = tmp_path / "ck", tmp_path / "resumed", tmp_path / "plain"
    done = interrupt_after(
        [*argv, "--checkpoint", ck, "--out", out], ck, n_files, monkeypatch, capsys
    )
    assert done >= n_files
    assert cli.main(list(map(str, [*argv, "--checkpoint", ck, "--out", out, "--overwrite"]))) == 0
    stdout = capsys.readouterr().out
    assert f"{resumes or argv[0].replace('-', '_')}: resuming" in stdout  # named for its design
    assert saved(ck) > done and (ck / "settings.json").is_file()  # a given checkpoint is kept
    assert cli.main(list(map(str, [*argv, "--out", plain]))) == 0
    assert not (tmp_path / "plain.checkpoint").exists()  # its own checkpoint, removed
    return out, plain, stdout


def _zarr(path: Path) -> xr.Dataset:
    """The results store at ``path``, checked whole, without its timings."""
    return sd.open_results(path).load().drop_vars(TIMINGS, errors="ignore")


def test_transfer_and_search_resume_to_the_undisturbed_result(
    pixels, cluster, tmp_path, monkeypatch, capsys
):
    argv = [
        "transfer", pixels, "--label", "label", "--subset", "region", "--exclude",
        "x,y,polygon", "--n-folds", 2, "--learner", "logistic", "--measures", "error",
        "--scheduler", cluster.scheduler_address,
    ]  # fmt: skip
    # The search runs first (its budget refused before any fit of the matrix) and its rounds
    # save 30 task files, then the matrix's 6 fits 18 (one per test subset): stopped inside
    # the search, the matrix not begun.
    out, plain, _ = resumed_and_plain(argv, tmp_path, 12, monkeypatch, capsys, "search_subsets")
    for store in ("transfer.zarr", "search.zarr"):
        resumed, undisturbed = _zarr(out / store), _zarr(plain / store)
        xr.testing.assert_identical(resumed, undisturbed)
    assert _zarr(out / "search.zarr").attrs["design"] == "search_subsets"
    # Two stores in the directory: `soak report` of it names both paths to give; of each
    # store, the page of its kind (tests/results/test_every_kind_report.py for the others).
    code = cli.main(["report", str(plain), "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err
    assert code != 0 and str(plain / "search.zarr") in err and str(plain / "transfer.zarr") in err
    assert not (tmp_path / "x").exists()
    for kind, store in (("transfer", "transfer.zarr"), ("search_subsets", "search.zarr")):
        assert cli.main(["report", str(plain / store), "--out", str(tmp_path / kind)]) == 0
        check_page(tmp_path / kind, kind)


def test_split_sensitivity_resumes_to_the_undisturbed_result(
    pixels, cluster, tmp_path, monkeypatch, capsys
):
    argv = [
        "split-sensitivity", pixels, "--label", "label", "--exclude", "x,y,polygon,region",
        "--learner", "logistic", "--ratios", "0.5,0.7", "--n-repeats", 3, "--n-folds", 2,
        "--scheduler", cluster.scheduler_address,
    ]  # fmt: skip
    out, plain, _ = resumed_and_plain(argv, tmp_path, 4, monkeypatch, capsys)  # of 18 fits
    for name in ("summary.csv", "trials.csv", "split_sensitivity.json"):
        assert (out / name).read_text() == (plain / name).read_text(), name


def test_compare_sampling_resumes_to_the_undisturbed_result(
    pixels, cluster, tmp_path, monkeypatch, capsys
):
    argv = [
        "compare-sampling", pixels, "--label", "label", "--exclude", "x,y,polygon,region",
        "--learner", "logistic", "--methods", "random,stratified", "--n-repeats", 5,
        "--scheduler", cluster.scheduler_address,
    ]  # fmt: skip
    out, plain, _ = resumed_and_plain(argv, tmp_path, 1, monkeypatch, capsys)  # 7 fits
    for name in ("mai.csv", "summary.csv", "random_accuracy.csv", "compare_sampling.json"):
        assert (out / name).read_text() == (plain / name).read_text(), name
