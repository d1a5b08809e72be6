"""Check once, at the door: every entry point's options checked from their `Setting` declarations
before its body runs, as scikit-learn's ``@validate_params`` checks ``cross_validate``'s.

``@checked("evaluate")`` above ``evaluate`` checks each of its parameters that
``soak_dask.settings`` declares for the command ``evaluate`` (`Setting.checked`: the declared
check, its message), gives an entry point's body its ``options`` as a ``RunOptions`` (default
``RunOptions()``; its values were checked when it was made), refuses keywords the function does
not take (naming the new name of a former one, ``refuse_unknown``), the options of
``evaluate`` its outer strategy would ignore (``check_design_options``), and beside a table
those a fold column makes moot (``check_fold_column_options``) or a group assignment without
a group column; then the body runs with the checked, canonical values (plain ints, the train
types as a tuple, a strategy's own ``outer_repeats``...). The command line and run files check
the same declarations before the engine loads (``soak_dask.app.config``, messages naming the
flag as typed); their values then pass this door unchanged. Nothing below the door checks an
option again.

Examples
--------
>>> @checked("run")
... def f(table, *, seed=1, n_folds=None):
...     return seed, n_folds
>>> f(None, seed=3)
(3, None)
>>> f(None, seed=1.5)
Traceback (most recent call last):
...
ValueError: seed=1.5: need an integer from 0 to 2**32 - 1
"""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from .run_options import RUN_OPTIONS, RunOptions
from .settings import (
    SETTINGS,
    Command,
    check_design_options,
    check_fold_column_options,
    command_settings,
    renamed_names,
)
from .split.fold_options import check_assignment_groups

if TYPE_CHECKING:
    from .split.design import Design

_F = TypeVar("_F", bound=Callable[..., Any])

#: Parameters an entry point takes whose values are objects, checked where they are used:
#: what it runs on and where (the table by ``check_table``, the learners by
#: ``resolve_learners``, the design by ``run_design``), and the prediction area of
#: ``outer="knndm"`` (a table, frame, raster or path: ``check_prediction``), which the door
#: refuses only beside a strategy that does not read it; an entry point's ``options`` (a
#: ``RunOptions``, checked when made) and a function's own ``client``.
NOT_OPTIONS = frozenset({"table", "learners", "design", "client", "prediction", "options"})
#: The command each decorated function checks its options as, by the function's qualified name
#: (``soak_dask.run.soak.soak`` -> ``"run"``): the door's register, which the tests read.
DOORS: dict[str, str] = {}


def checked(
    command: Command | str,
    only: tuple[str, ...] | None = None,
    design: type[Design] | None = None,
) -> Callable[[_F], _F]:
    """Decorator: check `command`'s declared options among the function's parameters (`only`
    those, if given) before its body runs, and call it with the checked values.

    Parameters
    ----------
    command : str
        Whose declarations apply (``settings.COMMANDS``: ``"run"`` for ``soak``,
        ``"split-sensitivity"``...): their checks, defaults and messages.
    only : tuple of str, optional
        The parameters to check, for a function that is no command's but takes some of its
        options (``random_split``'s ``train_ratio`` and ``seed``). Default: every parameter
        `command` declares; any other parameter (but `NOT_OPTIONS`) is an
        error when the function is decorated.
    design : type, optional
        The class of the function's ``design`` parameter (``SamplingSplits``...), whose
        ``__init__`` checks the design's options: the body gets an instance (``design()`` when
        None is given), and the class's options given as keywords are refused naming the way.

    Raises
    ------
    TypeError
        When decorating: a parameter neither declared for `command` nor in `NOT_OPTIONS`.
        When called: a keyword the function does not take (a former name or a run option is
        named as one: a run option goes in ``options=RunOptions(...)``, an option of the
        design in ``design=``), ``options`` not a ``RunOptions``, ``design`` not a `design`.
    ValueError
        When called: a bad value, named as the function's keyword, before any work.
    """
    declared = {s.name: s for s in command_settings(command)}

    def decorate(func: _F) -> _F:
        signature = inspect.signature(func)
        options = _options(func, signature, declared, only)
        # An entry point's former keywords are refused saying their new names.
        former = renamed_names(command) if only is None else None
        runs = "options" in signature.parameters  # an entry point: it takes RunOptions

        @functools.wraps(func)
        def door(*args: Any, **kwargs: Any) -> Any:
            refuse_unknown(func.__name__, signature, kwargs, former, design)
            if runs:
                kwargs["options"] = run_options(func.__name__, kwargs.get("options"))
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            values = bound.arguments
            if design is not None:
                values["design"] = design_of(func.__name__, design, values["design"])
            strategy = _strategy_values(values) if only is None and "outer" in values else {}
            for name in options:
                values[name] = declared[name].checked(values[name])
            if only is None:
                _check_beside_table(command, values)  # as given: before the strategy's values
            values.update({n: v for n, v in strategy.items() if values[n] is None})
            return func(*bound.args, **bound.kwargs)

        DOORS[f"{func.__module__}.{func.__qualname__}"] = command
        door.design_class = design  # type: ignore[attr-defined]
        door.__signature__ = signature  # type: ignore[attr-defined]
        return door  # type: ignore[return-value]

    return decorate


