"""Bad input gets a clear error naming the column, value or option -- never a crash from deep
inside Dask, pandas or scikit-learn -- or, where a result still means something, NaN cells and
one warning listing them. The user's source files are never written or moved.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LinearRegression, LogisticRegression, SGDClassifier

import soak_dask as sd
from soak_dask.app.info import describe_table
from soak_dask.learn.builtin import resolve_learners
from soak_dask.tables.generated import write_pixel_parquet

from .conftest import toy_table

PACKAGE = Path(sd.__file__).parent
FAST = {
    "learners": {"featureless": "featureless"},
    "measures": ["error"],
    "options": sd.RunOptions(progress=False),
}


@contextmanager
def clear_error(kind: type[Exception], *words: str) -> Iterator[pytest.ExceptionInfo]:
    """Expect ``kind`` raised by soak_dask itself, its message naming every one of ``words``."""
    with pytest.raises(kind) as info:
        yield info
    message = str(info.value)
    missing = [w for w in words if w not in message]
    assert not missing, f"message lacks {missing}: {message!r}"
    raised_in = Path(str(info.traceback[-1].path)).resolve()
    assert raised_in.is_relative_to(PACKAGE), f"raised in {raised_in}, not by soak_dask: {message}"


def soak_warnings(table: sd.Table, **kwargs) -> tuple[object, list[str]]:
    """Run SOAK recording every warning; return the result and the warning messages."""
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        options, rest = sd.RunOptions.among({"progress": False, **kwargs})
        res = sd.soak(table, **{**FAST, **rest, "options": options})
    return res, [str(w.message) for w in record]


def grouped(n: int = 240, n_groups: int = 4, seed: int = 0) -> pd.DataFrame:
    """Two subsets, groups nested in subset × label."""
    return toy_table(n=n, n_subsets=2, seed=seed, n_groups=n_groups)


# --- columns and roles ----------------------------------------------------------------------


@pytest.mark.parametrize("role", ["label", "subset", "group", "fold"])
def test_missing_role_column(role):
    roles = {"label": "y", role: "no_such_column"}
    with clear_error(ValueError, role, "'no_such_column'", "available columns"):
        sd.load_table(toy_table(n=30), **roles)


def test_feature_column_missing_or_a_role():
    with clear_error(ValueError, "feature", "nope"):
        sd.load_table(toy_table(n=30), label="y", features=["x0", "nope"])
    with clear_error(ValueError, "subset", "cannot also be features"):
        sd.load_table(toy_table(n=30), label="y", subset="subset", features=["x0", "subset"])


@pytest.mark.parametrize(
    ("column", "group"),
    [("y", None), ("subset", None), ("y", "group"), ("subset", "group"), ("group", "group")],
)
def test_missing_values_in_role_columns(column, group):
    df = grouped()
    df[column] = df[column].astype(object)
    df.loc[[3, 10], column] = None
    table = sd.load_table(df, label="y", subset="subset", group=group)
    with clear_error(ValueError, repr(column), "2 missing values"):
        sd.soak(table, n_folds=3, **FAST)


def test_missing_values_in_regression_label():
    df = toy_table(n=90).assign(target=np.linspace(0, 1, 90))
    df.loc[5, "target"] = np.nan
    with clear_error(ValueError, "label column 'target'", "1 missing values", "drop those rows"):
        sd.load_table(df, label="target", subset="subset")  # before the task is inferred
    table = sd.load_table(df, label="target", subset="subset", task="regression")
    with clear_error(ValueError, "'target'", "1 missing values"):
        sd.soak(
            table,
            n_folds=3,
            learners="featureless",
            measures=["mse"],
            options=sd.RunOptions(progress=False),
        )


def test_duplicate_column_names():
    df = toy_table(n=30)
    df.columns = ["x0", "x0", "x2", "subset", "y"]
    with clear_error(ValueError, "duplicate", "x0"):
        sd.load_table(df, label="y", subset="subset")


def test_non_numeric_features_are_named():
    df = toy_table(n=30).assign(name="pixel", code=["1.5"] * 30)
    with clear_error(ValueError, "not numeric", "name", "code"):
        sd.load_table(df, label="y", subset="subset", features=["x0", "name", "code"])


def test_infinite_feature_values_are_named():
    df = toy_table(n=90)
    df.loc[[4, 7], "x1"] = np.inf
    df.loc[9, "x2"] = -np.inf
    table = sd.load_table(df, label="y", subset="subset")
    with clear_error(ValueError, "infinite", "x1", "x2"):
        sd.soak(
            table, {"lr": LogisticRegression()}, n_folds=3, options=sd.RunOptions(progress=False)
        )


def test_soak_needs_a_table():
    with clear_error(TypeError, "load_table"):
        sd.soak(toy_table(n=30), n_folds=3, **FAST)


@pytest.mark.parametrize("features", [[], (), "x0"])
def test_features_empty_or_one_string(features):
    with clear_error(ValueError, f"features={features!r}", "leave features out"):
        sd.load_table(toy_table(n=30), label="y", subset="subset", features=features)


def one_and_text_one(df: pd.DataFrame, column: str) -> pd.DataFrame:
    """``df`` with ``column``'s first value replaced by 1 (int) and its second by '1' (str)."""
    first, second = df[column].unique()[:2]
    values = df[column].astype(object)
    values[df[column] == first] = 1
    values[df[column] == second] = "1"
    return df.assign(**{column: values})


