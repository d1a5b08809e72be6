"""The design protocol (soak_dask.split.design): the example design of docs/plans.md run end to
end through the engine, every design class of split/ keeping the protocol, and split/ free of
import cycles, upward imports and private cross-module imports."""

from __future__ import annotations

import ast
import contextlib
import importlib
import inspect
import io
import pkgutil
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

import soak_dask as sd
import soak_dask.split
from soak_dask.results.registry import unregister_kind
from soak_dask.split.design import Design
from soak_dask.split.transfer import Transfer

from ..conftest import toy_table

ROOT = Path(__file__).resolve().parents[2]
SPLIT = ROOT / "soak_dask" / "split"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```[ \t]*$", re.M | re.S)


def _example() -> tuple[list[str], list[str]]:
    """The plain Python blocks of docs/plans.md (the example design, its run, its kind of
    result) and the text block printed after each of the last two."""
    blocks = [(m[1], m[2]) for m in _FENCE.finditer((ROOT / "docs" / "plans.md").read_text())]
    python = [i for i, (lang, body) in enumerate(blocks) if lang == "python" and ">>>" not in body]
    assert len(python) == 3, "docs/plans.md: the example design, its run and its kind"
    assert all(blocks[i + 1][0] == "text" for i in python[1:])
    return [blocks[i][1] for i in python], [blocks[i + 1][1] for i in python[1:]]


@pytest.fixture(scope="module")
def example(tmp_path_factory) -> dict:
    code, printed = _example()
    namespace: dict = {}
    with contextlib.chdir(tmp_path_factory.mktemp("plans")):
        for i, block in enumerate(code):
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(block, "docs/plans.md", "exec"), namespace)
            lines = [line.rstrip() for line in out.getvalue().splitlines()]
            if i:  # the design's block prints nothing; the others print their text block
                assert lines == [line.rstrip() for line in printed[i - 1].splitlines()]
        namespace["page"] = Path("forward_report", "report.html").resolve()
    yield namespace
    unregister_kind("ForwardInTime")


def test_docs_example_kind_summarises_reopens_and_writes_its_page(example):
    """The registered kind serves the accessor, open_results and a page holding the scores."""
    res = example["res"]
    assert sd.kind_of(res).name == "ForwardInTime"
    summary = res.soak.summary(["error", "auc"])
    assert list(summary.columns) == ["learner", "test_subset", "error", "auc", "n_train", "n_test"]
    assert summary["error"].tolist() == res["error"].values.ravel().tolist()
    page = example["page"].read_text()
    assert "Scores by test year" in page and "<td>67</td>" in page
    scores = pd.read_csv(example["page"].parent / "scores.csv")
    assert scores["n_train"].tolist() == [200, 300, 200, 300]


def test_docs_example_runs_end_to_end_and_equals_scikit_learn(example):
    """The example's scores are those of LDA (and the majority class) fitted on the earlier
    years and scored on the next, computed here without the engine."""
    res, df = example["res"], example["df"]
    assert res.attrs["design"] == "ForwardInTime"
    assert res.attrs["design_repr"] == "ForwardInTime(min_train=2)"
    assert list(res["test_subset"].values) == ["2021", "2022"]
    for year in (2021, 2022):
        train, test = df[df["year"] < year], df[df["year"] == year]
        lda = LinearDiscriminantAnalysis().fit(train[["b1", "b2"]], train["y"])
        expected = 100 * np.mean(lda.predict(test[["b1", "b2"]]) != test["y"])
        got = float(res["error"].sel(learner="lda", test_subset=str(year)))
        assert got == pytest.approx(expected)
        majority = train["y"].value_counts().idxmax()
        featureless = float(res["error"].sel(learner="featureless", test_subset=str(year)))
        assert featureless == pytest.approx(100 * np.mean(test["y"] != majority))
        assert int(res["n_train"].sel(learner="lda", test_subset=str(year))) == len(train)


def test_docs_example_refuses_a_bad_parameter_and_round_trips(example):
    forward = example["ForwardInTime"]
    with pytest.raises(ValueError, match="min_train=0"):
        forward(min_train=0)
    assert repr(forward()) == "ForwardInTime()"
    assert forward(3).get_params() == {"min_train": 3}
    with pytest.raises(ValueError, match="min_train=4: no year left"):
        forward(4).plan(example["table"])


def test_run_design_refuses_what_is_not_a_design():
    table = sd.load_table(example_frame(), label="y")
    with pytest.raises(TypeError, match="need a soak_dask.Design"):
        sd.run_design(table, "cv")


def example_frame():
    import pandas as pd

    return pd.DataFrame({"b1": np.arange(20.0), "y": ["a", "b"] * 10})


def _designs() -> list[type[Design]]:
    """Every concrete Design class defined in soak_dask.split's modules."""
    found = set()
    for info in pkgutil.iter_modules(soak_dask.split.__path__):
        module = importlib.import_module(f"soak_dask.split.{info.name}")
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, Design) and not inspect.isabstract(obj):
                if obj.__module__ == module.__name__:
                    found.add(obj)
    return sorted(found, key=lambda c: c.__name__)


# Each design: parameters to build one with (other than the defaults where it has them), and a
# bad value of one parameter with the name its error must give (None: no parameters).
CASES = {
    "Bootstrap": ({"n_repeats": 3, "seed": 2}, ({"n_repeats": 0}, "outer_repeats")),
    "FiveByTwoCV": ({"seed": 5, "n_repeats": 3}, ({"seed": -1}, "seed")),
    "KFoldDesign": (
        {"n_folds": 4, "n_repeats": 2, "balance": "overlap"},
        ({"balance": "classes"}, "balance"),
    ),
    "KNNDMFolds": (
        {"prediction": "area.parquet", "n_folds": 4, "maxp": 0.4, "space": "feature"},
        ({"n_candidates": 0}, "n_candidates"),
    ),
    "LeaveOneGroupOutDesign": ({}, None),
    "LeaveOneOutDesign": ({}, None),
    "SameOtherAll": (
        {"n_folds": 3, "train_types": ("same", "all"), "sizes": 1, "ratio": 0.25},
        ({"train_types": "same,bogus"}, "train_types"),
    ),
    "SamplingSplits": (
        {"methods": ("random", "overlap"), "n_repeats": 4, "n_neighbors": 3},
        ({"methods": ["random"], "n_neighbors": 3}, "n_neighbors"),
    ),
    "SearchOuter": ({"pools": {(1, "a"): ("a", "b")}}, ({"pools": {(1, "a"): ()}}, "pools")),
    "SearchRound": ({"asked": {(2, "b"): [("b",), ("a", "b")]}}, ({"asked": [1]}, "asked")),
    "SplitTrials": ({"ratios": (0.6, 0.8), "n_repeats": 4}, ({"ratios": [1.5]}, "ratios")),
    "Subsampling": ({"n_repeats": 2, "train_ratio": 0.6}, ({"train_ratio": 1.5}, "train_ratio")),
    "Transfer": ({"n_folds": 4, "stratify": False}, ({"stratify": "yes"}, "stratify")),
}


def test_every_design_in_split_is_covered():
    assert sorted(c.__name__ for c in _designs()) == sorted(CASES)


@pytest.mark.parametrize("design", _designs(), ids=lambda c: c.__name__)
def test_design_keeps_the_protocol(design):
    params, bad = CASES[design.__name__]
    made = design(**params)
    shown = repr(made)
    again = eval(shown, {design.__name__: design})  # the repr is the constructor call
    assert again.get_params() == made.get_params()
    assert repr(design(**made.get_params())) == shown
    assert set(made.get_params()) == set(inspect.signature(design).parameters)
    for name, value in params.items():
        assert name in shown or value == inspect.signature(design).parameters[name].default
    if bad is not None:
        kwargs, name = bad
        with pytest.raises(ValueError, match=rf"\b{name}\b"):
            design(**{**params, **kwargs})
    if "seed" in inspect.signature(design).parameters:  # checked where set (Design.seed)
        with pytest.raises(ValueError, match=r"seed=1\.0: need an integer"):
            design(**{**params, "seed": 1.0})
        assert made.get_params()["seed"] == params.get("seed", 1)


@pytest.mark.slow
def test_run_design_of_same_other_all_is_a_soak_result():
    """One result, one kind (issue 39): the generic run path records SameOtherAll's results
    as soak() does, so every reader of soak results (pvalues, the report) takes them."""
    table = sd.load_table(toy_table(n=120, n_subsets=2, seed=4), label="y", subset="subset")
    learners = ["featureless", "lda"]
    res = sd.run_design(
        table, sd.SameOtherAll(n_folds=3), learners, options=sd.RunOptions(progress=False)
    )
    ref = sd.soak(table, learners, n_folds=3, options=sd.RunOptions(progress=False))
    assert res.attrs["design"] == ref.attrs["design"] == "soak" and res.soak.kind == "soak"
    np.testing.assert_array_equal(res["error"].transpose(*ref["error"].dims), ref["error"])
    cols = ["learner", "test_subset", "compare", "p"]
    got, want = (
        sd.pvalues(r)[cols].astype({"learner": str, "test_subset": str}) for r in (res, ref)
    )
    pd.testing.assert_frame_equal(got, want)


#: A design an entry point runs, that entry point and its options for the same design.
ENTRY_DESIGNS = {
    "transfer": (lambda: sd.Transfer(n_folds=3), "transfer", {"n_folds": 3}),
    "repeated_cv": (
        lambda: sd.KFoldDesign(3, n_repeats=2),
        "evaluate",
        {"outer": "repeated_cv", "outer_folds": 3, "outer_repeats": 2},
    ),
    "bootstrap": (lambda: sd.Bootstrap(3), "evaluate", {"outer": "bootstrap", "outer_repeats": 3}),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(ENTRY_DESIGNS))
def test_run_design_records_the_kind_its_entry_point_records(case, tmp_path):
    """One result, one kind (issue 39), for every design an entry point runs: run_design's
    result is read, summarised and rendered as that entry point's."""
    design, kind, options = ENTRY_DESIGNS[case]
    table = sd.load_table(toy_table(n=120, n_subsets=2, seed=4), label="y", subset="subset")
    if kind == "evaluate":
        table = sd.load_table(toy_table(n=120, seed=4).drop(columns="subset"), label="y")
    quiet = sd.RunOptions(progress=False)
    res = sd.run_design(table, design(), "lda", options=quiet)
    ref = getattr(sd, kind)(table, "lda", **options, options=quiet)
    assert res.attrs["design"] == ref.attrs["design"] == kind and res.soak.kind == kind
    shared = ("outer", "outer_folds", "outer_repeats", "train_ratio", "n_distinct_train_sets")
    for key in shared if kind == "evaluate" else shared[-1:]:
        assert res.attrs[key] == ref.attrs[key], key
    assert set(res.soak.summary()["learner"]) == {"lda"}
    sd.save_results(res, tmp_path / "r.zarr")
    page = sd.kind_of(sd.open_results(tmp_path / "r.zarr")).report(res, tmp_path / "rep", False)
    assert page.name == "report.html" and "outer=None" not in page.read_text()


def test_an_outer_design_names_its_strategy_or_is_refused_where_it_is_written():
    with pytest.raises(TypeError, match="Halves: an OuterDesign names its strategy"):

        class Halves(sd.OuterDesign):
            def add_keys(self, table): ...
            def plan(self, table, counts=None): ...

    class Repeated(sd.KFoldDesign):  # inherits its strategy's name
        pass

    assert Repeated(3, n_repeats=2).outer == "repeated_cv"


def test_a_plan_before_its_keys_is_refused_clearly():
    from soak_dask.split.outer import KFoldDesign

    with pytest.raises(ValueError, match="call it first"):
        KFoldDesign(3).plan(None)


def test_the_base_is_abstract():
    with pytest.raises(TypeError):
        Design()


def _imports(path: Path) -> list[tuple[str, str]]:
    """(module, name) of each ``from ... import`` inside the package, resolved."""
    package = ["soak_dask", *path.relative_to(ROOT / "soak_dask").parent.parts]
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            out += [(module, alias.name) for alias in node.names if module.startswith("soak_dask")]
    return out


def test_split_imports_no_upper_floor_and_no_private_name():
    """split/ adds keys and plans: it reads tables/, schema and hashing (and soak_dask.reduction's
    tree of merges), never diagnose/, pooling/, results/ or app/; and it imports no private
    name of another module."""
    upper = ("soak_dask.diagnose", "soak_dask.pooling", "soak_dask.results", "soak_dask.app")
    for path in SPLIT.glob("*.py"):
        for module, name in _imports(path):
            assert not module.startswith(upper), f"{path.name} imports {module}"
            assert not (name.startswith("_") and not name.startswith("__")), (path.name, name)


def test_split_modules_import_no_cycle():
    graph = {
        path.stem: {
            m.rsplit(".", 1)[-1] for m, _ in _imports(path) if m.startswith("soak_dask.split.")
        }
        for path in SPLIT.glob("*.py")
    }

    def reaches(start: str, goal: str, seen: set) -> bool:
        for nxt in graph.get(start, ()):
            if nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})):
                return True
        return False

    assert not [m for m in graph if reaches(m, m, {m})]


@pytest.mark.parametrize(
    ("design", "entry"),
    [
        (sd.SameOtherAll(n_folds=3, seed=2), lambda t: sd.soak(t, "lda", **KW, n_folds=3, seed=2)),
        (Transfer(n_folds=3, seed=2), lambda t: sd.transfer(t, "lda", **KW, n_folds=3, seed=2)),
    ],
    ids=["soak", "transfer"],
)
def test_run_design_gives_the_entry_points_numbers(design, entry):
    """The package's designs run by ``run_design`` score as their entry points do."""
    import dask

    table = sd.load_table(toy_table(120), label="y", subset="subset")
    with dask.config.set(scheduler="sync"):
        got = sd.run_design(table, design, "lda", options=sd.RunOptions(progress=False))
        expected = entry(table)
    np.testing.assert_allclose(got["error"].values, expected["error"].values, rtol=1e-12)
    np.testing.assert_array_equal(got["n_train"].values, expected["n_train"].values)


KW = {"options": sd.RunOptions(onepass=False, progress=False)}


def test_every_outer_name_builds_the_design_of_that_name():
    """``fold_options.OUTER`` (evaluate's ``outer`` choices, kept light for the command line)
    and the designs' own ``outer`` names stay one list: each name builds a design that records
    it, and every outer design of the package is reachable by its name."""
    from soak_dask.split.fold_options import OUTER
    from soak_dask.split.outer import OUTER_DESIGNS, outer_design

    options = {
        "outer_folds": 5, "outer_repeats": 2, "balance": "class", "group_assignment": "rows",
        "train_ratio": 0.8, "prediction": "area.parquet", "clustering": None,
    }  # fmt: skip
    built = {name: outer_design(name, 1, options) for name in OUTER}
    assert all(design.outer == name for name, design in built.items()), built
    registered = {n for n, c in OUTER_DESIGNS.items() if c.__module__ == "soak_dask.split.outer"}
    assert registered == set(OUTER)
    classes, todo = set(), [sd.OuterDesign]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.__module__ == "soak_dask.split.outer" and cls is not sd.OuterDesign:
            classes.add(cls)
    assert classes == {type(design) for design in built.values()}


def test_a_subclass_registers_its_own_outer_name_not_its_parent_s_names():
    """``names`` is a class keyword: ``KFoldDesign``'s "cv" and "repeated_cv" stay its own,
    and a subclass of it (as ``Subsampling`` is) registers under its ``outer`` alone."""
    from soak_dask.split.outer import OUTER_DESIGNS, KFoldDesign

    class Blocked(KFoldDesign):
        outer = "blocked_cv_protocol_test"

    try:
        assert OUTER_DESIGNS["blocked_cv_protocol_test"] is Blocked
        assert OUTER_DESIGNS["cv"] is OUTER_DESIGNS["repeated_cv"] is KFoldDesign
        assert not hasattr(KFoldDesign, "names") and not hasattr(sd.Subsampling, "names")
        assert [n for n, c in OUTER_DESIGNS.items() if c is sd.Subsampling] == ["subsampling"]
    finally:
        del OUTER_DESIGNS["blocked_cv_protocol_test"]
