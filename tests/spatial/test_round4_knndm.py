"""Issue 38, items 5 and 8 for kNNDM and NNDM: a prediction area in another CRS, unit or axis
order (refused where both inputs carry a CRS, else warned), groups kept whole, training
points at one place, non-finite coordinates and bad parameters, by the API and ``soak
knndm``."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import soak_dask as sd
from soak_dask.app import cli
from soak_dask.split.knndm import FarPredictionWarning, knndm_outer, whole_groups

from ..conftest import shared_file
from .test_spatial_folds import clustered_scene, hand_gjstar


@pytest.fixture(scope="module")
def scheduler():
    """A small in-process cluster for ``soak knndm --scheduler``."""
    from distributed import LocalCluster

    with warnings.catch_warnings():  # start-up noise only: the tests read the warnings
        warnings.simplefilter("ignore")
        cluster = LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0"
        )
    try:
        yield cluster.scheduler_address
    finally:
        cluster.close()


def run_cli(argv, scheduler, capsys):
    """``soak`` in-process: (exit status, stdout, stderr)."""
    code = cli.main([str(a) for a in [*argv, "--scheduler", scheduler]])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def table_of(df, **roles):
    return sd.load_table(df, label="label", coords=["x", "y"], **roles)


# ---------------------------------------------------------------------------- CAST's farm
@pytest.fixture(scope="module")
def sensors():
    """CAST's farm averaged per sensor (its examples' training table), UTM 11N metres."""
    cook = pd.read_parquet(shared_file("cast", "cookfarm.parquet"))
    cols = ["DEM", "Easting", "Northing", "VW"]
    return cook.groupby("SOURCEID", observed=True)[cols].mean().reset_index(drop=True)


@pytest.fixture(scope="module")
def farm_tif():
    return shared_file("cast", "predictors_2012-03-25.tif")


@pytest.fixture(scope="module")
def wgs84_tif(farm_tif, tmp_path_factory):
    """The farm's raster reprojected to EPSG:4326 (lon/lat degrees)."""
    import rioxarray

    path = tmp_path_factory.mktemp("wgs84") / "predictors_4326.tif"
    rioxarray.open_rasterio(farm_tif).rio.reproject("EPSG:4326").rio.to_raster(path)
    return path


def write_geoparquet(frame, path, epsg):
    """``frame`` as a GeoParquet file whose ``geo`` metadata gives EPSG:``epsg`` (a point
    geometry column beside the coordinate columns, as GeoParquet writers add one)."""
    from pyproj import CRS

    geometry = [b"\x01\x01\x00\x00\x00" + np.array([x, y]).tobytes() for x, y in
                zip(frame["Easting"], frame["Northing"], strict=True)]  # fmt: skip
    arrow = pa.Table.from_pandas(frame.assign(geometry=geometry), preserve_index=False)
    geo = {
        "version": "1.1.0",
        "primary_column": "geometry",
        "columns": {
            "geometry": {
                "encoding": "WKB",
                "geometry_types": ["Point"],
                "crs": CRS.from_epsg(epsg).to_json_dict(),
            }
        },
    }
    meta = {**(arrow.schema.metadata or {}), b"geo": json.dumps(geo).encode()}
    pq.write_table(arrow.replace_schema_metadata(meta), path)
    return path


@pytest.mark.slow
def test_utm_table_against_wgs84_raster_refused_naming_both_crs(
    sensors, farm_tif, wgs84_tif, tmp_path
):
    data = write_geoparquet(sensors, tmp_path / "sensors.parquet", 26911)
    t = sd.load_table(data, label="VW", coords=["Easting", "Northing"])
    with pytest.raises(ValueError, match=r"EPSG:26911 and the prediction area's in EPSG:4326"):
        sd.knndm_folds(t, wgs84_tif, n_folds=5, seed=2)
    with pytest.raises(ValueError, match=r"EPSG:26911 .* EPSG:4326"):
        sd.nndm_folds(t, wgs84_tif)
    # A table without a CRS takes the raster's: degrees are refused, saying to project both.
    plain = sd.load_table(sensors, label="VW", coords=["Easting", "Northing"])
    with pytest.raises(ValueError, match=r"^knndm_folds: .* degrees \(EPSG:4326\).*rio\.reproject"):
        sd.knndm_folds(plain, wgs84_tif, n_folds=5, seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FarPredictionWarning)  # the farm's own case is near
        res = sd.knndm_folds(t, farm_tif, n_folds=5, seed=2)  # one CRS on both sides
    assert res.method == "random CV" and sum(res.fold_sizes) == 42


