"""Tests of ``describe_table`` and ``soak info``: every number is checked against pandas."""

from __future__ import annotations

import warnings

import dask
import numpy as np
import pandas as pd
import pytest

import soak_dask as sd
import soak_dask.tables.parquet
from soak_dask import load_table
from soak_dask.app import cli
from soak_dask.app.info import TableInfo, describe_table
from soak_dask.tables.generated import make_pixel_table, write_pixel_parquet

from ..conftest import shared_file

N_FILES = 4


def assert_same_frame(got: pd.DataFrame, expected: pd.DataFrame) -> None:
    """Equal values and labels; string dtypes and int widths may differ."""
    pd.testing.assert_frame_equal(
        got,
        expected,
        check_names=False,
        check_dtype=False,
        check_index_type=False,
        check_column_type=False,
    )


@pytest.fixture(scope="module")
def pixels(tmp_path_factory):
    return write_pixel_parquet(
        tmp_path_factory.mktemp("info") / "pixels", n_files=N_FILES, n_pixels=3000, seed=2
    )


def test_counts_equal_pandas_in_one_pass(pixels, monkeypatch):
    reads = []

    def counting_read(piece, *args, **kwargs):
        reads.append(piece)
        return read_piece(piece, *args, **kwargs)

    read_piece = soak_dask.tables.parquet.read_piece
    monkeypatch.setattr(soak_dask.tables.parquet, "read_piece", counting_read)
    table = load_table(pixels, label="label", subset="region", group="polygon", exclude=["x", "y"])
    reads.clear()  # load_table's own pass (rows repeated across files) is not describe_table's
    computes = []
    with dask.config.set(scheduler="threads"), dask.callbacks.Callback(start=computes.append):
        info = describe_table(table, n_folds=5)
    assert len(computes) == 1 and len(reads) == table.data.npartitions == N_FILES  # one pass

    df = pd.read_parquet(pixels)
    expected = pd.crosstab(df["region"], df["label"])
    assert_same_frame(info.rows, expected)
    groups = df.groupby("region")["polygon"].nunique()
    pd.testing.assert_series_equal(
        info.groups, groups, check_names=False, check_dtype=False, check_index_type=False
    )
    assert info.n_rows == len(df) and info.n_folds == 5 and info.task == "classification"
    assert info.features == tuple(f"B{i:02d}" for i in range(1, 13))
    assert info.missing == {} and len(info.warnings) == 1  # as a run warns: groups per stratum
    strata = df.groupby(["region", "label"])["polygon"].nunique()
    small = strata[strata < 5]
    head = f"{len(small)} strata of (region, label) have fewer groups of 'polygon' than "
    assert head in info.warnings[0]
    assert all(f"{key}: {n}" in info.warnings[0] for key, n in small.items())


def test_cli_info_prints_the_pandas_counts(pixels, capsys):
    argv = ["info", pixels, "--label", "label", "--subset", "region", "--group", "polygon"]
    assert cli.main([str(a) for a in [*argv, "--exclude", "x,y", "--folds", "5"]]) == 0
    out = capsys.readouterr().out
    lines = {" ".join(line.split()) for line in out.splitlines()}
    df = pd.read_parquet(pixels)
    counts = pd.crosstab(df["region"], df["label"])
    for region, row in counts.iterrows():
        assert f"{region} {row['other']} {row['tree']} {row.sum()}" in lines
        assert f"{region} {df.loc[df['region'] == region, 'polygon'].nunique()}" in lines
    assert f"rows: {len(df):,}" in lines and "folds: 5 (assigned by SOAK)" in lines
    assert "warnings:" in lines and "left out (coordinates)" not in out
    assert "have fewer groups of 'polygon' than n_folds=5" in out


@pytest.mark.parametrize("folds", ["0", "1", "128"])
def test_cli_info_refuses_fewer_than_two_or_more_than_127_folds(pixels, capsys, folds):
    argv = ["info", str(pixels), "--label", "label", "--subset", "region", "--folds", folds]
    argv += ["--exclude", "x,y"]
    assert cli.main(argv) == cli.USAGE_ERROR
    err = capsys.readouterr().err
    assert err.startswith(f"soak: error: --folds={folds}") and len(err.splitlines()) == 1


def awkward_frame() -> pd.DataFrame:
    """Subset A is fine; B has one class; C has 3 rows of class b and 2 groups; and NaNs."""
    rng = np.random.default_rng(0)
    subset = ["A"] * 40 + ["B"] * 20 + ["C"] * 13
    label = ["a", "b"] * 20 + ["a"] * 20 + ["a"] * 10 + ["b"] * 3
    group = [f"A{i % 8}{y}" for i, y in enumerate(label[:40])] + ["B0"] * 10 + ["B1"] * 10
    group += ["C0"] * 10 + ["C1"] * 3
    df = pd.DataFrame(
        {"b1": rng.normal(size=73), "y": label, "s": subset, "g": group}, dtype=object
    ).astype({"b1": float})
    df.loc[0, "y"] = None
    df.loc[1, "g"] = None
    df.loc[[2, 3], "b1"] = np.nan
    df.loc[45, "g"] = "C0"  # a group in two subsets
    return df


