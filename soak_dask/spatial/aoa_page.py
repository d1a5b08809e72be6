"""The report page of an area of applicability (``report.html`` of ``soak aoa``, and of ``soak
report`` on an AOA store): the threshold and the share inside, the maps, the error profile's
line, figure and windows, the training points' DI and the settings, on the one page skeleton
of ``soak_dask.results.pages``.

``aoa_page`` builds it; ``aoa_text`` is what ``soak aoa`` prints, shared by ``soak report``.
"""

from __future__ import annotations

import html
from typing import Any

import pandas as pd
import xarray as xr

from ..results.html import code, settings_table
from ..results.pages import Page, PageFigure, PageSection, PageTable
from ..tables.raster import X, Y
from .aoa import TRAIN
from .aoa_plot import UNKNOWN_UNIT, axis_unit, plot_aoa, plot_error_profile
from .aoa_record import POINT_X, POINT_Y, recorded_points
from .error_profile import ErrorProfile

__all__ = ["aoa_counts", "aoa_page", "aoa_text", "profile_line"]

#: ``attrs`` keys naming the inputs (set by ``soak aoa``; absent for an AOA made in Python).
TRAIN_SOURCE, NEW_SOURCE = "source_train", "source_new"
_EXPLANATION = """
<p>The <b>dissimilarity index</b> (DI) of a point is its distance, in standardised (and
weighted) predictor space, to the nearest training point, divided by the mean distance between
training points: 0 on a training point, 1 at the training data's typical spacing. It has no
unit.</p>
<p>The <b>threshold</b> is the largest DI the cross-validation saw in the training data: the
upper whisker (Q3 + 1.5 IQR, at most their largest) of the training points' DI, each measured
against the points outside its own fold. A point whose DI is above it lies <b>outside the area
of applicability</b> (AOA): its predictors are unlike any the model was validated on, and the
cross-validated error says nothing about it.</p>
<p>The <b>expected error</b> (with an error profile) is the cross-validated error as a
non-decreasing function of the DI, fitted to moving windows of the CV predictions sorted by DI
(CAST's <code>errorProfiles</code>), then mapped over the DI. Beyond the largest DI the windows
saw, the map holds the error at that DI: there it is a lower bound.</p>
<ul>
<li>The maps share one scale: the DI, the AOA (inside blue, outside red), the expected error;
the training points are white circles. Cells where a predictor is missing are blank.</li>
<li>Meyer &amp; Pebesma (2021), <i>Methods Ecol. Evol.</i> 12:1620; the definitions as CAST's
<code>trainDI</code> and <code>aoa</code> (docs/aoa.md).</li>
</ul>
"""
# Attrs put in words by _settings; any other attr is listed as it is.
_KNOWN = frozenset(
    f"threshold mean_distance features weights n_train n_folds definition soak_dask_aoa "
    f"{TRAIN_SOURCE} {NEW_SOURCE}".split()
)


def aoa_counts(ds: xr.Dataset) -> tuple[int, int]:
    """Points (cells or rows) with every predictor, and those inside the AOA: one pass over
    a lazy ``aoa`` layer."""
    aoa = ds["aoa"]
    counts = xr.Dataset({"with_data": aoa.notnull().sum(), "inside": (aoa == 1).sum()}).compute()
    return int(counts["with_data"]), int(counts["inside"])


def profile_line(profile: ErrorProfile) -> str:
    """One line on an error profile: the expected error at both ends of the DI it saw."""
    lo, hi = profile.windows["di"].min(), profile.windows["di"].max()
    left, right = profile([lo, hi])
    outside = f"; {profile.n_outside} outside the AOA left out" if profile.n_outside else ""
    return (
        f"error profile: expected {profile.metric} {left:.4g} at DI <= {lo:.3g} to "
        f"{right:.4g} at DI >= {hi:.3g} ({len(profile.windows)} windows of {profile.window} CV "
        f"predictions{outside})"
    )


