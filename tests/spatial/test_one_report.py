"""Issue 42's "one HTML report": ``soak report eval.zarr aoa knndm --out farm_report`` (and
``render_path`` of a list) writes one page with a section per output, one table of contents,
each figure once, the files of each section under its key; a single output keeps its own page;
refused, naming the path: a path that is no output soak_dask wrote, one output given twice, an
--out soak_dask did not write or an earlier report without --overwrite. And the evaluation
page's settings in words (coordinates with their CRS, the fold file), the error profile's axis
naming the label."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
from pathlib import Path

import dask
import numpy as np
import pandas as pd
import pytest

import soak_dask as sd
from soak_dask.app import cli
from soak_dask.app.render import render_path
from soak_dask.io.outdir import MANIFEST
from soak_dask.results.html import CSP
from soak_dask.spatial.aoa_plot import plot_error_profile
from soak_dask.spatial.aoa_record import recorded_profile

from ..results.test_report import probe_page
from . import test_spatial_report as spatial_report
from .test_spatial_report import page_numbers

scene = spatial_report.scene  # the raster and training points of the spatial report's tests


def soak(argv: list, capsys) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def stores(scene, tmp_path_factory) -> dict[str, Path]:
    """kNNDM's folds of the scene's 30 points against its raster, an evaluation from the fold
    file and the AOA with its error profile: as the workflow makes them, on Dask's local
    scheduler."""
    from soak_dask.run import cluster

    raster, train = scene
    base = tmp_path_factory.mktemp("farm")
    data, grid = base / "train.csv", base / "raster.zarr"
    train.drop(columns=["fold", "cv_pred"]).to_csv(data, index=False)
    raster.to_zarr(grid, consolidated=False)
    folds = base / "knndm" / "folds.parquet"
    commands = [
        ["knndm", data, grid, "--label", "label", "--coords", "E,N", "--crs", "EPSG:26911",
         "--n-folds", "3", "--candidates", "4", "--seed", "3", "--out", base / "knndm"],
        ["evaluate", data, "--label", "label", "--coords", "E,N", "--crs", "EPSG:26911",
         "--fold-column", folds, "--learners", "featureless,linear", "--measures", "rmse",
         "--no-progress", "--out", base / "eval.zarr"],
        ["aoa", data, grid, "--features", "a,b,c", "--folds", folds, "--points", "E,N",
         "--error-profile", "--label", "label", "--learner", "linear", "--out", base / "aoa"],
    ]  # fmt: skip
    with (
        pytest.MonkeyPatch.context() as patch,
        dask.config.set(scheduler="sync"),
        contextlib.redirect_stdout(None),
    ):
        patch.setattr(cluster, "connect", lambda *a, **k: contextlib.nullcontext())
        for argv in commands:
            assert cli.main([str(a) for a in argv]) == 0, argv
    return {"eval": base / "eval.zarr", "aoa": base / "aoa", "knndm": base / "knndm"}


@pytest.fixture(scope="module")
def farm(stores, tmp_path_factory) -> tuple[Path, str]:
    """``render_path`` of the three outputs: the report directory and what was printed."""
    out = tmp_path_factory.mktemp("farm_report") / "farm_report"
    text, page = render_path([stores["eval"], stores["aoa"], stores["knndm"]], out)
    assert page == out / "report.html"
    return out, text


@pytest.mark.slow
def test_one_page_with_a_section_per_output(stores, farm):
    out, text = farm
    page = (out / "report.html").read_text(encoding="utf-8")
    assert CSP in page and "<script" not in page
    assert page.count("<h1>") == 1 and page.count('<nav class="toc">') == 1
    sections = re.findall(r'<h2 class="store">(.*?)</h2>', page)
    assert len(sections) == 3
    for heading, path in zip(sections, stores.values(), strict=True):
        assert f"<code>{path}</code>" in heading  # each section labelled with its path
    # anchors unique, and every link of the page lands on one
    ids = re.findall(r' id="([^"]+)"', page)
    assert len(ids) == len(set(ids))
    assert set(re.findall(r'href="#([^"]+)"', page)) <= set(ids)
    # each figure once: embedded once, written once (PNG and SVG) under its section's key
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert pngs == ["aoa_aoa.png", "aoa_error_profile.png", "eval_evaluation_rmse.png",
                    "knndm_knndm.png"]  # fmt: skip
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    assert len(images) == len(set(images)) == len(pngs)
    files = re.search(r'<h2 id="files">Files</h2>\n<p>(.*?)</p>', page).group(1)
    listed = re.findall(r"<code>([^<]+)</code>", files)
    manifest = json.loads((out / MANIFEST).read_text())["files"]
    assert sorted(listed) == sorted(manifest) and len(listed) == len(set(listed))
    assert all((out / name).is_file() for name in manifest)
    assert "<code>eval_timings.csv</code>" in page and "<code>timings.csv</code>" not in page
    # the numbers of each output, as its own page has them
    words = page_numbers(page)
    info = json.loads((stores["knndm"] / "knndm.json").read_text())
    assert f"W = {info['knndm_W']:.4g} against {info['knndm_W_random']:.4g}" in words
    aoa = sd.open_aoa(stores["aoa"] / "aoa.zarr")
    assert f"Threshold {aoa.attrs['threshold']:.4g} on the DI" in words
    results = sd.open_results(stores["eval"])
    means = pd.read_csv(out / "eval_summary.csv")
    by_learner = results["rmse"].mean(["repeat", "fold"])
    np.testing.assert_allclose(means["mean"], by_learner.sel(learner=means["learner"].to_numpy()))
    # printed: each output's text under its path, as soak report of it alone prints it
    for path in stores.values():
        assert f"({path}) ---\n" in text
    assert "W = " in text and "threshold " in text and "Folds: column 'knndm_fold'" in text


@pytest.mark.slow
def test_the_evaluation_settings_and_the_error_axis_in_words(stores, farm):
    out, _ = farm
    page = (out / "report.html").read_text(encoding="utf-8")
    settings = page[page.index('<h3 id="eval-settings">') : page.index('id="aoa"')]
    words = page_numbers(settings)
    assert "Coordinates E, N (EPSG:26911)" in words
    assert f"Fold file {stores['knndm'] / 'folds.parquet'} (column knndm_fold )" in words
    for raw in ("<th>fold_file</th>", "<th>coords</th>", "<th>crs</th>", "<th>onepass</th>"):
        assert raw not in settings
    profile = recorded_profile(sd.open_aoa(stores["aoa"] / "aoa.zarr"))
    assert profile.label == "label"  # recorded in the store, read back for the page
    fig = plot_error_profile(profile)
    assert fig.axes[0].get_ylabel() == "RMSE of label"


@pytest.mark.slow
def test_one_output_keeps_its_own_page(stores, tmp_path, capsys):
    code, printed, err = soak(["report", stores["knndm"], "--out", tmp_path / "one"], capsys)
    assert code == 0, err
    page = (tmp_path / "one" / "report.html").read_text(encoding="utf-8")
    assert 'class="store"' not in page and "<title>kNNDM folds</title>" in page
    assert (tmp_path / "one" / "knndm.png").is_file()  # its files keep their names
    assert printed.startswith("kNNDM, 3 folds")
    _, again = render_path([stores["knndm"]], tmp_path / "listed")  # a list of one: the same
    assert page_numbers(again.read_text(encoding="utf-8")) == page_numbers(page)


@pytest.mark.slow
def test_two_outputs_of_one_kind_are_two_labelled_sections(stores, tmp_path, capsys):
    again = tmp_path / "eval_again.zarr"
    shutil.copytree(stores["eval"], again)
    argv = ["report", stores["eval"], again, "--out", tmp_path / "both"]
    code, printed, err = soak(argv, capsys)
    assert code == 0, err
    page = (tmp_path / "both" / "report.html").read_text(encoding="utf-8")
    assert re.findall(r'<section class="store" id="([^"]+)"', page) == ["eval", "eval_again"]
    assert f"<code>{again}</code>" in page
    assert (tmp_path / "both" / "eval_again_summary.csv").is_file()


@pytest.mark.slow
def test_refusals_name_the_path_and_write_nothing(stores, tmp_path, capsys):
    out = tmp_path / "r"
    table = stores["aoa"].parent / "train.csv"

    def refused(*paths: Path, where: Path = out, flags: tuple = ()) -> str:
        code, _, err = soak(["report", *paths, "--out", where, *flags], capsys)
        assert code != 0
        return err

    err = refused(stores["eval"], table)
    assert f"{table} is not an output soak_dask wrote" in err
    err = refused(stores["aoa"], stores["aoa"] / "aoa.zarr")  # one store, two paths
    assert "are the same output" in err and "give it once" in err
    assert not out.exists()
    refused(stores["eval"], stores["knndm"], where=stores["knndm"] / "r")  # inside an input
    assert not (stores["knndm"] / "r").exists()
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    assert "notes.txt" in refused(stores["eval"], stores["knndm"], where=foreign)
    assert sorted(p.name for p in foreign.iterdir()) == ["notes.txt"]
    # its own earlier page: replaced with --overwrite only
    pair = (stores["eval"], stores["knndm"])
    assert soak(["report", *pair, "--out", out], capsys)[0] == 0
    assert "--overwrite" in refused(*pair)
    assert soak(["report", *pair, "--out", out, "--overwrite"], capsys)[0] == 0


@pytest.mark.slow
def test_the_page_opens_in_chromium_without_errors(farm, tmp_path):
    out, _ = farm
    found, console = probe_page(out / "report.html", tmp_path)  # its copy in tmp_path
    assert found == {"images": 4, "loaded": 4, "errors": []} and console == []


@pytest.mark.slow  # about 4-6 s: kNNDM tries its candidates inside evaluate
def test_an_evaluation_on_knndm_folds_says_how_they_were_chosen(tmp_path):
    from soak_dask.results.evaluation_report import write_evaluation_report

    from .test_farm_workflow import scene as points

    area = pd.DataFrame({"x": [5.0, 50, 95, 20], "y": [5.0, 50, 95, 80]})
    table = sd.load_table(points().drop(columns="k"), label="label", coords=["x", "y"])
    with dask.config.set(scheduler="sync"):
        res = sd.evaluate(
            table,
            "linear",
            outer="knndm",
            prediction=area,
            outer_folds=3,
            options=sd.RunOptions(progress=False),
        )
    page = write_evaluation_report(res, tmp_path / "r").read_text(encoding="utf-8")
    settings = page[page.index('<table class="settings">') :]
    words = page_numbers(settings)
    assert (
        "3-fold cross-validation on kNNDM folds (geographical space, candidates: k-means "
        f"clusterings, {res.attrs['knndm_prediction_sample']:,} prediction points sampled)"
    ) in words
    assert f"W = {res.attrs['knndm_W']:.4g}" in words  # in the note
    assert "<th>knndm_" not in settings  # no attr left raw
