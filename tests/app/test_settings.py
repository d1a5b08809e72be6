"""Tests of ``soak_dask.settings``: each setting declared once, and everything derived from it.

The Python signatures of the six functions, the checks, the run-file keys and every command's
flags all come from ``SETTINGS``; older spellings (``--folds``, ``fold_column``...
``no_persist = true``) are aliases that give the same settings as the names, and former names
(``k``, ``trials``, ``n_random``, ``measure``) are refused with the new one.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import math
import re
import typing
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import soak_dask as sd
from soak_dask.app import cli, config, flags
from soak_dask.settings import (
    CLI,
    COMMANDS,
    KINDS,
    REQUIRED,
    SETTINGS,
    SPELLINGS,
    Scope,
    canonical,
    check_run_options,
    command_line_settings,
    command_settings,
    defaults,
    identity,
    run_file_table,
)

FLAGGED = [s for s in SETTINGS.values() if s.cli]
#: The flags of each command.
COMMAND_FLAGS = {c: [s for s in command_line_settings(c) if s.cli] for c in CLI}
DOCS = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def same(a: object, b: object) -> bool:
    """Equal, NaN equal to NaN."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


# --- the declaration ----------------------------------------------------------------------


AS_TAKEN = [(s.in_command(c), c) for s in SETTINGS.values() for c in s.takers]


@pytest.mark.parametrize(
    ("setting", "command"), AS_TAKEN, ids=[f"{c}:{s.name}" for s, c in AS_TAKEN]
)
def test_every_setting_has_help_a_kind_and_a_check(setting, command):
    """In every command that takes it, as it takes it (its variant there)."""
    assert setting.help and "\n" not in setting.help
    assert setting.kind in KINDS and setting.scope in typing.get_args(Scope)
    assert set(setting.takers) <= set(COMMANDS) and command in setting.takers
    assert not setting.evaluate or setting.scope == "run"  # shared run settings only
    assert re.fullmatch(r"[a-z][a-z0-9_]*", setting.name)
    if setting.default is not REQUIRED:
        assert same(setting.checked(setting.default), setting.default) or setting.name in (
            "train_types",  # normalised to a tuple in canonical order: the same one
        )
    if setting.kind != "learners":  # resolve_learners checks learners, knowing the task
        with pytest.raises(ValueError, match=f"^{setting.name}="):
            setting.checked(object())


def test_names_and_spellings_are_unique():
    spellings = [k for s in SETTINGS.values() for k in {s.name, s.file_key, *s.aliases}]
    assert len(spellings) == len(set(spellings)) == len(SPELLINGS)
    for command, flagged in COMMAND_FLAGS.items():
        flags = [f for s in flagged for f in (s.flag, *s.alias_flags, *s.renamed_flags)]
        assert len(flags) == len(set(flags)), command
        former = {old for s in flagged for old in s.renamed}
        assert not former & set(SPELLINGS), command  # a former name spells nothing now


def test_defaults_come_from_the_schema():
    run = defaults("run")
    assert run["train_types"] == sd.TRAIN_TYPES and run["n_folds"] is None
    assert str(sd.schema.DEFAULT_N_FOLDS) in SETTINGS["n_folds"].help
    assert defaults("table")["label"] is REQUIRED


#: The run options' defaults, as every entry point's ``options=RunOptions()`` gives them (the
#: Dask client is an object, not a setting).
RUN_DEFAULTS = {f.name: f.default for f in dataclasses.fields(sd.RunOptions) if f.name != "client"}


def options_of(func) -> dict:
    """The defaults of `func`'s options as its callers give them: its own keywords (in order;
    not the table, an object), the parameters of its ``design=`` class, if it takes one, and
    then the fields of its ``options=RunOptions()``."""
    params = inspect.signature(func).parameters
    assert (
        params["options"].default is None
        and params["options"].kind is params["options"].KEYWORD_ONLY
    )
    own = {
        k: p.default
        for k, p in params.items()
        if k not in ("table", "design", "options") and p.kind is not p.VAR_KEYWORD
    }
    design = func.design_class.parameters() if "design" in params else {}
    assert not set(own) & set(RUN_DEFAULTS), "a run option is a keyword of its own"
    assert not set(own) & set(design), "a design's option is a keyword of its own"
    return {**own, **design, **RUN_DEFAULTS}


def test_soak_signature_is_the_run_settings():
    declared = defaults("run")
    given_ = options_of(sd.soak)
    own = [k for k in declared if k not in RUN_DEFAULTS]
    assert list(given_)[: len(own)] == own  # the declared order
    assert set(given_) == set(declared)
    assert all(same(given_[k], declared[k]) for k in declared), (given_, declared)


