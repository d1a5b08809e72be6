"""The exact-share draw (soak_dask.split.shares) and the designs that use it: every share in
(0, 1) honoured to the row (to a group with groups), refused when a side would be empty, the
share used recorded, the same keys whatever the partitioning, and key columns computed
partition by partition (no repartition into fewer partitions) with every repeat in one pass."""

from __future__ import annotations

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from dask.callbacks import Callback
from hypothesis import given, settings
from hypothesis import strategies as st

import soak_dask as sd
from soak_dask.split import shares
from soak_dask.split.outer import Bootstrap, Subsampling, reserve
from soak_dask.split.sampling import random_split, stratified_split
from soak_dask.split.shares import add_draws, check_sides, ranks, share_sizes
from soak_dask.split.trials import SplitTrials

from ..conftest import n_examples


@pytest.fixture(autouse=True)
def _sync():
    with dask.config.set(scheduler="sync"):
        yield


def frame(n: int = 400, seed: int = 0, groups: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "a": rng.normal(size=n),
            "b": rng.normal(size=n),
            "y": rng.choice(["p", "q", "r"], n, p=[0.6, 0.3, 0.1]),
            "s": rng.choice(["u", "v"], n),
        }
    )
    return df.assign(g=rng.integers(0, groups, n)) if groups else df


def table(df: pd.DataFrame, parts: int = 1, **kw) -> sd.Table:
    data = dd.from_pandas(df, npartitions=parts, sort=False)
    return sd.load_table(data, label="y", features=["a", "b"], subset="s", **kw)


# --- the draw ----------------------------------------------------------------------------------


@settings(max_examples=n_examples(60), deadline=None)
@given(n=st.integers(1, 3000), seed=st.integers(0, 2**32 - 1), draw=st.integers(1, 100))
def test_ranks_are_a_permutation(n, seed, draw):
    r = ranks(np.zeros(n, int), np.arange(n), np.array([n]), seed, draw, "test")
    assert np.array_equal(np.sort(r), np.arange(n))


@settings(max_examples=n_examples(40), deadline=None)
@given(
    rows=st.lists(st.integers(0, 300), min_size=1, max_size=6),
    share=st.floats(0.0001, 0.9999),
    seed=st.integers(0, 2**32 - 1),
)
def test_share_sizes_exact(rows, share, seed):
    rows = np.array(rows)
    sizes = share_sizes(rows, share, seed)
    assert sizes.sum() == round(rows.sum() * share)
    assert (sizes >= np.floor(rows * share)).all() and (sizes <= np.ceil(rows * share)).all()


@settings(max_examples=n_examples(25), deadline=None)
@given(
    n=st.integers(30, 400),
    parts=st.integers(2, 7),
    share=st.sampled_from([0.001, 0.01, 0.2, 0.37, 0.5, 0.8, 0.99, 0.999]),
    seed=st.integers(0, 2**32 - 1),
)
def test_draw_exact_and_independent_of_partitioning(n, parts, share, seed):
    """round(share·N) rows per draw, split class by class within subsets by largest
    remainder, and the same rows whatever the partitioning; refused when a side is empty."""
    df = frame(n, seed=n)
    keys = ["s", "y"]

    def drawn(p):
        data, used = add_draws(
            table(df, p).data, share, seed, names=["d1", "d2"], keys=keys, purpose="t",
            option="share",
        )  # fmt: skip
        return data[["d1", "d2"]].compute(), used

    m = round(n * share)
    if not 0 < m < n:
        with pytest.raises(ValueError, match=f"share={share:g} draws {m:,} of the table's"):
            drawn(1)
        return
    one, used = drawn(1)
    pd.testing.assert_frame_equal(one, drawn(parts)[0])
    assert (one.sum() == m).all() and np.allclose(used, m / n)
    strata = df.groupby(keys).size()
    expected = share_sizes(strata.to_numpy(), share, seed)
    np.testing.assert_array_equal(one["d1"].groupby([df[k] for k in keys]).sum(), expected)
    if min(m, n - m) >= 5:  # two draws alike by chance: under 1 in 100 000
        assert not one["d1"].equals(one["d2"])


