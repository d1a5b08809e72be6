"""Tests of the report of ``evaluate`` results: files, tables equal to the statistics, the
figure, and the HTML page in headless Chromium."""

from __future__ import annotations

import re
import shutil
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from PIL import Image  # noqa: E402

import soak_dask as sd  # noqa: E402
from soak_dask.io.outdir import MANIFEST  # noqa: E402
from soak_dask.results.comparisons import (  # noqa: E402
    COMPARE_COLUMNS,
    MEASURED,
    compare,
    comparisons,
    recommended_method,
)
from soak_dask.results.html import CSP  # noqa: E402
from soak_dask.results.plot import TEST_SPLIT_COLOR, plot_evaluation  # noqa: E402
from soak_dask.results.report import write_report  # noqa: E402
from soak_dask.results.stats import by_fold, evaluation_summary  # noqa: E402
from soak_dask.tables.generated import make_pixel_table  # noqa: E402

from .test_report import probe_page, read_markdown, run_chromium  # noqa: E402

MEASURES = ["error", "auc"]
LEARNERS = ["featureless", "logistic", "lda"]


def pixel_table(n_pixels: int = 1500) -> sd.Table:
    df = make_pixel_table(n_pixels=n_pixels, n_bands=4, tree_fraction=0.3, seed=2)
    return sd.load_table(df, label="label", group="polygon", exclude=["region", "x", "y"])


@pytest.fixture(scope="module")
def repeated():
    """Grouped 4-fold CV × 2 repeats with a 20 % test split: 8 cells per learner."""
    return sd.evaluate(
        pixel_table(),
        LEARNERS,
        outer="repeated_cv",
        outer_folds=4,
        outer_repeats=2,
        test_split=0.2,
        measures=MEASURES,
        options=sd.RunOptions(progress=False),
    )


@pytest.fixture(scope="module")
def bootstrap():
    return sd.evaluate(
        pixel_table(800),
        LEARNERS[:2],
        outer="bootstrap",
        outer_repeats=4,
        measures=MEASURES,
        options=sd.RunOptions(progress=False),
    )


@pytest.fixture(scope="module")
def report(repeated, tmp_path_factory) -> Path:
    return write_report(repeated, tmp_path_factory.mktemp("report") / "out")


def read_csv(path: Path) -> pd.DataFrame:
    text = {c: object for c in ("note", "reason")}
    frame = pd.read_csv(path, keep_default_na=False, na_values=[""], dtype=text)
    return frame.fillna({c: "" for c in text if c in frame})


# --- files and tables ------------------------------------------------------------------------


@pytest.mark.slow
def test_report_writes_every_file(report):
    out = report.parent
    expected = {"report.html", MANIFEST}  # the manifest marks the directory as ours
    tables = ("summary", "folds", "compare", "timings")
    expected |= {f"{t}.{ext}" for t in tables for ext in ("csv", "md")}
    expected |= {f"evaluation_{m}.{ext}" for m in MEASURES for ext in ("png", "svg")}
    assert {p.name for p in out.iterdir()} == expected
    for m in MEASURES:
        with Image.open(out / f"evaluation_{m}.png") as image:
            assert image.width >= 800 and image.height >= 300
        assert (out / f"evaluation_{m}.svg").read_text(encoding="utf-8").lstrip().startswith("<?x")


@pytest.mark.slow
def test_tables_equal_the_statistics(report, repeated):
    out = report.parent
    pd.testing.assert_frame_equal(
        read_csv(out / "summary.csv"), evaluation_summary(repeated), check_dtype=False, rtol=1e-12
    )
    pd.testing.assert_frame_equal(
        read_csv(out / "folds.csv"), by_fold(repeated), check_dtype=False, rtol=1e-12
    )
    got = read_csv(out / "compare.csv")
    pd.testing.assert_frame_equal(got, comparisons(repeated), check_dtype=False, rtol=1e-12)
    assert list(got.columns) == COMPARE_COLUMNS
    # Every pair per measure, measure by measure, with the test recommended for repeated CV
    # (corrected) and, for error on the test split, McNemar's: compare(method=None)'s rows.
    pairs = [("featureless", "logistic"), ("featureless", "lda"), ("logistic", "lda")]
    error_pairs = [pair for pair in pairs for _ in range(2)]
    assert list(zip(got["compare"], got["reference"], strict=True)) == error_pairs + pairs
    assert list(got["measure"]) == ["error"] * 6 + ["auc"] * 3
    assert list(got["method"]) == ["corrected", "mcnemar"] * 3 + ["corrected"] * 3
    for row in got.itertuples():
        fixed = compare(repeated, row.compare, row.reference, row.measure, row.method)
        assert row.p == pytest.approx(fixed["p"].iloc[0], rel=1e-12)
        assert (row.ci_low, row.ci_high) == pytest.approx(
            tuple(fixed[["ci_low", "ci_high"]].iloc[0])
        )
    header, _, *rows = read_markdown(out / "folds.md")
    assert header == list(by_fold(repeated).columns) and len(rows) == 3 * 8
    assert len(read_markdown(out / "compare.md")) == 2 + 9


