"""The registry of result kinds (``soak_dask.results.registry``): every built-in kind is
registered whole, ``kind_of`` names what it cannot find, a second kind of a name is refused,
and a kind registered in one line is served by ``ds.soak``, ``soak report``'s ``render`` and
``open_results``, as the built-in ones are. ``results/`` imports nothing above it
(``scripts/house.py``)."""

from __future__ import annotations

import dataclasses
import html
import importlib.util
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import soak_dask as sd
import soak_dask.result_kinds  # noqa: F401  (the built-in kinds, as ds.soak registers them)
from soak_dask.app.render import render
from soak_dask.results.pages import Page, PageSection, PageTable, write_result_page
from soak_dask.results.registry import (
    ResultKind,
    kind_of,
    register_kind,
    registered,
    unregister_kind,
)
from soak_dask.results.soak_kinds import SOAK
from soak_dask.schema import DESIGN_DIMS

from ..conftest import toy_table

ROOT = Path(__file__).resolve().parents[2]
#: The kinds without paired tests: ``ds.soak.summary()`` summarises them.
UNTESTED = {"evaluate", "split_sensitivity", "compare_sampling"}


def test_every_built_in_kind_is_registered_with_every_field():
    kinds = {name: k for name, k in registered().items() if name in DESIGN_DIMS}
    assert list(kinds) == list(DESIGN_DIMS)  # the six designs, one registry line each
    for name, kind in kinds.items():
        assert kind.name == name and kind.dims == DESIGN_DIMS[name]
        assert callable(kind.summary) and callable(kind.text) and callable(kind.report)
        assert (kind.tests is None) == (name in UNTESTED), name
        assert kind.instead.strip(), name
    fields = {f.name for f in dataclasses.fields(ResultKind)}
    assert fields == {"name", "dims", "summary", "text", "report", "tests", "instead"}


def test_kind_of_an_unknown_design_names_it_and_the_known_kinds():
    ds = xr.Dataset({"x": ("trial", [1.0])}, attrs={"design": "tomorrow"})
    with pytest.raises(ValueError, match="'tomorrow'") as err:
        kind_of(ds)
    for name in DESIGN_DIMS:
        assert repr(name) in str(err.value), name
    assert kind_of(xr.Dataset()).name == "soak"  # saved before SOAK's had the attribute
    assert kind_of(xr.Dataset(attrs={"design": "search"})).name == "search_subsets"  # old name


def test_a_second_kind_of_a_name_and_malformed_kinds_are_refused():
    with pytest.raises(ValueError, match="'soak' is registered already.*unregister_kind"):
        register_kind(SOAK)
    with pytest.raises(ValueError, match="old name of the kind 'search_subsets'"):
        register_kind(dataclasses.replace(SOAK, name="search"))
    with pytest.raises(TypeError, match="takes a ResultKind, got dict"):
        register_kind({"name": "x"})
    with pytest.raises(TypeError, match="kind 'x': report must be callable"):
        dataclasses.replace(SOAK, name="x", report="report.html")
    with pytest.raises(TypeError, match="dims must be a tuple of str"):
        dataclasses.replace(SOAK, name="x", dims=["trial"])
    with pytest.raises(ValueError, match="non-empty str"):
        dataclasses.replace(SOAK, name="")
    with pytest.raises(KeyError, match="no result kind named 'nope'"):
        unregister_kind("nope")
    assert registered()["soak"] is SOAK  # nothing refused was registered or removed


# --- a new kind: one module and one registry line --------------------------------------------


def _coin_summary(ds: xr.Dataset, measures: object) -> pd.DataFrame:
    heads = ds["heads"]
    return pd.DataFrame({"coin": ds["coin"].values, "heads": heads.mean("trial").values})


def _coin_text(ds: xr.Dataset) -> str:
    return "\n".join(
        f"{row.coin}: {row.heads:.2f} heads over {ds.sizes['trial']} trials"
        for row in _coin_summary(ds, None).itertuples()
    )


def _coin_page(ds: xr.Dataset) -> Page:
    table = PageTable("heads", "Share of heads per coin", _coin_summary(ds, None))
    return Page(
        "coin flips",
        "Which coin is fair?",
        "<p>Each trial flips every coin once.</p>",
        (PageSection("heads", "Heads", tables=(table,)),),
        "<p>no settings</p>",
    )


COINS = ResultKind(
    name="coin_flips",
    dims=("coin", "trial"),
    summary=_coin_summary,
    text=_coin_text,
    report=lambda ds, out, overwrite: write_result_page(ds, out, overwrite, _coin_page),
)


