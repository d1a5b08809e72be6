"""Tests of soak_dask.results.report: files, tables, and the HTML page in headless Chromium."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import xarray as xr  # noqa: E402
from PIL import Image  # noqa: E402

import soak_dask as sd  # noqa: E402
from soak_dask.io.outdir import MANIFEST  # noqa: E402
from soak_dask.results.html import CSP, markdown_table  # noqa: E402
from soak_dask.results.report import write_report  # noqa: E402
from soak_dask.results.stats import pvalues_text  # noqa: E402
from soak_dask.tables.generated import make_pixel_table  # noqa: E402

from .test_plot import results_from, run_small_soak  # noqa: E402

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
MEASURES = ["error", "auc"]

# Added to a copy of the page, never to the product: the first script records every error
# event (script errors, and in the capture phase, images that fail to load); the second, on
# load, writes the image counts and the errors into the DOM that --dump-dom prints.
PROBE_HEAD = """<script>window.__soakErrors = [];
addEventListener("error", function (e) {
  window.__soakErrors.push(String(e.message || (e.target && e.target.src) || "error"));
}, true);</script>"""
PROBE_BODY = """<script>addEventListener("load", function () {
  var imgs = document.images, ok = 0;
  for (var i = 0; i < imgs.length; i++) { if (imgs[i].complete && imgs[i].naturalWidth > 0) ok++; }
  var out = document.createElement("pre");
  out.id = "soak-probe";
  out.textContent = JSON.stringify({images: imgs.length, loaded: ok, errors: window.__soakErrors});
  document.body.appendChild(out);
});</script>"""


@pytest.fixture(scope="module")
def small_run():
    return run_small_soak()


@pytest.fixture(scope="module")
def report(small_run, tmp_path_factory) -> Path:
    return write_report(small_run, tmp_path_factory.mktemp("report") / "out", MEASURES)


def read_markdown(path: Path) -> list[list[str]]:
    """Cells of each line of a Markdown table (escaped pipes kept inside their cell)."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = re.split(r"(?<!\\) \| ", line.strip()[2:-2])
        rows.append([c.replace("\\|", "|") for c in cells])
    return rows


# --- files and tables ------------------------------------------------------------------------


@pytest.mark.slow
def test_report_writes_every_file(report):
    out = report.parent
    assert report.name == "report.html"
    expected = {"report.html", "pvalues.csv", "pvalues.md", "summary.csv", "summary.md"}
    figures = [f"soak_{m}{kind}" for m in MEASURES for kind in ("", "_learners")]
    expected |= {f"{name}.{ext}" for name in figures for ext in ("png", "svg")}
    assert {p.name for p in out.iterdir()} == expected | {MANIFEST}
    assert set(json.loads((out / MANIFEST).read_text())["files"]) == expected
    for name in figures:
        with Image.open(out / f"{name}.png") as image:
            assert image.width >= 800 and image.height >= 400
        assert (out / f"{name}.svg").read_text(encoding="utf-8").lstrip().startswith("<?xml")


@pytest.mark.slow
def test_csv_tables_equal_the_statistics(report, small_run):
    out = report.parent
    read = lambda name: pd.read_csv(out / name, keep_default_na=False, na_values=[""])  # noqa: E731
    expected = small_run.soak.pvalues(MEASURES)
    text = {"note": object, "reason": object}
    got = pd.read_csv(out / "pvalues.csv", keep_default_na=False, na_values=[""], dtype=text)
    got = got.fillna({"note": "", "reason": ""})
    pd.testing.assert_frame_equal(got, expected, check_dtype=False, rtol=1e-12)
    pd.testing.assert_frame_equal(
        read("summary.csv"), small_run.soak.summary(MEASURES), check_dtype=False, rtol=1e-12
    )


def test_markdown_tables_have_the_rows(report, small_run):
    expected = small_run.soak.pvalues(MEASURES)
    header, align, *rows = read_markdown(report.parent / "pvalues.md")
    assert header == list(expected.columns)
    assert align[:5] == [":--"] * 5 and align[5] == "--:"  # text left, numbers right
    assert len(rows) == len(expected) == 2 * 3 * 2 * 2
    p_column = header.index("p")
    for cells, row in zip(rows, expected.itertuples(index=False), strict=True):
        assert cells[:5] == [row.learner, row.test_subset, "same", row.compare, row.measure]
        assert cells[header.index("reason")] == row.reason
        if np.isfinite(row.p):
            assert float(cells[p_column]) == pytest.approx(row.p, rel=1e-3)
        else:
            assert cells[p_column] == ""
    summary_rows = read_markdown(report.parent / "summary.md")[2:]
    assert len(summary_rows) == len(small_run.soak.summary(MEASURES))


