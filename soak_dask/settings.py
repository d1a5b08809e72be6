"""Every setting of a run, declared once: its name, kind, default, help and check.

A setting's name is its Python keyword (``soak(n_folds=...)``, ``load_table(fold=...)``), its
run-file key (``n_folds = 5``) and, with dashes, its ``soak run`` flag (``--n-folds 5``).
Older spellings stay accepted as ``aliases`` (``--folds``, ``folds = 5``; ``no_persist = true``
means ``persist = false``). The command line, the run file (``soak_dask.app.config``) and the
checks of ``soak`` all read `SETTINGS`, so a new setting is one entry here.

Scopes: ``"table"`` settings are ``load_table``'s, ``"run"`` settings ``soak``'s (and those of
the other functions that take them: ``n_folds``, ``seed``, ``learners``...), ``"evaluate"``,
``"search"``, ``"split-sensitivity"`` and ``"compare-sampling"`` settings one function's own, and
``"app"`` settings belong to the ``soak`` commands only (input, output, cluster, imports). Which
functions and commands take a setting is its ``commands`` (`COMMANDS`); where one idea has one
name but another default or help in a command (``n_folds`` is 5 in ``split_sensitivity``), the
setting's ``variants`` say so, and `command_settings` gives each command its own. A run file
holds the shared settings at its top level and each function's own in its table
(`RUN_FILE_TABLES`: ``[evaluation]``, ``[search_subsets]``, ``[split_sensitivity]``,
``[compare_sampling]``). Names that changed (``k`` is now ``n_neighbors``) are ``renamed``:
refused with a message that names the new one (``option_checks.refuse_unknown``).

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
from dataclasses import dataclass, field, replace
from numbers import Real
from typing import Any, Literal

import numpy as np

from .schema import DEFAULT_N_FOLDS, INNER_SCHEMES, MEASURES, TASKS, TRAIN_TYPES
from .split.fold_options import (
    CLUSTERINGS,
    OUTER,
    check_clustering,
    check_group_assignment,
    check_n_folds,
    check_open_ratio,
    check_seed,
    check_size_seeds,
    check_sizes,
)

Scope = Literal[
    "table", "run", "evaluate", "search", "split-sensitivity", "compare-sampling", "app"
]
#: The functions that run learners on a table, by the name of their ``soak`` command:
#: ``soak`` (``run``), ``evaluate``, ``transfer``, ``search_subsets`` (``search``, whose
#: settings ``soak transfer`` takes too), ``split_sensitivity``, ``compare_sampling``.
Command = Literal["run", "evaluate", "transfer", "search", "split-sensitivity", "compare-sampling"]
COMMANDS: tuple[str, ...] = (
    "run",
    "evaluate",
    "transfer",
    "search",
    "split-sensitivity",
    "compare-sampling",
)
#: The Python function of each command, for messages.
FUNCTIONS = {
    "run": "soak",
    "evaluate": "evaluate",
    "transfer": "transfer",
    "search": "search_subsets",
    "split-sensitivity": "split_sensitivity",
    "compare-sampling": "compare_sampling",
}
#: The run-file table of ``evaluate``'s own settings, named as the guide's evaluation block.
EVALUATION_TABLE = "evaluation"
#: The run-file table of each function's own settings (scope -> table); the others are at the
#: top level.
RUN_FILE_TABLES = {
    "evaluate": EVALUATION_TABLE,
    "search": "search_subsets",
    "split-sensitivity": "split_sensitivity",
    "compare-sampling": "compare_sampling",
}
#: A value check: ``check(value, name)`` returns the value normalised (plain ints, a tuple of
#: train types...) or raises ValueError naming the option as ``name``.
Check = Callable[[Any, str], Any]


class OptionError(ValueError):
    """An option refused by a check of `settings` that knows which one it is.

    Attributes
    ----------
    setting : str
        The refused setting's name, so that a caller can say where it was given (a run file).
    """

    def __init__(self, message: str, setting: str) -> None:
        super().__init__(message)
        self.setting = setting


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
    "floats": (
        lambda v: (
            isinstance(v, Sequence)
            and not isinstance(v, str)
            and all(isinstance(x, Real) and not isinstance(x, bool) for x in v)
        ),
        "a list of numbers or comma-separated numbers",
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


def _block_size(value: Any, name: str) -> float:
    # The size a flag or run file gives spatial_blocks (which checks it against the extent).
    if not KINDS["float"][0](value) or not 0 < value < float("inf"):
        raise ValueError(f"{name}={value!r}: need a positive size in the coordinates' unit")
    return float(value)


def _clustering(value: Any, name: str) -> str:
    # The space (so the default) is known to kNNDM only: a value given is checked here.
    return check_clustering(value, "geographical", name)


def at_least(low: int, why: str = "") -> Check:
    """Check of an integer of at least `low` (`why`: what it is for, added to the refusal)."""

    def check(value: Any, name: str) -> int:
        if not _is_int(value) or value < low:
            raise ValueError(f"{name}={value!r}: need an integer of at least {low}{why}")
        return int(value)

    return check


def _ratios(value: Any, name: str) -> tuple[float, ...]:
    from .split.trials import check_ratios

    return check_ratios(value, name)


def check_alpha(alpha: Any, name: str = "alpha") -> float:
    """A test's level in (0, 0.5]."""
    if isinstance(alpha, bool) or not isinstance(alpha, Real) or not 0 < alpha <= 0.5:
        raise ValueError(f"{name}={alpha!r}: need a level in (0, 0.5], e.g. 0.05")
    return float(alpha)