@pytest.fixture
def coins():
    """A result of the kind ``coin_flips``, registered for the test and removed after it."""
    register_kind(COINS)  # the one registry line
    try:
        flips = np.array([[1, 0, 1, 1], [0, 0, 1, 0]], dtype=float)
        yield xr.Dataset(
            {"heads": (("coin", "trial"), flips)},
            coords={"coin": np.array(["euro", "dime"], dtype=object), "trial": [1, 2, 3, 4]},
            attrs={"design": "coin_flips"},
        )
    finally:
        unregister_kind("coin_flips")


def test_a_new_kind_is_served_by_the_accessor_render_and_open_results(coins, tmp_path):
    assert coins.soak.kind == "coin_flips" and kind_of(coins) is COINS
    summary = coins.soak.summary()
    assert summary["heads"].tolist() == [0.75, 0.25]
    with pytest.raises(ValueError, match="coin_flips results hold no paired test; ds.soak.summ"):
        coins.soak.pvalues()
    text, page = render(coins, tmp_path / "report")
    assert text == "euro: 0.75 heads over 4 trials\ndime: 0.25 heads over 4 trials"
    assert page == tmp_path / "report" / "report.html"
    shown = html.unescape(page.read_text(encoding="utf-8"))
    assert "Share of heads per coin" in shown and "0.75" in shown
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "report" / "heads.csv"), summary)
    with pytest.raises(FileExistsError, match="--overwrite"):  # checked as every report is
        render(coins, tmp_path / "report")
    store = sd.save_results(coins, tmp_path / "coins.zarr")
    xr.testing.assert_equal(sd.open_results(store), coins)
    unregister_kind("coin_flips")
    try:
        with pytest.raises(ValueError, match="unknown kind design='coin_flips'.*register it"):
            sd.open_results(store)
        with pytest.raises(ValueError, match="'coin_flips'.*registered: \\[.*'soak'"):
            render(coins, tmp_path / "again")
    finally:
        register_kind(COINS)  # the fixture removes it
    assert not (tmp_path / "again").exists()


# --- options of a kind's tests ----------------------------------------------------------------


@pytest.fixture(scope="module")
def matrix() -> xr.Dataset:
    table = sd.load_table(toy_table(n=160, n_subsets=2, seed=5), label="y", subset="subset")
    return sd.transfer(
        table, ["featureless", "logistic"], n_folds=3, options=sd.RunOptions(progress=False)
    )


@pytest.mark.slow
def test_the_tests_take_the_kind_s_own_options_and_refuse_others(matrix):
    from soak_dask.pooling.matrix import transfer_pvalues

    pd.testing.assert_frame_equal(matrix.soak.pvalues(), transfer_pvalues(matrix))
    pd.testing.assert_frame_equal(
        matrix.soak.pvalues("error", alpha=0.5), transfer_pvalues(matrix, "error", alpha=0.5)
    )
    pd.testing.assert_frame_equal(matrix.soak.summary(["error"]), transfer_pvalues(matrix, "error"))
    with pytest.raises(TypeError, match="corrected"):  # SOAK's option: not silently dropped
        matrix.soak.pvalues(corrected=True)


# --- results/ imports nothing above it ---------------------------------------------------------


def test_an_import_from_results_into_a_design_package_climbs_a_floor(tmp_path):
    spec = importlib.util.spec_from_file_location("house_rules", ROOT / "scripts" / "house.py")
    house = importlib.util.module_from_spec(spec)
    sys.modules["house_rules"] = house  # dataclasses look their module up
    spec.loader.exec_module(house)
    files = {
        "results/accessor.py": "def f():\n    from ..pooling import matrix\n",
        "results/report.py": "from ..spatial.aoa import x\n",
        "pooling/matrix.py": "from ..results import accessor\n",  # down: fine
        "spatial/aoa.py": "x = 1\n",
        "result_kinds.py": "from .pooling import matrix\nfrom .results import accessor\n",
        "app/render.py": "from .. import result_kinds\n",  # down: fine
    }
    for name, source in {"__init__.py": "", **files}.items():
        path = tmp_path / "soak_dask" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        (path.parent / "__init__.py").touch()
        path.write_text(textwrap.dedent(source))
    found = [(v.rule, v.key) for v in house.scan(tmp_path)]
    assert found == [
        ("floor", "soak_dask.results.accessor soak_dask.pooling.matrix"),
        ("floor", "soak_dask.results.report soak_dask.spatial.aoa"),
    ]


@pytest.mark.slow
def test_the_package_s_kind_of_knows_the_built_in_kinds_in_a_fresh_process():
    """``sd.kind_of`` right after ``import soak_dask`` (no accessor used yet) finds every
    built-in kind: the package exports it from ``soak_dask.result_kinds``."""
    import subprocess

    code = (
        "import soak_dask as sd, xarray as xr; "
        "print(sd.kind_of(xr.Dataset(attrs={'design': 'transfer'})).name)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "transfer"
    assert sd.kind_of is kind_of and sd.ResultKind is ResultKind
