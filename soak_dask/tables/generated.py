"""Generated pixel tables: a raster-like labelled table with real region structure, the data of
the demo (``soak demo``), the tests, the benchmarks and the tutorials.

The table imitates the AZtrees pixel table of the SOAK paper (labelled satellite pixels,
regions as subsets, hand-drawn polygons as groups) but is generated, so the demo and the
tests run anywhere and at any size.

How it is made (all vectorised numpy, deterministic in ``seed``):

1. The scene is a grid of square cells, cut into rectangular tiles: one tile per region
   (north to south, west to east). Each polygon occupies its own cell, so polygons never
   overlap and never cross a region border.
2. Polygon sizes are heavy-tailed (a few large polygons, many small ones, as when an analyst
   digitises training areas). Each polygon is a compact, slightly irregular ellipse of
   neighbouring pixels.
3. In each region, whole polygons are labelled "tree" until the tree pixels reach
   ``tree_fraction`` of the region; each region gets at least one polygon of each label.
4. Each pixel has a canopy cover (high in tree polygons, low elsewhere) and a few latent
   surface properties (vegetation, soil brightness, moisture, other) that mix a per-region
   "tree" and "other" signature by canopy cover, plus a per-polygon effect (pixels of one
   polygon look alike) and per-pixel noise. Bands are smooth spectral loadings of the latent
   properties, so neighbouring bands are strongly correlated.
5. ``region_shift`` scales how far each region's tree and other signatures (and a flat
   per-region brightness offset) move away from the shared ones. At 0 the regions are
   exchangeable, so a model trained on one region predicts another as well as its own; larger
   values make the label-to-band relationship region-specific.
"""

from __future__ import annotations

import json
import math
import numbers
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..io.outdir import self_marked, shown_names

__all__ = ["make_pixel_table", "write_pixel_parquet"]

#: Region names by number of regions, laid out as rows of tiles from north to south.
_NAMED_LAYOUTS: dict[int, list[list[str]]] = {
    1: [["R1"]],  # not "all": that word is a SOAK train_type
    2: [["N"], ["S"]],
    3: [["NW", "NE"], ["S"]],  # as AZtrees "region3": S is about half the scene
    4: [["NW", "NE"], ["SW", "SE"]],
}
_TASKS = ("classification", "regression")
_LABELS = ("other", "tree")  # index 1 = tree

_PIXEL_SIZE = 10.0  # metres, as Sentinel-2's 10 m bands
_X0, _Y0 = 400_000.0, 3_900_000.0  # UTM-like origin (upper-left corner of the scene)
_CELL_OCCUPANCY = 0.4  # fraction of cells holding a polygon: polygons lie scattered

# Latent surface properties: vegetation, soil brightness, moisture, other.
_MU_OTHER = np.array([0.0, 1.0, 0.0, 0.0])
_MU_TREE = np.array([1.0, 0.35, 0.8, 0.5])
# Per unit of region_shift: range of the background's vegetation level across regions (a
# greener background moves "other" pixels towards trees), sd of each region's tree signature,
# and range of the flat brightness offset (reflectance units).
_GREENNESS_STEP = 0.25
_TREE_SD = 0.15
_BRIGHTNESS_STEP = 0.03
_POLYGON_SD = 0.12  # per-polygon latent effect
_PIXEL_SD = 0.15  # per-pixel latent noise
_SENSOR_SD = 0.01  # per-band noise (reflectance units)


