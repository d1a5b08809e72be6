"""Properties of the SOAK splits over random small tables (hypothesis).

For the in-memory splitter and for the engine's own row selection alike: the test blocks of a
subset over the folds partition its rows, train and test never meet, same ⊂ all, same ∩ other
= ∅, same ∪ other = all, and a group is never on both sides. The distinct-fit plan scores
exactly like the naive loop over all 3·S·K splits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from sklearn.model_selection import cross_validate
from sklearn.tree import DecisionTreeClassifier

import soak_dask as sd

from .conftest import n_examples, plan_rows

SUBSETS = ("A", "B", "C", "D")
CLASSES = ("p", "q", "r")
SETTINGS = settings(
    max_examples=n_examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

#: (test_subset, fold, train_type) -> (train row ids, test row ids)
Splits = dict[tuple[str, int, str], tuple[frozenset, frozenset]]


@dataclass(frozen=True)
class Case:
    """A random table and the SOAK settings to split it with."""

    df: pd.DataFrame
    n_folds: int
    train_types: tuple[str, ...]
    grouped: bool
    seed: int

    def cv(self) -> sd.SameOtherAllCV:
        return sd.SameOtherAllCV(
            self.df["s"], self.n_folds, train_types=self.train_types, random_state=self.seed
        )

    def folds(self) -> np.ndarray:
        groups = self.df["g"] if self.grouped else None
        return self.cv().folds(self.df, self.df["y"], groups)


@st.composite
def cases(draw: st.DrawFn, min_rows: int = 4, max_rows: int = 60) -> Case:
    """1–4 subsets, 2–3 classes, K 2–5, optional groups nested in subset × label."""
    n = draw(st.integers(min_rows, max_rows))
    column = st.lists  # one value per row
    s = draw(column(st.sampled_from(SUBSETS[: draw(st.integers(1, 4))]), min_size=n, max_size=n))
    y = draw(column(st.sampled_from(CLASSES[: draw(st.integers(2, 3))]), min_size=n, max_size=n))
    g = draw(column(st.integers(0, 5), min_size=n, max_size=n))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    df = pd.DataFrame(
        {
            "row_id": np.arange(n, dtype=np.float64),
            "x": rng.normal(size=n),
            "s": s,
            "y": y,
            "g": [f"{a}{b}{c}" for a, b, c in zip(s, y, g, strict=True)],
        }
    )
    types = draw(st.lists(st.sampled_from(sd.TRAIN_TYPES), min_size=1, max_size=3, unique=True))
    seed = draw(st.integers(0, 2**31))
    return Case(df, draw(st.integers(2, 5)), tuple(types), draw(st.booleans()), seed)


def splitter_splits(case: Case) -> Splits:
    """Train/test row ids of every split from ``SameOtherAllCV.split``."""
    cv = case.cv()
    groups = case.df["g"] if case.grouped else None
    pairs = cv.split(case.df, case.df["y"], groups)
    info = cv.split_info()
    return {
        (r.test_subset, r.fold, r.train_type): (frozenset(train), frozenset(test))
        for r, (train, test) in zip(info.itertuples(), pairs, strict=True)
    }


def engine_splits(case: Case) -> Splits:
    """Train/test row ids of every split as the engine selects them on a lazy table."""
    df = case.df.assign(fold=case.folds())
    group = "g" if case.grouped else None
    table = sd.load_table(df, "y", "s", group, "fold", features=["row_id"])
    design = sd.SameOtherAll(case.n_folds, case.train_types)
    plan = design.plan_for(sorted(df["s"].unique()), subset="s", fold="fold")
    rows = plan_rows(table, plan)
    return {
        (r.test_subset, r.fold, r.train_type): (
            _ids(rows[r.fit_id][0]),
            _ids(rows[r.fit_id][1][r.block]),
        )
        for r in plan.splits.itertuples()
    }


def _ids(frame: pd.DataFrame) -> frozenset:
    return frozenset(frame["row_id"].astype(int))


def check_invariants(case: Case, splits: Splits) -> None:
    """Assert the SOAK properties of ``splits`` on ``case``'s table."""
    df = case.df.assign(fold=case.folds())
    subsets = sorted(df["s"].unique())
    types = ("same",) if len(subsets) == 1 else case.train_types
    folds = range(1, case.n_folds + 1)
    assert set(splits) == {(s, k, t) for s in subsets for k in folds for t in types}
    rows_of = df.groupby("s").groups
    for s in subsets:
        blocks = [splits[(s, k, types[0])][1] for k in folds]
        assert sum(map(len, blocks)) == len(rows_of[s]), "test blocks overlap"
        assert frozenset().union(*blocks) == frozenset(rows_of[s]), "test blocks miss rows"
        for k in folds:
            train = {t: splits[(s, k, t)][0] for t in types}
            test = splits[(s, k, types[0])][1]
            assert all(splits[(s, k, t)][1] == test for t in types), "test block varies"
            assert test == frozenset(df.index[(df["s"] == s) & (df["fold"] == k)])
            for t, rows in train.items():
                assert not rows & test, f"{t} train set meets the test block"
                if case.grouped:
                    shared = set(df.loc[list(rows), "g"]) & set(df.loc[list(test), "g"])
                    assert not shared, f"groups {shared} split between {t} train and test"
                assert rows == _definition(df, s, k, t), f"{t} train set for ({s}, {k})"
            if {"same", "all"} <= train.keys():
                assert train["same"] <= train["all"]
            if {"same", "other"} <= train.keys():
                assert not train["same"] & train["other"]
            if {"same", "other", "all"} <= train.keys():
                assert train["same"] | train["other"] == train["all"]


