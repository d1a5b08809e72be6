"""Fold assignment: every row one fold, exact balance, whole groups, determinism."""

from __future__ import annotations

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import soak_dask as sd
from soak_dask.hashing import seeded_hash
from soak_dask.split.folds import group_folds, permuted_block_folds, row_fold_counts
from soak_dask.split.outer import KFoldDesign, LeaveOneGroupOutDesign, key_name, repeat_seed
from soak_dask.split.shares import counts_shared
from soak_dask.tables.table import FOLD_COLUMN

from ..conftest import n_examples, toy_table


def _folds(
    df: pd.DataFrame, npartitions: int, k: int, seed: int, assignment: str = "rows", **roles
) -> pd.Series:
    ddf = dd.from_pandas(df, npartitions=npartitions, sort=False)
    table = sd.load_table(ddf, label="y", **roles)
    table = sd.assign_folds(table, k, seed, group_assignment=assignment)
    return table.data[FOLD_COLUMN].compute().sort_index()


# The property tests check the folds' arithmetic on many examples in pandas, and that the
# cluster's folds (through Dask, about 0.1 CPU s a pass) are the same on a few: pandas gives
# the folds every partitioning must give. ``SameOtherAllCV.folds`` deals the rows in
# memory as ``assign_folds`` does on the cluster (test_splitter_folds_equal_cluster_folds),
# and ``group_folds`` deals whole groups as it does.
def _memory_folds(df: pd.DataFrame, k: int, seed: int) -> pd.Series:
    """The row folds ``assign_folds`` gives ``df`` (subset "s", label "y"), dealt in memory."""
    folds = sd.SameOtherAllCV(df["s"], n_splits=k, random_state=seed).folds(df, df["y"])
    return pd.Series(folds, index=df.index, name=FOLD_COLUMN).astype(np.int8)


def _memory_group_folds(df: pd.DataFrame, k: int, seed: int, stratify: bool, assignment: str):
    """Whole-group folds of ``df`` (group "g") dealt by ``group_folds`` in memory, strata by
    subset (and label where ``stratify``) coded in sorted order as on the cluster."""
    keys = ["s", "y"] if stratify else ["s"]
    sizes = df.groupby(["g", *keys]).size().rename("n").reset_index()
    groups = sizes.assign(stratum=sizes.groupby(keys).ngroup()).rename(columns={"g": "group"})
    mapping = group_folds(groups[["group", "stratum", "n"]], k, seed, assignment)
    return pd.Series(mapping.reindex(df["g"]).to_numpy(), index=df.index).astype(np.int8)


frames = st.integers(20, 400).flatmap(
    lambda n: st.tuples(
        st.lists(st.sampled_from("ABC"), min_size=n, max_size=n),
        st.lists(st.sampled_from(["p", "q"]), min_size=n, max_size=n),
        st.lists(st.integers(0, 40), min_size=n, max_size=n),
    )
)


@settings(max_examples=n_examples(25), deadline=None)
@given(frames, st.integers(2, 7), st.integers(0, 2**31))
def test_row_folds_balanced(data, k, seed):
    subset, y, _ = data
    df = pd.DataFrame({"x1": np.arange(len(y), dtype=float), "s": subset, "y": y})
    folds = _memory_folds(df, k, seed)
    assert folds.between(1, k).all() and len(folds) == len(df)
    sizes = df.assign(f=folds).groupby(["s", "y", "f"]).size().unstack(fill_value=0)
    for _, row in sizes.iterrows():
        full = row.reindex(range(1, k + 1), fill_value=0)
        assert full.max() - full.min() <= 1


@settings(max_examples=n_examples(4), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frames, st.integers(2, 7), st.integers(0, 2**31), st.integers(1, 7))
def test_row_folds_on_the_cluster_are_the_same_whatever_the_partitioning(data, k, seed, nparts):
    subset, y, _ = data
    df = pd.DataFrame({"x1": np.arange(len(y), dtype=float), "s": subset, "y": y})
    assert _folds(df, nparts, k, seed, subset="s").equals(_memory_folds(df, k, seed))