def make_pixel_table(
    n_pixels: int = 20_000,
    n_regions: int = 3,
    n_bands: int = 12,
    n_polygons: int | None = None,
    tree_fraction: float = 0.12,
    region_shift: float = 1.0,
    seed: int = 0,
    task: str = "classification",
) -> pd.DataFrame:
    """Generate a labelled pixel table with regions, polygons and band features.

    Parameters
    ----------
    n_pixels : int, default 20_000
        Number of labelled pixels (rows).
    n_regions : int, default 3
        Number of regions (the SOAK subsets): spatial tiles of the scene named
        ``"R1"`` (1), ``"N", "S"`` (2), ``"NW", "NE", "S"`` (3), ``"NW", "NE", "SW", "SE"``
        (4) and ``"R1"``, ``"R2"``, ... beyond.
    n_bands : int, default 12
        Number of band features ``B01``, ``B02``, ... (ordered like wavelengths; three
        digits from 100 bands).
    n_polygons : int or None, default None
        Number of polygons (the groups). None means about one per 32 pixels (as AZtrees)
        and at least two per region. Must be at least ``2 * n_regions`` (each region needs
        a tree and an other polygon) and at most ``n_pixels``.
    tree_fraction : float, default 0.12
        Target fraction of tree pixels in each region, in (0, 1). Whole polygons are
        labelled, so the realised fraction is close to, not exactly, this value.
    region_shift : float, default 1.0
        How much the label-to-band relationship and brightness differ between regions
        (>= 0). 0 makes regions exchangeable: a model trained on one region predicts the
        others as well as its own. About 1 gives differences like AZtrees' (a model from
        another region is a few % error worse on average, much worse for some pairs);
        3 gives strong differences.
    seed : int, default 0
        Seed of the numpy random Generator. The same arguments and seed give the same table.
        Geometry, labels and noise do not depend on ``region_shift`` or ``task``.
    task : {"classification", "regression"}, default "classification"
        Classification gives ``label`` as strings ``"tree"`` / ``"other"``; regression
        gives ``label`` as the pixel's canopy cover, a float in [0, 1].

    Returns
    -------
    pandas.DataFrame
        One row per pixel, ordered by polygon and, within a polygon, by raster row and
        column, with columns:

        - ``x``, ``y`` (float64): pixel centre in metres (10 m pixels); location, not a
          feature.
        - ``region`` (str): the subset.
        - ``polygon`` (int64): group id, numbered north to south; all pixels of a polygon
          share one region and (for classification) one label.
        - ``label``: str ``"tree"``/``"other"`` or float64 canopy cover.
        - ``B01`` ... (float32): reflectance-like band values.

    Raises
    ------
    ValueError
        If an argument is out of range; the message names the parameter, its value and
        the fix.

    See Also
    --------
    write_pixel_parquet : write such a table as a directory of Parquet files.

    Notes
    -----
    The generative model is described in the module docstring. Generation is vectorised:
    about 1 s and 100 MB per million pixels with 12 bands.

    Examples
    --------
    >>> from soak_dask.tables.generated import make_pixel_table
    >>> df = make_pixel_table(n_pixels=2_000, n_bands=4, seed=1)
    >>> df.shape
    (2000, 9)
    >>> list(df.columns)
    ['x', 'y', 'region', 'polygon', 'label', 'B01', 'B02', 'B03', 'B04']
    >>> sorted(df["region"].unique())
    ['NE', 'NW', 'S']
    >>> int(df.groupby("polygon")[["region", "label"]].nunique().max().max())
    1
    >>> bool(0.08 < (df["label"] == "tree").mean() < 0.16)
    True
    >>> make_pixel_table(n_pixels=2_000, n_bands=4, seed=1).equals(df)
    True
    """
    n_polygons = _check_args(
        n_pixels, n_regions, n_bands, n_polygons, tree_fraction, region_shift, seed, task
    )
    rng = np.random.default_rng(seed)

    # --- geometry: tiles -> cells -> polygons ---------------------------------------------
    layout = _layout(n_regions)
    sizes = _polygon_sizes(rng, n_pixels, n_polygons)
    cell_row, cell_col, poly_region = _place_polygons(rng, layout, n_polygons)
    # Sizes are iid, so giving them out in id order after placement is still random.
    poly_label = _label_polygons(rng, sizes, poly_region, n_regions, tree_fraction)
    pix_poly, dr, dc, cell_size = _polygon_pixels(rng, sizes)

    # Centre each blob at a random spot of its cell, far enough from the edges to stay inside.
    radius = np.ceil(np.sqrt(_n_candidates(sizes) / np.pi)).astype(np.int64) + 1
    centre_r = rng.integers(radius, cell_size - radius, endpoint=True)
    centre_c = rng.integers(radius, cell_size - radius, endpoint=True)
    row = (cell_row * cell_size + centre_r)[pix_poly] + dr
    col = (cell_col * cell_size + centre_c)[pix_poly] + dc

    # --- pixel values ----------------------------------------------------------------------
    pix_region = poly_region[pix_poly]
    pix_tree = poly_label[pix_poly]
    # Canopy cover: mostly high in tree polygons, mostly near zero elsewhere.
    cover = rng.beta(np.where(pix_tree, 6.0, 0.6), np.where(pix_tree, 2.0, 9.0))
    bands = _bands(rng, cover, pix_poly, pix_region, n_regions, n_polygons, n_bands, region_shift)

    # Rows come out ordered by polygon id and, within a polygon, in raster-reading order.
    region_names = np.array([name for tiles in layout for name in tiles], dtype=object)
    columns: dict[str, Any] = {
        "x": _X0 + _PIXEL_SIZE * (col + 0.5),
        "y": _Y0 - _PIXEL_SIZE * (row + 0.5),
        "region": pd.array(region_names[pix_region], dtype="str"),
        "polygon": pix_poly.astype(np.int64),
    }
    if task == "classification":
        labels = np.array(_LABELS, dtype=object)[pix_tree.astype(np.intp)]
        columns["label"] = pd.array(labels, dtype="str")
    else:
        columns["label"] = cover.astype(np.float64)
    width = max(2, len(str(n_bands)))
    for j in range(n_bands):
        columns[f"B{j + 1:0{width}d}"] = bands[:, j]
    return pd.DataFrame(columns)


