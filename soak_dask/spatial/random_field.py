"""``gaussian_random_field``: a seeded Gaussian random field on a grid with an exponential
covariance of known range, for checking range estimates (``spatial_range``) on a scene whose
truth is known.

The field is drawn exactly by circulant embedding (Dietrich & Newsam 1997): the covariance
on a grid twice the size in each direction, wrapped, is diagonalised by the 2-D FFT; white
noise scaled by the square root of its eigenvalues and transformed back has that covariance,
and the first quarter of the grid has the covariance of the unwrapped field (every offset
within it is shorter than half the embedding).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..option_checks import checked


@checked("run", only=("seed",))
def gaussian_random_field(
    shape: tuple[int, int],
    range_: float,
    *,
    spacing: float = 1.0,
    sill: float = 1.0,
    nugget: float = 0.0,
    seed: int = 0,
    name: str = "value",
) -> pd.DataFrame:
    """A Gaussian random field with covariance ``sill · exp(-3 h / range_)`` (plus a nugget:
    independent noise of variance ``nugget``) on a grid, one row per cell.

    Parameters
    ----------
    shape : (int, int)
        Rows and columns of the grid (at least 2 each).
    range_ : float
        Effective (practical) range in the units of ``spacing``: the distance at which the
        correlation falls to 5 % (exp(-3)); the exponential's scale is ``range_ / 3``.
    spacing : float
        Distance between neighbouring cell centres.
    sill, nugget : float
        Variance of the correlated part and of the independent noise added to it.
    seed : int
        Seed of the white noise: the same seed gives the same field.
    name : str
        Name of the value column.

    Returns
    -------
    pandas.DataFrame
        Columns ``x``, ``y`` (cell centres, from ``spacing / 2``) and ``name``, row by row.

    Examples
    --------
    >>> df = gaussian_random_field((4, 5), 3.0, seed=1)
    >>> df.shape, list(df.columns), df.equals(gaussian_random_field((4, 5), 3.0, seed=1))
    ((20, 3), ['x', 'y', 'value'], True)
    """
    ny, nx = _check_shape(shape)
    for option, value in (("range_", range_), ("spacing", spacing), ("sill", sill)):
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            raise ValueError(f"{option}={value!r}: need a positive number")
    if isinstance(nugget, bool) or not isinstance(nugget, int | float) or not nugget >= 0:
        raise ValueError(f"nugget={nugget!r}: need a number of at least 0")
    rng = np.random.default_rng(seed)
    m, n = 2 * ny, 2 * nx
    dy = np.minimum(np.arange(m), m - np.arange(m)) * spacing
    dx = np.minimum(np.arange(n), n - np.arange(n)) * spacing
    cov = sill * np.exp(-3.0 * np.hypot(dy[:, None], dx[None, :]) / range_)
    # The exponential's embedding is non-negative definite; rounding leaves tiny negatives.
    eigen = np.clip(np.fft.fft2(cov).real, 0.0, None)
    noise = rng.standard_normal((m, n)) + 1j * rng.standard_normal((m, n))
    field = np.fft.fft2(np.sqrt(eigen / (m * n)) * noise).real[:ny, :nx]
    if nugget:
        field = field + rng.standard_normal((ny, nx)) * np.sqrt(nugget)
    y, x = np.meshgrid(
        (np.arange(ny) + 0.5) * spacing, (np.arange(nx) + 0.5) * spacing, indexing="ij"
    )
    return pd.DataFrame({"x": x.ravel(), "y": y.ravel(), name: field.ravel()})


def _check_shape(shape: tuple[int, int]) -> tuple[int, int]:
    ok = isinstance(shape, tuple | list) and len(shape) == 2
    if not ok or not all(
        isinstance(s, int | np.integer) and not isinstance(s, bool) and s >= 2 for s in shape
    ):
        raise ValueError(f"shape={shape!r}: need (rows, columns), two integers of at least 2")
    return int(shape[0]), int(shape[1])
