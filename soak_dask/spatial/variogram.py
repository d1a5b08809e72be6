"""``spatial_range``: how far apart rows must be to be independent, from an empirical
semivariogram of the label (or of residuals) on a seeded sample of rows.

1. **Sample** (on the workers): each partition keeps its rows whose seeded hash of their
   coordinates is below the share ``sample / rows`` of the hash range, so the sample depends
   on the seed and the data only, not on the partitions; the ``sample`` rows of smallest hash
   (in hash order, a random order) reach the client.
2. **Semivariogram**: half the mean squared difference of the values of pairs of sampled rows,
   in equal distance bins up to ``max_distance`` (for classes, half the share of pairs of
   different classes: the indicator semivariogram summed over the classes, which is the 0/1
   label's for two). All pairs of 10**6 rows are far too many: each bin takes the pairs of the
   smallest prefix of the sample (a random subset) expected to give it ``max_pairs / n_bins``
   pairs, from a k-d tree; short distances thus take more rows than long ones.
3. **Fit**: nugget + partial sill × a model of unit sill reaching 95 % of it at ``range``
   (exponential, spherical or Gaussian; weighted least squares, weights pairs / distance², as
   gstat's default), by ``scipy.optimize.curve_fit``.
4. **Uncertainty**: a spatial block bootstrap: the sampled rows are cut into square blocks as
   wide as the fitted range, each block drawn a Poisson(1) number of times, each pair weighted
   by the product of its rows' block weights, and the model refitted (``n_boot`` times); the
   interval is the 2.5 and 97.5 percentiles of the refitted ranges. Blocks, not rows, because
   neighbouring rows are correlated: a row bootstrap would understate the uncertainty.
5. **Block size and flattery**: the range rounded up to a round number (1, 1.2, 1.5, 2, 2.5,
   3, 4, 5, 6 or 8 × 10**k), and the share of sampled rows (the first ``FLATTERY_ROWS``)
   within the range of a training row under random K-fold and under folds of blocks of that
   size (``soak_dask.spatial.flattery``).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Literal

import dask
import numpy as np
import pandas as pd
from scipy.optimize import OptimizeWarning, curve_fit
from scipy.spatial import cKDTree
from scipy.spatial.distance import pdist

from ..hashing import salt, seeded_hash
from ..option_checks import checked
from ..schema import DEFAULT_N_FOLDS
from ..split.fold_options import check_n_folds
from ..split.neighbours import coords_of, loo_distance, point_hashes
from ..tables.crs import metric_only, unit_symbol
from .blocks import square_index
from .flattery import block_folds, random_folds, round_up, training_distances

Model = Literal["exponential", "spherical", "gaussian"]
#: Rows of the sample whose pairwise distances estimate how many pairs each bin would get.
CDF_ROWS = 2000
#: Sampled rows whose distances to the nearest row of another fold measure the flattery (a
#: k-d tree of the other folds per fold, per design: 20 trees of 0.9 × these rows for K = 10).
FLATTERY_ROWS = 200_000
#: Pairs a bin's k-d tree query may return (every pair closer than the bin's upper edge), as
#: a multiple of the pairs the bin should get; and the fewest rows a bin's pairs come from.
WORK = 4
MIN_ROWS = 100


def exponential(h: np.ndarray, nugget: float, psill: float, range_: float) -> np.ndarray:
    """Exponential semivariogram, 95 % of the sill at ``range_`` (scale ``range_ / 3``)."""
    return nugget + psill * (1.0 - np.exp(-3.0 * h / range_))


def spherical(h: np.ndarray, nugget: float, psill: float, range_: float) -> np.ndarray:
    """Spherical semivariogram, reaching the sill at ``range_``."""
    r = np.minimum(h / range_, 1.0)
    return nugget + psill * (1.5 * r - 0.5 * r**3)


def gaussian(h: np.ndarray, nugget: float, psill: float, range_: float) -> np.ndarray:
    """Gaussian semivariogram, 95 % of the sill at ``range_`` (scale ``range_ / √3``)."""
    return nugget + psill * (1.0 - np.exp(-3.0 * (h / range_) ** 2))


MODELS = {"exponential": exponential, "spherical": spherical, "gaussian": gaussian}


@dataclass(frozen=True)
class SpatialRange:
    """How far apart rows must be to be independent, from ``spatial_range``.

    Attributes
    ----------
    of : str
        The column whose semivariogram this is.
    kind : {"numeric", "classes"}
        Half squared differences, or half the share of pairs of different classes.
    model : str
    nugget, sill : float
        Semivariance at distance 0+ and at the range (sill = nugget + partial sill).
    range : float
        Effective range: the fitted model reaches 95 % of its partial sill there.
    range_interval : (float, float)
        2.5 and 97.5 percentiles of the range over the block bootstrap.
    block_size : float
        Proposed ``spatial_blocks`` size (``--blocks``): the range rounded up.
    share_random, share_blocks : float
        Shares of sampled rows within ``range`` of a training row (of another fold) under
        random K-fold and under K-fold of blocks of ``block_size``, among the first
        ``FLATTERY_ROWS`` sampled rows.
    median_random, median_blocks : float
        Median distance from a sampled row to its nearest training row, in each design.
    n_folds : int
    n_rows, n_sampled : int
        Rows of the table (with coordinates and a value) and rows sampled.
    max_distance : float
        Largest distance of the semivariogram.
    unit : str
        Unit of the coordinates (distances, range, block size).
    variogram : pandas.DataFrame
        One row per distance bin: ``low``, ``high``, ``distance`` (mean of its pairs),
        ``semivariance``, ``pairs``, ``rows`` (sample prefix its pairs come from), ``fitted``.
    notes : tuple of str
        What limits the estimate (a range at the edge of the semivariogram, coordinates that
        look like degrees...).
    """

    of: str
    kind: str
    model: str
    nugget: float
    sill: float
    range: float
    range_interval: tuple[float, float]
    block_size: float
    share_random: float
    share_blocks: float
    median_random: float
    median_blocks: float
    n_folds: int
    n_rows: int
    n_sampled: int
    max_distance: float
    unit: str
    variogram: pd.DataFrame = field(repr=False, compare=False)
    notes: tuple[str, ...] = ()

    def distance(self, value: float) -> str:
        """``value`` with the unit, when known (``"340 m"``, else ``"340"``)."""
        return f"{value:.3g}" + ("" if self.unit == "coordinate units" else f" {self.unit}")

    @property
    def flattery(self) -> str:
        """The sentence saying how much random folds flatter: test rows near training rows."""
        return (
            f"random folds put {100 * self.share_random:.0f} % of test rows within "
            f"{self.distance(self.range)} of a training row; blocks of "
            f"{self.distance(self.block_size)}: "
            f"{100 * self.share_blocks:.0f} %"
        )

    def __str__(self) -> str:
        low, high = self.range_interval
        lines = [
            f"spatial range of {self.of!r} ({self.model} model, {self.n_sampled:,} of "
            f"{self.n_rows:,} rows sampled, distances in {self.unit}):",
            f"  correlated up to ~{self.distance(self.range)} (95 % block-bootstrap interval "
            f"{low:.3g} to {self.distance(high)}); nugget {self.nugget:.3g}, sill {self.sill:.3g}",
            f"  {self.flattery} ({self.n_folds} folds; median distance to the nearest training "
            f"row {self.distance(self.median_random)} and {self.distance(self.median_blocks)})",
            f"  suggested --blocks {self.block_size:g}",
        ]
        return "\n".join(lines + [f"  note: {note}" for note in self.notes])


@checked("run", only=("seed",))
def spatial_range(
    table: Any,
    *,
    of: str = "label",
    sample: int = 1_000_000,
    max_pairs: int = 1_000_000,
    n_bins: int = 15,
    max_distance: float | None = None,
    model: Model = "exponential",
    n_folds: int = DEFAULT_N_FOLDS,
    n_boot: int = 100,
    unit: str | None = None,
    seed: int = 0,
) -> SpatialRange:
    """The range of spatial autocorrelation of a table's label (or residuals), its
    uncertainty, a block size for spatial CV and how much random folds would flatter.

    Parameters
    ----------
    table : Table
        Loaded with ``coords=(x, y)`` (projected: same units on both axes).
    of : str
        ``"label"`` (the table's label), or a numeric column of ``table.data`` such as model
        residuals (load the table with it as the label, or as a feature, to keep it).
    sample : int
        Rows sampled at most (seeded by ``seed``, the same rows whatever the partitioning).
    max_pairs : int
        Pairs of sampled rows the semivariogram uses at most, about equally per bin.
    n_bins : int
        Equal-width distance bins from 0 to ``max_distance``.
    max_distance : float, optional
        Largest distance; default a third of the diagonal of the sample's extent (gstat's).
    model : {"exponential", "spherical", "gaussian"}
    n_folds : int
        K of the folds whose flattery is measured.
    n_boot : int
        Block-bootstrap refits for the range's interval.
    unit : str, optional
        Unit of the coordinates (e.g. ``"m"``), for printouts and plots; default: the unit
        of the table's CRS (``Table.crs``), else "coordinate units". A table whose CRS is
        geographic (degrees) is refused: project it first.
    seed : int

    Returns
    -------
    SpatialRange
        Prints the range, its interval, the block size and the flattery sentence.

    Examples
    --------
    >>> import soak_dask as sd
    >>> df = sd.gaussian_random_field((40, 40), 8.0, seed=4)  # effective range 8
    >>> df["band"] = 1.0
    >>> res = sd.spatial_range(sd.load_table(df, label="value", coords=["x", "y"]), n_boot=0)
    >>> res.block_size / 8.0
    1.0
    """
    options = _check_options(table, of, sample, max_pairs, n_bins, max_distance, model, n_boot)
    metric_only(table.crs, "spatial_range")
    column = options["column"]
    n_folds = check_n_folds(n_folds)
    n_rows, rows = range_sample(table, column, sample, seed)
    xy = rows[["x", "y"]].to_numpy()
    values, kind = pair_values(rows["value"], table, column)
    cutoff = default_cutoff(xy) if max_distance is None else float(max_distance)
    pairs = sample_pairs(xy, values, kind, cutoff, n_bins, max_pairs)
    bins = binned(pairs, cutoff, n_bins)
    fit = fit_model(bins, model, cutoff)
    boot = block_bootstrap(xy, pairs, bins, fit, model, cutoff, n_boot, seed)
    size = round_up(fit[2])
    some = xy[:FLATTERY_ROWS]  # a random subset: the sample is in hash order
    near_random = training_distances(some, random_folds(some, n_folds, seed))
    near_blocks = training_distances(some, block_folds(some, size, n_folds, seed))
    unit = unit or unit_symbol(table.crs) or "coordinate units"
    return SpatialRange(
        of=column,
        kind=kind,
        model=model,
        nugget=float(fit[0]),
        sill=float(fit[0] + fit[1]),
        range=float(fit[2]),
        range_interval=boot,
        block_size=size,
        share_random=float(np.mean(near_random <= fit[2])),
        share_blocks=float(np.mean(near_blocks <= fit[2])),
        median_random=float(np.median(near_random)),
        median_blocks=float(np.median(near_blocks)),
        n_folds=n_folds,
        n_rows=n_rows,
        n_sampled=len(rows),
        max_distance=cutoff,
        unit=unit,
        variogram=bins.assign(fitted=MODELS[model](bins["distance"].to_numpy(), *fit)),
        notes=range_notes(fit[2], cutoff, xy, unit),
    )


def _check_options(
    table: Any,
    of: str,
    sample: int,
    max_pairs: int,
    n_bins: int,
    max_distance: float | None,
    model: str,
    n_boot: int,
) -> dict[str, Any]:
    """Refuse bad options before any pass over the data; the column ``of`` names."""
    coords = coords_of(table, "spatial_range")
    if len(coords) != 2:
        raise ValueError(f"spatial_range needs 2 coordinates (x, y); the table has {coords}")
    column = table.label if of == "label" else of
    if not isinstance(column, str) or column not in table.data.columns:
        kept = list(table.data.columns)
        raise ValueError(
            f"of={of!r}: not a column of the table (it holds {kept}); give 'label' or a "
            "column kept by load_table (load residuals as the label or as a feature)"
        )
    if column in coords:
        raise ValueError(f"of={of!r} is a coordinate column: give the label or residuals")
    least = {"sample": (sample, 10), "max_pairs": (max_pairs, 1000), "n_bins": (n_bins, 3)}
    least["n_boot"] = (n_boot, 0)
    for name, (value, low) in least.items():
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
            raise ValueError(f"{name}={value!r}: need an integer of at least {low}")
    if max_distance is not None and (
        isinstance(max_distance, bool)
        or not isinstance(max_distance, int | float)
        or not max_distance > 0
        or not math.isfinite(max_distance)
    ):
        raise ValueError(f"max_distance={max_distance!r}: need a positive number (or None)")
    if model not in MODELS:
        raise ValueError(f"model={model!r}: choose one of {sorted(MODELS)}")
    return {"column": column}


def _part_counts(part: pd.DataFrame, coords: tuple, column: str) -> tuple[int, int, int]:
    """Rows of a partition, rows with a coordinate not finite, rows missing ``column``."""
    xy = part[list(coords)].to_numpy(dtype=np.float64, na_value=np.nan)
    return len(part), int((~np.isfinite(xy)).any(axis=1).sum()), int(part[column].isna().sum())


def _part_sample(
    part: pd.DataFrame, coords: tuple, column: str, seed: int, limit: np.uint64
) -> pd.DataFrame:
    """A partition's rows whose seeded hash of coordinates is at most ``limit``."""
    xy = part[list(coords)].to_numpy(dtype=np.float64)
    h = point_hashes(xy, seed, "spatial_range")
    keep = h <= limit
    return pd.DataFrame(
        {
            "hash": h[keep],
            "x": xy[keep, 0],
            "y": xy[keep, 1],
            "value": part[column].to_numpy()[keep],
        }
    )


