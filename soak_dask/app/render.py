"""``soak report STORE --out DIR`` for every kind of result: the renderer of each kind
(``attrs["design"]``, ``soak_dask.results.store.result_kind``) writes its files into ``DIR`` and
says what to print, as the command that made the result writes and prints them.

- ``soak``, ``evaluate``: ``soak_dask.results.report.write_report`` (HTML, tables, figures);
- ``transfer``: ``soak_dask.pooling.report.write_transfer_report``;
- ``search_subsets``: its tables (``search_pvalues``, ``search_pools``, ``search_stability``)
  and ``plot_search``'s figure;
- ``split_sensitivity``: ``soak split-sensitivity``'s CSV files, figure and settings;
- ``compare_sampling``: ``soak compare-sampling``'s CSV files, figure and manifest.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import xarray as xr

#: What a renderer returns: the text to print and the main file written.
Rendered = tuple[str, Path]


def render(ds: xr.Dataset, out: str | os.PathLike, overwrite: bool) -> Rendered:
    """Write the report of ``ds`` (any kind) into ``out``; what to print and its main file."""
    from ..results.store import result_kind

    kind = result_kind(ds)
    if kind not in RENDERERS:
        raise ValueError(f"results of kind {kind!r} have no report; kinds: {list(RENDERERS)}")
    return RENDERERS[kind](ds, out, overwrite)


def evaluation_printout(ds: xr.Dataset) -> str:
    """What ``soak evaluate`` (and ``soak report`` of its store) prints: mean ± SD and the test
    split's interval, then the learners compared with the design's recommended test."""
    from ..results.comparisons import comparison_text
    from ..results.stats import evaluation_text

    compared = comparison_text(ds)
    return evaluation_text(ds) + (f"\n\n{compared}" if compared else "")


def _soak(ds: xr.Dataset, out: str | os.PathLike, overwrite: bool) -> Rendered:
    from ..results.report import write_report
    from ..results.stats import is_evaluation, results_text, validate_results

    page = write_report(ds, out, overwrite=overwrite, flag="--overwrite")
    if is_evaluation(ds):
        return evaluation_printout(ds), page
    return results_text(ds, validate_results(ds)[0]), page


def _transfer(ds: xr.Dataset, out: str | os.PathLike, overwrite: bool) -> Rendered:
    from ..pooling.report import write_transfer_report
    from .transfer_cli import summary_text

    page = write_transfer_report(ds, out, overwrite=overwrite, flag="--overwrite")
    return summary_text(ds, None), page


def _search(ds: xr.Dataset, out: str | os.PathLike, overwrite: bool) -> Rendered:
    import matplotlib.pyplot as plt

    from ..io.outdir import check_out_dir
    from ..pooling.plot import plot_search
    from ..pooling.search import search_pools, search_pvalues, search_stability

    od = check_out_dir(
        out, writer="soak report (search_subsets)", overwrite=overwrite,
        source=ds.attrs.get("source"), name="--out", flag="--overwrite",
    ).begin()  # fmt: skip
    tests = search_pvalues(ds)
    tables = {"search_pvalues": tests, "search_pools": search_pools(ds)}
    tables["search_stability"] = search_stability(ds)
    for name, frame in tables.items():
        frame.to_csv(od.claim(f"{name}.csv"), index=False)
    fig = plot_search(ds)
    try:
        fig.savefig(od.claim("search.png"), dpi=150)
    finally:
        plt.close(fig)
    path = od.finish()
    keep = ["learner", "test_subset", "compare", "reference", "compare_mean", "p_paired"]
    return tests[keep].round(4).to_string(index=False), path / "search.png"


def _sensitivity(ds: xr.Dataset, out: str | os.PathLike, overwrite: bool) -> Rendered:
    from .sensitivity_cli import check_out, summary_text, write_outputs

    od = check_out(os.fspath(out), overwrite, ds.attrs.get("source"))
    write_outputs(ds, od)
    return summary_text(ds), od.path / "summary.csv"


def _sampling(ds: xr.Dataset, out: str | os.PathLike, overwrite: bool) -> Rendered:
    from ..diagnose.mai import mai_summary, mai_table
    from .sampling_cli import check_out_dir, write_outputs

    od = check_out_dir(out, overwrite, ds.attrs.get("source"))
    frame = mai_table({Path(os.fspath(ds.attrs.get("source", "results"))).name: ds})
    write_outputs(od, ds, frame, mai_summary(frame))
    return frame.round(3).to_string(), od.path / "mai.csv"


#: The renderer of each kind of result.
RENDERERS: dict[str, Callable[[xr.Dataset, str | os.PathLike, bool], Rendered]] = {
    "soak": _soak,
    "evaluate": _soak,
    "transfer": _transfer,
    "search_subsets": _search,
    "split_sensitivity": _sensitivity,
    "compare_sampling": _sampling,
}