def test_load_table_signature_is_the_table_settings():
    params = inspect.signature(sd.load_table).parameters
    declared = defaults("table")
    given_ = {  # source is the command's DATA
        k: REQUIRED if p.default is inspect.Parameter.empty else p.default
        for k, p in params.items()
        if k != "source"
    }
    assert list(given_) == list(declared)
    assert all(given_[k] is REQUIRED or same(given_[k], declared[k]) for k in declared)


def test_evaluate_signature_is_its_settings():
    given_ = options_of(sd.evaluate)
    declared = {
        s.name: s.default_in("evaluate") for s in command_settings("evaluate") if s.scope != "table"
    }
    declared = {k: v for k, v in declared.items() if SETTINGS[k].scope != "app"}
    assert set(given_) == set(declared)
    assert all(same(given_[k], declared[k]) for k in declared), (given_, declared)
    from soak_dask.split.outer import OUTER

    assert SETTINGS["outer"].choices == OUTER


#: The functions whose options are their command's settings (as ``soak``'s and ``evaluate``'s).
FUNCTIONS = {
    "transfer": sd.transfer,
    "search": sd.search_subsets,
    "split-sensitivity": sd.split_sensitivity,
    "compare-sampling": sd.compare_sampling,
}


@pytest.mark.parametrize("command", FUNCTIONS)
def test_function_signatures_are_their_settings(command):
    """Every option of the four newer functions is declared, with the function's default."""
    given_ = options_of(FUNCTIONS[command])
    declared = {
        s.name: s.default for s in command_settings(command) if s.scope not in ("table", "app")
    }
    assert set(given_) == set(declared)
    for name, default in given_.items():
        if default is inspect.Parameter.empty:  # compare_sampling(table, learners): positional
            assert name == "learners" and declared[name] is None
        else:
            assert same(default, declared[name]), (name, default, declared[name])


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("outer", "kfold", "outer='kfold': choose from ['cv', 'repeated_cv'"),
        ("outer_folds", 1, "outer_folds=1: need an integer of at least 2"),
        ("outer_repeats", 0, "outer_repeats=0: need a positive integer"),
        ("test_split", 0.6, "test_split=0.6: need a share from 0 (none) to 0.5"),
        ("test_split", True, "test_split=True: need a share"),
        ("train_ratio", 1.0, "train_ratio=1.0: need 0 < ratio < 1"),
    ],
)
def test_evaluate_settings_refuse_what_evaluate_refuses(name, value, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        SETTINGS[name].checked(value)


def test_identity_is_what_results_record():
    values = {name: SETTINGS[name].default for name in defaults("run")}
    assert set(identity(values)) == {
        "learners", "n_folds", "seed", "train_types", "measures", "stratify", "sizes",
        "ratio", "size_seeds", "max_train_rows", "incremental", "epochs", "onepass",
        "prior_correction", "calibration", "inner", "inner_folds", "inner_repeats", "balance",
        "group_assignment",
    }  # fmt: skip


# --- checks -------------------------------------------------------------------------------


def test_check_run_options_normalises():
    checked = check_run_options(
        {"seed": np.int64(3), "n_folds": np.int8(4), "train_types": "all,same", "ratio": 1 / 4}
    )
    assert checked == {"seed": 3, "n_folds": 4, "train_types": ("same", "all"), "ratio": 0.25}
    assert type(checked["seed"]) is int and type(checked["n_folds"]) is int
    with pytest.raises(ValueError, match=r"unknown options \['folds'\]"):
        check_run_options({"folds": 3})


OLD_CASES = {
    "seed": [-1, 2**32, 1.0, None, True],
    "n_folds": [0, 1, 128, "3", True],
    "sizes": [-2, 1.5],
    "ratio": [0, 1, 1.5],
    "size_seeds": [0, 2.0],
    "max_train_rows": [0, 1.5, True],
    "epochs": [0, None, 1.0],
}


@pytest.mark.parametrize(("name", "value"), [(k, v) for k, vs in OLD_CASES.items() for v in vs])
def test_bad_run_options_are_refused_by_name(name, value):
    """The refusals of 0.1.0's ``engine.check_options`` (checked message for message while it
    existed), now made by ``check_run_options``: the message names the option and the value."""
    with pytest.raises(ValueError, match=rf"^{name}={re.escape(repr(value))}[: ]"):
        check_run_options({name: value})


@given(st.integers(-(2**40), 2**40), st.sampled_from(["n_folds", "--n-folds", "--folds"]))
def test_errors_name_the_option_as_spelled(k, spelled):
    try:
        assert check_run_options({"n_folds": k}, spell=lambda name: spelled) == {"n_folds": k}
        assert 2 <= k <= 127
    except ValueError as err:
        assert str(err).startswith(f"{spelled}={k}") and not 2 <= k <= 127


@given(st.sampled_from(sorted(SPELLINGS)), st.booleans())
def test_canonical_negates_only_no_aliases(key, value):
    setting, got = canonical(key, value)
    assert setting is SPELLINGS[key]
    assert got is ((not value) if key == f"no_{setting.name}" else value)


# --- the command line ---------------------------------------------------------------------


def run_parser(command: str = "run") -> argparse.ArgumentParser:
    parser = cli.build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return commands.choices[command]


@pytest.mark.parametrize("command", CLI)
def test_one_argument_per_setting_and_hidden_aliases(command):
    """Every command's flags are its settings': one shown argument each, with the help of
    the command's variant; older spellings and former flags hidden."""
    flagged = COMMAND_FLAGS[command]
    # --config and --dry-run say what the command does, not how the run runs: not settings.
    commands_own = ("help", "debug", "config", "dry_run")
    actions = [a for a in run_parser(command)._actions if a.dest not in commands_own]
    shown = [a for a in actions if a.help != argparse.SUPPRESS]
    hidden = [a for a in actions if a.help == argparse.SUPPRESS]
    assert sorted(a.dest for a in shown) == sorted(s.dest for s in flagged)
    for action in shown:
        setting = next(s for s in flagged if s.dest == action.dest)
        assert (action.option_strings or [action.metavar])[0] == setting.flag
        assert action.help == setting.help
    assert sorted(f for a in hidden for f in a.option_strings) == sorted(
        f for s in flagged for f in (*s.alias_flags, *s.renamed_flags)
    )


def test_commands_share_the_settings_evaluate_takes():
    run, evaluate = ({s.name for s in COMMAND_FLAGS[c]} for c in ("run", "evaluate"))
    own = {s.name for s in SETTINGS.values() if s.scope == "evaluate"}
    assert own == {
        "outer", "outer_folds", "outer_repeats", "test_split", "train_ratio", "nested", "models",
        "prediction", "clustering", "inference", "inference_repeats",
    }  # fmt: skip
    assert evaluate - run == own and not run & own
    # SOAK's own: K, train types, sizes (the fitting options are every design's)
    assert run - evaluate == {"n_folds", "train_types", "sizes", "ratio", "size_seeds"}


def argv_settings(argv: list[str], tmp_path: Path) -> config.RunSettings:
    base = ["run", str(tmp_path / "d"), "--label", "y", "--out", str(tmp_path / "o")]
    return flags.run_settings(cli.build_parser().parse_args([*base, *argv]))


def test_old_flags_give_the_same_settings(tmp_path):
    old = ["--folds", "4", "--subset", "f", "--learner", "lda", "--learner", "knn"]
    new = ["--n-folds", "4", "--subset", "f", "--learners", "lda,knn"]
    assert argv_settings(old + ["--no-persist"], tmp_path) == argv_settings(
        new + ["--no-persist"], tmp_path
    )
    got = argv_settings(new, tmp_path)  # persist None: the run decides
    assert (got.n_folds, got.subset, got.persist, got.learners()) == (
        4, "f", None, {"lda": "lda", "knn": "knn"},
    )  # fmt: skip
    assert argv_settings([*new, "--persist"], tmp_path).persist is True


@pytest.mark.parametrize(
    ("flag", "shown"), [("--folds", "--folds=1"), ("--n-folds", "--n-folds=1")]
)
def test_flag_errors_name_the_flag_as_typed(tmp_path, capsys, flag, shown):
    argv = ["run", str(tmp_path), "--label", "y", flag, "1", "--out", str(tmp_path / "o")]
    assert cli.main(argv) == cli.USAGE_ERROR
    assert capsys.readouterr().err.startswith(f"soak: error: {shown}: need an integer")


def test_run_help_is_grouped(capsys):
    with pytest.raises(SystemExit):
        cli.main(["run", "--help"])
    out = capsys.readouterr().out
    titles = [out.index(title) for title in flags.SECTIONS.values()]
    assert titles == sorted(titles) and "--folds" not in out and "--n-folds K" in out


# --- run files ----------------------------------------------------------------------------


def test_run_file_keys_are_the_settings_and_their_aliases():
    top = [s for s in FLAGGED if run_file_table(s) is None and not s.flag_only]
    keys = {s.file_key for s in top} | {a for s in top for a in s.aliases}
    assert set(config.run_file_keys()) == keys == set(config._KINDS)
    tables: dict[str, set] = {}
    for command in COMMANDS:
        for s in command_settings(command):
            if s.cli and run_file_table(s) is not None:
                tables.setdefault(run_file_table(s), set()).add(s.file_key)
    assert {t: set(config.table_keys(t)) for t in tables} == tables
    assert set(tables) == {"evaluation", "search_subsets", "split_sensitivity", "compare_sampling"}
    assert set(config.evaluation_keys()) == tables["evaluation"]
    for command in CLI:
        assert config.setting_names(command) == [s.name for s in COMMAND_FLAGS[command]]


def file_settings(tmp_path: Path, text: str) -> config.RunSettings:
    path = tmp_path / "run.toml"
    path.write_text('data = "d"\nlabel = "y"\nout = "o"\n' + text, encoding="utf-8")
    return config.merge_settings(config.load_run_file(path), {})


NB = '[learners.nb]\nestimator = "sklearn.naive_bayes:GaussianNB"\n'


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("folds = 4\n", "n_folds = 4\n"),
        ('fold_column = "f"\n', 'fold_column = "f"\n'),
        ("no_persist = true\n", "persist = false\n"),
        ("no_persist = false\n", "persist = true\n"),
        ("no_progress = true\n", "progress = false\n"),
        ('learner = "lda,knn"\n', 'learners = ["lda", "knn"]\n'),
        (f'learner = ["nb", "lda"]\n{NB}', f'learners = ["nb", "lda"]\n{NB}'.replace(NB, "")),
    ],
)
def test_old_keys_give_the_same_settings(tmp_path, old, new):
    if "nb" in old:  # the tables alone are the learners, as a dict is to soak()
        lda = "sklearn.discriminant_analysis:LinearDiscriminantAnalysis"
        new = f'{NB}[learners.lda]\nestimator = "{lda}"\n'
        got = file_settings(tmp_path, old)
        assert list(got.learner_specs) == ["nb", "lda"] and got.learner_specs["lda"] == "lda"
        assert list(file_settings(tmp_path, new).learner_specs) == ["nb", "lda"]
        return
    assert file_settings(tmp_path, old) == file_settings(tmp_path, new)