def test_groups_drawn_whole_to_within_a_group():
    df = frame(600, groups=40)
    for share in (0.05, 0.3, 0.9):
        data, used = add_draws(
            table(df, 3, group="g").data, share, 5, names=["d"], keys=[], group="g",
            purpose="t", option="share",
        )  # fmt: skip
        got = data[["g", "d"]].compute()
        assert (got.groupby("g")["d"].nunique() == 1).all()
        largest = df["g"].value_counts().max()
        assert abs(got["d"].sum() - share * len(df)) <= largest / 2 + 1e-9
        assert used[0] == pytest.approx(got["d"].mean())


def test_check_sides_names_the_possible_shares():
    with pytest.raises(ValueError, match=r"test_split=0.001 draws 0 of the table's 400 rows.*"
                       r"from 0.0025 to 0.9975"):  # fmt: skip
        check_sides(400, 0, 0.001, "test_split")
    with pytest.raises(ValueError, match="no share splits it"):
        check_sides(1, 1, 0.5, "share")


# --- the designs honour every share ------------------------------------------------------------


@pytest.mark.parametrize(
    "share", [0.2, *(pytest.param(s, marks=pytest.mark.slow) for s in (0.01, 0.05, 0.33, 0.5))]
)
def test_evaluate_test_split_honoured(share):
    df = frame(400)
    ds = sd.evaluate(
        table(df), ["featureless"], test_split=share, options=sd.RunOptions(progress=False)
    )
    assert int(ds["n_test_split"].item()) == round(400 * share)
    assert ds.attrs["test_split"] == round(400 * share) / 400
    assert (ds["n_train"] + ds["n_test"] == 400 - round(400 * share)).all()


@pytest.mark.parametrize("ratio", [0.001, 0.01, 0.3, 0.8, 0.99])
def test_subsampling_train_ratio_honoured(ratio):
    df = frame(400)
    m = round(400 * ratio)
    call = lambda: sd.evaluate(  # noqa: E731
        table(df), ["featureless"], outer="subsampling", train_ratio=ratio, outer_repeats=3,
        options=sd.RunOptions(progress=False),
    )  # fmt: skip
    if m == 0:
        with pytest.raises(ValueError, match="train_ratio=0.001 draws 0 of the table's 400"):
            call()
        return
    ds = call()
    assert (ds["n_train"] == m).all() and (ds["n_test"] == 400 - m).all()
    assert ds.attrs["train_ratio"] == pytest.approx(m / 400)


@pytest.mark.parametrize("ratio", [0.05, 0.99])
def test_split_sensitivity_ratio_honoured(ratio):
    df = frame(400)
    ds = sd.split_sensitivity(
        table(df),
        "featureless",
        design=sd.SplitTrials(ratios=(ratio,), n_repeats=3, n_folds=2),
        options=sd.RunOptions(progress=False),
    )
    m = round(400 * ratio)
    assert (ds["n_train"] == m).all() and float(ds["ratio_used"].item()) == m / 400
    assert float(ds["ratio"].item()) == ratio


@pytest.mark.parametrize("ratio", [0.01, 0.99])
def test_sampling_draws_honoured(ratio):
    df = frame(400)
    for split in (random_split, stratified_split):
        got = split(table(df, 3), ratio, seed=2).data["train"].compute()
        assert int(got.sum()) == round(400 * ratio)


def test_reserve_grouped_records_the_share():
    df = frame(500, groups=25)
    rest, held, share = reserve(table(df, 2, group="g"), 0.2, 1)
    held, rest = held.compute(), rest.data.compute()
    assert set(held["g"]).isdisjoint(rest["g"])
    assert share == len(held) / 500
    assert abs(len(held) - 100) <= df["g"].value_counts().max()


# --- per partition, one pass, the same whatever the partitioning -------------------------------


class _Tasks(Callback):
    """Names of the tasks run (sync scheduler)."""

    def __init__(self):
        super().__init__()
        self.names: list[str] = []

    def _pretask(self, key, dsk, state):
        name = key[0] if isinstance(key, tuple) else key
        self.names.append(str(name))


def _designs(t):
    yield "subsampling", lambda: Subsampling(30, 0.7).add_keys(t).data
    yield "bootstrap", lambda: Bootstrap(30).add_keys(t).data
    yield "reserve", lambda: reserve(t, 0.1, 1)[0].data
    yield "trials", lambda: SplitTrials([0.6, 0.8], 5, 3).add_keys(t).data
    yield "random", lambda: random_split(t, 0.7).data


