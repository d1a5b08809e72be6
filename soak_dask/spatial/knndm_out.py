"""kNNDM's output directory, written by ``soak knndm --out`` and ``soak_dask.save_knndm``: the
fold file (``folds.parquet``: each row's position in the table's row order, its label,
coordinates and group, and its fold; ``soak_dask.attach_folds`` joins it back on the
position), the ECDF figure (``knndm.png``), every candidate's W, random folds' included
(``candidates.csv``), the distances of the figure's ECDFs (``distances.csv``), the settings
and both W (``knndm.json``), and the report page of them all (``report.html``:
``soak_dask.spatial.knndm_page``). ``soak report`` draws the page again from the directory,
alone or beside other outputs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

# Imported by the command line's modules: what writes the files is imported when it runs.
if TYPE_CHECKING:
    import pandas as pd

    from ..io.outdir import OutputDir
    from ..split.knndm import KNNDMResult

__all__ = [
    "FILES",
    "FOLDS",
    "GENERATOR",
    "SETTINGS_FILE",
    "candidates_table",
    "knndm_settings",
    "save_knndm",
    "write_outputs",
]

SETTINGS_FILE = "knndm.json"
GENERATOR = "soak_dask knndm"
FOLDS = "folds.parquet"
FILES = (FOLDS, SETTINGS_FILE, "distances.csv", "candidates.csv", "knndm.png", "report.html")


def save_knndm(res: KNNDMResult, out: str | os.PathLike, *, overwrite: bool = False) -> Path:
    """Write kNNDM's folds ``res`` (``knndm_folds``'s result) into the directory ``out``, as
    ``soak knndm --out`` does: `FILES`. ``out`` must be new, empty or an earlier kNNDM output
    (replaced with ``overwrite``), and apart from the training table; checked before
    anything is written. Returns ``out`` as a path.

    Examples
    --------
    >>> res = sd.knndm_folds(table, "area.tif", n_folds=5)  # doctest: +SKIP
    >>> sd.save_knndm(res, "knndm")  # doctest: +SKIP
    >>> from soak_dask.app.render import render_path  # one page of several outputs
    >>> render_path(["eval.zarr", "aoa.zarr", "knndm"], "report")  # doctest: +SKIP
    """
    from ..io.outdir import check_out_dir

    table = res.table
    od = check_out_dir(
        out, writer=GENERATOR, overwrite=overwrite, source=table.source, name="out",
        flag="overwrite=True",
    )  # fmt: skip
    options = {"data": table.source, "label": table.label, "coords": list(table.coords)}
    options.update(group=table.group, space=res.space, **res.asked)
    write_outputs(res, od, options)
    return od.path


def knndm_settings(res: KNNDMResult, options: dict[str, Any]) -> dict[str, Any]:
    """``knndm.json``: the options ``options`` (the command's), ``res.attrs()``, the fold
    sizes and how to read the fold file."""
    from ..split.fold_file import ROW

    keep = ("data", "prediction", "label", "coords", "group", "space", "sample", "seed")
    settings = {"generator": GENERATOR, **{k: options.get(k) for k in keep}, **res.attrs()}
    settings.update(n_folds=res.n_folds, maxp=res.shares.maxp, fold_sizes=list(res.fold_sizes))
    if res.shares.split:
        settings.update(test_prop=res.shares.test_prop, maxp=None)
    settings["fold_file"] = {
        "row_id": ROW,
        "row_id_is": "the row's 0-based position in the training table's row order",
        "fold_column": res.column,
    }
    return settings


def write_outputs(res: KNNDMResult, out: OutputDir, options: dict[str, Any]) -> dict[str, Any]:
    """Write ``FILES`` into ``out``, each listed in its manifest before it is written; the
    page last, with its figure and tables (``soak_dask.results.pages.write_page``). The
    settings written (``knndm.json``)."""
    from ..results.pages import write_page
    from ..split.fold_file import write_fold_file
    from .knndm_page import DISTANCES, distances_frame, knndm_page
    from .knndm_plot import knndm_distances

    settings = knndm_settings(res, options)
    text = json.dumps(settings, indent=1, default=str) + "\n"
    out.claim(SETTINGS_FILE).write_text(text)
    write_fold_file(res.table, res.column, out.claim(FOLDS))
    distances = knndm_distances(res)
    distances_frame(distances).to_csv(out.claim(DISTANCES), index=False)
    # candidates.csv and knndm.png are the page's table and figure
    settings = json.loads(text)  # as a reader of knndm.json sees them
    write_page(knndm_page(settings, distances, candidates_table(res)), out)
    return settings


def candidates_table(res: KNNDMResult) -> pd.DataFrame:
    """``candidates.csv``: every candidate clustering tried (named by its clustering,
    "kmeans" or "hierarchical") and random folds, each with the W of its folds, its largest
    fold's share and its status (chosen, eligible, or why it may not be chosen); "none" only
    where a candidate has no such value (random folds have no clusters; k-means that found
    no clustering has no folds)."""
    import pandas as pd

    kmeans = res.candidates.rename(columns={"W": "eligible_W", "W_folds": "W"})
    status = kmeans["status"].replace({"scored": "eligible"})
    if res.n_clusters is not None:
        status = status.mask(kmeans["n_clusters"] == res.n_clusters, "chosen (smallest W)")
    rows = kmeans[["n_clusters", "W", "largest_fold"]].assign(status=status)
    sizes = res.random_fold_sizes
    test = f"KS p = {res.ks_pvalue:.3g}"
    random = {
        "n_clusters": None,
        "W": res.W_random,
        "largest_fold": max(sizes) / sum(sizes),
        "status": f"chosen (training points not clustered against the prediction area: {test})"
        if res.n_clusters is None
        else f"not kept (training points clustered against the prediction area: {test})",
    }
    both = pd.concat([rows, pd.DataFrame([random])], ignore_index=True)
    both.insert(0, "candidate", [res.clustering] * len(rows) + ["random"])
    return both.astype({"n_clusters": "Int64"})
