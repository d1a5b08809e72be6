"""What soak_dask writes, and what it never touches (issue 21): the one output-directory rule
(``soak_dask.io.outdir``) for every report, command output and models directory, safe
model file names, a signed feature order, and checkpoints that name the data by any path.

Each case runs the Python API and, where there is one, the command (in this process, on
Dask's synchronous scheduler instead of a cluster). Tables are small and generated.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import zipfile
from pathlib import Path

import dask
import numpy as np
import pytest
import xarray as xr

import soak_dask as sd
from soak_dask.app import cli
from soak_dask.io.outdir import MANIFEST, OutputDir, check_out_dir
from soak_dask.learn.model_dir import check_model_names, check_models_dir
from soak_dask.run import cluster

from .conftest import toy_table


@pytest.fixture(autouse=True)
def synchronous(monkeypatch):
    # The commands' cluster: Dask's local scheduler, as the Python API runs without a client.
    monkeypatch.setattr(cluster, "connect", lambda *a, **k: contextlib.nullcontext())
    with dask.config.set(scheduler="synchronous"):
        yield


@pytest.fixture
def data(tmp_path) -> Path:
    """A Parquet input directory (two subsets)."""
    path = tmp_path / "data"
    path.mkdir()
    toy_table(80, 2, seed=3).to_parquet(path / "part.0.parquet")
    return path


def load(path: Path | str) -> sd.Table:
    return sd.load_table(str(path), label="y", subset="subset")


@pytest.fixture
def results(data) -> object:
    # One measure: a report's figures are per measure, and the rule is the same for each.
    return sd.soak(
        load(data),
        "featureless",
        n_folds=2,
        measures="error",
        options=sd.RunOptions(progress=False),
    )


def soak(argv: list, capsys) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def listing(path: Path) -> dict[str, bytes]:
    """Every file under ``path`` and its bytes: to show nothing was touched."""
    return {
        str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()
    }


def one_line(err: str, *words: str) -> None:
    assert err.startswith("soak: error: ") and len(err.strip().splitlines()) == 1, err
    for word in words:
        assert word in err, err


def boom(*args, **kwargs):
    raise AssertionError("computation started before the output was checked")


# --- the rule itself -------------------------------------------------------------------------


def test_manifest_lists_what_was_written_and_overwrite_replaces_only_that(tmp_path):
    out = tmp_path / "out"
    od = check_out_dir(out, writer="w").begin()
    od.claim("a.csv").write_text("1")
    (od.claim("store")).mkdir()
    (out / "store" / "x").write_text("x")
    od.finish()
    record = json.loads((out / MANIFEST).read_text())
    assert record["writer"] == "w" and set(record["files"]) == {"a.csv", "store"}
    assert all(len(d) == 64 for d in record["files"].values())
    with pytest.raises(FileExistsError, match="earlier output of w; pass overwrite=True"):
        check_out_dir(out, writer="w")
    with pytest.raises(FileExistsError, match="was written by w, not v"):
        check_out_dir(out, writer="v", overwrite=True)
    again = check_out_dir(out, writer="w", overwrite=True).begin()
    assert sorted(p.name for p in out.iterdir()) == [MANIFEST]  # the earlier output, gone
    again.claim("b.csv").write_text("2")
    again.finish()
    assert sorted(p.name for p in out.iterdir()) == ["b.csv", MANIFEST]


def test_a_file_not_written_or_changed_since_is_never_replaced(tmp_path):
    out = tmp_path / "out"
    od = check_out_dir(out, writer="w").begin()
    od.claim("summary.csv").write_text("ours")
    od.finish()
    (out / "notes.txt").write_text("the user's")
    with pytest.raises(FileExistsError, match="holds notes.txt, which w did not write"):
        check_out_dir(out, writer="w", overwrite=True)
    (out / "notes.txt").unlink()
    (out / "summary.csv").write_text("edited by the user")
    with pytest.raises(FileExistsError, match="summary.csv changed since w wrote them"):
        check_out_dir(out, writer="w", overwrite=True)
    assert (out / "summary.csv").read_text() == "edited by the user"


def test_a_directory_without_a_manifest_or_with_a_damaged_one_is_refused(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "report.html").write_text("<p>my own report</p>")
    with pytest.raises(FileExistsError, match="report.html and no soak_dask_output.json"):
        check_out_dir(mine, writer="w", overwrite=True)
    for files in ({"../escape": None}, {"a/b": None}, ["report.html"], {"": None}):
        (mine / MANIFEST).write_text(json.dumps({"format": "soak_dask.output", "writer": "w",
                                                 "files": files}))  # fmt: skip
        with pytest.raises(FileExistsError, match="damaged or was not written by soak_dask"):
            check_out_dir(mine, writer="w", overwrite=True)
    assert (mine / "report.html").read_text() == "<p>my own report</p>"
    (tmp_path / "file").write_text("")
    with pytest.raises(FileExistsError, match="exists and is not a directory"):
        check_out_dir(tmp_path / "file", writer="w", overwrite=True)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert check_out_dir(empty, writer="w").path == empty  # empty: as good as new


def test_a_run_stopped_half_way_leaves_a_directory_the_next_run_refuses(tmp_path):
    out = tmp_path / "out"
    od = check_out_dir(out, writer="w").begin()
    od.claim("half.csv").write_text("half")  # listed before written; no finish()
    assert json.loads((out / MANIFEST).read_text())["files"] == {"half.csv": None}
    # No digest: it cannot be told from a user's file of that name (issue 38), so it is kept.
    with pytest.raises(FileExistsError, match="half.csv, listed with no digest"):
        check_out_dir(out, writer="w", overwrite=True).begin()
    assert (out / "half.csv").read_text() == "half"


def test_claim_refuses_names_that_leave_the_directory(tmp_path):
    od = check_out_dir(tmp_path / "out", writer="w")
    for name in ("../x", "/abs", "a/b", ".hidden", "", MANIFEST):
        with pytest.raises(ValueError, match="plain file name"):
            od.claim(name)


def test_begin_checks_again_what_changed_while_the_results_were_computed(tmp_path):
    out = tmp_path / "out"
    od = check_out_dir(out, writer="w")
    out.mkdir()
    (out / "appeared.txt").write_text("the user's, written during the run")
    with pytest.raises(FileExistsError, match="appeared.txt"):
        od.begin()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_a_read_only_directory_is_refused_before_any_work(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(PermissionError, match="cannot write"):
            check_out_dir(locked / "out", writer="w")
    finally:
        locked.chmod(0o700)


# --- reports: write_report and soak report ---------------------------------------------------


@pytest.mark.slow
def test_write_report_follows_the_rule(results, data, tmp_path):
    out = tmp_path / "rep"
    # One measure's figures where a report is written: every figure is written by one rule.
    page = sd.write_report(results, out, "error")
    listed = json.loads((out / MANIFEST).read_text())["files"]
    assert page.name == "report.html" and set(listed) == {p.name for p in out.iterdir()} - {
        MANIFEST
    }
    with pytest.raises(FileExistsError, match="earlier output of soak_dask's report"):
        sd.write_report(results, out)
    sd.write_report(results, out, "error", overwrite=True)
    (out / "mine.txt").write_text("x")
    with pytest.raises(FileExistsError, match="mine.txt"):
        sd.write_report(results, out, overwrite=True)
    before = listing(data)
    for where, relation in ((data, "is the input table"), (data / "rep", "inside the input")):
        with pytest.raises(ValueError, match=relation):
            sd.write_report(results, where, overwrite=True)
    assert listing(data) == before and not (data / "rep").exists()


def test_a_users_report_html_and_summary_csv_are_never_replaced(results, tmp_path):
    own = tmp_path / "own"
    own.mkdir()
    (own / "report.html").write_text("mine")
    (own / "summary.csv").write_text("mine")
    with pytest.raises(FileExistsError, match="report.html, summary.csv"):
        sd.write_report(results, own, overwrite=True)
    assert (own / "report.html").read_text() == (own / "summary.csv").read_text() == "mine"


@pytest.mark.slow
def test_an_evaluation_report_replaces_a_soak_report_not_a_transfer_report(data, results, tmp_path):
    out = tmp_path / "rep"
    sd.write_report(results, out, "error")
    ev = sd.evaluate(
        load(data), "featureless", outer_folds=2, options=sd.RunOptions(progress=False)
    )
    sd.write_report(ev, out, "error", overwrite=True)  # one writer: soak_dask's report
    assert not list(out.glob("soak_*.png")) and list(out.glob("evaluation_*"))
    matrix = sd.transfer(
        load(data), "featureless", n_folds=2, options=sd.RunOptions(progress=False)
    )
    with pytest.raises(FileExistsError, match="written by soak_dask's report, not"):
        from soak_dask.pooling.report import write_transfer_report

        write_transfer_report(matrix, out, overwrite=True)


@pytest.mark.slow
def test_soak_report_never_writes_into_the_input_or_the_store(results, data, tmp_path, capsys):
    store = sd.save_results(results, tmp_path / "r.zarr")
    before, stored = listing(data), listing(store)
    cases = [
        (data, "is the input table"),
        (data / "sub", "is inside the input table's directory"),
        (store, "is the results store"),
        (store / "report", "inside the results store's directory"),
        (tmp_path, "holds the results store"),
    ]
    for out, message in cases:
        code, _, err = soak(["report", store, "--out", out, "--overwrite"], capsys)
        assert code == cli.USAGE_ERROR
        one_line(err, message)
    assert listing(data) == before and listing(store) == stored
    code, _, err = soak(["report", store, "--out", tmp_path / "rep"], capsys)
    assert code == 0, err
    code, _, err = soak(["report", store, "--out", tmp_path / "rep"], capsys)
    one_line(err, "earlier output", "--overwrite")
    (tmp_path / "rep" / "report.html").write_text("edited")
    code, _, err = soak(["report", store, "--out", tmp_path / "rep", "--overwrite"], capsys)
    one_line(err, "report.html changed since")


def test_save_results_refuses_the_input_and_what_it_did_not_write(results, data, tmp_path):
    before = listing(data)
    with pytest.raises(ValueError, match="is the input table"):
        sd.save_results(results, data, overwrite=True)
    with pytest.raises(ValueError, match="inside the input table's directory"):
        sd.save_results(results, data / "r.zarr", overwrite=True)
    assert listing(data) == before
    (tmp_path / "r.nc").write_text("the user's")
    with pytest.raises(FileExistsError, match="not a soak_dask results store"):
        sd.save_results(results, tmp_path / "r.nc", overwrite=True)


# --- soak transfer ---------------------------------------------------------------------------


TRANSFER = ["--label", "y", "--subset", "subset", "--n-folds", "2", "--learner", "featureless",
            "--measures", "error", "--no-search", "--no-progress"]  # fmt: skip


@pytest.mark.slow
def test_transfer_refuses_its_earlier_output_without_overwrite(data, tmp_path, capsys, monkeypatch):
    out = tmp_path / "t"
    code, _, err = soak(["transfer", data, *TRANSFER, "--out", out], capsys)
    assert code == 0, err
    listed = set(json.loads((out / MANIFEST).read_text())["files"])
    assert {"transfer.zarr", "transfer.csv", "report.html"} <= listed
    assert listed == {p.name for p in out.iterdir()} - {MANIFEST}
    from soak_dask.pooling import matrix

    monkeypatch.setattr(matrix, "transfer", boom)  # refused before any computation
    code, _, err = soak(["transfer", data, *TRANSFER, "--out", out], capsys)
    one_line(err, "earlier output", "--overwrite")
    (out / "report.html").write_text("my edit")
    code, _, err = soak(["transfer", data, *TRANSFER, "--out", out, "--overwrite"], capsys)
    one_line(err, "report.html changed since")
    assert (out / "report.html").read_text() == "my edit"


def test_transfer_overwrite_keeps_a_users_files_and_the_input(data, tmp_path, capsys, monkeypatch):
    from soak_dask.pooling import matrix

    monkeypatch.setattr(matrix, "transfer", boom)
    own = tmp_path / "own"
    own.mkdir()
    (own / "report.html").write_text("mine")
    (own / "summary.csv").write_text("mine")
    code, _, err = soak(["transfer", data, *TRANSFER, "--out", own, "--overwrite"], capsys)
    one_line(err, "report.html, summary.csv", "did not write")
    assert listing(own) == {"report.html": b"mine", "summary.csv": b"mine"}
    before = listing(data)
    code, _, err = soak(["transfer", data, *TRANSFER, "--out", data, "--overwrite"], capsys)
    one_line(err, "is the input table")
    assert listing(data) == before


@pytest.mark.slow
def test_transfer_overwrite_replaces_its_own_output(data, tmp_path, capsys):
    out = tmp_path / "t"
    assert soak(["transfer", data, *TRANSFER, "--out", out], capsys)[0] == 0
    first = listing(out)
    code, _, err = soak(["transfer", data, *TRANSFER, "--out", out, "--overwrite"], capsys)
    assert code == 0, err
    assert set(listing(out)) == set(first)


@pytest.mark.slow
def test_write_transfer_report_refuses_its_input_and_earlier_report(data, tmp_path):
    from soak_dask.pooling.report import write_transfer_report

    matrix = sd.transfer(
        load(data),
        "featureless",
        n_folds=2,
        measures="error",
        options=sd.RunOptions(progress=False),
    )
    write_transfer_report(matrix, tmp_path / "t")
    with pytest.raises(FileExistsError, match="earlier output"):
        write_transfer_report(matrix, tmp_path / "t")
    write_transfer_report(matrix, tmp_path / "t", overwrite=True)
    with pytest.raises(ValueError, match="is the input table"):
        write_transfer_report(matrix, data, overwrite=True)


# --- soak split-sensitivity and soak compare-sampling ----------------------------------------


SENSITIVITY = ["--label", "y", "--features", "x0,x1,x2", "--learner", "featureless",
               "--ratios", "0.6", "--n-repeats", "3", "--n-folds", "2",
               "--no-progress"]  # fmt: skip
SAMPLING = ["--label", "y", "--features", "x0,x1,x2", "--learner", "featureless",
            "--methods", "random,stratified", "--n-repeats", "3"]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(
    ("command", "flags", "module", "function"),
    [
        ("split-sensitivity", SENSITIVITY, "soak_dask.diagnose.sensitivity", "split_sensitivity"),
        ("compare-sampling", SAMPLING, "soak_dask.diagnose.mai", "compare_sampling"),
    ],
)
def test_diagnostics_follow_the_rule(command, flags, module, function, data, tmp_path, capsys,
                                     monkeypatch):  # fmt: skip
    out = tmp_path / "o"
    code, _, err = soak([command, data, *flags, "--out", out], capsys)
    assert code == 0, err
    listed = set(json.loads((out / MANIFEST).read_text())["files"])
    assert listed == {p.name for p in out.iterdir()} - {MANIFEST}
    code, _, err = soak([command, data, *flags, "--out", out, "--overwrite"], capsys)
    assert code == 0, err
    import importlib

    monkeypatch.setattr(importlib.import_module(module), function, boom)
    code, _, err = soak([command, data, *flags, "--out", out], capsys)  # its own, no flag
    one_line(err, "earlier output", "--overwrite")
    (out / "notes.txt").write_text("mine")
    code, _, err = soak([command, data, *flags, "--out", out, "--overwrite"], capsys)
    one_line(err, "notes.txt", "did not write")
    own = tmp_path / "own"
    own.mkdir()
    (own / "summary.csv").write_text("mine")
    code, _, err = soak([command, data, *flags, "--out", own, "--overwrite"], capsys)
    one_line(err, "summary.csv")
    assert (own / "summary.csv").read_text() == "mine"
    before = listing(data)
    for where in (data, data / "o"):
        code, _, err = soak([command, data, *flags, "--out", where, "--overwrite"], capsys)
        one_line(err, "input table")
    assert listing(data) == before


# --- models: names, directory, signed feature order ------------------------------------------


BAD_NAMES = ["../../escape", "/abs/path", "", "a\nb", "sub/dir", ".hidden", "..", "a b", "é"]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_unsafe_learner_names_are_refused_before_any_fit(name, data, tmp_path, monkeypatch):
    from soak_dask.run import session as module  # the one run path every fit goes through

    monkeypatch.setattr(module, "run_plan", boom)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="cannot name a model file") as err:
        sd.evaluate(load(data), {name: "featureless"}, models=tmp_path / "m" / "n")
    assert repr(name) in str(err.value) and "[learners.NAME]" in str(err.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]


def test_two_names_for_one_model_file_are_refused(data, tmp_path):
    with pytest.raises(ValueError, match="'fl' and 'FL' would share one model file"):
        sd.evaluate(load(data), {"fl": "featureless", "FL": "featureless"}, models=tmp_path / "m")
    check_model_names(["a", "a.b", "a-b", "a_b", "A1"])  # all distinct, all safe


def test_any_learner_name_is_fine_without_models(data):
    res = sd.evaluate(
        load(data),
        {"sub/dir name": "featureless"},
        outer_folds=2,
        options=sd.RunOptions(progress=False),
    )
    assert list(res["learner"].values) == ["sub/dir name"]


def test_run_file_learner_names_are_refused_with_models(data, tmp_path, capsys):
    conf = tmp_path / "run.toml"
    conf.write_text('[learners]\n"../../escape" = "featureless"\n')
    argv = ["evaluate", data, "--label", "y", "--config", conf, "--models", tmp_path / "a" / "m",
            "--out", tmp_path / "r.zarr", "--outer-folds", "2", "--no-progress"]  # fmt: skip
    code, _, err = soak(argv, capsys)
    one_line(err, "'../../escape'", "[learners.NAME]")
    assert not (tmp_path / "a").exists() and not (tmp_path / "escape.skops").exists()


def test_models_at_a_file_the_input_or_a_users_files_are_refused_before_any_fit(
    data, tmp_path, monkeypatch
):
    from soak_dask.run import session as module  # the one run path every fit goes through

    monkeypatch.setattr(module, "run_plan", boom)
    table = load(data)
    (tmp_path / "file").write_text("")
    users = tmp_path / "users"
    users.mkdir()
    (users / "featureless.skops").write_bytes(b"PK not a soak_dask model")
    cases = [
        (tmp_path / "file", FileExistsError, "is a file"),
        (data, ValueError, "is the input table"),
        (data / "m", ValueError, "inside the input table's directory"),
        (users, FileExistsError, "featureless.skops, which soak_dask did not write"),
    ]
    before = listing(data)
    for models, error, message in cases:
        with pytest.raises(error, match=message):
            sd.evaluate(table, "featureless", models=models)
    assert listing(data) == before and (users / "featureless.skops").read_bytes().startswith(b"PK")


@pytest.mark.slow
def test_models_cli_refuses_a_file_a_users_model_and_earlier_models(data, tmp_path, capsys):
    base = ["evaluate", data, "--label", "y", "--learners", "featureless", "--outer-folds", "2",
            "--no-progress"]  # fmt: skip
    (tmp_path / "file").write_text("")
    users = tmp_path / "users"
    users.mkdir()
    (users / "featureless.skops").write_bytes(b"not ours")
    for models, message in ((tmp_path / "file", "is a file"), (users, "did not write")):
        code, _, err = soak([*base, "--models", models, "--out", tmp_path / "r.zarr"], capsys)
        one_line(err, "--models", message)
    assert not (tmp_path / "r.zarr").exists()
    models = tmp_path / "models"
    code, _, err = soak([*base, "--models", models, "--out", tmp_path / "r1.zarr"], capsys)
    assert code == 0, err
    assert [p.name for p in models.iterdir()] == ["featureless.skops"]
    code, _, err = soak([*base, "--models", models, "--out", tmp_path / "r2.zarr"], capsys)
    one_line(err, "holds models an earlier run saved", "--overwrite")
    code, _, err = soak(
        [*base, "--models", models, "--out", tmp_path / "r2.zarr", "--overwrite"], capsys
    )
    assert code == 0, err
    sd.load_model(models / "featureless.skops")


def test_evaluate_replaces_only_its_own_model_files(data, tmp_path):
    models = tmp_path / "m"
    table = load(data)
    sd.evaluate(
        table, "featureless", outer_folds=2, models=models, options=sd.RunOptions(progress=False)
    )
    sd.evaluate(
        table, "featureless", outer_folds=2, models=models, options=sd.RunOptions(progress=False)
    )
    assert check_models_dir(models, ["featureless"]) == models
    with pytest.raises(FileExistsError, match="pass --overwrite"):
        check_models_dir(models, ["featureless"], overwrite=False)


def _fitted(data):
    from sklearn.linear_model import LogisticRegression

    frame = toy_table(80, 2, seed=3)
    X = frame[["x0", "x1", "x2"]].to_numpy()
    return LogisticRegression().fit(X, frame["y"]), frame


def edit_metadata(path: Path, edit) -> None:
    """Rewrite the model file with its metadata member changed by ``edit``."""
    with zipfile.ZipFile(path) as archive:
        members = {n: archive.read(n) for n in archive.namelist()}
    record = json.loads(members["soak_dask.json"])
    edit(record)
    members["soak_dask.json"] = json.dumps(record).encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    path.write_bytes(buffer.getvalue())


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda r: r.update(features=["x2", "x1", "x0"]), "was edited after save_model"),
        (lambda r: r.update(label="other"), "was edited after save_model"),
        (lambda r: r.update(classes=["yes", "no"]), "was edited after save_model"),
        (lambda r: r.update(signature="0" * 64), "was edited after save_model"),
        (lambda r: r.update(features=["x0", "x1"]), "lists 2 features but the estimator takes 3"),
        (lambda r: r.pop("signature"), "has no signature"),
    ],
)
def test_an_edited_feature_order_is_refused(edit, message, tmp_path):
    model, frame = _fitted(None)
    path = sd.save_model(model, tmp_path / "m.skops", features=["x0", "x1", "x2"], label="y")
    loaded = sd.load_model(path)
    assert loaded.features == ("x0", "x1", "x2")
    edit_metadata(path, edit)
    with pytest.raises(ValueError, match=message):
        sd.load_model(path)


def test_a_dataframe_fitted_model_checks_its_column_names(tmp_path):
    from sklearn.linear_model import LogisticRegression

    frame = toy_table(80, 2, seed=3)
    model = LogisticRegression().fit(frame[["x0", "x1", "x2"]], frame["y"])
    path = sd.save_model(model, tmp_path / "m.skops")

    def swap(record):
        record["features"] = ["x1", "x0", "x2"]
        record.pop("signature")
        record["format_version"] = 1  # as an older, unsigned file

    edit_metadata(path, swap)
    with pytest.raises(ValueError, match="not the columns it was fitted on"):
        sd.load_model(path)


def test_an_older_unsigned_model_loads_only_when_trusted(tmp_path):
    model, frame = _fitted(None)
    path = sd.save_model(model, tmp_path / "m.skops", features=["x0", "x1", "x2"])

    def unsign(record):
        record.pop("signature")
        record["format_version"] = 1

    edit_metadata(path, unsign)
    with pytest.raises(ValueError, match="without a signature"):
        sd.load_model(path)  # issue 38: unsigned files need an explicit opt-in
    loaded = sd.load_model(path, trust_unsigned=True)
    pred = sd.predict_table(loaded, frame)
    np.testing.assert_array_equal(
        pred.to_numpy(), model.predict(frame[["x0", "x1", "x2"]].to_numpy())
    )


# --- checkpoints: the same data by a relative and an absolute path ---------------------------


@pytest.mark.slow
def test_a_checkpoint_accepts_the_same_data_by_a_relative_then_absolute_path(
    data, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    ck = tmp_path / "ck"
    first = sd.soak(
        load("data"), "featureless", n_folds=2, options=sd.RunOptions(progress=False, checkpoint=ck)
    )
    ev = tmp_path / "ev"
    sd.evaluate(
        load("data"),
        "featureless",
        outer_folds=2,
        options=sd.RunOptions(progress=False, checkpoint=ev),
    )
    from soak_dask.run import executor

    run = executor.execute

    def resumed(tasks, *args):
        assert not tasks, "a fit was computed again"  # every fit comes from the checkpoint
        return run(tasks, *args)

    monkeypatch.setattr(executor, "execute", resumed)
    again = sd.soak(
        load(data.resolve()),
        "featureless",
        n_folds=2,
        options=sd.RunOptions(progress=False, checkpoint=ck),
    )
    keep = [v for v in first.data_vars if "seconds" not in v]
    xr.testing.assert_equal(first[keep], again[keep])
    (tmp_path / "link").symlink_to(data, target_is_directory=True)
    sd.soak(
        load(tmp_path / "link"),
        "featureless",
        n_folds=2,
        options=sd.RunOptions(progress=False, checkpoint=ck),
    )
    sd.evaluate(
        load(data.resolve()),
        "featureless",
        outer_folds=2,
        options=sd.RunOptions(progress=False, checkpoint=ev),
    )


def test_a_checkpoint_accepts_a_csv_by_either_path_and_refuses_other_data(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    toy_table(80, 2, seed=3).to_csv(tmp_path / "t.csv", index=False)
    ck = tmp_path / "ck"
    sd.soak(
        load("t.csv"),
        "featureless",
        n_folds=2,
        options=sd.RunOptions(progress=False, checkpoint=ck),
    )
    sd.soak(
        load(tmp_path / "t.csv"),
        "featureless",
        n_folds=2,
        options=sd.RunOptions(progress=False, checkpoint=ck),
    )
    toy_table(80, 2, seed=4).to_csv(tmp_path / "u.csv", index=False)
    with pytest.raises(ValueError, match="other settings"):
        sd.soak(
            load("u.csv"),
            "featureless",
            n_folds=2,
            options=sd.RunOptions(progress=False, checkpoint=ck),
        )


def test_soak_run_resumes_when_the_data_is_named_by_another_path(data, tmp_path, capsys,
                                                                 monkeypatch):  # fmt: skip
    monkeypatch.chdir(tmp_path)
    ck = tmp_path / "ck"
    base = ["--label", "y", "--subset", "subset", "--learners", "featureless", "--n-folds", "2",
            "--checkpoint", ck]  # fmt: skip
    code, _, err = soak(["run", "data", *base, "--out", "r1.zarr"], capsys)
    assert code == 0, err
    code, out, err = soak(["run", data.resolve(), *base, "--out", "r2.zarr"], capsys)
    assert code == 0, err
    assert "resuming" in out + err


def test_outputdir_is_returned_as_is():
    od = OutputDir(Path("x"), "w")
    assert check_out_dir(od, writer="other") is od


# --- soak demo and write_pixel_parquet -------------------------------------------------------


def test_write_pixel_parquet_deletes_only_its_own_files(tmp_path):
    from soak_dask.tables.generated import write_pixel_parquet

    mixed = tmp_path / "mixed"
    mixed.mkdir()
    toy_table(20).to_parquet(mixed / "mine.parquet")  # a user's Parquet file
    before = listing(mixed)
    for overwrite in (False, True):
        with pytest.raises(FileExistsError, match="mine.parquet, which write_pixel_parquet"):
            write_pixel_parquet(mixed, n_files=1, n_pixels=100, overwrite=overwrite)
    assert listing(mixed) == before
    ours = write_pixel_parquet(tmp_path / "ours", n_files=2, n_pixels=100)
    write_pixel_parquet(ours, n_files=1, n_pixels=100, overwrite=True)
    assert [p.name for p in ours.iterdir()] == ["part-00000.parquet"]


def test_soak_demo_refuses_a_directory_it_did_not_write(tmp_path, capsys):
    from soak_dask.app.demo import run_demo

    own = tmp_path / "own"
    own.mkdir()
    (own / "pvalues.csv").write_text("mine")
    with pytest.raises(FileExistsError, match="pvalues.csv"):
        run_demo(own, n_pixels=200)
    code, _, err = soak(["demo", "--out", own, "--pixels", "200"], capsys)
    one_line(err, "--out", "pvalues.csv")
    assert listing(own) == {"pvalues.csv": b"mine"}


def test_save_results_refuses_a_path_inside_a_results_store(results, tmp_path):
    store = sd.save_results(results, tmp_path / "r.zarr")
    before = listing(store)
    with pytest.raises(ValueError, match="inside the results store"):
        sd.save_results(results, store / "inner.zarr")
    assert listing(store) == before
    sd.open_results(store)


def test_save_model_creates_a_new_parent_directory(tmp_path):
    model, _ = _fitted(None)
    path = sd.save_model(model, tmp_path / "new" / "m.skops", features=["x0", "x1", "x2"])
    assert sd.load_model(path).features == ("x0", "x1", "x2")


def test_models_and_checkpoint_must_be_apart(data, tmp_path):
    pairs = ((tmp_path / "m", tmp_path / "m"), (tmp_path / "c" / "m", tmp_path / "c"))
    for models, checkpoint in pairs:
        with pytest.raises(ValueError, match="and checkpoint .* overlap"):
            sd.evaluate(
                load(data),
                "featureless",
                models=models,
                options=sd.RunOptions(checkpoint=checkpoint),
            )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]


@pytest.mark.slow
def test_links_never_lead_a_write_elsewhere(results, data, tmp_path):
    (tmp_path / "to_data").symlink_to(data, target_is_directory=True)
    with pytest.raises(ValueError, match="is the input table"):
        sd.write_report(results, tmp_path / "to_data", overwrite=True)
    out = tmp_path / "rep"
    sd.write_report(results, out, "error")
    users = tmp_path / "users"
    users.mkdir()
    (users / "precious.txt").write_text("mine")
    (out / "report.html").unlink()
    (out / "report.html").symlink_to(users, target_is_directory=True)  # a folder in its place
    with pytest.raises(FileExistsError, match="report.html changed since"):
        sd.write_report(results, out, overwrite=True)
    assert (users / "precious.txt").read_text() == "mine"


def test_a_url_is_refused_where_a_local_directory_is_written(results, data, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="is a URL"):
        sd.write_report(results, "s3://bucket/report")
    with pytest.raises(ValueError, match="models 's3://bucket/m' is a URL"):
        sd.evaluate(load(data), "featureless", models="s3://bucket/m")
    assert not (tmp_path / "s3:").exists()


def test_save_model_refuses_a_url(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    model, _ = _fitted(None)
    with pytest.raises(ValueError, match="is a URL"):
        sd.save_model(model, "s3://bucket/m.skops", features=["x0", "x1", "x2"])
    assert not (tmp_path / "s3:").exists()
