"""Settings of ``soak run``: a TOML run file merged with command-line flags, and its learners.

A run file holds the same settings as the flags (``fold_column = "f"`` for ``--fold-column f``)
plus ``[learners.NAME]`` tables naming a scikit-learn estimator by ``"module:Class"``. Reading
the file never runs code: the estimator string must look like ``package.module:Class``, and the
module is imported only when the run uses that learner (``learner = ["NAME"]`` or
``--learner NAME``), and only if it belongs to ``ALLOWED_MODULES`` or to the run's
``allow_modules`` (``--allow-modules``), which is checked before the import.
"""

from __future__ import annotations

import importlib
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sklearn.base import BaseEstimator

from ..learn.builtin import BUILTIN

#: How a value of each setting is checked: its kind, and whether it is a path.
_KINDS: dict[str, str] = {
    "data": "path",
    "label": "str",
    "subset": "str",
    "group": "str",
    "fold_column": "str",
    "features": "list",
    "exclude": "list",
    "coordinates": "str",
    "rows_per_partition": "int",
    "folds": "int",
    "seed": "int",
    "learner": "list",
    "train_types": "list",
    "measures": "list",
    "no_persist": "bool",
    "sizes": "int",
    "ratio": "float",
    "size_seeds": "int",
    "max_train_rows": "int",
    "incremental": "bool",
    "epochs": "int",
    "checkpoint": "path",
    "scheduler": "str",
    "tls_ca_file": "path",
    "tls_cert": "path",
    "tls_key": "path",
    "out": "path",
    "overwrite": "bool",
    "no_progress": "bool",
    "allow_modules": "modules",
}
_MODULE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
_ESTIMATOR = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*$")

#: Packages whose estimator classes a run file may name without ``allow_modules``: importing
#: them runs only their own, well-known code. A run adds others with ``allow_modules``.
ALLOWED_MODULES = ("sklearn", "soak_dask", "xgboost", "lightgbm", "catboost")

#: List settings that must name something: what they name, and what leaving them out means.
NON_EMPTY_LISTS: dict[str, tuple[str, str]] = {
    "features": ("column", "to use every numeric column"),
    "learner": ("learner", "for the default learners (featureless and a linear model)"),
    "train_types": ("train type", "for all three (same, other, all)"),
    "measures": ("measure", "for every measure of the task"),
}


def empty_list_message(key: str, given: str, leave_out: str) -> str:
    """The refusal of a list setting of `NON_EMPTY_LISTS` that names nothing.

    Parameters
    ----------
    key : str
        The setting, e.g. ``"features"``.
    given : str
        How the user wrote the empty value (``"''"``, ``"features = [] in run file 'r.toml'"``).
    leave_out : str
        What to leave out instead: ``"the flag"`` or the run-file key.
    """
    what, meaning = NON_EMPTY_LISTS[key]
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
    """

    name: str
    estimator: str
    params: dict[str, Any] = field(default_factory=dict)

    def build(self, allow_modules: Iterable[str] = ()) -> BaseEstimator:
        """Import the class and return an instance; errors name the learner and the fix.

        Parameters
        ----------
        allow_modules : iterable of str
            Packages or modules trusted besides ``ALLOWED_MODULES``. A module outside both is
            refused before it is imported, since importing runs its code.
        """
        module_name, class_name = self.estimator.split(":")
        if not module_allowed(module_name, (*ALLOWED_MODULES, *allow_modules)):
            raise ValueError(
                f"learner {self.name!r}: module {module_name!r} is not allowed: a run file "
                f"imports estimators only from {list(ALLOWED_MODULES)} and allow_modules. If "
                f"you trust it, add allow_modules = [{module_name!r}] to the run file or pass "
                f"--allow-modules {module_name}"
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
            return cls(**self.params)
        except TypeError as err:
            raise ValueError(f"learner {self.name!r}: {class_name}: {err}") from err


@dataclass(frozen=True)
class RunSettings:
    """Everything ``soak run`` needs, after merging defaults, the run file and the flags."""

    data: str
    label: str
    out: str
    subset: str | None = None
    group: str | None = None
    fold_column: str | None = None
    features: list[str] | None = None
    exclude: list[str] = field(default_factory=list)
    coordinates: str = "exclude"
    rows_per_partition: int | None = None
    folds: int | None = None
    seed: int = 1
    learner: list[str] | None = None
    train_types: list[str] = field(default_factory=lambda: ["same", "other", "all"])
    measures: list[str] | None = None
    no_persist: bool = False
    sizes: int = -1
    ratio: float = 0.5
    size_seeds: int = 1
    max_train_rows: int | None = None
    incremental: bool = False
    epochs: int = 1
    checkpoint: str | None = None
    scheduler: str | None = None
    tls_ca_file: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    overwrite: bool = False
    no_progress: bool = False
    allow_modules: list[str] = field(default_factory=list)
    learner_specs: dict[str, LearnerSpec] = field(default_factory=dict)

    def learners(self) -> dict[str, str | BaseEstimator] | None:
        """``{name: built-in name or estimator}`` for ``soak_dask.soak``.

        Only the learners named in ``learner`` are built, so only their modules are imported,
        and only from ``ALLOWED_MODULES`` and ``allow_modules``. None (``learner`` not set)
        means the engine's default: featureless and a linear model.
        """
        if self.learner is None:
            return None
        if not self.learner:
            raise ValueError(empty_list_message("learner", "learner = []", "learner"))
        out: dict[str, str | BaseEstimator] = {}
        for name in self.learner:
            if name in self.learner_specs:
                out[name] = self.learner_specs[name].build(self.allow_modules)
            elif name in BUILTIN:
                out[name] = name
            else:
                raise ValueError(
                    f"unknown learner {name!r}; built-in learners: {sorted(BUILTIN)}; "
                    f"run-file learners: {sorted(self.learner_specs)}. Define others in the "
                    f'run file as [learners.{name}] with estimator = "module:Class"'
                )
        return out


def setting_names() -> list[str]:
    """Valid top-level keys of a run file."""
    return [*_KINDS, "learners"]


def load_run_file(path: str | Path) -> dict[str, Any]:
    """Read and check a TOML run file; nothing is imported.

    Relative paths in the file (``data``, ``out``, ``tls_*``) are relative to the file's folder.

    Parameters
    ----------
    path : path
        The ``run.toml`` file.

    Returns
    -------
    dict
        Checked settings; ``learner_specs`` holds the ``[learners.NAME]`` tables.

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    ValueError
        For TOML syntax errors, unknown keys (the message lists the valid ones), values of the
        wrong type, or a malformed learner table.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"run file {str(path)!r} does not exist")
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"run file {str(path)!r} is not valid TOML: {err}") from err
    unknown = sorted(set(raw) - set(setting_names()))
    if unknown:
        raise ValueError(
            f"unknown key {unknown[0]!r} in run file {str(path)!r}; valid keys: "
            f"{', '.join(setting_names())}"
        )
    specs = _learner_specs(raw.pop("learners", {}), path)
    settings = check_settings(raw, source=f"run file {str(path)!r}")
    for key, value in settings.items():
        if _KINDS[key] == "path" and not _is_url(value) and not Path(value).is_absolute():
            settings[key] = str(path.parent / value)
    return {**settings, "learner_specs": specs}


