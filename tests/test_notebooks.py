"""Execute the notebooks top to bottom in this interpreter's kernel and check what they claim.

Each notebook runs as a user would run it (``Run all``, working directory = ``notebooks/``),
with one cell appended that asserts the statements its Markdown makes about the results, so
the prose cannot drift from the numbers. Each notebook takes about a minute on two cores.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell

from .conftest import shared_file

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
KERNEL = "python3"
CELL_TIMEOUT = 300  # seconds per cell: generous for a loaded 2-core machine
# jupyter_client runs a kernel whose argv starts with one of these as sys.executable.
_SELF_NAMES = {"python", f"python{sys.version_info[0]}", "python{}.{}".format(*sys.version_info)}

# Appended to every notebook: the kernel must be this interpreter (the venv), not another.
SAME_PYTHON = f"import sys\nassert sys.prefix == {sys.prefix!r}, sys.prefix\n"

QUICKSTART_CLAIMS = """
p = res.soak.pvalues("error").set_index(["learner", "test_subset", "compare"])
base, logit = p.loc["featureless"], p.loc["logistic"]
# featureless: about 12 % everywhere, identical for every train type, so p is undefined
assert base["same_mean"].between(10, 14).all(), base
assert (base["mean_diff"] == 0).all() and base["p_paired"].isna().all(), base
assert base["reason"].str.contains("identical").all()
# logistic beats the baseline by far
assert (logit["same_mean"] < base["same_mean"] / 2).all(), logit
# NW and S: other clearly worse (a few points, p < 0.01); NE: not significant
for region in ["NW", "S"]:
    row = logit.loc[(region, "other")]
    assert 1 < row["mean_diff"] < 10 and row["p_paired"] < 0.01, row
assert logit.loc[("NE", "other"), "p_paired"] > 0.05
# all is closer to same than other is, for every region
diff = logit["mean_diff"].unstack("compare")
assert (diff["all"] < diff["other"]).all(), diff
assert len(fig.axes) == 6  # 2 learners x 3 test regions
assert (again["error"] == res["error"]).all()
"""

AZTREES_CLAIMS = """
assert REAL, "the real aztrees table was expected (the test checked it exists)"
assert pv["measure"].eq("error").all()
lg = pv[pv["learner"] == "logistic"].set_index(["data", "test_subset", "compare"])
for data in ["region3", "region4"]:
    ne = lg.loc[(data, "NE", "other")]
    assert 15 < ne["mean_diff"] < 30 and ne["p_paired"] < 0.01, ne
    assert lg.loc[(data, "NE", "all"), "p_paired"] > 0.05
    assert -2 < lg.loc[(data, "NW", "other"), "mean_diff"] < -0.5
assert lg.loc[("region3", "NW", "other"), "p_paired"] < 0.05
assert 0.05 < lg.loc[("region4", "NW", "other"), "p_paired"] < 0.1
for compare in ["other", "all"]:
    s = lg.loc[("region3", "S", compare)]
    assert s["mean_diff"] > 10 and 0.05 < s["p_paired"] < 0.1, s
    assert lg.loc[("region4", "SE", compare), "p_paired"] < 0.01