def test_learner_tables_select_unless_a_list_picks(tmp_path):
    forest = '[learners.forest]\nestimator = "sklearn.ensemble:ExtraTreesClassifier"\n'
    assert list(file_settings(tmp_path, NB + forest).learner_specs) == ["nb", "forest"]
    assert list(file_settings(tmp_path, 'learner = ["nb"]\n' + NB + forest).learner_specs) == ["nb"]
    base = '[learners]\nbase = "featureless"\n'
    assert file_settings(tmp_path, base).learners() == {"base": "featureless"}
    assert file_settings(tmp_path, "").learner_specs is None  # the engine's default
    with pytest.raises(ValueError, match="sets learners twice"):
        file_settings(tmp_path, 'learners = ["lda"]\nlearner = ["knn"]\n')


def test_run_file_errors_name_the_key_and_the_file(tmp_path):
    with pytest.raises(ValueError, match=r"^folds=1: need an integer of at least 2 \(in run file"):
        file_settings(tmp_path, "folds = 1\n")
    with pytest.raises(ValueError, match=r"^unknown key 'fold' in run file .*fold_column"):
        file_settings(tmp_path, 'fold = "f"\n')


def test_docs_list_every_flag_and_key():
    text = DOCS.read_text(encoding="utf-8")
    for setting in FLAGGED:
        for word in (setting.flag, *setting.alias_flags, setting.file_key, *setting.aliases):
            assert f"`{word}" in text, word