def range_sample(table: Any, column: str, sample: int, seed: int) -> tuple[int, pd.DataFrame]:
    """The table's rows with coordinates and ``column`` (``n``), and the ``sample`` of
    smallest seeded hash (columns ``x``, ``y``, ``value``, in hash order), drawn on the
    workers; rows with a coordinate not finite or ``column`` missing are refused, counted."""
    coords = table.coords
    parts = table.data[[*coords, column]].to_delayed()
    counts = np.array(dask.compute(*[dask.delayed(_part_counts)(p, coords, column) for p in parts]))
    n, bad, missing = counts.sum(axis=0) if len(counts) else (0, 0, 0)
    if bad or missing:
        raise ValueError(
            f"spatial_range: {bad:,} rows have a coordinate ({', '.join(coords)}) that is not "
            f"finite and {missing:,} rows miss {column!r}; drop or fix those rows first"
        )
    if n < 10:
        raise ValueError(f"spatial_range: the table has {n} rows; a semivariogram needs more")
    # 1.2 × the expected share: the sample is then short of ``sample`` rows only by chance.
    limit = np.uint64(min(2**64 - 1, int(2**64 * min(1.0, 1.2 * sample / n))))
    done = dask.compute(
        *[dask.delayed(_part_sample)(p, coords, column, seed, limit) for p in parts]
    )
    rows = pd.concat(done, ignore_index=True).sort_values(["hash", "x", "y"], kind="stable")
    return int(n), rows.head(sample).drop(columns="hash").reset_index(drop=True)