@pytest.mark.parametrize("column", ["subset", "y", "group"])
def test_values_one_and_text_one_in_a_pandas_role_column(column):
    df = one_and_text_one(grouped(), column)
    role = {"subset": "subset", "y": "label", "group": "group"}[column]
    with clear_error(ValueError, f"{role} column {column!r}", "1 (int)", "'1' (str)", "one type"):
        sd.load_table(df, label="y", subset="subset", group="group")


@pytest.mark.parametrize(
    ("column", "fold"), [("subset", False), ("y", False), ("group", False), ("subset", True)]
)
def test_values_one_and_text_one_counted_on_the_cluster(column, fold):
    """An object column of a Dask frame is seen first where its values are counted."""
    df = one_and_text_one(grouped(), column).assign(fold=np.resize([1, 2, 3], 240))
    with dask.config.set({"dataframe.convert-string": False}):
        ddf = dd.from_pandas(df, npartitions=3)
    table = sd.load_table(
        ddf,
        label="y",
        subset="subset",
        group=None if fold else "group",
        fold="fold" if fold else None,
    )
    with clear_error(ValueError, f"column {column!r}", "1 (int)", "'1' (str)", "one type"):
        sd.soak(table, n_folds=None if fold else 3, **FAST)
    with clear_error(ValueError, f"column {column!r}", "1 (int)", "'1' (str)"):
        describe_table(table)
    if column == "subset":
        with clear_error(ValueError, "'subset'", "1 (int)", "'1' (str)"):
            sd.SameOtherAllCV(df["subset"].tolist(), n_splits=3)


@pytest.mark.parametrize("seed", [1.5, 1.0, np.float64(2.0), "1", -1, 2**32, 2**70, None, True])
def test_seed_not_an_integer_from_0_to_2_to_the_32(seed):
    table = sd.load_table(toy_table(n=60), label="y", subset="subset")
    words = (f"seed={seed!r}", "integer from 0 to 2**32 - 1")
    with clear_error(ValueError, *words):
        sd.soak(table, n_folds=3, seed=seed, **FAST)
    with clear_error(ValueError, *words):
        sd.assign_folds(table, 3, seed)
    with clear_error(ValueError, *words):
        resolve_learners("random_forest", "classification", seed)
    with clear_error(ValueError, f"random_state={seed!r}", "integer from 0 to 2**32 - 1"):
        sd.SameOtherAllCV(np.zeros(10), n_splits=3, random_state=seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [np.int64(7), np.uint32(2**32 - 1)])
