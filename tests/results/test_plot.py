"""Tests of soak_dask.results.plot: the paper's figures drawn from real and hand-built results."""

from __future__ import annotations

import re
import warnings

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import xarray as xr  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import soak_dask as sd  # noqa: E402
from soak_dask.results.plot import (  # noqa: E402
    MEASURE_RANGES,
    datasets_table,
    format_pvalue,
    mean_sd_bar,
    plot_datasets,
    plot_learners,
    plot_soak,
)
from soak_dask.tables.generated import make_pixel_table  # noqa: E402

from ..conftest import shared_file, toy_table  # noqa: E402

P_TEXT = re.compile(r"^(other|all)\u2212same (\S+), p(=|<)(\S+)$")


def run_small_soak() -> xr.Dataset:
    """A real SOAK run: 3 regions, featureless + logistic regression, K=3 (also for reports)."""
    df = make_pixel_table(n_pixels=3000, n_bands=6, tree_fraction=0.3, seed=0)
    table = sd.load_table(df, label="label", subset="region", group="polygon", exclude=["x", "y"])
    learners = {"featureless": "featureless", "logistic": "logistic"}
    return sd.soak(table, learners, n_folds=3, seed=1, options=sd.RunOptions(progress=False))


@pytest.fixture(scope="module")
def small_run() -> xr.Dataset:
    return run_small_soak()


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def results_from(diffs: dict[str, dict[str, float]], n_folds: int = 5, seed: int = 0):
    """Hand-built results: per learner and test subset, other = same + diff (+ noise)."""
    rng = np.random.default_rng(seed)
    rows = []
    for learner, by_subset in diffs.items():
        for subset, diff in by_subset.items():
            same = 20 + rng.normal(0, 2, n_folds)
            other = same + diff + rng.normal(0, 0.5, n_folds)
            every = same - 1 + rng.normal(0, 0.5, n_folds)
            for tt, values in (("same", same), ("other", other), ("all", every)):
                rows += [(learner, subset, k + 1, tt, v) for k, v in enumerate(values)]
    frame = pd.DataFrame(rows, columns=["learner", "test_subset", "fold", "train_type", "error"])
    return sd.from_dataframe(frame)


def panels(fig: Figure) -> dict[tuple[str, str], matplotlib.axes.Axes]:
    """(learner, test subset) -> panel axes, in drawing order."""
    out = {}
    for ax in fig.axes:
        gid = ax.get_gid() or ""
        if gid.startswith("panel:"):
            _, learner, subset = gid.split(":", 2)
            out[learner, subset] = ax
    return out


def by_gid(ax, gid: str, kind: str = "lines"):
    found = [a for a in getattr(ax, kind) if a.get_gid() == gid]
    assert len(found) == 1, f"expected one artist {gid!r}, found {len(found)}"
    return found[0]


def titles(fig: Figure, learner: str) -> list[str]:
    return [ax.get_title() for (lrn, _), ax in panels(fig).items() if lrn == learner]


def parse_text(text: str) -> tuple[str, float, float]:
    """(compare, mean difference, p) from a panel's text; p<0.0001 gives 0.0001."""
    match = P_TEXT.match(text)
    assert match, f"unexpected p-value text {text!r}"
    compare, diff, _, p = match.groups()
    as_float = lambda s: float("nan") if s == "NA" else float(s.replace("\u2212", "-"))  # noqa: E731
    return compare, as_float(diff), as_float(p)


# --- plot_soak on a real run ------------------------------------------------------------------