def pair_values(values: pd.Series, table: Any, column: str) -> tuple[np.ndarray, str]:
    """The sampled values as floats (numeric) or class codes (a classification table's label,
    or a column that is not numeric), and which."""
    numeric = pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(
        values.dtype
    )
    if column == table.label and table.task == "classification" or not numeric:
        return pd.factorize(values, sort=True)[0].astype(np.float64), "classes"
    return values.to_numpy(dtype=np.float64), "numeric"


def default_cutoff(xy: np.ndarray) -> float:
    """A third of the diagonal of the points' extent (gstat's default cutoff)."""
    diagonal = float(np.hypot(*np.ptp(xy, axis=0)))
    if not diagonal > 0:
        raise ValueError("spatial_range: every sampled row is at one point; no distances")
    return diagonal / 3.0


def prefix_rows(share: float, within: float, n: int, target: float) -> int:
    """Rows of the sample's prefix whose pairs give a bin about ``target`` pairs, when the bin
    holds ``share`` of all pairs and ``within`` lie closer than its upper edge (all of which
    the k-d tree returns): at most ``WORK × target`` of those, at least ``MIN_ROWS`` rows."""
    rows = [n]
    if share > 0:
        rows.append(np.sqrt(2 * target / share))
    if within > 0:
        rows.append(np.sqrt(2 * WORK * target / within))
    return int(min(n, max(MIN_ROWS, min(rows))))


