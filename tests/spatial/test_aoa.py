"""The area of applicability (soak_dask.spatial.aoa): hand-computed cases, CAST's own farm case,
rasters and tables, in memory and lazy on a cluster, writing, the figure, SOAK coverage and the
CLI."""

from __future__ import annotations

import math

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import cdist

import soak_dask as sd
from soak_dask.spatial.aoa import di_threshold, train_di

from ..conftest import n_examples, shared_file

SQ2 = math.sqrt(2)
# Four corners of a square and its centre: mean 0 and SD 1 (n - 1) in both predictors, so the
# standardised points are the raw ones. Pairs: 4 sides of 2, 2 diagonals of 2*sqrt(2), 4
# centre-corner distances of sqrt(2).
SQUARE = pd.DataFrame({"a": [-1.0, 1.0, -1.0, 1.0, 0.0], "b": [-1.0, -1.0, 1.0, 1.0, 0.0]})
MEAN_SQUARE = (4 * 2 + 2 * 2 * SQ2 + 4 * SQ2) / 10
CAST_FEATURES = ["DEM", "NDRE.Sd", "TWI"]


def test_square_without_folds():
    new = pd.DataFrame({"a": [0.0, 0.0, 3.0], "b": [0.0, 1.0, 0.0]})
    ds = sd.aoa(SQUARE, new, features=["a", "b"], lpd=True)
    assert ds.attrs["mean_distance"] == pytest.approx(MEAN_SQUARE)
    # Every point's nearest other point is sqrt(2) away: one DI, which is the threshold.
    assert ds["train_di"].values == pytest.approx([SQ2 / MEAN_SQUARE] * 5)
    assert ds.attrs["threshold"] == pytest.approx(SQ2 / MEAN_SQUARE)
    # (0, 1) is 1 from the centre and from two corners; (3, 0) is sqrt(5) from (1, +-1).
    assert ds["di"].values == pytest.approx([0.0, 1 / MEAN_SQUARE, math.sqrt(5) / MEAN_SQUARE])
    assert ds["aoa"].values.tolist() == [1.0, 1.0, 0.0]
    # LPD counts points strictly closer than the threshold: none for training points (their
    # nearest is at the threshold), the centre itself for (0, 0), three for (0, 1).
    assert ds["train_lpd"].values.tolist() == [0] * 5
    assert ds["lpd"].values.tolist() == [1.0, 3.0, 0.0]


def test_square_with_folds():
    folds = [1, 1, 2, 2, 2]  # lower corners in fold 1; upper corners and centre in fold 2
    ds = sd.aoa(SQUARE, SQUARE, features=["a", "b"], folds=folds, lpd=True)
    # The mean distance takes every pair, whatever the folds (CAST's trainDist_avrgmean).
    assert ds.attrs["mean_distance"] == pytest.approx(MEAN_SQUARE)
    # Lower corners reach the centre (sqrt 2); upper corners only the lower ones (2); the
    # centre reaches the lower corners (sqrt 2).
    expected = np.array([SQ2, SQ2, 2, 2, SQ2]) / MEAN_SQUARE
    assert ds["train_di"].values == pytest.approx(expected)
    # Q1 = Q3 - IQR ... quantiles (type 7) 0.25 -> sqrt2/m, 0.75 -> 2/m: the whisker passes
    # the largest DI, so the threshold is the largest DI.
    assert ds.attrs["threshold"] == pytest.approx(2 / MEAN_SQUARE)
    assert ds["train_lpd"].values.tolist() == [1, 1, 0, 0, 2]
    assert ds.attrs["n_folds"] == 2
    # The folds also come from a column of train.
    by_column = sd.aoa(SQUARE.assign(f=folds), SQUARE, features=["a", "b"], folds="f")
    assert by_column["train_di"].values == pytest.approx(expected)
    # A training point's own location is in the training set: DI 0.
    assert ds["di"].values.tolist() == [0.0] * 5


