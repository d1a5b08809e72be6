"""A table-driven battery of bad-input and edge cases (issue 9, "Keep it true").

Each case states the exact kind of outcome it must have:

- ``Error``: a clear error raised by soak_dask itself, of the given type, whose message names
  the column / value / option (``words``) and a way out (``fix``: at least one of them). On the
  command line: exit status 2, stderr exactly one line ``soak: error: ...``, no traceback.
- ``NanWarning``: the run completes; exactly the cells that meet the bad value are NaN, and one
  warning names those fits.
- ``Result``: a correct result, checked against a value computed here independently (e.g. the
  featureless error of a test block is its share of the minority class).

Python cases run in this process on Dask's local scheduler. Command-line cases run
``cli.main`` in this process too, its output captured (a process each cost seconds of
imports); the ones that read the table get ``--scheduler`` of the session's LocalCluster
(tests/conftest.py), not one started per case. Every
source file a case uses is hashed before and compared after: it must be byte-identical (and
nothing added to or removed from a source directory).

Words may name ``$name`` values a case sets while it runs (``ctx.let``), such as a file it made.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from contextlib import ExitStack, chdir, redirect_stderr, redirect_stdout
from dataclasses import dataclass
from functools import cached_property, partial
from pathlib import Path
from string import Template
from typing import Any

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from distributed import LocalCluster
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import soak_dask as sd
from soak_dask.app import cli
from soak_dask.app.config import load_run_file, merge_settings
from soak_dask.app.info import describe_table
from soak_dask.run.cluster import connect, make_security

from .app.test_cli import read_only_dir
from .conftest import toy_table
from .results.test_results_store import results
from .run.test_security import listening_ips
from .test_bad_input import clear_error
from .tls_certs import make_tls_files

TIMINGS = ["fit_seconds", "predict_seconds"]
#: "yes" rows of each (subset, fold) block of ten rows in `folded_frame`: "no" is the majority
#: of every train set, so featureless predicts "no" everywhere. Block ("B", 2) has one class.
YES = {("A", 1): 2, ("A", 2): 3, ("A", 3): 4, ("B", 1): 1, ("B", 2): 0, ("B", 3): 3}
ROLES = ["--label", "y", "--subset", "subset", "--fold-column", "fold"]
#: The row of `folded_frame` given a missing or infinite x1 (subset A, fold 2).
BAD_ROW = 13
#: What the warning after a run with `BAD_ROW` missing says about the fits that met it.
NAN_FITS = ("fits failed and score NaN", "logistic fit", "predicting test subset 'A'")
SIDE_EFFECT = "soak_battery_side_effect"
SEEDS = {
    "seed-float-1.5": 1.5,
    "seed-text-'1'": "1",
    "seed-negative": -1,
    "seed-2**70": 2**70,
    "seed-None": None,
    "seed-True": True,
}
N_FOLDS = {
    "n_folds-0": (0, "at least 2"),
    "n_folds-1": (1, "at least 2"),
    "n_folds-128": (128, "use fewer folds"),
    "n_folds-text-'3'": ("3", "at least 2"),
}


# --- data ---------------------------------------------------------------------------------


def folded_frame() -> pd.DataFrame:
    """Subsets A and B, a fold column 1..3, ten rows per (subset, fold) block (``YES``), two
    numeric features and a text column ``site``."""
    rng = np.random.default_rng(9)
    rows = [
        {"subset": s, "fold": k, "y": "yes" if i < n_yes else "no"}
        for (s, k), n_yes in YES.items()
        for i in range(10)
    ]
    df = pd.DataFrame(rows)
    return df.assign(
        x0=rng.normal(size=len(df)),
        x1=rng.normal(size=len(df)),
        site=np.resize(["north", "south"], len(df)),
    )


def write_parts(df: pd.DataFrame, folder: Path, by: str = "subset") -> Path:
    """``df`` as one Parquet file per value of ``by`` in ``folder``."""
    folder.mkdir(parents=True)
    for value, part in df.groupby(by, sort=True):
        part.to_parquet(folder / f"{value}.parquet", index=False)
    return folder


def featureless_errors(df: pd.DataFrame) -> dict[tuple[str, int, str], float]:
    """Test error (%) of predicting each (subset, fold) block with the majority label of its
    train set, per train type, computed here from the rows; cells whose train set has a tied
    majority are left out."""
    out = {}
    for (subset, fold), block in df.groupby(["subset", "fold"]):
        others = df[df["fold"] != fold]
        trains = {
            "same": others[others["subset"] == subset],
            "other": others[others["subset"] != subset],
            "all": others,
        }
        for train_type, train in trains.items():
            counts = train["y"].value_counts()
            if len(counts) > 1 and counts.iloc[0] == counts.iloc[1]:
                continue
            out[subset, fold, train_type] = 100 * float((block["y"] != counts.index[0]).mean())
    return out


def check_featureless(res: xr.Dataset, df: pd.DataFrame) -> None:
    """Every featureless error of ``res`` equals `featureless_errors` of ``df``."""
    error = res["error"].sel(learner="featureless")
    expected = featureless_errors(df)
    assert len(expected) >= error.size - 2, "too many tied train sets to check"
    for (subset, fold, train_type), value in expected.items():
        got = float(error.sel(test_subset=subset, fold=fold, train_type=train_type))
        assert got == pytest.approx(value), (subset, fold, train_type)
    n_test = res["n_test"].sel(learner="featureless", train_type="same")
    sizes = df.groupby(["subset", "fold"]).size()
    assert {(s, k): int(n_test.sel(test_subset=s, fold=k)) for s, k in sizes.index} == dict(sizes)


def cells_meeting_row(da: xr.DataArray, subset: str, fold: int) -> xr.DataArray:
    """Which (test subset, fold, train type) cells fit or test on the row in (subset, fold)."""
    t, k, tt = da["test_subset"], da["fold"], da["train_type"]
    tested = (t == subset) & (k == fold)
    trained = (tt == "all") | ((tt == "same") & (t == subset)) | ((tt == "other") & (t != subset))
    return tested | ((k != fold) & trained)


def nan_row_cells(res: xr.Dataset) -> tuple[xr.DataArray, xr.DataArray]:
    """The error of every learner and the cells that must be NaN: logistic regression's that
    meet `BAD_ROW`; none of hist_gradient_boosting's, which takes missing values."""
    df = folded_frame()
    error = res["error"]
    meets = cells_meeting_row(error, df.loc[BAD_ROW, "subset"], df.loc[BAD_ROW, "fold"])
    return error, (error["learner"] == "logistic") & meets


def assert_mask(isnull: xr.DataArray, expected: xr.DataArray) -> None:
    """``isnull`` is True exactly where ``expected`` (broadcast to its dims) is."""
    want = expected.broadcast_like(isnull).transpose(*isnull.dims)
    wrong = np.argwhere(isnull.values != want.values)
    cells = [
        tuple(str(isnull[d].values[i]) for d, i in zip(isnull.dims, w, strict=True)) for w in wrong
    ]
    assert not cells, f"NaN differs from the expected cells at {cells[:10]}"