# --- every command: run files, variants and renamed options ------------------------------

#: Per command: a run file (its own settings in its table) and the same settings as flags.
RUN_FILES = {
    "transfer": (
        'subset = "s"\nn_folds = 3\nlearners = ["lda"]\nsearch = false\n'
        "[search_subsets]\nthreshold = 0.05\nmax_pool = 2\nmax_inner_fits = 50\n",
        ["--subset", "s", "--n-folds", "3", "--learners", "lda", "--no-search",
         "--threshold", "0.05", "--max-pool", "2", "--max-inner-fits", "50"],
    ),
    "split-sensitivity": (
        'n_folds = 3\nlearners = ["lda"]\nmeasures = ["error", "auc"]\n'
        "[split_sensitivity]\nratios = [0.8, 0.6]\nn_repeats = 4\nalpha = 0.1\n",
        ["--n-folds", "3", "--learners", "lda", "--measures", "error,auc",
         "--ratios", "0.8,0.6", "--n-repeats", "4", "--alpha", "0.1"],
    ),
    "compare-sampling": (
        "seed = 3\n[compare_sampling]\n"
        'methods = ["random", "overlap"]\ntrain_ratio = 0.6\nn_repeats = 5\nn_neighbors = 3\n'
        'knn = "nndescent"\n',
        ["--seed", "3", "--methods", "random,overlap", "--train-ratio", "0.6",
         "--n-repeats", "5", "--n-neighbors", "3", "--knn", "nndescent"],
    ),
}  # fmt: skip
#: What every command needs, in a file and as flags.
BASE_FILE = 'data = "d"\nlabel = "y"\nout = "o"\n'


