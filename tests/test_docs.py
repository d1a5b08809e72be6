"""The documentation: the site builds with --strict, the API page is complete, examples run.

Python blocks written as doctests (``>>>``) are run as doctests on every page. On the pages in
``EXECUTED``, every other Python block is executed in order in one namespace, and a ``text``
block right after a Python block is the output that block must print.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import soak_dask

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [
    "index",
    "method",
    "plans",
    "tutorial",
    "results",
    "outputs",
    "evaluation",
    "nesting",
    "split_sensitivity",
    "balanced_sampling",
    "transfer",
    "spatial",
    "models",
    "scaling",
    "memory",
    "faq",
    "api",
]
# Pages whose Python blocks run, in this order, sharing one namespace (results.md uses the
# tutorial's `res`).
EXECUTED = ["tutorial.md", "results.md"]
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```[ \t]*$", re.M | re.S)


def fenced_blocks(text: str) -> list[tuple[str, str, int, int]]:
    """(language, body, start, end) of each fenced code block, in order."""
    return [(m[1], m[2], m.start(), m.end()) for m in _FENCE.finditer(text)]


def examples(page: str) -> list[tuple[str, str | None]]:
    """Each non-doctest Python block of ``page`` and the text block printed after it, if any."""
    text = (DOCS / page).read_text()
    blocks = fenced_blocks(text)
    out = []
    for i, (lang, body, _, end) in enumerate(blocks):
        if lang != "python" or ">>>" in body:
            continue
        expected = None
        if i + 1 < len(blocks):
            next_lang, next_body, next_start, _ = blocks[i + 1]
            if next_lang == "text" and not text[end:next_start].strip():
                expected = next_body
        out.append((body, expected))
    return out


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.strip("\n").splitlines()]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
    return out


@pytest.mark.slow
def test_site_has_every_page(site: Path) -> None:
    for page in PAGES:
        html = site / ("index.html" if page == "index" else f"{page}/index.html")
        assert html.is_file(), f"{html} was not built"
    assert "Same/Other/All" in (site / "method" / "index.html").read_text()


def _public_callables() -> list[str]:
    return [name for name in soak_dask.__all__ if callable(getattr(soak_dask, name))]


@pytest.mark.slow
def test_api_page_documents_the_public_api(site: Path) -> None:
    html = (site / "api" / "index.html").read_text()
    # An entry's id is its full name: soak_dask.soak, or soak_dask.results.plot.plot_soak for a name
    # that soak_dask imports lazily from a submodule.
    missing = [
        n for n in _public_callables() if not re.search(rf'id="soak_dask(\.\w+)*\.{n}"', html)
    ]
    assert not missing, f"docs/api.md lacks entries for {missing}"
    for name in ["soak_dask.tables.generated.make_pixel_table", "soak_dask.run.cluster.connect"]:
        assert f'id="{name}"' in html
    # The rendered entry carries the docstring, not just a heading.
    assert "Open a table lazily and name the role of its columns" in html


@pytest.mark.parametrize("page", [f"{p}.md" for p in PAGES])
def test_python_blocks_compile(page: str) -> None:
    """Blocks that cannot run here (a SLURM or Kubernetes cluster, S3) are still valid Python."""
    for lang, body, start, _ in fenced_blocks((DOCS / page).read_text()):
        if lang == "python" and ">>>" not in body:
            compile(body, f"{page}@{start}", "exec")


@pytest.mark.slow
@pytest.mark.parametrize("page", [f"{p}.md" for p in PAGES])
def test_doctest_blocks(page: str) -> None:
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for lang, body, start, _ in fenced_blocks((DOCS / page).read_text()):
        if lang == "python" and ">>>" in body:
            test = parser.get_doctest(body, {}, f"{page}@{start}", page, 0)
            runner.run(test)
    assert runner.failures == 0, f"{runner.failures} doctest example(s) in {page} failed"


@pytest.mark.slow
def test_examples_run_and_print_what_the_page_shows(tmp_path: Path, monkeypatch) -> None:
    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    try:
        for page in EXECUTED:
            for i, (code, expected) in enumerate(examples(page)):
                printed = io.StringIO()
                with contextlib.redirect_stdout(printed):
                    exec(compile(code, f"{page} block {i + 1}", "exec"), namespace)
                if expected is not None:
                    assert _lines(printed.getvalue()) == _lines(expected), (
                        f"{page} block {i + 1} printed:\n{printed.getvalue()}"
                    )
    finally:
        for name in ["client", "cluster"]:
            if name in namespace:
                namespace[name].close()
        import matplotlib.pyplot as plt

        plt.close("all")
    assert (tmp_path / "tutorial_error.png").stat().st_size > 10_000


#: distributed's own shutdown race (dask/distributed#7105, open): a worker of the README's
#: ``Client()`` heartbeats once more after the scheduler closed and logs the closed stream with
#: its traceback; the script has ended (exit 0) and soak_dask is not in it.
_HEARTBEAT_RACE = re.compile(
    r"^\S+ \S+ - distributed\.worker - ERROR - Failed to communicate with scheduler during "
    r"heartbeat\.\n(?:.*\n)*?distributed\.comm\.core\.CommClosedError: .*Stream is closed\n?",
    re.MULTILINE,
)


def _without_heartbeat_race(stderr: str) -> str:
    """`stderr` without distributed's heartbeat-after-close records (`_HEARTBEAT_RACE`)."""
    return _HEARTBEAT_RACE.sub("", stderr)


def test_only_the_heartbeat_race_is_taken_out_of_stderr() -> None:
    race = (
        "2026-12-06 23:49:36,870 - distributed.worker - ERROR - Failed to communicate with "
        "scheduler during heartbeat.\nTraceback (most recent call last):\n  File x\n"
        "tornado.iostream.StreamClosedError: Stream is closed\n\nThe above exception was the "
        "direct cause of the following exception:\n\nTraceback (most recent call last):\n"
        "distributed.comm.core.CommClosedError: in <TCP (closed)>: Stream is closed\n"
    )
    after = "2026-12-06 23:49:37,001 - soak_dask - ERROR - boom\nTraceback (most recent call"
    assert _without_heartbeat_race("SOAK: 100%\n" + race) == "SOAK: 100%\n"
    assert _without_heartbeat_race(race + after) == after
    assert "Traceback" in _without_heartbeat_race("Traceback (most recent call last):\n")
    mine = "Traceback (most recent call last):\nValueError: x\n"
    assert _without_heartbeat_race(race + mine) == mine


@pytest.mark.slow
def test_readme_python_example_runs_as_pasted(tmp_path: Path) -> None:
    """The README's Python block, saved as a script and run as a user would, works."""
    text = (ROOT / "README.md").read_text()
    (script,) = [body for lang, body, *_ in fenced_blocks(text) if lang == "python"]
    (tmp_path / "soak_example.py").write_text(script)
    proc = subprocess.run(
        [sys.executable, "soak_example.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    stderr = _without_heartbeat_race(proc.stderr)
    assert "Traceback" not in stderr, stderr[-3000:]
    header = proc.stdout.splitlines()[0].split()
    assert header == ["learner", "test_subset", "compare", "mean_diff", "p"], proc.stdout[:500]
    assert "logistic" in proc.stdout
    assert soak_dask.open_results(tmp_path / "example_results.zarr").attrs["n_folds"] == 10
