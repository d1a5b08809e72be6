"""Settings of every ``soak`` command that runs learners (``run``, ``evaluate``, ``transfer``,
``split-sensitivity``, ``compare-sampling``): a TOML run file merged with command-line flags,
and its learners.

A run file holds the settings of ``soak_dask.settings.SETTINGS`` that have flags, by name
(``n_folds = 5`` for ``--n-folds 5``; older spellings such as ``folds`` are aliases). The
shared ones (the table's, the run's, the cluster's) are at the top level; each function's own
go in its table (``settings.RUN_FILE_TABLES``): ``evaluate``'s (``outer``, ``outer_folds``,
``test_split``...) in ``[evaluation]``, ``search_subsets``' in ``[search_subsets]``,
``split_sensitivity``'s in ``[split_sensitivity]`` and ``compare_sampling``'s in
``[compare_sampling]``. One file may serve every command: each uses its settings and leaves
the others'.
``learners`` is either a list of names (``learners = ["featureless", "nb"]``) or tables, one per
learner, naming a scikit-learn estimator by ``"module:Class"`` (``[learners.nb]``), as
``soak(learners=...)`` takes a list or a dict; a list given as well, by the flag or by the older
key ``learner``, picks among the tables. Reading the file never runs code: the estimator string
must look like ``package.module:Class``, and the module is imported only when the run uses that
learner, and only if it belongs to ``ALLOWED_MODULES`` or to the run's ``allow_modules``, which
is checked before the import. ``allow_modules`` comes only from the ``--allow-modules`` flag the
person types or from Python (`merge_settings`' flags): a run file that sets it is refused, since
a file must not allow itself to import code (`Setting.flag_only`).
"""

from __future__ import annotations

import importlib
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, make_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..learn.builtin import BUILTIN
from ..settings import (
    ALLOWED_MODULES,
    CLI,
    EVALUATION_TABLE,
    KINDS,
    REQUIRED,
    RUN_FILE_TABLES,
    SETTINGS,
    SPELLINGS,
    Command,
    OptionError,
    Setting,
    canonical,
    check_design_options,
    check_fold_column_options,
    command_line_settings,
    command_settings,
    run_file_table,
)
from ..split.fold_options import check_assignment_groups

if TYPE_CHECKING:
    from sklearn.base import BaseEstimator

#: The settings a run file and the flags set (the others are Python's only; the flag-only ones
#: the flags' only): at the top level of the file, and in each function's table (by table name,
#: as that function takes them).
_FILE_SETTINGS = [
    s for s in SETTINGS.values() if s.cli and not s.flag_only and run_file_table(s) is None
]
#: Table -> the command whose own settings it holds.
_TABLE_COMMANDS = {table: scope for scope, table in RUN_FILE_TABLES.items()}
_TABLE_SETTINGS: dict[str, list[Setting]] = {
    table: [s for s in command_settings(command) if s.cli and run_file_table(s) == table]
    for table, command in _TABLE_COMMANDS.items()
}
_EVALUATION_SETTINGS = _TABLE_SETTINGS[EVALUATION_TABLE]


def _keys(settings: Iterable[Setting]) -> list[str]:
    """Run-file keys of `settings`: their own, then their older spellings."""
    settings = list(settings)
    return [*(s.file_key for s in settings), *(a for s in settings for a in s.aliases)]


#: The kind of each top-level run-file key, aliases included: a learner selection is a list of
#: names (``[learners.NAME]`` tables are read apart, by ``_learner_specs``).
_KINDS: dict[str, str] = {
    key: "list" if s.kind == "learners" else s.kind
    for s in _FILE_SETTINGS
    for key in (s.file_key, *s.aliases)
}
_ESTIMATOR = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*$")

#: List settings that must name something: what they name, and what leaving them out means.
NON_EMPTY_LISTS: dict[str, tuple[str, str]] = {
    s.name: s.empty for s in SETTINGS.values() if s.empty is not None
}


