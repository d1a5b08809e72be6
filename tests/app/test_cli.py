"""Tests of the ``soak`` command line: run (flags, run file, learners, TLS), report, demo, errors.

Every run is a real SOAK computation on a small generated pixel table (2 regions, polygons as
groups, 3 folds: 9 distinct fits per learner) on the session's LocalCluster of two
single-threaded workers (tests/conftest.py) passed by address.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from distributed import LocalCluster

from soak_dask import open_results
from soak_dask.app import cli
from soak_dask.app.config import RunSettings, load_run_file, merge_settings, setting_names
from soak_dask.app.flags import run_settings
from soak_dask.tables.generated import write_pixel_parquet

from ..tls_certs import cluster_security, make_tls_files

N_PIXELS = 3000
N_REGIONS = 2
N_FITS = 9  # distinct train sets for 2 subsets, 3 folds: 3K
PROBE = "soak_cli_probe_learners"  # a module that only a run file names


@pytest.fixture(scope="module")
def pixels(tmp_path_factory) -> Path:
    return write_pixel_parquet(
        tmp_path_factory.mktemp("data") / "pixels",
        n_files=3,
        n_pixels=N_PIXELS,
        n_regions=N_REGIONS,
        seed=1,
    )


def table_flags(pixels: Path) -> list[str]:
    return [str(pixels), "--label", "label", "--subset", "region", "--group", "polygon"]


def soak(argv: list[str], capsys) -> tuple[int, str, str]:
    """Run ``soak argv`` in this process; return its exit status, stdout and stderr."""
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def write_toml(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def flag_run(pixels, cluster, tmp_path_factory):
    """One run configured by flags only: its exit status and results store."""
    store = tmp_path_factory.mktemp("run") / "results.zarr"
    argv = [
        "run",
        *table_flags(pixels),
        "--exclude", "x,y",
        "--folds", "3",
        "--seed", "7",
        "--learner", "featureless",
        "--learner", "logistic",
        "--train-types", "same,all",
        "--measures", "error,auc",
        "--scheduler", cluster.scheduler_address,
        "--out", store,
    ]  # fmt: skip
    code = cli.main([str(a) for a in argv])
    return code, store


@pytest.mark.slow
def test_run_with_flags_on_a_scheduler(flag_run):
    code, store = flag_run
    assert code == 0
    ds = open_results(store)
    assert ds.attrs["seed"] == 7 and ds.attrs["n_folds"] == 3
    assert list(ds.attrs["train_types"]) == ["same", "all"]
    assert list(ds.attrs["measures"]) == ["error", "auc"]
    assert set(json.loads(ds.attrs["learners"])) == {"featureless", "logistic"}
    assert list(ds.attrs["features"]) == [f"B{i:02d}" for i in range(1, 13)]  # x, y excluded
    assert dict(ds.sizes) == {"learner": 2, "test_subset": 2, "fold": 3, "train_type": 2}
    # Every row is tested exactly once per learner and train type.
    assert (ds["n_test"].sum(["test_subset", "fold"]) == N_PIXELS).all()
    error = ds["error"]
    assert np.isfinite(error).all() and ((error >= 0) & (error <= 100)).all()
    assert error.sel(learner="logistic").mean() < error.sel(learner="featureless").mean()


@pytest.mark.slow
def test_run_shows_progress_and_overwrites_only_when_asked(pixels, cluster, tmp_path, capsys):
    store = tmp_path / "r.zarr"
    store.mkdir()
    argv = [
        "run", *table_flags(pixels), "--folds", "3", "--learner", "featureless",
        "--scheduler", cluster.scheduler_address, "--out", store,
    ]  # fmt: skip
    code, _, err = soak(argv, capsys)
    assert code == 2 and "exists; pass --overwrite" in err
    code, out, err = soak([*argv, "--overwrite"], capsys)
    assert code == 0 and "fits/s" in err and "Dask dashboard" in err  # the default: a bar
    assert "reference_mean" in out and f"Results: {store}" in out
    assert open_results(store).attrs["n_fits"] == N_FITS


@pytest.mark.slow
def test_run_file_with_flag_override_and_estimator_learner(
    pixels, cluster, tmp_path, monkeypatch, capsys
):
    sys.modules.pop(PROBE, None)
    conf = write_toml(
        tmp_path / "run.toml",
        f"""