@pytest.mark.slow
def test_soak_figure_dots_are_the_fold_values(small_run):
    fig = plot_soak(small_run, "error")
    assert isinstance(fig, Figure)
    found = panels(fig)
    assert sorted(found) == [
        (lrn, s) for lrn in ("featureless", "logistic") for s in ("NE", "NW", "S")
    ]
    for learner in ("featureless", "logistic"):  # the first panel of a row has the y labels
        labels = found[learner, "NE"].get_yticklabels()
        assert [t.get_text() for t in labels] == ["same", "other", "all"]
    for (learner, subset), ax in found.items():
        assert ax.get_title() == f"test subset {subset}"
        assert list(ax.get_yticks()) == [0, 1, 2]
        for tt in ("same", "other", "all"):
            expected = small_run["error"].sel(learner=learner, test_subset=subset, train_type=tt)
            dots = by_gid(ax, f"folds:{tt}")
            np.testing.assert_array_equal(dots.get_xdata(), expected.values)
            mean, sd = float(expected.mean()), float(expected.std(ddof=1))
            bar = by_gid(ax, f"mean_sd:{tt}")
            np.testing.assert_allclose(bar.get_xdata(), [mean - sd, mean, mean + sd])
    # Panels of a learner share x; learners do not (featureless errors are much larger).
    fl, lg = found["featureless", "NE"], found["logistic", "NE"]
    assert found["featureless", "S"].get_xlim() == fl.get_xlim()
    assert fl.get_xlim() != lg.get_xlim()


def test_soak_figure_marks_the_pooled_estimate_beside_the_fold_mean():
    """Each row's green tick is ``summary``'s pooled estimate (the folds weighted by their
    test rows), far from the fold mean where one small fold scores apart; the legend names
    it; results without test rows get no tick."""
    ds = results_from({"lr": {"A": 5.0}}, n_folds=3)
    ds = ds.assign(n_test=xr.full_like(ds["error"], 100).where(ds["fold"] != 1, 5))
    ds["error"].loc[{"fold": 1, "train_type": "same"}] = 90.0  # a 5-row fold far from the rest
    fig = plot_soak(ds, "error")
    ax = panels(fig)["lr", "A"]
    table = sd.summary(ds, ["error"]).set_index("train_type")
    for tt in ("same", "other", "all"):
        tick = by_gid(ax, f"pooled:{tt}")
        np.testing.assert_allclose(tick.get_xdata(), [table.loc[tt, "weighted_mean"]])
    same = table.loc["same"]
    assert same["mean"] - same["weighted_mean"] > 20  # the tick stands apart from the diamond
    assert "pooled (every test row once)" in [t.get_text() for t in fig.legends[0].texts]
    bare = plot_soak(ds.drop_vars("n_test"), "error")
    assert not [ln for ln in panels(bare)["lr", "A"].lines if ln.get_gid().startswith("pooled")]
    assert "pooled (every test row once)" not in [t.get_text() for t in bare.legends[0].texts]


def test_learner_and_evaluation_figures_mark_the_pooled_estimate():
    """``plot_learners`` and ``plot_evaluation`` draw the same tick as ``plot_soak``: each
    learner's pooled estimate, ``summary``'s and ``evaluation_summary``'s ``weighted_mean``."""
    from soak_dask.results.plot import plot_evaluation
    from soak_dask.results.summaries import evaluation_summary

    ds = results_from({"lr": {"A": 5.0}, "rf": {"A": 1.0}}, n_folds=3)
    ds = ds.assign(n_test=xr.full_like(ds["error"], 100).where(ds["fold"] != 2, 7))
    ax = plot_learners(ds, "error").axes[0]
    table = sd.summary(ds, ["error"]).set_index(["learner", "train_type"])
    for (learner, tt), row in table.iterrows():
        tick = by_gid(ax, f"pooled:{learner}:{tt}")
        np.testing.assert_allclose(tick.get_xdata(), [row["weighted_mean"]])
    table = sd.load_table(toy_table(240, n_subsets=1, seed=2), label="y")
    res = sd.evaluate(
        table, ["featureless", "lda"], outer="cv", outer_folds=3, measures=["error", "auc"],
        options=sd.RunOptions(progress=False),
    )  # fmt: skip
    fig = plot_evaluation(res, "error")
    summary = evaluation_summary(res, ["error"]).set_index("learner")
    for learner in ("featureless", "lda"):
        tick = by_gid(fig.axes[0], f"pooled:{learner}")
        np.testing.assert_allclose(tick.get_xdata(), [summary.loc[learner, "weighted_mean"]])
    assert "pooled (every test row once)" in [t.get_text() for t in fig.legends[0].texts]


