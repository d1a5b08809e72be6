"""Tests of ``describe_table`` and ``soak info``: every number is checked against pandas."""

from __future__ import annotations

import dask
import numpy as np
import pandas as pd
import pytest

import soak_dask.parquet
from soak_dask import cli, load_table
from soak_dask.demo import make_pixel_table, write_pixel_parquet
from soak_dask.info import TableInfo, describe_table

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

    read_piece = soak_dask.parquet.read_piece
    monkeypatch.setattr(soak_dask.parquet, "read_piece", counting_read)
    table = load_table(pixels, label="label", subset="region", group="polygon", exclude=["x", "y"])
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
    assert info.missing == {} and info.warnings == []


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
    assert "warnings: none" in lines


def awkward_frame() -> pd.DataFrame:
    """Subset A is fine; B has one class; C has 3 rows of class b and 2 groups; and NaNs."""
    rng = np.random.default_rng(0)
    subset = ["A"] * 40 + ["B"] * 20 + ["C"] * 13
    label = ["a", "b"] * 20 + ["a"] * 20 + ["a"] * 10 + ["b"] * 3
    group = [f"A{i % 8}{y}" for i, y in enumerate(label[:40])] + ["B0"] * 10 + ["B1"] * 10
    group += ["C0"] * 10 + ["C1"] * 3
    df = pd.DataFrame(
        {"x": rng.normal(size=73), "y": label, "s": subset, "g": group}, dtype=object
    ).astype({"x": float})
    df.loc[0, "y"] = None
    df.loc[1, "g"] = None
    df.loc[[2, 3], "x"] = np.nan
    df.loc[45, "g"] = "C0"  # a group in two subsets
    return df


def test_warnings_name_the_problems():
    df = awkward_frame()
    info = describe_table(load_table(df, label="y", subset="s", group="g"), n_folds=5)
    assert info.missing == {c: int(n) for c, n in df.isna().sum().items() if n}
    text = "\n".join(info.warnings)
    assert "label column 'y': 1" in text and "group column 'g': 1" in text
    assert "features ('x': 2)" in text
    assert "one class of 'y': B (only 'a')" in text
    assert "('C', 'b'): 3" in text  # stratum smaller than K
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