def one_class_cells(res: xr.Dataset) -> tuple[xr.DataArray, xr.DataArray]:
    """Logistic regression fails on subset B's rows alone (one class): in the cells "same" of
    B and "other" of A (the same 3 fits)."""
    error = res["error"]
    t, tt = error["test_subset"], error["train_type"]
    only_b = ((tt == "same") & (t == "B")) | ((tt == "other") & (t == "A"))
    return error, (error["learner"] == "logistic") & only_b


def one_and_text_one(df: pd.DataFrame, column: str) -> pd.DataFrame:
    """``df`` whose ``column`` holds 1 (int) for one value and '1' (str) for another."""
    first, second = sorted(df[column].unique())[:2]
    values = df[column].astype(object)
    values[df[column] == first] = 1
    values[df[column] == second] = "1"
    return df.assign(**{column: values})


def corrupt_middle(path: Path) -> None:
    """Overwrite the middle of a Parquet file (its data pages; the footer stays readable)."""
    data = bytearray(path.read_bytes())
    data[len(data) // 4 : len(data) // 2] = b"U" * (len(data) // 2 - len(data) // 4)
    path.write_bytes(bytes(data))


def hostile_results() -> xr.Dataset:
    """Results whose subset names hold Markdown and HTML."""
    df = toy_table(n=90, n_subsets=2, seed=4)
    names = {"s0": "<script>alert(1)</script>", "s1": "a|b *c*"}
    table = sd.load_table(df.assign(subset=df["subset"].map(names)), label="y", subset="subset")
    return sd.soak(
        table,
        ["featureless", "logistic"],
        n_folds=3,
        measures=["error"],
        options=sd.RunOptions(progress=False),
    )


def check_markdown_escaped(folder: Path) -> None:
    for name in ("pvalues.md", "summary.md"):
        text = (folder / name).read_text(encoding="utf-8")
        assert "<script>" not in text and "&lt;script&gt;" in text, text
        assert "a|b" not in text and r"a\|b" in text, text


def side_effect_module(folder: Path) -> Path:
    """A module in ``folder`` whose import writes the returned marker file."""
    marker = folder / "IMPORTED"
    (folder / f"{SIDE_EFFECT}.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n"
        "from sklearn.naive_bayes import GaussianNB\n\nclass NB(GaussianNB):\n    pass\n"
    )
    return marker


def absent(path: Path) -> Callable[[], None]:
    """A check that ``path`` does not exist."""

    def check() -> None:
        assert not path.exists(), f"{path} exists"

    return check


def digest(path: Path) -> dict[str, str]:
    """SHA-256 of every file under ``path`` (or of ``path``), by relative name."""
    if not path.exists():
        return {}
    if path.is_file():
        return {path.name: hashlib.sha256(path.read_bytes()).hexdigest()}
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "/"
        for p in sorted(path.rglob("*"))
    }


# --- shared inputs and each case's workspace ------------------------------------------------


class Shared:
    """Inputs shared by the cases of this module, each made on first use."""

    def __init__(self, root: Path, cluster: Callable[[], LocalCluster]):
        self.root, self._cluster = root, cluster
        self.data = root / "data"  # read by many cases: compared after every Python case
        self.folded = write_parts(folded_frame(), self.data / "folded")

    @cached_property
    def certs(self):
        return make_tls_files(self.root / "tls")

    @cached_property
    def scheduler(self) -> str:
        """Address of the session's LocalCluster of two single-threaded workers
        (tests/conftest.py), started on first use."""
        return self._cluster().scheduler_address

    @cached_property
    def checkpoint(self) -> Path:
        """A checkpoint of a featureless run on `toy`, 3 folds (Python)."""
        path = self.root / "api-ck"
        sd.soak(toy(), **ck_run(path))
        return path

    @cached_property
    def cli_checkpoint(self) -> tuple[Path, Path]:
        """A checkpoint and results of ``soak run`` on ``folded`` (in this process)."""
        ck, out = self.root / "cli-ck", self.root / "cli-first.zarr"
        argv = [*cli_run(self.folded, ck), "--scheduler", self.scheduler, "--out", out]
        assert cli.main(list(map(str, argv))) == 0
        return ck, out


def ck_run(path: Path) -> dict[str, Any]:
    """``soak`` arguments (after the table, `toy`) of a run checkpointed at ``path``."""
    options = sd.RunOptions(progress=False, checkpoint=path)
    return {"learners": "featureless", "n_folds": 3, "options": options}


def cli_run(data: Path, ck: Path) -> list:
    return ["run", data, *ROLES, "--learner", "featureless", "--checkpoint", ck]


class Ctx:
    """One case's workspace: a temporary directory, the shared inputs, the sources that must stay
    byte-identical, values the expected words name (``$name``), environment variables of a
    command-line case, and checks to run once the case is over."""

    def __init__(self, tmp: Path, shared: Shared, monkeypatch: Any = None):
        self.tmp, self.shared, self.monkeypatch = tmp, shared, monkeypatch
        self.vars: dict[str, str] = {}
        self.env: dict[str, str] = {}
        self._sources: dict[Path, dict[str, str]] = {}
        self._after: list[Callable[[], None]] = []

    def source(self, path: Path) -> Path:
        """Register ``path`` (file or directory) as a source: hashed now, compared at the end."""
        self._sources[Path(path)] = digest(Path(path))
        return Path(path)

    def copy(self, path: Path, name: str | None = None) -> Path:
        """A copy of ``path`` in the workspace, registered as a source."""
        to = self.tmp / (name or path.name)
        (shutil.copytree if path.is_dir() else shutil.copy)(path, to)
        return self.source(to)

    def let(self, **values: Any) -> None:
        self.vars.update({k: str(v) for k, v in values.items()})

    def fill(self, words: Sequence[str]) -> list[str]:
        return [Template(w).safe_substitute(self.vars) for w in words]

    def after(self, check: Callable[[], None]) -> None:
        self._after.append(check)

    def finish(self) -> None:
        for path, before in self._sources.items():
            assert digest(path) == before, f"source {path} changed"
        for check in self._after:
            check()


# --- expected outcomes ----------------------------------------------------------------------


@dataclass(frozen=True)
class Error:
    """A clear error: raised by soak_dask as ``kind`` (Python), or one ``soak: error:`` line
    and exit status 2 (CLI); naming every one of ``words``, at least one of ``fix`` (the way
    out), and none of ``absent``."""

    words: tuple[str, ...]
    kind: type[Exception] | tuple[type[Exception], ...] = ValueError
    fix: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()

    def check_message(self, ctx: Ctx, message: str) -> None:
        missing = [w for w in ctx.fill(self.words) if w not in message]
        assert not missing, f"message lacks {missing}: {message!r}"
        fix = ctx.fill(self.fix)
        assert not fix or any(w in message for w in fix), f"no fix of {fix}: {message!r}"
        present = [w for w in ctx.fill(self.absent) if w in message]
        assert not present, f"message names {present}: {message!r}"

    def check_api(self, ctx: Ctx, action: Callable[[Ctx], Any]) -> None:
        known = [w for w in self.words if "$" not in w]  # the others name what the case makes
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # warnings before the error are not the point
            with clear_error(self.kind, *known) as info:
                action(ctx)
        self.check_message(ctx, str(info.value))

    def check_cli(self, ctx: Ctx, proc: subprocess.CompletedProcess) -> None:
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2, proc.stderr
        assert len(lines) == 1 and lines[0].startswith("soak: error: "), proc.stderr
        assert "Traceback" not in proc.stderr
        self.check_message(ctx, lines[0])
        assert "out" not in ctx.vars or not Path(ctx.vars["out"]).exists(), "--out was written"