def test_one_learner_has_nothing_to_compare(repeated, tmp_path):
    one = repeated.sel(learner=["logistic"])
    page = write_report(one, tmp_path / "rep", "error").read_text(encoding="utf-8")
    assert read_csv(tmp_path / "rep" / "compare.csv").empty
    assert "Learners compared (paired" not in page


# --- the figure -------------------------------------------------------------------------------


def test_plot_draws_cells_mean_sd_and_the_test_split(repeated):
    fig = plot_evaluation(repeated, "auc")
    ax = fig.axes[0]
    lines = {line.get_gid(): line for line in ax.get_lines()}
    values = repeated["auc"].sel(learner="logistic").values.ravel()
    assert sorted(lines["cells:logistic"].get_xdata()) == sorted(values)
    low, mean, high = lines["mean_sd:logistic"].get_xdata()
    assert mean == pytest.approx(values.mean()) and high == min(1.0, mean + values.std(ddof=1))
    estimate = repeated["test_auc"].sel(learner="logistic").values  # estimate, low, high
    split = lines["test_split:logistic"]
    assert list(split.get_xdata()) == [estimate[1], estimate[0], estimate[2]]
    assert split.get_color() == TEST_SPLIT_COLOR
    assert split.get_ydata()[0] > lines["mean_sd:logistic"].get_ydata()[0]  # under the folds
    assert [t.get_text() for t in ax.get_yticklabels()] == LEARNERS
    assert ax.get_xlabel() == "area under the ROC curve (0 to 1; higher is better)"
    assert "4-fold CV × 2 repeats" in ax.get_title()
    assert "test split, 95 % interval" in [t.get_text() for t in fig.legends[0].get_texts()]
    # The featureless error bar stops at 0 % and 100 %, as the SOAK figures' do.
    error = plot_evaluation(repeated, "error").axes[0]
    bar = next(line for line in error.get_lines() if line.get_gid() == "mean_sd:featureless")
    assert 0 <= min(bar.get_xdata()) and max(bar.get_xdata()) <= 100
    assert error.get_xlabel() == "test error (percent; lower is better)"
    matplotlib.pyplot.close("all")


