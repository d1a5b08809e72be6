"""Issue 42's "Done when", as a new user meets it: CAST's farm from the sensors' readings and
the raster to folds, a block size, the errors, the AOA and the reports, by the commands of
docs/spatial.md's workflow, run as written (their printed lines checked against the page);
and what that walk fixed: ``extract(keep=, mean_by=)``, the user's fold column and fold file
recorded in the results, kNNDM's printout and page naming the candidates and saying why
random folds were kept."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import dask
import numpy as np
import pandas as pd
import pytest
import xarray as xr

import soak_dask as sd
from soak_dask.app.knndm_cli import summary_text
from soak_dask.results.text import evaluation_text
from soak_dask.spatial.knndm_page import knndm_page
from soak_dask.split.fold_file import write_fold_file

from ..conftest import shared_file
from . import test_round4_knndm as round4

scheduler = round4.scheduler
DOCS = Path(__file__).resolve().parents[2] / "docs" / "spatial.md"


@pytest.fixture(autouse=True)
def _sync():
    with dask.config.set(scheduler="sync"):
        yield


# ---------------------------------------------------------------------------- extract
def raster():
    """B1 = 10·row + column on a 4 × 5 grid of 1-unit cells (x 0.5..4.5, y 3.5..0.5)."""
    values = 10.0 * np.arange(4)[:, None] + np.arange(5)[None, :]
    coords = {"x": np.arange(5) + 0.5, "y": np.arange(4)[::-1] + 0.5}
    return xr.Dataset({"B1": (("y", "x"), values)}, coords=coords)


def readings():
    """Three sensors read twice each (their coordinates repeated), and a text column."""
    return pd.DataFrame(
        {
            "id": ["s2", "s1", "s2", "s1", "s3", "s3"],
            "x": [3.2, 0.7, 3.2, 0.7, 4.1, 4.1],
            "y": [0.4, 3.3, 0.4, 3.3, 2.2, 2.2],
            "v": [1.0, 2.0, 3.0, 6.0, 5.0, 5.0],
            "note": list("abcdef"),
            "B1": 0.0,  # named like the band: refused unless left out with keep
        }
    )


def test_extract_keeps_columns_and_averages_per_sensor():
    got = sd.extract(raster(), readings(), keep=["id", "v"], mean_by="id")
    assert got.columns.tolist() == ["id", "x", "y", "v", "B1"]
    assert got["id"].tolist() == ["s1", "s2", "s3"]  # one point each, in sorted order
    np.testing.assert_allclose(got["v"], [4.0, 2.0, 5.0])  # the means of their readings
    # each point's cell: row from the top (y 3.5 -> row 0), column from x
    np.testing.assert_allclose(got["B1"], [0.0, 33.0, 14.0])
    assert got.attrs["soak_dask.extract"]["mean_by"] == "id"
    kept = sd.extract(raster(), readings(), keep="v")
    assert kept.columns.tolist() == ["x", "y", "v", "B1"] and len(kept) == 6


def test_extract_summary_names_the_means(tmp_path):
    out = tmp_path / "train.parquet"
    summary = sd.extract(raster(), readings(), keep=["id", "v"], mean_by="id", out=out)
    assert summary.text().startswith("3 points (the means per id), 3 on the raster")
    assert len(pd.read_parquet(out)) == 3


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, r"already has columns \['B1'\], named like the bands"),
        ({"keep": ["v", "depth"]}, r"keep=\['v', 'depth'\]: points has no columns \['depth'\]"),
        ({"keep": ["id", "note"], "mean_by": "id"}, r"\['note'\] of points are not numbers"),
        ({"keep": ["v"], "mean_by": "sensor"}, r"mean_by='sensor' is no column of points"),
    ],
)
def test_extract_refusals_name_the_columns(options, message):
    with pytest.raises(ValueError, match=message):
        sd.extract(raster(), readings(), **options)


# ---------------------------------------------------------------------------- fold records
def scene():
    rng = np.random.default_rng(2)
    df = pd.DataFrame({"x": rng.uniform(0, 100, 60), "y": rng.uniform(0, 100, 60)})
    df["f"] = rng.normal(size=60)
    return df.assign(label=df.f + rng.normal(size=60), k=np.arange(60) % 3 + 1)


def test_a_user_fold_column_is_recorded_by_name():
    table = sd.load_table(scene(), label="label", fold="k", coords=["x", "y"])
    res = sd.evaluate(table, "linear", options=sd.RunOptions(progress=False))
    assert res.attrs["fold"] == "k" and res.attrs["outer_folds"] == 3
    assert "Folds:" not in evaluation_text(res)  # a column of the table, no file
    drawn = sd.evaluate(
        sd.load_table(scene(), label="label"), "linear", options=sd.RunOptions(progress=False)
    )
    assert drawn.attrs["fold"] == ""  # folds drawn here: none of the user's


def test_a_fold_file_is_recorded_and_printed(tmp_path):
    df, area = scene().drop(columns="k"), pd.DataFrame({"x": [5.0, 50, 95], "y": [5.0, 50, 95]})
    data = tmp_path / "train.parquet"
    df.to_parquet(data)
    table = sd.load_table(data, label="label", coords=["x", "y"])
    res = sd.knndm_folds(table, area, n_folds=3, sample=10, n_candidates=3)
    fold_file = str(tmp_path / "folds.parquet")
    write_fold_file(res.table, res.column, fold_file)  # as soak knndm writes it
    folded = sd.evaluate(
        sd.attach_folds(table, fold_file), "linear", options=sd.RunOptions(progress=False)
    )
    assert (folded.attrs["fold"], folded.attrs["fold_file"]) == ("knndm_fold", fold_file)
    assert f"Folds: column 'knndm_fold' of the fold file {fold_file}" in evaluation_text(folded)


# ---------------------------------------------------------------------------- kNNDM's words
def info(n_clusters, clustering="hierarchical"):
    return {
        "data": "train.parquet", "prediction": "area.tif", "n_folds": 5, "sample": 10_000,
        "knndm_W": 35.09, "knndm_W_random": 35.09 if n_clusters < 0 else 50.0,
        "knndm_n_clusters": n_clusters, "knndm_ks_pvalue": 1.0, "knndm_space": "geographical",
        "knndm_unit": "metre, EPSG:26911", "knndm_clustering": clustering,
        "knndm_method": "random CV" if n_clusters < 0 else clustering,
        "knndm_prediction_sample": 3865, "fold_sizes": [9, 6, 10, 7, 10],
    }  # fmt: skip


CANDIDATES = pd.DataFrame(
    {
        "candidate": ["hierarchical"] * 3 + ["random"],
        "n_clusters": [5, 12, 40, np.nan],
        "W": [96.3, np.nan, 30.09, 35.09],
        "largest_fold": [0.31, 0.6, 0.2, 0.24],
        "status": ["eligible", "a fold over maxp=0.5", "eligible", "chosen"],
    }
)


def test_knndm_printout_names_the_candidates():
    assert summary_text(info(-1)).startswith(
        "kNNDM, 5 folds in geographical space (candidates: cuts of one Ward tree)\n"
        "kNNDM: random folds kept"
    )
    assert "(candidates: k-means clusterings)" in summary_text(info(8, "kmeans"))


def test_knndm_page_says_why_random_folds_were_kept():
    page = knndm_page(info(-1), {}, CANDIDATES)
    assert "drawn at random: kNNDM keeps random folds, as CAST does," in page.lede
    assert "lie as far" not in page.lede  # they do not: the KS rule kept them
    tried = page.sections[1].text
    assert "The best of them, 40 clusters, has W = 30.09" in tried
    assert "3,865 of 10,000 asked (every prediction point)" in page.settings
    assert "cuts of one Ward tree" in page.settings and "knndm_method" not in page.settings
    chosen = knndm_page(info(12), {}, CANDIDATES)
    assert "lie as far" in chosen.lede and "best of them" not in chosen.sections[1].text


# ---------------------------------------------------------------------------- the docs' walk
def documented_commands() -> list[tuple[list[str], list[str]]]:
    """Each ``$ soak ...`` command of the workflow section, with the lines printed under it
    that the page shows in full (none with "...")."""
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index("### The whole workflow from the command line") :]
    block = re.search(r"```console\n(.*?)```", section, re.S).group(1)
    commands: list[tuple[str, list[str]]] = []
    continued = False
    for line in block.splitlines():
        if continued:
            commands[-1] = (commands[-1][0] + " " + line.strip(), [])
        elif line.startswith("$ "):
            commands.append((line[2:], []))
        elif "..." not in line and line.strip():
            commands[-1][1].append(line.strip())
        continued = line.rstrip().endswith("\\")
        if continued:
            commands[-1] = (commands[-1][0].rstrip()[:-1], [])
    out = []
    for command, printed in commands:
        argv = shlex.split(command.split("#")[0])
        assert argv[0] == "soak", command
        out.append((argv[1:], printed))
    return out


def test_the_documented_walk_parses():
    from soak_dask.app import cli

    walk = documented_commands()
    assert [argv[0] for argv, _ in walk] == [
        "extract", "info", "knndm", "knndm", "evaluate", "evaluate", "evaluate", "aoa",
        "report",
    ]  # fmt: skip
    parser = cli.build_parser()
    for argv, _ in walk:
        parser.parse_args(argv)  # every flag as written exists


@pytest.mark.slow  # about a minute: nine commands on CAST's farm
def test_the_documented_walk_runs_on_cast_farm(tmp_path, capsys, scheduler, monkeypatch):
    cast = Path(shared_file("cast", "cookfarm.parquet")).parent
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cast").symlink_to(cast)
    for argv, printed in documented_commands():
        cluster = [] if argv[0] in ("info", "report") else ["--scheduler", scheduler]
        code, out, err = _run(argv + cluster, capsys)
        assert code == 0, f"soak {' '.join(argv)}: {err}"
        for line in printed:
            assert line in out, f"soak {' '.join(argv)} did not print {line!r}:\n{out}"
    stored = sd.open_results("eval_knndm.zarr")
    assert stored.attrs["knndm_clustering"] == "hierarchical"
    assert sd.open_results("blocks.zarr").attrs["blocks"] == 500.0
    page = (tmp_path / "farm_report" / "report.html").read_text()  # one page of three
    assert page.count('<section class="store"') == 3 and "has W = 30.09" in page


def _run(argv, capsys):
    from soak_dask.app import cli

    code = cli.main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err