def aoa_text(ds: xr.Dataset, share: float, profile: ErrorProfile | None = None) -> str:
    """What ``soak aoa`` prints: the threshold, the share inside and the profile's line."""
    lines = [
        f"threshold {ds.attrs['threshold']:.4g} on the DI (unitless: the distance to the "
        "nearest training point in scaled predictor space over the training points' mean "
        f"distance, {ds.attrs['mean_distance']:.4g})",
        f"inside the AOA: {share:.1%} of the points with every predictor",
    ]
    return "\n".join(lines + ([profile_line(profile)] if profile is not None else []))


def aoa_page(
    ds: xr.Dataset,
    *,
    points: Any = None,
    profile: ErrorProfile | None = None,
    counts: tuple[int, int] | None = None,
) -> Page:
    """The report page of ``ds`` (``soak_dask.aoa``'s result, lazy or computed, with
    ``expected_error`` when ``profile`` is given); ``points``: the training points' x and y
    for the maps (default: those recorded in ``ds``); ``counts``: ``aoa_counts(ds)`` if
    already computed. Its figures are drawn when the page is written
    (``soak_dask.results.pages.write_page``)."""
    with_data, inside = aoa_counts(ds) if counts is None else counts
    share = inside / with_data if with_data else float("nan")
    raster = ds["di"].dims == (Y, X)
    where = "cells" if raster else "rows"
    maps = PageFigure(
        "aoa",
        lambda: plot_aoa(ds, points=points),
        "DI and AOA maps" if raster else "DI of the new rows and of the training points",
        _maps_caption(ds, raster),
    )
    intro = (
        f"<p>Threshold <b>{ds.attrs['threshold']:.4g}</b> on the DI (mean distance between "
        f"training points {ds.attrs['mean_distance']:.4g}): <b>{share:.1%}</b> of the "
        f"{with_data:,} {where} with every predictor lie inside the AOA ({inside:,}), "
        f"{with_data - inside:,} outside.</p>"
    )
    summary = _summary(ds, with_data, inside, profile)
    sections = [
        PageSection(
            "aoa",
            "DI and AOA",
            intro,
            (maps,),
            (PageTable("aoa_summary", "Summary", summary),),
        )
    ]
    if profile is not None:
        sections.append(_profile_section(profile))
    sections.append(_training_section(ds, points))
    return Page(
        "Area of applicability",
        _lede(ds, share),
        _EXPLANATION,
        tuple(sections),
        _settings(ds, profile),
    )


def _maps_caption(ds: xr.Dataset, raster: bool) -> str:
    if not raster:
        return (
            "Left: the DI of the new rows; right: that of the training points, each against "
            "the points outside its fold. The red line is the threshold."
        )
    unit = axis_unit(ds)
    axes = "" if unit == UNKNOWN_UNIT else f" Axes in {html.escape(unit)} (the raster's CRS)."
    error = ", the expected error" if "expected_error" in ds else ""
    return (
        f"The DI, the AOA{error} as maps of one scale; the DI's colour bar (dimensionless) "
        f"below them, the training points drawn where their coordinates are known.{axes}"
    )


def _lede(ds: xr.Dataset, share: float) -> str:
    a = ds.attrs
    new = code(a[NEW_SOURCE]) if a.get(NEW_SOURCE) else "the points assessed"
    train = f" of {code(a[TRAIN_SOURCE])}" if a.get(TRAIN_SOURCE) else ""
    features = ", ".join(html.escape(str(f)) for f in a.get("features", []))
    return (
        f"Where may a model trained on the {a.get('n_train', '?')} training points{train} "
        f"predict {new}? On predictors {features}: {share:.1%} of it lies inside the area of "
        "applicability."
    )