@pytest.mark.slow
@pytest.mark.parametrize(
    "case",
    [
        "N,E order",
        "lon/lat table, UTM raster",
        "lon/lat prediction table",
    ],
)
def test_far_prediction_area_warns_naming_both_distances(
    case, sensors, farm_tif, wgs84_tif, tmp_path
):
    frame, coords, area = sensors, ["Easting", "Northing"], farm_tif
    if case == "N,E order":
        coords = ["Northing", "Easting"]
    elif case == "lon/lat table, UTM raster":
        from pyproj import Transformer

        lon, lat = Transformer.from_crs(26911, 4326, always_xy=True).transform(
            sensors["Easting"].to_numpy(), sensors["Northing"].to_numpy()
        )
        frame = sensors.assign(Easting=lon, Northing=lat)
    else:  # a lon/lat prediction table (no CRS in either)
        area = tmp_path / "area.parquet"
        pd.DataFrame({"Easting": [-117.08, -117.07], "Northing": [46.78, 46.79]}).to_parquet(area)
    t = sd.load_table(frame, label="VW", coords=coords)
    with pytest.warns(FarPredictionWarning) as caught:  # distances, whatever the candidates
        res = sd.knndm_folds(t, area, n_folds=5, seed=2, n_candidates=5)
    (text,) = [str(w.message) for w in caught if w.category is FarPredictionWarning]
    typical, extent = np.median(res.Gij), np.linalg.norm(np.ptp(t.data[coords].compute(), 0))
    assert f"{typical:.4g}" in text and f"{extent:.4g}" in text and "CRS" in text
    assert "other order (N, E)" in text and "over 10 times" in text and typical > 1000 * extent
    with pytest.warns(FarPredictionWarning):
        sd.nndm_folds(t, area)
    with pytest.warns(FarPredictionWarning):  # evaluate(outer="knndm") makes its folds so
        knndm_outer(t, area, 5, 2)


@pytest.mark.slow
def test_far_warning_threshold_spares_normal_cases(sensors, farm_tif):
    df, pred = clustered_scene()
    t = sd.load_table(sensors, label="VW", coords=["Easting", "Northing"], features=["DEM"])
    with warnings.catch_warnings():
        warnings.simplefilter("error", FarPredictionWarning)
        # strongly clustered training points; on a line across the area; the farm in
        # feature space; a prediction area 9 training extents away
        sd.knndm_folds(table_of(df), pred, n_folds=4, sample=2000, seed=3, n_candidates=10)
        line = table_of(df.assign(y=50.0))
        sd.knndm_folds(line, pred, n_folds=4, sample=2000, seed=3, n_candidates=5)
        sd.knndm_folds(t, farm_tif, n_folds=4, space="feature", seed=2, n_candidates=5)
        sd.nndm_folds(t, farm_tif)
        extent = np.linalg.norm(np.ptp(df[["x", "y"]].to_numpy(), axis=0))
        point = df[["x", "y"]].max().to_numpy() + 9 * extent / np.sqrt(2)
        near = pd.DataFrame([point] * 20, columns=["x", "y"])
        sd.knndm_folds(table_of(df), near, n_folds=4, seed=3, n_candidates=5)
    far = near + extent / np.sqrt(2) * 1.5  # now beyond 10 extents
    with pytest.warns(FarPredictionWarning, match="over 10 times"):
        sd.knndm_folds(table_of(df), far, n_folds=4, seed=3, n_candidates=5)