def command_settings_of(tmp_path: Path, command: str, argv: list[str]):
    args = cli.build_parser().parse_args([command, *argv])
    return flags.run_settings(args, command)


@pytest.mark.parametrize("command", RUN_FILES)
def test_run_file_equals_the_flags(tmp_path, command):
    text, flags = RUN_FILES[command]
    conf = tmp_path / "run.toml"
    conf.write_text(BASE_FILE + text, encoding="utf-8")
    from_file = command_settings_of(tmp_path, command, ["--config", str(conf)])
    base = [str(tmp_path / "d"), "--label", "y", "--out", str(tmp_path / "o")]
    by_flags = command_settings_of(tmp_path, command, [*base, *flags])
    assert from_file == by_flags
    # The defaults, and flags over the file.
    plain = tmp_path / "plain.toml"
    plain.write_text(BASE_FILE, encoding="utf-8")
    defaults_ = command_settings_of(tmp_path, command, ["--config", str(plain)])
    for s in command_line_settings(command):
        if s.cli and s.default is not REQUIRED and s.name != "learners":
            got = getattr(defaults_, s.dest)
            assert same(got, s.checked(s.default) if s.default is not None else None) or (
                got == s.default
            ), s.name
    again = command_settings_of(tmp_path, command, ["--config", str(conf), "--seed", "9"])
    assert again.seed == 9


