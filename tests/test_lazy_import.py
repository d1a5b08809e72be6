"""Start-up cost: ``import soak_dask`` and the ``soak`` command's parsing load no heavy library;
every public name still resolves, and results opened after ``import soak_dask`` alone have the
``Dataset.soak`` accessor. Fresh interpreters (``sys.modules`` of this session holds everything).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import soak_dask as sd

ROOT = Path(__file__).resolve().parents[1]
#: A second or so of import each; loaded with the command or the function that needs them
#: (xarray, 0.4 s, is imported by ``import soak_dask``: it registers the Dataset accessor).
HEAVY = ("sklearn", "dask.dataframe", "matplotlib", "distributed", "scipy")


def fresh_python(code: str) -> str:
    """stdout of ``code`` run by a new interpreter on this tree's soak_dask."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def loaded(code: str) -> list[str]:
    """Which of ``HEAVY`` are imported after ``code``."""
    out = fresh_python(f"{code}\nimport sys\nprint(*[m for m in {HEAVY!r} if m in sys.modules])")
    return out.split()


def test_import_soak_dask_loads_no_heavy_library():
    assert loaded("import soak_dask") == []


@pytest.mark.slow
def test_the_command_line_parses_and_prints_help_without_heavy_libraries():
    code = """
import contextlib, io
from soak_dask.app.cli import COMMANDS, build_parser, main
from soak_dask.app.flags import run_settings
for argv in (["--help"], *([name, "--help"] for name in COMMANDS)):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
        main(argv)
argv = ["run", "t.csv", "--label", "y", "--learner", "featureless", "--out", "o"]
assert run_settings(build_parser().parse_args(argv)).learners() == {"featureless": "featureless"}
"""
    assert loaded(code) == []


@pytest.mark.slow
def test_a_mistake_in_the_flags_or_out_is_refused_before_the_engine_loads(tmp_path):
    # (a measure of no task too: which task's measures a name must be needs the table)
    (tmp_path / "t.csv").write_text("x,y\n1,a\n2,b\n")
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "mine.txt").write_text("not soak's")
    code = f"""
import contextlib, io, os
from soak_dask.app.cli import main
os.chdir({str(tmp_path)!r})
seed = ["t.csv", "--label", "y", "--seed", "-1", "--out", "o"]
runs = [[name, *seed] for name in ("run", "evaluate", "transfer", "split-sensitivity",
                                     "compare-sampling")]
runs.append(["evaluate", "t.csv", "--label", "y", "--measures", "error,aucc", "--out", "o"])
runs.append(["run", "t.csv", "--label", "y", "--out", "taken"])
err = io.StringIO()
with contextlib.redirect_stderr(err):
    assert [main(argv) for argv in runs] == [2] * len(runs), err.getvalue()
lines = err.getvalue().splitlines()
assert sum("--seed=-1" in line for line in lines) == 5 and "taken" in lines[-1], lines
assert "'aucc' is no measure; choose from classification: 'error'" in lines[-2], lines
"""
    assert loaded(code) == []


def test_every_builtin_learner_is_made_for_each_task_it_does():
    from sklearn.base import is_classifier, is_regressor

    from soak_dask.learn.builtin import BUILTIN, builtin_learner

    seeded = {"lasso_cv", "decision_tree", "random_forest", "hist_gradient_boosting", "xgboost"}
    for name, factories in BUILTIN.items():
        for task, is_task in (("classification", is_classifier), ("regression", is_regressor)):
            if getattr(factories, task) is None:
                continue
            est = builtin_learner(name, task, seed=7)
            assert is_task(est), (name, task)
            seeds = [v for k, v in est.get_params().items() if k.endswith("random_state")]
            assert seeds == [7] if name in seeded else set(seeds) <= {None}, (name, task, seeds)


def test_every_public_name_resolves_to_its_module_s_object():
    init = ROOT / "soak_dask" / "__init__.py"
    (block,) = [
        node
        for node in ast.parse(init.read_text()).body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
    ]
    declared = {
        alias.asname or alias.name: (f"soak_dask.{node.module}", alias.name)
        for node in block.body
        for alias in node.names
    }
    assert sorted(sd.__all__) == sorted(declared) and len(set(sd.__all__)) == len(sd.__all__)
    for name, (module, attr) in declared.items():
        assert getattr(sd, name) is getattr(sys.modules[module], attr), name
    assert set(sd.__all__) <= set(dir(sd))
    with pytest.raises(AttributeError, match="module 'soak_dask' has no attribute 'nope'"):
        sd.nope  # noqa: B018


def test_star_import_binds_every_public_name():
    namespace: dict = {}
    exec("from soak_dask import *", namespace)
    assert set(sd.__all__) <= set(namespace)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    from .conftest import toy_table

    table = sd.load_table(toy_table(n=120), label="y", subset="subset")
    res = sd.soak(
        table,
        {"featureless": "featureless"},
        n_folds=2,
        seed=1,
        options=sd.RunOptions(progress=False),
    )
    return sd.save_results(res, tmp_path_factory.mktemp("lazy") / "res.zarr")


@pytest.mark.slow
def test_results_opened_after_import_soak_dask_alone_have_the_accessor(store):
    code = (
        "from soak_dask import open_results\n"  # through soak_dask.__getattr__, as sd.open_results
        f"ds = open_results({str(store)!r})\n"
        "print(ds.soak.kind)\n"
        "print(ds.soak.summary('error').to_json())"
    )
    kind, summary = fresh_python(code).splitlines()
    assert kind == "soak"
    expected = sd.open_results(store).soak.summary("error")
    assert json.loads(summary) == json.loads(expected.to_json())


@pytest.mark.slow
def test_a_store_opened_by_xarray_after_import_soak_dask_has_the_accessor(store):
    code = (
        "import soak_dask\nimport xarray as xr\n"
        f"ds = xr.open_zarr({str(store)!r}, consolidated=False)\n"
        "print(ds.soak.kind, type(ds.soak).__name__, ds.soak is ds.soak)"
    )
    assert fresh_python(code).split() == ["soak", "SoakAccessor", "True"]
