"""Grouped folds balanced by rows or by groups (issue 23.1), the row-weighted difference beside
the fold mean, the small-strata warning, and the prior correction said and applied alike in
``soak`` and ``evaluate`` (issue 23.2)."""

from __future__ import annotations

import math
import warnings

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import soak_dask as sd
from soak_dask.app import cli
from soak_dask.results.stats import evaluation_text, pvalues, results_text, unequal_subsets
from soak_dask.split.fold_options import GROUP_ASSIGNMENTS
from soak_dask.split.folds import group_folds
from soak_dask.tables.table import FOLD_COLUMN

from ..conftest import AZTREES_FEATURES, n_examples

QUIET = {"options": sd.RunOptions(progress=False)}


def _grouped(df: pd.DataFrame, npartitions: int, k: int, seed: int, assignment: str):
    ddf = dd.from_pandas(df, npartitions=npartitions, sort=False)
    table = sd.load_table(ddf, label="y", subset="s", group="g", features=["x1"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # small strata, by design of the random frames
        folded = sd.assign_folds(table, k, seed, group_assignment=assignment)
    return folded.data[FOLD_COLUMN].compute().sort_index()


# Groups nested in subset × label, of very different sizes (a few large, many small).
grouped_frames = st.integers(2, 25).flatmap(
    lambda n_groups: st.tuples(
        st.lists(st.sampled_from("AB"), min_size=n_groups, max_size=n_groups),
        st.lists(st.sampled_from("pq"), min_size=n_groups, max_size=n_groups),
        st.lists(st.integers(1, 60), min_size=n_groups, max_size=n_groups),
    )
)


def _frame(groups: tuple) -> pd.DataFrame:
    subset, label, size = groups
    rows = [
        (f"{s}{y}{i}", s, y)
        for i, (s, y, n) in enumerate(zip(*groups, strict=True))
        for _ in range(n)
    ]
    df = pd.DataFrame(rows, columns=["g", "s", "y"])
    return df.assign(x1=np.arange(len(df), dtype=float))


@settings(max_examples=n_examples(80), deadline=None)
@given(
    grouped_frames,
    st.integers(2, 6),
    st.integers(0, 2**32 - 1),
    st.randoms(use_true_random=False),
    st.sampled_from(GROUP_ASSIGNMENTS),
)
def test_group_folds_invariants(groups, k, seed, rng, assignment):
    """On the table of group sizes: the bound of each assignment, and the same folds whatever
    order the table arrives in from the cluster."""
    subset, label, size = groups
    table = pd.DataFrame(
        {
            "group": [f"{s}{y}{i}" for i, (s, y) in enumerate(zip(subset, label, strict=True))],
            "stratum": [2 * (s == "B") + (y == "q") for s, y in zip(subset, label, strict=True)],
            "n": size,
        }
    )
    folds = group_folds(table, k, seed, assignment)
    assert folds.index.is_unique and set(folds.index) == set(table["group"])
    assert folds.between(1, k).all()
    shuffled = table.sample(frac=1, random_state=rng.randrange(2**32))
    assert folds.equals(group_folds(shuffled, k, seed, assignment))
    dealt = table.assign(f=folds.reindex(table["group"]).to_numpy())
    for _, stratum in dealt.groupby("stratum"):
        rows = stratum.groupby("f")["n"].sum().reindex(range(1, k + 1), fill_value=0)
        n_groups = stratum.groupby("f").size().reindex(range(1, k + 1), fill_value=0)
        if assignment == "rows":  # largest first onto the emptiest fold
            assert rows.max() - rows.min() <= stratum["n"].max()
        else:  # mlr3resampling: groups dealt in turn, folds 1, 2, ... take the extra ones
            assert n_groups.max() - n_groups.min() <= 1
            assert n_groups.is_monotonic_decreasing


@settings(max_examples=n_examples(4), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    grouped_frames,
    st.integers(2, 4),
    st.integers(0, 2**32 - 1),
    st.integers(1, 4),
    st.sampled_from(GROUP_ASSIGNMENTS),
)
def test_grouped_folds_keep_groups_whole_whatever_the_partitions(
    groups, k, seed, nparts, assignment
):
    df = _frame(groups)
    if (df.groupby("s")["g"].nunique() < k).any():
        return  # refused (empty test folds): tested in test_folds
    folds = _grouped(df, nparts, k, seed, assignment)
    assert (df.assign(f=folds.to_numpy()).groupby("g")["f"].nunique() == 1).all()
    assert folds.equals(_grouped(df, nparts + 2, k, seed, assignment))


def test_group_folds_by_hand():
    groups = pd.DataFrame(
        {"group": list("abcdef"), "stratum": [0] * 6, "n": [100, 40, 30, 20, 10, 5]}
    )
    rows = group_folds(groups, 2, seed=1)
    by_fold = groups.assign(f=rows.reindex(groups["group"]).to_numpy()).groupby("f")["n"].sum()
    # 100 alone; 40 + 30 + 20 + 10 + 5 = 105 on the other fold: the best split of these groups.
    assert sorted(by_fold.tolist()) == [100, 105]
    dealt = group_folds(groups, 2, seed=1, assignment="mlr3resampling")
    assert dealt.value_counts().tolist() == [3, 3]
    with pytest.raises(ValueError, match="group_assignment='groups': choose 'rows'"):
        group_folds(groups, 2, seed=1, assignment="groups")


def _results(values: dict, n_test: list[int]):
    """A SOAK result of one learner and subset: error per train type over the folds."""
    k = len(n_test)
    frame = pd.DataFrame(
        [
            ("lr", "A", fold + 1, train_type, error, n_test[fold])
            for train_type, errors in values.items()
            for fold, error in enumerate(errors)
        ],
        columns=["learner", "test_subset", "fold", "train_type", "error", "n_test"],
    )
    assert len(frame) == k * len(values)
    return frame.set_index(["learner", "test_subset", "fold", "train_type"]).to_xarray()


def test_weighted_diff_by_hand_and_the_flag():
    # Fold 1 is tiny: 'other' is much worse there and slightly better in the two big folds.
    ds = _results(
        {"same": [10.0, 20.0, 30.0], "other": [50.0, 18.0, 29.0], "all": [11.0, 21.0, 31.0]},
        [10, 100, 400],
    )
    res = pvalues(ds, "error").set_index("compare")
    # Σ n·e / Σ n: same (100 + 2000 + 12000) / 510, other (500 + 1800 + 11600) / 510.
    assert res.loc["other", "weighted_diff"] == pytest.approx((13900 - 14100) / 510)
    assert res.loc["other", "mean_diff"] == pytest.approx((40 - 2 - 1) / 3)
    assert res.loc["all", "weighted_diff"] == pytest.approx(1.0)
    assert res["sign_agrees"].tolist() == [False, True]
    assert unequal_subsets(ds) == ["A"]
    text = results_text(ds)
    assert "weighted_diff" in text and "SIGN DIFFERS" in text
    assert "1 comparison is marked SIGN DIFFERS" in text
    assert "p tests mean_diff" in text
    # A missing fold drops out of both estimates (the pairs of the t-test).
    ds["error"].loc[{"fold": 3, "train_type": "other"}] = np.nan
    other = pvalues(ds, "error").set_index("compare").loc["other"]
    assert other["n"] == 2 and other["weighted_diff"] == pytest.approx((2300 - 2100) / 110)
    assert bool(other["sign_agrees"])


def test_equal_folds_show_no_flag_and_no_n_test_gives_na():
    ds = _results({"same": [10.0, 20.0], "other": [12.0, 21.0]}, [50, 60])
    assert unequal_subsets(ds) == []
    text = results_text(ds)
    assert "weighted_diff" not in text and "SIGN DIFFERS" not in text
    res = pvalues(ds.drop_vars("n_test"), "error")
    assert math.isnan(res.loc[0, "weighted_diff"]) and res.loc[0, "sign_agrees"] is pd.NA
    assert list(res.columns[-3:]) == ["weighted_diff", "sign_agrees", "p_welch"]


def test_the_warning_names_the_stratum_its_rows_and_the_largest_k():
    # Subset B has 2 groups of class q (7 rows): K = 3 leaves a fold without q in B.
    df = _frame((["A"] * 4 + ["B"] * 5, ["p", "q"] * 2 + ["p"] * 3 + ["q"] * 2, [5] * 7 + [3, 4]))
    with pytest.warns(UserWarning) as caught:
        _grouped_warned(df, 3)
    text = " ".join(str(w.message) for w in caught if "strata" in str(w.message))
    assert "('B', 'q'): 2 groups (7 rows)" in text
    assert (
        "n_folds=2 is the largest K that gives every fold a group of every (s, y) stratum" in text
    )


def _grouped_warned(df: pd.DataFrame, k: int):
    table = sd.load_table(df, label="y", subset="s", group="g", features=["x1"])
    return sd.assign_folds(table, k, 1)


def test_aztrees_folds_and_warning(aztrees):
    """The measured case of issue 23: region3 × polygon, K = 10."""
    table = sd.load_table(
        aztrees, label="y", subset="region3", group="polygon", features=AZTREES_FEATURES
    )
    with pytest.warns(UserWarning, match="largest K") as caught:
        rows = sd.assign_folds(table, 10, 1)
    message = next(str(w.message) for w in caught if "largest K" in str(w.message))
    assert "('S', 'Not tree'): 8 groups (2,640 rows)" in message
    assert "n_folds=8 is the largest K" in message
    sizes = rows.data.compute().groupby(["region3", FOLD_COLUMN]).size()
    ranges = sizes.groupby(level=0).agg(["min", "max"])
    assert ranges.loc["NW"].tolist() == [75, 301] and ranges.loc["S"].tolist() == [26, 1504]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in (8, 10):  # K = 8 gives every fold of S a Not tree polygon
            folded = sd.assign_folds(table, k, 1, group_assignment="mlr3resampling")
            s = folded.data.compute().query("region3 == 'S'")
            assert s.groupby(FOLD_COLUMN)["y"].nunique().eq(2).sum() == min(k, 8)


@pytest.mark.slow
def test_option_reaches_soak_and_evaluate_and_is_recorded():
    df = _frame((["A", "B"] * 6, ["p", "q"] * 6, [30, 2, 3, 40, 5, 6, 7, 8, 9, 10, 11, 12]))
    table = sd.load_table(df, label="y", subset="s", group="g", features=["x1"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for assignment in GROUP_ASSIGNMENTS:
            folded = sd.assign_folds(table, 2, 4, group_assignment=assignment)
            expected = folded.data.compute().groupby(["s", FOLD_COLUMN]).size()
            res = sd.soak(
                table, "featureless", n_folds=2, seed=4, group_assignment=assignment, **QUIET
            )
            assert res.attrs["group_assignment"] == assignment
            got = res["n_test"].sel(learner="featureless", train_type="same").to_series()
            assert got.astype(int).tolist() == expected.tolist()
            ev = sd.evaluate(
                table, "featureless", outer_folds=2, group_assignment=assignment, **QUIET
            )
            assert ev.attrs["group_assignment"] == assignment
    with pytest.raises(ValueError, match="group_assignment='R'"):
        sd.soak(table, "featureless", group_assignment="R", **QUIET)
    parser = cli.build_parser()
    args = parser.parse_args(
        ["run", "d.csv", "--label", "y", "--out", "o.zarr", "--group-assignment", "mlr3resampling"]
    )
    assert args.group_assignment == "mlr3resampling"


@pytest.mark.parametrize("prior_correction", [False, True])
def test_soak_and_evaluate_agree_on_the_same_folds(prior_correction):
    """The same learner on the same folds with the same options: the same numbers."""
    rng = np.random.default_rng(0)
    n = 240
    x = rng.normal(size=(n, 2))
    y = np.where(x[:, 0] + rng.normal(scale=1.0, size=n) > 0.9, "rare", "common")
    df = pd.DataFrame({"x0": x[:, 0], "x1": x[:, 1], "y": y, "f": np.arange(n) % 4 + 1})
    table = sd.load_table(df, label="y", fold="f", features=["x0", "x1"])
    kw = {"prior_correction": prior_correction, "seed": 3, **QUIET}
    soaked = sd.soak(table, "logistic", **kw)
    evaluated = sd.evaluate(table, "logistic", **kw)
    measures = ["error", "balanced_accuracy", "auc", "log_loss"]
    for m in measures:
        a = soaked[m].sel(learner="logistic", train_type="same").squeeze("test_subset").values
        b = evaluated[m].sel(learner="logistic", repeat=1).values
        np.testing.assert_allclose(a, b, rtol=1e-10, err_msg=m)
    # With the correction on, balanced accuracy is the headline (first) measure in both.
    first = "balanced_accuracy" if prior_correction else "error"
    assert list(soaked.attrs["measures"])[0] == first == list(evaluated.attrs["measures"])[0]
    said = "prior correction on" if prior_correction else "prior correction off"
    assert said in results_text(soaked, first)
    assert said in evaluation_text(evaluated)


@pytest.mark.slow
def test_reports_show_the_pooled_difference_and_the_prediction(tmp_path):
    from soak_dask.results.report import write_report

    rng = np.random.default_rng(1)
    n = 180
    df = pd.DataFrame(
        {
            "x1": rng.normal(size=n),
            "s": np.repeat(["A", "B"], n // 2),
            "y": np.tile(["p", "q"], n // 2),
        }
    )
    df["g"] = df["s"] + df["y"] + (np.arange(n) % 9).astype(str)
    table = sd.load_table(df, label="y", subset="s", group="g", features=["x1"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = sd.soak(table, "featureless", n_folds=3, measures=["error"], seed=2, **QUIET)
    # The fold sizes and errors of the hand-computed case, on subset A.
    cell = {"learner": "featureless", "test_subset": "A"}
    res["n_test"].loc[cell] = np.array([[10, 10, 10], [100, 100, 100], [400, 400, 400]])
    res["error"].loc[{**cell, "train_type": "same"}] = [10.0, 20.0, 30.0]
    res["error"].loc[{**cell, "train_type": "other"}] = [50.0, 18.0, 29.0]
    page = write_report(res, tmp_path / "rep").read_text(encoding="utf-8")
    assert "−0.39 (sign differs)" in page and "+12.33" in page
    assert "prior correction off: the class of largest probability" in page
    assert "Row-weighted difference" in page and "<b>Uneven folds</b>" in page


@pytest.mark.slow
def test_evaluation_report_says_the_correction_and_opens_balanced_accuracy(tmp_path):
    from soak_dask.results.report import write_report

    df = pd.DataFrame({"x1": np.arange(60.0) % 7, "y": np.where(np.arange(60) % 5, "a", "b")})
    ds = sd.evaluate(sd.load_table(df, label="y"), "featureless", outer_folds=3, **QUIET)
    assert list(ds.attrs["measures"])[0] == "balanced_accuracy"
    page = write_report(ds, tmp_path / "ev").read_text(encoding="utf-8")
    assert "prior correction on: the class of largest probability ÷ its share" in page
    assert "The first measure shown is <code>balanced_accuracy</code>" in page
    assert 'id="balanced_accuracy" open' in page and 'id="error" open' not in page


def test_info_predicts_the_folds_of_either_assignment(tmp_path, capsys):
    from soak_dask.app.info import describe_table
    from soak_dask.tables.checks import unequal_folds_warning

    df = _frame((["A"] * 7, ["p"] * 4 + ["q"] * 3, [200, 3, 3, 3, 100, 100, 2]))
    table = sd.load_table(df, label="y", subset="s", group="g", features=["x1"])
    said = {}
    for assignment in GROUP_ASSIGNMENTS:
        folded = sd.assign_folds(table, 3, 1, group_assignment=assignment)
        blocks = folded.data.compute().groupby(["s", FOLD_COLUMN]).size()
        info = describe_table(table, n_folds=3, group_assignment=assignment)
        said[assignment] = unequal_folds_warning(blocks)
        uneven = [w for w in info.warnings if w.startswith("test folds differ")]
        assert uneven == ([] if said[assignment] is None else [said[assignment]])
    assert said["mlr3resampling"] is not None  # dealt by count, 200 rows lands beside 2 or 3
    path = tmp_path / "t.csv"
    df.to_csv(path, index=False)
    argv = ["info", str(path), "--label", "y", "--subset", "s", "--group", "g", "--n-folds", "3"]
    assert cli.main([*argv, "--group-assignment", "mlr3resampling", "--features", "x1"]) == 0
    assert said["mlr3resampling"] in " ".join(capsys.readouterr().out.split())