def test_numpy_integer_seeds_equal_python_ints(seed):
    table = sd.load_table(toy_table(n=90), label="y", subset="subset")
    as_int = sd.soak(
        table, "decision_tree", n_folds=3, seed=int(seed), options=sd.RunOptions(progress=False)
    )
    as_numpy = sd.soak(
        table, "decision_tree", n_folds=3, seed=seed, options=sd.RunOptions(progress=False)
    )
    assert as_numpy["error"].notnull().all()
    np.testing.assert_array_equal(as_numpy["error"], as_int["error"])
    assert as_numpy.attrs["seed"] == as_int.attrs["seed"]


# --- folds and groups -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "n_folds",
    [
        1,
        0,
        -2,
        2.5,
        "3",
    ],
)
def test_n_folds_below_two_or_not_an_integer(n_folds):
    table = sd.load_table(toy_table(n=60), label="y", subset="subset")
    with clear_error(ValueError, f"n_folds={n_folds!r}", "at least 2"):
        sd.soak(table, n_folds=n_folds, **FAST)
    with clear_error(ValueError, f"n_splits={n_folds!r}", "at least 2"):
        sd.SameOtherAllCV(np.zeros(10), n_splits=n_folds)


def test_small_stratum_warns_once_and_still_scores():
    df = toy_table(n=120, n_subsets=2, seed=3)
    rare = df.index[(df["subset"] == "s0") & (df["y"] == "yes")][2:]
    df = df.drop(index=rare)  # s0 keeps two "yes" rows: fewer than the 3 folds
    table = sd.load_table(df, label="y", subset="subset")
    res, messages = soak_warnings(table, n_folds=3)
    assert len(messages) == 1, messages
    assert "n_folds=3" in messages[0] and "s0" in messages[0] and "yes" in messages[0]
    assert res["error"].notnull().all()


def test_more_folds_than_groups_in_a_subset():
    df = grouped(n_groups=2)  # at most 2 labels × 2 = 4 groups per subset
    table = sd.load_table(df, label="y", subset="subset", group="group")
    with clear_error(ValueError, "'group'", "n_folds=5", "s0"):
        sd.soak(table, n_folds=5, **FAST)


@pytest.mark.parametrize("spans", ["subset", "y"])
def test_group_spanning_two_subsets_or_labels(spans):
    df = grouped()
    keep = "y" if spans == "subset" else "subset"
    other = df.index[(df[spans] != df.loc[0, spans]) & (df[keep] == df.loc[0, keep])][0]
    df.loc[other, "group"] = df.loc[0, "group"]
    table = sd.load_table(df, label="y", subset="subset", group="group")
    with clear_error(ValueError, "'group'", repr(spans), repr(df.loc[0, "group"])):
        sd.soak(table, n_folds=3, **FAST)


@pytest.mark.parametrize(
    ("values", "words"),
    [
        ([0, 1, 2], ["'0'", "1..K"]),
        ([1, 2, 7], ["no rows in folds", "[3, 4, 5, 6]"]),
        ([1.0, 2.5, 3.0], ["'2.5'", "integers"]),
        ([-1, 1, 2], ["'-1'", "1..K"]),
    ],
)
def test_fold_column_values_outside_one_to_k(values, words):
    df = toy_table(n=90).assign(fold=np.resize(values, 90))
    table = sd.load_table(df, label="y", subset="subset", fold="fold")
    with clear_error(ValueError, "'fold'", *words):
        sd.soak(table, **FAST)


@pytest.mark.parametrize(
    ("values", "dtype"), [(["1", "2", "3"], "str"), ([1, 2, 3], object), ([True, False], bool)]
)
def test_fold_column_not_numeric(values, dtype):
    df = toy_table(n=90).assign(fold=pd.Series(np.resize(values, 90), dtype=dtype))
    with clear_error(ValueError, "fold column 'fold'", "dtype", "astype(int)"):
        sd.load_table(df, label="y", subset="subset", fold="fold")