def check_threshold(threshold: Any, name: str = "threshold") -> float:
    """``threshold`` as a float from 0 to below 1, or a ValueError saying what it means."""
    if isinstance(threshold, bool) or not isinstance(threshold, Real):
        raise ValueError(f"{name}={threshold!r}: need a number from 0 (any decrease) up")
    if not 0 <= threshold < 1:
        raise ValueError(
            f"{name}={threshold!r}: need a relative decrease from 0 (any) to below 1, "
            "e.g. 0.01 (a subset must lower the inner-CV error by more than 1 %)"
        )
    return float(threshold)


def _max_pool(value: Any, name: str) -> int:
    # The upper bound, the number of subsets, is known from the table only.
    if not _is_int(value) or value < 2:
        raise ValueError(f"{name}={value!r}: need an integer of at least 2, or None for no limit")
    return int(value)


def _n_neighbors(value: Any, name: str) -> int:
    from .split.overlap import check_k

    return check_k(value, name)


def _methods(value: Any, name: str) -> tuple[str, ...]:
    from .split.sampling_splits import check_methods

    return check_methods(value, name)


def _one_of(choices: Sequence[str]) -> Check:
    def check(value: Any, name: str) -> str:
        if value not in choices:
            raise ValueError(f"{name}={value!r}: choose from {list(choices)}")
        return value

    return check


def _train_types(value: Any, name: str) -> tuple[str, ...]:
    from .split.same_other_all import check_train_types

    if not _is_strings(value):
        raise ValueError(f"{name}={value!r}: need {KINDS['list'][1]}")
    return check_train_types(value)  # its errors say train_types, as the CLI's always did


#: Every measure of every task.
MEASURES_OF_ANY_TASK = frozenset(m for ms in MEASURES.values() for m in ms)


def _measure_names(value: Any, name: str) -> Any:
    """``value`` unchanged if each of its names is a measure of some task: a name that is none
    is refused before the table is read (which task the names must be is known only then,
    ``learn.measures.check_measures``)."""
    if not _is_strings(value):
        raise ValueError(f"{name}={value!r}: need {KINDS['list'][1]}")
    names = value.split(",") if isinstance(value, str) else value
    unknown = [m.strip() for m in names if m.strip() not in {*MEASURES_OF_ANY_TASK, ""}]
    if unknown:
        lists = "; ".join(f"{task}: {', '.join(map(repr, ms))}" for task, ms in MEASURES.items())
        what = "is no measure" if len(unknown) == 1 else "are no measures"
        raise ValueError(
            f"{name}={value!r}: {', '.join(map(repr, unknown))} {what}; choose from {lists}"
        )
    return value