assert lg.loc[("region4", "SW", "other"), "p_paired"] > 0.05
fl = pv[(pv["learner"] == "featureless") & (pv["test_subset"].isin(["NE", "NW", "S", "SE"]))]
assert fl["p_paired"].isna().all() and (fl["mean_diff"] == 0).all(), fl
se = results["region4"].sel(learner="logistic", test_subset="SE")
small = se["n_test"].sel(train_type="same") < 10
assert int(small.sum()) >= 5 and int(se["n_test"].max()) > 1000, se["n_test"].values
assert float(se["error"].sel(train_type="same").max()) < 1
assert float(se["error"].sel(train_type=["other", "all"]).where(small).min()) >= 50
paper = pd.read_csv(PAPER).query("data == 'aztrees3'").set_index(["test_subset", "compare"])
ours = lg.loc["region3"]
assert (paper["same_mean"] < 2).all() and (paper["same_mean"] < ours["same_mean"]).all()
assert (paper["p_paired"] < ours["p_paired"]).all()
"""

CLUSTER_CLAIMS = """
assert scheduler == os.environ["SOAK_SCHEDULER"]
assert res.attrs["n_fits"] == 140 and res.attrs["n_distinct_train_sets"] == 70
assert res["error"].notnull().all()
"""


def _runs_this_python(manager: KernelSpecManager) -> bool:
    try:
        argv = manager.get_kernel_spec(KERNEL).argv
    except NoSuchKernel:
        return False
    return argv[0] in _SELF_NAMES or os.path.abspath(argv[0]) == os.path.abspath(sys.executable)


@pytest.fixture(scope="module")
def kernel() -> str:
    """The ``python3`` kernel, made to run this interpreter (installed into sys.prefix if not)."""
    if not _runs_this_python(KernelSpecManager()):
        from ipykernel.kernelspec import install

        install(prefix=sys.prefix, kernel_name=KERNEL)
    manager = KernelSpecManager()
    if not _runs_this_python(manager):
        spec = manager.get_kernel_spec(KERNEL)
        pytest.fail(
            f"kernel {KERNEL!r} runs {spec.argv[0]} (from {spec.resource_dir}), not the venv"
        )
    return KERNEL


def execute(name: str, kernel: str, checks: str) -> nbformat.NotebookNode:
    """Run notebook ``name`` with ``checks`` appended as a last cell; return it with outputs."""
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    nb.cells.append(new_code_cell(SAME_PYTHON + checks))
    client = NotebookClient(
        nb,
        kernel_name=kernel,
        timeout=CELL_TIMEOUT,
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    client.execute()
    return nb


def stream_text(nb: nbformat.NotebookNode) -> str:
    return "".join(
        out.get("text", "")
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.outputs
        if out.output_type == "stream"
    )


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Make the kernel (and its Dask workers) write temporary files under tmp_path."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    return tmp_path


@pytest.mark.parametrize(
    "name", ["01_quickstart.ipynb", "02_aztrees.ipynb", "03_existing_cluster.ipynb"]
)
def test_notebook_is_stored_clean(name: str) -> None:
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(not c.outputs and c.execution_count is None for c in code)
    assert nb.metadata["kernelspec"]["name"] == KERNEL


def test_quickstart(kernel: str, private_tmp: Path) -> None:
    nb = execute("01_quickstart.ipynb", kernel, QUICKSTART_CLAIMS)
    assert "90 splits, 70 distinct fits" in stream_text(nb)
    figures = [
        o
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
        if "image/png" in o.get("data", {})
    ]
    assert figures, "the figure cell displayed no image"


def test_aztrees_on_the_real_table(kernel: str, private_tmp: Path, monkeypatch) -> None:
    shared_file("aztrees.parquet")  # the notebook finds it itself, relative to its folder
    paper = shared_file("paper", "soak_paper_paired_ttests.csv")
    monkeypatch.delenv("AZTREES_PARQUET", raising=False)
    nb = execute("02_aztrees.ipynb", kernel, f"PAPER = {str(paper)!r}\n" + AZTREES_CLAIMS)
    assert "Using the real AZtrees table" in stream_text(nb)


def _cell_source(nb_name: str, cell_id: str) -> str:
    nb = nbformat.read(NOTEBOOKS / nb_name, as_version=4)
    return next(c.source for c in nb.cells if c.get("id") == cell_id)


def test_aztrees_falls_back_to_a_lookalike(tmp_path: Path, monkeypatch, capsys) -> None:
    """Without the real table, the data cell generates one with the same roles and says so."""
    import soak_dask as sd

    monkeypatch.setenv("AZTREES_PARQUET", str(tmp_path / "absent.parquet"))
    namespace: dict[str, Any] = {}
    exec(_cell_source("02_aztrees.ipynb", "aztrees-01"), namespace)
    exec(_cell_source("02_aztrees.ipynb", "aztrees-03"), namespace)
    assert namespace["REAL"] is False
    assert "GENERATED lookalike" in capsys.readouterr().out
    df = namespace["source"]
    assert len(df) == 5_956
    assert set(df["y"]) == {"Tree", "Not tree"}
    assert set(df["region3"]) == {"NE", "NW", "S"}
    assert set(df["region4"]) == {"NE", "NW", "SE", "SW"}
    assert df.groupby("polygon")[["region4", "y"]].nunique().max().max() == 1
    # region4 has the smaller subsets: each needs rows in all 10 folds.
    table = sd.load_table(
        df, label="y", subset="region4", group="polygon", features=namespace["FEATURES"]
    )
    folded = sd.assign_folds(table, n_folds=10, seed=1)
    blocks = sd.block_counts(folded).groupby(["region4", folded.fold])["n"].sum()
    assert len(blocks) == 4 * 10 and (blocks > 0).all()


def test_existing_cluster_needs_the_variable(monkeypatch) -> None:
    monkeypatch.delenv("SOAK_SCHEDULER", raising=False)
    with pytest.raises(RuntimeError, match="SOAK_SCHEDULER is not set"):
        exec(_cell_source("03_existing_cluster.ipynb", "cluster-01"), {})


def _stop(proc: subprocess.Popen) -> None:
    """Terminate a process we started (and its children: same session), then kill it."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _wait_for(condition, what: str, procs: list, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        dead = [p.args for p in procs if p.poll() is not None]
        if dead or time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}; exited: {dead}")
        time.sleep(0.5)


