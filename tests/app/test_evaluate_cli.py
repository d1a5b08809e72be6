"""Tests of ``soak evaluate``: flags and run files declared once with ``evaluate``'s keywords,
results equal to the Python API's, ``soak report`` on them, and errors that name the option.

The runs are real ``evaluate`` computations on a small generated pixel table (Parquet, polygons
as groups) on the session's LocalCluster of two single-threaded workers (tests/conftest.py)
passed by address.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import xarray as xr
from distributed import Client

import soak_dask as sd
from soak_dask.app import cli, flags
from soak_dask.app.config import EvaluateSettings, evaluation_keys
from soak_dask.settings import OptionError
from soak_dask.tables.generated import write_pixel_parquet

N_PIXELS = 3000
TIMINGS = ["fit_seconds", "predict_seconds"]
#: The evaluation of every run here, as flags.
FLAGS = [
    "--label", "label", "--group", "polygon", "--exclude", "x,y,region",
    "--learners", "featureless,logistic", "--measures", "error,auc",
    "--outer", "repeated_cv", "--outer-folds", "3", "--outer-repeats", "2",
    "--test-split", "0.2", "--seed", "5",
]  # fmt: skip
#: The same as Python keywords.
KEYWORDS = {
    "outer": "repeated_cv", "outer_folds": 3, "outer_repeats": 2, "test_split": 0.2, "seed": 5,
    "measures": ["error", "auc"],
}  # fmt: skip


@pytest.fixture(scope="module")
def pixels(tmp_path_factory) -> Path:
    return write_pixel_parquet(
        tmp_path_factory.mktemp("data") / "pixels", n_files=3, n_pixels=N_PIXELS, n_regions=2,
        seed=1,
    )  # fmt: skip


def soak(argv: list, capsys) -> tuple[int, str, str]:
    """Run ``soak argv`` in this process; return its exit status, stdout and stderr."""
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def flag_run(pixels, cluster, tmp_path_factory):
    """``soak evaluate`` by flags: its exit status, stdout and results store."""
    store = tmp_path_factory.mktemp("run") / "results.zarr"
    argv = ["evaluate", pixels, *FLAGS, "--scheduler", cluster.scheduler_address, "--no-progress"]
    code = cli.main([str(a) for a in [*argv, "--out", store]])
    return code, store


@pytest.mark.slow
def test_evaluate_by_flags_equals_the_python_api(flag_run, pixels, cluster, tmp_path):
    code, store = flag_run
    assert code == 0 and not Path(f"{store}.checkpoint").exists()  # own checkpoint removed
    got = sd.open_results(store)
    table = sd.load_table(str(pixels), label="label", group="polygon", exclude=["x", "y", "region"])
    with Client(cluster) as client:
        res = sd.evaluate(
            table,
            ["featureless", "logistic"],
            **KEYWORDS,
            options=sd.RunOptions(client=client, progress=False),
        )
    expected = sd.open_results(sd.save_results(res, tmp_path / "python.zarr"))
    timings = [*TIMINGS, "final_fit_seconds"]
    xr.testing.assert_allclose(got.drop_vars(timings), expected.drop_vars(timings), rtol=1e-12)
    untimed = ("versions", "outer_seconds", "final_seconds")
    assert {k: v for k, v in got.attrs.items() if k not in untimed} == {
        k: v for k, v in expected.attrs.items() if k not in untimed
    }
    assert got.attrs["outer"] == "repeated_cv"
    # whole polygons: the share of rows drawn, within a polygon of 0.2
    share = float(got["n_test_split"][0]) / N_PIXELS
    assert got.attrs["test_split"] == pytest.approx(share) and abs(share - 0.2) < 0.02
    sizes = {"learner": 2, "repeat": 2, "fold": 3, "interval": 3, "versus": 2}
    assert dict(got.sizes) == sizes
    assert (got["n_test"].sum("fold") + got["n_test_split"] == N_PIXELS).all()


@pytest.mark.slow
def test_report_of_an_evaluate_store(flag_run, tmp_path, capsys):
    _, store = flag_run
    code, out, err = soak(["report", store, "--out", tmp_path / "rep"], capsys)
    assert code == 0, err
    page = Path(out.strip().splitlines()[-1])
    files = {p.name for p in page.parent.iterdir()}
    assert {"summary.csv", "folds.csv", "compare.csv", "evaluation_error.png"} <= files
    assert "3-fold cross-validation repeated 2 times" in page.read_text(encoding="utf-8")
    # It prints the summary soak evaluate printed: mean ± SD and the test split's interval.
    lines = out.splitlines()
    assert lines[0].startswith("outer=repeated_cv: mean ± SD over the n resampling cells")
    assert "SD, not a standard error" in lines[0] and "test split" in lines[0]
    assert lines[1].split() == [
        "learner", "measure", "n", "mean", "sd", "min", "max", "weighted_mean", "n_test_min",
        "n_test_max", "test_estimate", "test_low", "test_high",
    ]  # fmt: skip
    summary = sd.open_results(store).soak.summary().set_index(["learner", "measure"])
    for line in lines[2:6]:
        learner, measure, n, mean, *_ = line.split()
        assert float(mean) == pytest.approx(summary.loc[(learner, measure), "mean"], abs=1e-4)
        assert int(n) == 6
    # Then the learners compared: repeated CV's recommended test and McNemar's on the split.
    start = lines.index(next(x for x in lines if "learners compared" in x))
    assert "test recommended for outer='repeated_cv'" in lines[start]
    compared = sd.compare(sd.open_results(store), "featureless", "logistic", "error")
    assert list(compared["method"]) == ["corrected", "mcnemar"]
    for line, row in zip(lines[start + 2 : start + 4], compared.itertuples(), strict=True):
        a, b, method, n, diff, low, high, p, *verdict = line.split()
        assert (a, b, method, int(n)) == ("featureless", "logistic", row.method, row.n)
        assert " ".join(verdict) == sd.with_verdicts(compared).loc[row.Index, "verdict"]
        assert float(low) == pytest.approx(row.ci_low, abs=1e-4) and float(p) == pytest.approx(
            row.p, abs=1e-4
        )


def write_toml(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


RUN_FILE = """
data = "pixels"
label = "label"
group = "polygon"
exclude = ["x", "y", "region"]
learners = ["featureless", "logistic"]
measures = "error,auc"
seed = 5
n_folds = 4                  # soak run's: soak evaluate leaves it
out = "results.zarr"