@pytest.mark.slow
def test_bootstrap_report_explains_the_632_estimates(bootstrap, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        page = write_report(bootstrap, tmp_path / "rep").read_text(encoding="utf-8")
    names = ["error", "error_632", "error_632plus", "auc", "auc_632"]
    assert {f"evaluation_{m}.png" for m in names} <= {p.name for p in (tmp_path / "rep").iterdir()}
    assert "Bootstrap .632 estimates" in page and "0.632 &times; out-of-bag" in page
    assert "test error (percent), .632+ estimate (<code>error_632plus</code>)" in page
    notes = re.search(r'<div class="notes">(.*?)</div>', page, re.S).group(1)
    assert "Test split" not in notes and "K = " not in notes  # no split, no fold cap
    ax = plot_evaluation(bootstrap, "error_632").axes[0]
    assert ax.get_xlabel() == "test error (percent), .632 estimate (lower is better)"
    assert not any((line.get_gid() or "").startswith("test_split") for line in ax.get_lines())
    matplotlib.pyplot.close("all")


# --- the page ---------------------------------------------------------------------------------


def test_page_says_what_was_run_and_how_to_read_it(report, repeated):
    page = report.read_text(encoding="utf-8")
    assert CSP in page and "<script" not in page.lower()
    urls = re.findall(r"""(?:src|href)\s*=\s*["']([^"']*)""", page)
    assert all(u.startswith(("data:image/png;base64,", "#")) for u in urls)
    lede = re.search(r'<p class="lede">(.*?)</p>', page, re.S).group(1)
    assert "4-fold cross-validation repeated 2 times" in lede
    assert "whole groups of <b>polygon</b> kept together" in lede
    rows = int(repeated["n_test_split"].max())
    share = float(repeated.attrs["test_split"])  # the share drawn, whole polygons: about 0.2
    assert abs(share - 0.2) < 0.05
    held = f"{100 * share:.3g} % of the rows ({rows:,} rows, whole groups)"
    assert f"{held} reserved as a test split" in lede
    notes = re.search(r'<div class="notes">(.*?)</div>', page, re.S).group(1)
    assert "SD, not SE" in notes and "never a standard error" in notes
    assert "K = 4. K is capped at the number of groups" in notes
    assert "bootstrap 95 % percentile interval" in notes
    for m in MEASURES:
        assert f'<details class="measure" id="{m}"' in page
    assert page.count("<img ") == len(MEASURES)
    # The mean ± SD table of the first measure holds the summary, to the digits shown.
    error = re.search(r'id="error" open>(.*?)</details>', page, re.S).group(1)
    table = re.search(r'<table class="results">(.*?)</table>', error, re.S).group(1)
    head, *body = re.findall(r"<tr>(.*?)</tr>", table, re.S)
    assert "Test split [95 % interval]" in head
    means = evaluation_summary(repeated, "error")
    for cells_html, row in zip(body, means.itertuples(), strict=True):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", cells_html)
        assert cells[:2] == [row.learner, str(row.n)]
        mean, sd_ = (float(v) for v in cells[2].split(" ± "))
        assert mean == pytest.approx(row.mean, abs=0.006)
        assert sd_ == pytest.approx(row.sd, abs=0.006)
        pooled, sizes = cells[4].split(" [")
        assert float(pooled) == pytest.approx(row.weighted_mean, abs=0.006)
        assert sizes == f"{row.n_test_min:,.0f}–{row.n_test_max:,.0f}]"
        estimate = float(cells[5].split(" [")[0])
        assert estimate == pytest.approx(row.test_estimate, abs=0.006)
    # Each comparison says its null and the level measured for its test on this design.
    compared = re.findall(r"<tr>(.*?)</tr>", error.split("Learners compared")[1], re.S)
    assert "Type-I error measured here" in compared[0] and "About" in compared[0]
    level = MEASURED["repeated_cv", recommended_method("repeated_cv")][0]
    assert f"<td>{level:.1%}</td>" in compared[1]
    assert "the learners, each trained anew on a sample of ~" in compared[1]
    assert "these two fitted models, on new rows like the test split" in page
    settings = dict(re.findall(r"<tr><th>(.*?)</th><td>(.*?)</td></tr>", page, re.S))
    assert list(settings)[:5] == ["Data", "Label", "Groups", "Outer design", "Test split"]
    assert settings["Fits"] == f"{repeated.attrs['n_fits']}: 8 train sets × 3 learners"


@pytest.mark.slow
def test_report_opens_in_chromium_without_errors(report, tmp_path):
    result, console = probe_page(report, tmp_path)
    assert result == {"images": len(MEASURES), "loaded": len(MEASURES), "errors": []}
    assert console == []


@pytest.mark.slow
def test_report_screenshot_shows_the_figure_and_tables(report, tmp_path):
    shot = tmp_path / "shot.png"
    done = run_chromium(
        tmp_path, f"--screenshot={shot}", "--window-size=1200,1600", report.as_uri()
    )
    assert done.returncode == 0 and shot.exists(), done.stderr[-2000:]
    with Image.open(shot) as image:
        rgb = np.asarray(image.convert("RGB"), dtype=np.int64)
    gray = rgb.mean(axis=2)
    dark = gray < 200
    assert 0.01 < dark.mean() < 0.5 and dark[:150].any() and dark[-600:].any()
    # The first measure's figure is open near the top: its test-split bars are drawn in blue.
    blue = np.abs(rgb - [0x00, 0x72, 0xB2]).sum(axis=2) < 60
    assert blue[:1000].sum() > 200


def test_rewriting_drops_the_previous_reports_figures(report, repeated, tmp_path):
    out = tmp_path / "rep"
    shutil.copytree(report.parent, out)  # the module's report of every measure, as before
    write_report(repeated, out, "error", overwrite=True)
    assert not (out / "evaluation_auc.png").exists() and (out / "evaluation_error.png").exists()
    (out / "notes.txt").write_text("keep me")  # a file soak_dask did not write: refused, kept
    with pytest.raises(FileExistsError, match="holds notes.txt"):
        write_report(repeated, out, "error", overwrite=True)
    assert (out / "notes.txt").read_text() == "keep me"
    (out / "notes.txt").unlink()
    with pytest.raises(ValueError, match="measure 'mse' is not in the results"):
        write_report(repeated, out, "mse", overwrite=True)
    assert (out / "evaluation_error.png").exists()