def empty_list_message(key: str, given: str, leave_out: str) -> str:
    """The refusal of a list setting of `NON_EMPTY_LISTS` that names nothing.

    Parameters
    ----------
    key : str
        The setting as the user spelled it, e.g. ``"features"`` or ``"learner"``.
    given : str
        How the user wrote the empty value (``"''"``, ``"features = [] in run file 'r.toml'"``).
    leave_out : str
        What to leave out instead: ``"the flag"`` or the run-file key.
    """
    what, meaning = NON_EMPTY_LISTS[SPELLINGS[key].name]
    return f"{given} names no {what}; name at least one, or leave {leave_out} out {meaning}"


def module_allowed(module: str, allowed: Iterable[str]) -> bool:
    """Whether `module` is one of `allowed` or inside one of them (``sklearn.svm`` in sklearn)."""
    return any(module == name or module.startswith(f"{name}.") for name in allowed)


@dataclass(frozen=True)
class LearnerSpec:
    """A ``[learners.NAME]`` table of a run file: an estimator class and its parameters.

    Attributes
    ----------
    name : str
        The learner's name in the results.
    estimator : str
        ``"module:Class"``, checked for that form but not imported.
    params : dict
        Keyword arguments of the class.
    search : dict, optional
        Parameter -> candidate values: the learner is tuned inside each train set
        (``soak_dask.learn.tuning.Search``), by grid or, with ``n_iter``, random draws.
    n_iter : int, optional
    """

    name: str
    estimator: str
    params: dict[str, Any] = field(default_factory=dict)
    search: dict[str, Any] | None = None
    n_iter: int | None = None

    def build(self, allow_modules: Iterable[str] = ()) -> BaseEstimator:
        """Import the class and return an instance; errors name the learner and the fix.

        Parameters
        ----------
        allow_modules : iterable of str
            Packages or modules trusted besides ``ALLOWED_MODULES``. A module outside both is
            refused before it is imported, since importing runs its code.
        """
        from sklearn.base import BaseEstimator

        from ..learn.tuning import Search, check_space

        module_name, class_name = self.estimator.split(":")
        if not module_allowed(module_name, (*ALLOWED_MODULES, *allow_modules)):
            raise ValueError(
                f"learner {self.name!r}: module {module_name!r} is not allowed: a run file "
                f"imports estimators only from {list(ALLOWED_MODULES)} and the modules allowed "
                f"by the person running it. If you trust it, pass --allow-modules "
                f"{module_name} (from Python: allow_modules=[{module_name!r}])"
            )
        try:
            module = importlib.import_module(module_name)
        except ImportError as err:
            raise ValueError(
                f"learner {self.name!r}: cannot import module {module_name!r} ({err}); "
                "install it or fix the estimator string"
            ) from err
        cls = getattr(module, class_name, None)
        if not (isinstance(cls, type) and issubclass(cls, BaseEstimator)):
            raise ValueError(
                f"learner {self.name!r}: {self.estimator!r} is not a scikit-learn estimator "
                "class (a subclass of sklearn.base.BaseEstimator)"
            )
        try:
            est = cls(**self.params)
        except TypeError as err:
            raise ValueError(f"learner {self.name!r}: {class_name}: {err}") from err
        if self.search is None:
            return est
        check_space(est, self.search, self.n_iter, self.name)
        return Search(est, self.search, n_iter=self.n_iter)


class _Learners:
    """The learners of a ``RunSettings``, built on demand."""

    learner_specs: dict[str, LearnerSpec | str] | None
    allow_modules: Sequence[str]

    def learners(self) -> dict[str, str | BaseEstimator] | None:
        """``{name: built-in name or estimator}`` for ``soak_dask.soak``.

        Only the learners the run uses are built, so only their modules are imported, and only
        from ``ALLOWED_MODULES`` and ``allow_modules``. None (``learners`` not set) means the
        engine's default: featureless and a linear model.
        """
        if self.learner_specs is None:
            return None
        return {
            name: spec if isinstance(spec, str) else spec.build(self.allow_modules)
            for name, spec in self.learner_specs.items()
        }