@dataclass(frozen=True)
class NanWarning:
    """The run completes; ``cells(result)`` gives a measure and a mask of where it must be NaN
    (somewhere, and nowhere else); exactly one warning names all of ``words`` (the fits)."""

    cells: Callable[[xr.Dataset], tuple[xr.DataArray, xr.DataArray]]
    words: tuple[str, ...]

    def check_cells(self, res: xr.Dataset, messages: list[str]) -> None:
        values, expected = self.cells(res)
        assert bool(expected.any()), "the case should give NaN cells"
        assert_mask(values.isnull(), expected)
        naming = [m for m in messages if all(w in m for w in self.words)]
        assert len(naming) == 1, messages

    def check_api(self, ctx: Ctx, action: Callable[[Ctx], Any]) -> None:
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            res = action(ctx)
        self.check_cells(res, [str(w.message) for w in record])

    def check_cli(self, ctx: Ctx, proc: subprocess.CompletedProcess) -> None:
        assert proc.returncode == 0, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert all(line.startswith("soak: warning: ") for line in lines), proc.stderr
        self.check_cells(sd.open_results(ctx.vars["out"]), lines)


@dataclass(frozen=True)
class Result:
    """A correct result: ``check(ctx, value)`` compares it with one computed independently
    (``value``: what the action returned, or the finished ``soak`` process)."""

    check: Callable[[Ctx, Any], None]

    def check_api(self, ctx: Ctx, action: Callable[[Ctx], Any]) -> None:
        self.check(ctx, action(ctx))

    def check_cli(self, ctx: Ctx, proc: subprocess.CompletedProcess) -> None:
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr and "soak: error" not in proc.stderr, proc.stderr
        self.check(ctx, proc)


Expect = Error | NanWarning | Result


# --- Python cases ---------------------------------------------------------------------------


def toy(**kwargs: Any) -> sd.Table:
    return sd.load_table(toy_table(n=90), **{"label": "y", "subset": "subset", **kwargs})


def run(table: sd.Table, learners: Any = "featureless", **kwargs: Any) -> xr.Dataset:
    """soak with 3 drawn folds, or a fold column's own (n_folds beside one is refused)."""
    drawn = {} if table.fold else {"n_folds": 3}
    options, rest = sd.RunOptions.among({"progress": False, **kwargs})
    return sd.soak(table, learners, **{**drawn, **rest}, options=options)


def folded(df: pd.DataFrame | None = None, **kwargs: Any) -> sd.Table:
    df = folded_frame() if df is None else df
    return sd.load_table(df, **{"label": "y", "subset": "subset", "fold": "fold", **kwargs})


def with_values(column: str, rows: list[int], value: Any, df: pd.DataFrame | None = None):
    df = folded_frame() if df is None else df
    df[column] = df[column].astype(object) if value is None else df[column]
    df.loc[rows, column] = value
    return df


def parquet_file(ctx: Ctx, df: pd.DataFrame, name: str = "t.parquet") -> Path:
    path = ctx.tmp / name
    df.to_parquet(path, index=False)
    ctx.let(file=path)
    return ctx.source(path)


def corrupt_parquet(ctx: Ctx) -> Path:
    """A Parquet file of 3000 random rows, damaged in its data pages."""
    path = ctx.tmp / "corrupt.parquet"
    toy_table(n=3000).to_parquet(path, index=False)
    corrupt_middle(path)
    ctx.let(file=path.name)
    return ctx.source(path)


def schema_parts(ctx: Ctx, change: str) -> Path:
    """Two files of `folded_frame` that differ: x1 as text, subset 1 vs '1', column order."""
    df = folded_frame()
    folder = ctx.tmp / "parts"
    folder.mkdir()
    a, b = df[df["subset"] == "A"], df[df["subset"] == "B"]
    if change == "x1 text":
        b = b.astype({"x1": str})
    elif change == "subset 1 and '1'":
        a, b = a.assign(subset=1), b.assign(subset="1")
    elif change == "order":
        b = b[list(reversed(b.columns))]
    a.to_parquet(folder / "a.parquet", index=False)
    b.to_parquet(folder / "b.parquet", index=False)
    return ctx.source(folder)


def dir_with_notes(ctx: Ctx) -> Path:
    folder = ctx.copy(ctx.shared.folded, "with-notes")
    (folder / "notes.txt").write_text("field notes, not Parquet")
    return ctx.source(folder)


def save_onto_input(ctx: Ctx) -> None:
    data = ctx.copy(ctx.shared.folded)
    ctx.let(data=data)
    sd.save_results(results(source=str(data)), data, overwrite=True)


def save_onto_other_data(ctx: Ctx) -> None:
    other = ctx.tmp / "notes"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    ctx.let(other=ctx.source(other))
    sd.save_results(results(), other, overwrite=True)


def save_twice(ctx: Ctx) -> None:
    sd.save_results(results(), ctx.tmp / "r.zarr")
    ctx.source(ctx.tmp / "r.zarr")
    sd.save_results(results(note="new"), ctx.tmp / "r.zarr")


def damaged_checkpoint(ctx: Ctx, damage: str) -> None:
    """A copy of the shared checkpoint with one file damaged, resumed."""
    ck = ctx.tmp / "ck"
    shutil.copytree(ctx.shared.checkpoint, ck)
    damage_checkpoint(ctx, ck, damage)
    sd.soak(toy(), **ck_run(ck))