def _check_pixel_dir(path: Path, overwrite: bool) -> list[Path]:
    """The rule of every output (``soak_dask.io.outdir``) for a Parquet directory, whose
    files carry their own mark (``soak_dask.demo`` in their schema metadata) rather than a
    manifest, which a Parquet reader would take for data: refuse a file, a directory holding
    anything else, and without ``overwrite`` the demo's own earlier files; those files."""
    if path.exists() and not path.is_dir():
        raise FileExistsError(f"path={str(path)!r} exists and is not a directory.")
    ours, foreign = self_marked(path, ".parquet", _is_demo_file)
    if foreign:
        raise FileExistsError(
            f"Directory {str(path)!r} holds {shown_names(foreign)}, which write_pixel_parquet "
            "did not write; it writes only into a new or empty directory or over its own "
            "files: choose another path."
        )
    if ours and not overwrite:
        raise FileExistsError(
            f"Directory {str(path)!r} holds an earlier demo table; refusing to overwrite it. "
            "Pass overwrite=True to replace its Parquet files, or choose another path."
        )
    return ours


def _is_demo_file(path: Path) -> bool:
    try:
        return b"soak_dask.demo" in (pq.read_schema(path).metadata or {})
    except (OSError, pa.ArrowInvalid):
        return False


def write_pixel_parquet(
    path: str | Path, n_files: int = 4, overwrite: bool = False, **kwargs: Any
) -> Path:
    """Generate a pixel table and write it as a directory of Parquet files.

    Parameters
    ----------
    path : str or pathlib.Path
        Directory to write. Created if missing. An existing non-empty directory must hold
        only files an earlier call wrote (marked in their schema metadata), and is written
        to only with ``overwrite=True``.
    n_files : int, default 4
        Number of Parquet files ``part-00000.parquet``, ...; each holds a contiguous run of
        rows (so, like per-tile exports, mostly whole polygons of a part of the scene).
    overwrite : bool, default False
        If True, delete the Parquet files an earlier call wrote in ``path`` (only those)
        before writing.
    **kwargs
        Passed to ``make_pixel_table`` (``n_pixels``, ``n_regions``, ``seed``, ...).
        They are also stored as JSON in each file's schema metadata under the key
        ``soak_dask.tables.generated``.

    Returns
    -------
    pathlib.Path
        The directory written.

    Raises
    ------
    FileExistsError
        If ``path`` is a file, holds files this function did not write, or holds its earlier
        files and ``overwrite`` is False.
    ValueError
        If ``n_files`` or an argument of ``make_pixel_table`` is invalid.

    Examples
    --------
    >>> import tempfile, pandas as pd
    >>> from soak_dask.tables.generated import write_pixel_parquet
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     out = write_pixel_parquet(tmp + "/pixels", n_files=3, n_pixels=1_500, seed=2)
    ...     print(sorted(p.name for p in out.iterdir()))
    ...     print(pd.read_parquet(out).shape)
    ['part-00000.parquet', 'part-00001.parquet', 'part-00002.parquet']
    (1500, 17)
    """
    path = Path(path)
    if isinstance(n_files, bool) or not isinstance(n_files, numbers.Integral) or n_files < 1:
        raise ValueError(f"n_files must be an integer >= 1, got n_files={n_files!r}.")
    n_pixels = kwargs.get("n_pixels", 20_000)
    if isinstance(n_pixels, numbers.Integral) and n_files > n_pixels:
        raise ValueError(
            f"n_files={n_files} is larger than n_pixels={n_pixels}: every file needs at "
            "least one row; use fewer files or more pixels."
        )
    earlier = _check_pixel_dir(path, overwrite)
    # Generate (and validate) before deleting anything, so a bad argument destroys nothing.
    df = make_pixel_table(**kwargs)
    path.mkdir(parents=True, exist_ok=True)
    for old in earlier:
        old.unlink()

    params = json.dumps(dict(sorted(kwargs.items())), default=str)
    bounds = np.linspace(0, len(df), n_files + 1).round().astype(np.int64)
    for i in range(n_files):
        table = pa.Table.from_pandas(df.iloc[bounds[i] : bounds[i + 1]], preserve_index=False)
        meta = dict(table.schema.metadata or {})
        meta[b"soak_dask.demo"] = params.encode()
        pq.write_table(table.replace_schema_metadata(meta), path / f"part-{i:05d}.parquet")
    return path


