"""A checkpoint's identity includes the run's plan, pinned (issue 40, item 6): with the same
settings and data, a plan that numbers, draws or tests its fits otherwise is another run, and
its checkpoint is refused, never resumed into (``soak_dask.run.executor.resume``)."""

from __future__ import annotations

import pytest

from soak_dask.run.executor import Checkpoint, resume
from soak_dask.split.plan import Fit, Plan, Selection, Term, build_plan

SETTINGS = {"seed": 1, "learners": {"featureless": "DummyClassifier()"}, "measures": ["error"]}
DATA = {"fingerprint": "0123abcd", "rows": {"a": 10, "b": 20}}


def _fold(k: int, exclude: bool = False) -> Selection:
    return Selection((Term("fold", (k,), exclude=exclude),))


def _plan(
    first: int = 1, draw: int = 0, test_of_2: Selection | None = None, n_groups: int = 0
) -> Plan:
    """Two folds, each fit on the other's rows and scored on its own. ``first``: which fold's
    fit is numbered 0; ``draw``/``n_groups``: fold 2's fit is a down-sample; ``test_of_2``:
    fold 2's test block."""
    tests = {1: _fold(1), 2: test_of_2 or _fold(2)}
    fits = {1: Fit(_fold(1, True)), 2: Fit(_fold(2, True), n_groups=n_groups, draw=draw)}
    order = [first, 3 - first]
    rows = [({"fold": k}, fits[k], k) for k in order]
    return build_plan(rows, tests, {"fold": [1, 2]})


def _record(fit_id: int, block: int) -> dict:
    return {"fit_id": fit_id, "learner": "featureless", "block": block, "error": 12.5}


def _started(path) -> Checkpoint:
    """A checkpoint of ``_plan()`` holding fit 0's record."""
    checkpoint = Checkpoint(path, dict(SETTINGS), dict(DATA))
    done, save = resume(checkpoint, _plan())
    assert done == {}
    save(0, "featureless", [_record(0, 0)])
    return checkpoint


def test_the_same_plan_made_again_resumes(tmp_path):
    checkpoint = _started(tmp_path / "ck")
    done, _ = resume(checkpoint, _plan())
    assert done == {(0, "featureless"): [_record(0, 0)]}


@pytest.mark.parametrize(
    "other",
    [
        {"first": 2},  # the same fits, numbered the other way: fit 0 is fold 2's
        {"draw": 1, "n_groups": 3},  # fold 2's fit a down-sample of 3 groups
        {"draw": 2, "n_groups": 3},  # ... the second such draw, not the first
        {"test_of_2": _fold(3)},  # fold 2's fit scored on another block, fits unchanged
    ],
)
def test_a_checkpoint_of_another_plan_is_refused(tmp_path, other):
    checkpoint = _started(tmp_path / "ck")
    plan = _plan(**other)
    assert not plan.table().equals(_plan().table())
    with pytest.raises(ValueError, match=r"other settings \(plan: "):
        resume(checkpoint, plan)
    # Refused, not rewritten: the first plan still resumes with its record.
    assert resume(checkpoint, _plan())[0] == {(0, "featureless"): [_record(0, 0)]}