def test_square_with_weights():
    # Predictor a counts twice: points (+-2, +-1) and (0, 0). Pairs: 2 of 4, 2 of 2, 2 of
    # sqrt(20), 4 of sqrt(5).
    mean = (2 * 4 + 2 * 2 + 2 * math.sqrt(20) + 4 * math.sqrt(5)) / 10
    new = pd.DataFrame({"a": [0.0, 1.0, 3.0], "b": [1.0, 0.0, 0.0]})
    ds = sd.aoa(SQUARE, new, features=["a", "b"], weights={"b": 1.0, "a": 2.0})
    assert ds.attrs["mean_distance"] == pytest.approx(mean)
    assert ds["train_di"].values == pytest.approx(np.array([2, 2, 2, 2, math.sqrt(5)]) / mean)
    # Four equal DI and one larger: IQR 0, the threshold is the corners' DI, the centre is out.
    assert ds.attrs["threshold"] == pytest.approx(2 / mean)
    assert ds["di"].values == pytest.approx([1 / mean, 1 / mean, math.sqrt(17) / mean])
    assert ds["aoa"].values.tolist() == [1.0, 1.0, 0.0]
    assert ds.attrs["weights"] == [2.0, 1.0]


def test_threshold_is_the_whisker_value_not_a_data_point():
    # Q1 2, Q3 4 (type 7): 4 + 1.5 * 2 = 7, although no DI lies between 4 and 100 (the old
    # boxplot.stats rule would give 4).
    assert di_threshold(np.array([1.0, 2.0, 3.0, 4.0, 100.0])) == 7.0
    assert di_threshold(np.array([3.0, 1.0, 2.0, np.nan])) == 3.0  # capped at the largest


def test_missing_values_give_missing_di():
    new = pd.DataFrame({"a": [0.0, np.nan], "b": [0.0, 0.0]})
    ds = sd.aoa(SQUARE, new, features=["a", "b"], lpd=True)
    assert ds["di"].values[0] == 0.0 and np.isnan(ds["di"].values[1])
    assert np.isnan(ds["aoa"].values[1]) and np.isnan(ds["lpd"].values[1])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"features": ["a", "c"]}, r"features \['c'\] not in new"),
        ({"weights": {"a": 1.0, "c": 1.0}}, r"unknown \['c'\]; missing \['b'\]"),
        ({"weights": {"a": -1.0, "b": 1.0}}, r"weights of \['a'\] are negative"),
        ({"weights": {"a": 0.0, "b": 0.0}}, "all 0"),
        ({"folds": [1, 2, 1]}, "folds has 3 values but train has 5 rows"),
        ({"folds": [1] * 5}, "folds has one value"),
        ({"folds": "nope"}, r"fold columns \['nope'\] not in train"),
        ({"features": ["a", "a"]}, "names a feature twice"),
    ],
)
def test_bad_input_is_refused(kwargs, match):
    options = {"features": ["a", "b"], **kwargs}
    with pytest.raises(ValueError, match=match):
        sd.aoa(SQUARE, SQUARE, **options)


def test_bad_train_and_new_are_refused():
    with pytest.raises(ValueError, match=r"missing or infinite values \(rows per feature"):
        sd.aoa(SQUARE.assign(a=[np.nan, 1, 2, 3, 4]), SQUARE, features=["a", "b"])
    with pytest.raises(ValueError, match=r"features \['c'\] are constant"):
        sd.aoa(SQUARE.assign(c=1.0), SQUARE.assign(c=0.0), features=["a", "b", "c"])
    with pytest.raises(ValueError, match=r"features \['b'\] not in new"):
        sd.aoa(SQUARE, SQUARE[["a"]], features=["a", "b"])
    with pytest.raises(ValueError, match=r"features \['b'\] not in train"):
        sd.aoa(SQUARE[["a"]], SQUARE, features=["a", "b"])
    raster = xr.Dataset({"a": (("y", "x"), np.zeros((2, 2)))})
    with pytest.raises(ValueError, match="feature 'b' is not a variable of the raster"):
        sd.aoa(SQUARE, raster, features=["a", "b"])
    cube = raster.assign(b=(("time", "y", "x"), np.zeros((1, 2, 2))))
    with pytest.raises(ValueError, match="has dims .*2-D band variables"):
        sd.aoa(SQUARE, cube, features=["a", "b"])
    with pytest.raises(TypeError, match="new is a list"):
        sd.aoa(SQUARE, [1, 2], features=["a", "b"])