[evaluation]
outer = "repeated_cv"
outer_folds = 3
outer_repeats = 2
test_split = 0.2
models = "models"            # relative to this file, as data and out
"""


def evaluate_settings(argv: list) -> EvaluateSettings:
    args = cli.build_parser().parse_args(["evaluate", *map(str, argv)])
    return flags.run_settings(args, "evaluate")


def test_run_file_evaluation_table_equals_the_flags(tmp_path):
    conf = write_toml(tmp_path / "run.toml", RUN_FILE)
    from_file = evaluate_settings(["--config", conf])
    by_flags = evaluate_settings(
        [tmp_path / "pixels", *FLAGS, "--out", tmp_path / "results.zarr",
         "--models", tmp_path / "models"]
    )  # fmt: skip
    assert from_file == by_flags
    assert (from_file.outer, from_file.outer_folds, from_file.test_split) == ("repeated_cv", 3, 0.2)
    assert from_file.models == str(tmp_path / "models")
    # Flags override the table's keys; soak run reads the same file and leaves [evaluation].
    assert evaluate_settings(["--config", conf, "--outer-repeats", "4"]).outer_repeats == 4
    # A flag that changes the design leaves the file's options of the other design moot: refused.
    with pytest.raises(
        OptionError, match=r"outer_folds=3 has no effect with outer='bootstrap'.*run\.toml"
    ):
        evaluate_settings(["--config", conf, "--outer", "bootstrap"])
    run = flags.run_settings(cli.build_parser().parse_args(["run", "--config", str(conf)]))
    assert run.n_folds == 4 and not hasattr(run, "outer")
    # Without the table, evaluate's defaults: None until the outer design fills its own in.
    # The top-level n_folds is soak run's K: evaluate refuses it rather than ignore it.
    plain_text = RUN_FILE.split("[evaluation]")[0]
    plain = write_toml(tmp_path / "plain.toml", plain_text)
    with pytest.raises(OptionError, match="sets n_folds = 4, which soak evaluate does not read"):
        evaluate_settings(["--config", plain])
    plain = write_toml(tmp_path / "plain.toml", plain_text.replace("n_folds = 4", ""))
    got = evaluate_settings(["--config", plain])
    assert (got.outer, got.outer_folds, got.outer_repeats, got.test_split, got.models) == (
        "cv",
        None,
        None,
        0.0,
        None,
    )


def error_cases(pixels: Path, tmp: Path) -> list[tuple[list, str]]:
    """(argv, expected message): each refused before any cluster starts."""
    base = ["evaluate", pixels, "--label", "label", "--out", tmp / "r.zarr"]

    def conf(name: str, text: str) -> list:
        return ["--config", write_toml(tmp / name, f'data = "{pixels}"\n{text}')]

    valid = ", ".join(evaluation_keys())
    return [
        ([*base, "--outer", "kfold"], "argument --outer: invalid choice: 'kfold' (choose from"),
        ([*base, "--outer-folds", "1"], "--outer-folds=1: need an integer of at least 2"),
        ([*base, "--outer-repeats", "0"], "--outer-repeats=0: need a positive integer"),
        ([*base, "--test-split", "0.7"], "--test-split=0.7: need a share from 0 (none) to 0.5"),
        ([*base, "--test-split", "a"], "argument --test-split: invalid float value: 'a'"),
        ([*base, "--train-ratio", "1"], "--train-ratio=1.0: need 0 < ratio < 1"),
        ([*base, "--n-folds", "3"], "unrecognized arguments: --n-folds 3"),
        ([*base, "--learners", "nope"], "unknown learner 'nope'"),
        ([*base, "--models", pixels / "m"], "is inside the input table's directory"),
        ([*base, "--models", tmp / "r.zarr" / "m"], "--models"),
        (
            [*base, *conf("k.toml", "[evaluation]\nfolds = 3\n")],
            f"unknown key 'folds' in "
            f"[evaluation] of run file '{tmp / 'k.toml'}'; valid keys: {valid}",
        ),  # fmt: skip
        ([*base, *conf("t.toml", "outer = 'cv'\n")], "'outer' in run file"),
        ([*base, *conf("t.toml", "outer = 'cv'\n")], "it belongs in the [evaluation] table"),
        (
            [*base, *conf("v.toml", "[evaluation]\ntest_split = 0.9\n")],
            "test_split=0.9: need a share from 0 (none) to 0.5 (in [evaluation] of run file",
        ),
        ([*base, *conf("o.toml", "[evaluation]\nouter = 'kfold'\n")], "outer='kfold': choose"),
        ([*base, *conf("e.toml", "evaluation = 3\n")], "evaluation = 3 in run file"),
    ]


def test_bad_options_name_the_flag_or_key(pixels, tmp_path, capsys):
    for argv, message in error_cases(pixels, tmp_path):
        code, _, err = soak(argv, capsys)
        assert code == 2 and err.startswith("soak: error: ") and message in err, (argv, err)
        assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r.zarr").exists()


@pytest.mark.slow
def test_a_run_file_saves_the_models(pixels, cluster, tmp_path, capsys):
    """In this process: the installed ``soak`` script is run as a new process by
    tests/app/test_cli.py's test_installed_entry_point."""
    (tmp_path / "pixels").symlink_to(pixels, target_is_directory=True)
    text = RUN_FILE.replace("outer_repeats = 2\n", "").replace("repeated_", "")
    conf = write_toml(tmp_path / "run.toml", text)
    argv = ["evaluate", "--config", conf, "--scheduler", cluster.scheduler_address]
    code, out, err = soak([*argv, "--no-progress"], capsys)
    assert code == 0, err
    assert f"Results: {tmp_path / 'results.zarr'}" in out
    assert f"Models: {tmp_path / 'models'}" in out
    ds = sd.open_results(tmp_path / "results.zarr")
    assert ds.attrs["outer"] == "cv" and ds.sizes["fold"] == 3 and ds.sizes["repeat"] == 1
    model = sd.load_model(tmp_path / "models" / "logistic.skops")
    frame = sd.load_table(str(pixels), label="label", exclude=["x", "y", "region", "polygon"])
    predicted = sd.predict_table(model, frame.data.head(50))
    assert set(predicted) <= {"tree", "other"}