def _definition(df: pd.DataFrame, s: str, k: int, train_type: str) -> frozenset:
    out = df["fold"] != k
    if train_type == "same":
        out &= df["s"] == s
    elif train_type == "other":
        out &= df["s"] != s
    return frozenset(df.index[out])


@SETTINGS
@given(cases())
def test_splitter_invariants(case):
    check_invariants(case, splitter_splits(case))


# The properties are checked on 40 tables in memory (above); the engine's selection, through
# Dask, on fewer: it must equal the splitter's.
@settings(SETTINGS, max_examples=n_examples(12))
@given(cases())
def test_engine_row_selection_invariants(case):
    splits = engine_splits(case)
    check_invariants(case, splits)
    assert splits == splitter_splits(case)


@pytest.mark.slow
@settings(max_examples=n_examples(4), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(min_rows=40, max_rows=90))
def test_distinct_fit_plan_scores_like_the_naive_loop(case):
    df = case.df.assign(fold=case.folds())
    blocks = df.groupby(["s", "fold"]).size()
    assume(len(blocks) == df["s"].nunique() * case.n_folds)  # soak needs every test block
    assume(df["y"].nunique() > 1)  # a one-class table is refused (error 0 would say nothing)
    learner = DecisionTreeClassifier(max_depth=3, random_state=0)
    group = "g" if case.grouped else None
    table = sd.load_table(df, "y", "s", group, "fold", features=["row_id", "x"])
    res = sd.soak(
        table,
        {"tree": learner},
        train_types=case.train_types,
        measures=["accuracy"],
        options=sd.RunOptions(progress=False),
    )
    cv = case.cv()
    X = df[["row_id", "x"]].to_numpy()
    groups = df["g"] if case.grouped else None
    naive = cross_validate(learner, X, df["y"], groups=groups, cv=cv, scoring="accuracy")
    info = cv.split_info()
    assert len(naive["test_score"]) == len(info) == res["accuracy"].size
    for r, expected in zip(info.itertuples(), naive["test_score"], strict=True):
        got = res["accuracy"].sel(
            learner="tree", test_subset=r.test_subset, fold=r.fold, train_type=r.train_type
        )
        assert float(got) == pytest.approx(expected, abs=1e-12)
    assert res.attrs["n_distinct_train_sets"] == info["fit_id"].nunique()