def test_raster_nodata_attribute_is_missing():
    a = np.array([[0.0, -9999.0]])
    raster = xr.Dataset({"a": (("y", "x"), a, {"_FillValue": -9999.0}), "b": (("y", "x"), a * 0)})
    ds = sd.aoa(SQUARE, raster, features=["a", "b"]).compute()
    assert ds["di"].values[0, 0] == 0.0 and np.isnan(ds["di"].values[0, 1])


# --- CAST's farm ---------------------------------------------------------------------------


def cast_raster() -> xr.Dataset:
    """CAST's 13-band predictor raster as one (y, x) variable per band, named as in CAST."""
    rioxarray = pytest.importorskip("rioxarray")
    raster = rioxarray.open_rasterio(shared_file("cast", "predictors_2012-03-25.tif"))
    names = raster.attrs["long_name"]
    bands = {name: raster.sel(band=i + 1, drop=True) for i, name in enumerate(names)}
    return xr.Dataset(bands).load()


def cast_train(raster: xr.Dataset, n: int = 30) -> pd.DataFrame:
    """CAST's training points: cookfarm averaged per SOURCEID (sorted, as R's aggregate
    sorts), the first ``n``, and the raster's values in the cells holding them (terra's
    ``extract``)."""
    farm = pd.read_parquet(shared_file("cast", "cookfarm.parquet"))
    sensors = farm.groupby("SOURCEID")[["VW", "Easting", "Northing"]].mean().sort_index()
    sensors = sensors.iloc[:n]
    x, y = raster["x"].values, raster["y"].values
    dx, dy = x[1] - x[0], y[1] - y[0]
    col = np.floor((sensors["Easting"].to_numpy() - (x[0] - dx / 2)) / dx).astype(int)
    row = np.floor((sensors["Northing"].to_numpy() - (y[0] - dy / 2)) / dy).astype(int)
    values = {name: raster[name].values[row, col] for name in raster.data_vars}
    return pd.DataFrame({**values, "row": row, "col": col, "VW": sensors["VW"].to_numpy()})


@pytest.fixture(scope="module")
def farm():
    raster = cast_raster()
    return raster, cast_train(raster)


def test_cast_farm_reproduces_cast(farm):
    """CAST's own test (tests/testthat/test-aoa.R, "AOA works without a trained model"):
    threshold 0.52872, 3377 cells inside, DI quartiles, 1993 NA cells and the training LPD."""
    raster, train = farm
    ds = sd.aoa(train, raster, features=CAST_FEATURES, lpd=True).compute()
    assert round(ds.attrs["threshold"], 5) == 0.52872
    assert int((ds["aoa"] == 1).sum()) == 3377
    di = ds["di"].values
    assert int(np.isnan(di).sum()) == 1993
    di = di[np.isfinite(di)]
    summary = [di.min(), *np.quantile(di, [0.25, 0.5]), di.mean(), np.quantile(di, 0.75), di.max()]
    assert np.round(summary, 4).tolist() == [0.0, 0.1759, 0.2642, 0.3109, 0.4051, 2.6631]
    assert ds["train_lpd"].values.tolist() == [
        *(7, 9, 12, 1, 12, 12, 4, 2, 8, 10, 6, 1, 3, 4, 11),
        *(9, 9, 7, 5, 5, 6, 5, 0, 5, 9, 8, 4, 11, 3, 2),
    ]