@settings(max_examples=n_examples(5), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frames, st.integers(2, 7), st.integers(0, 2**31), st.integers(1, 5), st.integers(1, 4))
def test_repeats_folds_from_one_function_equal_each_repeat_assigned_alone(
    data, k, seed, nparts, repeats
):
    subset, y, _ = data
    df = pd.DataFrame({"x1": np.arange(len(y), dtype=float), "s": subset, "y": y})
    design = KFoldDesign(k, n_repeats=repeats, seed=seed)
    table = sd.load_table(dd.from_pandas(df, npartitions=nparts, sort=False), label="y", subset="s")
    keyed = design.add_keys(table).data.compute().sort_index()
    k = design.learned_["outer_folds"]
    for r in range(1, repeats + 1):  # as assign_folds deals them with the repeat's seed
        alone = _memory_folds(df, k, repeat_seed(seed, r))
        assert keyed[key_name("fold", r)].equals(alone.rename(key_name("fold", r))), r


@settings(max_examples=n_examples(6), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frames, st.integers(2, 4), st.integers(0, 2**31), st.integers(1, 4), st.integers(1, 3),
       st.sampled_from(["rows", "mlr3resampling"]))  # fmt: skip
def test_repeats_group_folds_from_one_count_equal_each_repeat_assigned_alone(
    data, k, seed, nparts, repeats, assignment
):
    subset, y, g = data
    df = pd.DataFrame({"x1": np.arange(len(y), dtype=float), "s": subset, "y": y})
    df["g"] = df["s"] + pd.Series(g).astype(str)  # a group in one subset; classes may mix
    roles = {"label": "y", "subset": "s", "group": "g"}
    design = KFoldDesign(k, n_repeats=repeats, seed=seed, group_assignment=assignment)
    table = sd.load_table(dd.from_pandas(df, npartitions=nparts, sort=False), **roles)
    single = df.groupby("g")["y"].nunique().max() == 1  # classes balanced group by group
    try:
        keyed = design.add_keys(table).data.compute().sort_index()
    except ValueError as err:  # too few groups for K folds, or of a class: refused
        assert "fewer groups" in str(err) or "groups of the rarest class" in str(err), err
        return
    k = design.learned_["outer_folds"]
    for r in range(1, repeats + 1):  # as assign_folds deals them with the repeat's seed
        want = _memory_group_folds(df, k, repeat_seed(seed, r), single, assignment)
        assert keyed[key_name("fold", r)].equals(want.rename(key_name("fold", r))), r
        assert (keyed.groupby("g")[key_name("fold", r)].nunique() == 1).all()
    # where a group mixes classes its folds are dealt by subset alone: no counts by class
    assert single or design.counts_ is None


@pytest.mark.parametrize("repeats", [1, 3])
@pytest.mark.parametrize("assignment", ["rows", "mlr3resampling"])
def test_group_folds_counts_follow_from_the_groups(repeats, assignment):
    """Groups of one class each: the folds' rows per (subset, class, fold of every repeat)
    come from the groups' sizes, equal to the keyed table's, for K-fold and assign_folds."""
    rng = np.random.default_rng(repeats)
    groups = rng.integers(0, 80, 900)
    df = pd.DataFrame({"x1": rng.normal(size=900), "s": np.where(groups % 2, "a", "b")})
    df["g"], df["y"] = groups, np.where(groups % 3 == 0, "p", "q")  # one class a group
    data = dd.from_pandas(df, npartitions=3, sort=False)
    table = sd.load_table(data, label="y", subset="s", group="g")
    design = KFoldDesign(4, n_repeats=repeats, seed=7, group_assignment=assignment)
    keyed = design.add_keys(table).data.compute()
    keys = ["s", "y", *(key_name("fold", r) for r in range(1, repeats + 1))]
    counted = keyed.groupby(keys).size().rename("n").reset_index()
    got = design.counts_[[*keys, "n"]].sort_values(keys).reset_index(drop=True)
    pd.testing.assert_frame_equal(got, counted, check_dtype=False)
    once = sd.assign_folds(table, 4, 7, group_assignment=assignment)
    blocks = ["s", FOLD_COLUMN, "y"]
    counted = once.data[blocks].compute().groupby(blocks).size().rename("n")
    got = once.fold_counts.set_index(blocks)["n"].sort_index()
    pd.testing.assert_series_equal(got, counted, check_dtype=False, check_index_type=False)


