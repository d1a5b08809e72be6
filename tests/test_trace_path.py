"""How far ``soak run`` and ``sd.evaluate`` travel through the package, by
``scripts/trace_path.py`` (issue 39's measure): each run's deepest chain of package calls and
the modules it passes through stay within the issue's targets (25 hops, 18 modules)."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("trace_path", ROOT / "scripts" / "trace_path.py")
trace_path = importlib.util.module_from_spec(_spec)
sys.modules["trace_path"] = trace_path  # dataclasses look their module up while the class is made
_spec.loader.exec_module(trace_path)

#: Issue 39's targets for the deepest chain of a run: its calls and the modules they are in.
MOST_HOPS, MOST_MODULES = 25, 18


def test_a_chain_is_the_deepest_nesting_of_package_calls_and_its_modules():
    from soak_dask.split.fold_options import check_n_folds, check_seed

    trace = trace_path.Trace()
    sys.setprofile(trace.profile)
    try:
        check_seed(3)
        check_n_folds(4)
    finally:
        sys.setprofile(None)
    assert trace.deepest == ["soak_dask.split.fold_options.check_seed"]
    assert trace.functions == {
        "soak_dask.split.fold_options.check_seed",
        "soak_dask.split.fold_options.check_n_folds",
    }
    assert trace_path.modules_of(trace.functions) == ["soak_dask.split.fold_options"]


@pytest.mark.slow
def test_soak_run_and_evaluate_stay_within_the_targets(capsys):
    assert trace_path.main() == 0
    printed = capsys.readouterr().out
    found = re.findall(r"hops \(the deepest chain of package calls\): (\d+) through (\d+)", printed)
    assert len(found) == 2, printed  # soak run, then sd.evaluate
    for hops, modules in found:
        assert 5 < int(hops) <= MOST_HOPS and 1 < int(modules) <= MOST_MODULES, printed
    assert "soak_dask.app.cli.main" in printed and "soak_dask.run.evaluate.evaluate" in printed