def brute_force(train: pd.DataFrame, cells: np.ndarray, features, folds=None) -> tuple:
    """The definitions in plain numpy over the full distance matrices."""
    x = train[features].to_numpy(float)
    center, scale = x.mean(0), x.std(0, ddof=1)
    z, q = (x - center) / scale, (cells - center) / scale
    d = cdist(z, z)
    n = len(z)
    mean = d[~np.eye(n, dtype=bool)].mean()
    blocked = np.eye(n, dtype=bool) if folds is None else folds[:, None] == folds[None, :]
    tdi = np.where(blocked, np.inf, d).min(1) / mean
    q1, q3 = np.percentile(tdi, [25, 75])
    thr = min(q3 + 1.5 * (q3 - q1), tdi.max())
    ok = np.isfinite(q).all(1)
    di = np.full(len(q), np.nan)
    di[ok] = cdist(q[ok], z).min(1) / mean
    return tdi, thr, di


def test_cast_farm_definitions(farm):
    raster, train = farm
    folds = np.arange(len(train)) % 5
    whole = sd.aoa(train, raster, features=CAST_FEATURES, folds=folds)
    assert whole["di"].dims == ("y", "x") and whole["di"].shape == (58, 101)
    assert (whole["x"].values == raster["x"].values).all()
    tiled = sd.aoa(train, raster.chunk({"y": 16, "x": 25}), features=CAST_FEATURES, folds=folds)
    assert tiled["di"].data.npartitions == 4 * 5
    whole, tiled = whole.compute(), tiled.compute()
    xr.testing.assert_identical(whole, tiled)
    cells = np.stack([raster[f].values.ravel() for f in CAST_FEATURES], axis=1)
    tdi, thr, di = brute_force(train, cells, CAST_FEATURES, folds)
    np.testing.assert_allclose(whole["train_di"].values, tdi, rtol=1e-12)
    assert whole.attrs["threshold"] == pytest.approx(thr, rel=1e-12)
    np.testing.assert_allclose(whole["di"].values.ravel(), di, rtol=1e-9, atol=1e-12)
    # Training points' own cells have DI 0; the whisker keeps most training points inside.
    assert (whole["di"].values[train["row"], train["col"]] == 0).all()
    assert (whole["train_di"] <= whole.attrs["threshold"]).mean() >= 0.9
    share = float(whole["aoa"].mean())  # over cells with every predictor
    assert 0.3 < share < 1.0


def test_table_and_raster_inputs_agree(farm):
    raster, train = farm
    cells = raster[CAST_FEATURES].to_dataframe().reset_index(drop=True)
    on_raster = sd.aoa(train, raster, features=CAST_FEATURES, lpd=True).compute()
    on_frame = sd.aoa(train, cells, features=CAST_FEATURES, lpd=True)
    on_dask = sd.aoa(
        dd.from_pandas(train, npartitions=2),
        dd.from_pandas(cells, npartitions=7),
        features=CAST_FEATURES,
        lpd=True,
    )
    assert on_dask["di"].dims == ("row",) and on_dask["di"].chunks is not None
    on_dask = on_dask.compute()
    for name in ("di", "aoa", "lpd"):
        flat = on_raster[name].values.ravel()
        np.testing.assert_array_equal(on_frame[name].values, flat)
        np.testing.assert_array_equal(on_dask[name].values, flat)
    # A Table is a training or a new table too (its data's columns).
    table = sd.load_table(train, label="VW", features=CAST_FEATURES)
    again = sd.aoa(table, table, features=CAST_FEATURES)
    assert again.attrs["threshold"] == on_raster.attrs["threshold"]
    assert (again["di"].values == 0).all()


def test_train_di_object(farm):
    _, train = farm
    params = train_di(train, features=CAST_FEATURES)
    assert params.matrix.shape == (30, 3) and params.lpd is None
    np.testing.assert_allclose(params.matrix.std(0, ddof=1), 1.0)


# --- writing, the figure, the cluster -----------------------------------------------------


