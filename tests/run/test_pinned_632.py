"""The bootstrap's .632+ error pinned term by term on hand-computed values (issue 40, item 6).

Efron and Tibshirani (1997, JASA 92:548), with err the resubstitution error, Err1 the
out-of-bag error and γ the no-information error rate Σ_k p_k (1 − q_k) (p the labels' class
shares, q the predictions'), their eq. (32):

    Err1'  = min(Err1, γ)
    R'     = (Err1' − err) / (γ − err)  if Err1' > err and γ > err, else 0
    .632   = .368 err + .632 Err1
    .632+  = .632 + (Err1' − err) · .368 · .632 R' / (1 − .368 R')

Where Err1 ≤ γ this is (1 − w) err + w Err1 with w = .632 / (1 − .368 R'); where Err1 > γ
(R' = 1) it is .632 Err1 + .368 γ, never below the .632 estimate (a formula with Err1' in both
terms gives γ there, below it).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from sklearn.tree import DecisionTreeClassifier

import soak_dask as sd
from soak_dask.run import evaluate as evaluate_module
from soak_dask.run.final import no_information_error, no_information_from_counts


def _plus(resub: float, oob: float, gamma: float) -> float:
    oob_, resub_, gamma_ = (xr.DataArray([v], dims="learner") for v in (oob, resub, gamma))
    return float(evaluate_module._632plus(oob_, resub_, gamma_).item())


@pytest.mark.parametrize(
    ("resub", "oob", "gamma", "expected"),
    [
        # R' = 20 / 40 = 0.5; w = .632 / (1 - .368 * .5) = .632 / .816; 10 + w * 20
        (10.0, 30.0, 50.0, 10 + 20 * 0.632 / 0.816),
        # Err1 = 60 > γ = 50: Err1' = 50, R' = 40 / 40 = 1: .632 * 60 + .368 * 50 = 56.32
        # (not γ = 50, which capping Err1 in the .632 term too would give)
        (10.0, 60.0, 50.0, 0.632 * 60 + 0.368 * 50),
        # Err1 = γ: R' = 1, w = 1
        (10.0, 50.0, 50.0, 50.0),
        # Err1 < err: R' = 0 (uncapped -5 / 30), the .632 estimate .368 * 20 + .632 * 15
        (20.0, 15.0, 50.0, 7.36 + 9.48),
        # γ < err: R' = 0, so the .632 estimate of the uncapped Err1: .368 * 20 + .632 * 30
        (20.0, 30.0, 18.0, 7.36 + 18.96),
        # err = 0 (a tree that fits every row): R' = 24 / 48, w = .632 / .816, w * 24
        (0.0, 24.0, 48.0, 24 * 0.632 / 0.816),
        # err = Err1: nothing to correct
        (12.0, 12.0, 40.0, 12.0),
    ],
)
def test_632plus_by_hand(resub, oob, gamma, expected):
    assert _plus(resub, oob, gamma) == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_632plus_element_wise_over_learners_and_resamples():
    """Each (learner, resample) its own R' and w: the cases above side by side, γ per learner."""
    oob = xr.DataArray([[30.0, 60.0], [15.0, 30.0]], dims=("learner", "repeat"))
    resub = xr.DataArray([10.0, 20.0], dims="learner")
    gamma = xr.DataArray([50.0, 18.0], dims="learner")
    out = evaluate_module._632plus(oob, resub, gamma).transpose("learner", "repeat")
    expected = [[10 + 20 * 0.632 / 0.816, 56.32], [7.36 + 9.48, 7.36 + 18.96]]
    np.testing.assert_allclose(out.values, expected, rtol=1e-12)


@pytest.mark.parametrize(
    ("truth", "said", "expected"),
    [
        # p = (.6, .4), q = (.5, .5): .6 * .5 + .4 * .5 = .5
        ([6, 4], [5, 5], 50.0),
        # p = (.5, .3, .2), q = (.2, .2, .6): .5 * .8 + .3 * .8 + .2 * .4 = .72
        ([5, 3, 2], [2, 2, 6], 72.0),
        # predictions = labels, p = q = (.4, .6): 2 * .4 * .6 = .48
        ([4, 6], [4, 6], 48.0),
        # always the majority: q = (0, 1): p_a = .3
        ([3, 7], [0, 10], 30.0),
    ],
)
def test_no_information_rate_by_hand(truth, said, expected):
    got = no_information_from_counts(np.array(truth), np.array(said))
    assert got == pytest.approx(expected, rel=1e-12)
    y = np.repeat(np.arange(len(truth)), truth)
    pred = np.repeat(np.arange(len(said)), said)
    assert no_information_error(y, pred, len(truth)) == pytest.approx(expected, rel=1e-12)


def test_evaluate_632plus_of_a_tree_that_fits_every_row():
    """A fully grown tree on distinct points and random labels (48 'a', 72 'b'): it
    predicts its training labels, so err = 0 and γ = 100 (.4 * .6 + .6 * .4) = 48; each
    resample's .632+ is then .632 Err1 + Err1' .368 .632 R' / (1 − .368 R') with
    Err1' = min(Err1, 48), R' = Err1' / 48. Some resamples' out-of-bag error is above γ
    (capped in the correction only), some below."""
    rng = np.random.default_rng(5)
    y = rng.permutation(np.repeat(["a", "b"], [48, 72]))
    df = pd.DataFrame({"x0": rng.normal(size=120), "x1": rng.normal(size=120), "y": y})
    table = sd.load_table(df, label="y", features=["x0", "x1"])
    learners = {"tree": DecisionTreeClassifier(random_state=0)}
    ds = sd.evaluate(
        table,
        learners,
        outer="bootstrap",
        outer_repeats=6,
        measures=["error"],
        options=sd.RunOptions(progress=False),
    )
    assert float(ds["error_resubstitution"].item()) == 0.0
    oob = ds["error"].sel(learner="tree").values.ravel()
    assert (oob > 48).any() and (oob < 48).any(), oob
    capped = np.minimum(oob, 48.0)
    rate = capped / 48
    expected = 0.632 * oob + capped * 0.368 * 0.632 * rate / (1 - 0.368 * rate)
    got = ds["error_632plus"].sel(learner="tree").values.ravel()
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert (got >= ds["error_632"].sel(learner="tree").values.ravel() - 1e-12).all()
