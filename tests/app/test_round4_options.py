"""Issue 38 (round 4), items 1, 6 and part of 8: a run file cannot allow itself to import code;
an option a design does not read is refused (API, run file and flags), as derived from the one
declaration of settings; a directory given as the run file and the Ctrl-C hint of commands
without a checkpoint say what is true."""

from __future__ import annotations

import sys
from pathlib import Path

import dask
import numpy as np
import pandas as pd
import pytest

import soak_dask as sd
from soak_dask.app import cli
from soak_dask.app.config import load_run_file, merge_settings

EVIL = "soak_round4_evilmod"  # a module whose import writes a file


@pytest.fixture(autouse=True)
def _sync():
    with dask.config.set(scheduler="sync"):
        yield


def soak(argv: list, capsys) -> tuple[int, str, str]:
    """``soak argv`` in this process: exit status, stdout, stderr."""
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def frame(n: int = 120, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "a": rng.normal(size=n),
            "b": rng.normal(size=n),
            "y": rng.choice(["p", "q"], n),
            "g": rng.integers(0, 8, n),
            "f": np.tile([1, 2, 4], n // 3),  # a fold column with no rows in fold 3
        }
    )


def table(**kw) -> sd.Table:
    return sd.load_table(frame(), label="y", features=["a", "b"], **kw)


