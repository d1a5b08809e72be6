"""Delimited text (CSV, TSV) read lazily with the same roles as Parquet, and directories
holding files that are not tables named in the error."""

from __future__ import annotations

import pandas as pd
import pytest
import xarray as xr

import soak_dask as sd

from ..conftest import toy_table

RUN = {
    "learners": ["featureless", "lda"],
    "n_folds": 3,
    "measures": ["error"],
    "options": sd.RunOptions(progress=False),
}


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return (
        toy_table(n=3000, n_subsets=3, seed=4, n_groups=6)
        .assign(polygon=lambda d: pd.factorize(d["group"])[0])
        .drop(columns="group")
    )


def _load(source, **kwargs) -> sd.Table:
    return sd.load_table(source, label="y", subset="subset", group="polygon", **kwargs)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "sep"), [("t.csv", ","), ("t.tsv", "\t"), ("t.txt", ";"), ("t.csv.gz", ",")]
)
def test_delimited_file_gives_the_results_of_its_frame(frame, tmp_path, name, sep):
    path = tmp_path / name
    frame.to_csv(path, sep=sep, index=False)
    table = _load(path, rows_per_partition=500)
    assert table.features == ("x0", "x1", "x2") and table.task == "classification"
    if not name.endswith(".gz"):  # compressed files cannot be cut into blocks
        assert table.data.npartitions > 1
    expected = sd.soak(_load(pd.read_csv(path, sep=sep)), **RUN)
    xr.testing.assert_identical(sd.soak(table, **RUN).error, expected.error)


@pytest.mark.slow
def test_directory_and_glob_of_csv_files(frame, tmp_path):
    folder = tmp_path / "parts"
    folder.mkdir()
    frame.iloc[:250].to_csv(folder / "a.csv", index=False)
    frame.iloc[250:].to_csv(folder / "b.csv", index=False)
    (folder / "_SUCCESS").write_text("")  # written by Spark and others; not a table
    expected = sd.soak(_load(frame), **RUN).error
    for source in (folder, f"{folder}/*.csv"):
        xr.testing.assert_identical(sd.soak(_load(source), **RUN).error, expected)


def test_csv_checkpoint_refuses_a_rewritten_file(frame, tmp_path):
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    stored = {**RUN, "options": sd.RunOptions(progress=False, checkpoint=tmp_path / "ckpt")}
    sd.soak(_load(path), **stored)
    frame.iloc[::-1].to_csv(path, index=False)  # reordered rows: other folds, other scores
    with pytest.raises(ValueError, match="t.csv"):
        sd.soak(_load(path), **stored)


def test_empty_csv_and_unknown_delimiter_are_named(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(ValueError, match="empty.csv"):
        _load(empty)
    odd = tmp_path / "odd.txt"
    odd.write_text("a b c\n1 2 3\n")
    with pytest.raises(ValueError, match=r"odd.txt.*\.tsv"):
        _load(odd)


def test_directory_with_files_that_are_not_parquet_names_them(frame, tmp_path):
    folder = tmp_path / "mixed"
    folder.mkdir()
    frame.to_parquet(folder / "part-0.parquet")
    (folder / "notes.md").write_text("read me")
    (folder / "empty.bin").write_bytes(b"")
    with pytest.raises(ValueError, match=r"not Parquet: \['empty.bin'\]; .*\*\.parquet'"):
        _load(folder)  # notes.md is documentation, not a table: not named
    assert _load(f"{folder}/*.parquet").features == ("x0", "x1", "x2")


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_documentation_beside_the_tables_is_not_read(frame, tmp_path, fmt):
    folder = tmp_path / "survey"
    (folder / "site=north").mkdir(parents=True)
    half = len(frame) // 2
    for name, part in (("a", frame.iloc[:half]), ("b", frame.iloc[half:])):
        path = folder / "site=north" / f"{name}.{fmt}"
        part.to_csv(path, index=False) if fmt == "csv" else part.to_parquet(path, index=False)
    (folder / "README.txt").write_text("Survey of 2020: columns x0..x2, label y.\n")
    (folder / "notes.md").write_text("# Field notes\n")
    source = folder if fmt == "parquet" else folder / "site=north"
    table = _load(source)
    assert table.features == ("x0", "x1", "x2")
    assert int(table.data.shape[0].compute()) == len(frame)


def test_csv_folder_beside_another_file_suggests_a_csv_glob(frame, tmp_path):
    folder = tmp_path / "csvs"
    folder.mkdir()
    frame.to_csv(folder / "a.csv", index=False)
    (folder / "scores.bin").write_bytes(b"\x00\x01")
    with pytest.raises(ValueError, match=r"not Parquet: \['a.csv', 'scores.bin'\].*/\*\.csv'"):
        _load(folder)


def test_a_csv_named_otherwise_says_how_csv_is_recognised(frame, tmp_path):
    path = tmp_path / "t.dat"
    frame.to_csv(path, index=False)
    with pytest.raises(ValueError, match=r"t.dat.*\.csv, \.tsv"):
        _load(path)