def test_one_file_serves_every_command(tmp_path):
    """Each command takes its table and leaves the others': train_ratio and n_repeats mean
    evaluate's and compare_sampling's own, in their tables."""
    conf = tmp_path / "run.toml"
    conf.write_text(
        BASE_FILE + 'n_folds = 4\n[evaluation]\nouter = "subsampling"\ntrain_ratio = 0.9\n'
        "[split_sensitivity]\nn_repeats = 7\n[compare_sampling]\ntrain_ratio = 0.6\n",
        encoding="utf-8",
    )
    got = {c: command_settings_of(tmp_path, c, ["--config", str(conf)]) for c in CLI}
    assert got["evaluate"].train_ratio == 0.9 and got["compare-sampling"].train_ratio == 0.6
    assert got["split-sensitivity"].n_repeats == 7 and got["compare-sampling"].n_repeats == 100
    assert got["run"].n_folds == got["transfer"].n_folds == got["split-sensitivity"].n_folds == 4
    assert not hasattr(got["run"], "train_ratio") and not hasattr(got["evaluate"], "n_repeats")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[compare_sampling]\nk = 3\n", r"^k is now n_neighbors \(in \[compare_sampling\]"),
        ("[split_sensitivity]\ntrials = 5\n", r"^trials is now n_repeats \(in \[split_"),
        ("[compare_sampling]\nn_random = 5\n", r"^n_random is now n_repeats"),
        ("ratios = [0.5]\n", r"^unknown key 'ratios' .*it belongs in the \[split_sensitivity\]"),
        ("[search_subsets]\nthreshold = 2\n", r"^threshold=2: need a relative decrease"),
        ("[split_sensitivity]\nn_repeats = 2\n", r"^n_repeats=2: need an integer of at least 3"),
        ("[compare_sampling]\nn_repeats = 1\n", r"^n_repeats=1: need an integer of at least 2 "),
        ('[compare_sampling]\nmethods = ["bogus"]\n', r"^methods=\['bogus'\]: \['bogus'\] are"),
        ('[split_sensitivity]\nratios = "a"\n', r"^ratios = 'a' in \[split_sensitivity\]"),
    ],
)
def test_run_file_tables_refuse_by_key(tmp_path, text, message):
    path = tmp_path / "run.toml"
    path.write_text(BASE_FILE + text, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        config.load_run_file(path)


@pytest.mark.parametrize(
    ("command", "flags", "message"),
    [
        ("compare-sampling", ["--k", "3"], "--k is now --n-neighbors"),
        ("compare-sampling", ["--n-random", "3"], "--n-random is now --n-repeats"),
        ("compare-sampling", ["--n-repeats", "1"], "--n-repeats=1: need an integer of at least 2"),
        ("compare-sampling", ["--methods", "random,nope"], "--methods=['random', 'nope']:"),
        ("compare-sampling", ["--n-neighbors", "0"], "--n-neighbors=0: need an integer number"),
        ("split-sensitivity", ["--trials", "5"], "--trials is now --n-repeats"),
        ("split-sensitivity", ["--measure", "auc"], "--measure is now --measures"),
        ("split-sensitivity", ["--n-repeats", "2"], "--n-repeats=2: need an integer of at least 3"),
        ("split-sensitivity", ["--ratios", "0.5,x"], "need comma-separated numbers"),
        ("transfer", ["--threshold", "1"], "--threshold=1.0: need a relative decrease"),
        ("transfer", ["--max-pool", "1"], "--max-pool=1: need an integer of at least 2"),
        ("transfer", ["--max-inner-fits", "0"], "--max-inner-fits=0: need a positive integer"),
    ],
)
def test_bad_flags_of_every_command_are_one_line(tmp_path, capsys, command, flags, message):
    argv = [command, str(tmp_path / "d"), "--label", "y", "--out", str(tmp_path / "o"), *flags]
    assert cli.main(argv) == cli.USAGE_ERROR
    err = capsys.readouterr().err
    assert err.startswith("soak: error: ") and message in err and err.count("\n") == 1, err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("function", "old", "new"),
    [
        (sd.split_sensitivity, "measure", "measures"),
        (sd.split_sensitivity, "learner", "learners"),
        (sd.search_subsets, "measure", "measures"),
        (sd.search_subsets, "folds", "n_folds"),  # an older spelling, as soak run's --folds
    ],
)
def test_former_keywords_are_refused_naming_the_new_one(function, old, new):
    """Before any work: the table is not even looked at."""
    with pytest.raises(TypeError, match=rf"^{function.__name__}\(\): {old}= is now {new}=$"):
        function(None, "lda", **{old: 3})
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        function(None, "lda", bogus=3)


@pytest.mark.parametrize(
    ("function", "old", "design"),
    [
        (sd.compare_sampling, "k", "SamplingSplits(n_neighbors=...)"),
        (sd.compare_sampling, "n_random", "SamplingSplits(n_repeats=...)"),
        (sd.compare_sampling, "methods", "SamplingSplits(methods=...)"),
        (sd.compare_sampling, "seed", "SamplingSplits(seed=...)"),
        (sd.split_sensitivity, "trials", "SplitTrials(n_repeats=...)"),
        (sd.split_sensitivity, "ratios", "SplitTrials(ratios=...)"),
    ],
)
def test_a_design_option_as_a_keyword_is_refused_naming_its_design(function, old, design):
    """A former name of a design's option names the design's option, before any work."""
    name = function.__name__
    message = rf"^{name}\(\): {old}= is an option of its design: pass design={re.escape(design)}"
    with pytest.raises(TypeError, match=message):
        function(None, "lda", **{old: 3})


@pytest.mark.parametrize("function", [sd.compare_sampling, sd.split_sensitivity])
def test_a_design_of_another_class_is_refused(function):
    want = function.design_class.__name__
    with pytest.raises(TypeError, match=rf"design=SameOtherAll\(\): need a soak_dask\.{want}"):
        function(None, "lda", design=sd.SameOtherAll())


def test_variants_keep_one_meaning():
    """A setting differs between commands in its default, help or bounds only: never its kind
    or its flag."""
    for s in SETTINGS.values():
        for command in s.takers:
            mine = s.in_command(command)
            assert (mine.kind, mine.flag, mine.file_key) == (s.kind, s.flag, s.file_key)
    assert check_run_options({"n_repeats": 2}, command="compare-sampling") == {"n_repeats": 2}
    with pytest.raises(ValueError, match="n_repeats=2: need an integer of at least 3"):
        check_run_options({"n_repeats": 2}, command="split-sensitivity")
