"""Start-up: seconds to import soak_dask and to run ``soak --help`` / ``soak info`` / ``soak run``,
in fresh processes, for this tree and (``--baseline DIR``, a source tree of another commit) side
by side.

Every CLI call, every Dask worker unpickling a soak task and every notebook kernel pays the
import once; ``soak run`` on a small table is mostly start-up (its cluster's too). Each command
runs ``--repeat`` times in a new interpreter, alternating the trees so load changes hit both
alike; the median counts. Make a baseline tree of an earlier commit with
``git archive COMMIT soak_dask | tar -x -C /tmp/soak_base``, then

    python -m benchmarks.startup --baseline /tmp/soak_base
"""

from __future__ import annotations

import itertools
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .common import Ratio, finish, header, parser, timed

MODULE = "benchmarks.startup"
HERE = Path(__file__).resolve().parents[1]
#: What each row times: the arguments of ``python`` (``{csv}``: a small CSV table; ``{out}``: a
#: new folder each run).
COMMANDS: dict[str, list[str]] = {
    "import soak_dask": ["-c", "import soak_dask"],
    "import soak_dask.app.cli": ["-c", "import soak_dask.app.cli"],
    "soak --help": ["-m", "soak_dask.app.cli", "--help"],
    "soak info --help": ["-m", "soak_dask.app.cli", "info", "--help"],
    "soak info CSV": ["-m", "soak_dask.app.cli", "info", "{csv}", "--label", "y"],
    "import soak_dask; sd.soak": ["-c", "import soak_dask as sd; sd.soak"],
    # What a Dask worker imports to unpickle a fit task (its function's module).
    "import soak_dask.run.fitting": ["-c", "import soak_dask.run.fitting"],
    # A LocalCluster of one worker per core: started, loaded, 3 subsets x 10 folds fitted, saved.
    "soak run CSV": ["-m", "soak_dask.app.cli", "run", "{csv}", "--label", "y", "--subset"]
    + ["subset", "--out", "{out}", "--no-progress"],
    # The transfer matrix and its search, checkpointed, with the report's figures.
    "soak transfer CSV": ["-m", "soak_dask.app.cli", "transfer", "{csv}", "--label", "y"]
    + ["--subset", "subset", "--out", "{out}", "--no-progress"],
}


def small_csv(folder: Path) -> Path:
    """A 300-row regression table with two features and a subset column."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 2))
    frame = pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "y": x.sum(axis=1)})
    frame["subset"] = np.repeat(["north", "south", "east"], 100)
    path = folder / "small.csv"
    frame.to_csv(path, index=False)
    return path


def seconds(tree: Path, argv: list[str]) -> float:
    """Wall seconds of ``python ARGV`` importing soak_dask from ``tree``; fails loudly."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc, s = timed(  # in ``tree``: ``-c`` and ``-m`` put the working directory first on the path
        lambda: subprocess.run(
            [sys.executable, *argv], cwd=tree, env=env, capture_output=True, text=True, check=False
        )
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{argv} in {tree} failed:\n{proc.stderr[-2000:]}")
    return s


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--baseline", type=Path, help="source tree of the commit to compare with")
    p.add_argument("--repeat", type=int, default=5, help="runs per command and tree (default 5)")
    p.add_argument("--only", nargs="+", choices=list(COMMANDS), help="these rows only")
    args = p.parse_args(argv)
    if args.quick:
        args.repeat = 1
    facts = header("startup: import and CLI start-up", MODULE, argv, args)
    trees = {"this tree": HERE, **({"baseline": args.baseline} if args.baseline else {})}
    rows, ratios = [], []
    with tempfile.TemporaryDirectory() as folder:
        csv = str(small_csv(Path(folder)))
        outs = (str(Path(folder) / f"out{i}") for i in itertools.count())
        for name, template in COMMANDS.items():
            if args.only and name not in args.only:
                continue
            command = [part.format(csv=csv, out="{out}") for part in template]
            for tree in trees.values():  # a first run fills __pycache__: not counted
                seconds(tree, [part.format(out=next(outs)) for part in command])
            runs: dict[str, list[float]] = {label: [] for label in trees}
            for _ in range(args.repeat):
                for label, tree in trees.items():
                    argv = [part.format(out=next(outs)) for part in command]
                    runs[label].append(seconds(tree, argv))
            row = {"command": name}
            row.update({f"{label} s": round(statistics.median(s), 3) for label, s in runs.items()})
            rows.append(row)
            if args.baseline:
                ratio = statistics.median(runs["baseline"]) / statistics.median(runs["this tree"])
                ratios.append(Ratio(f"{name}: baseline / this tree", ratio, 1.0, True))
    return finish("startup", args, facts, rows, ratios)


if __name__ == "__main__":
    main()