def test_soak_figure_texts_are_the_pvalues(small_run):
    fig = plot_soak(small_run, "error")
    tests = small_run.soak.pvalues("error").set_index(["learner", "test_subset", "compare"])
    n_checked = 0
    for (learner, subset), ax in panels(fig).items():
        for compare in ("other", "all"):
            text = by_gid(ax, f"pvalue:{compare}", "texts").get_text()
            got_compare, diff, p = parse_text(text)
            row = tests.loc[(learner, subset, compare)]
            assert got_compare == compare
            np.testing.assert_allclose(diff, row["mean_diff"], rtol=5e-3, atol=1e-12)
            if np.isnan(row["p"]):
                assert text.endswith("p=NA")
            elif row["p"] < 1e-4:
                assert text.endswith("p<0.0001")
            else:
                np.testing.assert_allclose(p, row["p"], rtol=0.05)
            n_checked += 1
    assert n_checked == 12
    # The featureless learner predicts the majority class whatever it trains on, so its
    # differences are identical across folds and the test is undefined: the text says so.
    assert tests.loc[("featureless", "NE", "other"), "reason"]
    assert (
        by_gid(panels(fig)["featureless", "NE"], "pvalue:other", "texts")
        .get_text()
        .endswith("p=NA")
    )


def test_accessor_plot_draws_the_same_figure(small_run):
    fig = small_run.soak.plot("auc", learners="logistic")
    assert sorted(panels(fig)) == [("logistic", s) for s in ("NE", "NW", "S")]
    dots = by_gid(panels(fig)["logistic", "S"], "folds:other")
    expected = small_run["auc"].sel(learner="logistic", test_subset="S", train_type="other")
    np.testing.assert_array_equal(dots.get_xdata(), expected.values)


# --- plot_soak on hand-built results -----------------------------------------------------------


def test_order_effect_sorts_each_learner_by_abs_other_minus_same():
    ds = results_from({"a": {"A": 1.0, "B": 6.0, "C": -3.0}, "b": {"A": -8.0, "B": 0.2, "C": 2.0}})
    by_name = plot_soak(ds, order="name")
    assert titles(by_name, "a") == ["test subset A", "test subset B", "test subset C"]
    by_effect = plot_soak(ds, order="effect")
    assert titles(by_effect, "a") == ["test subset B", "test subset C", "test subset A"]
    assert titles(by_effect, "b") == ["test subset A", "test subset C", "test subset B"]


def test_pvalue_text_formats():
    assert format_pvalue(0.001234) == "p=0.0012"
    assert format_pvalue(0.00009) == "p<0.0001"
    assert format_pvalue(0.5) == "p=0.5"
    assert format_pvalue(float("nan")) == "p=NA"
    # Other is 30 points worse in every fold up to small noise: p is tiny.
    ds = results_from({"a": {"A": 30.0}}, n_folds=10)
    text = by_gid(panels(plot_soak(ds))["a", "A"], "pvalue:other", "texts").get_text()
    assert text.endswith("p<0.0001")
    assert 29 < parse_text(text)[1] < 31