def check_settings(values: Mapping[str, Any], source: str) -> dict[str, Any]:
    """Check the type of each setting and normalise lists (a comma-separated str is a list).

    Parameters
    ----------
    values : mapping
        Setting name -> value, from a run file or the flags.
    source : str
        Where the values came from, for messages.
    """
    out = {}
    for key, value in values.items():
        kind = _KINDS[key]
        if kind in ("list", "modules") and isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        is_list = isinstance(value, list) and all(isinstance(v, str) for v in value)
        ok = {
            "str": isinstance(value, str),
            "path": isinstance(value, str),
            "int": isinstance(value, int) and not isinstance(value, bool),
            "float": isinstance(value, int | float) and not isinstance(value, bool),
            "bool": isinstance(value, bool),
            "list": is_list,
            "modules": is_list and all(_MODULE.match(v) for v in value),
        }[kind]
        if not ok:
            expected = {
                "list": "a list of strings or a comma-separated string",
                "modules": "a list of module names such as 'mypackage' or 'mypackage.models'",
            }.get(kind, kind)
            raise ValueError(f"{key} = {value!r} in {source}: expected {expected}")
        if key in NON_EMPTY_LISTS and not value:
            given = f"{key} = {values[key]!r} in {source}"
            raise ValueError(empty_list_message(key, given, key))
        out[key] = value
    return out


def merge_settings(file: Mapping[str, Any], flags: Mapping[str, Any]) -> RunSettings:
    """Run settings from a checked run file overridden by the flags given on the command line.

    Raises
    ------
    ValueError
        If ``data``, ``label`` or ``out`` is set nowhere.
    """
    merged = {**file, **check_settings(flags, source="command line")}
    for key, flag in (("data", "DATA"), ("label", "--label"), ("out", "--out")):
        if not merged.get(key):
            raise ValueError(f"no {key} given: pass {flag} or set {key} in the run file (--config)")
    return RunSettings(**merged)


def _learner_specs(tables: Any, path: Path) -> dict[str, LearnerSpec]:
    if not isinstance(tables, dict):
        raise ValueError(
            f"learners in run file {str(path)!r} must be tables: [learners.NAME] with "
            'estimator = "module:Class"'
        )
    return {name: _learner_spec(name, table) for name, table in tables.items()}


def _learner_spec(name: str, table: Any) -> LearnerSpec:
    where = f"[learners.{name}]"
    if not isinstance(table, dict) or "estimator" not in table:
        raise ValueError(f'{where} needs estimator = "module:Class", e.g. "sklearn.svm:SVC"')
    rest = dict(table)
    estimator = rest.pop("estimator")
    params = rest.pop("params", {})
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
    return LearnerSpec(name, estimator, {**params, **rest})


def _is_url(value: str) -> bool:
    return "://" in value
