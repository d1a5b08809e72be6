"""Fixtures of the run tests."""

from __future__ import annotations

import pytest

#: Resamples behind a test split's interval in the tests that take ``few_interval_draws``.
INTERVAL_DRAWS = 200


@pytest.fixture
def few_interval_draws(monkeypatch: pytest.MonkeyPatch) -> int:
    """``INTERVAL_DRAWS`` resamples behind a test split's 95 % interval, not
    ``final_scores.N_BOOT``'s 1,000: for tests that compare runs drawing the same resamples, or
    check what the number of draws does not change (the interval's width is its noise)."""
    monkeypatch.setattr("soak_dask.run.final_scores.N_BOOT", INTERVAL_DRAWS)
    return INTERVAL_DRAWS
