"""Outputs, model files and predictions (issue 38, items 7 and 8): a file listed without a
digest is never deleted, a directory another run is writing is named as such, a link to a
missing target is refused by name, an unsigned model file needs an explicit opt-in, and
predicting rows with NaN or infinite features names the columns.

Each case runs the Python API and, where there is one, the command (in this process, on Dask's
synchronous scheduler). Tables are small and generated.
"""

from __future__ import annotations

import contextlib
import importlib
import json
from pathlib import Path

import dask
import dask.dataframe as dd
import numpy as np
import pytest

import soak_dask as sd
from soak_dask.app import cli
from soak_dask.io.outdir import FORMAT, MANIFEST, check_out_dir
from soak_dask.results.html import REPORT_WRITER
from soak_dask.run import cluster

from .conftest import toy_table
from .test_output_safety import edit_metadata

FEATURES = ["x0", "x1", "x2"]


@pytest.fixture(autouse=True)
def synchronous(monkeypatch):
    # The commands' cluster: Dask's local scheduler, as the Python API runs without a client.
    monkeypatch.setattr(cluster, "connect", lambda *a, **k: contextlib.nullcontext())
    with dask.config.set(scheduler="synchronous"):
        yield


@pytest.fixture(scope="module")
def results():
    table = sd.load_table(toy_table(80, 2, seed=3), label="y", subset="subset")
    return sd.soak(table, "featureless", n_folds=2, options=sd.RunOptions(progress=False))


@pytest.fixture
def store(results, tmp_path) -> Path:
    return sd.save_results(results, tmp_path / "r.zarr")


def soak(argv: list, capsys) -> tuple[int, str]:
    code = cli.main([str(a) for a in argv])
    return code, capsys.readouterr().err


def one_line(err: str, *words: str) -> None:
    assert err.startswith("soak: error: ") and len(err.strip().splitlines()) == 1, err
    for word in words:
        assert word in err, err


def manifest(out: Path, files: dict, **more) -> None:
    """A manifest of ``soak report`` listing ``files`` (name -> digest) in ``out``."""
    out.mkdir(exist_ok=True)
    record = {"format": FORMAT, "writer": REPORT_WRITER, "files": files, **more}
    (out / MANIFEST).write_text(json.dumps(record))


# --- item 7: a file listed without a digest is never deleted ---------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("more", [{}, {"finished": True}, {"finished": False}])
def test_a_users_file_listed_without_a_digest_is_kept(results, store, more, tmp_path, capsys):
    out = tmp_path / "rep"
    manifest(out, {"report.html": None}, **more)  # as a run stopped half-way leaves it
    (out / "report.html").write_bytes(b"<p>the user's own report</p>")
    with pytest.raises(FileExistsError, match="report.html") as err:
        sd.write_report(results, out, overwrite=True)
    assert "changed since" in str(err.value) or "cannot tell" in str(err.value)
    code, err = soak(["report", store, "--out", out, "--overwrite"], capsys)
    one_line(err, "--out", "report.html")
    assert (out / "report.html").read_bytes() == b"<p>the user's own report</p>"


@pytest.mark.slow
def test_a_manifest_with_a_digest_that_is_not_text_is_damaged(tmp_path):
    out = tmp_path / "out"
    manifest(out, {"report.html": 1}, finished=True)
    with pytest.raises(FileExistsError, match="damaged"):
        check_out_dir(out, writer=REPORT_WRITER, overwrite=True)
    manifest(out, {}, finished="yes")
    with pytest.raises(FileExistsError, match="damaged"):
        check_out_dir(out, writer=REPORT_WRITER, overwrite=True)


# --- item 8: another run writing there now ---------------------------------------------------


def test_a_directory_another_run_is_writing_is_named_so_and_left_alone(tmp_path):
    out = tmp_path / "out"
    first = check_out_dir(out, writer="w").begin()  # begun: no file claimed yet
    for overwrite in (False, True):
        with pytest.raises(FileExistsError, match="another run of w is writing to it now"):
            check_out_dir(out, writer="w", overwrite=overwrite)
    first.claim("a.csv").write_text("being written")
    with pytest.raises(FileExistsError, match="it holds a.csv, listed with no digest") as err:
        check_out_dir(out, writer="w", overwrite=True)
    assert "overwrite" not in str(err.value)  # no advice to replace what another run writes
    assert (out / "a.csv").read_text() == "being written"
    first.finish()
    assert json.loads((out / MANIFEST).read_text())["finished"] is True
    again = check_out_dir(out, writer="w", overwrite=True).begin()  # finished: replaceable
    assert not (out / "a.csv").exists() and again.begun


def test_the_command_line_loser_is_told_another_run_writes_there(store, tmp_path, capsys):
    out = tmp_path / "rep"
    manifest(out, {"report.html": None}, finished=False)
    (out / "report.html").write_text("the other run's, half written")
    for flags in ([], ["--overwrite"]):
        code, err = soak(["report", store, "--out", out, *flags], capsys)
        assert code == cli.USAGE_ERROR
        one_line(err, "--out", "another run of", "writing to it now")
        assert "overwrite=True" not in err
    assert (out / "report.html").read_text() == "the other run's, half written"