@pytest.fixture
def evil(tmp_path, monkeypatch) -> Path:
    """`EVIL` on sys.path, not imported; importing it creates the returned file."""
    marker = tmp_path / "IMPORTED"
    (tmp_path / f"{EVIL}.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n"
        "from sklearn.naive_bayes import GaussianNB\n\nclass Model(GaussianNB):\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, EVIL, raising=False)
    return marker


@pytest.fixture
def data_csv(tmp_path) -> Path:
    path = tmp_path / "t.csv"
    frame().to_csv(path, index=False)
    return path


def run_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "r.toml"
    path.write_text(text, encoding="utf-8")
    return path


# --- item 1: no code from a run file ----------------------------------------------------------


@pytest.mark.parametrize("where", ["", "[evaluation]\n"])
def test_run_file_cannot_allow_modules(tmp_path, evil, where):
    conf = run_file(
        tmp_path,
        f'{where}allow_modules = ["{EVIL}"]\n[learners.m]\nestimator = "{EVIL}:Model"\n',
    )
    with pytest.raises(ValueError, match="allow_modules may only be given on the command line"):
        load_run_file(conf)
    assert not evil.exists() and EVIL not in sys.modules


def test_dry_run_of_a_run_file_allowing_itself_imports_nothing(tmp_path, evil, data_csv, capsys):
    conf = run_file(
        tmp_path,
        f'data = "{data_csv}"\nlabel = "y"\nfeatures = ["a", "b"]\nallow_modules = ["{EVIL}"]\n'
        f'[learners.m]\nestimator = "{EVIL}:Model"\n',
    )
    code, _, err = soak(["run", "--config", conf, "--dry-run"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "allow_modules may only be given on the command line (--allow-modules)" in err
    assert "cannot allow itself to import code" in err and str(conf) in err
    assert not evil.exists() and EVIL not in sys.modules
    # Unallowed, the module is refused by name, and the fix is the flag, not the run file.
    conf.write_text(conf.read_text().replace(f'allow_modules = ["{EVIL}"]\n', ""))
    code, _, err = soak(["run", "--config", conf, "--dry-run"], capsys)
    assert code == 2 and f"module '{EVIL}' is not allowed" in err
    assert f"--allow-modules {EVIL}" in err and "to the run file" not in err
    assert not evil.exists()


# --- item 6: options a design does not read ---------------------------------------------------


def test_5x2cv_repeats_are_honoured_or_refused():
    t = table()
    assert (
        sd.evaluate(t, "featureless", outer="5x2cv", options=sd.RunOptions(progress=False)).sizes[
            "repeat"
        ]
        == 5
    )
    three = sd.evaluate(
        t, "featureless", outer="5x2cv", outer_repeats=3, options=sd.RunOptions(progress=False)
    )
    assert three.sizes["repeat"] == 3 and three.attrs["outer_repeats"] == 3
    with pytest.raises(ValueError, match="outer_repeats=1 with outer='5x2cv'.*outer='cv', outer_"):
        sd.evaluate(
            t, "featureless", outer="5x2cv", outer_repeats=1, options=sd.RunOptions(progress=False)
        )


@pytest.mark.parametrize("outer", ["lodo", "bootstrap", "subsampling", "knndm", "loo"])
def test_group_assignment_refused_where_not_read(outer):
    with pytest.raises(ValueError, match=rf"group_assignment='mlr3resampling' has no effect with "
                       rf"outer='{outer}': it is used only by outer='cv', 'repeated_cv' or "
                       "'5x2cv'"):  # fmt: skip
        sd.evaluate(
            table(group="g"),
            "featureless",
            outer=outer,
            group_assignment="mlr3resampling",
            options=sd.RunOptions(progress=False),
        )


def test_group_assignment_needs_a_group(tmp_path, data_csv, capsys):
    told = "group_assignment='mlr3resampling' says how whole groups are dealt.*no group column"
    with pytest.raises(ValueError, match=told):
        sd.evaluate(
            table(),
            "featureless",
            group_assignment="mlr3resampling",
            options=sd.RunOptions(progress=False),
        )
    with pytest.raises(ValueError, match=told):
        sd.soak(
            table(),
            "featureless",
            group_assignment="mlr3resampling",
            options=sd.RunOptions(progress=False),
        )
    argv = ["run", data_csv, "--label", "y", "--group-assignment", "mlr3resampling", "--out",
            tmp_path / "r.zarr"]  # fmt: skip
    code, _, err = soak(argv, capsys)
    assert code == 2 and "--group-assignment='mlr3resampling' says how whole groups" in err


def test_5x2cv_deals_groups_as_asked():
    t = table(group="g")
    asked = {"group_assignment": "mlr3resampling", "options": sd.RunOptions(progress=False)}
    five = sd.evaluate(t, "featureless", outer="5x2cv", **asked)
    same = sd.evaluate(t, "featureless", outer="repeated_cv", outer_folds=2, outer_repeats=5,
                       **asked)  # fmt: skip
    np.testing.assert_array_equal(five["n_test"].values, same["n_test"].values)
    assert five.attrs["group_assignment"] == "mlr3resampling"


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"outer": "bootstrap", "outer_folds": 5}, "outer_folds=5 has no effect with outer='b"),
        ({"outer": "lodo", "outer_folds": 5}, "outer_folds=5 has no effect with outer='lodo'"),
        ({"outer": "cv", "outer_repeats": 1}, "outer_repeats=1 has no effect with outer='cv'"),
        ({"outer": "cv", "train_ratio": 0.8}, "train_ratio=0.8 has no effect with outer='cv'"),
    ],
)
def test_design_options_given_as_their_defaults_refused(options, match):
    with pytest.raises(ValueError, match=match):
        sd.evaluate(
            table(group="g"), "featureless", **options, options=sd.RunOptions(progress=False)
        )


def test_evaluate_fold_column_refused_as_soak_refuses_it():
    with pytest.raises(ValueError, match=r"fold column 'f' has no rows in folds \[3\]"):
        sd.evaluate(table(fold="f"), "featureless", options=sd.RunOptions(progress=False))
    with pytest.raises(ValueError, match="outer_folds=3: the table's fold column 'f' gives"):
        sd.evaluate(
            table(fold="f"), "featureless", outer_folds=3, options=sd.RunOptions(progress=False)
        )


def test_rope_refused_for_tests_without_one():
    ds = sd.evaluate(table(), ["featureless", "logistic"], options=sd.RunOptions(progress=False))
    for method, which in (("paired", "method='paired'"), (None, "the recommended test")):
        with pytest.raises(ValueError, match=f"rope=5 is the Bayesian test's.*{which}"):
            sd.compare(ds, "logistic", "featureless", "error", method, rope=5)
    row = sd.compare(ds, "logistic", "featureless", "error", "bayesian", rope=5).iloc[0]
    assert row["rope"] == 5


