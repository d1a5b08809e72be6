"""Every kind of result — soak, evaluate, transfer, search_subsets, split_sensitivity,
compare_sampling — names its kind in ``attrs["design"]`` (the ``.soak`` accessor dispatches on
it), is saved as one store, opened by ``open_results`` (alias ``load_results``) and rendered as
one HTML page (``report.html``) with its tables and figures, from the Python API and from the
command that makes it (``soak <command>`` → ``soak report``; ``soak transfer``'s two stores in
tests/app/test_resume_commands.py, on its undisturbed run); a store of an unknown kind is
refused, one of the older name of search_subsets opens."""

from __future__ import annotations

import contextlib
import functools
import html
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
import xarray as xr

import soak_dask as sd
from soak_dask.app import cli
from soak_dask.app.render import render
from soak_dask.io.outdir import MANIFEST
from soak_dask.results.html import CSP

from ..conftest import toy_table

LEARNERS = ["featureless", "logistic"]
RUNS = {
    "soak": lambda t: sd.soak(
        t, LEARNERS, n_folds=3, measures="error", options=sd.RunOptions(progress=False)
    ),
    "evaluate": lambda t: sd.evaluate(
        t, LEARNERS, outer_folds=3, measures="error", options=sd.RunOptions(progress=False)
    ),
    "transfer": lambda t: sd.transfer(
        t, LEARNERS, n_folds=3, measures="error", options=sd.RunOptions(progress=False)
    ),
    "search_subsets": lambda t: sd.search_subsets(
        t, LEARNERS, n_folds=3, measures="error", options=sd.RunOptions(progress=False)
    ),
    "split_sensitivity": lambda t: sd.split_sensitivity(
        t,
        "logistic",
        design=sd.SplitTrials(ratios=(0.5, 0.7), n_repeats=3, n_folds=3),
        options=sd.RunOptions(progress=False),
    ),
    "compare_sampling": lambda t: sd.compare_sampling(
        t,
        LEARNERS,
        design=sd.SamplingSplits(methods=["random", "stratified"], n_repeats=3),
        options=sd.RunOptions(progress=False),
    ),
}
#: Per kind: tables written beside the page (CSV), and a heading the page shows above them.
TABLES = {
    "soak": (["summary", "pvalues"], "Mean &plusmn; SD over folds"),
    "evaluate": (["summary", "folds"], "Every cell"),
    "transfer": (["transfer_pvalues", "transfer_mean"], "Transfer matrix"),
    "search_subsets": (
        ["search_pvalues", "search_stability", "pool_per_fold", "search_pools"],
        "Nested estimate against same and all",
    ),
    "split_sensitivity": (["summary", "trials"], "Per-ratio statistics"),
    "compare_sampling": (["mai", "summary", "sizes", "random_accuracy"], "Mean and SD of |MAI|"),
}


@pytest.fixture(scope="module")
def table() -> sd.Table:
    return sd.load_table(toy_table(n=240, n_subsets=3, seed=3), label="y", subset="subset")


@pytest.fixture(scope="module")
def results(table) -> dict[str, xr.Dataset]:
    return {kind: run(table) for kind, run in RUNS.items()}


@pytest.fixture(scope="module")
def rendered(results, tmp_path_factory) -> Callable[[str], tuple[Path, xr.Dataset, str, Path]]:
    """A kind's results saved, opened back and rendered, once for the module (on first use):
    ``(store, results opened, text printed, page)``. Tests only read them; a test that writes
    into a report directory copies it first."""
    base = tmp_path_factory.mktemp("rendered")

    @functools.cache
    def of(kind: str) -> tuple[Path, xr.Dataset, str, Path]:
        store = sd.save_results(results[kind], base / f"{kind}.zarr")
        back = sd.open_results(store)
        text, page = render(back, base / kind)
        return store, back, text, page

    return of


def check_page(out: Path, kind: str) -> str:
    """The page in ``out``: self-contained, with the kind's tables (as CSV beside it and as
    HTML in it) and at least one figure embedded; every file the manifest lists is there."""
    page = (out / "report.html").read_text(encoding="utf-8")
    assert CSP in page and "<script" not in page and "http://" not in page.split("<body>")[1]
    assert re.search(r'<img [^>]*src="data:image/png;base64,', page)
    names, heading = TABLES[kind]
    assert heading in page
    for name in names:
        assert (out / f"{name}.csv").is_file(), name
        assert f"<code>{name}.csv</code>" in page  # named in the page's list of files
    listed = json.loads((out / MANIFEST).read_text())["files"]
    assert "report.html" in listed and all((out / name).exists() for name in listed)
    return page


def cells(page: str) -> list[str]:
    return [html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", page, re.S)]


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(RUNS))
def test_api_save_open_render_every_kind(results, rendered, kind):
    res = results[kind]
    assert res.attrs["design"] == kind and res.soak.kind == kind
    store, back, text, page = rendered(kind)
    xr.testing.assert_equal(back, res)  # values, dims and coordinates
    xr.testing.assert_identical(sd.load_results(store), back)  # the alias
    assert back.attrs["design"] == kind and isinstance(back.soak.summary(), pd.DataFrame)
    assert page == store.parent / kind / "report.html" and text.strip()
    shown = cells(check_page(page.parent, kind))
    for learner in [str(v) for v in res["learner"].values] if "learner" in res.dims else []:
        assert learner in shown, learner