def test_markdown_table_escapes_and_formats():
    frame = pd.DataFrame({"name": ["a|b", "c"], "x": [1 / 3, np.nan], "n": [1, 2]})
    assert markdown_table(frame, digits=3) == (
        "| name | x | n |\n| :-- | --: | --: |\n| a\\|b | 0.333 | 1 |\n| c |  | 2 |\n"
    )


def test_html_is_self_contained_and_complete(report, small_run):
    page = report.read_text(encoding="utf-8")
    assert CSP in page
    assert "<script" not in page.lower() and "<link" not in page.lower()
    urls = re.findall(r"""(?:src|href)\s*=\s*["']([^"']*)""", page)
    assert urls and all(u.startswith(("data:image/png;base64,", "#")) for u in urls)
    without_images = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", page)
    assert not re.search(r"https?:|//[a-z]|url\(|@import", without_images)
    assert page.count("<img ") == 2 * len(MEASURES)  # learners compared; same/other/all
    for text in ("same", "other", "all", "paired t-test", "p=NA"):
        assert text in page
    # The run's settings are written out.
    assert f"<th>Seed</th><td>{small_run.attrs['seed']} " in page
    assert "<li><b>logistic</b>: <code>Pipeline(" in page  # learners JSON as a list
    # One p-value table row per (learner, test subset, compare) of each measure.
    assert page.count("<tr>") >= len(small_run.soak.pvalues(MEASURES))


# Names that mean something in Markdown or HTML, as subsets and learners of hand-built results.
HOSTILE_SUBSETS = ["<script>alert(1)</script>", "a|b", "*x* _y_ [l](http://e.com) `c`"]
HOSTILE_LEARNERS = ["~~s~~ $m$ &amp; a\\b", "plain_name"]


def rendered_cells(markdown_file: Path) -> list[list[str]]:
    """Text of each body row's cells once Python-Markdown (tables) renders `markdown_file`."""
    markdown = pytest.importorskip("markdown")
    page = markdown.markdown(markdown_file.read_text(encoding="utf-8"), extensions=["tables"])
    assert "<script" not in page and "<a " not in page and "<em>" not in page, page
    rows = re.findall(r"<tr>(.*?)</tr>", page, re.S)[1:]  # the first is the header
    return [[html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)] for r in rows]


@pytest.mark.slow
def test_markdown_tables_show_names_literally(tmp_path):
    ds = results_from({lrn: dict.fromkeys(HOSTILE_SUBSETS, 1.0) for lrn in HOSTILE_LEARNERS})
    out = tmp_path / "rep"
    write_report(ds, out, "error")
    for name, columns in (("pvalues", ["learner", "test_subset"]), ("summary", ["learner"])):
        expected = pd.read_csv(out / f"{name}.csv")[columns].to_numpy().tolist()
        cells = rendered_cells(out / f"{name}.md")
        # Every name renders as its own text, in its own cell (a "|" does not split it).
        assert [row[: len(columns)] for row in cells] == expected
        assert {c for row in expected for c in row} >= set(HOSTILE_LEARNERS)
    raw = (out / "pvalues.md").read_text(encoding="utf-8")
    assert "<script>" not in raw and "&lt;script&gt;" in raw and "a\\|b" in raw
    assert "| learner | test_subset | reference | compare | measure |" in raw  # readable names


def test_markdown_table_escapes_every_special_character():
    text = "<b>&lt; | * _ ` [ ] ~ $ \\ x_y"
    row = markdown_table(pd.DataFrame({"t": [text]})).splitlines()[2]
    assert row == "| &lt;b&gt;&amp;lt; \\| \\* \\_ \\` \\[ \\] &#126; &#36; \\\\ x_y |"
    assert markdown_table(pd.DataFrame({"t": ["two\nlines"]})).endswith("| two lines |\n")


def test_pvalues_text_escapes_terminal_control_characters():
    subset = "\x1b[2J\x1b]0;pwned\x07S"  # clear the screen, set the window title
    text = pvalues_text(results_from({"lasso": {subset: 1.0, "T": 0.0}}), "error")
    assert "\x1b" not in text and "\x07" not in text
    assert "\\x1b[2J\\x1b]0;pwned\\x07S" in text  # shown, as escapes


# --- overwrite rules --------------------------------------------------------------------------