@pytest.mark.slow
def test_cli_far_area_warns_and_crs_mismatch_refused(
    sensors, farm_tif, wgs84_tif, tmp_path, capsys, scheduler
):
    data = tmp_path / "sensors.parquet"
    sensors.to_parquet(data)
    base = ["knndm", data, farm_tif, "--label", "VW", "--n-folds", "5", "--seed", "2"]
    code, out, err = run_cli(
        [*base, "--coords", "Northing,Easting", "--out", tmp_path / "a"], scheduler, capsys
    )
    assert code == 0, err
    assert "soak: warning: the prediction area is far from the training points" in err
    geo = write_geoparquet(sensors, tmp_path / "geo.parquet", 26911)
    argv = ["knndm", geo, wgs84_tif, "--label", "VW", "--coords", "Easting,Northing"]
    code, out, err = run_cli([*argv, "--out", tmp_path / "b"], scheduler, capsys)
    assert code == 2 and "EPSG:26911" in err and "EPSG:4326" in err
    assert not (tmp_path / "b" / "folds.parquet").exists()


# ---------------------------------------------------------------------------- groups
def grouped_scene():
    """The clustered scene with 37 groups, each spread over every cluster: location-based
    folds split every one of them."""
    df, pred = clustered_scene()
    return df.assign(g=np.arange(len(df)) % 37), pred


def assert_groups_whole(frame, group, fold):
    spans = frame.groupby(group)[fold].nunique()
    assert (spans == 1).all(), spans[spans > 1]


@pytest.mark.parametrize("rows_per_partition", [None, 41])
def test_knndm_keeps_groups_whole(rows_per_partition):
    df, pred = grouped_scene()
    t = sd.load_table(
        df, label="label", coords=["x", "y"], group="g", rows_per_partition=rows_per_partition
    )
    res = sd.knndm_folds(t, pred, n_folds=4, sample=2000, seed=3, n_candidates=10)
    out = res.table.data.compute()
    assert_groups_whole(out, "g", res.column)
    folds = out[res.column].to_numpy()
    assert sorted(np.unique(folds)) == [1, 2, 3, 4]
    assert res.fold_sizes == tuple(np.bincount(folds)[1:])
    # the scores are those of the folds returned, groups whole
    np.testing.assert_allclose(res.Gjstar, hand_gjstar(df[["x", "y"]].to_numpy(), folds))


@pytest.mark.slow
def test_evaluate_outer_knndm_keeps_groups_whole():
    df, pred = grouped_scene()
    t = sd.load_table(df, label="label", coords=["x", "y"], group="g")
    table, attrs = knndm_outer(t, pred, 4, 3)  # was refused: "would split the groups"
    out = table.data.compute()
    assert table.group == "g" and attrs["knndm_W"] >= 0
    assert_groups_whole(out, "g", table.fold)


def test_whole_groups_takes_each_groups_majority_fold():
    folds = np.array([1, 2, 2, 1, 3, 3, 1, 2])
    codes = np.array([0, 0, 0, 1, 1, 1, 2, 2])  # group 2: a tie -> the smaller fold
    rows, per_group = whole_groups(folds, codes)
    assert per_group.tolist() == [2, 3, 1] and rows.tolist() == [2, 2, 2, 3, 3, 3, 1, 1]
    assert whole_groups(folds, None)[0] is folds


def test_group_refusals():
    df, pred = grouped_scene()
    few = table_of(df.assign(g=np.arange(len(df)) % 3), group="g")
    with pytest.raises(ValueError, match="'g' has 3 groups, fewer than n_folds=4"):
        sd.knndm_folds(few, pred, n_folds=4)
    with pytest.raises(ValueError, match="would split the groups of 'g'"):
        sd.nndm_folds(table_of(df, group="g"), pred)


@pytest.mark.slow
def test_cli_knndm_group_keeps_groups_whole(tmp_path, capsys, scheduler):
    df, pred = grouped_scene()
    data, area = tmp_path / "train.parquet", tmp_path / "area.parquet"
    df.to_parquet(data)
    pred.to_parquet(area)
    out = tmp_path / "out"
    argv = ["knndm", data, area, "--label", "label", "--coords", "x,y", "--group", "g",
            "--n-folds", "4", "--candidates", "10", "--sample", "2000", "--out", out]  # fmt: skip
    code, printed, err = run_cli(argv, scheduler, capsys)
    assert code == 0, err
    folds = pd.read_parquet(out / "folds.parquet")  # the table's row order
    assert_groups_whole(folds.assign(g=df["g"].to_numpy()), "g", "knndm_fold")