def test_n_folds_refused_with_a_fold_column_and_beyond_127():
    df = toy_table(n=90).assign(fold=np.resize([1, 2, 3], 90))
    table = sd.load_table(df, label="y", subset="subset", fold="fold")
    with clear_error(ValueError, "n_folds=0", "at least 2"):
        sd.soak(table, n_folds=0, **FAST)
    with clear_error(ValueError, "n_folds=0", "at least 2"):
        describe_table(table, n_folds=0)
    with clear_error(ValueError, "n_splits=128", "127"):
        sd.SameOtherAllCV(np.zeros(300), n_splits=128)


def test_fold_column_with_missing_values_or_other_n_folds():
    df = toy_table(n=90).assign(fold=np.resize([1.0, 2.0, 3.0], 90))
    table = sd.load_table(df, label="y", subset="subset", fold="fold")
    with clear_error(ValueError, "n_folds=4", "fold column 'fold' gives the folds"):
        sd.soak(table, n_folds=4, **FAST)
    df.loc[4, "fold"] = np.nan
    table = sd.load_table(df, label="y", subset="subset", fold="fold")
    with clear_error(ValueError, "'fold'", "1 missing values"):
        sd.soak(table, **FAST)


def test_fold_column_varying_within_a_group():
    df = grouped()
    codes = df["group"].astype("category").cat.codes
    df["fold"] = codes % 3 + 1
    split_group = df.loc[0, "group"]
    df.loc[df.index[df["group"] == split_group][0], "fold"] = df.loc[0, "fold"] % 3 + 1
    table = sd.load_table(df, label="y", subset="subset", group="group", fold="fold")
    with clear_error(ValueError, "'fold'", "'group'", repr(split_group)):
        sd.soak(table, **FAST)


def test_empty_test_block_from_a_fold_column():
    df = toy_table(n=120, n_subsets=2).assign(fold=np.resize([1, 2, 3], 120))
    df.loc[(df["subset"] == "s1") & (df["fold"] == 2), "fold"] = 3
    table = sd.load_table(df, label="y", subset="subset", fold="fold")
    with clear_error(ValueError, "empty", "('s1', 2)"):
        sd.soak(table, **FAST)


def test_subset_smaller_than_n_folds_is_an_empty_test_block():
    df = pd.concat([toy_table(n=60, n_subsets=1), toy_table(n=2, n_subsets=1).assign(subset="t")])
    table = sd.load_table(df, label="y", subset="subset")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the small-stratum warning comes first
        with clear_error(ValueError, "empty", "'t'", "n_folds=3"):
            sd.soak(table, n_folds=3, **FAST)


# --- fits -----------------------------------------------------------------------------------


def test_train_set_with_one_class_scores_nan_with_one_warning():
    df = toy_table(n=240, n_subsets=3, seed=1)
    df.loc[df["subset"] == "s2", "y"] = "no"
    table = sd.load_table(df, label="y", subset="subset")
    res, messages = soak_warnings(
        table, learners={"lr": LogisticRegression(), "base": "featureless"}, n_folds=3
    )
    assert len(messages) == 2, messages  # the data's warning (as soak info gives), the fits'
    assert messages[0].startswith("subsets with one class of 'y': s2 (only 'no')")
    assert messages[1].startswith("3 fits failed") and "lr fit" in messages[1]
    assert "class" in messages[1]
    failed = res["error"].sel(learner="lr", test_subset="s2", train_type="same")
    assert failed.isnull().all()
    assert int(res["error"].isnull().sum()) == 3
    assert res["error"].sel(learner="base").notnull().all()