@pytest.mark.slow
def test_write_zarr_and_geotiff(farm, tmp_path):
    pytest.importorskip("rioxarray")
    from soak_dask.spatial.aoa_io import is_aoa_output

    raster, train = farm
    ds = sd.aoa(train, raster.chunk({"y": 20, "x": 50}), features=CAST_FEATURES, lpd=True)
    store = sd.write_aoa(ds, tmp_path / "aoa.zarr")
    back = xr.open_zarr(store, consolidated=False).compute()
    computed = ds.compute()
    layers = ["di", "aoa", "lpd", "train_di", "train_lpd"]
    xr.testing.assert_equal(back[layers], computed[layers])
    assert back.attrs["threshold"] == ds.attrs["threshold"] and is_aoa_output(store)
    tif = sd.write_aoa(ds, tmp_path / "aoa.tif")
    import rioxarray

    image = rioxarray.open_rasterio(tif)
    assert image.attrs["long_name"] == ("di", "aoa", "lpd") and image.shape == (3, 58, 101)
    np.testing.assert_allclose(image.sel(band=1).values, computed["di"].values, rtol=1e-6)
    assert float(image.attrs["threshold"]) == pytest.approx(ds.attrs["threshold"])
    # Existing paths: refused without overwrite; replaced with it only if write_aoa wrote them.
    with pytest.raises(FileExistsError, match="pass overwrite=True"):
        sd.write_aoa(ds, store)
    sd.write_aoa(ds, store, overwrite=True)
    sd.write_aoa(ds, tif, overwrite=True)
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    with pytest.raises(FileExistsError, match="not written by write_aoa"):
        sd.write_aoa(ds, foreign, overwrite=True)
    assert (foreign / "notes.txt").read_text() == "keep me"
    (tmp_path / "in").mkdir()
    with pytest.raises(ValueError, match="inside the input table's directory"):
        sd.write_aoa(ds, tmp_path / "in" / "aoa.zarr", sources=[tmp_path / "in"])
    table_ds = sd.aoa(train, train, features=CAST_FEATURES)
    with pytest.raises(ValueError, match="write a table's AOA to a Zarr store"):
        sd.write_aoa(table_ds, tmp_path / "rows.tif")


def test_plot_aoa(farm):
    import matplotlib.pyplot as plt

    raster, train = farm
    ds = sd.aoa(train, raster.chunk({"y": 20, "x": 50}), features=CAST_FEATURES)
    for fig in (
        sd.plot_aoa(ds),
        sd.plot_aoa(ds, max_cells=500),
        sd.plot_aoa(sd.aoa(train, train, features=CAST_FEATURES)),
    ):
        assert len(fig.axes) >= 2
        plt.close(fig)
    fig = sd.plot_aoa(ds)
    share = float(ds["aoa"].mean())
    assert any(f"AOA: {share:.0%} of cells with data inside" in ax.get_title() for ax in fig.axes)
    plt.close(fig)


@pytest.mark.slow
def test_lazy_zarr_raster_on_a_cluster(farm, cluster, tmp_path):
    """A raster read lazily from Zarr by two workers, the training matrix scattered once (not
    in the graph), the result lazy until written, equal to the local computation."""
    from distributed import Client

    raster, train = farm
    raster.chunk({"y": 16, "x": 32}).to_zarr(tmp_path / "raster.zarr", consolidated=False)
    local = sd.aoa(train, raster, features=CAST_FEATURES, lpd=True).compute()
    with Client(cluster) as client:
        lazy = xr.open_zarr(tmp_path / "raster.zarr", consolidated=False)
        ds = sd.aoa(train, lazy, features=CAST_FEATURES, lpd=True, client=client)
        assert ds["di"].chunks is not None and ds["di"].data.npartitions == 4 * 4
        graph = dict(ds["di"].data.__dask_graph__())
        big = [v for v in graph.values() if isinstance(v, np.ndarray) and v.size >= 90]
        assert not big  # the 30 x 3 training matrix is a scattered future
        out = sd.write_aoa(ds, tmp_path / "aoa.zarr")
        back = xr.open_zarr(out, consolidated=False).compute()
    for name in ("di", "aoa", "lpd"):
        np.testing.assert_array_equal(back[name].values, local[name].values)