# ---------------------------------------------------------------------------- degenerate places
def test_all_points_at_one_location_refused():
    df, pred = clustered_scene()
    same = df.assign(x=3.0, y=4.0)
    with pytest.raises(ValueError, match=r"all 320 rows have the same values \(x=3, y=4\)"):
        sd.knndm_folds(table_of(same), pred, n_folds=3)
    with pytest.raises(ValueError, match="all 50 rows have the same values"):
        sd.nndm_folds(table_of(same.iloc[:50]), pred)


def test_too_few_locations_for_the_folds_refused():
    df, pred = clustered_scene()
    two = df.assign(x=np.where(np.arange(len(df)) % 2, 0.0, 50.0), y=0.0)
    with pytest.raises(ValueError, match="has 2 distinct points .* fewer than n_folds=3"):
        sd.knndm_folds(table_of(two), pred, n_folds=3)


# ---------------------------------------------------------------------------- non-finite, options
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_training_coordinates_refused_naming_column_and_rows(bad):
    df, pred = clustered_scene()
    df.loc[[3, 8, 9], "y"] = bad
    t = table_of(df)
    with pytest.raises(ValueError, match=r"the training table: columns 'y' \(3\) .*NaN or ±inf"):
        sd.knndm_folds(t, pred, n_folds=4)
    with pytest.raises(ValueError, match=r"columns 'y' \(3\)"):
        sd.nndm_folds(table_of(df.iloc[:60]), pred)


def test_infinite_prediction_coordinates_refused_naming_column():
    df, pred = clustered_scene()
    pred.loc[[0, 5], "x"] = np.inf
    with pytest.raises(ValueError, match=r"the prediction area: columns 'x' \(2\) .*infinite"):
        sd.knndm_folds(table_of(df), pred, n_folds=4)
    pred.loc[[0, 5], "x"] = np.nan  # missing: outside the area, left out
    res = sd.knndm_folds(table_of(df), pred, n_folds=4, sample=5000, n_candidates=5)
    assert len(res.Gij) == len(pred) - 2 and np.isfinite(res.W)


def test_infinite_raster_feature_refused_naming_variable(sensors, farm_tif):
    import rioxarray

    raster = rioxarray.open_rasterio(farm_tif)
    names = list(raster.attrs["long_name"])
    ds = raster.assign_coords(band=names).to_dataset("band")
    ds["DEM"][:2, :] = np.inf  # two rows of 101 cells
    t = sd.load_table(sensors, label="VW", coords=["Easting", "Northing"], features=["DEM"])
    with pytest.raises(ValueError, match=r"raster variables 'DEM' \(202\) .*infinite"):
        sd.knndm_folds(t, ds[["DEM"]], space="feature", n_folds=4, n_candidates=5)


@pytest.mark.slow
def test_cli_non_finite_coordinates(tmp_path, capsys, scheduler):
    df, pred = clustered_scene()
    df.loc[[1, 2], "x"] = np.inf
    data, area = tmp_path / "train.parquet", tmp_path / "area.parquet"
    df.to_parquet(data)
    pred.to_parquet(area)
    argv = ["knndm", data, area, "--label", "label", "--coords", "x,y", "--out", tmp_path / "o"]
    code, out, err = run_cli(argv, scheduler, capsys)
    assert code == 2 and "columns 'x' (2) have rows with a missing or infinite value" in err


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"phi": np.nan}, "phi=nan"),
        ({"phi": np.inf}, "phi=inf"),
        ({"min_train": True}, "min_train=True"),
        ({"sample": 3}, "sample=3"),
        ({"sample": 100.0}, "sample=100.0"),
    ],
)
def test_nndm_bad_parameters_refused_by_name(kwargs, message):
    df, pred = clustered_scene(per=5)
    with pytest.raises(ValueError, match=message):
        sd.nndm_folds(table_of(df), pred, **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_candidates": 0}, "n_candidates=0"),
        ({"n_candidates": 2.5}, "n_candidates=2.5"),
        ({"max_clusters": 2}, "max_clusters=2"),
        ({"cv_sample": np.nan}, "cv_sample=nan"),
    ],
)
def test_knndm_bad_counts_refused_by_name(kwargs, message):
    df, pred = clustered_scene()
    with pytest.raises(ValueError, match=message):
        sd.knndm_folds(table_of(df), pred, n_folds=4, **kwargs)