data = "{pixels}"
label = "label"
subset = "region"
group = "polygon"
exclude = ["x", "y"]
folds = 3
seed = 3
learner = ["featureless", "nb"]
train_types = "same,other"
no_progress = true
scheduler = "{cluster.scheduler_address}"
out = "from_file.zarr"   # relative to this file's folder

[learners.nb]
estimator = "sklearn.naive_bayes:GaussianNB"
var_smoothing = 0.01

[learners.unused]
estimator = "{PROBE}:ProbeNB"
""",
    )
    monkeypatch.chdir(tmp_path.parent)  # the store goes next to the run file, not the cwd
    code, _, err = soak(["run", "--config", conf, "--seed", "11"], capsys)
    assert code == 0, err
    assert "fits/s" not in err and "dashboard" not in err  # no_progress = true
    ds = open_results(tmp_path / "from_file.zarr")
    assert ds.attrs["seed"] == 11  # the flag overrides the file
    assert ds.attrs["n_folds"] == 3 and list(ds.attrs["train_types"]) == ["same", "other"]
    assert json.loads(ds.attrs["learners"]) == {
        "featureless": "DummyClassifier()",
        "nb": "GaussianNB(var_smoothing=0.01)",
    }
    assert np.isfinite(ds["error"].sel(learner="nb")).all()
    assert PROBE not in sys.modules  # named in the file, never used, never imported


def test_estimator_module_imported_only_when_named(tmp_path, monkeypatch):
    (tmp_path / f"{PROBE}.py").write_text(
        "from sklearn.naive_bayes import GaussianNB\n\nclass ProbeNB(GaussianNB):\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    conf = write_toml(
        tmp_path / "run.toml",
        f'[learners.probe]\nestimator = "{PROBE}:ProbeNB"\nparams = {{var_smoothing = 0.5}}\n',
    )
    file = load_run_file(conf)
    required = {"data": "d", "label": "y", "out": "o", "allow_modules": [PROBE]}
    sys.modules.pop(PROBE, None)
    try:
        assert merge_settings(file, {**required, "learner": ["featureless"]}).learners() == {
            "featureless": "featureless"
        }
        assert PROBE not in sys.modules
        learners = merge_settings(file, {**required, "learner": ["probe"]}).learners()
        assert PROBE in sys.modules
        assert type(learners["probe"]).__name__ == "ProbeNB"
        assert learners["probe"].var_smoothing == 0.5
    finally:
        sys.modules.pop(PROBE, None)


@pytest.mark.parametrize(
    ("estimator", "message"),
    [
        ("__import__('os').system('touch PWNED')", "is not of the form 'package.module:Class'"),
        ("os:system; touch PWNED", "is not of the form 'package.module:Class'"),
        ("eval", "is not of the form 'package.module:Class'"),
        ("os:system", "module 'os' is not allowed"),
        ("no_such_module_xyz:Model", "module 'no_such_module_xyz' is not allowed"),
        ("sklearn.utils:Bunch", "is not a scikit-learn estimator class"),
        ("sklearn.no_such_module_xyz:Model", "cannot import module 'sklearn.no_such_module_xyz'"),
    ],
)
def test_run_file_never_runs_code(pixels, tmp_path, monkeypatch, capsys, estimator, message):
    monkeypatch.chdir(tmp_path)
    conf = write_toml(
        tmp_path / "run.toml", f"learner = ['bad']\n[learners.bad]\nestimator = {estimator!r}\n"
    )
    code, _, err = soak(["run", *table_flags(pixels), "--config", conf, "--out", "r.zarr"], capsys)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "PWNED").exists() and not (tmp_path / "r.zarr").exists()


SIDE_EFFECT = "soak_cli_side_effect"  # a module whose import writes a file


def side_effect_module(folder: Path) -> Path:
    """Write `SIDE_EFFECT` into `folder`; importing it creates the returned file."""
    marker = folder / "IMPORTED"
    (folder / f"{SIDE_EFFECT}.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n"
        "from sklearn.naive_bayes import GaussianNB\n\nclass NB(GaussianNB):\n    pass\n"
    )
    return marker


def test_run_file_imports_only_allowed_modules(pixels, tmp_path, monkeypatch, capsys):
    marker = side_effect_module(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, SIDE_EFFECT, raising=False)
    learner = f'learner = ["nb"]\n[learners.nb]\nestimator = "{SIDE_EFFECT}:NB"\n'
    conf = write_toml(tmp_path / "run.toml", learner)
    argv = ["run", *table_flags(pixels), "--config", conf, "--out", tmp_path / "r.zarr"]
    code, _, err = soak(argv, capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"module '{SIDE_EFFECT}' is not allowed" in err
    assert f"--allow-modules {SIDE_EFFECT}" in err and "to the run file" not in err
    assert not marker.exists() and SIDE_EFFECT not in sys.modules  # checked before importing
    # Neither a prefix of the name nor a package it is not inside allows it.
    for allowed in (["soak_cli"], ["sklearn", "soak_cli_side"]):
        code, _, err = soak([*argv, "--allow-modules", ",".join(allowed)], capsys)
        assert code == 2 and "is not allowed" in err and not marker.exists()

    def learners(argv: list, toml: str) -> dict:
        monkeypatch.delitem(sys.modules, SIDE_EFFECT, raising=False)
        marker.unlink(missing_ok=True)
        write_toml(conf, toml + learner)
        args = cli.build_parser().parse_args([*argv, "--config", str(conf)])
        return run_settings(args).learners()

    base = ["run", "d", "--label", "y", "--out", "o"]
    # Only the flag allows a module: a run file cannot allow itself to import code.
    for built in (
        learners([*base, "--allow-modules", SIDE_EFFECT], ""),
        learners([*base, "--allow-modules", f"x,{SIDE_EFFECT}"], ""),
    ):
        assert type(built["nb"]).__name__ == "NB" and marker.exists()
    with pytest.raises(ValueError, match="allow_modules may only be given on the command line"):
        learners([*base, "--allow-modules", "y"], f'allow_modules = ["{SIDE_EFFECT}"]\n')
    assert not marker.exists()
    with pytest.raises(ValueError, match="expected a list of module names"):
        run_settings(cli.build_parser().parse_args([*base, "--allow-modules", "os; rm -rf"]))


def test_empty_lists_are_refused_by_name(pixels, tmp_path, capsys):
    base = ["run", *table_flags(pixels), "--out", tmp_path / "r.zarr"]
    every_numeric = "name at least one, or leave the flag out to use every numeric column"
    cases = [
        ([*base, "--features", ""], f"argument --features: '' names no column; {every_numeric}"),
        ([*base, "--features", " , "], "argument --features: ' , ' names no column"),
        ([*base, "--learner", ""], "argument --learner: '' names no learner; name at least one"),
        ([*base, "--learner", "lda", "--learner", ","], "argument --learner: ',' names no"),
        ([*base, "--train-types", ""], "argument --train-types: '' names no train type"),
        ([*base, "--measures", ""], "argument --measures: '' names no measure"),
        (["info", pixels, "--label", "label", "--features", ""], "argument --features: ''"),
    ]
    for key, value, shown, what in [
        ("features", "[]", "[]", "column"),
        ("features", '""', "''", "column"),
        ("learner", "[]", "[]", "learner"),
        ("measures", "[]", "[]", "measure"),
    ]:
        conf = write_toml(tmp_path / f"{key}{len(cases)}.toml", f"{key} = {value}\n")
        message = f"{key} = {shown} in run file {str(conf)!r} names no {what}; name at least "
        cases.append(([*base, "--config", conf], f"{message}one, or leave {key} out"))
    for argv, message in cases:
        code, _, err = soak(argv, capsys)
        assert code == 2 and err.startswith("soak: error: ") and message in err, (argv, err)
        assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r.zarr").exists()


def not_warnings(err: str) -> list[str]:
    """The lines of stderr other than ``soak: warning:`` ones."""
    return [line for line in err.strip().splitlines() if not line.startswith("soak: warning: ")]


def test_tls_certificates_for_a_tcp_scheduler_fail_at_once(pixels, tmp_path, capsys):
    files = make_tls_files(tmp_path)
    argv = [
        "run", *table_flags(pixels), "--scheduler", "tcp://127.0.0.1:9", "--tls-ca-file",
        files.ca_file, "--tls-cert", files.cert, "--tls-key", files.key, "--out", tmp_path / "r",
    ]  # fmt: skip
    start = time.monotonic()
    code, _, err = soak(argv, capsys)
    assert time.monotonic() - start < 30  # it was a traceback, then a 60 s connect timeout
    assert code == 2 and len(not_warnings(err)) == 1, err
    assert "tcp://127.0.0.1:9 is plain TCP but TLS certificates were given; use the " in err
    assert "tls:// address, or drop the certificates" in err


def default_ctrl_c() -> None:
    """In a child before it runs: Ctrl-C (SIGINT) interrupts it, even where pytest itself was
    started with SIGINT ignored (a background job of a shell without job control), which the
    child would inherit and so never see the Ctrl-C these tests send."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def soak_process(argv: list, cwd: Path) -> subprocess.Popen:
    """``soak argv`` as a child in its own process group, as a terminal runs a command."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}  # tests.slow_learner
    env["PYTHONWARNINGS"] = "ignore"  # the slow learner's convergence warnings
    return subprocess.Popen(
        [str(Path(sys.executable).with_name("soak")), *map(str, argv)],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=default_ctrl_c,
    )


@pytest.mark.slow
def test_failed_worker_task_prints_one_line(pixels, tmp_path, capfd):
    corrupt = tmp_path / "corrupt"
    shutil.copytree(pixels, corrupt)
    part = sorted(corrupt.glob("*.parquet"))[1]
    data = bytearray(part.read_bytes())
    data[len(data) // 4 : len(data) // 2] = b"U" * (len(data) // 2 - len(data) // 4)  # pages
    part.write_bytes(bytes(data))
    argv = ["run", corrupt, "--label", "label", "--subset", "region", "--folds", "3",
            "--learner", "featureless", "--no-progress", "--out"]  # fmt: skip
    proc = soak_process([*argv, tmp_path / "r.zarr"], tmp_path)  # what a terminal sees at exit
    # --debug in this process (its own LocalCluster too), raising: the row groups are read by a
    # worker task, and its worker process writes its log of it to this process's stderr.
    with pytest.raises(Exception, match=part.name):
        cli.main([str(a) for a in ["--debug", *argv, tmp_path / "debug.zarr"]])
    assert "Compute Failed" in capfd.readouterr().err
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 2, err
    lines = not_warnings(err)  # no worker log, no traceback, no shutdown warnings
    assert len(lines) == 1 and lines[0].startswith("soak: error: ") and part.name in lines[0], err


def user_error_cases(pixels: Path, tmp: Path, scheduler: str) -> list[tuple[list, str]]:
    """(argv, expected message) pairs: each mistake is caught before any fit, most before a
    cluster is needed; the table is read on ``scheduler`` (one line also when soak's own
    LocalCluster is closed around an error: `test_failed_worker_task_prints_one_line`)."""
    base = [
        "run", *table_flags(pixels), "--exclude", "x,y", "--scheduler", scheduler,
        "--out", tmp / "r.zarr",
    ]  # fmt: skip
    bad_key = write_toml(tmp / "key.toml", "fold = 3\n")
    bad_type = write_toml(tmp / "type.toml", 'folds = "ten"\n')
    bad_toml = write_toml(tmp / "syntax.toml", "folds = \n")
    cert = write_toml(tmp / "cert.pem", "")
    return [
        ([*base, "--learner", "nope"], "unknown learner 'nope'; built-in learners: ["),
        ([*base, "--config", bad_key], "unknown key 'fold' in run file"),
        ([*base, "--config", bad_key], "fold_column"),  # the valid keys are listed
        ([*base, "--config", bad_type], "folds = 'ten' in run file"),
        ([*base, "--config", bad_toml], "is not valid TOML"),
        ([*base, "--config", tmp / "missing.toml"], "run file"),
        ([*base, "--label", "nope"], "label column 'nope' is not in"),
        ([*base, "--features", "B01,nope"], "features names columns that are not in"),
        ([*base, "--exclude", "x,yy"], "'yy' (did you mean 'y'?)"),
        # No --scheduler: soak's own LocalCluster, closed around the error with its logs dropped.
        (["run", tmp / "none.parquet", "--label", "y", "--out", tmp / "r"], "no file or dir"),
        ([*base, "--folds", "abc"], "argument --folds: invalid int value: 'abc'"),
        ([*base, "--train-types", "same,sometimes"], "unknown train_types ['sometimes']"),
        ([*base, "--measures", "error,mse"], "are not all classification measures"),
        ([*base, "--tls-cert", cert], "TLS needs ['ca_file'] too"),
        (["run", *table_flags(pixels)], "no out given: pass --out"),
        (["report", tmp / "none.zarr", "--out", tmp / "rep"], "does not exist"),
        (["info", pixels, "--label", "nope"], "label column 'nope' is not in"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
    ]


@pytest.mark.slow  # 18 commands, some reading the table
def test_user_errors_print_one_line_and_exit_2(pixels, cluster, tmp_path, capsys):
    for argv, message in user_error_cases(pixels, tmp_path, cluster.scheduler_address):
        code, out, err = soak(argv, capsys)
        assert code == 2, (argv, err)
        assert err.startswith("soak: error: ") and message in err, (argv, err)
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert not (tmp_path / "r.zarr").exists()


@pytest.mark.slow
def test_debug_raises_with_traceback(pixels, cluster, tmp_path):
    argv = ["run", *table_flags(pixels), "--label", "nope", "--out", tmp_path / "r.zarr"]
    # The first on a LocalCluster of its own, closed around the error; the second on the shared.
    on_shared = [*argv, "--scheduler", cluster.scheduler_address, "--debug"]
    for debug in (["--debug", *argv], on_shared):
        with pytest.raises(ValueError, match="label column 'nope' is not in"):
            cli.main([str(a) for a in debug])


def test_every_setting_has_a_flag():
    argv = [
        "run", "data", "--label", "y", "--subset", "s", "--group", "g", "--fold-column", "f",
        "--features", "a,b", "--exclude", "c", "--coordinates", "include", "--folds", "3",
        "--seed", "2", "--learner", "lda", "--train-types", "same", "--measures", "error",
        "--no-persist", "--scheduler", "tcp://h:1",
        "--tls-ca-file", "ca", "--tls-cert", "c", "--tls-key", "k", "--out", "o", "--overwrite",
        "--no-progress", "--sizes", "0", "--ratio", "0.25", "--size-seeds", "2",
        "--max-train-rows", "100", "--incremental", "--epochs", "2", "--checkpoint", "ck",
        "--rows-per-partition", "1000", "--allow-modules", "mypkg", "--prior-correction",
        "--calibration", "platt", "--inner", "cv", "--inner-folds", "3", "--inner-repeats", "2",
        "--balance", "overlap", "--group-assignment", "mlr3resampling", "--error-score", "raise",
        "--coords", "x,y", "--crs", "EPSG:32632", "--duplicates", "allow", "--blocks", "500",
        "--block-shape", "hex", "--clusters", "3",
    ]  # fmt: skip
    given = set(vars(cli.build_parser().parse_args(argv)))
    assert set(setting_names()) - given == {"learners"}  # [learners.NAME] tables: files only
    assert set(RunSettings.__dataclass_fields__) == set(setting_names()) - {"learners"} | {
        "learner_specs"
    }


@pytest.mark.slow
def test_installed_entry_point(pixels, cluster, tmp_path):
    exe = Path(sys.executable).with_name("soak")
    argv = [
        exe, "run", *table_flags(pixels), "--exclude", "x,y", "--folds", "3",
        "--learner", "featureless", "--no-progress", "--scheduler", cluster.scheduler_address,
        "--out", tmp_path / "r.zarr",
    ]  # fmt: skip
    proc = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert f"Results: {tmp_path / 'r.zarr'}" in proc.stdout
    assert open_results(tmp_path / "r.zarr").attrs["n_fits"] == N_FITS


@pytest.mark.slow
def test_demo_no_progress(cluster, tmp_path, capsys):
    argv = [
        "demo", "--out", tmp_path, "--pixels", N_PIXELS, "--regions", N_REGIONS, "--folds", 3,
        "--no-progress",
        "--scheduler", cluster.scheduler_address,
    ]  # fmt: skip
    code, out, err = soak(argv, capsys)
    assert code == 0 and "fits/s" not in err
    ds = open_results(tmp_path / "results.zarr")
    assert ds.attrs["n_folds"] == 3 and int(ds["n_test"].sel(learner="logistic").sum()) == (
        N_PIXELS * 3  # every pixel tested once per train type
    )
    assert pd.read_csv(tmp_path / "pvalues.csv")["p"].notna().any()
    report = tmp_path / "report" / "report.html"
    assert f"Report: {report}" in out
    assert "soak_error.png" in {p.name for p in report.parent.iterdir()}


@pytest.mark.slow
def test_report_writes_html(flag_run, tmp_path, capsys):
    pytest.importorskip("soak_dask.results.report")
    _, store = flag_run
    code, out, err = soak(["report", store, "--out", tmp_path / "rep"], capsys)
    assert code == 0, err
    html = Path(out.strip().splitlines()[-1])
    assert html.name == "report.html" and html.is_file() and html.stat().st_size > 0
    assert "logistic" in html.read_text(encoding="utf-8")
    other = tmp_path / "notes"
    other.mkdir()
    (other / "notes.txt").write_text("not a report")
    for flags in ([], ["--overwrite"]):  # a directory soak_dask did not write: never
        code, out, err = soak(["report", store, "--out", other, *flags], capsys)
        assert code == 2 and err.startswith("soak: error: ") and len(err.splitlines()) == 1
        assert "soak_dask did not write (it holds notes.txt" in err
    assert [p.name for p in other.iterdir()] == ["notes.txt"]
    code, out, err = soak(["report", store, "--out", tmp_path / "rep"], capsys)
    assert code == 2 and "earlier output" in err
    assert "pass --overwrite to replace" in err and "overwrite=True" not in err  # the CLI's word
    code, out, err = soak(["report", store, "--out", tmp_path / "rep", "--overwrite"], capsys)
    assert code == 0 and (tmp_path / "rep" / "report.html").is_file()


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    files = make_tls_files(tmp_path_factory.mktemp("tls"))
    with LocalCluster(
        protocol="tls",
        security=cluster_security(files),
        host="127.0.0.1",
        n_workers=1,
        threads_per_worker=1,
        processes=False,  # a worker thread talks TLS too, without a new interpreter to start
        dashboard_address=":0",
    ) as cluster:
        yield files, cluster.scheduler_address


def check_tls_run(store: Path, seed: int) -> None:
    ds = open_results(store)
    assert ds.attrs["seed"] == seed and ds.attrs["n_fits"] == N_FITS
    assert (ds["n_test"].sum(["test_subset", "fold"]) == N_PIXELS).all()


@pytest.mark.slow
def test_run_over_tls_with_flags(pixels, tls, tmp_path, capsys):
    files, address = tls
    assert address.startswith("tls://")
    argv = [
        "run", *table_flags(pixels), "--folds", "3", "--learner", "featureless", "--seed", 4,
        "--scheduler", address, "--tls-ca-file", files.ca_file, "--tls-cert", files.cert,
        "--tls-key", files.key, "--no-progress", "--out", tmp_path / "r.zarr",
    ]  # fmt: skip
    code, _, err = soak(argv, capsys)
    assert code == 0 and "fits/s" not in err, err
    check_tls_run(tmp_path / "r.zarr", seed=4)


@pytest.mark.slow
def test_run_over_tls_from_run_file(pixels, tls, tmp_path, capsys):
    files, address = tls
    conf = write_toml(
        tmp_path / "run.toml",
        f"""