# --- SOAK meets the AOA ----------------------------------------------------------------------


def regions_table(n: int = 360) -> pd.DataFrame:
    """Three regions; S's predictors are shifted far from NE's and NW's, and the response is
    curved, so a linear model does not carry over to S."""
    rng = np.random.default_rng(0)
    region = np.repeat(["NE", "NW", "S"], n // 3)
    x = rng.normal(size=(n, 2))
    x[region == "S"] += 6.0
    y = x[:, 0] ** 2 + rng.normal(scale=0.3, size=n)  # a linear model fitted near 0 fails at 6
    return pd.DataFrame({"x0": x[:, 0], "x1": x[:, 1], "region": region, "y": y})


@pytest.fixture(scope="module")
def regions():
    table = sd.load_table(regions_table(), label="y", subset="region")
    result = sd.soak(
        table, ["featureless", "linear"], n_folds=4, options=sd.RunOptions(progress=False)
    )
    return table, result, sd.aoa_coverage(result, table)


@pytest.mark.slow
def test_coverage_of_soak_train_sets(regions):
    table, result, covered = regions
    share = covered["aoa_share"]
    assert share.dims == ("test_subset", "fold", "train_type")
    assert (share.sel(test_subset="S", train_type="other") == 0).all()  # NE+NW never reach S
    assert (share.sel(train_type="same") > 0.7).all() and (share.sel(train_type="all") > 0.7).all()
    assert set(result.data_vars) < set(covered.data_vars)  # scores kept, beside the shares
    # One cell by hand: the folds soak assigned (same seed), the public aoa on its rows.
    keyed = sd.SameOtherAll(n_folds=4, seed=1).add_keys(table)
    frame = keyed.data.compute()
    train = frame[(frame["region"] == "NE") & (frame[keyed.fold] != 2)]
    test = frame[(frame["region"] == "NE") & (frame[keyed.fold] == 2)]
    direct = sd.aoa(train, test, features=["x0", "x1"], folds=keyed.fold)
    cell = covered.sel(test_subset="NE", fold=2, train_type="same")
    assert float(cell["aoa_share"]) == pytest.approx(float(direct["aoa"].mean()))
    assert float(cell["aoa_threshold"]) == pytest.approx(direct.attrs["threshold"])
    assert int(cell["aoa_train_rows"]) == len(train)


@pytest.mark.slow
def test_coverage_sentences(regions):
    _, _, covered = regions
    lines = sd.aoa_sentences(covered)
    other_s = next(line for line in lines if line.startswith("other") and " on S " in line)
    assert other_s.startswith("other fails on S (mse ")
    assert "100 % of S lies outside what NE+NW cover" in other_s
    with pytest.raises(ValueError, match="run soak_dask.aoa_coverage"):
        sd.aoa_sentences(covered.drop_vars("aoa_share"))


@pytest.mark.slow
def test_coverage_in_the_report(regions, tmp_path):
    _, _, covered = regions
    # One measure's figures: the section is the same whatever the measures.
    page = sd.write_report(covered, tmp_path / "report", "mse")
    text = page.read_text()
    assert 'id="aoa"' in text and "100 % of S lies outside what NE+NW cover" in text
    # Results without the shares get no such section.
    plain = sd.write_report(regions[1], tmp_path / "plain", "mse")
    assert 'id="aoa"' not in plain.read_text()


def test_coverage_of_a_transfer_matrix(regions):
    table, _, _ = regions
    result = sd.transfer(table, "linear", n_folds=4, options=sd.RunOptions(progress=False))
    covered = sd.aoa_coverage(result, table, train_folds=False)
    share = covered["aoa_share"].mean("fold")
    assert share.dims == ("train_subset", "test_subset")
    assert float(share.sel(train_subset="NE", test_subset="S")) == 0.0
    assert float(share.sel(train_subset="S", test_subset="S")) > 0.7
    lines = sd.aoa_sentences(covered)
    assert any(line.startswith("a model trained on NE fails on S") for line in lines)


@pytest.mark.slow
def test_coverage_refusals(regions):
    table, result, _ = regions
    with pytest.raises(ValueError, match=r"pass sample=N"):
        sd.aoa_coverage(result, table, max_train_rows=100)
    sampled = sd.aoa_coverage(result, table, max_train_rows=100, sample=60)
    rows = sampled["aoa_train_rows"]
    assert int(rows.max()) < 120 and sampled.attrs["aoa_sample"] == 60
    # Same seed, same sample.
    again = sd.aoa_coverage(result, table, max_train_rows=100, sample=60)
    xr.testing.assert_identical(sampled["aoa_share"], again["aoa_share"])
    other = sd.load_table(regions_table().assign(region=lambda d: d["region"] + "x"), "y", "region")
    with pytest.raises(ValueError, match="does not give this result's plan"):
        sd.aoa_coverage(result, other)
    with pytest.raises(ValueError, match="roles differ"):
        sd.aoa_coverage(result, sd.load_table(regions_table(), label="x1", subset="region"))
    two = sd.soak(table, "featureless", n_folds=2, options=sd.RunOptions(progress=False))
    with pytest.raises(ValueError, match="pass train_folds=False"):
        sd.aoa_coverage(two, table)


# --- the command line ------------------------------------------------------------------------


@pytest.mark.slow
def test_cli_end_to_end(farm, tmp_path, capsys):
    from distributed import LocalCluster

    from soak_dask.app import cli
    from soak_dask.io.outdir import MANIFEST

    raster, train = farm
    train.to_parquet(tmp_path / "train.parquet")
    raster.chunk({"y": 29, "x": 51}).to_zarr(tmp_path / "raster.zarr", consolidated=False)
    expected = sd.aoa(train, raster, features=CAST_FEATURES, lpd=True).compute()
    with LocalCluster(n_workers=1, processes=False, dashboard_address=":0") as cluster:
        flags = ["--features", ",".join(CAST_FEATURES), "--scheduler", cluster.scheduler_address]
        inputs = [str(tmp_path / "train.parquet"), str(tmp_path / "raster.zarr")]
        out = tmp_path / "out"
        assert cli.main(["aoa", *inputs, *flags, "--lpd", "--out", str(out)]) == 0
        printed = capsys.readouterr().out
        assert "threshold 0.5287" in printed
        assert f"inside the AOA: {float(expected['aoa'].mean()):.1%}" in printed
        assert {"aoa.zarr", "aoa.png", "aoa.json", "report.html", MANIFEST} <= {
            p.name for p in out.iterdir()
        }
        back = xr.open_zarr(out / "aoa.zarr", consolidated=False).compute()
        np.testing.assert_array_equal(back["di"].values, expected["di"].values)
        np.testing.assert_array_equal(back["lpd"].values, expected["lpd"].values)
        # A rerun into the same directory needs --overwrite, then replaces its own files.
        tif_flags = ["--out", str(out), "--format", "tif"]
        assert cli.main(["aoa", *inputs, *flags, *tif_flags]) != 0
        assert "--overwrite" in capsys.readouterr().err
        assert cli.main(["aoa", *inputs, *flags, *tif_flags, "--overwrite"]) == 0
        assert (out / "aoa.tif").is_file() and not (out / "aoa.zarr").exists()
        foreign = tmp_path / "foreign"
        foreign.mkdir()
        (foreign / "keep.txt").write_text("mine")
        assert cli.main(["aoa", *inputs, *flags, "--out", str(foreign)]) != 0
        assert "did not write" in capsys.readouterr().err
        # A GeoTIFF whose band descriptions name the bands (CAST's own file, read in place).
        tif = str(shared_file("cast", "predictors_2012-03-25.tif"))
        argv = ["aoa", inputs[0], tif, *flags, "--out", str(tmp_path / "from_tif")]
        assert cli.main(argv) == 0
        from_tif = xr.open_zarr(tmp_path / "from_tif" / "aoa.zarr", consolidated=False)
        np.testing.assert_array_equal(from_tif["di"].values, expected["di"].values)
        bad = ["--features", "DEM,NOPE", "--scheduler", cluster.scheduler_address]
        assert cli.main(["aoa", *inputs, *bad, "--out", str(tmp_path / "o2")]) != 0
        assert "feature 'NOPE' is not a variable of the raster" in capsys.readouterr().err


def test_duplicated_training_points_are_each_others_nearest():
    # CAST leaves out only the point itself: a duplicate elsewhere is at distance 0.
    train = pd.concat([SQUARE, SQUARE.iloc[[0]]], ignore_index=True)
    ds = sd.aoa(train, SQUARE, features=["a", "b"], lpd=True)
    assert ds["train_di"].values[[0, 5]].tolist() == [0.0, 0.0]
    assert ds["train_lpd"].values[[0, 5]].tolist() == [1, 1]  # each other, below threshold


@settings(max_examples=n_examples(25), deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(4, 14),
    st.integers(1, 3),
    st.integers(0, 2),
    st.floats(0.5, 4.0),
    st.floats(-10.0, 10.0),
)
def test_invariants(seed, n, p, n_dup, factor, shift):
    """The DI does not change when a predictor is rescaled or shifted (it is standardised) or
    the training rows are reordered; the threshold never exceeds the largest training DI.
    Points in general position (continuous values), with some exact duplicates."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, p))
    x[:n_dup] = x[n_dup : 2 * n_dup]
    cols = [f"f{i}" for i in range(p)]
    train = pd.DataFrame(x, columns=cols)
    new = pd.DataFrame(1.5 * rng.normal(size=(6, p)), columns=cols)
    ds = sd.aoa(train, new, features=cols, lpd=True)
    assert ds.attrs["threshold"] <= ds["train_di"].max()
    assert (ds["train_di"].values[:n_dup] == 0).all()
    moved = train.assign(f0=train["f0"] * factor + shift)
    again = sd.aoa(moved, new.assign(f0=new["f0"] * factor + shift), features=cols)
    np.testing.assert_allclose(again["di"].values, ds["di"].values, rtol=1e-9)
    order = rng.permutation(n)
    shuffled = sd.aoa(train.iloc[order], new, features=cols, lpd=True)
    np.testing.assert_allclose(shuffled["train_di"].values, ds["train_di"].values[order])
    np.testing.assert_allclose(shuffled["di"].values, ds["di"].values, rtol=1e-12)
    assert shuffled.attrs["threshold"] == pytest.approx(ds.attrs["threshold"], rel=1e-12)
    assert (shuffled["lpd"].values == ds["lpd"].values).all()
    assert (shuffled["train_lpd"].values == ds["train_lpd"].values[order]).all()


def test_blocks_larger_than_a_worker_are_refused():
    from soak_dask.spatial import aoa as module

    class Client:  # what check_block_memory reads of a distributed client: (limit, at rest)
        def run(self, func, **kwargs):
            return {"tcp://a": (2**21, 2**20)}  # 0.8 × 2 MiB less 1 MiB: 614 kiB for a task

    params = train_di(SQUARE, features=["a", "b"])
    match = r"raster chunk of 100,000 cells needs about .* MiB .* than the 614.40 kiB a worker"
    with pytest.raises(sd.FitMemoryError, match=match):
        module.check_block_memory(100_000, params, Client(), "raster chunk", "rechunk")
    module.check_block_memory(1_000, params, Client(), "raster chunk", "rechunk")  # fits


@pytest.mark.slow
def test_coverage_on_a_cluster_equals_local(regions, cluster):
    from distributed import Client

    table, result, covered = regions
    with Client(cluster) as client:
        on_cluster = sd.aoa_coverage(result, table, client=client)
    xr.testing.assert_identical(on_cluster["aoa_share"], covered["aoa_share"])