def damage_checkpoint(ctx: Ctx, ck: Path, damage: str) -> None:
    target = (
        ck / "settings.json" if damage == "settings truncated" else sorted(ck.glob("task-*"))[0]
    )
    text = target.read_text()
    ctx.let(file=target, ck=ck)
    if damage == "forged record":
        task = json.loads(text)
        task["records"][0]["error"] = 0.0  # a better score, written by hand
        target.write_text(json.dumps(task))
        return
    target.write_bytes(
        {
            "truncated": text[: len(text) // 2].encode(),
            "empty": b"",
            "binary": bytes(range(256)),
            "wrong keys": json.dumps({"fit_id": 1, "message": "x"}).encode(),
            "settings truncated": text[:-10].encode(),
        }[damage]
    )


def changed_parameter(ctx: Ctx) -> None:
    def learner(c: float):
        return make_pipeline(
            StandardScaler(), LogisticRegression(C=c, class_weight="balanced", max_iter=500)
        )

    run(toy(), {"lr": learner(0.5)}, checkpoint=ctx.tmp / "ck")
    run(toy(), {"lr": learner(2.0)}, checkpoint=ctx.tmp / "ck")


def rewritten_parquet(ctx: Ctx) -> None:
    data = ctx.copy(ctx.shared.folded)
    run(sd.load_table(data, label="y", subset="subset"), checkpoint=ctx.tmp / "ck")
    part = pd.read_parquet(data / "B.parquet")
    part.assign(x0=part["x0"] + 1).to_parquet(data / "B.parquet", index=False)
    ctx.let(file=data / "B.parquet")
    ctx.source(data)  # rewritten by the case on purpose; the refused run must not touch it
    run(sd.load_table(data, label="y", subset="subset"), checkpoint=ctx.tmp / "ck")


def resumed_from_parquet(ctx: Ctx) -> tuple[xr.Dataset, xr.Dataset, dict, dict]:
    """Two runs of a Parquet table loaded twice, one checkpoint; the task files' times."""
    ck = ctx.tmp / "ck"
    load = partial(sd.load_table, ctx.shared.folded, label="y", subset="subset")
    first = run(load(), checkpoint=ck)
    before = {p.name: p.stat().st_mtime_ns for p in ck.glob("task-*.json")}
    second = run(load(), checkpoint=ck)
    return first, second, before, {p.name: p.stat().st_mtime_ns for p in ck.glob("task-*.json")}


def check_resumed(ctx: Ctx, value: tuple) -> None:
    first, second, before, after = value
    assert before and before == after  # every fit reused, none written again
    xr.testing.assert_identical(first.drop_vars(TIMINGS), second.drop_vars(TIMINGS))


def module_not_allowed(ctx: Ctx) -> None:
    marker = side_effect_module(ctx.tmp)
    ctx.monkeypatch.syspath_prepend(str(ctx.tmp))
    ctx.monkeypatch.delitem(sys.modules, SIDE_EFFECT, raising=False)
    ctx.after(lambda: not_imported(marker))
    conf = ctx.tmp / "run.toml"
    conf.write_text(f'learner = ["nb"]\n[learners.nb]\nestimator = "{SIDE_EFFECT}:NB"\n')
    merge_settings(load_run_file(conf), {"data": "d", "label": "y", "out": "o"}).learners()


def not_imported(marker: Path) -> None:
    assert not marker.exists() and SIDE_EFFECT not in sys.modules, f"{SIDE_EFFECT} was imported"


def run_file(ctx: Ctx, text: str) -> None:
    conf = ctx.tmp / "run.toml"
    conf.write_text(text)
    load_run_file(conf)


def tls_with_tcp(ctx: Ctx) -> None:
    certs = ctx.shared.certs
    security = make_security(str(certs.ca_file), str(certs.cert), str(certs.key))
    start = time.monotonic()
    ctx.after(lambda: quick(start))
    with connect("tcp://127.0.0.1:9", security=security):
        pass


def quick(start: float) -> None:
    """Refused at once, not after the connect timeout."""
    assert time.monotonic() - start < 10, "refused only after a wait"


def dashboard_ports(**kwargs: Any) -> tuple[str, dict[int, set[str]]]:
    """The dashboard link of a LocalCluster that `connect` starts, and where it listens."""
    with connect(n_workers=1, **kwargs) as client:
        port = client.scheduler_info()["services"]["dashboard"]
        return client.dashboard_link, listening_ips({port})


def check_loopback(ctx: Ctx, value: tuple[str, dict[int, set[str]]]) -> None:
    link, listening = value
    assert link.startswith("http://127.0.0.1:")
    assert list(listening.values()) == [{"127.0.0.1"}], listening


def report_of_hostile_names(ctx: Ctx) -> Path:
    sd.write_report(hostile_results(), ctx.tmp / "report")
    return ctx.tmp / "report"


def check_folds_of_seed(ctx: Ctx, res: xr.Dataset) -> None:
    table = sd.assign_folds(toy(), 3, 2**32 - 1)
    counts = sd.block_counts(table).groupby([table.subset, table.fold])["n"].sum()
    n_test = res["n_test"].sel(learner="featureless", train_type="same")
    assert res.attrs["seed"] == 2**32 - 1
    assert {(s, int(k)): int(n_test.sel(test_subset=s, fold=k)) for s, k in counts.index} == {
        (s, int(k)): int(n) for (s, k), n in counts.items()
    }


def same_results(ctx: Ctx, pair: tuple[xr.Dataset, xr.Dataset]) -> None:
    a, b = pair
    assert a["error"].notnull().all()
    xr.testing.assert_identical(a.drop_vars(TIMINGS), b.drop_vars(TIMINGS))


def single_row_blocks() -> pd.DataFrame:
    """`folded_frame` plus subset C: one row per fold, the first one "yes"."""
    c = pd.DataFrame(
        {"subset": "C", "fold": [1, 2, 3], "y": ["yes", "no", "no"], "x0": 0.0, "x1": 0.0}
    )
    return pd.concat([folded_frame(), c.assign(site="east")], ignore_index=True)


def check_single_class_block(ctx: Ctx, res: xr.Dataset) -> None:
    """Block ("B", 2) has only "no" rows: error 0 (featureless predicts "no") and AUC, which
    needs both classes, NaN there and only there (documented in docs/results.md)."""
    check_featureless(res, folded_frame())
    auc = res["auc"].sel(learner="featureless")
    assert_mask(auc.isnull(), (auc["test_subset"] == "B") & (auc["fold"] == 2))


def missing_role(role: str) -> Callable[[Ctx], Any]:
    def action(ctx: Ctx) -> Any:
        roles = {"label": "y", "subset": "subset", role: "no_such_column"}
        return sd.load_table(toy_table(n=30), **roles)

    return action


#: API cases that are slow: one starts worker processes (the same check on a cluster of threads
#: is fast); one makes a check that tests/run/test_checkpoint.py makes as well.
SLOW_API = {
    "local-cluster-dashboard-on-loopback",
    "checkpoint-changed-learner-parameter-shows-the-difference",
}


def api(case_id: str, action: Callable[[Ctx], Any], expect: Expect):
    marks = pytest.mark.slow if case_id in SLOW_API else ()
    return pytest.param(action, expect, id=case_id, marks=marks)


FIX_MOVE = ("move", "remove", "delete", "glob", "only Parquet")

API_CASES = [
    # columns and roles
    *[
        api(
            f"{role}-column-missing",
            missing_role(role),
            Error((f"{role} column 'no_such_column'", "available columns")),
        )
        for role in ("label", "subset", "group", "fold")
    ],
    api(
        "duplicate-column-names",
        lambda ctx: sd.load_table(
            toy_table(n=30).set_axis(["x0", "x0", "x2", "subset", "y"], axis=1), label="y"
        ),
        Error(("duplicate column names ['x0']", "rename")),
    ),
    api(
        "label-and-subset-same-column",
        lambda ctx: toy(subset="y"),
        Error(("column 'y'", "both the label and the subset", "name another column")),
    ),
    api(
        "feature-is-a-role-column",
        lambda ctx: toy(features=["x0", "subset"]),
        Error(("['subset']", "cannot also be features")),
    ),
    api(
        "unknown-feature-name",
        lambda ctx: toy(features=["x0", "nope"]),
        Error(("features", "'nope'", "available columns")),
    ),
    api(
        "unknown-exclude-name-close-to-a-column",
        lambda ctx: toy(exclude=["X0"]),
        Error(("exclude", "'X0'", "did you mean 'x0'")),
    ),
    api(
        "non-numeric-feature",
        lambda ctx: folded(features=["x0", "site"]),
        Error(("not numeric", "'site'", "encode them as numbers")),
    ),
    api(
        "features-empty-list",
        lambda ctx: toy(features=[]),
        Error(("features=[]",), fix=("leave features out",)),
    ),
    api(
        "learners-empty-list",
        lambda ctx: run(toy(), []),
        Error(("learners is empty",), fix=("give at least one",)),
    ),
    api(
        "empty-pandas-frame",
        lambda ctx: sd.load_table(toy_table(n=30).iloc[:0], label="y", subset="subset"),
        Error(("pandas DataFrame is empty",)),
    ),
    api(
        "zero-row-dask-frame",
        lambda ctx: run(
            sd.load_table(dd.from_pandas(toy_table(n=30).iloc[:0], npartitions=1), label="y")
        ),
        Error(("dask DataFrame", "has no rows")),
    ),
    api(
        "float-label-with-a-missing-value",
        lambda ctx: folded(
            with_values("y", [7], np.nan, folded_frame().assign(y=lambda d: 1.0 * (d.y == "yes")))
        ),
        Error(("label column 'y'", "1 missing values"), fix=("drop those rows",)),
    ),
    api(
        "text-label-with-missing-values",
        lambda ctx: run(folded(with_values("y", [3, 10], None))),
        Error(("column 'y'", "2 missing values"), fix=("drop those rows",)),
    ),
    api(
        "infinite-feature-values",
        lambda ctx: run(folded(with_values("x1", [BAD_ROW, 20], np.inf)), "logistic"),
        Error(("infinite", "['x1']"), fix=("replace or drop those rows",)),
    ),
    api(
        "missing-feature-value-scores-nan-where-met",
        lambda ctx: run(
            folded(with_values("x1", [BAD_ROW], np.nan)), ["logistic", "hist_gradient_boosting"]
        ),
        NanWarning(nan_row_cells, NAN_FITS),
    ),
    api(
        "one-class-train-set-scores-nan-where-fitted-on-it",
        lambda ctx: run(
            folded(with_values("y", list(range(30, 60)), "no")), ["logistic", "featureless"]
        ),
        NanWarning(one_class_cells, ("3 fits failed", "logistic fit")),
    ),
    api(
        "subset-1-and-text-1-pandas",
        lambda ctx: sd.load_table(
            one_and_text_one(toy_table(n=90), "subset"), label="y", subset="subset"
        ),
        Error(("subset column 'subset'", "1 (int)", "'1' (str)"), fix=("one type",)),
    ),
    api(
        "label-1-and-text-1-pandas",
        lambda ctx: sd.load_table(one_and_text_one(toy_table(n=90), "y"), label="y"),
        Error(("label column 'y'", "1 (int)", "'1' (str)"), fix=("one type",)),
    ),
    api(
        "subset-1-and-text-1-dask-object-column",
        lambda ctx: run(
            sd.load_table(
                object_frame(one_and_text_one(toy_table(n=90), "subset")),
                label="y",
                subset="subset",
            )
        ),
        Error(("column 'subset'", "1 (int)", "'1' (str)"), fix=("one type",)),
    ),
    # seeds and folds
    *[
        api(
            case_id,
            lambda ctx, seed=seed: run(toy(), seed=seed),
            Error((f"seed={seed!r}",), fix=("integer from 0 to 2**32 - 1",)),
        )
        for case_id, seed in SEEDS.items()
    ],
    api(
        "seed-2**32-1-accepted",
        lambda ctx: run(toy(), seed=2**32 - 1),
        Result(check_folds_of_seed),
    ),
    api(
        "seed-numpy-int64-same-as-int",
        lambda ctx: (
            run(toy(), "decision_tree", seed=np.int64(7)),
            run(toy(), "decision_tree", seed=7),
        ),
        Result(same_results),
    ),
    *[
        api(
            case_id,
            lambda ctx, n=n: run(toy(), n_folds=n),
            Error((f"n_folds={n!r}",), fix=(fix,)),
        )
        for case_id, (n, fix) in N_FOLDS.items()
    ],
    api(
        "info-n_folds-0",
        lambda ctx: describe_table(toy(), n_folds=0),
        Error(("n_folds=0",), fix=("at least 2",)),
    ),
    api(
        "train_types-typo",
        lambda ctx: run(toy(), train_types="some,all"),
        Error(("['some']", "'same'"), fix=("choose from",)),
    ),
    api(
        "train_types-empty",
        lambda ctx: run(toy(), train_types=[]),
        Error(("train_types is empty",), fix=("choose one or more",)),
    ),
    api(
        "measures-typo",
        lambda ctx: run(toy(), measures=["errror"]),
        Error(("['errror']", "'error'"), fix=("choose from",)),
    ),
    api(
        "learner-typo",
        lambda ctx: run(toy(), {"m": "svm_magic"}),
        Error(("'svm_magic'", "featureless"), fix=("built-in learners",)),
    ),
    api(
        "fold-column-of-strings",
        lambda ctx: folded(folded_frame().astype({"fold": str})),
        Error(("fold column 'fold'", "dtype"), fix=("astype(int)",)),
    ),
    api(
        "fold-column-with-0",
        lambda ctx: run(folded(folded_frame().assign(fold=lambda d: d["fold"] - 1))),
        Error(("fold column 'fold'", "['0']"), fix=("integers 1..K",)),
    ),
    api(
        "fold-column-with-a-gap",
        lambda ctx: run(folded(folded_frame().replace({"fold": {3: 5}}))),
        Error(("fold column 'fold'", "no rows in folds [3, 4]"), fix=("renumber them",)),
    ),
    api(
        "group-spanning-two-subsets",
        lambda ctx: run(spanning_group()),
        Error(("'group'", "'subset'", "'s0-no-0'")),
    ),
    api(
        "more-folds-than-groups",
        lambda ctx: run(few_groups(), n_folds=5),
        Error(("'group'", "n_folds=5", "s0")),
    ),
    api(
        "subset-smaller-than-n_folds",
        lambda ctx: run(
            sd.load_table(
                pd.concat(
                    [toy_table(n=60, n_subsets=1), toy_table(n=2, n_subsets=1).assign(subset="t")]
                ),
                label="y",
                subset="subset",
            )
        ),
        Error(("empty", "'t'", "n_folds=3")),
    ),
    api(
        "featureless-error-is-minority-share",
        lambda ctx: run(folded()),
        Result(lambda ctx, res: check_featureless(res, folded_frame())),
    ),
    api(
        "single-row-test-blocks",
        lambda ctx: run(folded(single_row_blocks())),
        Result(lambda ctx, res: check_featureless(res, single_row_blocks())),
    ),
    api(
        "single-class-test-block-auc-nan",
        lambda ctx: run(folded(), measures=["error", "auc"]),
        Result(check_single_class_block),
    ),
    # files
    api(
        "parquet-zero-rows",
        lambda ctx: sd.load_table(parquet_file(ctx, folded_frame().iloc[:0]), label="y"),
        Error(("$file", "has no rows")),
    ),
    api(
        "parquet-empty-file",
        lambda ctx: sd.load_table(empty_file(ctx), label="y"),
        Error(("$file", "empty file")),
    ),
    api(
        "parquet-corrupt-in-the-middle",
        lambda ctx: run(sd.load_table(corrupt_parquet(ctx), label="y", subset="subset")),
        Error(("$file",), kind=(OSError, ValueError), fix=("corrupt or truncated",)),
    ),
    api(
        "parquet-files-differ-in-a-type",
        lambda ctx: sd.load_table(schema_parts(ctx, "x1 text"), label="y"),
        Error(("different schemas", "'x1'", "a.parquet", "b.parquet"), fix=("make their",)),
    ),
    api(
        "parquet-subset-1-in-one-file-text-1-in-another",
        lambda ctx: sd.load_table(
            schema_parts(ctx, "subset 1 and '1'"), label="y", subset="subset"
        ),
        Error(("different schemas", "'subset'", "a.parquet", "b.parquet"), fix=("make their",)),
    ),
    api(
        "parquet-files-with-columns-in-another-order",
        lambda ctx: run(
            sd.load_table(schema_parts(ctx, "order"), label="y", subset="subset", fold="fold")
        ),
        Result(lambda ctx, res: check_featureless(res, folded_frame())),
    ),
    api(
        "parquet-dir-with-a-non-parquet-file",
        lambda ctx: sd.load_table(dir_with_notes(ctx), label="y"),
        Error(("notes.txt",), fix=FIX_MOVE),
    ),
    api(
        "csv-given-as-parquet",
        lambda ctx: sd.load_table(csv_file(ctx), label="y"),
        Error(("$file", "cannot read Parquet")),
    ),
    api(
        "glob-matching-nothing",
        lambda ctx: sd.load_table(str(ctx.shared.folded / "nothing-*.parquet"), label="y"),
        Error(("nothing-*.parquet", "matches no file"), kind=FileNotFoundError),
    ),
    api(
        "missing-path",
        lambda ctx: sd.load_table(ctx.tmp / "absent", label="y"),
        Error(("absent", "no file or directory"), kind=FileNotFoundError),
    ),
    # results stores
    api(
        "save_results-overwrite-onto-the-input-dir",
        save_onto_input,
        Error(("$data is the input table",), fix=("write the results outside it",)),
    ),
    api(
        "save_results-overwrite-onto-other-data",
        save_onto_other_data,
        Error(
            ("$other holds data that is not a soak_dask results store",),
            kind=FileExistsError,
            fix=("choose another path",),
        ),
    ),
    api(
        "save_results-existing-store-without-overwrite",
        save_twice,
        Error(("r.zarr exists",), kind=FileExistsError, fix=("pass overwrite=True",)),
    ),
    api(
        "save_results-read-only-dir",
        lambda ctx: sd.save_results(results(), read_only_dir(ctx.tmp) / "r.zarr"),
        Error(("cannot write", "r.zarr"), kind=PermissionError, fix=("choose another path",)),
    ),
    api(
        "open_results-on-a-parquet-dir",
        lambda ctx: sd.open_results(ctx.shared.folded),
        Error(("is not a soak results store",), fix=("give the path written by",)),
    ),
    api(
        "open_results-missing-path",
        lambda ctx: sd.open_results(ctx.tmp / "absent.zarr"),
        Error(("no results store at", "absent.zarr"), kind=FileNotFoundError),
    ),
    # checkpoints
    *[
        api(
            f"checkpoint-{damage.replace(' ', '-')}",
            lambda ctx, damage=damage: damaged_checkpoint(ctx, damage),
            Error(("checkpoint file $file",), fix=("delete",)),
        )
        for damage in (
            "truncated",
            "empty",
            "binary",
            "wrong keys",
            "settings truncated",
            "forged record",
        )
    ],
    api(
        "checkpoint-changed-learner-parameter-shows-the-difference",
        changed_parameter,
        Error(("other settings", "learners.lr", "C=0.5", "C=2.0"), fix=("delete it",)),
    ),
    api(
        "checkpoint-of-a-rewritten-parquet-file",
        rewritten_parquet,
        Error(("other settings (data.parquet.$file: ",), fix=("delete it to start over",)),
    ),
    api(
        "checkpoint-parquet-loaded-again-resumes",
        resumed_from_parquet,
        Result(check_resumed),
    ),
    # cluster, run files, report
    api(
        "tls-certificates-with-a-tcp-scheduler",
        tls_with_tcp,
        Error(("tcp://127.0.0.1:9", "plain TCP"), fix=("tls://", "drop the certificates")),
    ),
    api(
        "local-cluster-dashboard-on-loopback", lambda ctx: dashboard_ports(), Result(check_loopback)
    ),
    api(
        "local-cluster-of-threads-starts-on-loopback",
        lambda ctx: dashboard_ports(processes=False),
        Result(check_loopback),
    ),
    api(
        "run-file-module-not-allowed",
        module_not_allowed,
        Error((f"module '{SIDE_EFFECT}' is not allowed",), fix=("allow_modules",)),
    ),
    api(
        "run-file-unknown-key",
        lambda ctx: run_file(ctx, "fold = 3\n"),
        Error(("unknown key 'fold'",), fix=("fold_column",)),
    ),
    api(
        "run-file-wrong-type",
        lambda ctx: run_file(ctx, 'folds = "ten"\n'),
        Error(("folds = 'ten'",), fix=("expected int",)),
    ),
    api(
        "run-file-not-toml",
        lambda ctx: run_file(ctx, "folds = \n"),
        Error(
            ("run.toml", "is not valid TOML"),
        ),
    ),
    api(
        "report-markdown-escapes-names",
        report_of_hostile_names,
        Result(lambda ctx, folder: check_markdown_escaped(folder)),
    ),
]


def object_frame(df: pd.DataFrame) -> dd.DataFrame:
    """A Dask frame keeping object columns as objects (not Arrow strings)."""
    with dask.config.set({"dataframe.convert-string": False}):
        return dd.from_pandas(df, npartitions=3)


def spanning_group() -> sd.Table:
    """Groups nested in subset × label, but group 's0-no-0' also holds a row of s1."""
    df = toy_table(n=240, n_subsets=2, n_groups=4)
    df["group"] = df["group"].astype(object)
    row = df.index[(df["subset"] == "s1") & (df["y"] == "no")][0]
    df.loc[row, "group"] = "s0-no-0"
    return sd.load_table(df, label="y", subset="subset", group="group")


def few_groups() -> sd.Table:
    """Two subsets of at most 2 labels × 2 groups each."""
    df = toy_table(n=240, n_subsets=2, n_groups=2)
    return sd.load_table(df, label="y", subset="subset", group="group")


def empty_file(ctx: Ctx) -> Path:
    path = ctx.tmp / "empty.parquet"
    path.touch()
    ctx.let(file=path)
    return ctx.source(path)


def csv_file(ctx: Ctx) -> Path:
    path = ctx.tmp / "table.parquet"  # a CSV file named like Parquet
    folded_frame().to_csv(path, index=False)
    ctx.let(file=path)
    return ctx.source(path)


@pytest.fixture(scope="module")
def shared(tmp_path_factory, request):
    return Shared(tmp_path_factory.mktemp("battery"), partial(request.getfixturevalue, "cluster"))


@pytest.mark.parametrize(("action", "expect"), API_CASES)
def test_api(action, expect, shared, tmp_path, monkeypatch):
    ctx = Ctx(tmp_path, shared, monkeypatch)
    ctx.source(shared.data)
    expect.check_api(ctx, action)
    ctx.finish()


# --- command-line cases ---------------------------------------------------------------------


@dataclass(frozen=True)
class Cli:
    """A ``soak`` command: ``build(ctx)`` makes its inputs and returns its arguments; with
    ``cluster``, ``--scheduler`` of the shared LocalCluster is added."""

    build: Callable[[Ctx], list]
    expect: Expect
    cluster: bool = False


#: The command-line cases that ``make test-fast`` skips: a new process, or a run of a second
#: or more (the others are refusals or runs of a fraction of one, in this process).
SLOW_CLI = {
    "run-featureless-error-is-minority-share-files-in-two-column-orders",
    "run-resumes",
    "report-markdown-escapes-names",
    "run-missing-feature-value-scores-nan-where-met",
    "report-onto-other-data-is-refused",
    "run-checkpoint-of-a-rewritten-file",
}


def cli_case(case_id: str, build: Callable[[Ctx], list], expect: Expect, cluster: bool = False):
    marks = pytest.mark.slow if case_id in SLOW_CLI else ()
    return pytest.param(Cli(build, expect, cluster), id=case_id, marks=marks)


def out(ctx: Ctx, name: str = "r.zarr") -> Path:
    """The case's ``--out`` (``$out``), which a refused run must not create."""
    path = ctx.tmp / name
    ctx.let(out=path)
    return path


def run_argv(ctx: Ctx, data: Path | None = None, *flags: Any) -> list:
    """``soak run`` of ``data`` (default: the shared `folded` table) with its roles."""
    data = ctx.source(ctx.shared.folded if data is None else data)
    return ["run", data, *ROLES, *flags, "--out", out(ctx)]


def parts_of(ctx: Ctx, df: pd.DataFrame) -> Path:
    """``df`` as one Parquet file per subset, a source of the case."""
    return ctx.source(write_parts(df, ctx.tmp / "data"))


def out_is_input(ctx: Ctx) -> list:
    data = ctx.copy(ctx.shared.folded)
    ctx.let(data=data)
    return ["run", data, *ROLES, "--out", data, "--overwrite"]


def out_exists(ctx: Ctx) -> list:
    store = ctx.tmp / "r.zarr"
    store.mkdir()
    (store / "notes.txt").write_text("mine")
    ctx.source(store)
    return ["run", ctx.source(ctx.shared.folded), *ROLES, "--out", store]


def seed_before_connecting(ctx: Ctx) -> list:
    """A bad seed with a scheduler that nothing answers: refused before any connection (a
    connection attempt would fail after the connect timeout, shortened here to 3 s)."""
    ctx.env["DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT"] = "3s"
    return run_argv(ctx, None, "--seed", "-1", "--scheduler", "tcp://127.0.0.1:9")


def read_only_out(ctx: Ctx) -> list:
    """``--out`` in a directory that cannot be written, the checkpoint elsewhere: refused before
    any fit (the checkpoint is not even made)."""
    ck = ctx.tmp / "ck"
    ctx.after(absent(ck))
    return [*run_argv(ctx, None, "--checkpoint", ck)[:-1], read_only_dir(ctx.tmp) / "r.zarr"]


def module_not_allowed_argv(ctx: Ctx) -> list:
    marker = side_effect_module(ctx.tmp)
    ctx.env["PYTHONPATH"] = str(ctx.tmp)  # importable: only the allow-list keeps it out
    ctx.after(absent(marker))  # written when the module is imported
    conf = ctx.tmp / "run.toml"
    conf.write_text(f'learner = ["nb"]\n[learners.nb]\nestimator = "{SIDE_EFFECT}:NB"\n')
    return run_argv(ctx, None, "--config", ctx.source(conf))


def tls_with_tcp_argv(ctx: Ctx) -> list:
    certs = ctx.shared.certs
    files = [ctx.source(p) for p in (certs.ca_file, certs.cert, certs.key)]
    tls = ["--tls-ca-file", files[0], "--tls-cert", files[1], "--tls-key", files[2]]
    return run_argv(ctx, None, "--scheduler", "tcp://127.0.0.1:9", *tls)


def report_argv(ctx: Ctx, store: Path) -> list:
    return ["report", ctx.source(store), "--out", out(ctx, "report")]


def report_onto_other_data(ctx: Ctx) -> list:
    store = ctx.tmp / "r.zarr"
    sd.save_results(results(), store)
    other = ctx.tmp / "notes"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    return ["report", ctx.source(store), "--out", ctx.source(other)]


def hostile_report(ctx: Ctx) -> list:
    store = sd.save_results(hostile_results(), ctx.tmp / "hostile.zarr")
    return report_argv(ctx, store)


def check_cli_featureless(ctx: Ctx, proc: subprocess.CompletedProcess) -> None:
    assert f"Results: {ctx.vars['out']}" in proc.stdout
    check_featureless(sd.open_results(ctx.vars["out"]), folded_frame())


def resumed_argv(ctx: Ctx) -> list:
    """The shared CLI checkpoint's run, again (its progress shown)."""
    ck = ctx.tmp / "ck"
    shutil.copytree(ctx.shared.cli_checkpoint[0], ck)
    return [*cli_run(ctx.source(ctx.shared.folded), ck), "--out", out(ctx)]


def check_resumed_cli(ctx: Ctx, proc: subprocess.CompletedProcess) -> None:
    assert "SOAK: resuming, 9 of 9 fits already done" in proc.stdout, proc.stdout
    first = sd.open_results(ctx.shared.cli_checkpoint[1]).drop_vars(TIMINGS)
    xr.testing.assert_identical(sd.open_results(ctx.vars["out"]).drop_vars(TIMINGS), first)


def rewritten_file_argv(ctx: Ctx) -> list:
    """A run checkpointed (in this process), then a file of its table rewritten."""
    data, ck = ctx.copy(ctx.shared.folded), ctx.tmp / "ck"
    first = [*cli_run(data, ck), "--scheduler", ctx.shared.scheduler, "--out", ctx.tmp / "a.zarr"]
    assert cli.main(list(map(str, first))) == 0
    part = pd.read_parquet(data / "B.parquet")
    part.assign(x0=part["x0"] + 1).to_parquet(data / "B.parquet", index=False)
    ctx.let(file=data / "B.parquet")
    ctx.source(data)  # as rewritten: the refused run must leave it so
    return [*cli_run(data, ck), "--no-progress", "--out", out(ctx)]


def damaged_cli_checkpoint(ctx: Ctx, damage: str) -> list:
    ck = ctx.tmp / "ck"
    shutil.copytree(ctx.shared.cli_checkpoint[0], ck)
    damage_checkpoint(ctx, ck, damage)
    return [*cli_run(ctx.source(ctx.shared.folded), ck), "--no-progress", "--out", out(ctx)]


CLI_CASES = [
    # before any cluster
    cli_case(
        "run-out-is-the-input-dir-with-overwrite",
        out_is_input,
        Error(("$data is the input table",), fix=("write the results outside it",)),
    ),
    cli_case(
        "run-out-exists-without-overwrite",
        out_exists,
        Error(("r.zarr exists",), fix=("pass --overwrite",)),
    ),
    cli_case(
        "run-out-read-only-checkpoint-elsewhere",
        read_only_out,
        Error(("cannot write", "r.zarr"), fix=("choose another path",)),
    ),
    cli_case(
        "run-seed-float-1.5",
        lambda ctx: run_argv(ctx, None, "--seed", "1.5"),
        Error(("argument --seed", "invalid int value: '1.5'"), fix=("--help",)),
    ),
    cli_case(
        "run-seed-negative-refused-before-connecting",
        seed_before_connecting,
        Error(("seed=-1",), fix=("integer from 0 to 2**32 - 1",)),
    ),
    cli_case(
        "run-features-empty",
        lambda ctx: run_argv(ctx, None, "--features", ""),
        Error(("argument --features", "'' names no column"), fix=("leave the flag out",)),
    ),
    cli_case(
        "run-learner-empty",
        lambda ctx: run_argv(ctx, None, "--learner", ""),
        Error(("argument --learner", "'' names no learner"), fix=("name at least one",)),
    ),
    cli_case(
        "run-file-module-not-allowed",
        module_not_allowed_argv,
        Error((f"module '{SIDE_EFFECT}' is not allowed",), fix=("--allow-modules",)),
    ),
    cli_case(
        "run-tls-certificates-with-a-tcp-scheduler",
        tls_with_tcp_argv,
        Error(("tcp://127.0.0.1:9", "plain TCP"), fix=("drop the certificates",)),
    ),
    cli_case(
        "info-folds-0",
        lambda ctx: ["info", ctx.source(ctx.shared.folded), "--label", "y", "--folds", "0"],
        Error(("--folds", "0", "at least 2")),
    ),
    cli_case(
        "report-on-a-parquet-dir",
        lambda ctx: report_argv(ctx, ctx.shared.folded),
        Error(("is not a soak results store",), fix=("give the path written by",)),
    ),
    cli_case(
        "report-on-a-missing-path",
        lambda ctx: ["report", ctx.tmp / "absent.zarr", "--out", out(ctx, "report")],
        Error(("absent.zarr", "does not exist"), fix=("soak run",)),
    ),
    cli_case(
        "report-onto-other-data-is-refused",
        report_onto_other_data,
        Error(
            ("notes.txt", "soak_dask did not write"),
            fix=("choose another directory",),
            absent=("overwrite=True",),
        ),
    ),
    cli_case(
        "report-markdown-escapes-names",
        hostile_report,
        Result(lambda ctx, proc: check_markdown_escaped(Path(ctx.vars["out"]))),
    ),
    # on the shared cluster: refused once the table is read
    cli_case(
        "run-subset-1-in-one-file-text-1-in-another",
        lambda ctx: run_argv(ctx, schema_parts(ctx, "subset 1 and '1'")),
        Error(("different schemas", "'subset'", "a.parquet", "b.parquet"), fix=("make their",)),
        cluster=True,
    ),
    cli_case(
        "run-label-is-also-the-subset",
        lambda ctx: [
            "run",
            ctx.source(ctx.shared.folded),
            "--label",
            "y",
            "--subset",
            "y",
            "--out",
            out(ctx),
        ],
        Error(("column 'y'", "both the label and the subset"), fix=("name another column",)),
        cluster=True,
    ),
    cli_case(
        "run-zero-row-parquet",
        lambda ctx: run_argv(ctx, parquet_file(ctx, folded_frame().iloc[:0])),
        Error(("$file", "has no rows")),
        cluster=True,
    ),
    cli_case(
        "run-fold-column-of-strings",
        lambda ctx: run_argv(ctx, parquet_file(ctx, folded_frame().astype({"fold": str}))),
        Error(("fold column 'fold'", "dtype"), fix=("astype(int)",)),
        cluster=True,
    ),
    cli_case(
        "run-csv-given-as-parquet",
        lambda ctx: run_argv(ctx, csv_file(ctx)),
        Error(("$file", "cannot read Parquet")),
        cluster=True,
    ),
    cli_case(
        "run-dir-with-a-non-parquet-file",
        lambda ctx: run_argv(ctx, dir_with_notes(ctx)),
        Error(("notes.txt",), fix=FIX_MOVE),
        cluster=True,
    ),
    # on the shared cluster: runs
    cli_case(
        "run-featureless-error-is-minority-share-files-in-two-column-orders",
        lambda ctx: run_argv(
            ctx, schema_parts(ctx, "order"), "--learner", "featureless", "--no-progress"
        ),
        Result(check_cli_featureless),
        cluster=True,
    ),
    cli_case(
        "run-missing-feature-value-scores-nan-where-met",
        lambda ctx: run_argv(
            ctx,
            parts_of(ctx, with_values("x1", [BAD_ROW], np.nan)),
            "--learner",
            "logistic,hist_gradient_boosting",
            "--no-progress",
        ),
        NanWarning(nan_row_cells, NAN_FITS),
        cluster=True,
    ),
    cli_case(
        "run-infinite-feature-values",
        lambda ctx: run_argv(
            ctx,
            parts_of(ctx, with_values("x1", [BAD_ROW, 20], np.inf)),
            "--learner",
            "logistic",
            "--no-progress",
        ),
        Error(("infinite", "['x1']"), fix=("replace or drop those rows",)),
        cluster=True,
    ),
    cli_case(
        "run-corrupt-parquet-in-the-middle",
        lambda ctx: [
            "run",
            corrupt_parquet(ctx),
            "--label",
            "y",
            "--subset",
            "subset",
            "--folds",
            "3",
            "--learner",
            "featureless",
            "--no-progress",
            "--out",
            out(ctx),
        ],
        Error(("$file",), fix=("corrupt or truncated",)),
        cluster=True,
    ),
    cli_case(
        "run-resumes",
        resumed_argv,
        Result(check_resumed_cli),
        cluster=True,
    ),
    cli_case(
        "run-checkpoint-of-a-rewritten-file",
        rewritten_file_argv,
        Error(("other settings (data.parquet.$file: ",), fix=("delete it to start over",)),
        cluster=True,
    ),
    *[
        cli_case(
            f"run-checkpoint-{damage.replace(' ', '-')}",
            lambda ctx, damage=damage: damaged_cli_checkpoint(ctx, damage),
            Error(("checkpoint file $file",), fix=("delete",)),
            cluster=True,
        )
        for damage in ("truncated", "forged record")
    ],
]


def soak_in_process(argv: list, ctx: Ctx) -> subprocess.CompletedProcess:
    """``cli.main(argv)`` in this process, as the installed script would run it in the case's
    directory: its output captured, its environment's Dask settings and import path applied,
    and warnings shown as in a new process (each once). A process of its own costs seconds of
    imports a case; the one-line guarantees of a real process are tests/app/test_cli.py's, a
    resume in a new process after a kill tests/app/test_resume_cli.py's."""
    stdout, stderr = io.StringIO(), io.StringIO()
    env = dict(ctx.env)
    with ExitStack() as stack:
        stack.enter_context(chdir(ctx.tmp))
        stack.enter_context(dask.config.set(dask.config.collect_env(env)))
        if "PYTHONPATH" in env:
            ctx.monkeypatch.syspath_prepend(env.pop("PYTHONPATH"))
        stack.enter_context(warnings.catch_warnings())
        warnings.resetwarnings()
        warnings.simplefilter("default")
        stack.enter_context(redirect_stdout(stdout))
        stack.enter_context(redirect_stderr(stderr))
        code = cli.main(list(map(str, argv)))
    return subprocess.CompletedProcess(argv, code, stdout.getvalue(), stderr.getvalue())


@pytest.mark.parametrize("case", CLI_CASES)
def test_cli(case, shared, tmp_path, monkeypatch):
    ctx = Ctx(tmp_path, shared, monkeypatch)
    argv = case.build(ctx)
    argv += ["--scheduler", shared.scheduler] if case.cluster else []
    proc = soak_in_process(argv, ctx)
    case.expect.check_cli(ctx, proc)
    ctx.finish()
