"""``soak_dask.save_knndm``: kNNDM's folds written from Python as ``soak knndm --out`` writes
them (the fold file, the figure, the candidates, the settings, the page), so a notebook can
put them on one page beside an evaluation (``render_path``), and the directory is checked
as every output is."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import soak_dask as sd
from soak_dask.app.render import render_path
from soak_dask.spatial.knndm_out import FILES

from .test_knndm_outputs import scene_table


@pytest.fixture(scope="module")
def folds():
    _, pred, table = scene_table()
    return sd.knndm_folds(table, pred, n_folds=4, sample=2000, seed=3, n_candidates=5)


@pytest.mark.slow
def test_saved_as_the_command_saves_them_and_drawn_on_a_page(folds, tmp_path):
    out = sd.save_knndm(folds, tmp_path / "knndm")
    assert out == tmp_path / "knndm" and {*FILES} <= {p.name for p in out.iterdir()}
    settings = json.loads((out / "knndm.json").read_text())
    assert settings["seed"] == 3 and settings["sample"] == 2000
    assert settings["prediction"] == "(a DataFrame in memory)"
    assert settings["coords"] == ["x", "y"] and settings["knndm_W"] == pytest.approx(folds.W)
    written = pd.read_parquet(out / "folds.parquet")
    np.testing.assert_array_equal(
        written["knndm_fold"], folds.table.data[folds.column].compute().to_numpy()
    )
    text, page = render_path([str(out)], tmp_path / "report")
    assert f"W = {folds.W:.4g}" in text or f"W = {folds.W:.2f}" in text
    assert page.name == "report.html" and "kNNDM" in page.read_text()


@pytest.mark.slow
def test_the_directory_is_checked_before_anything_is_written(folds, tmp_path):
    sd.save_knndm(folds, tmp_path / "knndm")
    with pytest.raises(FileExistsError, match="pass overwrite=True to replace it"):
        sd.save_knndm(folds, tmp_path / "knndm")
    assert sd.save_knndm(folds, tmp_path / "knndm", overwrite=True).is_dir()
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises((FileExistsError, ValueError), match="mine"):
        sd.save_knndm(folds, foreign)
    assert [p.name for p in foreign.iterdir()] == ["notes.txt"]