def _field(setting: Setting, command: Command) -> tuple[str, Any, Any]:
    default = setting.default_in(command)
    default = None if default is REQUIRED else default  # merge_settings checks
    return setting.dest, _TYPES[setting.kind], field(default=default)


_TYPES = {
    "str": str | None,
    "path": str | None,
    "int": int | None,
    "float": float,
    "floats": Sequence[float],
    "bool": bool,
    "list": Sequence[str] | None,
    "modules": Sequence[str],
    "score": float | str,
    "learners": dict[str, LearnerSpec | str] | None,
}


def _settings_class(name: str, command: Command) -> type:
    """The frozen dataclass of everything ``soak COMMAND`` needs, after merging defaults, the
    run file and the flags: one attribute per setting of the command that has a flag, named as
    the setting (``learners``, unbuilt, is ``learner_specs``: ``learners()`` builds them)."""
    return make_dataclass(
        name,
        [_field(s, command) for s in command_line_settings(command) if s.cli],
        bases=(_Learners,),
        frozen=True,
        namespace={"__module__": __name__, "__doc__": f"Everything ``soak {command}`` needs."},
    )


RunSettings = _settings_class("RunSettings", "run")
EvaluateSettings = _settings_class("EvaluateSettings", "evaluate")
TransferSettings = _settings_class("TransferSettings", "transfer")
SplitSensitivitySettings = _settings_class("SplitSensitivitySettings", "split-sensitivity")
CompareSamplingSettings = _settings_class("CompareSamplingSettings", "compare-sampling")
_CLASSES: dict[str, type] = {
    "run": RunSettings,
    "evaluate": EvaluateSettings,
    "transfer": TransferSettings,
    "split-sensitivity": SplitSensitivitySettings,
    "compare-sampling": CompareSamplingSettings,
}


def setting_names(command: Command = "run") -> list[str]:
    """The settings of ``soak COMMAND`` that a run file and the flags set, by name
    (``learners`` included)."""
    return [s.name for s in command_line_settings(command) if s.cli]


def run_file_keys() -> list[str]:
    """Valid top-level keys of a run file: the settings', then their older spellings."""
    return _keys(_FILE_SETTINGS)


def table_keys(table: str) -> list[str]:
    """Valid keys of a run file's function table (``evaluation``, ``search_subsets``,
    ``split_sensitivity``, ``compare_sampling``): that function's own settings."""
    return _keys(_TABLE_SETTINGS[table])


def evaluation_keys() -> list[str]:
    """Valid keys of a run file's ``[evaluation]`` table: ``evaluate``'s own settings."""
    return table_keys(EVALUATION_TABLE)


def load_run_file(path: str | Path) -> dict[str, Any]:
    """Read and check a TOML run file; nothing is imported.

    Relative paths in the file (``data``, ``out``, ``tls_*``, ``models``...) are relative to
    the file's folder.

    Parameters
    ----------
    path : path
        The ``run.toml`` file.

    Returns
    -------
    dict
        Checked top-level settings by name; ``learner_specs`` holds the ``[learners.NAME]``
        tables, ``tables`` each function's table (``[evaluation]``...), checked as that
        function takes its settings, and ``source`` the file, for messages.

    Raises
    ------
    FileNotFoundError
        If the file does not exist (IsADirectoryError: it is a directory).
    ValueError
        For TOML syntax errors, a setting only a flag may give (``allow_modules``), unknown
        keys at the top level or in a function's table (the message lists the valid ones; a
        former name is named with its new one), values of the wrong type or out of range, or
        a malformed learner table.
    """
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(
            f"run file {str(path)!r} is a directory; a run file is a TOML file (e.g. run.toml)"
        )
    if not path.is_file():
        raise FileNotFoundError(f"run file {str(path)!r} does not exist")
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"run file {str(path)!r} is not valid TOML: {err}") from err
    source = f"run file {str(path)!r}"
    found = {table: raw.pop(table) for table in _TABLE_SETTINGS if table in raw}
    for values in (raw, *(v for v in found.values() if isinstance(v, dict))):
        _refuse_flag_only(values, source)
    _refuse_unknown(raw, _KINDS, run_file_keys(), source, None)
    learner_tables = raw.pop("learners") if isinstance(raw.get("learners"), dict) else {}
    specs = _learner_specs(learner_tables, path)
    settings = check_settings(raw, source=source)
    tables = {table: _function_table(table, found[table], source) for table in found}
    for values in (settings, *tables.values()):
        for key, value in values.items():
            if SETTINGS[key].kind == "path" and _is_relative(value):
                values[key] = str(path.parent / value)
    return {**settings, "learner_specs": specs, "tables": tables, "source": source}


