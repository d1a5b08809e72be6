"""Exact sums: the same number however the values are cut into pieces and merged, and that
number is the exact sum, rounded once."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from soak_dask.learn.exact_sum import ExactSum

finite = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e150, max_value=1e150)


@settings(max_examples=100, deadline=None)
@given(values=st.lists(finite, max_size=60), cuts=st.lists(st.integers(0, 60), max_size=5))
def test_any_grouping_gives_the_exact_sum(values, cuts):
    x = np.array(values, dtype=np.float64)
    bounds = [0, *sorted(c for c in cuts if c <= len(x)), len(x)]
    pieces = [ExactSum.of(x[a:b]) for a, b in zip(bounds, bounds[1:], strict=False)]
    exact = sum((Fraction(v) for v in values), Fraction(0))
    assert sum(pieces).fraction() == exact
    assert sum(reversed(pieces)).fraction() == exact
    assert float(sum(pieces)) == float(exact)  # rounded once


@settings(max_examples=100, deadline=None)
@given(
    values=st.lists(
        st.floats(-1e100, 1e100, allow_nan=False).filter(lambda v: v == 0 or abs(v) > 1e-140),
        max_size=40,
    )
)
def test_squares_are_summed_exactly(values):
    """Exact where no square underflows (a label's square below 1e-300 would)."""
    exact = sum((Fraction(v) ** 2 for v in values), Fraction(0))
    assert ExactSum.of_squares(np.array(values, dtype=np.float64)).fraction() == exact


def test_a_non_finite_value_makes_the_sum_non_finite():
    assert np.isnan(float(ExactSum.of(np.array([1.0, np.nan])) + ExactSum.of(np.ones(3))))
    assert float(ExactSum.of(np.array([np.inf, 1.0]))) == np.inf
    assert float(ExactSum()) == 0.0 and ExactSum.of(np.ones(4)) / 4 == 1.0