def test_the_run_that_saves_second_is_told_the_flag(results, tmp_path, monkeypatch, capsys):
    """Two `soak run`s on one --out both pass the check at the start; the second to save is
    told to pass --overwrite (the CLI's flag), not the API's overwrite=True."""
    data, out = tmp_path / "t.csv", tmp_path / "r.zarr"
    toy_table(80, 2, seed=3).to_csv(data, index=False)
    module = importlib.import_module("soak_dask.run.soak")

    def the_other_run_saves_first(*args, **kwargs):
        sd.save_results(results, out)
        return results

    monkeypatch.setattr(module, "soak", the_other_run_saves_first)
    code, err = soak(["run", data, "--label", "y", "--subset", "subset", "--out", out], capsys)
    assert code == cli.USAGE_ERROR
    one_line(err, str(out), "exists; pass --overwrite to replace it")
    assert "overwrite=True" not in err


# --- item 8: a link to a missing target --------------------------------------------------------


@pytest.mark.parametrize("under", [False, True])
def test_a_link_to_a_missing_target_is_refused_by_name(results, store, under, tmp_path, capsys):
    link, target = tmp_path / "link", tmp_path / "elsewhere"
    link.symlink_to(target, target_is_directory=True)
    out = link / "rep" if under else link
    with pytest.raises(FileExistsError, match="symbolic link to a missing target"):
        sd.write_report(results, out)
    code, err = soak(["report", store, "--out", out], capsys)
    assert code == cli.USAGE_ERROR
    one_line(err, "--out", str(link), "symbolic link to a missing target", "remove the link")
    assert link.is_symlink() and not target.exists()  # nothing written through it


def test_models_at_a_link_to_a_missing_target_are_refused_before_any_fit(tmp_path, monkeypatch):
    from soak_dask.run import executor

    monkeypatch.setattr(executor, "execute", _no_fit)
    link, target = tmp_path / "link", tmp_path / "elsewhere"
    link.symlink_to(target, target_is_directory=True)
    table = sd.load_table(toy_table(40, 2), label="y", subset="subset")
    with pytest.raises(FileExistsError, match="symbolic link to a missing target"):
        sd.evaluate(
            table, "featureless", outer_folds=2, models=link, options=sd.RunOptions(progress=False)
        )
    model, _ = _fitted()
    with pytest.raises(FileExistsError, match="symbolic link to a missing target"):
        sd.save_model(model, link, features=FEATURES)
    assert link.is_symlink() and not target.exists()


def _no_fit(*args, **kwargs):
    raise AssertionError("a fit started before the output was checked")


# --- item 8: model files without a signature ---------------------------------------------------


def _fitted():
    from sklearn.linear_model import LogisticRegression

    frame = toy_table(80, 2, seed=3)
    return LogisticRegression().fit(frame[FEATURES].to_numpy(), frame["y"]), frame


def _unsign(path: Path, features: list[str]) -> None:
    """The model file as an older, unsigned one listing ``features``."""

    def unsigned(record: dict) -> None:
        record.pop("signature")
        record.update(format_version=1, features=features)

    edit_metadata(path, unsigned)


def test_an_unsigned_model_file_with_features_reversed_is_refused(tmp_path):
    model, frame = _fitted()
    path = sd.save_model(model, tmp_path / "m.skops", features=FEATURES, label="y")
    _unsign(path, FEATURES[::-1])
    with pytest.raises(ValueError, match=r"without a signature .* trust_unsigned=True"):
        sd.load_model(path)
    # Opted in, the file is taken at its word: its (reversed) order is the one used.
    loaded = sd.load_model(path, trust_unsigned=True)
    assert loaded.features == tuple(FEATURES[::-1])


# --- item 8: NaN or infinite features in predict_table -----------------------------------------


def _with_bad_rows():
    model, frame = _fitted()
    frame = frame.copy()
    frame.loc[frame.index[:3], "x1"] = np.nan
    frame.loc[frame.index[5], "x2"] = np.inf
    return model, frame


def test_predicting_nan_or_infinite_features_names_the_columns():
    model, frame = _with_bad_rows()
    message = r"column 'x1' has 3 NaN; column 'x2' has 1 infinite \(of this partition's 80 rows\)"
    table = sd.load_table(frame, label="y", features=FEATURES)
    with pytest.raises(ValueError, match=message):
        sd.predict_table(model, table).compute()  # a lazy table: raised by the partition's task
    named = model.fit(frame.dropna()[FEATURES].replace(np.inf, 0), frame.dropna()["y"])
    with pytest.raises(ValueError, match=message):
        sd.predict_table(named, frame)  # a pandas frame: at once
    # An estimator that takes NaN and infinity still predicts them, as before.
    from sklearn.ensemble import HistGradientBoostingClassifier

    tolerant = HistGradientBoostingClassifier(max_iter=5).fit(frame[FEATURES], frame["y"])
    pred = sd.predict_table(tolerant, dd.from_pandas(frame, npartitions=2)).compute()
    np.testing.assert_array_equal(pred.to_numpy(), tolerant.predict(frame[FEATURES]))


def test_a_stores_hidden_partial_copy_is_replaced_with_its_store(tmp_path):
    """A write killed mid-way leaves a hidden partial copy beside its store (io.stores); it is
    the output's with its store, not a user's file that blocks the directory."""
    out = check_out_dir(tmp_path / "out", writer="soak_dask's test", overwrite=True)
    out.claim("r.zarr").mkdir()
    out.finish()
    leftover = out.path / ".r.soak-partial-123-abcdef12.zarr"
    leftover.mkdir()
    user = out.path / ".notes.soak-partial-123-abcdef12.txt"  # of no file the manifest lists
    again = check_out_dir(tmp_path / "out", writer="soak_dask's test", overwrite=True)
    user.write_text("mine")
    with pytest.raises(FileExistsError, match="did not write"):
        again.begin()
    user.unlink()
    again.begin()
    assert not leftover.exists() and not (out.path / "r.zarr").exists()
