"""Issue 42, items 3 and 4: the commands take ``soak knndm``'s fold file as ``--fold-column``
(``soak aoa --folds`` too), and make the group column from ``--blocks SIZE`` /
``--clusters K``; what cannot make one group column is refused before anything is fitted."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

import soak_dask as sd
from soak_dask.app import cli
from soak_dask.app.aoa_cli import _train_folds
from soak_dask.app.table_input import open_table
from soak_dask.split.fold_file import is_fold_file, write_fold_file

from ..spatial.test_round4_knndm import run_cli, scheduler  # noqa: F401  # the fixture

ROLES = {"label": "label", "coords": ["x", "y"]}


@pytest.fixture(scope="module")
def scene(tmp_path_factory):
    """A table of 240 points on a 1000 × 1000 square as Parquet, its fold file (folds 1..4
    by hand, as soak knndm writes them) and a train/test split's fold file."""
    rng = np.random.default_rng(5)
    df = pd.DataFrame({"x": rng.uniform(0, 1000, 240), "y": rng.uniform(0, 1000, 240)})
    df = df.assign(f1=rng.normal(size=240), label=rng.normal(size=240))
    root = tmp_path_factory.mktemp("scene")
    df.to_parquet(root / "train.parquet")
    table = sd.load_table(df.assign(fold=1 + np.arange(240) % 4), fold="fold", **ROLES)
    write_fold_file(table, "fold", root / "folds.parquet")
    plain = sd.load_table(df, **ROLES)  # a string column is no feature: added to the data
    parts = plain.data.map_partitions(
        lambda p: p.assign(part=np.where(p.index < 60, "test", "train"))
    )
    write_fold_file(replace(plain, data=parts), "part", root / "split.parquet")
    return df, root


def test_a_fold_file_is_told_from_a_column(scene, tmp_path):
    df, root = scene
    assert is_fold_file(root / "folds.parquet") and is_fold_file(str(root / "split.parquet"))
    (tmp_path / "fold").write_text("x,y\n1,2\n")  # a file named like a column: not a fold file
    assert not is_fold_file(tmp_path / "fold") and not is_fold_file(root / "train.parquet")
    assert not is_fold_file("fold") and not is_fold_file(None)
    table = open_table(root / "train.parquet", {**ROLES, "fold": str(root / "folds.parquet")})
    assert table.fold == "fold"
    np.testing.assert_array_equal(table.data["fold"].compute(), 1 + np.arange(240) % 4)


@pytest.mark.slow
def test_evaluate_reads_the_fold_file_given_as_fold_column(scene, scheduler, capsys, tmp_path):  # noqa: F811
    df, root = scene
    out = tmp_path / "eval.zarr"
    argv = ["evaluate", root / "train.parquet", "--label", "label", "--coords", "x,y"]
    argv += ["--fold-column", root / "folds.parquet", "--learner", "featureless", "--out", out]
    code, printed, err = run_cli([*argv, "--no-progress"], scheduler, capsys)
    assert code == 0, err
    res = sd.open_results(out)
    # Folds 1..4 of 60 rows each, as the file says: every test fold has 60 rows.
    assert res.attrs["outer_folds"] == 4
    assert set(np.unique(res["n_test"].values)) == {60}
    # The same run with n_folds or blocks beside the file is refused: the file gives the folds.
    code, _, err = run_cli([*argv, "--outer-folds", "3"], scheduler, capsys)
    assert code == 2 and "--outer-folds=3: the table's fold column" in err
    code, _, err = run_cli([*argv, "--blocks", "500"], scheduler, capsys)
    assert code == 2 and "--blocks=500.0: the table's fold column" in err


def test_a_split_file_is_not_folds(scene):
    _, root = scene
    with pytest.raises(ValueError, match="train/test split of soak knndm --test-prop"):
        open_table(root / "train.parquet", {**ROLES, "fold": str(root / "split.parquet")})