def test_warnings_name_the_problems():
    df = awkward_frame()
    info = describe_table(load_table(df, label="y", subset="s", group="g"), n_folds=5)
    assert info.missing == {c: int(n) for c, n in df.isna().sum().items() if n}
    text = "\n".join(info.warnings)
    assert "label column 'y': 1" in text and "group column 'g': 1" in text
    assert "feature columns ['b1'] have missing values ([2] rows)" in text
    assert "one class of 'y': B (only 'a')" in text
    assert "fewer groups of 'g' than n_folds=5" in text and "('C', 'b'): 1" in text  # as a run
    assert "groups of 'g' have more than one 's' value (e.g. C0)" in text
    groups = df.dropna(subset=["g"]).groupby("s")["g"].nunique()
    assert info.groups.to_dict() == groups.to_dict()
    assert f"C: {groups['C']}" in text and "fewer groups of 'g' than the 5 folds" in text
    assert isinstance(info, TableInfo) and "warnings:" in str(info)


def test_regression_rows_and_user_folds():
    df = make_pixel_table(n_pixels=1500, n_regions=2, seed=3, task="regression")
    df["fold"] = np.where(df["region"] == "N", df.index % 3 + 1, df.index % 2 + 1)
    table = load_table(df, label="label", subset="region", fold="fold", exclude=["x", "y"])
    info = describe_table(table, n_folds=4)
    by = df.groupby("region")["label"]
    expected = pd.DataFrame(
        {"rows": by.size(), "label_mean": by.mean(), "label_min": by.min(), "label_max": by.max()}
    )
    assert_same_frame(info.rows, expected)
    folds = pd.crosstab(df["region"], df["fold"])
    assert_same_frame(info.fold_rows, folds)
    assert info.n_folds == 3 and info.fold == "fold"
    text = "\n".join(info.warnings)
    assert "n_folds=4 but fold column 'fold' has folds 1..3" in text
    assert "1 (subset, fold) blocks of (region, fold) have no rows, e.g. ('S', 3)" in text


def test_no_subset_is_plain_cv():
    df = make_pixel_table(n_pixels=500, n_regions=1, seed=4)
    info = describe_table(load_table(df, label="label", exclude=["x", "y", "polygon"]))
    assert info.subset is None and info.n_folds == 10
    assert info.rows.sum().to_dict() == df["label"].value_counts().to_dict()
    assert "subset:   (none: one subset, plain K-fold CV)" in str(info)


def _table(name: str, n_folds: int) -> tuple[object, dict]:
    """A table whose run with ``n_folds`` warns, and its load_table arguments."""
    if name == "aztrees":
        return shared_file("aztrees.parquet"), {"subset": "region3", "group": "polygon"}
    if name == "fold column":  # fold 1 holds half of each subset
        df = make_pixel_table(n_pixels=400, n_regions=2, seed=7).drop(columns="polygon")
        df["fold"] = np.where(df.index % 2 == 0, 1, df.index // 2 % (n_folds - 1) + 2)
        return df, {"label": "label", "fold": "fold", "exclude": ["x", "y"]}
    if name == "regression":  # a coordinate and missing feature values
        reg = make_pixel_table(n_pixels=300, n_regions=3, seed=6, task="regression")
        reg.loc[[0, 9], "B05"] = np.nan
        return reg.rename(columns={"y": "Northing"}), {"label": "label", "exclude": ["x"]}
    # A coordinate, missing feature values, one class in S, 4 trees in NE (< K).
    toy = make_pixel_table(n_pixels=600, n_regions=3, seed=5).drop(columns=["polygon", "y"])
    toy.loc[toy["region"].isin(["S", "NE"]), "label"] = "other"
    toy.loc[toy.index[toy["region"] == "NE"][:4], "label"] = "tree"
    toy.loc[[3, 4, 40], "B02"] = np.nan
    n = np.random.default_rng(5).integers(0, 3, len(toy))
    return toy.rename(columns={"x": "lon"}).assign(n=n), {"label": "label"}


@pytest.mark.slow
@pytest.mark.parametrize("name", ["aztrees", "toy", "regression", "fold column"])
@pytest.mark.parametrize("n_folds", [5, 10])
def test_info_lists_the_warnings_a_run_gives(name, n_folds):
    """Issue 11: info said 'warnings: none' where the run warned."""
    data, roles = _table(name, n_folds)
    roles = {"label": "y", "subset": "region", **roles}
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        table = load_table(data, **roles)
        task_measure = "error" if table.task == "classification" else "mse"
        res = sd.soak(
            table, "featureless", n_folds=None if table.fold else n_folds,  # the column's K
            measures=[task_measure], options=sd.RunOptions(onepass=False, progress=False),
        )  # fmt: skip
    ran = [str(w.message) for w in record]
    info = describe_table(table, n_folds=n_folds)
    assert len(ran) == len(set(ran)) >= 1  # each once; every table warns
    assert sorted(info.warnings) == sorted(ran)
    assert res[task_measure].notnull().all()  # warnings, not failures
    assert res.attrs["excluded_coordinates"] == list(table.excluded_coordinates)
    assert list(info.excluded_coordinates) == list(table.excluded_coordinates)


def test_cli_info_names_the_coordinates_left_out(pixels, capsys):
    argv = ["info", str(pixels), "--label", "label", "--subset", "region", "--group", "polygon"]
    assert cli.main(argv) == 0
    captured = capsys.readouterr()
    assert "left out (coordinates): x, y" in captured.out
    assert "features (12): B01" in captured.out
    warning = "coordinate columns ['x', 'y'] are left out of the features"
    assert warning in captured.out and warning in captured.err  # listed, and as a run warns
    assert cli.main([*argv, "--coordinates", "include"]) == 0
    out = capsys.readouterr().out
    assert "features (14): x, y, B01" in out and "left out" not in out