data = "{pixels}"
label = "label"
subset = "region"
group = "polygon"
folds = 3
seed = 5
learner = "featureless"
scheduler = "{address}"
tls_ca_file = "{files.ca_file}"
tls_cert = "{files.cert}"
tls_key = "{files.key}"
no_progress = true
out = "r.zarr"
""",
    )
    code, _, err = soak(["run", "--config", conf], capsys)
    assert code == 0, err
    check_tls_run(tmp_path / "r.zarr", seed=5)


@pytest.mark.slow
def test_run_checkpoints_and_resumes(pixels, cluster, tmp_path, capsys):
    """Finished fits land in the checkpoint; a rerun reuses them; other settings are refused."""
    out = tmp_path / "res.zarr"
    ckpt = tmp_path / "keep.checkpoint"
    argv = [
        "run", *table_flags(pixels), "--exclude", "x,y", "--learner", "featureless",
        "--folds", "3", "--sizes", "0", "--scheduler", cluster.scheduler_address,
        "--no-progress", "--out", out,
    ]  # fmt: skip
    code, _, _ = soak(argv, capsys)
    assert code == 0 and not (tmp_path / "res.zarr.checkpoint").exists()  # own one removed
    res = open_results(out)
    assert res.attrs["sizes"] == 0 and "train_size" in res.dims
    code, _, _ = soak([*argv, "--overwrite", "--checkpoint", ckpt], capsys)
    tasks = [json.loads(p.read_text()) for p in ckpt.glob("task-*.json")]
    assert code == 0 and len({(t["fit_id"], t["learner"]) for t in tasks}) == res.attrs["n_fits"]
    before = {p: p.stat().st_mtime_ns for p in ckpt.glob("task-*.json")}
    code, _, _ = soak([*argv, "--overwrite", "--checkpoint", ckpt], capsys)
    assert code == 0 and before == {p: p.stat().st_mtime_ns for p in ckpt.glob("task-*.json")}
    code, _, err = soak([*argv, "--overwrite", "--checkpoint", ckpt, "--seed", "2"], capsys)
    assert code == 2 and "other settings (seed: 1 then, 2 now" in err


def copy_table(pixels: Path, to: Path) -> Path:
    to.mkdir()
    for part in pixels.iterdir():
        (to / part.name).write_bytes(part.read_bytes())
    return to


@pytest.mark.slow
def test_run_refuses_a_checkpoint_of_a_rewritten_file(pixels, cluster, tmp_path, capsys):
    data = copy_table(pixels, tmp_path / "pixels")
    argv = [
        "run", data, "--label", "label", "--subset", "region", "--exclude", "x,y,polygon",
        "--folds", "3", "--learner", "featureless", "--scheduler", cluster.scheduler_address,
        "--no-progress", "--checkpoint", tmp_path / "ck",
    ]  # fmt: skip
    code, _, err = soak([*argv, "--out", tmp_path / "a.zarr"], capsys)
    assert code == 0, err
    part = sorted(data.iterdir())[1]
    table = pd.read_parquet(part)
    table.assign(B01=table["B01"] + 1.0).to_parquet(part)  # other feature values, same path
    code, _, err = soak([*argv, "--out", tmp_path / "b.zarr"], capsys)
    assert code == 2 and len(err.splitlines()) == 1, err
    assert f"other settings (data.parquet.{part}: " in err and "delete it to start over" in err
    assert not (tmp_path / "b.zarr").exists()


def read_only_dir(tmp_path: Path) -> Path:
    """A directory this process cannot write in (root writes anywhere but in /sys)."""
    if os.geteuid() != 0:
        path = tmp_path / "read-only"
        path.mkdir(mode=0o555)
        return path
    if not Path("/sys/kernel").is_dir():
        pytest.skip("running as root without /sys: no read-only directory to test with")
    return Path("/sys/kernel")


def test_run_checks_out_and_checkpoint_before_any_work(pixels, tmp_path, capsys):
    """Refused at once (no cluster is started, nothing is read or written): --out inside the
    input, holding it, holding other data, or not writable; a checkpoint inside the input."""
    data = copy_table(pixels, tmp_path / "pixels")
    other = tmp_path / "notes"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    run = ["run", data, "--label", "label", "--subset", "region", "--scheduler", "tcp://nowhere:1"]
    cases = {
        data / "r.zarr": f"is inside the input table's directory ({data})",
        tmp_path: f"holds the input table ({data})",
        other: f"{other} holds data that is not a soak_dask results store, and --overwrite",
        read_only_dir(tmp_path) / "r.zarr": "cannot write",
    }
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    for out, words in cases.items():
        argv = [*run, "--out", out, "--overwrite", "--checkpoint", tmp_path / "ck"]
        code, _, err = soak(argv, capsys)
        assert code == 2 and len(err.splitlines()) == 1 and words in err, err
    code, _, err = soak([*run, "--out", tmp_path / "r.zarr", "--checkpoint", data / "ck"], capsys)
    assert code == 2 and "ck is inside the input table's directory" in err, err
    code, _, err = soak([*run, "--out", tmp_path / "r.zarr", "--checkpoint", tmp_path], capsys)
    assert code == 2 and "overlap; give separate paths" in err, err
    assert before == {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes", "pixels"]


def test_report_of_a_path_that_is_not_results(pixels, tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    text = tmp_path / "notes.nc"
    text.write_text("not NetCDF")
    for path in (pixels, empty, text):
        code, _, err = soak(["report", path, "--out", tmp_path / "rep"], capsys)
        assert code == 2 and len(err.splitlines()) == 1, err
        assert err.startswith(f"soak: error: {path} is not a soak results store"), err
    assert not (tmp_path / "rep").exists()


def test_run_help_lists_the_builtin_learners_one_line_each(capsys):
    from soak_dask.learn.builtin import BUILTIN, DESCRIPTIONS

    assert list(DESCRIPTIONS) == list(BUILTIN)
    with pytest.raises(SystemExit) as stop:
        cli.main(["run", "--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    listed = out[out.index("built-in learners (--learner NAME):") :].splitlines()[1:]
    assert [line.split()[0] for line in listed] == list(BUILTIN)
    for line, name in zip(listed, BUILTIN, strict=True):
        assert DESCRIPTIONS[name] in line
    assert "lasso_cv                L1 logistic/linear regression" in out
    assert (
        "linear                  ordinary least-squares linear regression (regression only)" in out
    )


@pytest.mark.slow
def test_run_without_subset_prints_mean_sd_not_nan_pvalues(pixels, cluster, tmp_path, capsys):
    store = tmp_path / "plain.zarr"
    argv = [
        "run", str(pixels), "--label", "label", "--exclude", "x,y,region,polygon",
        "--folds", "3", "--learner", "featureless,logistic", "--measures", "error,auc",
        "--scheduler", cluster.scheduler_address, "--out", store, "--no-progress",
    ]  # fmt: skip
    code, out, err = soak(argv, capsys)
    assert code == 0, err
    assert "reference_mean" not in out and "NaN" not in out and "no p-values" not in err
    lines = out.splitlines()
    assert lines[0].startswith("one subset: plain K-fold CV")
    assert lines[1].startswith("error: mean ± SD over the folds of each learner")
    ds = open_results(store)
    summary = ds.soak.summary("error").set_index("learner")
    for learner in ("featureless", "logistic"):
        (row,) = [line.split() for line in lines if line.split()[:1] == [learner]]
        assert float(row[2]) == pytest.approx(summary.loc[learner, "mean"], abs=1e-4)
        assert int(row[-1]) == summary.loc[learner, "n_test_max"]
    # soak report says the same, then the page's path.
    code, report_out, err = soak(["report", store, "--out", tmp_path / "rep"], capsys)
    assert code == 0, err
    assert report_out.splitlines()[:-1] == lines[:-2]  # run also printed "", "Results: ..."
    page = Path(report_out.splitlines()[-1])
    assert "No p-values" in page.read_text(encoding="utf-8")


def test_version_flag_prints_the_installed_version(capsys):
    import soak_dask

    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"soak_dask {soak_dask.__version__}"


def test_help_shows_no_restructuredtext_markup(capsys):
    for argv in (["--help"], *([name, "--help"] for name in ("run", "evaluate", "report"))):
        with pytest.raises(SystemExit):
            cli.main(argv)
        assert "``" not in capsys.readouterr().out, argv