@pytest.mark.parametrize("name", ["subsampling", "bootstrap", "reserve", "trials", "random"])
def test_keys_per_partition_without_repartitioning(name):
    """The keys' graph has no repartition layer, no task run while they are computed gathers
    partitions, and the partitions are read a few times in all (counts, then the keys of all
    repeats at once) -- not once per repeat."""
    df = frame(600)
    t = table(df, 4)
    make = dict(_designs(t))[name]
    with _Tasks() as tasks:
        data = make()
        graph = dict(data.__dask_graph__())
        dask.compute(*data.to_delayed())  # as the fits read it: partition by partition
    names = {str(k[0] if isinstance(k, tuple) else k) for k in graph} | set(tasks.names)
    assert not [n for n in names if "repartition" in n]
    # 30 repeats (10 trials): a pass per repeat would be 120 tasks and more; a few per
    # partition are a count (and lengths) pass and one pass adding every key column.
    assert len(tasks.names) <= 6 * 4 + 2


@pytest.mark.slow
@settings(max_examples=n_examples(3), deadline=None)
@given(parts=st.integers(2, 6), seed=st.integers(0, 2**32 - 1))
def test_design_keys_equal_across_partitionings(parts, seed):
    df = frame(300, seed=1)
    makers = {
        "subsampling": lambda t: Subsampling(3, 0.7, seed).add_keys(t).data,
        "bootstrap": lambda t: Bootstrap(3, seed).add_keys(t).data,
        "trials": lambda t: SplitTrials([0.7], 3, 2, seed).add_keys(t).data,
    }
    for name, make in makers.items():
        one, many = make(table(df, 1)).compute(), make(table(df, parts)).compute()
        keys = [c for c in one.columns if c.startswith("__soak")]
        assert keys, name
        pd.testing.assert_frame_equal(one[keys], many[keys])
    kept = [reserve(table(df, p), 0.15, seed)[1].compute().index for p in (1, parts)]
    assert kept[0].equals(kept[1])


def test_counts_shared_within_a_run_only(monkeypatch):
    """Inside ``counts_shared`` the same data and keys are counted once (other keys or other
    data apart); outside it every call counts, so data rewritten between runs is counted
    afresh."""
    calls = []
    real = shares._count_strata
    monkeypatch.setattr(shares, "_count_strata", lambda d, k, r: calls.append(k) or real(d, k, r))
    data = dd.from_pandas(frame(), npartitions=3)
    with shares.counts_shared():
        first = shares.count_strata(data, ["s", "y"])
        again = shares.count_strata(data, ("s", "y"))
        shares.count_strata(data, ["s"])
        shares.count_strata(data[data["a"] > 0], ["s", "y"])
        with shares.counts_shared():  # a run inside a run shares the outer run's counts
            shares.count_strata(data, ["s", "y"])
    assert again is first and len(calls) == 3
    shares.count_strata(data, ["s", "y"])
    assert len(calls) == 4
    np.testing.assert_array_equal(
        first.counts.sum(axis=0), first.frame().groupby(["s", "y"])["n"].sum()
    )
    assert first.totals("y").to_dict() == frame()["y"].value_counts().to_dict()


@pytest.mark.parametrize("outer", ["cv", "repeated_cv"])
def test_evaluate_counts_the_strata_once(monkeypatch, outer):
    """K capped by the rarest class, every repeat's folds and the classes come from one count
    of (subset, class), not a pass each."""
    calls = []
    real = shares._count_strata
    monkeypatch.setattr(shares, "_count_strata", lambda d, k, r: calls.append(k) or real(d, k, r))
    table = sd.load_table(dd.from_pandas(frame(), npartitions=3), label="y", subset="s")
    repeats = {"outer_repeats": 3} if outer == "repeated_cv" else {}
    res = sd.evaluate(
        table,
        "featureless",
        outer=outer,
        outer_folds=4,
        **repeats,
        measures="error",
        options=sd.RunOptions(progress=False),
    )
    assert calls == [("s", "y")]
    assert res.attrs["classes"] == ["p", "q", "r"]
    assert res.sizes["repeat"] == repeats.get("outer_repeats", 1)