def test_blocks_and_clusters_make_the_group_column(scene):
    df, root = scene
    blocks = open_table(root / "train.parquet", {**ROLES, "blocks": 500.0})
    assert blocks.group == "block"
    expected = sd.spatial_blocks(sd.load_table(root / "train.parquet", **ROLES), 500.0)
    np.testing.assert_array_equal(blocks.data["block"].compute(), expected.data["block"].compute())
    assert blocks.data["block"].nunique().compute() == 4  # 2 × 2 blocks of 500 on 1000 × 1000
    hexes = open_table(root / "train.parquet", {**ROLES, "blocks": 500.0, "block_shape": "hex"})
    assert hexes.group == "block"
    clusters = open_table(root / "train.parquet", {**ROLES, "clusters": 3})
    assert clusters.group == "cluster"
    assert sorted(clusters.data["cluster"].unique().compute()) == [0, 1, 2]


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"blocks": 500.0, "clusters": 3}, "--blocks 500.0 and --clusters 3: each makes"),
        ({"blocks": 500.0, "group": "f1"}, "and --group f1 names one"),
        ({"clusters": 3, "coords": None}, "--clusters 3 needs --coords X,Y"),
        ({"block_shape": "hex"}, "--block-shape hex: give --blocks SIZE"),
    ],
)
def test_what_makes_no_one_group_column_is_refused(scene, values, message):
    _, root = scene
    with pytest.raises(ValueError, match=message):
        open_table(root / "train.parquet", {**ROLES, **values})


def test_blocks_beside_a_fold_column_and_a_bad_size_are_refused_by_info(scene, capsys):
    _, root = scene
    argv = ["info", root / "train.parquet", "--label", "label", "--coords", "x,y"]
    assert cli.main([str(a) for a in [*argv, "--blocks", "-5"]]) == 2
    assert "--blocks=-5.0: need a positive size" in capsys.readouterr().err
    fold_file = ["--fold-column", root / "folds.parquet"]
    assert cli.main([str(a) for a in [*argv, *fold_file, "--blocks", "500"]]) == 2
    assert "--blocks 500.0 makes groups so that folds keep them whole" in capsys.readouterr().err


def test_info_describes_the_blocks(scene, capsys):
    _, root = scene
    argv = ["info", root / "train.parquet", "--label", "label", "--coords", "x,y"]
    assert cli.main([str(a) for a in [*argv, "--blocks", "500", "--n-folds", "2"]]) == 0
    printed = capsys.readouterr().out
    assert "group:    block" in printed


def test_aoa_takes_the_fold_file_as_folds(scene):
    df, root = scene
    train = dd_of(root / "train.parquet")
    joined, column = _train_folds(train, str(root / "folds.parquet"))
    assert column == "fold"
    np.testing.assert_array_equal(joined["fold"].compute(), 1 + np.arange(240) % 4)
    assert _train_folds(train, "f1") == (train, "f1")  # a column name stays one
    with pytest.raises(ValueError, match="--folds .*split.parquet: a train/test split"):
        _train_folds(train, str(root / "split.parquet"))


def dd_of(path):
    from soak_dask.app.aoa_cli import open_input

    return open_input(str(path))


@pytest.mark.slow
def test_results_record_the_blocks(scene, scheduler, capsys, tmp_path):  # noqa: F811
    _, root = scene
    out = tmp_path / "blocks.zarr"
    argv = ["evaluate", root / "train.parquet", "--label", "label", "--coords", "x,y"]
    argv += ["--blocks", "500", "--outer-folds", "2", "--learner", "featureless"]
    code, printed, err = run_cli([*argv, "--out", out, "--no-progress"], scheduler, capsys)
    assert code == 0, err
    res = sd.open_results(out)
    assert res.attrs["group"] == "block"


@pytest.mark.slow
def test_split_sensitivity_takes_blocks(scene, scheduler, capsys, tmp_path):  # noqa: F811
    _, root = scene
    frame = pd.read_parquet(root / "train.parquet")
    frame.assign(label=(frame["label"] > 0).astype(int)).to_csv(tmp_path / "t.csv", index=False)
    argv = ["split-sensitivity", tmp_path / "t.csv", "--label", "label", "--coords", "x,y"]
    argv += ["--blocks", "250", "--learner", "lda", "--ratios", "0.7", "--n-repeats", "3"]
    argv += ["--n-folds", "3", "--no-progress", "--out", tmp_path / "ss"]
    code, printed, err = run_cli(argv, scheduler, capsys)
    assert code == 0, err
    assert sd.open_results(tmp_path / "ss").attrs["group"] == "block"
