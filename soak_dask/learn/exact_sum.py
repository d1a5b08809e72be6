"""Exact sums of float64 values: a test block's sums of losses are the same number whatever
partitions its rows came in and however their pieces were merged (a float sum depends on its
order), and are rounded once, when the measure is finished."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from numba import njit

#: Bits of a float64's significand; each value is an integer of this many bits times a power
#: of two, and its two halves (below 2 ** 27 each) are summed in int64 without overflow.
_BITS = 53
_HALF = 26
_LOW = (1 << _HALF) - 1
#: A float64 is its 53-bit significand × 2 ** (its exponent field + ``_BIAS``).
_BIAS = -1075


@njit(cache=True, nogil=True)
def significand_sums(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per exponent field of the finite float64 values ``x``, the sums of their signed
    significands' high and low ``_HALF`` bits, in int64: each value is sign × significand ×
    2 ** (field + ``_BIAS``), so the sum is Σ (high << ``_HALF`` + low) << field. One pass and
    no temporary array: in a Dask worker each large temporary faults in fresh pages. int64
    holds the sums of 2 ** 36 values a field."""
    high = np.zeros(2048, dtype=np.int64)
    low = np.zeros(2048, dtype=np.int64)
    bits = x.view(np.uint64)
    mask = np.uint64((1 << (_BITS - 1)) - 1)
    for i in range(bits.size):
        b = bits[i]
        field = np.int64((b >> np.uint64(_BITS - 1)) & np.uint64(0x7FF))
        significand = np.int64(b & mask)
        if field > 0:
            significand |= np.int64(1) << (_BITS - 1)
        else:
            field = 1  # subnormals (and zeros) have no implicit bit, the least exponent
        h, lo = significand >> _HALF, significand & _LOW
        if b >> np.uint64(63):  # the sign bit
            high[field] -= h
            low[field] -= lo
        else:
            high[field] += h
            low[field] += lo
    return high, low


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
        x = np.ascontiguousarray(values, dtype=np.float64).ravel()
        if not np.isfinite(x).all():
            return cls(special=float(np.sum(x)))
        high, low = significand_sums(x)
        total = 0
        for b in np.flatnonzero(high | low):
            total += (int(high[b]) << (int(b) + _HALF)) + (int(low[b]) << int(b))
        return cls(total, _BIAS) if total else cls()

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