def test_refuses_a_foreign_directory_even_with_overwrite(small_run, tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    for overwrite in (False, True):
        with pytest.raises(FileExistsError, match="soak_dask did not write.*notes.txt"):
            write_report(small_run, out, "error", overwrite=overwrite)
    assert [p.name for p in out.iterdir()] == ["notes.txt"]
    with pytest.raises(FileExistsError, match="is not a directory"):
        write_report(small_run, out / "notes.txt", "error")


@pytest.mark.slow
def test_rewrites_a_previous_report_and_drops_its_stale_figures(report, small_run, tmp_path):
    out = tmp_path / "rep"
    shutil.copytree(report.parent, out)  # the module's report of error and auc, as before
    with pytest.raises(FileExistsError, match="earlier output.*overwrite=True"):
        write_report(small_run, out, "error")
    write_report(small_run, out, "error", overwrite=True)
    assert not (out / "soak_auc.png").exists() and (out / "soak_error.png").exists()
    assert set(pd.read_csv(out / "pvalues.csv")["measure"]) == {"error"}
    (out / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="notes.txt"):  # never written beside
        write_report(small_run, out, "error", overwrite=True)
    (out / "notes.txt").unlink()
    # Bad options fail before the previous report is touched.
    with pytest.raises(ValueError, match="order='size'"):
        write_report(small_run, out, "error", order="size")
    with pytest.raises(ValueError, match="measure 'mse' is not in the results"):
        write_report(small_run, out, "mse")
    assert (out / "soak_error.png").exists()


# --- the page in a browser --------------------------------------------------------------------


def run_chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} not installed (run `bash scripts/system-deps.sh`)")
    cmd = [
        str(CHROMIUM),
        *CHROMIUM_FLAGS,
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
        "--enable-logging=stderr",
        "--v=0",
        *args,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


def probe_page(page: Path, tmp_path: Path) -> tuple[dict, list[str]]:
    """Open a probed copy of `page` (in `tmp_path`: the page's directory is left as it is) in
    headless Chromium: (probe result, console lines)."""
    text = page.read_text(encoding="utf-8")
    # The page's policy allows no script at all; the copy allows inline ones, nothing else.
    text = text.replace(CSP, CSP + "; script-src 'unsafe-inline'")
    head = text.index("<head>") + len("<head>")
    text = text[:head] + PROBE_HEAD + text[head:].replace("</body>", PROBE_BODY + "</body>")
    copy = tmp_path / f"probed_{page.name}"  # self-contained: it reads nothing beside it
    copy.write_text(text, encoding="utf-8")
    done = run_chromium(tmp_path, "--dump-dom", copy.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'<pre id="soak-probe">(.*?)</pre>', done.stdout, re.S)
    assert found, f"the probe did not run; stderr: {done.stderr[-2000:]}"
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    return json.loads(html.unescape(found.group(1))), console


@pytest.mark.slow
def test_probe_detects_broken_pages(tmp_path):
    bad = tmp_path / "bad.html"
    bad.write_text(
        f'<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" '
        f'content="{CSP}"></head><body><img src="data:image/png;base64,AAAA">'
        '<img src="https://example.com/x.png"></body></html>',
        encoding="utf-8",
    )
    result, console = probe_page(bad, tmp_path)
    assert result["images"] == 2 and result["loaded"] == 0
    assert len(result["errors"]) == 2
    assert any("Content Security Policy" in line for line in console)  # the blocked URL


@pytest.mark.slow
def test_report_opens_in_chromium_without_errors(report, tmp_path):
    result, console = probe_page(report, tmp_path)
    assert result == {"images": 2 * len(MEASURES), "loaded": 2 * len(MEASURES), "errors": []}
    assert console == []


@pytest.mark.slow
def test_report_screenshot_is_not_blank(report, tmp_path):
    shot = tmp_path / "shot.png"
    done = run_chromium(
        tmp_path, f"--screenshot={shot}", "--window-size=1200,1600", report.as_uri()
    )
    assert done.returncode == 0 and shot.exists(), done.stderr[-2000:]
    with Image.open(shot) as image:
        pixels = np.asarray(image.convert("L"), dtype=np.float64)
    assert pixels.shape == (1600, 1200)
    dark = pixels < 200
    assert 0.01 < dark.mean() < 0.5  # text and lines on a white page
    assert len(np.unique(pixels)) > 20
    assert dark[:200].any() and dark[-800:].any()  # the title on top, content further down


# --- a page to read: structure, settings in words, plain K-fold CV, uneven folds ---------------


def section(page: str, measure: str) -> str:
    """The HTML of one measure's section."""
    found = re.search(
        rf'<details class="measure" id="{measure}"( open)?>(.*?)</details>\n', page, re.S
    )
    assert found, f"no section for {measure}"
    return found.group(0)


def settings_rows(page: str) -> dict[str, str]:
    table = re.search(r'<table class="settings">(.*?)</table>', page, re.S).group(1)
    return dict(re.findall(r"<tr><th>(.*?)</th><td>(.*?)</td></tr>", table, re.S))


def test_page_reads_top_down(report, small_run):
    page = report.read_text(encoding="utf-8")
    # Title, one sentence of what was run, contents; then one section per measure, the first
    # open, each with the learners compared and the same/other/all figure, then the settings.
    lede = re.search(r'<p class="lede">(.*?)</p>', page, re.S).group(1)
    assert "<b>label</b>" in lede and "3 subsets of <b>region</b>" in lede
    assert "groups of <b>polygon</b> kept whole: 3 folds, learners featureless, logistic." in lede
    assert page.index("<h1>") < page.index('class="lede"') < page.index("<nav>")
    starts = [page.index(f'<details class="measure" id="{m}"') for m in MEASURES]
    assert starts == sorted(starts) and starts[-1] < page.index('<h2 id="settings">')
    assert section(page, "error").startswith('<details class="measure" id="error" open>')
    assert not section(page, "auc").startswith('<details class="measure" id="auc" open>')
    for m in MEASURES:
        html_of = section(page, m)
        alts = re.findall(r'<img alt="([^"]*)"', html_of)
        assert alts == [f"learners compared on {m}", f"SOAK figure of {m}"]
        assert html_of.count("<figcaption>") == 2
        # One results row per learner × test subset × train type, with its test rows per fold.
        rows = re.findall(r"<tr( class=\"same\")?><td", html_of.split("<details>")[0])
        assert len(rows) == 2 * 3 * 3
    # Figures are shown larger than their natural size (7-9 pt text), within the page.
    widths = [int(w) for w in re.findall(r'<img alt="[^"]*" width="(\d+)"', page)]
    assert all(900 <= w <= 1300 for w in widths), widths
    assert "max-width: 100%" in page


def test_results_table_holds_the_summary(report, small_run):
    page = report.read_text(encoding="utf-8")
    means = small_run.soak.summary("error")
    tests = small_run.soak.pvalues("error")
    table = re.search(r'<table class="results">(.*?)</table>', section(page, "error"), re.S)
    head, *rows = re.findall(r"<tr[^>]*>(.*?)</tr>", table.group(1), re.S)
    assert re.findall(r"<th[^>]*>(.*?)</th>", head) == [
        "Learner", "Test subset", "Train type", "Folds", "Test rows per fold", "Mean ± SD",
        "Row-weighted mean", "Difference to same", "Row-weighted difference",
        "p (paired t-test)",
    ]  # fmt: skip
    for cells_html, row in zip(rows, means.itertuples(), strict=True):
        cells = [html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", cells_html)]
        assert cells[:4] == [row.learner, row.test_subset, row.train_type, str(row.n)]
        low, high = int(row.n_test_min), int(row.n_test_max)
        assert cells[4] == (f"{low:,}" if low == high else f"{low:,}–{high:,}")
        mean, sd = cells[5].split(" ± ")
        assert float(mean) == pytest.approx(row.mean, abs=0.006)  # 2 decimals for % error
        assert float(sd) == pytest.approx(row.sd, abs=0.006)
        assert float(cells[6]) == pytest.approx(row.weighted_mean, abs=0.006)
        test = tests[
            (tests["learner"] == row.learner)
            & (tests["test_subset"] == row.test_subset)
            & (tests["compare"] == row.train_type)
        ]
        if row.train_type == "same":
            assert cells[7:] == ["", "", ""]
        else:
            diff = float(cells[7].replace("\u2212", "-"))
            assert diff == pytest.approx(test["mean_diff"].item(), abs=0.006)
            weighted = float(cells[8].split(" (")[0].replace("\u2212", "-"))
            assert weighted == pytest.approx(test["weighted_diff"].item(), abs=0.006)


def test_settings_are_readable(report, small_run):
    rows = settings_rows(report.read_text(encoding="utf-8"))
    assert list(rows) == [
        "Data", "Label", "Subsets", "Groups", "Folds", "Seed", "Features", "Learners",
        "Train types", "Measures", "Fits", "Prediction", "Versions",
    ]  # fmt: skip
    assert rows["Subsets"] == "<code>region</code>: NE, NW, S"
    assert rows["Folds"] == (
        "K = 3, assigned by SOAK, balanced within each subset × label; whole groups of "
        "&#x27;polygon&#x27;, balancing rows (largest group first onto the emptiest fold)"
    )
    assert rows["Prediction"] == "prior correction off: the class of largest probability"
    assert rows["Fits"] == f"{small_run.attrs['n_fits']}: 21 train sets × 2 learners"
    assert rows["Data"].endswith(
        f", {int(small_run['n_test'].isel(learner=0, train_type=0).sum()):,} rows"
    )
    # Internal or unused settings are not dumped: no "sizes -1", "stratify 1", blank cells.
    assert all(value.strip() for value in rows.values())
    assert "-1" not in "".join(rows.values())


@pytest.mark.slow
def test_settings_show_the_options_in_use_and_unknown_attrs(small_run, tmp_path):
    ds = small_run.assign_attrs(
        sizes=1, ratio=0.5, size_seeds=2, max_train_rows=500, incremental=1, epochs=3,
        excluded_coordinates=["x", "y"], lab_notebook="p. 12",
    )  # fmt: skip
    rows = settings_rows(write_report(ds, tmp_path / "rep", "error").read_text(encoding="utf-8"))
    assert rows["Down-sampled train sizes"] == "sizes=1, ratio=0.5, 2 samples each"
    assert rows["Train sets capped at"].startswith("500 rows")
    assert rows["Incremental fits"].endswith("3 epoch(s)")
    assert rows["Coordinates left out"] == "x, y"
    assert rows["lab_notebook"] == "p. 12"  # an attr the page does not know, as it is


@pytest.fixture(scope="module")
def plain_run():
    """A real run without subsets (plain K-fold CV); x and y left out as coordinates."""
    df = make_pixel_table(n_pixels=1500, n_bands=4, tree_fraction=0.3, seed=2)
    with pytest.warns(UserWarning, match="coordinate columns"):
        table = sd.load_table(df, label="label", exclude=["region", "polygon"])
    return sd.soak(
        table, ["featureless", "logistic"], n_folds=4, options=sd.RunOptions(progress=False)
    )


@pytest.mark.slow
def test_plain_kfold_report_gives_mean_sd_without_pvalues(plain_run, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "no p-values" warning from the report itself
        page_path = write_report(plain_run, tmp_path / "rep", MEASURES)
    out = page_path.parent
    expected = {"report.html", "summary.csv", "summary.md"}
    expected |= {f"soak_{m}_learners.{ext}" for m in MEASURES for ext in ("png", "svg")}
    assert {p.name for p in out.iterdir()} == expected | {MANIFEST}  # no p-values, no empty figure
    page = page_path.read_text(encoding="utf-8")
    notes = re.search(r'<div class="notes">(.*?)</div>', page, re.S).group(1)
    assert "No p-values</b>: one subset: plain K-fold CV" in notes
    assert "coordinate columns [&#x27;x&#x27;, &#x27;y&#x27;] are left out" in notes
    assert "by plain K-fold CV (one subset)" in page and "p=NA" not in page
    error = section(page, "error")
    assert re.findall(r'<img alt="([^"]*)"', error) == ["learners compared on error"]
    table = re.search(r'<table class="results">(.*?)</table>', error, re.S).group(1)
    head, *rows = re.findall(r"<tr[^>]*>(.*?)</tr>", table, re.S)
    assert "p (paired" not in head and "Train type" not in head
    means = plain_run.soak.summary("error")
    assert [re.search(r"<td[^>]*>(.*?)</td>", r).group(1) for r in rows] == list(means["learner"])
    assert settings_rows(page)["Train types"] == "same"


@pytest.mark.slow
def test_uneven_folds_are_flagged(tmp_path):
    ds = results_from({"lr": {"A": 2.0, "B": 1.0}}, n_folds=3)
    ds["n_test"] = xr.full_like(ds["error"], 40, dtype=np.int64)
    ds["n_test"].loc[{"test_subset": "A", "fold": 3}] = 200
    page = write_report(ds, tmp_path / "rep", "error").read_text(encoding="utf-8")
    notes = re.search(r'<div class="notes">(.*?)</div>', page, re.S).group(1)
    assert "Uneven folds" in notes and "(A: 40 to 200 rows)" in notes
    uneven = re.findall(r'<td class="uneven">(.*?)</td>', page)
    assert uneven == ["40–200"] * 3  # subset A, one row per train type; B is even
    same = ds["error"].sel(learner="lr", test_subset="A", train_type="same").values
    weighted = np.average(same, weights=[40, 40, 200])
    row = re.search(r'<td class="text">A</td><td class="text">same</td>(.*?)</tr>', page).group(1)
    assert f"<td>{weighted:.2f}</td>" in row
