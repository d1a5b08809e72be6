"""Issue 38 (round 4), item 6 for every design: beside a user's fold column, the options that
say how folds are drawn are refused (soak, evaluate, transfer, search_subsets; API, flags and
run files, one declaration: ``Setting.drawn``); ``soak info`` refuses a group assignment
without groups; ``pvalues`` refuses a rope without the Bayesian test; a run file's refused
design option names the file."""

from __future__ import annotations

import dask
import numpy as np
import pandas as pd
import pytest
import xarray as xr

import soak_dask as sd
from soak_dask.app import cli
from soak_dask.app.config import load_run_file, merge_settings
from soak_dask.app.info import describe_table
from soak_dask.pooling.matrix import transfer
from soak_dask.pooling.search import search_subsets

QUIET = {"options": sd.RunOptions(progress=False)}
FOLD_COLUMN = "the table's fold column 'k' gives the folds"


@pytest.fixture(autouse=True)
def _sync():
    with dask.config.set(scheduler="sync"):
        yield


def frame(n: int = 96) -> pd.DataFrame:
    """Features a, b; label y; subsets s; groups g, each wholly in one fold of k (1..3)."""
    rng = np.random.default_rng(0)
    g = np.arange(n) % 12
    return pd.DataFrame(
        {
            "a": rng.normal(size=n),
            "b": rng.normal(size=n),
            "y": rng.choice(["p", "q"], n),
            "s": np.where(np.arange(n) % 2, "A", "B"),
            "g": g,
            "k": g % 3 + 1,
        }
    )


def table(**kw) -> sd.Table:
    return sd.load_table(frame(), label="y", features=["a", "b"], fold="k", **kw)


def soak_cli(argv: list, capsys) -> tuple[int, str]:
    """``soak argv`` in this process: exit status and stderr."""
    code = cli.main([str(a) for a in argv])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"n_folds": 3}, "n_folds=3"),  # the column's own K: accepted and unused before
        ({"balance": "overlap"}, "balance='overlap'"),
        ({"stratify": False}, "stratify=False"),
        ({"group_assignment": "mlr3resampling"}, "group_assignment='mlr3resampling'"),
    ],
)
def test_soak_refuses_how_folds_are_drawn_beside_a_fold_column(options, named):
    with pytest.raises(ValueError, match=f"{named}: {FOLD_COLUMN}.*without fold="):
        sd.soak(table(group="g"), "featureless", **options, **QUIET)


@pytest.mark.parametrize(
    "options", [{"balance": "overlap"}, {"group_assignment": "mlr3resampling"}]
)
def test_evaluate_refuses_balance_and_group_dealing_beside_a_fold_column(options):
    with pytest.raises(ValueError, match=FOLD_COLUMN):
        sd.evaluate(table(group="g"), "featureless", **options, **QUIET)


@pytest.mark.parametrize("run", [transfer, search_subsets])
@pytest.mark.parametrize(
    ("options", "named"), [({"n_folds": 3}, "n_folds=3"), ({"stratify": False}, "stratify=False")]
)
def test_transfer_and_search_refuse_how_folds_are_drawn_beside_a_fold_column(run, options, named):
    with pytest.raises(ValueError, match=f"{named}: {FOLD_COLUMN}"):
        run(table(subset="s"), "featureless", **options, **QUIET)


def test_cli_refuses_how_folds_are_drawn_beside_a_fold_column(tmp_path, capsys):
    data = tmp_path / "t.csv"
    frame().to_csv(data, index=False)
    base = [data, "--label", "y", "--features", "a,b", "--fold-column", "k", "--out",
            tmp_path / "r.zarr"]  # fmt: skip
    for argv, named in (
        (["run", *base, "--balance", "overlap"], "--balance='overlap'"),
        (["run", *base, "--n-folds", "3"], "--n-folds=3"),
        (["evaluate", *base, "--group", "g", "--group-assignment", "mlr3resampling"],
         "--group-assignment='mlr3resampling'"),
    ):  # fmt: skip
        code, err = soak_cli(argv, capsys)
        assert code == 2 and f"{named}: {FOLD_COLUMN}" in err, (argv, err)
        assert len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "r.zarr").exists()


def test_run_file_refusals_name_the_file(tmp_path):
    required = {"data": "d", "label": "y", "out": "o"}
    conf = tmp_path / "r.toml"
    cases = [
        ('fold_column = "k"\nbalance = "overlap"\n', "run", "balance='overlap': " + FOLD_COLUMN),
        ('[evaluation]\nouter = "lodo"\nouter_repeats = 2\n', "evaluate",
         "outer_repeats=2 has no effect with outer='lodo'"),
        ('group_assignment = "mlr3resampling"\n', "run", "group_assignment='mlr3resampling'"),
        ("n_folds = 3\n", "evaluate", f"run file {str(conf)!r} sets n_folds = 3"),
    ]  # fmt: skip
    for text, command, message in cases:
        conf.write_text(text, encoding="utf-8")
        with pytest.raises(ValueError) as info:
            merge_settings(load_run_file(conf), required, command=command)
        assert message in str(info.value) and str(conf) in str(info.value), str(info.value)
    # Given by a flag, the refusal names the flag and not the file.
    conf.write_text('[evaluation]\nouter = "lodo"\n', encoding="utf-8")
    with pytest.raises(ValueError) as info:
        merge_settings(load_run_file(conf), {**required, "outer_repeats": 2},
                       {"outer_repeats": "--outer-repeats"}, "evaluate")  # fmt: skip
    assert "--outer-repeats=2 has no effect" in str(info.value)
    assert str(conf) not in str(info.value)


def test_info_refuses_a_group_assignment_without_groups(tmp_path, capsys):
    plain = sd.load_table(frame(), label="y", features=["a", "b"])
    with pytest.raises(ValueError, match="group_assignment='mlr3resampling' says how whole"):
        describe_table(plain, group_assignment="mlr3resampling")
    data = tmp_path / "t.csv"
    frame().to_csv(data, index=False)
    argv = ["info", data, "--label", "y", "--group-assignment", "mlr3resampling"]
    code, err = soak_cli(argv, capsys)
    assert code == 2 and "no group column" in err, err
    assert soak_cli([*argv, "--group", "g"], capsys)[0] == 0


def soak_results() -> xr.Dataset:
    """Hand-made SOAK results: one learner, subset, 3 folds, same and other."""
    df = pd.DataFrame({
        "learner": "lasso", "test_subset": "A", "fold": [1, 2, 3, 1, 2, 3],
        "train_type": ["same"] * 3 + ["other"] * 3,
        "error": [10.0, 12.0, 11.0, 15.0, 16.0, 18.0],
    })  # fmt: skip
    ds = df.set_index(["learner", "test_subset", "fold", "train_type"]).to_xarray()
    ds["n_train"], ds["n_test"] = xr.full_like(ds["error"], 20), xr.full_like(ds["error"], 10)
    return ds


@pytest.mark.parametrize("method", ["paired", "corrected"])
def test_pvalues_refuse_a_rope_without_the_bayesian_test(method):
    ds = soak_results()
    with pytest.raises(ValueError, match=f"rope=5 is the Bayesian test's.*method='{method}'"):
        sd.pvalues(ds, method=method, rope=5)
    assert sd.pvalues(ds, method="bayesian", rope=5)["rope"].iloc[0] == 5
