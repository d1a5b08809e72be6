"""Every setting of a run, declared once: its name, kind, default, help and check.

A setting's name is its Python keyword (``soak(n_folds=...)``, ``load_table(fold=...)``), its
run-file key (``n_folds = 5``) and, with dashes, its ``soak run`` flag (``--n-folds 5``).
Older spellings stay accepted as ``aliases`` (``--folds``, ``folds = 5``; ``no_persist = true``
means ``persist = false``). The command line, the run file (``soak_dask.app.config``) and the
checks of ``soak`` all read `SETTINGS`, so a new setting is one entry here.

Scopes: ``"table"`` settings are ``load_table``'s, ``"run"`` settings ``soak``'s, ``"evaluate"``
settings ``evaluate``'s own (the run settings marked ``evaluate`` it takes too), and ``"app"``
settings belong to the ``soak`` command only (input, output, cluster, imports). A run file holds
``evaluate``'s own settings in an ``[evaluation]`` table (`EVALUATION_TABLE`).

Examples
--------
>>> SETTINGS["n_folds"].flag, SETTINGS["n_folds"].aliases
('--n-folds', ('folds',))
>>> check_run_options({"seed": 3, "n_folds": None, "sizes": -1})
{'seed': 3, 'n_folds': None, 'sizes': -1}
>>> check_run_options({"n_folds": 1}, spell=lambda name: "--folds")
Traceback (most recent call last):
...
ValueError: --folds=1: need an integer of at least 2
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Any, Literal

import numpy as np

from .schema import DEFAULT_N_FOLDS, INNER_SCHEMES, MEASURES, TASKS, TRAIN_TYPES

Scope = Literal["table", "run", "evaluate", "app"]
#: The commands that run learners on a table: ``soak run`` and ``soak evaluate``.
Command = Literal["run", "evaluate"]
#: The run-file table of ``evaluate``'s own settings, named as the guide's evaluation block.
EVALUATION_TABLE = "evaluation"
#: ``evaluate``'s outer strategies (``soak_dask.split.outer.OUTER``, which imports this module's
#: dependents, so it cannot be imported here).
OUTER = ("cv", "repeated_cv", "subsampling", "loo", "lodo", "bootstrap", "5x2cv", "knndm")
#: A value check: ``check(value, name)`` returns the value normalised (plain ints, a tuple of
#: train types...) or raises ValueError naming the option as ``name``.
Check = Callable[[Any, str], Any]


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: The default of a setting that has none: it must be given.
REQUIRED: Any = _Required()

#: Packages whose estimator classes a run file may name without ``allow_modules``: importing
#: them runs only their own, well-known code. A run adds others with ``allow_modules``.
ALLOWED_MODULES = ("sklearn", "soak_dask", "xgboost", "lightgbm", "catboost")

_MODULE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")


def _is_int(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def _is_strings(value: Any) -> bool:
    return isinstance(value, Sequence) and all(isinstance(v, str) for v in value)


#: Kinds of value: what a value of the kind is (a run file's types included), and how a
#: message says it.
KINDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "str": (lambda v: isinstance(v, str), "str"),
    "path": (lambda v: isinstance(v, str | os.PathLike), "path"),
    "int": (_is_int, "int"),
    "float": (lambda v: isinstance(v, Real) and not isinstance(v, bool), "float"),
    "bool": (lambda v: isinstance(v, bool | np.bool_), "bool"),
    "list": (_is_strings, "a list of strings or a comma-separated string"),
    "modules": (
        lambda v: _is_strings(v) and all(_MODULE.match(m) for m in v),
        "a list of module names such as 'mypackage' or 'mypackage.models'",
    ),
    "learners": (lambda v: True, "learners"),
    "score": (lambda v: v == "raise" or KINDS["float"][0](v), "a number or 'raise'"),
    "mapping": (lambda v: isinstance(v, Mapping), "a table (mapping)"),
}


def _positive(optional: bool) -> Check:
    """Check of a positive integer (or None, if `optional`)."""
    need = "a positive integer or None" if optional else "a positive integer"

    def check(value: Any, name: str) -> int:
        if not _is_int(value) or value < 1:
            raise ValueError(f"{name}={value!r}: need {need}")
        return int(value)

    return check


def _sizes(value: Any, name: str) -> int:
    # The refusals of soak_dask.split.sizes.check_sizes, one option at a time.
    if not _is_int(value) or value < -1:
        raise ValueError(f"{name}={value!r}: use -1 (none), 0 (smallest) or n >= 1")
    return int(value)


def _ratio(value: Any, name: str) -> float:
    if not KINDS["float"][0](value) or not 0 < value < 1:
        raise ValueError(f"{name}={value!r}: need 0 < ratio < 1")
    return float(value)


def _size_seeds(value: Any, name: str) -> int:
    if not _is_int(value) or value < 1:
        raise ValueError(f"{name}={value!r}: need an integer of at least 1")
    return int(value)


def _test_split(value: Any, name: str) -> float:
    # evaluate's own check (run.evaluate._check_share), one option at a time.
    if not KINDS["float"][0](value) or not 0 <= value <= 0.5:
        raise ValueError(f"{name}={value!r}: need a share from 0 (none) to 0.5")
    return float(value)


def _error_score(value: Any, name: str) -> float | str:
    # A flag's text ("nan", "0", "raise") or a number: scikit-learn's error_score.
    if isinstance(value, str) and value != "raise":
        try:
            value = float(value)
        except ValueError:
            pass
    if not KINDS["score"][0](value):
        raise ValueError(f"{name}={value!r}: need {KINDS['score'][1]}")
    return value if value == "raise" else float(value)


def _one_of(choices: Sequence[str]) -> Check:
    def check(value: Any, name: str) -> str:
        if value not in choices:
            raise ValueError(f"{name}={value!r}: choose from {list(choices)}")
        return value

    return check


# The checks that live with folds and plans are imported when used: this module sits below
# them in the import graph, so that they (and load_table) may read SETTINGS.
def _seed(value: Any, name: str) -> int:
    from .split.folds import check_seed

    return check_seed(value, name)


def _n_folds(value: Any, name: str) -> int:
    from .split.folds import check_n_folds

    return check_n_folds(value, name)


def _group_assignment(value: Any, name: str) -> str:
    from .split.folds import check_group_assignment

    return check_group_assignment(value, name)


def _train_types(value: Any, name: str) -> tuple[str, ...]:
    from .split.designs import check_train_types

    if not _is_strings(value):
        raise ValueError(f"{name}={value!r}: need {KINDS['list'][1]}")
    return check_train_types(value)  # its errors say train_types, as the CLI's always did


@dataclass(frozen=True)
class Setting:
    """One setting of a run.

    Attributes
    ----------
    name : str
        The Python keyword, and unless `key` says otherwise the run-file key; the flag is
        ``--`` + the key with dashes.
    scope : {"table", "run", "evaluate", "app"}
        ``load_table``'s, ``soak``'s, ``evaluate``'s own, or the ``soak`` command's.
    kind : str
        A key of `KINDS`: the type of a value.
    default : object
        The value when the setting is not given; `REQUIRED` if it must be given.
    help : str
        One line for ``--help``.
    check : callable, optional
        ``check(value, name)``, returning the value normalised; default: the kind's type.
    aliases : tuple of str
        Older spellings still accepted, as run-file keys and (with dashes) flags. For a bool,
        ``no_NAME`` means the opposite (``no_persist = true`` is ``persist = false``).
    metavar : str, optional
        The flag's value in ``--help``.
    choices : tuple of str
        The values allowed, if only a few are.
    empty : (str, str), optional
        For a list that must name something: what one item names, and what leaving the
        setting out means (an empty list is refused with both).
    identity : bool
        Recorded in the results' attrs and the checkpoint's identity (a run resumes only with
        the same value).
    evaluate : bool
        A ``"run"`` setting that ``evaluate`` takes too (``soak evaluate`` has its flag).
    cli : bool
        Has a flag and a run-file key; False: Python only.
    positional : bool
        The flag is a positional argument (``DATA``).
    attr : str
        The ``RunSettings`` attribute and argparse dest, if not the name.
    key : str
        The run-file key, if not the name.
    evaluate_default : object, optional
        A ``"run"`` setting's default under ``evaluate``, if not `default` (prior correction:
        off in SOAK, whose baselines and published results use the plain largest probability;
        on when evaluating a learner).
    """

    name: str
    scope: Scope
    kind: str
    default: Any
    help: str
    check: Check | None = None
    aliases: tuple[str, ...] = ()
    metavar: str | None = None
    choices: tuple[str, ...] = ()
    empty: tuple[str, str] | None = None
    identity: bool = False
    evaluate: bool = False
    cli: bool = True
    positional: bool = False
    attr: str = ""
    key: str = ""
    evaluate_default: Any = None

    def default_in(self, command: str) -> Any:
        """The default under ``command``: ``evaluate_default`` for evaluate if it has one."""
        if command == "evaluate" and self.evaluate_default is not None:
            return self.evaluate_default
        return self.default

    @property
    def file_key(self) -> str:
        """The run-file key."""
        return self.key or self.name

    @property
    def flag(self) -> str:
        """The ``soak`` flag: ``--n-folds`` (``DATA`` for a positional)."""
        return self.name.upper() if self.positional else _dashed(self.file_key)

    @property
    def dest(self) -> str:
        """Where the value is kept: argparse dest and ``RunSettings`` attribute."""
        return self.attr or self.name

    @property
    def alias_flags(self) -> tuple[str, ...]:
        """Older flags still accepted (``--no-NAME`` of a bool is its own negation)."""
        return tuple(_dashed(a) for a in self.aliases if not self.negated_by(a))

    def negated_by(self, alias: str) -> bool:
        """Whether `alias` means the opposite of this (bool) setting."""
        return self.kind == "bool" and alias == f"no_{self.name}"

    def checked(self, value: Any, name: str | None = None) -> Any:
        """`value` checked and normalised; errors call the setting `name` (default: its name)."""
        name = self.name if name is None else name
        if value is None and self.default is None:
            return None
        if self.check is not None:
            return self.check(value, name)
        if self.choices:
            return _one_of(self.choices)(value, name)
        holds, expected = KINDS[self.kind]
        if not holds(value):
            raise ValueError(f"{name}={value!r}: need {expected}")
        return value


def _dashed(name: str) -> str:
    return "--" + name.replace("_", "-")


def _column(name: str, help: str, default: Any = None, **kw: Any) -> Setting:
    """A column role of ``load_table``."""
    return Setting(name, "table", "str", default, help, metavar="COLUMN", identity=True, **kw)


def _count(name: str, default: Any, help: str, check: Check, metavar: str = "N", **kw: Any):
    """An integer of ``soak``, recorded in the results."""
    return Setting(name, "run", "int", default, help, check, metavar=metavar, identity=True, **kw)


def _path(name: str, help: str, default: Any = None, metavar: str = "FILE") -> Setting:
    """A file, directory or URL of the ``soak`` command."""
    return Setting(name, "app", "path", default, help, metavar=metavar)


# fmt: off
_DECLARED = (
    # load_table's, in its order: the table and its columns.
    _column("label", "column to predict", REQUIRED),
    _column("subset", "column of subsets (none: plain K-fold CV)"),
    _column("group", "rows sharing a group value stay in one fold"),
    # A run file's ``fold = 3``, or ``--fold 3``, would read as K: the key says column.
    _column("fold", "column of folds 1..K, used as is", key="fold_column"),
    Setting(
        "features", "table", "list", None, "comma-separated feature columns",
        metavar="A,B,...", empty=("column", "to use every numeric column"), identity=True,
    ),
    Setting(
        "exclude", "table", "list", (), "comma-separated columns that are not features",
        metavar="A,B,...",
    ),
    Setting(
        "coordinates", "table", "str", "exclude",
        "columns named like coordinates (x, y, xcoord, lon, lat, easting, row, ...) when "
        "--features is not given: left out with a warning (exclude, the default) or used",
        choices=("exclude", "include"),
    ),
    Setting(
        "coords", "table", "list", None,
        "comma-separated coordinate columns (e.g. x,y), kept as coordinates for spatial folds "
        "and diagnostics, never features unless named in --features",
        metavar="X,Y", empty=("column", "for no coordinates"), identity=True,
    ),
    Setting(
        "task", "table", "str", None, "the task, instead of the one inferred from the label",
        choices=TASKS, cli=False,
    ),
    Setting(
        "storage_options", "table", "mapping", None, "fsspec options of a remote source",
        cli=False,
    ),
    Setting(
        "rows_per_partition", "table", "int", None,
        "rows per Dask partition, what one task reads (default 500000; lower it for workers "
        "with little memory)",
        _positive(optional=True), metavar="N",
    ),
    # soak's, in its order: the run.
    Setting(
        "learners", "run", "learners", None,
        "learners to fit, comma-separated or repeated (--learner NAME too): built-ins or "
        "[learners.NAME] of the run file (default: featureless and a linear model)",
        lambda value, name: value,  # soak_dask.learn.builtin.resolve_learners checks them
        aliases=("learner",), metavar="NAME", identity=True, evaluate=True,
        empty=("learner", "for the default learners (featureless and a linear model)"),
        attr="learner_specs",  # unbuilt there: RunSettings.learners() builds them
    ),
    _count(
        "n_folds", None, f"K (default {DEFAULT_N_FOLDS}, or the fold column's largest fold)",
        _n_folds, metavar="K", aliases=("folds",),
    ),
    _count(
        "seed", 1, "seed of folds and learners, 0 to 2**32 - 1 (default 1)", _seed, evaluate=True
    ),
    Setting(
        "train_types", "run", "list", TRAIN_TYPES,
        f"comma-separated, from {','.join(TRAIN_TYPES)} (default: all)",
        _train_types, metavar="TYPES", identity=True,
        empty=("train type", f"for all of them ({', '.join(TRAIN_TYPES)})"),
    ),
    Setting(
        "measures", "run", "list", None,
        f"e.g. {','.join(MEASURES['classification'][:2])} (default: every measure of the task)",
        metavar="A,B,...", empty=("measure", "for every measure of the task"), identity=True,
        evaluate=True,
    ),
    Setting(
        "stratify", "run", "bool", True, "balance folds within subset × label",
        identity=True, cli=False,
    ),
    Setting(
        "persist", "run", "bool", True,
        "keep the table in cluster memory for the fits (--no-persist: each fit reads its rows "
        "from storage, for tables larger than the cluster's memory)",
        aliases=("no_persist",), evaluate=True,
    ),
    Setting(
        "error_score", "run", "score", np.nan,
        "score of a fit that raises: NaN (the default, with a warning naming the learner), "
        "another number, or raise to stop at the first failure",
        _error_score, metavar="SCORE", evaluate=True,
    ),
    Setting(
        "progress", "run", "bool", True, "show a progress bar of the fits",
        aliases=("no_progress",), evaluate=True,
    ),
    Setting(
        "checkpoint", "run", "path", None,
        "where finished fits are saved so a stopped run resumes (default: OUT.checkpoint; "
        "removed once the results are written)",
        metavar="DIR", evaluate=True,
    ),
    _count(
        "sizes", -1,
        "also down-sampled train sizes: 0 the smallest train set, N also smallest*ratio^1..N",
        _sizes,
    ),
    Setting(
        "ratio", "run", "float", 0.5, "ratio between sizes (0.5)", _ratio, metavar="R",
        identity=True,
    ),
    _count("size_seeds", 1, "down-samples per size (1)", _size_seeds),
    _count(
        "max_train_rows", None,
        "fit a larger train set on a seeded sample of exactly N rows (class shares kept)",
        _positive(optional=True), evaluate=True,
    ),
    Setting(
        "incremental", "run", "bool", False,
        "feed partial_fit learners one block of rows at a time", identity=True, evaluate=True,
    ),
    _count("epochs", 1, "passes for --incremental (1)", _positive(optional=False), evaluate=True),
    Setting(
        "onepass", "run", "bool", True,
        "fit additive learners from one pass of block statistics", identity=True, cli=False,
        evaluate=True,
    ),
    Setting(
        "prior_correction", "run", "bool", False,
        "predict the class of largest probability / training share (maximises balanced "
        "accuracy; probabilities unchanged); default: off for run, on for evaluate",
        identity=True, evaluate=True, evaluate_default=True,
    ),
    Setting(
        "calibration", "run", "str", None,
        "platt: a sigmoid fitted on out-of-fold scores of each train set (binary tasks; "
        "default: none)",
        choices=("platt",), identity=True, evaluate=True,
    ),
    Setting(
        "inner", "run", "str", "auto",
        "inner resampling that ranks a tuned learner's settings: auto, cv, repeated_cv, loo "
        "(default auto: see docs/nesting.md)",
        choices=INNER_SCHEMES, identity=True, evaluate=True,
    ),
    Setting(
        "inner_folds", "run", "int", 5, "K of the inner cv (default 5)", _n_folds,
        metavar="K", identity=True, evaluate=True,
    ),
    Setting(
        "inner_repeats", "run", "int", 1, "repeats of the inner repeated_cv (default 1)",
        _positive(optional=False), metavar="N", identity=True, evaluate=True,
    ),
    Setting(
        "balance", "run", "str", "class",
        "how folds are balanced: by class within subsets (class, the default), or also by each "
        "row's degree of overlap with other classes (overlap; classification)",
        choices=("class", "overlap"), identity=True, evaluate=True,
    ),
    Setting(
        "group_assignment", "run", "str", "rows",
        "with --group, how whole groups are dealt to the folds of each stratum: rows (largest "
        "group first onto the emptiest fold, the default) or mlr3resampling (the same number "
        "of groups per fold, rows ignored, as the R package deals them)",
        _group_assignment, identity=True, evaluate=True, choices=("rows", "mlr3resampling"),
    ),
    # evaluate's own, in its order: a run file's [evaluation] table.
    Setting(
        "outer", "evaluate", "str", "cv",
        "how the training rows are scored: K-fold (cv), K-fold with fresh folds per repeat, "
        "random train/test splits, leave one row or group out, bootstrap, 5 repeats of 2-fold "
        "CV (5x2cv, for the 5x2cv tests), or kNNDM folds matched to --prediction (knndm; needs "
        "--coords) (default cv)",
        choices=OUTER,
    ),
    Setting(
        "prediction", "evaluate", "path", None,
        "the prediction area of outer knndm: Parquet table or GeoTIFF/Zarr raster with the "
        "coordinate columns (or x, y dims)",
        metavar="PATH",
    ),
    Setting(
        "outer_folds", "evaluate", "int", 5,
        "K of cv and repeated_cv (default 5), capped at the groups or the rarest class's rows",
        _n_folds, metavar="K",
    ),
    Setting(
        "outer_repeats", "evaluate", "int", 1,
        "repeats of repeated_cv, splits of subsampling, resamples of bootstrap (default 1)",
        _positive(optional=False), metavar="N",
    ),
    Setting(
        "test_split", "evaluate", "float", 0.0,
        "share of the rows reserved as a test split, scored once by the final models "
        "(0, the default: none; at most 0.5)",
        _test_split, metavar="SHARE",
    ),
    Setting(
        "train_ratio", "evaluate", "float", 0.8,
        "share of the rows that train in each subsampling split (default 0.8)", _ratio,
        metavar="R",
    ),
    Setting(
        "nested", "evaluate", "bool", True,
        "tune and select features inside every outer fold (default); --no-nested does it once "
        "on all training rows: faster, and optimistic",
    ),
    Setting(
        "models", "evaluate", "path", None,
        "directory to save each learner's final model in, as LEARNER.skops (default: not saved)",
        metavar="DIR",
    ),
    # The soak command's: input, output, cluster, imports.
    Setting(
        "data", "app", "path", REQUIRED,
        "Parquet or CSV/TSV file/directory/glob, or Zarr store, path or URL", positional=True,
    ),
    _path("out", "results to write: .zarr or .nc", REQUIRED, metavar="PATH"),
    Setting("overwrite", "app", "bool", False, "replace --out"),
    Setting(
        "scheduler", "app", "str", None,
        "running Dask scheduler (tcp://, tls:// or a scheduler file); default: a LocalCluster "
        "on this machine",
        metavar="ADDRESS",
    ),
    _path("tls_ca_file", "TLS CA (PEM)"),
    _path("tls_cert", "client cert (PEM)"),
    _path("tls_key", "client key (PEM)"),
    Setting(
        "allow_modules", "app", "modules", (),
        f"packages or modules that run-file learners may import besides "
        f"{', '.join(ALLOWED_MODULES)} (importing a module runs its code)",
        metavar="A,B,...",
    ),
)
# fmt: on

#: Every setting by name, in order: ``load_table``'s, ``soak``'s, ``evaluate``'s, then the
#: command's.
SETTINGS: dict[str, Setting] = {s.name: s for s in _DECLARED}

#: Each spelling of a setting (name, run-file key, older spellings) -> the setting.
SPELLINGS: dict[str, Setting] = {
    key: s for s in _DECLARED for key in (s.name, s.file_key, *s.aliases)
}


def defaults(scope: Scope) -> dict[str, Any]:
    """The default of each setting of `scope`, in order (`REQUIRED` if it has none).

    >>> defaults("run")["n_folds"] is None and defaults("run")["seed"]
    1
    """
    return {s.name: s.default for s in _DECLARED if s.scope == scope}


def command_settings(command: Command) -> list[Setting]:
    """The settings of ``soak run`` or ``soak evaluate``, in order: the table's, the run's
    (for evaluate, those marked ``evaluate``, then its own) and the command's.

    >>> [s.name for s in command_settings("evaluate") if s.scope in ("run", "evaluate")][:4]
    ['learners', 'seed', 'measures', 'persist']
    """
    if command == "run":
        return [s for s in _DECLARED if s.scope != "evaluate"]
    return [s for s in _DECLARED if s.scope != "run" or s.evaluate]


def canonical(key: str, value: Any) -> tuple[Setting, Any]:
    """The setting that `key` spells and `value` as its own (a ``no_NAME`` alias negated).

    >>> canonical("no_persist", True)[0].name, canonical("no_persist", True)[1]
    ('persist', False)
    """
    setting = SPELLINGS[key]
    return setting, (not value) if setting.negated_by(key) else value


def check_run_options(values: Mapping[str, Any], spell: Callable[[str], str] = str) -> dict:
    """Check ``soak``'s options before any work; return them normalised (plain ints, the
    train types as a tuple in canonical order...).

    Parameters
    ----------
    values : mapping
        Setting name -> value, for any settings of `SETTINGS` (table and app ones included).
    spell : callable
        How the caller writes a setting, for messages: ``str`` (``n_folds``) in Python, the
        flag as typed (``--folds``) on the command line.

    Raises
    ------
    ValueError
        Naming the first bad option as `spell` writes it, the value and what it needs.
    """
    unknown = sorted(set(values) - set(SETTINGS))
    if unknown:
        raise ValueError(f"unknown options {unknown}; options: {list(SETTINGS)}")
    return {name: SETTINGS[name].checked(value, spell(name)) for name, value in values.items()}


def identity(values: Mapping[str, Any]) -> dict[str, Any]:
    """The run settings among `values` that identify a run (results' attrs, checkpoint)."""
    return {
        s.name: values[s.name]
        for s in _DECLARED
        if s.identity and s.scope == "run" and s.name in values
    }