def sample_pairs(
    xy: np.ndarray, values: np.ndarray, kind: str, cutoff: float, n_bins: int, max_pairs: int
) -> pd.DataFrame:
    """Pairs (``i``, ``j`` rows of ``xy``, ``bin``, ``distance``, ``gamma``) for each distance
    bin, from the smallest prefix of the rows expected to give it ``max_pairs / n_bins``
    (``prefix_rows``, from the distances between the first ``CDF_ROWS`` rows)."""
    edges = np.linspace(0.0, cutoff, n_bins + 1)
    ref = pdist(xy[:CDF_ROWS])
    cdf = np.searchsorted(np.sort(ref), edges, side="left") / max(len(ref), 1)
    target = max_pairs / n_bins
    trees: dict[int, cKDTree] = {}
    found = []
    for b in range(n_bins):
        m = prefix_rows(cdf[b + 1] - cdf[b], cdf[b + 1], len(xy), target)
        tree = trees.setdefault(m, cKDTree(xy[:m]))
        ij = tree.query_pairs(edges[b + 1], output_type="ndarray")
        d = np.hypot(*(xy[ij[:, 0]] - xy[ij[:, 1]]).T)
        keep = d >= edges[b] if b else d > 0  # a pair at one point says nothing of distance
        ij, d = ij[keep], d[keep]
        diff = values[ij[:, 0]] - values[ij[:, 1]]
        gamma = 0.5 * (diff != 0) if kind == "classes" else 0.5 * diff**2
        found.append(
            pd.DataFrame(
                {"i": ij[:, 0], "j": ij[:, 1], "bin": b, "distance": d, "gamma": gamma, "rows": m}
            )
        )
    return pd.concat(found, ignore_index=True)