def test_one_subset_draws_same_and_all_only():
    ds = results_from({"a": {"A": 2.0}}).sel(train_type=["same", "all"])
    ax = panels(plot_soak(ds))["a", "A"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["same", "all"]  # first panel
    assert [t.get_gid() for t in ax.texts] == ["pvalue:all"]


def test_plot_soak_bad_input_names_the_option(small_run):
    with pytest.raises(ValueError, match="order='size' is not supported"):
        plot_soak(small_run, order="size")
    with pytest.raises(ValueError, match="learners=\\['lasso'\\] names \\['lasso'\\]"):
        plot_soak(small_run, learners="lasso")
    with pytest.raises(ValueError, match="measure 'mse' is not in the results"):
        plot_soak(small_run, "mse")
    with pytest.raises(ValueError, match="ncols must be a positive integer"):
        plot_soak(small_run, ncols=0)


# --- legibility -------------------------------------------------------------------------------


def drawn_ticklabels(axis) -> list:
    """Tick labels matplotlib draws: visible and inside the view limits (it lists more)."""
    low, high = sorted(axis.get_view_interval())
    pad = 1e-9 * max(1.0, high - low)
    return [
        tick.label1
        for tick in axis.get_major_ticks()
        if tick.label1.get_visible() and low - pad <= tick.get_loc() <= high + pad
    ]


def text_boxes(fig: Figure) -> tuple[np.ndarray, list[str]]:
    """Display-space boxes (x0, y0, x1, y1) of every visible text: ticks, titles, p-values."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    texts = list(fig.texts)
    for ax in fig.axes:
        texts += [ax.title, *ax.texts, *drawn_ticklabels(ax.xaxis), *drawn_ticklabels(ax.yaxis)]
    texts = [t for t in texts if t.get_text()]
    boxes = np.array([t.get_window_extent(renderer).extents for t in texts])
    return boxes, [t.get_text() for t in texts]


def overlapping_pairs(boxes: np.ndarray, labels: list[str]) -> list[tuple[str, str]]:
    x0, y0, x1, y1 = (boxes[:, i] for i in range(4))
    overlap = (
        (x0[:, None] < x1[None, :])
        & (x0[None, :] < x1[:, None])
        & (y0[:, None] < y1[None, :])
        & (y0[None, :] < y1[:, None])
    )
    i, j = np.nonzero(np.triu(overlap, k=1))
    return [(labels[a], labels[b]) for a, b in zip(i, j, strict=True)]


def test_overlap_check_detects_a_cramped_figure(small_run):
    fig = plot_soak(small_run)
    fig.set_size_inches(3, 2)
    assert overlapping_pairs(*text_boxes(fig))


@pytest.mark.slow
def test_twenty_subsets_five_learners_are_legible():
    rng = np.random.default_rng(1)
    subsets = [f"region_{i:02d}" for i in range(20)]
    ds = results_from(
        {f"learner{j}": dict(zip(subsets, rng.normal(0, 4, 20), strict=True)) for j in range(5)}
    )
    fig = plot_soak(ds, order="effect")
    width, height = fig.get_size_inches()
    assert width <= 17 and height <= 36, (width, height)
    found = panels(fig)
    assert len(found) == 100
    dpi = fig.dpi
    for ax in found.values():
        box = ax.get_window_extent()
        assert box.width / dpi >= 2.5 and box.height / dpi >= 0.9  # inches
    boxes, labels = text_boxes(fig)
    assert len(labels) > 700  # ticks, titles and 200 p-value texts were all measured
    assert overlapping_pairs(boxes, labels) == []
    # Every p-value text stays inside its own panel.
    for ax in found.values():
        panel = ax.get_window_extent()
        for text in ax.texts:
            box = text.get_window_extent()
            assert panel.x0 <= box.x0 and box.x1 <= panel.x1, text.get_text()


# --- plot_datasets ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def paper_results() -> dict[str, xr.Dataset]:
    """The SOAK paper's cv_glmnet fold scores on its 18 data sets."""
    scores = pd.read_csv(shared_file("paper", "soak_paper_fold_scores.csv"))
    glmnet = scores[scores["algorithm"] == "cv_glmnet"]
    return {
        str(name): sd.from_dataframe(
            pd.DataFrame(
                {
                    "learner": rows["algorithm"],
                    "test_subset": rows["test.group"].astype(str),
                    "fold": rows["test.fold"],
                    "train_type": rows["train.groups"],
                    "error": rows["percent.error"],
                }
            )
        )
        for name, rows in glmnet.groupby("data.name")
    }


def segments(ax, gid: str, names: list[str]) -> dict[str, tuple[float, float]]:
    """Data set name -> (xmin, xmax) of a segment collection; row i (y ≈ i) is names[i]."""
    out = {}
    for (x_start, y), (x_end, _) in by_gid(ax, gid, "collections").get_segments():
        out[names[round(y)]] = (x_start, x_end)
    return out


@pytest.mark.slow
def test_datasets_figure_of_the_paper(paper_results):
    fig = plot_datasets(paper_results, "error")
    ax_diff, ax_p = fig.axes
    names = [t.get_text() for t in ax_diff.get_yticklabels()]
    assert list(ax_diff.get_yticks()) == list(range(18))
    assert len(names) == 18 and sorted(names) == sorted(paper_results)
    means = {}
    for name, ds in paper_results.items():
        tests = ds.soak.pvalues("error")
        for compare in ("other", "all"):
            part = tests[tests["compare"] == compare]
            xmin, xmax = segments(ax_diff, f"diff:{compare}", names)[name]
            assert xmin == pytest.approx(part["mean_diff"].min(), abs=1e-9)
            assert xmax == pytest.approx(part["mean_diff"].max(), abs=1e-9)
            lmin, lmax = segments(ax_p, f"log10p:{compare}", names)[name]
            log_p = np.log10(part["p"].dropna())
            assert (lmin, lmax) == pytest.approx((log_p.min(), log_p.max()), abs=1e-9)
        means[name] = tests.loc[tests["compare"] == "other", "mean_diff"].mean()
    # Rows by decreasing mean other−same difference, top first.
    assert names == sorted(means, key=lambda n: -means[n])
    # As in the paper, pairing two different image sources (MNIST vs FashionMNIST) differs most.
    assert names[0] == "MNIST_FashionMNIST"
    assert fig.get_size_inches()[1] <= 10
    assert overlapping_pairs(*text_boxes(fig)) == []  # 18 names, ticks and titles all legible


def test_datasets_from_a_tidy_frame_match_the_mapping():
    tidy = pd.concat(
        [
            results_from({"glm": {"A": d, "B": d / 2}}, seed=s).to_dataframe().reset_index()
            for s, d in enumerate((1.0, 5.0, 9.0))
        ],
        keys=["low", "mid", "high"],
        names=["data", None],
    ).reset_index(level="data")
    table = datasets_table(tidy, "error")
    mapping = {
        name: sd.from_dataframe(rows.drop(columns="data")) for name, rows in tidy.groupby("data")
    }
    pd.testing.assert_frame_equal(
        table.set_index(["data", "compare"]).sort_index(),
        datasets_table(mapping).set_index(["data", "compare"]).sort_index(),
    )
    fig = plot_datasets(tidy)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["high", "mid", "low"]


def test_plot_datasets_bad_input():
    two = results_from({"glm": {"A": 1.0}, "featureless": {"A": 0.0}})
    with pytest.raises(ValueError, match="learner=None is ambiguous.*'featureless', 'glm'"):
        plot_datasets({"x": two})
    with pytest.raises(ValueError, match="learner='rf' is missing from data set"):
        plot_datasets({"x": two}, learner="rf")
    with pytest.raises(ValueError, match="needs a 'data' column"):
        plot_datasets(two.to_dataframe().reset_index())
    with pytest.raises(ValueError, match="data set 'x': measure 'auc' is not in the results"):
        plot_datasets({"x": two}, "auc", learner="glm")
    with pytest.raises(TypeError, match="data set 'y': results must be an xarray.Dataset"):
        plot_datasets({"x": two, "y": two.to_dataframe()}, learner="glm")
    with pytest.raises(ValueError, match="alpha must be between 0 and 1"):
        plot_datasets({"x": two}, learner="glm", alpha=5)


# --- bars within the measure's range, legends inside the figure, learners compared ------------


def skewed_results() -> xr.Dataset:
    """Folds with one outlier: mean ± SD runs past 0 % error and past accuracy 1."""
    error = [0.0, 0.0, 0.0, 60.0]
    rows = [
        ("lr", subset, k + 1, tt, error[k], 1 - error[k] / 100)
        for subset in ("A", "B")
        for tt in ("same", "other", "all")
        for k in range(4)
    ]
    columns = ["learner", "test_subset", "fold", "train_type", "error", "accuracy"]
    return sd.from_dataframe(pd.DataFrame(rows, columns=columns))


def bars(fig: Figure) -> list[np.ndarray]:
    """x data of every mean ± SD bar of a figure."""
    return [
        line.get_xdata()
        for ax in fig.axes
        for line in ax.lines
        if (line.get_gid() or "").startswith("mean_sd:")
    ]


@pytest.mark.parametrize("draw", [plot_soak, plot_learners])
def test_mean_sd_bars_stop_at_the_measure_range(draw):
    ds = skewed_results()
    sd_error = np.std([0, 0, 0, 60], ddof=1)  # 30: mean 15 - 30 is below 0 % error
    for measure, expected in (
        ("error", [0, 15, 15 + sd_error]),
        ("accuracy", [0.85 - sd_error / 100, 0.85, 1]),
    ):
        found = bars(draw(ds, measure))
        assert len(found) == 6  # one per test subset and train type
        for x in found:
            np.testing.assert_allclose(x, expected)


@pytest.mark.slow
def test_every_bar_of_a_real_run_is_within_range(small_run):
    for measure in small_run.attrs["measures"]:
        low, high = MEASURE_RANGES[measure]
        for draw in (plot_soak, plot_learners):
            found = np.concatenate(bars(draw(small_run, measure)))
            assert ((found >= low) & (found <= high)).all(), (measure, draw.__name__)
            plt.close("all")


def legend_inside(fig: Figure) -> bool:
    fig.canvas.draw()
    (legend,) = fig.legends
    box, frame = legend.get_window_extent(), fig.bbox
    return frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1


@pytest.mark.parametrize("n_subsets", [1, 2, 3])
def test_legend_fits_inside_the_figure(n_subsets):
    ds = results_from({"a": {s: 1.0 for s in "ABC"[:n_subsets]}})
    fig = plot_soak(ds)
    assert legend_inside(fig)
    assert "text: mean difference, paired t-test p" in [t.get_text() for t in fig.legends[0].texts]
    assert legend_inside(plot_learners(ds))


def test_plain_kfold_figure_has_no_test_text_and_no_warning():
    ds = results_from({"a": {"all_rows": 0.0}}).sel(train_type=["same"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = plot_soak(ds)
        learners = plot_learners(ds)
    assert [t.get_text() for t in fig.legends[0].texts] == ["one test fold", "mean ± SD"]
    assert legend_inside(fig)  # a one-panel figure is narrow: the legend stacks
    assert all(not ax.texts for ax in fig.axes)
    (ax,) = learners.axes
    assert ax.get_title() == "plain K-fold CV, 5 folds"
    assert [t.get_text() for t in learners.legends[0].texts] == [
        "one test fold",
        "mean ± SD over folds",
    ]


def test_learners_figure_shows_each_learner_per_test_subset(small_run):
    fig = plot_learners(small_run, "auc")
    found = {ax.get_gid().split(":", 1)[1]: ax for ax in fig.axes if ax.get_gid()}
    assert list(found) == ["NE", "NW", "S"]
    first = found["NE"]
    assert [t.get_text() for t in first.get_yticklabels()] == ["featureless", "logistic"]
    assert found["S"].get_xlim() == first.get_xlim()  # one x axis: learners compare across panels
    for subset, ax in found.items():
        for learner in ("featureless", "logistic"):
            for tt in ("same", "other", "all"):
                folds = small_run["auc"].sel(learner=learner, test_subset=subset, train_type=tt)
                dots = by_gid(ax, f"folds:{learner}:{tt}")
                np.testing.assert_array_equal(dots.get_xdata(), folds.values)
                bar = by_gid(ax, f"mean_sd:{learner}:{tt}")
                np.testing.assert_allclose(bar.get_xdata(), mean_sd_bar(folds.values, "auc"))
                # Each learner's train types sit around its row.
                row = ["featureless", "logistic"].index(learner)
                assert abs(dots.get_ydata()[0] - row) < 0.5
            y = [
                by_gid(ax, f"folds:{learner}:{tt}").get_ydata()[0]
                for tt in ("same", "other", "all")
            ]
            assert y == sorted(y) and ax.get_ylim()[0] > ax.get_ylim()[1]  # same on top
    assert "higher is better" in fig.get_supxlabel()