@dataclass(frozen=True)
class Setting:
    """One setting of a run.

    Attributes
    ----------
    name : str
        The Python keyword, and unless `key` says otherwise the run-file key; the flag is
        ``--`` + the key with dashes.
    scope : {"table", "run", "evaluate", "search", "split-sensitivity", "compare-sampling", "app"}
        ``load_table``'s, ``soak``'s (shared by the functions that take it), one function's
        own (in its run-file table, `RUN_FILE_TABLES`), or the ``soak`` commands'.
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
        A ``"run"`` setting that ``evaluate`` takes too (``soak evaluate`` has its flag), when
        `commands` is not given.
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
    commands : tuple of str, optional
        The functions and commands (`COMMANDS`) that take the setting. Default: by scope
        (``soak run`` and ``soak evaluate`` for table and app settings, ``run`` (and
        ``evaluate`` if marked) for run settings, the function for its own).
    variants : mapping, optional
        Command -> the fields that differ there (``default``, ``help``, ``check``, ``scope``,
        ``metavar``, ``renamed``...): one idea, one name, though ``split_sensitivity``'s K is
        5 where ``soak``'s is 10.
    renamed : tuple of str
        Former names, refused (as keywords, flags and run-file keys) with a message that names
        this one: unlike `aliases`, they no longer work.
    flag_only : str
        Why a run file may not set it (``allow_modules``: a run file cannot allow itself to
        import code); "" if it may. Such a setting comes only from a flag the person types or
        from Python, and a run file that sets it is refused, naming the key and the flag.
    designs : mapping, optional
        For an option of ``evaluate`` that only some outer strategies read: strategy -> the
        option's value there when it is not given (``outer_repeats`` is 5 for ``5x2cv``, 1
        for the others). Given to a strategy not in it, it is refused
        (`check_design_options`). None: every strategy reads it.
    drawn : bool
        Says how folds are drawn (their number, stratification, balance, how groups are
        dealt): a table's fold column gives the folds instead, so given with one it is refused
        (`check_fold_column_options`).
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
    commands: tuple[str, ...] | None = None
    variants: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    renamed: tuple[str, ...] = ()
    flag_only: str = ""
    designs: Mapping[str, Any] | None = None
    drawn: bool = False

    @property
    def takers(self) -> tuple[str, ...]:
        """The commands that take the setting (`commands`, or those of its scope)."""
        if self.commands is not None:
            return self.commands
        if self.scope in ("table", "app"):
            return ("run", "evaluate")
        if self.scope == "run":
            return ("run", "evaluate") if self.evaluate else ("run",)
        return (self.scope,)

    def in_command(self, command: str) -> Setting:
        """The setting as ``command`` takes it: its `variants` there applied."""
        changes = self.variants.get(command)
        if not changes:
            return self
        return replace(self, **changes, variants={})

    def default_in(self, command: str) -> Any:
        """The default under ``command``: its variant's, or ``evaluate_default`` for evaluate
        if it has one."""
        if "default" in self.variants.get(command, {}):
            return self.variants[command]["default"]
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

    @property
    def renamed_flags(self) -> tuple[str, ...]:
        """Former flags, refused with a message naming `flag`."""
        return tuple(_dashed(a) for a in self.renamed)

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
    """A file, directory or URL of the ``soak`` commands."""
    return Setting(name, "app", "path", default, help, metavar=metavar, commands=CLI)


#: Every function's command, the commands with a command line, and groups of them.
ALL: tuple[str, ...] = COMMANDS
CLI: tuple[str, ...] = ("run", "evaluate", "transfer", "split-sensitivity", "compare-sampling")
_SUBSETS = ("run", "evaluate", "transfer", "search")  # the tables whose subsets play a part
#: The commands that make spatial groups (compare-sampling samples rows one by one: no groups).
_GROUPED = ("run", "evaluate", "transfer", "split-sensitivity")
#: evaluate's strategies that deal folds themselves: they read balance and group_assignment.
_DEALT = ("cv", "repeated_cv", "5x2cv")
_DIRECTORY = {  # the commands that write a directory: --out and --overwrite say so
    "transfer": "directory for the results (transfer.zarr, search.zarr, CSV), the figures and "
    "report.html",
    "split-sensitivity": "directory for summary.csv, trials.csv, split_sensitivity.png and "
    "split_sensitivity.json",
    "compare-sampling": "directory for mai.csv, summary.csv, random_accuracy.csv, mai.png",
}


def _replace_help(command: str) -> str:
    return (
        f"replace the output of an earlier 'soak {command}' in --out (only the files it wrote; "
        "a directory holding other files is refused)"
    )


# fmt: off
_DECLARED = (
    # load_table's, in its order: the table and its columns.
    _column("label", "column to predict", REQUIRED, commands=ALL),
    # split_sensitivity's splits and compare_sampling's ignore subsets and folds (and
    # compare_sampling refuses groups: it samples rows one by one).
    _column("subset", "column of subsets (none: plain K-fold CV)", commands=_SUBSETS),
    _column(
        "group", "rows sharing a group value stay in one fold",
        commands=(*_SUBSETS, "split-sensitivity"),
    ),
    # A run file's ``fold = 3``, or ``--fold 3``, would read as K: the key says column.
    _column(
        "fold", "column of folds 1..K, used as is; or the folds.parquet soak knndm wrote",
        key="fold_column", commands=_SUBSETS,
    ),
    Setting(
        "features", "table", "list", None, "comma-separated feature columns",
        metavar="A,B,...", empty=("column", "to use every numeric column"), identity=True,
        commands=ALL,
    ),
    Setting(
        "exclude", "table", "list", (), "comma-separated columns that are not features",
        metavar="A,B,...", commands=ALL,
    ),
    Setting(
        "coordinates", "table", "str", "exclude",
        "columns named like coordinates (x, y, xcoord, lon, lat, easting, row, ...) when "
        "--features is not given: left out with a warning (exclude, the default) or used",
        choices=("exclude", "include"), commands=ALL,
    ),
    Setting(
        "coords", "table", "list", None,
        "comma-separated coordinate columns (e.g. x,y), kept as coordinates for spatial folds "
        "and diagnostics, never features unless named in --features",
        metavar="X,Y", empty=("column", "for no coordinates"), identity=True, commands=ALL,
    ),
    Setting(
        "crs", "table", "str", None,
        "the CRS of --coords (e.g. EPSG:32632) when the file does not say (GeoParquet and "
        "soak extract's tables do): distances are then in its unit, and degrees are refused "
        "where metres are needed",
        metavar="CRS", identity=True, commands=ALL,
    ),
    Setting(
        "task", "table", "str", None, "the task, instead of the one inferred from the label",
        choices=TASKS, cli=False, commands=ALL,
    ),
    Setting(
        "storage_options", "table", "mapping", None, "fsspec options of a remote source",
        cli=False, commands=ALL,
    ),
    Setting(
        "rows_per_partition", "table", "int", None,
        "rows per Dask partition, what one task reads (default 500000; lower it for workers "
        "with little memory)",
        _positive(optional=True), metavar="N", commands=ALL,
    ),
    Setting(
        "duplicates", "table", "str", "refuse",
        "rows found in more than one file of a CSV or Parquet folder or glob: refused "
        "(refuse, the default; one pass over the files) or allowed",
        choices=("refuse", "allow"), commands=ALL,
    ),
    # The command's spatial groups (soak_dask.app.table_input), made after the table loads:
    # blocks or clusters of the coordinates as the group column (spatial_blocks/_clusters).
    # The commands' own: a Python user calls those functions.
    Setting(
        "blocks", "app", "float", None,
        "square (or --block-shape hex) blocks of this size in the coordinates' unit as the "
        "group column, so a block's rows share a fold (needs --coords; soak info --spatial "
        "suggests a size)",
        _block_size, metavar="SIZE", identity=True, drawn=True, commands=_GROUPED,
    ),
    Setting(
        "block_shape", "app", "str", "square", "shape of the --blocks",
        choices=("square", "hex"), identity=True, commands=_GROUPED,
    ),
    Setting(
        "clusters", "app", "int", None,
        "k-means clusters of the coordinates (K of them, seed 1) as the group column, so a "
        "cluster's rows share a fold (needs --coords)",
        at_least(2), metavar="K", identity=True, drawn=True, commands=_GROUPED,
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
        commands=ALL,
        variants={"split-sensitivity": {
            "help": "the one learner studied: a built-in or [learners.NAME] of the run file "
            "(default: logistic, or linear for regression)",
            "empty": ("learner", "for logistic (linear for regression)"),
        }},
    ),
    _count(
        "n_folds", None, f"K (default {DEFAULT_N_FOLDS}; a fold column gives its own)",
        check_n_folds, metavar="K", aliases=("folds",),
        commands=("run", "transfer", "search", "split-sensitivity"), drawn=True,
        variants={"split-sensitivity": {
            "default": 5, "help": "K of the CV inside each train part (default 5)",
            "drawn": False,
        }},
    ),
    _count(
        "seed", 1, "seed of folds and learners, 0 to 2**32 - 1 (default 1)", check_seed,
        evaluate=True,
        commands=ALL,
        variants={
            "split-sensitivity": {"help": "seed of splits, folds and learners (default 1)"},
            "compare-sampling": {"help": "seed of the splits and learners (default 1)"},
        },
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
        _measure_names, metavar="A,B,...", empty=("measure", "for every measure of the task"),
        identity=True,
        evaluate=True, commands=("run", "evaluate", "transfer", "search", "split-sensitivity"),
        variants={
            "transfer": {
                "help": "measures of the matrix and the search, which minimises the first "
                "(maximises accuracy, AUC or R²) (default: every measure of the task, error or "
                "mse first)",
            },
            "search": {
                "help": "measures to score; the search minimises the first (maximises "
                "accuracy, AUC or R²) (default: every measure of the task, error or mse first)",
                "renamed": ("measure",),
            },
            "split-sensitivity": {
                "help": "measures to score; the first is the one the statistics and the "
                "recommendation use (default: accuracy, or rmse for regression)",
                "empty": ("measure", "for accuracy (rmse for regression)"),
                "renamed": ("measure",),
            },
        },
    ),
    Setting(
        "stratify", "run", "bool", True, "balance folds within subset × label",
        identity=True, cli=False, commands=("run", "transfer", "search"), drawn=True,
    ),
    Setting(
        "persist", "run", "bool", None,
        "keep the columns a run reads in cluster memory for its passes (--persist), or read "
        "them from storage at each pass (--no-persist); default: kept when they take at most "
        "half the memory the workers have for tasks, and the run says which and why",
        aliases=("no_persist",), evaluate=True, commands=ALL,
    ),
    Setting(
        "error_score", "run", "score", np.nan,
        "score of a fit that raises: NaN (the default, with a warning naming the learner), "
        "another number, or raise to stop at the first failure",
        _error_score, metavar="SCORE", evaluate=True, commands=ALL,
    ),
    Setting(
        "progress", "run", "bool", True, "show a progress bar of the fits",
        aliases=("no_progress",), evaluate=True, commands=ALL,
    ),
    Setting(
        "checkpoint", "run", "path", None,
        "where finished fits are saved so a stopped run resumes (default: OUT.checkpoint; "
        "removed once the results are written)",
        metavar="DIR", evaluate=True, commands=ALL,
    ),
    _count(
        "sizes", -1,
        "also down-sampled train sizes: 0 the smallest train set, N also smallest*ratio^1..N",
        check_sizes,
    ),
    Setting(
        "ratio", "run", "float", 0.5, "ratio between sizes (0.5)", check_open_ratio, metavar="R",
        identity=True,
    ),
    _count("size_seeds", 1, "down-samples per size (1)", check_size_seeds),
    _count(
        "max_train_rows", None,
        "fit a larger train set on a seeded sample of exactly N rows (class shares kept)",
        _positive(optional=True), evaluate=True, commands=ALL,
    ),
    Setting(
        "incremental", "run", "bool", False,
        "feed partial_fit learners one block of rows at a time", identity=True, evaluate=True,
        commands=ALL,
    ),
    _count(
        "epochs", 1, "passes for --incremental (1)", _positive(optional=False), evaluate=True,
        commands=ALL,
    ),
    Setting(
        "onepass", "run", "bool", True,
        "fit additive learners from one pass of block statistics", identity=True, cli=False,
        evaluate=True, commands=ALL,
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
        "inner_folds", "run", "int", 5, "K of the inner cv (default 5)", check_n_folds,
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
        designs=dict.fromkeys(_DEALT, "class"), drawn=True,
    ),
    Setting(
        "group_assignment", "run", "str", "rows",
        "with --group, how whole groups are dealt to the folds of each stratum: rows (largest "
        "group first onto the emptiest fold, the default) or mlr3resampling (the same number "
        "of groups per fold, rows ignored, as the R package deals them)",
        check_group_assignment, identity=True, evaluate=True, choices=("rows", "mlr3resampling"),
        designs=dict.fromkeys(_DEALT, "rows"), drawn=True,
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
        metavar="PATH", designs={"knndm": None},
    ),
    Setting(
        "clustering", "evaluate", "str", None,
        "how kNNDM's candidates cluster the training points: one Ward tree cut at every "
        "count (hierarchical, at most 20,000 rows; the default in feature space, as CAST) or "
        "a k-means fit per count (kmeans; the default in geographical space)",
        _clustering, choices=CLUSTERINGS, designs={"knndm": None},
    ),
    Setting(
        "outer_folds", "evaluate", "int", None,
        "K of cv, repeated_cv and knndm (default 5), capped at the groups or the rarest "
        "class's rows; with a fold column, its K",
        check_n_folds, metavar="K", designs=dict.fromkeys(("cv", "repeated_cv", "knndm"), 5),
        drawn=True,
    ),
    Setting(
        "outer_repeats", "evaluate", "int", None,
        "repeats of repeated_cv (default 1) and 5x2cv (default 5, at least 2), splits of "
        "subsampling and resamples of bootstrap (default 1)",
        _positive(optional=False), metavar="N",
        designs={"repeated_cv": 1, "subsampling": 1, "bootstrap": 1, "5x2cv": 5},
    ),
    Setting(
        "test_split", "evaluate", "float", 0.0,
        "share of the rows reserved as a test split, scored once by the final models "
        "(0, the default: none; at most 0.5)",
        _test_split, metavar="SHARE",
    ),
    Setting(
        "train_ratio", "evaluate", "float", None,
        "share of the rows that train in each subsampling split (default 0.8)", check_open_ratio,
        metavar="R", commands=("evaluate", "compare-sampling"), designs={"subsampling": 0.8},
        variants={"compare-sampling": {
            "scope": "compare-sampling", "default": 0.7, "designs": None,
            "help": "share of rows that train (default 0.7; the paper's is 0.75)",
        }},
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
    Setting(
        "inference", "evaluate", "str", None,
        "extra fits a comparison test needs: con_z also runs the design in --inference-repeats "
        "random pairs of disjoint halves of the rows, for compare's conservative Z test; ncv "
        "runs --inference-repeats fresh K-fold splits with a (K-1)-fold CV inside each fold, "
        "for the nested CV interval (K-fold designs only) (default: none)",
        choices=("con_z", "ncv"),
    ),
    Setting(
        "inference_repeats", "evaluate", "int", None,
        "pairs of halves of --inference con_z, K-fold splits of --inference ncv (default 10, "
        "at least 2)",
        at_least(2, " (con_z's pairs of halves, ncv's nested K-fold splits)"), metavar="R",
    ),
    # search_subsets' own: a run file's [search] table.
    Setting(
        "threshold", "search", "float", 0.01,
        "a subset joins a pool only if it lowers the inner-CV error by more than R times "
        "the current one (default 0.01)",
        check_threshold, metavar="R",
    ),
    Setting(
        "max_pool", "search", "int", None, "at most N subsets in a pool (default: all)",
        _max_pool, metavar="N",
    ),
    Setting(
        "max_inner_fits", "search", "int", 2000,
        "refuse a search that may fit learners from rows more than N times per learner "
        "(default 2000; additive learners are not counted)",
        _positive(optional=False), metavar="N",
    ),
    # split_sensitivity's own: a run file's [split_sensitivity] table.
    Setting(
        "ratios", "split-sensitivity", "floats", (0.5, 0.7, 0.8, 0.9),
        "train ratios, comma-separated (default 0.5,0.7,0.8,0.9)", _ratios,
        metavar="R,R,...",
    ),
    Setting(
        "n_repeats", "split-sensitivity", "int", 20, "random splits per ratio (default 20)",
        at_least(3, "; per ratio the variance tests and the correlation compare n_repeats CV "
                 "estimates with n_repeats test scores (20 is a good start)"),
        metavar="N", renamed=("trials",), commands=("split-sensitivity", "compare-sampling"),
        variants={"compare-sampling": {
            "scope": "compare-sampling", "default": 100,
            "help": "random splits of the AEV and its SD (default 100)", "check": at_least(2),
            "renamed": ("n_random",),
        }},
    ),
    Setting(
        "alpha", "split-sensitivity", "float", 0.05,
        "level of the prediction intervals and the variance tests (default 0.05)", check_alpha,
        metavar="A",
    ),
    # compare_sampling's own: a run file's [compare_sampling] table.
    Setting(
        "methods", "compare-sampling", "list",
        ("random", "stratified", "clustering", "mdc", "doptimal", "overlap"),
        "comma-separated, from random, stratified, clustering, mdc, doptimal, overlap, "
        "overlap_class (default: all but overlap_class)",
        _methods, metavar="A,B,...", empty=("method", "for all but overlap_class"),
    ),
    Setting(
        "n_neighbors", "compare-sampling", "int", 5,
        "neighbours of the degree of overlap (default 5)", _n_neighbors, metavar="K",
        renamed=("k",),
    ),
    Setting(
        "n_levels", "compare-sampling", "int", None,
        "overlap levels (default: the paper's n_neighbors + 1)", _positive(optional=True),
        metavar="L",
    ),
    Setting(
        "knn", "compare-sampling", "str", "exact",
        "nearest-neighbour search of the degree of overlap (default exact)",
        choices=("exact", "nndescent", "blockwise"),
    ),
    Setting(
        "mdc_max_rows", "compare-sampling", "int", 2000,
        "MDC runs on a seeded stratified sample of N rows of a larger table (default 2000)",
        _positive(optional=False), metavar="N",
    ),
    Setting(
        "doptimal_repeats", "compare-sampling", "int", 100,
        "random candidate training sets of D-optimal sampling (default 100)",
        _positive(optional=False), metavar="N",
    ),
    # The soak commands': input, output, cluster, imports.
    Setting(
        "data", "app", "path", REQUIRED,
        "Parquet or CSV/TSV file/directory/glob, or Zarr store, path or URL", positional=True,
        commands=CLI,
    ),
    Setting(
        "out", "app", "path", REQUIRED, "results to write: .zarr or .nc", metavar="PATH",
        commands=CLI,
        variants={c: {"help": what, "metavar": "DIR"} for c, what in _DIRECTORY.items()},
    ),
    Setting(
        "overwrite", "app", "bool", False, "replace --out", commands=CLI,
        variants={c: {"help": _replace_help(c)} for c in _DIRECTORY},
    ),
    Setting(
        "search", "app", "bool", True,
        "run the greedy train-subset search after the matrix (default: yes)",
        commands=("transfer",),
    ),
    Setting(
        "scheduler", "app", "str", None,
        "running Dask scheduler (tcp://, tls:// or a scheduler file); default: a LocalCluster "
        "on this machine",
        metavar="ADDRESS", commands=CLI,
    ),
    _path("tls_ca_file", "TLS CA (PEM)"),
    _path("tls_cert", "client cert (PEM)"),
    _path("tls_key", "client key (PEM)"),
    Setting(
        "allow_modules", "app", "modules", (),
        f"packages or modules that run-file learners may import besides "
        f"{', '.join(ALLOWED_MODULES)} (importing a module runs its code; a run file cannot "
        "set it)",
        metavar="A,B,...", commands=CLI,
        flag_only="a run file cannot allow itself to import code",
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


def refuse_ignored(name: str, value: object, default: object, here: str, users: str) -> None:
    """Refuse option ``name`` given (other than its ``default``) where it has no effect:
    ``here`` says where it was given, ``users`` what uses it. Options a design ignores are
    never dropped silently.

    Examples
    --------
    >>> refuse_ignored("epochs", 1, 1, "incremental=False", "incremental=True")
    >>> refuse_ignored("e", 3, 1, "a", "b")
    Traceback (most recent call last):
    ...
    ValueError: e=3 has no effect with a: it is used only by b; leave e out, or use it there
    """
    if value is None or value == default:
        return
    raise ValueError(
        f"{name}={value!r} has no effect with {here}: it is used only by {users}; leave "
        f"{name} out, or use it there"
    )


def command_settings(command: Command | str) -> list[Setting]:
    """The settings `command` takes (`COMMANDS`), as it takes them (its `variants` applied),
    in order: the table's, the run's (shared), its own and the command line's.

    >>> [s.name for s in command_settings("evaluate") if s.scope in ("run", "evaluate")][:4]
    ['learners', 'seed', 'measures', 'persist']
    >>> [s.default for s in command_settings("split-sensitivity") if s.name == "n_folds"]
    [5]
    """
    if command not in COMMANDS:
        raise ValueError(f"command={command!r}: choose from {list(COMMANDS)}")
    return [s.in_command(command) for s in _DECLARED if command in s.takers]


def run_file_table(setting: Setting) -> str | None:
    """The run-file table that holds `setting` (as a command takes it), None: the top level."""
    return RUN_FILE_TABLES.get(setting.scope)


def renamed_names(command: Command | str) -> dict[str, str]:
    """Former names (and older spellings) of `command`'s settings -> the setting's name."""
    out = {}
    for s in command_settings(command):
        for old in (*s.renamed, *s.aliases):
            if not s.negated_by(old):
                out[old] = s.name
    return out


def canonical(key: str, value: Any) -> tuple[Setting, Any]:
    """The setting that `key` spells and `value` as its own (a ``no_NAME`` alias negated).

    >>> canonical("no_persist", True)[0].name, canonical("no_persist", True)[1]
    ('persist', False)
    """
    setting = SPELLINGS[key]
    return setting, (not value) if setting.negated_by(key) else value


def check_run_options(
    values: Mapping[str, Any], spell: Callable[[str], str] = str, command: Command | str = "run"
) -> dict:
    """Check `command`'s options (``soak``'s by default) before any work; return them
    normalised (plain ints, the train types as a tuple in canonical order...).

    Parameters
    ----------
    values : mapping
        Setting name -> value, for any settings of `SETTINGS` (table and app ones included).
    spell : callable
        How the caller writes a setting, for messages: ``str`` (``n_folds``) in Python, the
        flag as typed (``--folds``) on the command line.
    command : str
        Whose checks and defaults apply (`COMMANDS`): ``split_sensitivity`` needs 3 repeats,
        ``compare_sampling`` 2.

    Raises
    ------
    ValueError
        Naming the first bad option as `spell` writes it, the value and what it needs.
    """
    unknown = sorted(set(values) - set(SETTINGS))
    if unknown:
        raise ValueError(f"unknown options {unknown}; options: {list(SETTINGS)}")
    return {
        name: SETTINGS[name].in_command(command).checked(value, spell(name))
        for name, value in values.items()
    }


def check_design_options(
    outer: str, values: Mapping[str, Any], spell: Callable[[str], str] = str
) -> dict[str, Any]:
    """The options of ``evaluate`` that only some outer strategies read (`Setting.designs`),
    as strategy `outer` takes them: one given to a strategy that does not read it is refused,
    naming it (as `spell` writes it) and the strategies that do; one not given is the
    strategy's value (``outer_repeats`` 5 for ``5x2cv``). Given: not None and, for a setting
    ``soak`` shares (``balance``), not its default. Values are checked by their settings.

    >>> check_design_options("5x2cv", {"outer_folds": None})["outer_repeats"]
    5
    >>> check_design_options("lodo", {"outer_folds": 3})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    soak_dask.settings.OptionError: outer_folds=3 has no effect with outer='lodo': ...
    """
    if outer not in OUTER:
        raise ValueError(f"outer={outer!r} is not a strategy; choose from {list(OUTER)}")
    out = {}
    for setting in command_settings("evaluate"):
        if setting.designs is None:
            continue
        value = values.get(setting.name)
        given = value is not None and not _is_plain(value, setting.default)
        if outer in setting.designs:
            out[setting.name] = value if given else setting.designs[outer]
        elif given:
            name = spell(setting.name)
            shown = repr(value) if isinstance(value, str | Real) else f"<{type(value).__name__}>"
            readers = ", ".join(map(repr, setting.designs))
            readers = " or ".join(readers.rsplit(", ", 1))
            raise OptionError(
                f"{name}={shown} has no effect with outer={outer!r}: it is used only by "
                f"outer={readers}; leave {name} out, or use it there",
                setting.name,
            )
    return out


def check_fold_column_options(
    fold: str | None,
    values: Mapping[str, Any],
    spell: Callable[[str], str] = str,
    command: Command | str = "run",
) -> None:
    """Refuse the options of `command` that say how folds are drawn (`Setting.drawn`: K,
    stratification, balance, how groups are dealt) when the table's fold column `fold` gives
    the folds: they would be ignored. Given: as for `check_design_options`.

    >>> check_fold_column_options("f", {"n_folds": None, "balance": "class"})
    >>> check_fold_column_options("f", {"balance": "overlap"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    soak_dask.settings.OptionError: balance='overlap': the table's fold column 'f' gives ...
    """
    if fold is None:
        return
    for setting in command_settings(command):
        value = values.get(setting.name)
        if setting.drawn and value is not None and not _is_plain(value, setting.default):
            name = spell(setting.name)
            raise OptionError(
                f"{name}={value!r}: the table's fold column {fold!r} gives the folds, their "
                f"number and who is in each, so {name} would be ignored; leave {name} out, or "
                "load the table without fold= (--fold-column) to have the folds drawn",
                setting.name,
            )


def _is_plain(value: Any, default: Any) -> bool:
    """Whether `value` is the plain value `default` (a table or raster never is)."""
    return isinstance(value, str | Real) and value == default


def identity(values: Mapping[str, Any]) -> dict[str, Any]:
    """The run settings among `values` that identify a run (results' attrs, checkpoint)."""
    return {
        s.name: values[s.name]
        for s in _DECLARED
        if s.identity and s.scope == "run" and s.name in values
    }


def command_line_settings(command: Command | str) -> list[Setting]:
    """The settings of ``soak COMMAND``: `command_settings`, and for ``soak transfer`` (which
    runs ``search_subsets`` after the matrix) the search's own too."""
    mine = command_settings(command)
    if command == "transfer":
        mine += [s for s in command_settings("search") if s.scope == "search"]
    return mine
