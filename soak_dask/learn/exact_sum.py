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
_LOW = (1 << _HALF) - 1
#: A float64 is its 53-bit significand × 2 ** (its exponent field + ``_BIAS``).
_BIAS = -1075
#: Values summed per ``np.bincount``: its float64 sums of halves stay exact integers.
_CHUNK = 1 << 25


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
        # Each value is sign × significand × 2 ** (field - 1075), read from its bits.
        bits = x.view(np.uint64)
        field = ((bits >> np.uint64(_BITS - 1)) & np.uint64(0x7FF)).astype(np.int64)
        significand = (bits & np.uint64((1 << (_BITS - 1)) - 1)).astype(np.int64)
        normal = field > 0
        significand[normal] |= 1 << (_BITS - 1)
        field[~normal] = 1  # subnormals (and zeros) have no implicit bit, the least exponent
        negative = (bits >> np.uint64(63)).astype(bool)
        total = 0
        # Per exponent, the sums of the significands' halves: float64 sums of integers below
        # 2 ** 27, exact for up to 2 ** 26 values per chunk.
        for start in range(0, len(x), _CHUNK):
            part = slice(start, start + _CHUNK)
            for shift in (_HALF, 0):
                half = significand[part] >> shift if shift else significand[part] & _LOW
                signed = np.where(negative[part], -half, half).astype(np.float64)
                sums = np.bincount(field[part], weights=signed)
                for b in np.flatnonzero(sums):
                    total += int(sums[b]) << (int(b) + shift)
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