def _refuse_flag_only(values: Mapping[str, Any], source: str) -> None:
    """Refuse a key of a run file's `values` that spells a flag-only setting, naming it."""
    for key in values:
        setting = SPELLINGS.get(key)
        if setting is not None and setting.flag_only:
            raise ValueError(
                f"{source}: {key} may only be given on the command line ({setting.flag}) or "
                f"from Python; {setting.flag_only}. Remove {key} from the run file"
            )


def _refuse_unknown(
    values: Mapping[str, Any],
    known: Iterable[str],
    valid: list[str],
    source: str,
    command: str | None,
) -> None:
    """Refuse the first key of `values` not in `known`: a former name with its new one, a
    function's setting with its table, else the valid keys."""
    unknown = sorted(set(values) - set(known))
    if not unknown:
        return
    key = unknown[0]
    commands = [command] if command is not None else list(CLI)
    for name in commands:
        for setting in command_line_settings(name):
            if key in setting.renamed:
                raise ValueError(f"{key} is now {setting.file_key} (in {source})")
    tables = [t for t in _TABLE_SETTINGS if key in table_keys(t)]
    where = f"; it belongs in the [{tables[0]}] table" if tables and command is None else ""
    rest = (
        ""
        if command is not None
        else ", and the tables " + ", ".join(f"[{t}]" for t in _TABLE_SETTINGS)
    )
    raise ValueError(
        f"unknown key {key!r} in {source}{where}; valid keys: {', '.join(valid)}{rest}"
    )


def _function_table(table: str, values: Any, source: str) -> dict[str, Any]:
    """The checked settings of a run file's function table (``[evaluation]``...)."""
    where = f"[{table}] of {source}"
    valid = table_keys(table)
    if not isinstance(values, dict):
        raise ValueError(
            f"{table} = {values!r} in {source}: expected a table [{table}] of {', '.join(valid)}"
        )
    _refuse_unknown(values, valid, valid, where, _TABLE_COMMANDS[table])
    return check_settings(values, source=where, command=_TABLE_COMMANDS[table])


def check_settings(
    values: Mapping[str, Any],
    source: str,
    typed: Mapping[str, str] | None = None,
    command: str | None = None,
) -> dict[str, Any]:
    """Check the settings of one source; return them by name, normalised (a comma-separated
    str is a list; ``no_persist = true`` is ``persist = False``; K an int...).

    Parameters
    ----------
    values : mapping
        Setting name or alias -> value, from a run file or the flags.
    source : str
        Where the values came from, for messages.
    typed : mapping, optional
        For flags: setting name -> the flag as the user typed it (``--folds``), which messages
        name; a setting not in it is named by the flag of the key given. Without it (a run
        file), messages name the key as written and the file.
    command : str, optional
        Whose checks apply (``settings.command_settings``); default: each setting's own.
    """
    out: dict[str, Any] = {}
    for key, value in values.items():
        setting, value = _checked_type(key, value, source)
        if command is not None:
            setting = setting.in_command(command)
        if setting.name in out:
            raise ValueError(f"{source} sets {setting.name} twice (as {key} too); keep one")
        # Messages name the setting as the user wrote it: the flag as typed, or the key.
        flag = setting.flag if key == setting.name else f"--{key.replace('_', '-')}"
        name = key if typed is None else typed.get(setting.name, flag)
        try:
            out[setting.name] = setting.checked(value, name)
        except ValueError as err:
            raise ValueError(err if typed is not None else f"{err} (in {source})") from None
    return out


