"""Inputs that once gave a silently wrong result, each now a clear one-line error (API and
CLI) or a result that says what it is: NaN probabilities, one class, one group, duplicate
features, options a design ignores, a transfer without subsets, shares at the extremes."""

from __future__ import annotations

import re
import warnings

import dask
import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin

import soak_dask as sd
from soak_dask.app.cli import main


@pytest.fixture(autouse=True)
def _sync():
    with dask.config.set(scheduler="sync"):
        yield


class NaNProba(ClassifierMixin, BaseEstimator):
    """Probabilities all NaN (as a learner broken by its input gives): its predict is the
    argmax of NaN, so a run would score the first class."""

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def predict_proba(self, X):
        return np.full((len(X), len(self.classes_)), np.nan)

    def predict(self, X):
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


def frame(n: int = 160, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "a": rng.normal(size=n),
            "b": rng.normal(size=n),
            "y": rng.choice(["p", "q"], n),
            "s": rng.choice(["u", "v"], n),
            "g": rng.integers(0, 8, n),
        }
    )


def table(df=None, **kw) -> sd.Table:
    return sd.load_table(frame() if df is None else df, label="y", features=["a", "b"], **kw)


@pytest.fixture(scope="module")
def csv(tmp_path_factory):
    """The CSV tables of the CLI cases."""
    folder = tmp_path_factory.mktemp("silent")
    paths = {}
    for name, df in {
        "plain": frame(),
        "one_class": frame().assign(y="p"),
        "one_group": frame().assign(g=1),
        "one_subset": frame().assign(s="u"),
    }.items():
        paths[name] = folder / f"{name}.csv"
        df.to_csv(paths[name], index=False)
    return paths


@pytest.fixture(scope="module")
def scheduler():
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0"
    ) as cluster:
        yield cluster.scheduler_address


def soak(argv, capsys, scheduler) -> tuple[int, str]:
    code = main([*map(str, argv), "--scheduler", scheduler])
    err = capsys.readouterr().err
    return code, err


# --- NaN probabilities -------------------------------------------------------------------------


@pytest.mark.parametrize("prior_correction", [True, False])
def test_nan_probabilities_score_nan_naming_the_learner(prior_correction):
    with pytest.warns(UserWarning, match="nanny .*predict_proba returned NaN"):
        ds = sd.evaluate(
            table(),
            {"nanny": NaNProba(), "featureless": "featureless"},
            measures=["error", "log_loss"],
            prior_correction=prior_correction,
            options=sd.RunOptions(progress=False),
        )
    assert ds["error"].sel(learner="nanny").isnull().all()
    assert ds["error"].sel(learner="featureless").notnull().all()


def test_nan_probabilities_in_soak_and_split_sensitivity():
    with pytest.warns(UserWarning, match="nanny .*predict_proba returned NaN"):
        ds = sd.soak(
            table(subset="s"),
            {"nanny": NaNProba()},
            n_folds=3,
            options=sd.RunOptions(progress=False),
        )
    assert ds["error"].isnull().all()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = sd.split_sensitivity(
            table(),
            {"nanny": NaNProba()},
            measures="log_loss",
            design=sd.SplitTrials(ratios=(0.7,), n_repeats=3, n_folds=2),
            options=sd.RunOptions(progress=False),
        )
    assert any("predict_proba returned NaN" in str(w.message) for w in caught)
    assert ds["test_score"].isnull().all()


# --- one class, one group, one subset ----------------------------------------------------------

ONE_CLASS = "label column 'y' holds one class ('p') in every row"


@pytest.mark.parametrize(
    "call",
    [
        lambda t: sd.evaluate(t, ["featureless"], options=sd.RunOptions(progress=False)),
        lambda t: sd.soak(t, ["featureless"], n_folds=3, options=sd.RunOptions(progress=False)),
        lambda t: sd.split_sensitivity(
            t,
            "featureless",
            design=sd.SplitTrials(n_repeats=3, n_folds=2),
            options=sd.RunOptions(progress=False),
        ),
        lambda t: sd.compare_sampling(
            t,
            ["featureless"],
            design=sd.SamplingSplits(methods=["random"], n_repeats=3),
            options=sd.RunOptions(progress=False),
        ),  # fmt: skip
        lambda t: sd.transfer(t, ["featureless"], n_folds=3, options=sd.RunOptions(progress=False)),
        lambda t: sd.search_subsets(
            t, ["featureless"], n_folds=3, options=sd.RunOptions(progress=False)
        ),
    ],
    ids=["evaluate", "soak", "split_sensitivity", "compare_sampling", "transfer", "search"],
)
def test_one_class_refused(call):
    with pytest.raises(ValueError, match=re.escape(ONE_CLASS)), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the per-subset one-class warning comes first
        call(table(frame().assign(y="p"), subset="s"))