@pytest.mark.slow
def test_split_sensitivity_page_holds_its_tables(results, rendered):
    ds = results["split_sensitivity"]
    out = rendered("split_sensitivity")[3].parent
    summary = sd.split_sensitivity_summary(ds)
    written = pd.read_csv(out / "summary.csv")
    pd.testing.assert_frame_equal(written, summary, check_dtype=False)
    pd.testing.assert_frame_equal(
        pd.read_csv(out / "trials.csv"), sd.split_sensitivity_trials(ds), check_dtype=False
    )
    page = (out / "report.html").read_text()
    shown = cells(page)
    mean, sd_ = summary.loc[0, "cv_estimate_mean"], summary.loc[0, "cv_estimate_sd"]
    assert f"{mean:.4f} ± {sd_:.4f}" in shown  # the per-ratio table, formatted as printed
    chosen = ", ".join(ds.attrs["recommended"]) or "none"
    assert f"<b>Recommended ratio(s)</b>: {chosen}." in page


@pytest.mark.slow
def test_compare_sampling_and_search_pages_hold_their_tables(results, rendered):
    ds = results["compare_sampling"]
    mai = rendered("compare_sampling")[3].parent
    frame = sd.mai_table({"pandas DataFrame": ds})
    written = pd.read_csv(mai / "mai.csv", index_col=[0, 1])
    pd.testing.assert_frame_equal(
        written, frame, check_dtype=False, check_names=False, check_index_type=False
    )
    shown = cells((mai / "report.html").read_text())
    assert f"{frame.iloc[1]['MAI stratified']:.4g}" in shown
    found = results["search_subsets"]
    search = rendered("search_subsets")[3].parent
    from soak_dask.pooling.search import search_pvalues

    tests = search_pvalues(found)
    pd.testing.assert_frame_equal(
        pd.read_csv(search / "search_pvalues.csv")[["learner", "compare", "p"]],
        tests[["learner", "compare", "p"]].reset_index(drop=True),
        check_dtype=False,
    )


def test_open_results_refuses_an_unknown_kind(tmp_path):
    ds = sd.from_dataframe(
        pd.DataFrame(
            {"learner": "a", "test_subset": "s", "fold": [1, 2], "train_type": "same", "error": 1.0}
        ),
        design="tomorrow",
    )
    store = sd.save_results(ds, tmp_path / "r.zarr")
    with pytest.raises(ValueError, match="unknown kind design='tomorrow'"):
        sd.open_results(store)


def test_stores_of_the_older_search_name_still_open(results, tmp_path):
    res = results["search_subsets"].assign_attrs(design="search")
    back = sd.open_results(sd.save_results(res, tmp_path / "old.zarr"))
    assert back.soak.kind == "search_subsets" and not back.soak.pvalues().empty


def test_a_report_directory_is_checked_first_and_replaced_only_when_asked(
    results, rendered, tmp_path
):
    ds = results["split_sensitivity"]
    shutil.copytree(rendered("split_sensitivity")[3].parent, tmp_path / "r")  # an earlier report
    with pytest.raises(FileExistsError, match="--overwrite"):
        render(ds, tmp_path / "r")
    render(results["compare_sampling"], tmp_path / "r", overwrite=True)  # one report replaces
    assert not (tmp_path / "r" / "trials.csv").exists()  # another's files, and only those
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="notes.txt"):
        render(ds, foreign, overwrite=True)
    assert sorted(p.name for p in foreign.iterdir()) == ["notes.txt"]


# --- from each command ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("data") / "toy.csv"
    toy_table(240, 3, seed=6).to_csv(path, index=False)
    return path


@pytest.fixture
def local(monkeypatch):
    """Dask's local scheduler instead of a cluster: what runs there is the Python API's."""
    from soak_dask.run import cluster

    monkeypatch.setattr(cluster, "connect", lambda *a, **k: contextlib.nullcontext())


def soak(argv: list, capsys) -> str:
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


BASE = ["--label", "y", "--learners", "featureless,logistic", "--no-progress"]
COMMANDS = {
    "soak": ["run", "--subset", "subset", "--folds", "3", "--measures", "error"],
    "evaluate": ["evaluate", "--outer-folds", "3", "--measures", "error"],
    "split_sensitivity": [
        "split-sensitivity",
        "--learners",
        "logistic",
        "--ratios",
        "0.5,0.7",
        "--n-repeats",
        "3",
        "--n-folds",
        "3",
    ],  # fmt: skip
    "compare_sampling": ["compare-sampling", "--methods", "random,stratified", "--n-repeats", "3"],
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(COMMANDS))
def test_each_command_then_soak_report(kind, data, local, tmp_path, capsys):
    """``soak <command> --out OUT`` then ``soak report``: of the store, or of the output
    directory of a command that writes its store beside its other files."""
    command, *flags = COMMANDS[kind]
    base = BASE if kind != "split_sensitivity" else BASE[:2] + BASE[4:]  # one learner
    out = tmp_path / "out" / ("r.zarr" if kind in ("soak", "evaluate") else "")
    soak([command, data, *base, *flags, "--out", out], capsys)
    printed = soak(["report", out, "--out", tmp_path / "report"], capsys)
    assert printed.strip().endswith(str(tmp_path / "report" / "report.html"))
    check_page(tmp_path / "report", kind)
    assert sd.open_results(out).attrs["design"] == kind  # the directory's one store


def test_an_output_directory_without_a_store_says_what_to_give(results, tmp_path):
    from soak_dask.app.sampling_cli import WRITER
    from soak_dask.io.outdir import check_out_dir

    od = check_out_dir(tmp_path / "old", writer=WRITER).begin()
    od.claim("mai.csv").write_text("data,learner\n")
    od.finish()
    with pytest.raises(ValueError, match="holds no results store.*run the command again"):
        sd.open_results(tmp_path / "old")