@settings(max_examples=n_examples(25), deadline=None)
@given(frames, st.integers(2, 7), st.integers(0, 2**31), st.booleans())
def test_fold_counts_from_the_strata_sizes_equal_counted(data, k, seed, regression):
    """The rows per (stratum, fold) that follow from the strata's sizes (``row_fold_counts``)
    are those of the folds dealt."""
    subset, y, _ = data
    df = pd.DataFrame({"x1": np.arange(len(y), dtype=float), "s": subset, "y": y})
    if regression:
        df["y"] = (df["y"] == "p") * 1.5
    keys = ["s"] + ([] if regression else ["y"])
    folded = df.assign(**{FOLD_COLUMN: _memory_folds(df, k, seed)})
    counted = folded.groupby([*keys, FOLD_COLUMN]).size().rename("n").reset_index()
    got = row_fold_counts(df.groupby(keys).size().sort_index(), k, seed)
    order = [*keys, FOLD_COLUMN]
    pd.testing.assert_frame_equal(
        got.sort_values(order).reset_index(drop=True),
        counted.sort_values(order).reset_index(drop=True),
        check_dtype=False,
    )


@settings(max_examples=n_examples(4), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frames, st.integers(2, 7), st.integers(0, 2**31), st.booleans())
def test_block_counts_without_a_pass_equal_counted(data, k, seed, regression):
    subset, y, _ = data
    df = pd.DataFrame({"x1": np.arange(len(y), dtype=float), "s": subset, "y": y})
    if regression:
        df["y"] = (df["y"] == "p") * 1.5
    table = sd.load_table(dd.from_pandas(df, npartitions=3, sort=False), label="y", subset="s")
    folded = sd.assign_folds(table, k, seed)
    assert folded.fold_counts is not None  # derived from the stratum counts
    keys = ["s", FOLD_COLUMN] + ([] if regression else ["y"])
    counted = folded.data[keys].compute().groupby(keys).size().rename("n").reset_index()
    pd.testing.assert_frame_equal(
        sd.block_counts(folded).sort_values(keys).reset_index(drop=True),
        counted,
        check_dtype=False,
    )
    # Without the label in the strata, the counts by label need their pass.
    if not regression:
        assert sd.assign_folds(table, k, seed, stratify=False).fold_counts is None


@settings(max_examples=n_examples(6), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frames, st.integers(2, 5), st.integers(0, 2**31), st.integers(1, 4),
       st.sampled_from(["rows", "mlr3resampling"]))  # fmt: skip
def test_group_folds_keep_groups_whole(data, k, seed, nparts, assignment):
    subset, y, g = data
    df = pd.DataFrame({"x1": np.arange(len(y), dtype=float), "s": subset, "y": y})
    # Groups nested in subset × label, as the data must have them.
    df["g"] = df["s"] + df["y"] + pd.Series(g).astype(str)
    n_groups = df.groupby("s")["g"].nunique()
    roles = {"subset": "s", "group": "g"}
    if (n_groups < k).any():
        with pytest.raises(ValueError, match="fewer groups"):
            _folds(df, nparts, k, seed, assignment, **roles)
        return
    folds = _folds(df, nparts, k, seed, assignment, **roles)
    assert (df.assign(f=folds).groupby("g")["f"].nunique() == 1).all()
    # The folds dealt in memory, whatever the partitioning.
    assert folds.equals(_memory_group_folds(df, k, seed, True, assignment).rename(FOLD_COLUMN))


def test_group_folds_balance_rows():
    rng = np.random.default_rng(3)
    g = rng.integers(0, 300, 5000)
    df = pd.DataFrame({"x1": rng.normal(size=5000), "y": "a", "g": g})
    folds = _folds(df, 3, 10, 1, group="g")
    sizes = folds.value_counts()
    assert sizes.max() - sizes.min() <= df["g"].value_counts().max()