def run_options(name: str, options: Any) -> RunOptions:
    """An entry point's ``options`` (default ``RunOptions()``: its values were checked when
    it was made)."""
    if options is None:
        return RunOptions()
    if not isinstance(options, RunOptions):
        raise TypeError(
            f"{name}(): options={options!r}: need a soak_dask.RunOptions, e.g. "
            "options=sd.RunOptions(progress=False)"
        )
    return options


def design_of(name: str, design: type[Design], given: Any) -> Design:
    """An entry point's ``design``: `given`, or ``design()`` (its defaults) for None."""
    if given is None:
        return design()
    if not isinstance(given, design):
        raise TypeError(
            f"{name}(): design={given!r}: need a soak_dask.{design.__name__}, e.g. "
            f"design=sd.{design.__name__}(...)"
        )
    return given


def refuse_unknown(
    name: str,
    signature: inspect.Signature,
    given: Mapping[str, Any],
    renamed: Mapping[str, str] | None = None,
    design: type[Design] | None = None,
) -> None:
    """Refuse a keyword that function `name` (of `signature`) does not take, as Python does
    (a TypeError): a former name in `renamed` names its new one (``k= is now
    n_neighbors=``), an option of its `design` class the way to give it, any other the
    parameter it is closest to, if any.

    >>> def evaluate(table, *, outer_folds=None, seed=1): ...
    >>> refuse_unknown("evaluate", inspect.signature(evaluate), {"folds": 4})
    Traceback (most recent call last):
    ...
    TypeError: evaluate() got an unexpected keyword argument 'folds'; did you mean 'outer_folds'?
    """
    names = [p.name for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
    of_design = set(design.parameters()) if design is not None else set()
    for key in given:
        new = (renamed or {}).get(key, key) if key not in names else key
        if new in of_design:
            raise TypeError(
                f"{name}(): {key}= is an option of its design: pass "
                f"design={design.__name__}({new}=...) (soak_dask.{design.__name__})"
            )
        if new != key:
            raise TypeError(f"{name}(): {key}= is now {new}=")
        if key in RUN_OPTIONS and "options" in names:
            raise TypeError(
                f"{name}(): {key}= is a run option: pass options=RunOptions({key}=...) "
                "(soak_dask.RunOptions)"
            )
        if key not in names:
            near = difflib.get_close_matches(key, names, n=1, cutoff=0.6)
            hint = f"; did you mean {near[0]!r}?" if near else f"; it takes {', '.join(names)}"
            raise TypeError(f"{name}() got an unexpected keyword argument {key!r}{hint}")


def _options(
    func: Callable[..., Any],
    signature: inspect.Signature,
    declared: Mapping[str, Any],
    only: tuple[str, ...] | None,
) -> tuple[str, ...]:
    """The parameters of `func` the door checks; refuse one it could not (a typo, an option
    not declared for the command)."""
    named = [
        p.name
        for p in signature.parameters.values()
        if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
    ]
    wanted = named if only is None else list(only)
    free = NOT_OPTIONS if only is None else frozenset()
    unknown = [n for n in wanted if n not in declared and n not in free]
    if unknown or not set(wanted) <= set(named):
        raise TypeError(
            f"{func.__qualname__}: parameters {unknown or sorted(set(wanted) - set(named))} "
            "are not options declared in soak_dask.settings for this command; declare them "
            "there (a Setting) or take them as a non-option (option_checks.NOT_OPTIONS)"
        )
    return tuple(n for n in wanted if n in declared and n not in NOT_OPTIONS)


def _strategy_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """Evaluate's strategy options as its ``outer`` takes them (``check_design_options``: an
    unknown strategy and the options it does not read refused; those not given, its value)."""
    resolved = check_design_options(values["outer"], values)
    return {n: v for n, v in resolved.items() if n in values}


def _check_beside_table(command: str, values: Mapping[str, Any]) -> None:
    """Beside a table: refuse the options its fold column makes moot, and a group assignment
    without a group column."""
    table = values.get("table")
    fold, group = getattr(table, "fold", None), getattr(table, "group", None)
    if fold is not None:
        check_fold_column_options(fold, values, command=command)
    if "group_assignment" in values and hasattr(table, "group"):
        check_assignment_groups(group, values["group_assignment"])


def strategy_options(outer: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """The options among `values` (as the door resolved them) that ``evaluate``'s strategy
    `outer` reads (``Setting.designs``), for ``split.outer.outer_design``.

    >>> strategy_options("5x2cv", {"outer_repeats": 5, "outer_folds": None, "train_ratio": None})
    {'outer_repeats': 5}
    """
    return {
        name: value
        for name, value in values.items()
        if name in SETTINGS and outer in (SETTINGS[name].designs or ())
    }