@pytest.mark.parametrize("incremental", [False, True])
def test_one_missing_feature_value_scores_nan_where_that_row_is_used(incremental):
    """Fits and predictions that meet the NaN score NaN with the warning the run gave first;
    a learner that handles NaN scores everywhere."""
    df = toy_table(n=150, n_subsets=3, seed=2).assign(fold=np.resize([1, 2, 3], 150))
    df.loc[5, "x1"] = np.nan
    row_subset, row_fold = df.loc[5, "subset"], df.loc[5, "fold"]
    table = sd.load_table(df, label="y", subset="subset", fold="fold")
    linear = SGDClassifier(random_state=0) if incremental else LogisticRegression()
    learners = {"lr": linear, "hgb": HistGradientBoostingClassifier(max_iter=5)}
    res, messages = soak_warnings(table, learners=learners, incremental=incremental)
    lr = res["error"].sel(learner="lr")
    for t in lr["test_subset"].values:
        for k in lr["fold"].values:
            for tt in lr["train_type"].values:
                trained_on = {"same": t == row_subset, "other": t != row_subset, "all": True}[tt]
                meets = (t == row_subset and k == row_fold) or (k != row_fold and trained_on)
                cell = lr.sel(test_subset=t, fold=k, train_type=tt)
                assert bool(cell.isnull()) == meets, (t, k, tt)
    assert res["error"].sel(learner="hgb").notnull().all()
    assert len(messages) == 2, messages
    assert "'x1'" in messages[0] and "score NaN" in messages[0]
    assert "fits failed and score NaN" in messages[1] and "lr fit" in messages[1]
    assert f"predicting test subset {row_subset!r}" in messages[1] and "NaN" in messages[1]


def test_unknown_learner_measure_and_train_type():
    table = sd.load_table(toy_table(n=60), label="y", subset="subset")
    with clear_error(ValueError, "'svm_magic'", "featureless"):
        sd.soak(table, {"m": "svm_magic"}, n_folds=3, options=sd.RunOptions(progress=False))
    with clear_error(ValueError, "'linear'", "classification"):
        sd.soak(table, "linear", n_folds=3, options=sd.RunOptions(progress=False))
    with clear_error(ValueError, "'ols'", "regressor"):
        sd.soak(
            table, {"ols": LinearRegression()}, n_folds=3, options=sd.RunOptions(progress=False)
        )
    with clear_error(TypeError, "'bad'", "fit and predict"):
        sd.soak(table, {"bad": object()}, n_folds=3, options=sd.RunOptions(progress=False))
    with clear_error(ValueError, "r3", "error"):
        sd.soak(
            table, "featureless", n_folds=3, measures=["r3"], options=sd.RunOptions(progress=False)
        )
    with clear_error(ValueError, "'some'", "same"):
        sd.soak(
            table,
            "featureless",
            n_folds=3,
            train_types="some,all",
            options=sd.RunOptions(progress=False),
        )


def test_results_store_of_another_configuration(tmp_path):
    table = sd.load_table(toy_table(n=90), label="y", subset="subset")
    store = tmp_path / "run.zarr"
    stored = {**FAST, "options": sd.RunOptions(progress=False, checkpoint=store)}
    sd.soak(table, n_folds=3, seed=1, **stored)
    with clear_error(ValueError, str(store), "seed"):
        sd.soak(table, n_folds=3, seed=2, **stored)


# --- files ----------------------------------------------------------------------------------


def test_empty_file_glob_matching_nothing_and_no_parquet(tmp_path):
    empty = tmp_path / "empty.parquet"
    empty.touch()
    with clear_error(ValueError, str(empty), "empty"):
        sd.load_table(empty, label="y")
    pattern = str(tmp_path / "nothing-*.parquet")
    with clear_error(FileNotFoundError, pattern, "matches no file"):
        sd.load_table(pattern, label="y")
    with clear_error(FileNotFoundError, str(tmp_path / "absent")):
        sd.load_table(tmp_path / "absent", label="y")
    notes = tmp_path / "notes.parquet"
    notes.write_text("not parquet at all")
    with clear_error(ValueError, str(notes), "cannot read Parquet"):
        sd.load_table(notes, label="y")


@pytest.mark.parametrize("change", ["type", "missing"])
def test_parquet_files_with_mismatched_schemas(tmp_path, change):
    df = toy_table(n=60)
    pq.write_table(pa.Table.from_pandas(df.iloc[:30], preserve_index=False), tmp_path / "a.parquet")
    second = df.iloc[30:]
    second = second.astype({"x1": str}) if change == "type" else second.drop(columns="x1")
    pq.write_table(pa.Table.from_pandas(second, preserve_index=False), tmp_path / "b.parquet")
    with clear_error(ValueError, "different schemas", "x1", "a.parquet", "b.parquet"):
        sd.load_table(tmp_path, label="y", subset="subset")