def test_lodo_with_one_group_refused():
    one = table(frame().assign(g=1), group="g")
    with pytest.raises(ValueError, match="outer='lodo' .* has 1 group: need at least 2"):
        sd.evaluate(one, ["featureless"], outer="lodo", options=sd.RunOptions(progress=False))
    with pytest.raises(ValueError, match="the table has 1 groups"):  # as cv already did
        sd.evaluate(one, ["featureless"], options=sd.RunOptions(progress=False))


def test_transfer_needs_two_subsets():
    quiet = sd.RunOptions(progress=False)
    with pytest.raises(ValueError, match="load the table with subset=COLUMN"):  # the design's
        sd.run_design(table(), sd.Transfer(n_folds=3), ["featureless"], options=quiet)
    for call in (sd.transfer, sd.search_subsets):
        with pytest.raises(ValueError, match="load the table with subset=COLUMN"):
            call(table(), ["featureless"], n_folds=3, options=sd.RunOptions(progress=False))
        with pytest.raises(ValueError, match="holds one subset \\('u'\\)"):
            call(table(frame().assign(s="u"), subset="s"), ["featureless"], n_folds=3,
                 options=sd.RunOptions(progress=False))  # fmt: skip


# --- duplicates and options a design ignores ---------------------------------------------------


def test_duplicate_features_refused():
    with pytest.raises(ValueError, match=r"features names \['a'\] more than once"):
        sd.load_table(frame(), label="y", features=["a", "b", "a"])


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"outer": "cv", "outer_repeats": 3}, "outer_repeats=3 has no effect with outer='cv'"),
        ({"outer": "loo", "outer_repeats": 2}, "outer_repeats=2 has no effect with outer='loo'"),
        (
            {"outer": "bootstrap", "train_ratio": 0.5},
            "train_ratio=0.5 has no effect with outer='boot",
        ),
        ({"outer": "cv", "train_ratio": 0.6}, "train_ratio=0.6 has no effect with outer='cv'"),
        (
            {"outer": "subsampling", "outer_folds": 10},
            "outer_folds=10 has no effect with outer='sub",
        ),
        ({"outer": "bootstrap", "outer_folds": 3}, "outer_folds=3 has no effect"),
    ],
)
def test_options_a_design_ignores_refused(options, match):
    with pytest.raises(ValueError, match=match):
        sd.evaluate(table(), ["featureless"], **options, options=sd.RunOptions(progress=False))


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"ratio": 0.25}, "ratio=0.25 has no effect with sizes=-1"),
        ({"size_seeds": 3}, "size_seeds=3 has no effect with sizes=-1"),
        ({"epochs": 2}, "epochs=2 has no effect with incremental=False"),
    ],
)
def test_soak_options_it_would_ignore_refused(options, match):
    with pytest.raises(ValueError, match=match):
        run, rest = sd.RunOptions.among(options, progress=False)
        sd.soak(table(subset="s"), ["featureless"], n_folds=3, **rest, options=run)


def test_lodo_ignores_nothing_it_is_given():
    ds = sd.evaluate(
        table(group="g"), ["featureless"], outer="lodo", options=sd.RunOptions(progress=False)
    )
    assert ds.sizes["fold"] == 8


# --- shares at the extremes --------------------------------------------------------------------


def test_share_extremes_refused_or_honoured():
    t = table()
    with pytest.raises(ValueError, match=r"test_split=0.001 draws 0 of the table's 160 rows"):
        sd.evaluate(t, ["featureless"], test_split=0.001, options=sd.RunOptions(progress=False))
    ds = sd.evaluate(t, ["featureless"], test_split=0.01, options=sd.RunOptions(progress=False))
    assert int(ds["n_test_split"].item()) == 2 and ds.attrs["test_split"] == 2 / 160
    with pytest.raises(ValueError, match="train_ratio=0.999 draws 160 of the table's 160"):
        sd.evaluate(
            t,
            ["featureless"],
            outer="subsampling",
            train_ratio=0.999,
            outer_repeats=2,
            options=sd.RunOptions(progress=False),
        )
    with pytest.raises(ValueError, match="train_ratio=0.001 draws 0 of the table's 160"):
        sd.compare_sampling(
            t,
            ["featureless"],
            design=sd.SamplingSplits(methods=["random"], train_ratio=0.001, n_repeats=3),
            options=sd.RunOptions(progress=False),
        )
    with pytest.raises(ValueError, match="ratio=0.999 draws 160 of the table's 160 rows"):
        sd.split_sensitivity(
            t,
            "featureless",
            design=sd.SplitTrials(ratios=(0.999,), n_repeats=3),
            options=sd.RunOptions(progress=False),
        )


