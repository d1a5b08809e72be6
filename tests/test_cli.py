"""Tests of the ``soak`` command line: run (flags, run file, learners, TLS), report, demo, errors.

Every run is a real SOAK computation on a small generated pixel table (2 regions, polygons as
groups, 3 folds: 9 distinct fits per learner) on a LocalCluster of two single-threaded workers
passed by address.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from distributed import LocalCluster

from soak_dask import cli, open_results
from soak_dask.config import RunSettings, load_run_file, merge_settings, setting_names
from soak_dask.demo import write_pixel_parquet

from .tls_certs import cluster_security, make_tls_files

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


@pytest.fixture(scope="module")
def cluster():
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster:
        yield cluster


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
    assert "p_paired" in out and f"Results: {store}" in out
    assert open_results(store).attrs["n_fits"] == N_FITS


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
    required = {"data": "d", "label": "y", "out": "o"}
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
        ("os:system", "is not a scikit-learn estimator class"),
        ("no_such_module_xyz:Model", "cannot import module 'no_such_module_xyz'"),
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


def user_error_cases(pixels: Path, tmp: Path) -> list[tuple[list, str]]:
    """(argv, expected message) pairs, each a mistake caught before any cluster starts."""
    base = ["run", *table_flags(pixels), "--out", tmp / "r.zarr"]
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
        ([*base, "--features", "B01,nope"], "feature columns ['nope'] are not in"),
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


def test_user_errors_print_one_line_and_exit_2(pixels, tmp_path, capsys):
    for argv, message in user_error_cases(pixels, tmp_path):
        code, out, err = soak(argv, capsys)
        assert code == 2, (argv, err)
        assert err.startswith("soak: error: ") and message in err, (argv, err)
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert not (tmp_path / "r.zarr").exists()


def test_debug_raises_with_traceback(pixels, tmp_path):
    argv = ["run", *table_flags(pixels), "--label", "nope", "--out", tmp_path / "r.zarr"]
    for debug in (["--debug", *argv], [*argv, "--debug"]):
        with pytest.raises(ValueError, match="label column 'nope' is not in"):
            cli.main([str(a) for a in debug])


def test_every_setting_has_a_flag():
    argv = [
        "run", "data", "--label", "y", "--subset", "s", "--group", "g", "--fold-column", "f",
        "--features", "a,b", "--exclude", "c", "--folds", "3", "--seed", "2", "--learner", "lda",
        "--train-types", "same", "--measures", "error", "--no-persist", "--scheduler", "tcp://h:1",
        "--tls-ca-file", "ca", "--tls-cert", "c", "--tls-key", "k", "--out", "o", "--overwrite",
        "--no-progress", "--sizes", "0", "--ratio", "0.25", "--size-seeds", "2",
        "--max-train-rows", "100", "--incremental", "--epochs", "2", "--checkpoint", "ck",
        "--rows-per-partition", "1000",
    ]  # fmt: skip
    given = set(vars(cli.build_parser().parse_args(argv)))
    assert set(setting_names()) - given == {"learners"}  # [learners.NAME] tables: files only
    assert set(RunSettings.__dataclass_fields__) == set(setting_names()) - {"learners"} | {
        "learner_specs"
    }


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
    assert pd.read_csv(tmp_path / "pvalues.csv")["p_paired"].notna().any()
    report = tmp_path / "report" / "report.html"
    assert f"Report: {report}" in out
    assert "soak_error.png" in {p.name for p in report.parent.iterdir()}


def test_report_writes_html(flag_run, tmp_path, capsys):
    pytest.importorskip("soak_dask.report")
    _, store = flag_run
    code, out, err = soak(["report", store, "--out", tmp_path / "rep"], capsys)
    assert code == 0, err
    html = Path(out.strip().splitlines()[-1])
    assert html.name == "report.html" and html.is_file() and html.stat().st_size > 0
    assert "logistic" in html.read_text(encoding="utf-8")
    other = tmp_path / "notes"
    other.mkdir()
    (other / "notes.txt").write_text("not a report")
    code, out, err = soak(["report", store, "--out", other], capsys)
    assert code == 2 and err.startswith("soak: error: ") and len(err.splitlines()) == 1
    assert "does not hold a soak_dask report" in err
    code, out, err = soak(["report", store, "--out", other, "--overwrite"], capsys)
    assert code == 0 and (other / "report.html").is_file() and (other / "notes.txt").exists()


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    files = make_tls_files(tmp_path_factory.mktemp("tls"))
    with LocalCluster(
        protocol="tls",
        security=cluster_security(files),
        host="127.0.0.1",
        n_workers=1,
        threads_per_worker=1,
        dashboard_address=":0",
    ) as cluster:
        yield files, cluster.scheduler_address


def check_tls_run(store: Path, seed: int) -> None:
    ds = open_results(store)
    assert ds.attrs["seed"] == seed and ds.attrs["n_fits"] == N_FITS
    assert (ds["n_test"].sum(["test_subset", "fold"]) == N_PIXELS).all()


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
