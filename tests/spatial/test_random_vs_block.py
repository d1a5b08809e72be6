"""Issue 42, item 5's last piece: ``random_vs_block_cv`` (random-CV and block-CV error of the
same learner side by side, how much random CV flatters it) and ``soak info --spatial
--learner``; on Gaussian random fields, whose label is spatially correlated."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import soak_dask as sd
from soak_dask.app.cli import main
from soak_dask.spatial.random_vs_block import flattery_text

RANGE = 8.0  # effective range of the fields, in cells


def field(shape=(24, 24), seed=3) -> pd.DataFrame:
    df = sd.gaussian_random_field(shape, RANGE, seed=seed)
    df["band"] = sd.gaussian_random_field(shape, RANGE, seed=seed + 100)["value"]
    df["cls"] = np.where(df["value"] > 0, "high", "low")
    return df


@pytest.mark.slow
def test_block_cv_error_is_larger_than_random_cv_error():
    """k nearest neighbours on the coordinates: random folds test each cell beside training
    cells of nearly its value; blocks of the range hold whole patches out."""
    t = sd.load_table(field(), label="cls", coords=["x", "y"], features=["x", "y"])
    res = sd.random_vs_block_cv(t, "knn", block_size=RANGE, n_folds=5, progress=False)
    assert res["design"].tolist() == ["random", "blocks"]
    random, blocks = res.iloc[0], res.iloc[1]
    assert (res["measure"] == "error").all() and (res["n_folds"] == 5).all()
    assert blocks["weighted_mean"] > 1.5 * random["weighted_mean"]
    assert blocks["mean"] > 1.5 * random["mean"]
    assert blocks["ratio"] == pytest.approx(blocks["weighted_mean"] / random["weighted_mean"])
    assert random["ratio"] == 1.0 and np.isnan(random["block_size"])
    assert blocks["block_size"] == RANGE and blocks["unit"] == "coordinate units"
    # Every row is tested once in each design; error's pooled estimate is the row-weighted mean.
    for _, row in res.iterrows():
        assert sum(row["n_test"]) == 24 * 24 and len(row["n_test"]) == 5
    by_fold = sd.evaluate(
        t, "knn", outer_folds=5, measures=["error"], options=sd.RunOptions(progress=False)
    )
    assert random["mean"] == pytest.approx(float(by_fold["error"].mean()))


@pytest.mark.slow
def test_regression_pools_the_rmse_of_every_test_row_and_proposes_the_block_size():
    """Without block_size: spatial_range's proposal; the pooled RMSE is √(pooled MSE)."""
    t = sd.load_table(field(), label="value", coords=["x", "y"], features=["band", "x", "y"])
    res = sd.random_vs_block_cv(t, ["knn", "featureless"], n_folds=4, progress=False, seed=2)
    proposed = sd.spatial_range(t, n_folds=4, n_boot=0, seed=2).block_size
    assert RANGE / 1.5 <= proposed <= RANGE * 1.5
    assert res["learner"].tolist() == ["knn", "knn", "featureless", "featureless"]
    assert res.loc[1, "block_size"] == proposed and (res["measure"] == "rmse").all()
    assert res.loc[1, "ratio"] > 1.2  # knn: random CV flatters it
    assert res.loc[3, "ratio"] < res.loc[1, "ratio"]  # featureless learns no place
    blocked = sd.spatial_blocks(t, proposed)
    ds = sd.evaluate(
        blocked,
        "knn",
        outer_folds=4,
        seed=2,
        measures=["mse"],
        options=sd.RunOptions(progress=False),
    )
    mse, n = ds["mse"].values.ravel(), ds["n_test"].values.ravel()
    assert res.loc[1, "weighted_mean"] == pytest.approx(np.sqrt(np.sum(mse * n) / n.sum()))
    text = flattery_text(res)
    assert "knn: random 4-fold CV: RMSE" in text and "4-fold CV of blocks of" in text
    assert "random CV flatters the model: ×" in text


@pytest.mark.slow
def test_soak_info_prints_the_comparison(tmp_path, capsys):
    path = tmp_path / "field.parquet"
    field().to_parquet(path)
    argv = ["info", str(path), "--label", "cls", "--coords", "x,y", "--features", "x,y"]
    assert main([*argv, "--spatial", "--learner", "knn", "--blocks", "8", "--n-folds", "5"]) == 0
    out = capsys.readouterr().out
    assert "suggested --blocks" in out  # the range lines come first
    line = next(s for s in out.splitlines() if s.startswith("knn: random 5-fold CV: error "))
    assert "5-fold CV of blocks of 8: error " in line and "(pooled " in line
    assert "random CV flatters the model: ×" in out
    # Four blocks of 12 cap K at 4, for random CV too: both train on 3/4 of the rows.
    assert main([*argv, "--spatial", "--learner", "knn", "--blocks", "12", "--n-folds", "5"]) == 0
    captured = capsys.readouterr()
    assert "knn: random 4-fold CV: error " in captured.out
    assert "4-fold CV of blocks of 12: error " in captured.out
    assert "outer_folds=5 is more than the 4 groups; using 4 folds" in captured.err


def test_bad_input_is_refused_before_any_fit(tmp_path, capsys, monkeypatch):
    import soak_dask.spatial.random_vs_block as module

    def no_fit(*args, **kwargs):
        raise AssertionError("evaluate ran")

    monkeypatch.setattr(module, "evaluate", no_fit)
    df = field(shape=(8, 8))
    t = sd.load_table(df, label="cls", coords=["x", "y"], features=["x", "y"])
    with pytest.raises(ValueError, match="unknown learner 'nope'; built-in learners"):
        sd.random_vs_block_cv(t, "nope", block_size=4)
    flat = sd.load_table(df, label="cls", features=["x", "y"])
    with pytest.raises(ValueError, match="needs the table's coordinates: load it with coords="):
        sd.random_vs_block_cv(flat, "knn", block_size=4)
    with pytest.raises(ValueError, match="n_folds=1: need an integer of at least 2"):
        sd.random_vs_block_cv(t, "knn", n_folds=1)
    with pytest.raises(ValueError, match="size=-1: need a positive block size"):
        sd.random_vs_block_cv(t, "knn", block_size=-1)
    path = tmp_path / "field.parquet"
    df.to_parquet(path)
    argv = ["info", str(path), "--label", "cls", "--coords", "x,y"]
    assert main([*argv, "--spatial", "--learner", "nope"]) == 2
    assert "unknown learner 'nope'" in capsys.readouterr().err
    assert main([*argv, "--learner", "knn"]) == 2
    assert "--learner without --spatial does nothing" in capsys.readouterr().err