def test_seed_changes_folds_and_folds_are_random():
    df = pd.DataFrame({"x1": np.arange(1000.0), "y": np.tile(["a", "b"], 500)})
    a = _folds(df, 2, 5, 1)
    b = _folds(df, 2, 5, 2)
    assert not a.equals(b)
    # Not round-robin: consecutive rows of a stratum are not in consecutive folds.
    assert (np.diff(a[df["y"] == "a"].to_numpy()) % 5 != 1).mean() > 0.5


@pytest.mark.slow
def test_same_folds_with_two_workers(cluster):
    distributed = pytest.importorskip("distributed")
    df = pd.DataFrame({"x1": np.arange(2000.0), "y": np.tile(["a", "b", "b", "c"], 500)})
    local = _folds(df, 4, 10, 7)
    with distributed.Client(cluster):  # two worker processes
        assert local.equals(_folds(df, 4, 10, 7))
        assert local.equals(_folds(df, 7, 10, 7))


def test_permuted_block_folds_each_block_is_a_permutation():
    folds = permuted_block_folds(np.zeros(30, int), np.arange(30), 10, seed=5)
    for block in folds.reshape(3, 10):
        assert sorted(block) == list(range(1, 11))


@settings(max_examples=n_examples(80), deadline=None)
@given(
    strata=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 300)), min_size=1, max_size=6),
    k=st.integers(2, 12),
    seed=st.integers(0, 2**31),
    scatter=st.booleans(),
)
def test_permuted_block_folds_number_blocks_without_sorting(strata, k, seed, scatter):
    # Each stratum's rows at consecutive positions from an offset (as in a partition), or
    # scattered; either way each (stratum, block) gets the permutation hashed from its keys.
    rng = np.random.default_rng(seed)
    codes = np.concatenate([np.full(n, c) for c, (_, n) in enumerate(strata)]).astype(int)
    pos = np.concatenate([off + np.arange(n) for off, n in strata]).astype(int)
    if scatter:
        pos = rng.integers(0, 10**12, len(pos))
    order = rng.permutation(len(codes))
    codes, pos = codes[order], pos[order]
    if not len(codes):
        return
    got = permuted_block_folds(codes, pos, k, seed)
    width = codes.max() + 1
    keys, pair = np.unique(pos // k * width + codes, return_inverse=True)
    hashes = seeded_hash(seed, (keys % width)[:, None], (keys // width)[:, None], np.arange(k))
    ranks = np.argsort(np.argsort(hashes, axis=1), axis=1)
    np.testing.assert_array_equal(got, ranks[pair, pos % k] + 1)


def test_splitter_folds_equal_cluster_folds():
    df = pd.DataFrame(
        {
            "x1": np.arange(600.0),
            "s": np.repeat(["A", "B", "C"], 200),
            "y": np.tile(list("aab"), 200),
        }
    )
    cluster = _folds(df, 3, 4, 11, subset="s")
    cv = sd.SameOtherAllCV(df["s"], n_splits=4, random_state=11)
    np.testing.assert_array_equal(cv.folds(df, df["y"]), cluster.to_numpy())
    df["g"] = df["s"] + df["y"] + (df.index % 17).astype(str)
    grouped = _folds(df, 3, 4, 11, subset="s", group="g")
    np.testing.assert_array_equal(cv.folds(df, df["y"], df["g"]), grouped.to_numpy())


def test_bad_n_folds():
    df = pd.DataFrame({"x1": [1.0, 2.0], "y": ["a", "b"]})
    with pytest.raises(ValueError, match="n_folds=1"):
        sd.assign_folds(sd.load_table(df, label="y"), 1)


def test_group_spanning_subsets_is_an_error():
    df = pd.DataFrame(
        {"x1": np.arange(40.0), "s": ["A", "B"] * 20, "y": "a", "g": np.arange(40) // 4}
    )
    with pytest.raises(ValueError, match="span more than one value of 's'"):
        sd.assign_folds(sd.load_table(df, label="y", subset="s", group="g"), 2)


def test_na_subset_is_an_error():
    df = pd.DataFrame({"x1": np.arange(40.0), "s": ["A", None] * 20, "y": "a"})
    with pytest.raises(ValueError, match="column 's' has 20 missing values"):
        sd.assign_folds(sd.load_table(df, label="y", subset="s"), 2)


@pytest.mark.slow
def test_repeats_balanced_by_overlap_share_one_neighbour_search(monkeypatch):
    """Repeated K-fold with balance="overlap": one (exact, so unseeded) search of the degrees
    for every repeat, and each repeat's folds those of ``overlap_folds`` with its seed."""
    from soak_dask.split import outer

    rng = np.random.default_rng(3)
    df = pd.DataFrame(rng.normal(size=(300, 2)), columns=["x1", "x2"])
    df["y"] = np.where(df["x1"] + rng.normal(scale=0.7, size=300) > 0, "p", "q")
    df["s"] = rng.choice(["A", "B"], 300)
    table = sd.load_table(dd.from_pandas(df, npartitions=3, sort=False), label="y", subset="s")
    searches = []
    real = outer.degree_frame
    monkeypatch.setattr(outer, "degree_frame", lambda t: searches.append(1) or real(t))
    design = KFoldDesign(4, n_repeats=3, seed=5, balance="overlap")
    keyed = design.add_keys(table).data.compute().sort_index()
    assert searches == [1]
    for r in range(1, 4):
        alone = sd.overlap_folds(table, 4, repeat_seed(5, r)).data[FOLD_COLUMN].compute()
        assert keyed[key_name("fold", r)].equals(alone.sort_index().rename(key_name("fold", r)))


@pytest.mark.slow
@settings(max_examples=n_examples(5), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frames, st.integers(2, 7), st.integers(0, 2**31), st.integers(1, 4), st.booleans())
def test_one_repeat_s_block_counts_without_a_pass_equal_counted(data, k, seed, nparts, regression):
    """K-fold's ``counts_`` (from the strata's sizes) are the rows of each (subset, fold[,
    label]) block of its keyed table; several repeats' joint counts are not known."""
    subset, y, _ = data
    df = pd.DataFrame({"x1": np.arange(len(y), dtype=float), "s": subset, "y": y})
    if regression:
        df["y"] = (df["y"] == "p") * 1.5
    table = sd.load_table(dd.from_pandas(df, npartitions=nparts, sort=False), label="y", subset="s")
    design = KFoldDesign(k, seed=seed)
    keyed = design.add_keys(table)
    keys = ["s", key_name("fold", 1)] + ([] if regression else ["y"])
    counted = keyed.data[keys].compute().groupby(keys).size().rename("n").reset_index()
    pd.testing.assert_frame_equal(
        design.counts_[[*keys, "n"]].sort_values(keys).reset_index(drop=True),
        counted,
        check_dtype=False,
    )
    repeated = KFoldDesign(k, n_repeats=2, seed=seed)
    repeated.add_keys(table)
    assert repeated.counts_ is None


@pytest.mark.parametrize("one_class", [True, False])
@pytest.mark.parametrize("design", ["cv", "lodo"])
def test_a_runs_checks_of_its_groups_and_their_folds_share_one_count(one_class, design):
    """K capped by the groups (of the rarest class), whether every group holds one class, and
    the group folds (or LODO's groups) all come from one count of the groups in a run."""
    frame = toy_table(n=400, n_groups=6)
    if not one_class:  # groups of both classes
        frame["group"] = frame["subset"] + "-" + (frame.index % 7).astype(str)
    data = dd.from_pandas(frame, npartitions=4)
    table = sd.load_table(data, label="y", subset="subset", group="group")
    make = KFoldDesign(4, n_repeats=2) if design == "cv" else LeaveOneGroupOutDesign()
    computes = []
    with counts_shared(), dask.callbacks.Callback(start=computes.append):
        keyed = make.add_keys(table)
    assert len(computes) == 1
    folds = keyed.data.compute()
    for column in [c for c in folds.columns if c.startswith("fold")]:  # whole groups
        assert folds.groupby("group")[column].nunique().max() == 1