def test_grouped_share_extremes_refused():
    t = table(group="g")
    with pytest.raises(ValueError, match="test_split=0.01 draws 0 of the table's 8 groups"):
        sd.evaluate(t, ["featureless"], test_split=0.01, options=sd.RunOptions(progress=False))


# --- the same cases from the command line ------------------------------------------------------


def cli_cases(csv, tmp):
    base = ["--label", "y", "--features", "a,b", "--out", tmp / "r.zarr"]
    return [
        (["evaluate", csv["one_class"], *base], ONE_CLASS),
        (["run", csv["one_class"], *base, "--subset", "s"], ONE_CLASS),
        (["evaluate", csv["one_group"], *base, "--group", "g", "--outer", "lodo"],
         "has 1 group: need at least 2"),  # fmt: skip
        (["evaluate", csv["plain"], *base, "--outer-repeats", "3"],
         "--outer-repeats=3 has no effect with outer='cv'"),  # fmt: skip
        (["evaluate", csv["plain"], *base, "--outer", "bootstrap", "--train-ratio", "0.5"],
         "--train-ratio=0.5 has no effect with outer='boot"),  # fmt: skip
        (["evaluate", csv["plain"], *base, "--test-split", "0.001"],
         "test_split=0.001 draws 0 of the table's 160 rows"),  # fmt: skip
        (["evaluate", csv["plain"], *base, "--outer", "subsampling", "--train-ratio", "0.999",
          "--outer-repeats", "2"], "train_ratio=0.999 draws 160 of the table's 160 rows"),
        (["evaluate", csv["plain"], "--label", "y", "--features", "a,b,a", "--out",
          tmp / "r.zarr"], "features names ['a'] more than once"),  # fmt: skip
        (["transfer", csv["one_subset"], *base, "--subset", "s"], "holds one subset ('u')"),
        (["run", csv["plain"], *base, "--subset", "s", "--epochs", "2"],
         "epochs=2 has no effect with incremental=False"),  # fmt: skip
        (["split-sensitivity", csv["plain"], *base, "--ratios", "0.999", "--n-repeats", "3"],
         "ratio=0.999 draws 160 of the table's 160 rows"),  # fmt: skip
        (["compare-sampling", csv["plain"], *base, "--methods", "random", "--train-ratio",
          "0.001", "--n-repeats", "3"], "train_ratio=0.001 draws 0 of the table's 160 rows"),
    ]  # fmt: skip


@pytest.mark.slow
def test_cli_refuses_each_case_in_one_line(csv, tmp_path, capsys, scheduler):
    for argv, message in cli_cases(csv, tmp_path):
        code, err = soak(argv, capsys, scheduler)
        assert code == 2 and err.startswith("soak: error: ") and message in err, (argv, err)
        assert len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "r.zarr").exists()


@pytest.mark.slow
def test_cli_honours_an_extreme_ratio(csv, tmp_path, capsys, scheduler):
    out = tmp_path / "s"
    argv = ["split-sensitivity", csv["plain"], "--label", "y", "--features", "a,b", "--out",
            out, "--ratios", "0.05,0.97", "--n-repeats", "3", "--n-folds", "2", "--learner",
            "featureless"]  # fmt: skip
    code, err = soak(argv, capsys, scheduler)
    assert code == 0, err
    found = [pd.read_csv(f) for f in out.glob("*.csv")]
    summary = next(f for f in found if "ratio_used" in f.columns)
    assert summary["ratio_used"].tolist() == [8 / 160, 155 / 160]


@pytest.mark.parametrize(
    ("options", "match"),
    [
        (
            {"n_neighbors": 7},
            "n_neighbors=7 has no effect with methods=.*used only by the methods 'overlap' and",
        ),
        ({"knn": "nndescent"}, "knn='nndescent' has no effect"),
        ({"n_levels": 3}, "n_levels=3 has no effect"),
        ({"mdc_max_rows": 50}, "mdc_max_rows=50 has no effect.*only by the methods 'mdc'"),
        ({"doptimal_repeats": 5}, "doptimal_repeats=5 has no effect"),
    ],
)
def test_compare_sampling_options_no_method_uses_refused(options, match):
    with pytest.raises(ValueError, match=match):
        sd.SamplingSplits(methods=["random", "stratified"], n_repeats=3, **options)


def test_compare_sampling_cli_option_no_method_uses(csv, tmp_path, capsys, scheduler):
    argv = ["compare-sampling", csv["plain"], "--label", "y", "--features", "a,b", "--out",
            tmp_path / "o", "--methods", "random", "--n-neighbors", "9",
            "--n-repeats", "3"]  # fmt: skip
    code, err = soak(argv, capsys, scheduler)
    assert code == 2 and "n_neighbors=9 has no effect with methods=['random']" in err
    assert len(err.strip().splitlines()) == 1