def binned(pairs: pd.DataFrame, cutoff: float, n_bins: int) -> pd.DataFrame:
    """The semivariogram of ``pairs``: one row per distance bin that has pairs."""
    edges = np.linspace(0.0, cutoff, n_bins + 1)
    g = pairs.groupby("bin")
    out = pd.DataFrame(
        {
            "distance": g["distance"].mean(),
            "semivariance": g["gamma"].mean(),
            "pairs": g.size(),
            "rows": g["rows"].first(),
        }
    )
    out.insert(0, "high", edges[out.index + 1])
    out.insert(0, "low", edges[out.index])
    if len(out) < 3:
        raise ValueError(
            f"spatial_range: only {len(out)} distance bins up to {cutoff:g} have pairs of "
            "sampled rows; give a larger max_distance or sample"
        )
    return out.reset_index()


def _weighted_fit(
    model: str, bins: pd.DataFrame, semivariance: np.ndarray, start: tuple, cutoff: float
) -> tuple[np.ndarray, float]:
    """Parameters (nugget, partial sill, range) fitted to ``semivariance`` by weighted least
    squares (weights pairs / distance²), and the weighted residual sum of squares."""
    h, n = bins["distance"].to_numpy(), bins["pairs"].to_numpy()
    sigma = h / np.sqrt(n)
    top = max(float(semivariance.max()), 1e-12)
    bounds = ([0.0, 0.0, cutoff * 1e-3], [2 * top, 4 * top, 10 * cutoff])
    start = np.clip(start, [b + 1e-12 for b in bounds[0]], [b * 0.99 for b in bounds[1]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OptimizeWarning)
        p, _ = curve_fit(MODELS[model], h, semivariance, p0=start, sigma=sigma, bounds=bounds)
    cost = float(np.sum(((MODELS[model](h, *p) - semivariance) / sigma) ** 2))
    return p, cost


def fit_model(bins: pd.DataFrame, model: str, cutoff: float) -> np.ndarray:
    """Nugget, partial sill and range of ``model`` fitted to the semivariogram ``bins``: the
    best of starts at ranges of a sixth, a third and two thirds of ``cutoff``."""
    g = bins["semivariance"].to_numpy()
    first, top = float(g[0]), float(g.max())
    fits = []
    for share in (1 / 6, 1 / 3, 2 / 3):
        try:
            fits.append(
                _weighted_fit(model, bins, g, (first / 2, top - first / 2, share * cutoff), cutoff)
            )
        except RuntimeError:  # this start did not converge; the others may
            continue
    if not fits:
        raise ValueError(
            f"spatial_range: the {model} model did not fit the semivariogram (its values "
            f"{np.round(g, 4).tolist()}); try another model or max_distance"
        )
    return min(fits, key=lambda f: f[1])[0]


def block_bootstrap(
    xy: np.ndarray,
    pairs: pd.DataFrame,
    bins: pd.DataFrame,
    fit: np.ndarray,
    model: str,
    cutoff: float,
    n_boot: int,
    seed: int,
) -> tuple[float, float]:
    """2.5 and 97.5 percentiles of the range refitted with Poisson(1) weights on square blocks
    of the sampled rows as wide as the fitted range (see the module's docstring)."""
    if n_boot == 0:
        return (math.nan, math.nan)
    index = np.column_stack(square_index(*xy.T, fit[2], (0.0, 0.0)))
    block = np.unique(index, axis=0, return_inverse=True)[1].ravel()
    # A draw weighs a pair by its two blocks only: sum the pairs per (block, block, bin) once.
    slot = np.searchsorted(bins["bin"].to_numpy(), pairs["bin"].to_numpy())
    keys = pd.DataFrame(
        {"a": block[pairs["i"].to_numpy()], "b": block[pairs["j"].to_numpy()], "slot": slot}
    )
    cells = keys.assign(gamma=pairs["gamma"].to_numpy()).groupby(["a", "b", "slot"])["gamma"]
    cells = cells.agg(["sum", "size"]).reset_index()
    a, b, s = (cells[c].to_numpy() for c in ("a", "b", "slot"))
    total, count = cells["sum"].to_numpy(), cells["size"].to_numpy(dtype=np.float64)
    rng = np.random.default_rng(int(seeded_hash(seed, salt("spatial_range_bootstrap"))[0]))
    ranges = []
    for _ in range(n_boot):
        w = rng.poisson(1.0, block.max() + 1).astype(np.float64)
        pw = w[a] * w[b]
        n = np.bincount(s, pw * count, len(bins))
        if (n == 0).any():  # a bin lost every pair: this draw has no semivariogram there
            continue
        g = np.bincount(s, pw * total, len(bins)) / n
        try:
            ranges.append(_weighted_fit(model, bins, g, tuple(fit), cutoff)[0][2])
        except RuntimeError:
            continue
    if len(ranges) < n_boot / 2:
        return (math.nan, math.nan)
    low, high = np.percentile(ranges, [2.5, 97.5])
    return (float(low), float(high))


def range_notes(range_: float, cutoff: float, xy: np.ndarray, unit: str) -> tuple[str, ...]:
    """What limits the estimate: a range beyond the semivariogram's distances, or coordinates
    that look like degrees of longitude and latitude."""
    notes = []
    if range_ > 0.9 * cutoff:
        notes.append(
            f"the range is at or beyond the largest distance measured ({cutoff:.3g} {unit}): the "
            "correlation may reach further; give a larger max_distance (soak info "
            "--spatial-max-distance; the block size is then a lower bound)"
        )
    # Degrees: within ±180 / ±90, and rows closer than 0.1 (11 km of latitude) to their
    # neighbours, where a grid of unit cells or metres has them 1 or more apart.
    lon_lat = (np.abs(xy[:, 0]) <= 180).all() and (np.abs(xy[:, 1]) <= 90).all()
    if unit == "coordinate units" and lon_lat and np.median(loo_distance(xy)) < 0.1:
        notes.append(
            "the coordinates look like longitude and latitude in degrees: a degree of "
            "longitude is shorter than one of latitude away from the equator, so distances are "
            "distorted; project the table (e.g. to UTM) for distances in metres"
        )
    return tuple(notes)