def _address(scheduler_file: Path) -> str | None:
    """The address in a complete scheduler file, else None (absent or still being written)."""
    try:
        return json.loads(scheduler_file.read_text())["address"]
    except (FileNotFoundError, json.JSONDecodeError, KeyError):
        return None


@pytest.fixture
def dask_cluster(tmp_path: Path) -> Iterator[str]:
    """A scheduler and two single-threaded workers as separate processes; yields the address."""
    from distributed import Client

    dask = Path(sys.executable).with_name("dask")
    scheduler_file = tmp_path / "scheduler.json"
    common = ["--dashboard-address", ":0"]
    commands = [
        [
            dask,
            "scheduler",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            *common,
            "--scheduler-file",
            scheduler_file,
        ],
        *(
            [
                dask,
                "worker",
                "--scheduler-file",
                scheduler_file,
                "--nthreads",
                "1",
                *common,
                "--name",
                f"worker-{i}",
                "--local-directory",
                tmp_path / f"worker-{i}",
            ]
            for i in range(2)
        ),
    ]
    procs: list[subprocess.Popen] = []
    try:
        for i, cmd in enumerate(commands):
            with open(tmp_path / f"process-{i}.log", "wb") as log:
                procs.append(
                    subprocess.Popen(
                        [str(a) for a in cmd],
                        cwd=tmp_path,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,  # its own process group, killed as one
                    )
                )
            if i == 0:
                _wait_for(lambda: _address(scheduler_file), "the scheduler file", procs)
        address = _address(scheduler_file)
        with Client(address, timeout="60s") as client:
            client.wait_for_workers(2, timeout=120)
        yield address
    finally:
        for proc in reversed(procs):
            _stop(proc)


def test_existing_cluster(kernel: str, dask_cluster: str, private_tmp: Path, monkeypatch) -> None:
    monkeypatch.setenv("SOAK_SCHEDULER", dask_cluster)
    nb = execute("03_existing_cluster.ipynb", kernel, CLUSTER_CLAIMS)
    assert f"connected to {dask_cluster}: 2 workers, 2 threads" in stream_text(nb)