def _fingerprint(folder: Path) -> dict[str, tuple[str, int, int]]:
    return {
        str(p.relative_to(folder)): (
            hashlib.sha256(p.read_bytes()).hexdigest(),
            p.stat().st_mtime_ns,
            p.stat().st_size,
        )
        for p in sorted(folder.rglob("*"))
    }


@pytest.mark.slow
@pytest.mark.parametrize("persist", [True, False])
def test_source_files_are_never_written_or_moved(tmp_path, persist):
    pixels = write_pixel_parquet(tmp_path / "pixels", n_files=3, n_pixels=1_500, n_bands=3)
    before = _fingerprint(pixels)
    table = sd.load_table(
        pixels, label="label", subset="region", group="polygon", exclude=["x", "y"]
    )
    options = sd.RunOptions(progress=False, persist=persist)
    res = sd.soak(table, n_folds=3, **{**FAST, "learners": None, "options": options})
    assert int(res["n_test"].sel(learner="featureless", train_type="same").sum()) == 1_500
    sd.save_results(res, tmp_path / "results.zarr")
    assert _fingerprint(pixels) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pixels", "results.zarr"]


# --- issue 11: column names, roles and the label ---------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"exclude": ["X0"]}, ["exclude", "'X0'", "did you mean 'x0'"]),
        ({"exclude": ["x0", "subst"]}, ["exclude", "'subst'", "'subset'"]),
        ({"features": ["x0", "x_1"]}, ["features", "'x_1'", "'x1'"]),
        ({"features": ["x0", "zzz"]}, ["features", "'zzz'", "available columns"]),
    ],
)
def test_unknown_column_in_exclude_or_features_names_it_and_close_matches(kwargs, words):
    with clear_error(ValueError, *words):
        sd.load_table(toy_table(n=30), label="y", subset="subset", **kwargs)


def test_a_column_in_both_features_and_exclude():
    with clear_error(ValueError, "['x1']", "both in features and in exclude"):
        sd.load_table(toy_table(n=30), label="y", features=["x0", "x1"], exclude=["x1"])


@pytest.mark.parametrize(
    ("roles", "first", "second", "column"),
    [
        ({"label": "y", "subset": "y"}, "label", "subset", "y"),
        ({"label": "y", "subset": "subset", "group": "subset"}, "subset", "group", "subset"),
        ({"label": "y", "group": "group", "fold": "group"}, "group", "fold", "group"),
        ({"label": "fold", "fold": "fold"}, "label", "fold", "fold"),
    ],
)
def test_one_role_per_column(roles, first, second, column):
    df = grouped().assign(fold=np.resize([1, 2, 3], 240))
    with clear_error(ValueError, f"column {column!r}", f"both the {first} and the {second}"):
        sd.load_table(df, **roles)


@pytest.mark.parametrize("source", ["pandas", "parquet"])
def test_zero_one_label_with_a_missing_value_is_reported_as_missing(tmp_path, source):
    """Issue 11: the label was taken for a quantity, and a classifier refused it."""
    df = toy_table(n=90).assign(tree=lambda d: (d["y"] == "yes").astype(float)).drop(columns="y")
    df.loc[7, "tree"] = np.nan
    if source == "parquet":
        df.to_parquet(tmp_path / "t.parquet")
    data = df if source == "pandas" else tmp_path / "t.parquet"
    with clear_error(ValueError, "label column 'tree'", "1 missing values", "drop those rows"):
        sd.load_table(data, label="tree", subset="subset")
    table = sd.load_table(df.dropna(subset=["tree"]), label="tree", subset="subset")
    assert table.task == "classification"
    res = sd.soak(table, n_folds=3, **{**FAST, "learners": {"lr": LogisticRegression()}})
    assert res["error"].notnull().all() and res.attrs["classes"] == ["0.0", "1.0"]