def _checked_type(key: str, value: Any, source: str) -> tuple[Setting, Any]:
    """The setting `key` spells and `value` of its type, as that setting's (or an error)."""
    setting, given = SPELLINGS[key], value
    kind = "list" if setting.kind == "learners" else setting.kind
    if kind in ("list", "modules") and isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    if not KINDS[kind][0](value):
        expected = KINDS[kind][1]
        raise ValueError(f"{key} = {value!r} in {source}: expected {expected}")
    if kind in ("list", "modules"):
        value = list(value)
    if setting.empty is not None and not value:
        raise ValueError(empty_list_message(key, f"{key} = {given!r} in {source}", key))
    return canonical(key, value)


def merge_settings(
    file: Mapping[str, Any],
    flags: Mapping[str, Any],
    typed: Mapping[str, str] | None = None,
    command: Command = "run",
    *,
    dry_run: bool = False,
) -> Any:
    """Settings of `command` from a checked run file overridden by the flags given on the
    command line: a `RunSettings`, an `EvaluateSettings` for ``"evaluate"``... (`_CLASSES`).

    Parameters
    ----------
    file : mapping
        From ``load_run_file`` (or empty). The other command's settings in it are left out.
    flags : mapping
        Setting name (or alias) -> value of the flags given.
    typed : mapping, optional
        Setting name -> the flag as typed, for messages (see ``check_settings``).
    command : {"run", "evaluate", "transfer", "split-sensitivity", "compare-sampling"}
        The command whose settings these are (each takes its function's table of the file).
    dry_run : bool
        ``--dry-run``: nothing is written, so ``out`` may be left unset.

    Raises
    ------
    ValueError
        If ``data``, ``label`` or (unless ``dry_run``) ``out`` is set nowhere, a value is
        refused, or a learner is neither built in nor a table of the run file.
    """
    mine = {*setting_names(command), "learner_specs"}
    merged = {k: v for k, v in file.items() if k in mine}
    for setting in command_line_settings(command):
        table = run_file_table(setting)
        values = file.get("tables", {}).get(table, {})
        if setting.name in values:
            merged[setting.name] = values[setting.name]
    from_flags = check_settings(flags, "command line", typed or {}, command)
    from_file = set(merged) - set(from_flags)
    merged.update(from_flags)
    source = file.get("source", "the run file")
    try:
        _refuse_ignored(command, file, merged, typed or {})
    except OptionError as err:  # a refusal of the file's setting names the file
        if err.setting not in from_file:
            raise
        raise OptionError(f"{err} (in {source})", err.setting) from None
    # A dry run writes nothing, so it needs no --out (given one, it checks it).
    for key in ("data", "label", *(() if dry_run else ("out",))):
        if not merged.get(key):
            raise ValueError(
                f"no {key} given: pass {SETTINGS[key].flag} or set {key} in the run file (--config)"
            )
    tables = merged.pop("learner_specs", {})
    chosen = merged.pop("learners", None)
    if chosen is None and tables:
        chosen = list(tables)  # the tables are the learners, as a dict is to soak()
    return _CLASSES[command](**merged, learner_specs=_chosen(chosen, tables))


#: Top-level run-file settings a command does not take -> its own setting that does their job
#: (in its table): a file that gives the first and not the second is refused by the command,
#: which would ignore the first.
_INSTEAD = {"evaluate": {"n_folds": "outer_folds"}}