def _summary(
    ds: xr.Dataset, with_data: int, inside: int, profile: ErrorProfile | None
) -> pd.DataFrame:
    a = ds.attrs
    rows = [
        ("threshold (DI)", a["threshold"]),
        ("mean distance between training points", a["mean_distance"]),
        ("training points", a.get("n_train")),
        ("CV folds", a.get("n_folds") or "none (every other point)"),
        ("points with every predictor", with_data),
        ("inside the AOA", inside),
        ("share inside", inside / with_data if with_data else float("nan")),
    ]
    if profile is not None:
        lo, hi = profile([0.0, profile.threshold])
        rows += [
            (f"expected {profile.metric} at DI 0", lo),
            (f"expected {profile.metric} at the threshold", hi),
        ]
    return pd.DataFrame(
        {"quantity": [r[0] for r in rows], "value": [str(_number(r[1])) for r in rows]}
    )


def _number(value: Any) -> Any:
    return f"{value:.4g}" if isinstance(value, float) else value


def _profile_section(profile: ErrorProfile) -> PageSection:
    figure = PageFigure(
        "error_profile",
        lambda: plot_error_profile(profile),
        "error profile",
        f"The {html.escape(profile.metric)} of each window of {profile.window} CV predictions "
        "at the DI of its centre, the non-decreasing curve fitted to them and the AOA "
        "threshold; the curve is the expected-error map's.",
    )
    text = f"<p>{html.escape(profile_line(profile))}.</p>"
    tables = (
        PageTable("error_profile_windows", "Show the windows", profile.windows, folded=True),
        PageTable(
            "cv_predictions", "Show the CV predictions", profile.points, md=False, folded=True
        ),
    )
    return PageSection("error-profile", "Error profile", text, (figure,), tables)


def _training_section(ds: xr.Dataset, points: Any) -> PageSection:
    """The training points' DI (and LPD), with their coordinates when known."""
    frame = pd.DataFrame({"train_di": ds["train_di"].values})
    if "train_lpd" in ds:
        frame["train_lpd"] = ds["train_lpd"].values
    xy = recorded_points(ds) if points is None else pd.DataFrame(points).to_numpy(dtype=float)
    if xy is not None:
        frame.insert(0, POINT_Y, xy[:, 1])
        frame.insert(0, POINT_X, xy[:, 0])
    above = int((frame["train_di"] > ds.attrs["threshold"]).sum())
    text = (
        f"<p>{ds.sizes[TRAIN]} training points; {above} of them with a DI above the threshold "
        "(outliers of the training DI, whose upper whisker the threshold is).</p>"
    )
    table = PageTable("training_di", "Show each training point's DI", frame, md=False, folded=True)
    return PageSection("training", "Training points", text, tables=(table,))


def _settings(ds: xr.Dataset, profile: ErrorProfile | None) -> str:
    """The run's settings in words, then the attrs this page does not know."""
    a = ds.attrs
    rows = [
        (title, code(a[key]))
        for title, key in (("Training table", TRAIN_SOURCE), ("Points assessed", NEW_SOURCE))
        if a.get(key)
    ]
    weights = dict(zip(a.get("features", []), a.get("weights", []), strict=False))
    rows.append(
        ("Features (weight)", html.escape(", ".join(f"{k} ({v:g})" for k, v in weights.items())))
    )
    folds = a.get("n_folds")
    rows.append(
        (
            "Training DI",
            html.escape(
                f"against the points outside each point's fold ({folds} folds)"
                if folds
                else "against every other training point"
            ),
        )
    )
    rows.append(("Definition", html.escape(str(a.get("definition", "")))))
    if profile is not None:
        rows.append(
            (
                "Error profile",
                html.escape(
                    f"{profile.metric} over windows of {profile.window} CV predictions "
                    f"({len(profile.points)} inside the AOA, {profile.n_outside} outside left "
                    "out); cubic B-spline of 6 basis functions, non-decreasing"
                ),
            )
        )
    return settings_table(rows, a, _KNOWN)