def test_run_file_design_options_refused_before_the_engine(tmp_path):
    required = {"data": "d", "label": "y", "out": "o"}
    top = load_run_file(run_file(tmp_path, "n_folds = 3\n"))
    told = r"n_folds = 3, which soak evaluate does not read: .* outer_folds, in the \[evaluation\]"
    with pytest.raises(ValueError, match=told):
        merge_settings(top, required, command="evaluate")
    assert merge_settings(top, required, command="run").n_folds == 3  # soak run's K
    both = load_run_file(run_file(tmp_path, "n_folds = 3\n[evaluation]\nouter_folds = 4\n"))
    assert merge_settings(both, required, command="evaluate").outer_folds == 4
    lodo = load_run_file(run_file(tmp_path, '[evaluation]\nouter = "lodo"\nouter_repeats = 2\n'))
    with pytest.raises(ValueError, match="outer_repeats=2 has no effect with outer='lodo'"):
        merge_settings(lodo, required, command="evaluate")
    with pytest.raises(ValueError, match="--group-assignment='mlr3resampling' says how whole"):
        merge_settings({}, {**required, "group_assignment": "mlr3resampling"},
                       {"group_assignment": "--group-assignment"}, "evaluate")  # fmt: skip


@pytest.mark.slow
def test_cli_refuses_what_the_design_ignores(tmp_path, data_csv, cluster, capsys):
    base = ["evaluate", data_csv, "--label", "y", "--features", "a,b", "--out", tmp_path / "r.zarr"]
    base += ["--scheduler", cluster.scheduler_address]  # the fold column's check reads the table
    cases = [
        ([*base, "--outer", "5x2cv", "--outer-repeats", "1"], "outer_repeats=1 with outer='5x2cv'"),
        ([*base, "--outer", "lodo", "--group", "g", "--group-assignment", "mlr3resampling"],
         "--group-assignment='mlr3resampling' has no effect with outer='lodo'"),
        ([*base, "--group-assignment", "mlr3resampling"], "no group column"),
        ([*base, "--outer", "bootstrap", "--outer-folds", "5"],
         "--outer-folds=5 has no effect with outer='bootstrap'"),
        ([*base, "--fold-column", "f"], "fold column 'f' has no rows in folds [3]"),
        ([*base, "--config", run_file(tmp_path, "n_folds = 3\n")],
         "which soak evaluate does not read"),
    ]  # fmt: skip
    for argv, message in cases:
        code, _, err = soak(argv, capsys)
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1, (argv, err)
    assert not (tmp_path / "r.zarr").exists()


# --- item 8: a directory as the run file; Ctrl-C of a command without a checkpoint ------------


def test_config_directory_says_it_is_a_directory(tmp_path, data_csv, capsys):
    code, _, err = soak(["run", data_csv, "--label", "y", "--config", tmp_path, "--dry-run"],
                        capsys)  # fmt: skip
    assert code == 2 and "is a directory; a run file is a TOML file" in err
    assert "does not exist" not in err


@pytest.mark.parametrize(
    ("argv", "resumable"),
    [
        (["aoa", "t.parquet", "n.tif", "--features", "a", "--out", "o"], False),
        (["knndm", "t.parquet", "p.parquet", "--label", "y", "--out", "o"], False),
        (["run", "t.parquet", "--label", "y", "--out", "o"], True),
        (["split-sensitivity", "t.parquet", "--label", "y", "--out", "o"], True),
    ],
)
def test_ctrl_c_promises_a_checkpoint_only_where_there_is_one(argv, resumable, monkeypatch,
                                                              capsys):  # fmt: skip
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setitem(cli.COMMANDS, argv[0], interrupted)
    code, _, err = soak(argv, capsys)
    assert code == cli.INTERRUPTED and err.startswith("soak: interrupted")
    assert ("checkpoint" in err) is resumable, err
