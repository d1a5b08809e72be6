"""Tests of soak_dask.report: files, tables, and the HTML page opened in headless Chromium."""

from __future__ import annotations

import html
import json
import re
import subprocess
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from PIL import Image  # noqa: E402

from soak_dask.report import CSP, markdown_table, write_report  # noqa: E402

from .test_plot import run_small_soak  # noqa: E402

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


def test_report_writes_every_file(report):
    out = report.parent
    assert report.name == "report.html"
    expected = {"report.html", "pvalues.csv", "pvalues.md", "summary.csv", "summary.md"}
    expected |= {f"soak_{m}.{ext}" for m in MEASURES for ext in ("png", "svg")}
    assert {p.name for p in out.iterdir()} == expected
    for m in MEASURES:
        with Image.open(out / f"soak_{m}.png") as image:
            assert image.width >= 800 and image.height >= 400
        assert (out / f"soak_{m}.svg").read_text(encoding="utf-8").lstrip().startswith("<?xml")


def test_csv_tables_equal_the_statistics(report, small_run):
    out = report.parent
    read = lambda name: pd.read_csv(out / name, keep_default_na=False, na_values=[""])  # noqa: E731
    expected = small_run.soak.pvalues(MEASURES)
    got = read("pvalues.csv").fillna({"reason": ""})
    pd.testing.assert_frame_equal(got, expected, check_dtype=False, rtol=1e-12)
    pd.testing.assert_frame_equal(
        read("summary.csv"), small_run.soak.summary(MEASURES), check_dtype=False, rtol=1e-12
    )


def test_markdown_tables_have_the_rows(report, small_run):
    expected = small_run.soak.pvalues(MEASURES)
    header, align, *rows = read_markdown(report.parent / "pvalues.md")
    assert header == list(expected.columns)
    assert align[:4] == [":--"] * 4 and align[4] == "--:"  # text left, numbers right
    assert len(rows) == len(expected) == 2 * 3 * 2 * 2
    for cells, row in zip(rows, expected.itertuples(index=False), strict=True):
        assert cells[:4] == [row.learner, row.test_subset, row.measure, row.compare]
        assert cells[-1] == row.reason
        if np.isfinite(row.p_paired):
            assert float(cells[12]) == pytest.approx(row.p_paired, rel=1e-3)
        else:
            assert cells[12] == ""
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
    assert page.count("<img ") == len(MEASURES)
    for text in ("same", "other", "all", "paired t-test", "p=NA"):
        assert text in page
    # The run's settings are written out.
    assert f"<th>seed</th><td>{small_run.attrs['seed']}</td>" in page
    assert "<code>logistic</code>" in page  # learners JSON as a list
    # One p-value table row per (learner, test subset, compare) of each measure.
    assert page.count("<tr>") >= len(small_run.soak.pvalues(MEASURES))


# --- overwrite rules --------------------------------------------------------------------------


def test_refuses_a_foreign_directory_unless_overwrite(small_run, tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    with pytest.raises(FileExistsError, match="does not hold a soak_dask report.*overwrite=True"):
        write_report(small_run, out, "error")
    assert [p.name for p in out.iterdir()] == ["notes.txt"]
    write_report(small_run, out, "error", overwrite=True)
    assert (out / "notes.txt").read_text() == "keep me" and (out / "report.html").exists()
    with pytest.raises(FileExistsError, match="is not a directory"):
        write_report(small_run, out / "notes.txt", "error")


def test_rewrites_a_previous_report_and_drops_its_stale_figures(small_run, tmp_path):
    out = tmp_path / "rep"
    write_report(small_run, out, ["error", "auc"])
    (out / "notes.txt").write_text("keep me")
    write_report(small_run, out, "error")
    assert not (out / "soak_auc.png").exists() and (out / "soak_error.png").exists()
    assert (out / "notes.txt").exists()
    assert set(pd.read_csv(out / "pvalues.csv")["measure"]) == {"error"}
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
    """Open a probed copy of `page` in headless Chromium: (probe result, console lines)."""
    text = page.read_text(encoding="utf-8")
    # The page's policy allows no script at all; the copy allows inline ones, nothing else.
    text = text.replace(CSP, CSP + "; script-src 'unsafe-inline'")
    head = text.index("<head>") + len("<head>")
    text = text[:head] + PROBE_HEAD + text[head:].replace("</body>", PROBE_BODY + "</body>")
    copy = page.with_name("probed_" + page.name)
    copy.write_text(text, encoding="utf-8")
    done = run_chromium(tmp_path, "--dump-dom", copy.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'<pre id="soak-probe">(.*?)</pre>', done.stdout, re.S)
    assert found, f"the probe did not run; stderr: {done.stderr[-2000:]}"
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    return json.loads(html.unescape(found.group(1))), console


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


def test_report_opens_in_chromium_without_errors(report, tmp_path):
    result, console = probe_page(report, tmp_path)
    assert result == {"images": len(MEASURES), "loaded": len(MEASURES), "errors": []}
    assert console == []


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
