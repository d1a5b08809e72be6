"""The report page of ``soak knndm``'s folds (its ``report.html``, and ``soak report`` of its
output directory): W of the folds chosen against random folds', the rows per fold, the ECDF
figure and every candidate, on the one page skeleton of ``soak_dask.results.pages``.

``knndm_page`` builds it from what the directory holds (``knndm.json``, ``distances.csv``,
``candidates.csv``); ``read_knndm_dir`` reads those back.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..results.html import code, settings_table
from ..results.pages import Page, PageFigure, PageSection, PageTable
from ..split.knndm import CANDIDATE_NAMES, knndm_note
from .knndm_plot import ECDFS, plot_knndm_ecdfs

__all__ = ["DISTANCES", "distances_frame", "knndm_page", "read_knndm_dir"]

#: ``soak knndm``'s file of the ECDFs' distances: one row per distance, ``ecdf`` naming its
#: set (``ECDFS``).
DISTANCES = "distances.csv"
SETTINGS_FILE, CANDIDATES = "knndm.json", "candidates.csv"
#: How the page names the candidates of each clustering (``knndm.json``'s
#: ``knndm_clustering``; k-means where an older file has none).
_EXPLANATION = """
<p>kNNDM (Linnenbrink et al. 2024, <i>Geosci. Model Dev.</i> 17:5897; CAST's
<code>knndm</code>) chooses folds whose test points lie as far from their training points as
the prediction area lies from the training data. Three distributions of nearest-neighbour
distances are compared: from the prediction points to the nearest training point
(<b>Gij</b>), and from each CV test point to the nearest training point outside its fold, for
the kNNDM folds (<b>Gj*</b>) and for random folds.</p>
<ul>
<li><b>W</b> is the Wasserstein distance between the ECDF of Gij and that of the folds'
distances, in the distances' unit: the smaller, the closer the CV's distances are to the
prediction's. kNNDM tries clusterings of the training coordinates or features (the candidates:
k-means per cluster count, or cuts of one hierarchical Ward tree) and
keeps the one of smallest W among those whose folds are not too uneven.</li>
<li>Where the training points are not clustered against the prediction area (a KS test of Gij
against the training points' own nearest-neighbour distances, p &ge; 0.05), random folds are
kept, as CAST does.</li>
</ul>
"""
# Settings put in words by _settings; any other key is listed as it is.
_KNOWN = frozenset(
    "generator data prediction label coords group space sample seed n_folds maxp test_prop "
    "fold_sizes fold_file knndm_W knndm_W_random knndm_n_clusters knndm_unit knndm_space "
    "knndm_ks_pvalue knndm_test_prop knndm_test_bounds knndm_test_rows knndm_method "
    "knndm_clustering knndm_prediction_sample".split()
)


def distances_frame(distances: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """The ECDFs' distances as one long table (``DISTANCES``): ``ecdf``, ``distance``."""
    return pd.concat(
        [pd.DataFrame({"ecdf": name, "distance": distances[name]}) for name in ECDFS],
        ignore_index=True,
    )


def read_knndm_dir(path: str | Path) -> tuple[dict[str, Any], dict[str, np.ndarray], pd.DataFrame]:
    """The settings, ECDF distances and candidates ``soak knndm`` wrote into ``path``."""
    path = Path(path)
    if not (path / DISTANCES).is_file():
        raise ValueError(
            f"{path} is a soak knndm output directory without {DISTANCES} (written by an "
            "older soak_dask): run soak knndm again to report it"
        )
    info = json.loads((path / SETTINGS_FILE).read_text(encoding="utf-8"))
    frame = pd.read_csv(path / DISTANCES)
    distances = {name: frame.loc[frame["ecdf"] == name, "distance"].to_numpy() for name in ECDFS}
    candidates = pd.read_csv(path / CANDIDATES, keep_default_na=False, na_values=["none"])
    return info, distances, candidates


def knndm_page(
    info: Mapping[str, Any], distances: Mapping[str, np.ndarray], candidates: pd.DataFrame
) -> Page:
    """The report page of kNNDM's folds from ``soak knndm``'s settings ``info``, ``distances``
    (``knndm_distances``) and ``candidates`` table."""
    split = "knndm_test_prop" in info
    figure = PageFigure(
        "knndm",
        lambda: plot_knndm_ecdfs(info, distances),
        "ECDFs of the nearest-neighbour distances",
        "ECDFs of the nearest-neighbour distances from the prediction points to the training "
        "points (Gij) and from the CV test points to their training points, of the kNNDM "
        f"{'split' if split else 'folds'} and of random ones; x in "
        f"{html.escape(str(info['knndm_unit']))}.",
    )
    text = f"<p><b>{html.escape(knndm_note(dict(info)))}</b></p>"
    sizes = PageTable(
        "fold_sizes", "Rows per part" if split else "Rows per fold", _sizes(info, split)
    )
    folds = PageSection("folds", "The split" if split else "The folds", text, (figure,), (sizes,))
    # "none" where a candidate has no such value, as soak knndm's candidates.csv
    filled = candidates.astype(object).where(candidates.notna(), "none")
    shown = PageTable("candidates", "Show every candidate with its W", filled, folded=True)
    tried = PageSection(
        "candidates",
        "Candidates",
        f"<p>{len(candidates) - 1} {CANDIDATE_NAMES[info.get('knndm_clustering', 'kmeans')]} "
        "tried, and random "
        f"{'split' if split else 'folds'}; W in {html.escape(str(info['knndm_unit']))}."
        f"{_best_unchosen(info, candidates)}</p>",
        tables=(shown,),
    )
    return Page(
        "kNNDM " + ("train/test split" if split else "folds"),
        _lede(info, split),
        _EXPLANATION,
        (folds, tried),
        _settings(info),
    )


def _sizes(info: Mapping[str, Any], split: bool) -> pd.DataFrame:
    """Rows per fold 1..K, or in the split's test and train parts, with their shares."""
    sizes = [int(n) for n in info["fold_sizes"]]
    names = [str(k) for k in range(1, len(sizes) + 1)]
    if split:
        test = int(info["knndm_test_rows"])
        names, sizes = ["test", "train"], [test, sum(sizes) - test]
    shares = [n / sum(sizes) for n in sizes]
    return pd.DataFrame({"part" if split else "fold": names, "rows": sizes, "share": shares})


def _best_unchosen(info: Mapping[str, Any], candidates: pd.DataFrame) -> str:
    """Where random folds were kept: the best candidate's W, which the KS rule passed over."""
    clustered = candidates.loc[candidates["candidate"] != "random"]
    w = pd.to_numeric(clustered["W"], errors="coerce")
    if info["knndm_n_clusters"] >= 0 or not w.notna().any():
        return ""
    best = clustered.loc[w.idxmin()]
    return (
        f" The best of them, {int(best['n_clusters'])} clusters, has W = {w.min():.4g}: random "
        "folds are kept all the same, as CAST keeps them, because the training points are not "
        "clustered against the prediction area."
    )


def _lede(info: Mapping[str, Any], split: bool) -> str:
    data = code(info["data"]) if info.get("data") else "the training table"
    prediction = code(info["prediction"]) if info.get("prediction") else "the prediction area"
    kind = "A train/test split" if split else f"{info['n_folds']} CV folds"
    if info["knndm_n_clusters"] < 0:
        return (
            f"{kind} of {data}, drawn at random: kNNDM keeps random "
            f"{'parts' if split else 'folds'}, as CAST does, where the training points are not "
            f"clustered against {prediction} (KS p = {info['knndm_ks_pvalue']:.3g} &ge; 0.05); "
            f"their W = {info['knndm_W']:.4g} ({html.escape(str(info['knndm_unit']))})."
        )
    return (
        f"{kind} of {data} whose test points lie as far from their training "
        f"points as {prediction} lies from the training data: W = "
        f"{info['knndm_W']:.4g} against {info['knndm_W_random']:.4g} for random ones "
        f"({html.escape(str(info['knndm_unit']))})."
    )


def _settings(info: Mapping[str, Any]) -> str:
    words = (
        ("Training table", "data"),
        ("Prediction area", "prediction"),
        ("Label", "label"),
        ("Coordinates", "coords"),
        ("Groups", "group"),
        ("Space", "space"),
        ("Seed", "seed"),
        ("Largest share of one fold", "maxp"),
        ("Test share asked", "test_prop"),
    )
    rows = [(title, _value(info[key])) for title, key in words if info.get(key) not in (None, "")]
    rows += _knndm_rows(info)
    fold_file = info.get("fold_file") or {}
    if fold_file:
        rows.append(
            (
                "Fold file",
                f"{code('folds.parquet')}: column {code(fold_file.get('fold_column'))}, rows by "
                f"{code(fold_file.get('row_id'))} ({html.escape(str(fold_file.get('row_id_is')))})",
            )
        )
    return settings_table(rows, dict(info), _KNOWN)


def _value(value: Any) -> str:
    """A setting as code: a list (the coordinates) as its items, not Python's brackets."""
    return code(", ".join(map(str, value)) if isinstance(value, list) else value)


def _knndm_rows(info: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The candidates' clustering, the prediction points used of those asked, the method."""
    rows = []
    if info.get("knndm_clustering"):
        clustering = info["knndm_clustering"]
        rows.append(("Candidates", f"{code(clustering)}: {CANDIDATE_NAMES[clustering]}"))
    if info.get("knndm_prediction_sample") is not None:
        used, asked = int(info["knndm_prediction_sample"]), info.get("sample")
        of = f" of {int(asked):,} asked" if asked not in (None, "") else ""
        every = " (every prediction point)" if asked not in (None, "") and used < asked else ""
        rows.append(("Prediction points sampled", f"{used:,}{of}{every}"))
    if info.get("knndm_method"):
        rows.append(("Folds chosen", html.escape(str(info["knndm_method"]))))
    return rows
