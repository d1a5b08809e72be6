"""Check once, at the door: every public entry point checks its options from their
declarations (``soak_dask.option_checks.checked``) before any work, and its body gets the
checked values."""

from __future__ import annotations

import dataclasses
import inspect

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import soak_dask as sd
from soak_dask.app.info import describe_table
from soak_dask.option_checks import DOORS, checked
from soak_dask.split.sampling import random_split, stratified_split

#: Each public entry point and the command whose declarations it is checked by.
ENTRY_POINTS = {
    "soak_dask.run.soak.soak": "run",
    "soak_dask.run.evaluate.evaluate": "evaluate",
    "soak_dask.pooling.matrix.transfer": "transfer",
    "soak_dask.pooling.search.search_subsets": "search",
    "soak_dask.diagnose.sensitivity.split_sensitivity": "split-sensitivity",
    "soak_dask.diagnose.mai.compare_sampling": "compare-sampling",
    "soak_dask.run.run_design.run_design": "run",
    "soak_dask.app.info.describe_table": "run",
}


class Computed(RuntimeError):
    """Raised by a partition that a test says must not be computed."""


def _explode(i: int, meta: pd.DataFrame) -> pd.DataFrame:
    raise Computed(f"partition {i} was computed")


@pytest.fixture(scope="module")
def untouchable():
    """A table whose every partition raises when computed: any pass over it fails."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "a": rng.normal(size=40),
            "b": rng.normal(size=40),
            "region": np.repeat(["N", "S"], 20),
            "y": np.tile([0, 1], 20),
        }
    )
    table = sd.load_table(df, label="y", subset="region", features=["a", "b"])
    meta = table.data._meta
    data = dd.from_map(_explode, [0, 1], meta=meta, args=[meta], enforce_metadata=False)
    with dask.config.set(scheduler="synchronous"):
        with pytest.raises(Computed):
            data.compute()
    return dataclasses.replace(table, data=data)


def test_every_public_entry_point_carries_the_door():
    public = {
        "soak": sd.soak,
        "evaluate": sd.evaluate,
        "transfer": sd.transfer,
        "search_subsets": sd.search_subsets,
        "split_sensitivity": sd.split_sensitivity,
        "compare_sampling": sd.compare_sampling,
        "run_design": sd.run_design,
        "describe_table": describe_table,
    }
    for name, func in public.items():
        key = f"{func.__module__}.{func.__qualname__}"
        assert DOORS.get(key) == ENTRY_POINTS[key], name
    for split in (random_split, stratified_split):
        assert DOORS[f"{split.__module__}.{split.__qualname__}"] == "compare-sampling"


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda t: sd.soak(t, seed=-1), r"^seed=-1: need an integer from 0 to 2\*\*32 - 1$"),
        (lambda t: sd.soak(t, sizes=-2), r"^sizes=-2: use -1 \(none\)"),
        (lambda t: sd.evaluate(t, test_split=0.9), r"^test_split=0.9: need a share from 0"),
        (lambda t: sd.evaluate(t, outer="lodo", outer_folds=3), r"outer_folds=3 has no effect"),
        (lambda t: sd.transfer(t, n_folds=1), r"^n_folds=1: need an integer of at least 2$"),
        (lambda t: sd.search_subsets(t, threshold=2), r"^threshold=2: need a relative"),
        (lambda t: sd.split_sensitivity(t, alpha=0.6), r"^alpha=0.6: need a level in"),
        (
            lambda t: sd.compare_sampling(t, None, design=sd.SamplingSplits(n_repeats=1)),
            r"^n_repeats=1: need an integer",
        ),
        (
            lambda t: sd.run_design(t, sd.SameOtherAll(), options=sd.RunOptions(error_score="x")),
            r"^error_score='x'",
        ),
        (lambda t: describe_table(t, 1), r"^n_folds=1: need an integer of at least 2$"),
        (lambda t: random_split(t, 0.5, seed=1.0), r"^seed=1.0: need an integer"),
    ],
)
def test_a_bad_value_is_refused_before_any_computation(untouchable, call, match):
    with dask.config.set(scheduler="synchronous"):
        with pytest.raises(ValueError, match=match):
            call(untouchable)


def test_a_former_keyword_is_refused_at_the_door(untouchable):
    message = r"^compare_sampling\(\): k= is an option of its design: pass design=SamplingSplits\("
    with pytest.raises(TypeError, match=message):
        sd.compare_sampling(untouchable, None, k=3)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda t: sd.evaluate(t, folds=4), r"argument 'folds'; did you mean 'outer_folds'\?$"),
        (
            lambda t: sd.soak(t, n_fold=4),
            r"^soak\(\) got an unexpected .* 'n_fold'; did you mean 'n_folds'",
        ),
        (lambda t: sd.transfer(t, zzz=1), r"argument 'zzz'; it takes table, learners, "),
    ],
)
def test_an_unknown_keyword_names_the_nearest_parameter(untouchable, call, match):
    with pytest.raises(TypeError, match=match):
        call(untouchable)


def test_the_body_gets_the_checked_values():
    @checked("run")
    def run(table, *, seed=1, train_types=("same", "other", "all")):
        return seed, train_types

    seed, train_types = run(None, seed=np.int64(7), train_types="all,same")
    assert type(seed) is int and seed == 7
    assert train_types == ("same", "all")
    with pytest.raises(ValueError, match=r"^seed=True: need an integer"):
        run(None, seed=True)


def test_run_options_are_checked_when_made_and_reach_the_body_as_keywords():
    made = sd.RunOptions(max_train_rows=np.int64(50), error_score=np.nan)
    assert type(made.max_train_rows) is int and np.isnan(made.error_score)
    with pytest.raises(ValueError, match=r"^progress='no': need"):
        sd.RunOptions(progress="no")
    with pytest.raises(ValueError, match=r"^client='tcp://host:8786': need a distributed.Client"):
        sd.RunOptions(client="tcp://host:8786")  # an address: connect first, the message says how
    assert list(inspect.signature(sd.soak).parameters)[-1] == "options"
    with pytest.raises(TypeError, match=r"^soak\(\): progress= is a run option: pass "):
        sd.soak(None, progress=False)
    with pytest.raises(TypeError, match=r"options=\{'progress': False\}: need a soak_dask"):
        sd.soak(None, options={"progress": False})


def test_evaluate_gets_its_strategy_values():
    """The door gives a strategy's option its value there (5x2cv: 5 repeats)."""

    @checked("evaluate")
    def evaluate(table, *, outer="cv", outer_repeats=None, outer_folds=None):
        return outer_repeats, outer_folds

    assert evaluate(None, outer="5x2cv") == (5, None)
    assert evaluate(None) == (None, 5)


def test_an_undeclared_parameter_is_refused_when_decorating():
    with pytest.raises(TypeError, match=r"\['colour'\] are not options declared"):

        @checked("run")
        def run(table, *, seed=1, colour="red"):
            return seed


def test_the_six_entry_points_take_at_most_70_parameter_slots():
    """Issue 39's measure: what a run computes in keywords, how it runs in ``RunOptions`` and
    the designs of ``compare_sampling`` and ``split_sensitivity`` as objects (130 slots before)."""
    six = [sd.soak, sd.evaluate, sd.transfer, sd.search_subsets]
    six += [sd.split_sensitivity, sd.compare_sampling]
    slots = {f.__name__: len(inspect.signature(f).parameters) for f in six}
    assert sum(slots.values()) <= 70, slots