def _refuse_ignored(
    command: str, file: Mapping[str, Any], merged: Mapping[str, Any], typed: Mapping[str, str]
) -> None:
    """Refuse the merged settings `command` would ignore, before the engine loads: a way of
    dealing groups without a group column; how folds are drawn beside a fold column
    (``settings.check_fold_column_options``); evaluate's options its outer strategy does not
    read (``settings.check_design_options``), and a run file's K for the other commands alone.
    Each refusal is an `OptionError` naming the setting."""
    name = lambda setting: typed.get(setting, setting)  # noqa: E731 - the flag as typed, or key
    if "group_assignment" in setting_names(command):
        assignment = merged.get("group_assignment", "rows")
        try:
            check_assignment_groups(merged.get("group"), assignment, name("group_assignment"))
        except ValueError as err:
            raise OptionError(str(err), "group_assignment") from None
    check_fold_column_options(merged.get("fold"), merged, name, command)
    if command != "evaluate":
        return
    outer = merged.get("outer", SETTINGS["outer"].default)
    check_design_options(outer, merged, name)
    for theirs, mine in _INSTEAD[command].items():
        if theirs in file and mine not in merged and outer in SETTINGS[mine].designs:
            raise OptionError(
                f"{file.get('source', 'the run file')} sets {theirs} = {file[theirs]!r}, which "
                f"soak {command} does not read: its setting for this is {mine}, in the "
                f"[{run_file_table(SETTINGS[mine])}] table; set {mine} = {file[theirs]!r} there "
                f"(the top-level {theirs} stays the other commands')",
                theirs,
            )


def _chosen(
    names: Sequence[str] | None, tables: Mapping[str, LearnerSpec | str]
) -> dict[str, LearnerSpec | str] | None:
    """The learners `names` picks: run-file tables first, then built-ins; None: the default."""
    if names is None:
        return None
    for name in names:
        if name not in tables and name not in BUILTIN:
            raise ValueError(
                f"unknown learner {name!r}; built-in learners: {sorted(BUILTIN)}; "
                f"run-file learners: {sorted(tables)}. Define others in the "
                f'run file as [learners.{name}] with estimator = "module:Class"'
            )
    return {name: tables.get(name, name) for name in names}


def _learner_specs(tables: Any, path: Path) -> dict[str, LearnerSpec | str]:
    return {name: _learner_spec(name, table) for name, table in tables.items()}


def _learner_spec(name: str, table: Any) -> LearnerSpec | str:
    where = f"[learners.{name}]"
    if isinstance(table, str):  # another name for a built-in, as soak(learners={name: str})
        if table not in BUILTIN:
            raise ValueError(f"learners.{name} = {table!r} is not a built-in learner")
        return table
    if not isinstance(table, dict) or "estimator" not in table:
        raise ValueError(f'{where} needs estimator = "module:Class", e.g. "sklearn.svm:SVC"')
    rest = dict(table)
    estimator = rest.pop("estimator")
    params = rest.pop("params", {})
    search, n_iter = rest.pop("search", None), rest.pop("n_iter", None)
    if search is not None and not isinstance(search, dict):
        raise ValueError(f"{where} search must be a table of parameter = [candidate values]")
    if not isinstance(estimator, str) or not _ESTIMATOR.match(estimator):
        raise ValueError(
            f"{where} estimator = {estimator!r} is not of the form 'package.module:Class' "
            "(run files name classes; they never contain code)"
        )
    if not isinstance(params, dict):
        raise ValueError(f"{where} params must be a table of keyword arguments")
    both = sorted(set(params) & set(rest))
    if both:
        raise ValueError(f"{where} sets {both} both in params and as keys; keep one")
    return LearnerSpec(name, estimator, {**params, **rest}, search, n_iter)


def _is_url(value: str) -> bool:
    return "://" in value


def _is_relative(value: str) -> bool:
    return not _is_url(value) and not Path(value).is_absolute()
