"""Exact sums of float64 values: a test block's sums of losses are the same number whatever
partitions its rows came in and however their pieces were merged (a float sum depends on its
order), and are rounded once, when the measure is finished."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

#: Bits of a float64's significand; each value is an integer of this many bits times a power
#: of two, and its two halves of ``_HALF`` bits are summed in int64 without overflow.
_BITS = 53
_HALF = 26


@dataclass(frozen=True)
class ExactSum:
    """The exact sum ``mantissa`` × 2 ** ``exponent`` of some float64 values (``special``:
    NaN or an infinity, where a value was one). Adds exactly (``+``, ``sum``); ``float()``
    rounds it once."""

    mantissa: int = 0
    exponent: int = 0
    special: float | None = None

    @classmethod
    def of(cls, values: np.ndarray) -> ExactSum:
        """The exact sum of ``values``."""
        x = np.asarray(values, dtype=np.float64).ravel()
        if not np.isfinite(x).all():
            return cls(special=float(np.sum(x)))
        x = x[x != 0]
        if not len(x):
            return cls()
        significand, exponent = np.frexp(x)
        whole = (significand * 2.0**_BITS).astype(np.int64)  # exact: 53 bits
        exps, at = np.unique(exponent, return_inverse=True)
        high = np.zeros(len(exps), dtype=np.int64)
        low = np.zeros(len(exps), dtype=np.int64)
        np.add.at(high, at, whole >> _HALF)
        np.add.at(low, at, whole & ((1 << _HALF) - 1))
        base = int(exps[0])
        total = sum(
            ((int(h) << _HALF) + int(lo)) << (int(e) - base)
            for h, lo, e in zip(high, low, exps, strict=True)
        )
        return cls(total, base - _BITS)

    @classmethod
    def of_squares(cls, values: np.ndarray) -> ExactSum:
        """The exact sum of the squares of ``values`` (each square split into its rounded
        value and its rounding error, Dekker's product, so none is lost), where no square
        underflows (below about 1e-300)."""
        x = np.asarray(values, dtype=np.float64).ravel()
        square = x * x
        with np.errstate(invalid="ignore", over="ignore"):
            scaled = 134217729.0 * x  # 2 ** 27 + 1: Veltkamp's split into two 26-bit halves
            high = scaled - (scaled - x)
            low = x - high
            error = ((high * high - square) + 2.0 * high * low) + low * low
        if not np.isfinite(square).all():
            return cls(special=float(np.sum(square)))
        return cls.of(np.concatenate([square, error]))

    def __add__(self, other: object) -> ExactSum:
        if isinstance(other, int | float):
            other = ExactSum.of(np.array([other], dtype=np.float64))
        if not isinstance(other, ExactSum):
            return NotImplemented
        if self.special is not None or other.special is not None:
            return ExactSum(special=(self.special or 0.0) + (other.special or 0.0))
        base = min(self.exponent, other.exponent)
        total = (self.mantissa << (self.exponent - base)) + (
            other.mantissa << (other.exponent - base)
        )
        return ExactSum(total, base)

    __radd__ = __add__

    def fraction(self) -> Fraction:
        """The sum, exactly (finite sums only)."""
        if self.exponent >= 0:
            return Fraction(self.mantissa << self.exponent)
        return Fraction(self.mantissa, 1 << -self.exponent)

    def __float__(self) -> float:
        return self.special if self.special is not None else float(self.fraction())

    def __truediv__(self, n: float) -> float:
        return float(self) / n