# --------------------------------------------------------------------------------------------
# helpers


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _check_args(
    n_pixels: Any,
    n_regions: Any,
    n_bands: Any,
    n_polygons: Any,
    tree_fraction: Any,
    region_shift: Any,
    seed: Any,
    task: Any,
) -> int:
    """Validate the arguments of make_pixel_table; return the number of polygons."""
    if not _is_int(n_regions) or n_regions < 1:
        raise ValueError(f"n_regions must be an integer >= 1, got n_regions={n_regions!r}.")
    if not _is_int(n_pixels) or n_pixels < 1:
        raise ValueError(f"n_pixels must be an integer >= 1, got n_pixels={n_pixels!r}.")
    if n_pixels < 2 * n_regions:
        raise ValueError(
            f"n_pixels={n_pixels} is too small for n_regions={n_regions}: each region needs a "
            f"tree and an other polygon of at least one pixel; use n_pixels >= {2 * n_regions} "
            "or fewer regions."
        )
    if not _is_int(n_bands) or n_bands < 1:
        raise ValueError(f"n_bands must be an integer >= 1, got n_bands={n_bands!r}.")
    if n_polygons is None:
        n_polygons = min(n_pixels, max(2 * n_regions, round(n_pixels / 32)))
    elif not _is_int(n_polygons):
        raise ValueError(f"n_polygons must be an integer or None, got n_polygons={n_polygons!r}.")
    elif n_polygons < 2 * n_regions:
        raise ValueError(
            f"n_polygons={n_polygons} is too small for n_regions={n_regions}: each region needs "
            f"a tree and an other polygon; use n_polygons >= {2 * n_regions} or None."
        )
    elif n_polygons > n_pixels:
        raise ValueError(
            f"n_pixels={n_pixels} is too small for n_polygons={n_polygons}: every polygon needs "
            "at least one pixel; use more pixels, fewer polygons, or n_polygons=None."
        )
    if (
        not isinstance(tree_fraction, numbers.Real)
        or isinstance(tree_fraction, bool)
        or not 0 < tree_fraction < 1
    ):
        raise ValueError(
            f"tree_fraction must be a number strictly between 0 and 1, "
            f"got tree_fraction={tree_fraction!r}."
        )
    if (
        not isinstance(region_shift, numbers.Real)
        or isinstance(region_shift, bool)
        or not math.isfinite(region_shift)
        or region_shift < 0
    ):
        raise ValueError(
            f"region_shift must be a finite number >= 0 (0 = same pattern in every region), "
            f"got region_shift={region_shift!r}."
        )
    if not _is_int(seed) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got seed={seed!r}.")
    if task not in _TASKS:
        raise ValueError(f"task must be one of {_TASKS}, got task={task!r}.")
    return int(n_polygons)


