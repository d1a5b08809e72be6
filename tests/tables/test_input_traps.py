"""Input traps refused or warned at load, before any fit (issue 40, item 7): rows repeated
across the files of a folder, a continuous subset or group column, and integer id-like
columns among the default features."""

from __future__ import annotations

import shutil
import warnings

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import soak_dask as sd
from soak_dask.settings import SETTINGS
from soak_dask.tables.column_traps import merge_all, summarise
from soak_dask.tables.generated import write_pixel_parquet

from ..conftest import n_examples, shared_file, toy_table


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return toy_table(n=600, n_subsets=3, seed=7)


def _write(part: pd.DataFrame, path, fmt: str) -> None:
    part.to_csv(path, index=False) if fmt == "csv" else part.to_parquet(path, index=False)


def _load(source, **kwargs) -> sd.Table:
    return sd.load_table(source, label="y", subset="subset", **kwargs)


def _quiet_load(source, **kwargs) -> sd.Table:
    """``_load``, failing on any warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return _load(source, **kwargs)


# --- rows repeated across the files of a folder ------------------------------------------


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_overlapping_files_are_refused_naming_them_and_the_count(frame, tmp_path, fmt):
    # Two exports of one day: rows 250..349 are in both files.
    _write(frame.iloc[:350], tmp_path / f"day1.{fmt}", fmt)
    _write(frame.iloc[250:], tmp_path / f"day2.{fmt}", fmt)
    pattern = rf"100 distinct rows of .* more than one .*day1.{fmt} and day2.{fmt} share 100"
    for source in (tmp_path, f"{tmp_path}/*.{fmt}"):
        with pytest.raises(ValueError, match=pattern + r".*duplicates='allow'"):
            _load(source, rows_per_partition=100)
    table = _load(tmp_path, duplicates="allow")
    assert int(table.data.shape[0].compute()) == len(frame) + 100  # allowed: all rows kept


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_a_file_and_its_copy_are_refused_before_reading_rows(frame, tmp_path, fmt):
    _write(frame.iloc[:300], tmp_path / f"a.{fmt}", fmt)
    _write(frame.iloc[300:], tmp_path / f"b.{fmt}", fmt)
    shutil.copy(tmp_path / f"a.{fmt}", tmp_path / f"a_copy.{fmt}")
    with pytest.raises(ValueError, match=rf"hold the same bytes: a.{fmt} = a_copy.{fmt}\."):
        _load(tmp_path)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_files_that_split_a_table_load_without_alarm(frame, tmp_path, fmt):
    # Same sizes are compared by bytes, not taken for copies.
    for i in range(3):
        _write(frame.iloc[i * 200 : (i + 1) * 200], tmp_path / f"part{i}.{fmt}", fmt)
    table = _quiet_load(tmp_path, rows_per_partition=64)
    assert int(table.data.shape[0].compute()) == len(frame)


def test_rows_equal_in_the_table_columns_count_though_other_columns_differ(frame, tmp_path):
    # An export column differs, but the rows the learner sees are the same.
    frame.iloc[:300].assign(export=1).to_parquet(tmp_path / "a.parquet", index=False)
    frame.iloc[200:].assign(export=2).to_parquet(tmp_path / "b.parquet", index=False)
    with pytest.raises(ValueError, match="100 distinct rows"):
        _load(tmp_path, exclude=["export"])
    # Rows repeated within one file are no concern of this check.
    pd.concat([frame.iloc[:300], frame.iloc[:5]]).to_parquet(tmp_path / "a.parquet", index=False)
    frame.iloc[300:].to_parquet(tmp_path / "b.parquet", index=False)
    _quiet_load(tmp_path)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_rows_alike_in_probed_columns_only_are_not_duplicates(frame, tmp_path, monkeypatch, fmt):
    # The first pass hashes three float columns; rows of two files equal in those but not in a
    # fourth feature send these two files (not the third) to a pass over every column, which
    # finds no duplicate.
    from soak_dask.tables import duplicates

    calls = []
    shared_rows = duplicates.shared_rows
    monkeypatch.setattr(
        duplicates,
        "shared_rows",
        lambda f: calls.append((list(f.columns), f.npartitions)) or shared_rows(f),
    )
    frame = frame.assign(x3=np.arange(len(frame), dtype=np.int64) % 7)
    _write(frame.iloc[:250], tmp_path / f"a.{fmt}", fmt)
    _write(frame.iloc[200:450].assign(x3=-1), tmp_path / f"b.{fmt}", fmt)
    _write(frame.iloc[450:], tmp_path / f"c.{fmt}", fmt)
    _quiet_load(tmp_path)
    probe = ["x0", "x1", "x2", duplicates.FILE_COLUMN]
    every = ["x0", "x1", "x2", "x3", "y", "subset", duplicates.FILE_COLUMN]
    assert calls == [(probe, 3), (every, 2)]
    # Distinct files read only the probed columns, once.
    calls.clear()
    _write(frame.iloc[200:450].assign(x0=-1.0), tmp_path / f"b.{fmt}", fmt)
    _quiet_load(tmp_path)
    assert calls == [(probe, 3)]
    # Equal in every column: refused, whichever files the rows are in.
    _write(frame.iloc[200:450], tmp_path / f"b.{fmt}", fmt)
    with pytest.raises(ValueError, match=rf"50 distinct rows .*a.{fmt} and b.{fmt} share 50"):
        _load(tmp_path)


def test_probe_columns_are_floats_then_integers_spread_over_the_table():
    from soak_dask.tables.duplicates import probe_columns

    meta = pd.DataFrame(
        {
            "band": pd.Series(dtype="float32"),
            "region": pd.Series(dtype=str),
            "count": pd.Series(dtype="int64"),
            "ndvi": pd.Series(dtype="float64"),
            "x": pd.Series(dtype="float64"),
            "id": pd.Series(dtype="int32"),
        }
    )
    assert probe_columns(meta) == ["band", "ndvi", "x"]
    assert probe_columns(meta[["region", "count", "id"]]) == ["count", "id"]
    assert probe_columns(meta[["region"]]) == []
    assert probe_columns(meta[["band", "count", "id", "region"]]) == ["band", "count", "id"]
    bands = pd.DataFrame({f"B{i:02d}": pd.Series(dtype="float32") for i in range(1, 21)})
    assert probe_columns(bands) == ["B01", "B11", "B20"]  # apart: neighbours saturate together


def test_duplicates_option_is_declared_and_checked():
    setting = SETTINGS["duplicates"]
    assert (setting.flag, setting.scope, setting.default) == ("--duplicates", "table", "refuse")
    with pytest.raises(ValueError, match=r"duplicates='maybe': choose from \['refuse', 'allow'\]"):
        setting.checked("maybe")
    with pytest.raises(ValueError, match="duplicates='maybe' is not 'refuse' or 'allow'"):
        sd.load_table(pd.DataFrame({"x": [1.0, 2.0], "y": [0, 1]}), label="y", duplicates="maybe")


def test_demo_parquet_folder_loads_with_no_alarm(tmp_path):
    pixels = write_pixel_parquet(tmp_path / "pixels", n_pixels=3000, seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table = sd.load_table(
            pixels, label="label", subset="region", group="polygon", exclude=["x", "y"]
        )
    assert len(table.features) == 12


def test_aztrees_loads_with_only_its_coordinates_warning():
    path = shared_file("aztrees.parquet")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = sd.load_table(path, label="y", subset="region3", group="polygon")
    assert [str(w.message).split(" are ")[0] for w in caught] == [
        "coordinate columns ['xcoord', 'ycoord']"
    ]
    assert len(table.features) == 21


# --- a continuous subset or group column ------------------------------------------------


def _with_ndvi(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.assign(ndvi=np.random.default_rng(3).uniform(-0.2, 0.9, len(frame)).round(4))


@pytest.mark.parametrize("kind", ["pandas", "dask", "csv"])
def test_continuous_subset_is_refused_with_its_distinct_values(frame, tmp_path, kind):
    df = _with_ndvi(frame)
    source = {"pandas": df, "dask": dd.from_pandas(df, npartitions=3)}.get(kind)
    if kind == "csv":
        df.iloc[:300].to_csv(tmp_path / "a.csv", index=False)
        df.iloc[300:].to_csv(tmp_path / "b.csv", index=False)
        source = tmp_path
    with pytest.raises(ValueError) as err:
        sd.load_table(source, label="y", subset="ndvi")
    message = str(err.value)
    assert "subset column 'ndvi'" in message and "a subset is a category" in message
    assert "pd.cut(df['ndvi']" in message  # how to fix it
    counted = int(message.split("has about ")[1].split(" distinct")[0].replace(",", ""))
    assert abs(counted - df["ndvi"].nunique()) <= 0.03 * df["ndvi"].nunique()


def test_continuous_group_is_refused(frame):
    with pytest.raises(ValueError, match=r"group column 'ndvi' .* a group is an id"):
        sd.load_table(_with_ndvi(frame), label="y", subset="subset", group="ndvi")


@pytest.mark.parametrize("npartitions", [1, 2])
def test_whole_number_float_subset_and_group_are_accepted(frame, npartitions):
    # A year or a polygon read as float (a gap in a CSV column makes it float) is a category.
    df = frame.drop(columns="subset").assign(
        year=np.where(np.arange(len(frame)) % 2, 2019.0, 2020.0),
        polygon=(np.arange(len(frame)) // 10).astype(float),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table = sd.load_table(
            dd.from_pandas(df, npartitions=npartitions), label="y", subset="year", group="polygon"
        )
    assert table.subset == "year" and table.group == "polygon"


# --- integer id-like columns among the default features ---------------------------------------


@pytest.mark.parametrize("kind", ["pandas", "dask", "parquet"])
def test_id_named_column_is_warned_about_and_kept(frame, tmp_path, kind):
    df = frame.assign(row_id=np.random.default_rng(1).permutation(len(frame)) * 7)
    source = {"pandas": df, "dask": dd.from_pandas(df, npartitions=4)}.get(kind)
    if kind == "parquet":
        df.to_parquet(tmp_path / "t.parquet")
        source = tmp_path / "t.parquet"
    with pytest.warns(UserWarning, match=r"'row_id' \(named like an id\).*exclude=\['row_id'\]"):
        table = _load(source)
    assert "row_id" in table.features  # warned, never dropped
    assert _quiet_load(source, exclude=["row_id"]).features == ("x0", "x1", "x2")
    named = _quiet_load(source, features=["x0", "row_id"])  # named by the user: not doubted
    assert named.features == ("x0", "row_id")


@pytest.mark.parametrize("npartitions", [1, 5])
def test_rows_numbered_by_value_are_warned_about(frame, npartitions):
    n = len(frame)
    rng = np.random.default_rng(2)
    df = frame.assign(
        pixel=np.arange(10, 10 + n),  # strictly increasing
        countdown=np.arange(n, 0, -1) * 3,  # strictly decreasing, with gaps
        shuffled=rng.permutation(n) + 100,  # a numbering, shuffled
    )
    with pytest.warns(UserWarning) as caught:
        _load(dd.from_pandas(df, npartitions=npartitions, sort=False))
    (message,) = [str(w.message) for w in caught if "look like ids" in str(w.message)]
    assert f"'pixel' (strictly increasing over {n:,} rows)" in message
    assert f"'countdown' (strictly decreasing over {n:,} rows)" in message
    assert "'shuffled' (about 100% distinct values, 100 to 699)" in message


def test_integer_measurements_are_no_ids(frame):
    n = len(frame)
    rng = np.random.default_rng(5)
    df = frame.assign(
        reflectance=rng.integers(0, 10_000, n),  # nearly all distinct, but sparse
        elevation=rng.integers(1_000, 1_000 + n, n),  # dense, but repeated values
        sorted_per_part=np.tile(np.arange(n // 3), 3),  # increasing within parts only
        n_trees=rng.integers(0, 40, n),
    )
    _quiet_load(dd.from_pandas(df, npartitions=3, sort=False))
    # Too few rows for values to say anything.
    small = df.head(40).assign(pixel=np.arange(40))
    _quiet_load(small)


@settings(max_examples=n_examples(100))
@given(
    values=st.lists(st.integers(-50, 50) | st.just(np.nan), min_size=0, max_size=40),
    cuts=st.lists(st.integers(0, 40), max_size=4),
)
def test_summaries_merged_in_order_are_the_whole_columns(values, cuts):
    whole = pd.DataFrame({"v": pd.array(values, dtype="Float64")})
    bounds = [0, *sorted(c for c in cuts if c <= len(values)), len(values)]
    parts = [summarise(whole.iloc[a:b], ["v"]) for a, b in zip(bounds, bounds[1:], strict=False)]
    merged, expected = merge_all(*parts)["v"], summarise(whole, ["v"])["v"]
    assert merged.distinct >= expected.distinct
    same = ("n", "rising", "falling", "fractional")
    assert [getattr(merged, f) for f in same] == [getattr(expected, f) for f in same]
    for f in ("low", "high", "first", "last"):
        a, b = getattr(merged, f), getattr(expected, f)
        assert a == b or (np.isnan(a) and np.isnan(b))
