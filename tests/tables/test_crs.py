"""Issue 42, item 2: the CRS is part of the coordinates role. ``load_table`` reads it from
GeoParquet's ``geo`` metadata or the key ``soak extract`` writes, or takes it given
(``crs=``, ``--crs``), refusing two that differ; the spatial functions then give distances in
its unit and refuse degrees where they measure squares or distances."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyproj")  # installed with the raster extra and the dev one

import soak_dask as sd  # noqa: E402
from soak_dask.app import cli  # noqa: E402
from soak_dask.tables.crs import CRS_KEY, metric_only, unit_symbol  # noqa: E402


def frame(n: int = 200, seed: int = 0, scale: float = 1000.0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {"x": rng.uniform(0, scale, n), "y": rng.uniform(0, scale, n),
         "b": rng.normal(size=n), "label": rng.normal(size=n)}
    )  # fmt: skip


def write(df: pd.DataFrame, path, metadata: dict[bytes, bytes]) -> str:
    table = pa.Table.from_pandas(df, preserve_index=False)
    pq.write_table(table.replace_schema_metadata({**table.schema.metadata, **metadata}), path)
    return str(path)


def geo(crs) -> dict[bytes, bytes]:
    """GeoParquet metadata of a point geometry column in ``crs`` (PROJJSON or absent)."""
    column = {"encoding": "WKB", "geometry_types": ["Point"]}
    if crs != "absent":
        column["crs"] = crs
    return {b"geo": json.dumps({"version": "1.1.0", "primary_column": "geometry",
                                "columns": {"geometry": column}}).encode()}  # fmt: skip


def projjson(code: str) -> dict:
    from pyproj import CRS

    return CRS.from_user_input(code).to_json_dict()


def test_the_crs_is_read_from_the_files(tmp_path):
    roles = {"label": "label", "coords": ["x", "y"]}
    utm = write(frame(), tmp_path / "utm.parquet", geo(projjson("EPSG:32632")))
    assert sd.load_table(utm, **roles).crs == "EPSG:32632"
    # GeoParquet without a crs key means OGC:CRS84 (lon/lat); "crs": null means unknown.
    assert sd.load_table(write(frame(), tmp_path / "a.parquet", geo("absent")), **roles).crs == (
        "OGC:CRS84"
    )
    assert sd.load_table(write(frame(), tmp_path / "n.parquet", geo(None)), **roles).crs is None
    extracted = write(frame(), tmp_path / "e.parquet", {CRS_KEY: b"EPSG:26911"})
    assert sd.load_table(extracted, **roles).crs == "EPSG:26911"
    # Without coordinate columns the CRS describes nothing: not kept.
    assert sd.load_table(utm, label="label", exclude=["x", "y"]).crs is None


def test_a_given_crs_is_kept_and_checked(tmp_path):
    roles = {"label": "label", "coords": ["x", "y"]}
    assert sd.load_table(frame(), **roles, crs=32632).crs == "EPSG:32632"
    utm = write(frame(), tmp_path / "utm.parquet", geo(projjson("EPSG:32632")))
    assert sd.load_table(utm, **roles, crs="EPSG:32632").crs == "EPSG:32632"
    with pytest.raises(ValueError, match=r"crs='EPSG:26911', and .*utm.parquet says .*EPSG:32632"):
        sd.load_table(utm, **roles, crs="EPSG:26911")
    with pytest.raises(ValueError, match="crs=32632 names the CRS of the coordinate columns"):
        sd.load_table(frame(), label="label", crs=32632)
    with pytest.raises(ValueError, match="crs='EPSG:99999999' is not a coordinate reference"):
        sd.load_table(frame(), **roles, crs="EPSG:99999999")


def test_results_record_the_crs_beside_the_coordinates():
    table = sd.load_table(frame(), label="label", coords=["x", "y"], crs=32632)
    assert table.roles["coords"] == ["x", "y"] and table.roles["crs"] == "EPSG:32632"
    res = sd.evaluate(table, "featureless", outer_folds=2, options=sd.RunOptions(progress=False))
    assert (res.attrs["coords"], res.attrs["crs"]) == (["x", "y"], "EPSG:32632")
    assert "crs" not in sd.load_table(frame(), label="label", coords=["x", "y"]).roles


def test_degrees_are_refused_where_metres_are_needed():
    lonlat = sd.load_table(frame(scale=1.0), label="label", coords=["x", "y"], crs="EPSG:4326")
    for call, name in [
        (lambda: sd.spatial_blocks(lonlat, 0.1), "spatial_blocks"),
        (lambda: sd.spatial_clusters(lonlat, 3), "spatial_clusters"),
        (lambda: sd.spatial_range(lonlat, n_boot=0), "spatial_range"),
        (lambda: sd.fold_summary(sd.assign_folds(lonlat, n_folds=2)), "fold_summary"),
        (lambda: sd.knndm_folds(lonlat, frame(scale=1.0), n_folds=3), "knndm_folds"),
        (lambda: sd.nndm_folds(lonlat, frame(scale=1.0)), "nndm_folds"),
    ]:
        with pytest.raises(ValueError, match=rf"^{name}: the coordinates are longitude and "):
            call()
    # kNNDM takes the CRS of either input: a table without one against degrees is refused.
    plain = sd.load_table(frame(scale=1.0), label="label", coords=["x", "y"])
    with pytest.raises(ValueError, match=r"^knndm_folds: the coordinates are longitude"):
        sd.knndm_folds(plain, lonlat, n_folds=3)
    metric_only("EPSG:32632", "x")  # a projected CRS passes
    metric_only(None, "x")  # and so does an unknown one


def test_distances_are_in_the_crs_unit():
    assert unit_symbol("EPSG:32632") == "m" and unit_symbol(None) is None
    assert unit_symbol("EPSG:2263") == "US survey ft"  # New York State Plane, US survey feet
    metres = sd.load_table(frame(), label="label", coords=["x", "y"], crs="EPSG:32632")
    assert sd.spatial_range(metres, n_boot=0).unit == "m"
    plain = sd.load_table(frame(), label="label", coords=["x", "y"])
    assert sd.spatial_range(plain, n_boot=0).unit == "coordinate units"
    assert sd.spatial_range(metres, n_boot=0, unit="km").unit == "km"  # given wins


def test_the_command_line_takes_crs(tmp_path, capsys):
    path = tmp_path / "t.parquet"
    frame(scale=1.0).to_parquet(path)
    argv = ["info", str(path), "--label", "label", "--coords", "x,y", "--blocks", "0.1"]
    assert cli.main([*argv, "--crs", "EPSG:4326"]) == 2
    assert "spatial_blocks: the coordinates are longitude and latitude" in capsys.readouterr().err
    assert cli.main([*argv, "--crs", "EPSG:32632"]) == 0