def _layout(n_regions: int) -> list[list[str]]:
    """Region names as rows of tiles, north to south."""
    if n_regions in _NAMED_LAYOUTS:
        return _NAMED_LAYOUTS[n_regions]
    n_tile_rows = math.isqrt(n_regions)
    per_row = [n_regions // n_tile_rows + (i < n_regions % n_tile_rows) for i in range(n_tile_rows)]
    names = iter(f"R{i + 1}" for i in range(n_regions))
    return [[next(names) for _ in range(k)] for k in per_row]


def _polygon_sizes(rng: np.random.Generator, n_pixels: int, n_polygons: int) -> np.ndarray:
    """Heavy-tailed polygon sizes >= 1 that sum to n_pixels."""
    weights = rng.lognormal(0.0, 1.0, n_polygons)
    return 1 + rng.multinomial(n_pixels - n_polygons, weights / weights.sum())


def _place_polygons(
    rng: np.random.Generator, layout: list[list[str]], n_polygons: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Put each polygon in its own cell of the tile of its region.

    Returns each polygon's cell row, cell column and region index, with polygon ids in
    north-to-south, west-to-east order of their cells. Tiles get polygons in proportion to
    their area (at least two each) and the grid grows until every polygon has a cell.
    """
    side = max(2 * max(len(layout), *(len(t) for t in layout)), 2)
    side = max(side, math.ceil(math.sqrt(n_polygons / _CELL_OCCUPANCY)))
    while True:
        tiles = _tile_cells(layout, side)
        area = np.array([len(r) for r, _ in tiles], dtype=float)
        counts = _allocate(n_polygons, area, minimum=2)
        if np.all(counts <= area):
            break
        side += 1
    rows, cols, regions = [], [], []
    for k, (tile_r, tile_c) in enumerate(tiles):
        pick = rng.choice(len(tile_r), size=counts[k], replace=False)
        rows.append(tile_r[pick])
        cols.append(tile_c[pick])
        regions.append(np.full(counts[k], k, dtype=np.int64))
    cell_row, cell_col, region = (np.concatenate(a) for a in (rows, cols, regions))
    order = np.lexsort((cell_col, cell_row))
    return cell_row[order], cell_col[order], region[order]


def _tile_cells(layout: list[list[str]], side: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Cell coordinates of each tile of a side x side grid, in layout order."""
    row_edges = np.linspace(0, side, len(layout) + 1).round().astype(int)
    tiles = []
    for i, names in enumerate(layout):
        col_edges = np.linspace(0, side, len(names) + 1).round().astype(int)
        for j in range(len(names)):
            r, c = np.meshgrid(
                np.arange(row_edges[i], row_edges[i + 1]),
                np.arange(col_edges[j], col_edges[j + 1]),
                indexing="ij",
            )
            tiles.append((r.ravel(), c.ravel()))
    return tiles


def _allocate(total: int, weights: np.ndarray, minimum: int) -> np.ndarray:
    """Split an integer total proportionally to weights, at least `minimum` each."""
    spare = total - minimum * len(weights)
    exact = spare * weights / weights.sum()
    counts = np.floor(exact).astype(np.int64)
    # Largest remainders get the leftover units (stable order breaks ties deterministically).
    left = spare - counts.sum()
    counts[np.argsort(-(exact - counts), kind="stable")[:left]] += 1
    return counts + minimum


def _label_polygons(
    rng: np.random.Generator,
    sizes: np.ndarray,
    poly_region: np.ndarray,
    n_regions: int,
    tree_fraction: float,
) -> np.ndarray:
    """Label whole polygons tree (True) so each region's tree pixels are near the target."""
    is_tree = np.zeros(len(sizes), dtype=bool)
    for k in range(n_regions):
        ids = rng.permutation(np.flatnonzero(poly_region == k))
        cum = np.cumsum(sizes[ids])
        # The first m polygons of a random order are trees; m = 1..n-1 keeps both labels.
        m = 1 + int(np.argmin(np.abs(cum[:-1] - tree_fraction * cum[-1])))
        is_tree[ids[:m]] = True
    return is_tree


def _n_candidates(sizes: np.ndarray) -> np.ndarray:
    # A disk of this many pixels contains an ellipse of `size` pixels with aspect ratio <= 1.6
    # (needs 1.6**2 = 2.56 x size) plus the jitter of its edge.
    return 3 * sizes + 12


def _polygon_pixels(
    rng: np.random.Generator, sizes: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Compact blobs: each polygon keeps its `size` nearest candidate offsets.

    Distance is elliptical (random orientation and aspect per polygon) plus jitter, so the
    blobs are irregular like hand-drawn polygons. Returns pixel polygon ids, row and column
    offsets from the blob centre, and a cell size that holds the largest blob.
    """
    n_cand = _n_candidates(sizes)
    reach = math.ceil(math.sqrt(n_cand.max() / math.pi)) + 2  # disk radius, with margin
    dr, dc = np.mgrid[-reach : reach + 1, -reach : reach + 1].reshape(2, -1)
    spiral = np.lexsort((np.arctan2(dr, dc), dr * dr + dc * dc))  # offsets by distance
    dr, dc = dr[spiral][: n_cand.max()], dc[spiral][: n_cand.max()]

    poly = np.repeat(np.arange(len(sizes)), n_cand)
    starts = np.cumsum(n_cand) - n_cand
    local = np.arange(len(poly)) - starts[poly]
    cand_r, cand_c = dr[local], dc[local]
    theta = rng.uniform(0.0, np.pi, len(sizes))
    cos, sin = np.cos(theta)[poly], np.sin(theta)[poly]
    aspect = rng.uniform(1.0, 1.6, len(sizes))[poly]
    u = cand_c * cos + cand_r * sin
    v = cand_r * cos - cand_c * sin
    # Wavy outline: the radius varies smoothly with the angle (lobes of 2 and 3 per turn), so
    # each blob stays star-shaped around its centre, and so in one piece.
    phase = rng.uniform(0.0, 2 * np.pi, (2, len(sizes)))[:, poly]
    angle = np.arctan2(v, u)
    wave = 1.0 + 0.12 * np.cos(2 * angle + phase[0]) + 0.08 * np.cos(3 * angle + phase[1])
    dist = np.sqrt((u / aspect) ** 2 + (v * aspect) ** 2) * wave
    dist += rng.uniform(0.0, 0.01, len(poly))  # breaks ties at random
    # One sort by (polygon, distance): the integer part orders polygons, the fraction distance.
    order = np.argsort(poly + dist / (dist.max() + 1.0))
    # Sorting keeps each polygon's run of positions, so `local` is also the rank in its run.
    keep = order[local < sizes[poly]]
    # Within a polygon, raster order (row, then column) as when reading an image.
    span = 2 * reach + 1
    keep = keep[np.argsort((poly[keep] * span + cand_r[keep] + reach) * span + cand_c[keep])]
    radius_max = math.ceil(math.sqrt(n_cand.max() / math.pi)) + 1
    return poly[keep], cand_r[keep], cand_c[keep], 2 * radius_max + 3


def _loadings(rng: np.random.Generator, n_bands: int) -> tuple[np.ndarray, np.ndarray]:
    """Base spectrum (n_bands,) and smooth spectral loadings (4, n_bands) of the latents."""
    t = np.linspace(0.0, 1.0, n_bands) if n_bands > 1 else np.array([0.5])

    def step(centre: float, width: float) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-(t - centre) / width))

    j = np.arange(1, 4)[:, None]
    wiggle = rng.normal(0.0, 1.0, (3, 1)) / j * np.cos(np.pi * j * t + rng.uniform(0, 6, (3, 1)))
    loadings = np.stack(
        [
            0.30 * step(0.4, 0.04) - 0.15 * step(0.75, 0.05) - 0.03,  # vegetation: red edge
            0.08 + 0.08 * t,  # soil brightness, rising with wavelength
            -0.06 * step(0.7, 0.05),  # moisture absorbs the longest bands
            0.03 * wiggle.sum(axis=0),  # anything else, smooth across bands
        ]
    )
    return 0.08 + 0.1 * t, loadings


def _bands(
    rng: np.random.Generator,
    cover: np.ndarray,
    pix_poly: np.ndarray,
    pix_region: np.ndarray,
    n_regions: int,
    n_polygons: int,
    n_bands: int,
    region_shift: float,
) -> np.ndarray:
    """Reflectance-like float32 bands (n_pixels, n_bands)."""
    n_latent = len(_MU_TREE)
    base, loadings = _loadings(rng, n_bands)
    # Region signatures are drawn whatever region_shift is (so the seed fixes them) and scaled
    # by it. Background greenness and brightness take evenly spaced levels in a random order,
    # so regions differ by a similar amount for every seed; tree signatures vary at random.
    greenness = rng.permutation(np.linspace(-1.0, 1.0, n_regions) if n_regions > 1 else [0.0])
    brightness = rng.permutation(np.linspace(-1.0, 1.0, n_regions) if n_regions > 1 else [0.0])
    tree_shift = rng.normal(0.0, 1.0, (n_regions, n_latent))
    mu_other = np.tile(_MU_OTHER, (n_regions, 1))
    mu_other[:, 0] += region_shift * _GREENNESS_STEP * greenness
    mu_tree = _MU_TREE + region_shift * _TREE_SD * tree_shift
    mu_other, mu_tree = mu_other.astype(np.float32), mu_tree.astype(np.float32)
    polygon_effect = rng.normal(0.0, _POLYGON_SD, (n_polygons, n_latent)).astype(np.float32)

    c = cover.astype(np.float32)[:, None]
    latent = (1 - c) * mu_other[pix_region] + c * mu_tree[pix_region]
    latent += polygon_effect[pix_poly]
    latent += _PIXEL_SD * rng.standard_normal(latent.shape, dtype=np.float32)
    bands = latent @ loadings.astype(np.float32)
    bands += base.astype(np.float32)
    bands += (region_shift * _BRIGHTNESS_STEP * brightness).astype(np.float32)[pix_region][:, None]
    bands += _SENSOR_SD * rng.standard_normal(bands.shape, dtype=np.float32)
    return np.maximum(bands, 0.0, out=bands)  # reflectance is never negative
