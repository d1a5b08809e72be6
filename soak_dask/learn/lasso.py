"""Lasso (L1) linear models with an internal cross-validation of the penalty, as R's cv.glmnet.

:class:`LassoCVClassifier` (binomial deviance) and :class:`LassoCVRegressor` (squared error)
follow glmnet's algorithm (Friedman, Hastie and Tibshirani 2010, "Regularization paths for
generalized linear models via coordinate descent"):

- a path of ``n_lambdas`` penalties from λ_max (the smallest λ at which every coefficient is
  zero) down to ``lambda_min_ratio`` · λ_max, evenly spaced on the log scale, each fit
  warm-started from the previous one;
- for the binomial family, Newton (IRLS) steps: each minimises a quadratic approximation of the
  log loss plus the L1 penalty by cyclic coordinate descent in covariance (Gram) form, on the
  (p + 1) × (p + 1) matrix X'WX, so a sweep costs O(p²) whatever the number of rows; a
  backtracking line search on the penalised objective keeps every step a descent.
  X'WX only sets the speed of the steps, never their fixed point (the score X'(y − p) alone
  does, in double precision), so it is computed in single precision, improved after each step
  by a secant (BFGS) update from the change of the score, and reused along the path until a
  step stops shrinking the next one tenfold; a step then costs one pass over the rows, whose
  exponentials and logarithms are vectorised; the cross-validation paths, which only choose λ,
  read the features in single precision;
- strong rules (Tibshirani et al. 2012) pick the features worth updating at each λ; a final
  check of the optimality (KKT) conditions on the others adds any that were wrongly left out;
- the path stops early once the deviance stops improving, with glmnet's rules: for the
  binomial family when the fraction of null deviance explained grows by less than 1e-5 or
  passes 0.999, for squared error when it grows by less than 1e-5 of itself;
- K-fold cross-validation of the deviance (log loss ×2, or squared error) over the path,
  then ``lambda.1se`` (the largest λ whose mean CV deviance is within one standard error of the
  minimum; the default, as in the R learner of the SOAK paper) or ``lambda.min``, then a fit on
  all rows along the path down to the chosen λ.

The numerical kernels are compiled with numba (cached on disk after the first call).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

import numpy as np
import pandas as pd
from numba import njit
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, is_classifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from ..user_warning import warn_user

__all__ = ["LassoCVClassifier", "LassoCVRegressor"]

#: glmnet's pmin: held-out probabilities are clipped to [PMIN, 1 - PMIN] in the CV deviance,
#: and a class whose weighted share is at most PMIN is too rare to fit.
PMIN = 1e-5
LOGIT_MAX = math.log((1.0 - PMIN) / PMIN)
#: glmnet's path-stopping rules (glmnet.control: fdev, devmax, mnlam).
MIN_GAIN = 1e-5
MAX_DEV_RATIO = 0.999
MIN_LAMBDAS = 5
#: Newton steps allowed per λ (warm-started steps converge in two or three).
MAX_NEWTON = 50
#: Halvings allowed in one line search.
MAX_HALVINGS = 40
#: The Hessian X'WX is reused from earlier points of the path (it only sets the speed of the
#: Newton steps, not their fixed point) until a step shrinks the next one by less than this.
SLOW = 0.1
#: Rows per block of the single-precision Hessian products and of the passes over the rows.
GRAM_BLOCK = 256
PASS_BLOCK = 256
#: A secant (BFGS) update of the Hessian needs y's > CURVATURE · sqrt(s'Hs · y'y).
CURVATURE = 1e-8
#: Relative rounding error allowed in the line search's comparison of objective values.
ROUNDING = 1e-14


# --- numerical kernels ---------------------------------------------------------------------


@njit(cache=True, nogil=True)
def _cd_quadratic(H, r, u, penalty, active, tol, max_sweeps):  # pragma: no cover (compiled)
    """Cyclic coordinate descent on ½ δ'Hδ − g'δ + Σ_j penalty_j |u_j|, δ = u − u₀.

    Only the coordinates in ``active`` move; ``r`` holds g − Hδ on them and is updated with
    ``u`` in place (covariance form: one update costs O(len(active))). Coordinates with zero
    penalty (the intercept) are minimised exactly. Returns the number of sweeps, negated if
    ``max_sweeps`` ran out before the largest weighted change H_jj·Δ_j² fell below ``tol``.
    """
    m = active.size
    for sweep in range(1, max_sweeps + 1):
        largest = 0.0
        for a in range(m):
            j = active[a]
            hjj = H[j, j]
            if hjj <= 0.0:
                continue
            old = u[j]
            z = hjj * old + r[j]
            t = penalty[j]
            if z > t:
                new = (z - t) / hjj
            elif z < -t:
                new = (z + t) / hjj
            else:
                new = 0.0
            step = new - old
            if step != 0.0:
                u[j] = new
                for b in range(m):
                    k = active[b]
                    r[k] -= H[k, j] * step
                largest = max(largest, hjj * step * step)
        if largest < tol:
            return sweep
    return -max_sweeps


@njit(cache=True, nogil=True, fastmath={"contract"})
def _exp_log1p(e, z, log1p_z, bits):  # pragma: no cover (compiled)
    """z = exp(−|e|) and log(1 + z) for each e, to about 1e-14 relative error (math.exp and
    math.log are calls that stop the compiler from vectorising; these loops vectorise: twice
    as fast). ``bits`` is an int64 work array of at least ``e.size``.

    exp(x) = 2^k · exp(r), r = x − k ln 2 ∈ [−ln2/2, ln2/2], exp(r) by its Taylor series to
    degree 13, 2^k built in ``bits`` from the rounding of x/ln2 + 1.5·2^52 (no reassociation
    allowed here: it would cancel that rounding). log(1 + z) = 2 atanh(s), s = z/(2 + z) ≤ 1/3,
    by its series to degree 33.
    """
    scale = bits.view(np.float64)
    for i in range(e.size):
        x = max(-abs(e[i]), -708.0)  # exp(−708) is still a normal number
        rounded = x * 1.4426950408889634 + 6755399441055744.0
        k = rounded - 6755399441055744.0
        r = (x - k * 0.6931471803691238) - k * 1.9082149292705877e-10  # ln 2 in two parts
        poly = 1.0 / 6227020800.0
        for c in (479001600.0, 39916800.0, 3628800.0, 362880.0, 40320.0, 5040.0, 720.0):
            poly = poly * r + 1.0 / c
        for c in (120.0, 24.0, 6.0, 2.0, 1.0, 1.0):
            poly = poly * r + 1.0 / c
        z[i] = poly
        scale[i] = rounded
    for i in range(e.size):  # the bits of 1.5·2^52 + k → the bits of 2^k
        bits[i] = (bits[i] - 0x4338000000000000 + 1023) << 52
    for i in range(e.size):
        zi = z[i] * scale[i]
        z[i] = zi
        s = zi / (2.0 + zi)
        s2 = s * s
        series = 1.0 / 33.0
        for c in (31.0, 29.0, 27.0, 25.0, 23.0, 21.0, 19.0, 17.0, 15.0, 13.0, 11.0, 9.0, 7.0):
            series = series * s2 + 1.0 / c
        series = (series * s2 + 1.0 / 5.0) * s2 + 1.0 / 3.0
        log1p_z[i] = 2.0 * s * (series * s2 + 1.0)


@njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
def _add_columns(block, XT, cols, coef, start):  # pragma: no cover (compiled)
    """block += Σ_a coef_a · XT[cols_a, start : start + block.size], four features per sweep
    over the block (a quarter of the loads and stores of ``block``)."""
    end = start + block.size
    a = 0
    while a + 3 < cols.size:
        x0, x1 = XT[cols[a], start:end], XT[cols[a + 1], start:end]
        x2, x3 = XT[cols[a + 2], start:end], XT[cols[a + 3], start:end]
        c0, c1, c2, c3 = coef[a], coef[a + 1], coef[a + 2], coef[a + 3]
        for i in range(block.size):
            block[i] += (c0 * x0[i] + c1 * x1[i]) + (c2 * x2[i] + c3 * x3[i])
        a += 4
    for k in range(a, cols.size):
        x0, c0 = XT[cols[k], start:end], coef[k]
        for i in range(block.size):
            block[i] += c0 * x0[i]


@njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
def _add_scores(g, XT, resid, start):  # pragma: no cover (compiled)
    """g_j += Σᵢ residᵢ · XT[j, start + i] for every feature j, four per sweep over ``resid``."""
    q = g.size
    end = start + resid.size
    j = 0
    while j + 3 < q:
        x0, x1, x2, x3 = (
            XT[j, start:end],
            XT[j + 1, start:end],
            XT[j + 2, start:end],
            XT[j + 3, start:end],
        )
        s0 = s1 = s2 = s3 = 0.0
        for i in range(resid.size):
            r = resid[i]
            s0 += r * x0[i]
            s1 += r * x1[i]
            s2 += r * x2[i]
            s3 += r * x3[i]
        g[j] += s0
        g[j + 1] += s1
        g[j + 2] += s2
        g[j + 3] += s3
        j += 4
    for k in range(j, q):
        x0 = XT[k, start:end]
        s0 = 0.0
        for i in range(resid.size):
            s0 += resid[i] * x0[i]
        g[k] += s0


@njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
def _logistic_pass(XT, y, w, eta, step, t, eta_out, v, g):  # pragma: no cover (compiled)
    """One pass over the rows at η + t·X1·step: the loss Σ wᵢ ℓᵢ (returned), the Newton
    weights vᵢ = wᵢ pᵢ(1 − pᵢ) and the score g = X1'(w ∘ (y − p)), written into
    ``eta_out``, ``v`` and ``g``. ``XT`` is X1 transposed (features × rows, row 0 the
    intercept's ones).

    By blocks of PASS_BLOCK rows, each feature's block a contiguous run: η (adding only the
    features that move, t·step_j ≠ 0), then the exponentials and logarithms of the block
    (vectorised, :func:`_exp_log1p`), then the residuals, then the scores; branch-free (the
    sign of η only selects between two results) and with reassociated sums, so the compiler
    vectorises every loop.
    """
    n = XT.shape[1]
    moving = np.flatnonzero(t * step)
    coef = t * step[moving]
    g[:] = 0.0
    loss = 0.0
    z = np.empty(PASS_BLOCK)
    log1p_z = np.empty(PASS_BLOCK)
    bits = np.empty(PASS_BLOCK, dtype=np.int64)
    resid = np.empty(PASS_BLOCK)
    for start in range(0, n, PASS_BLOCK):
        end = min(n, start + PASS_BLOCK)
        block = eta_out[start:end]
        block[:] = eta[start:end]
        _add_columns(block, XT, moving, coef, start)
        _exp_log1p(block, z, log1p_z, bits)  # softplus and sigmoid, no overflow
        for i in range(end - start):
            e = block[i]
            zi = z[i]
            upper = 1.0 / (1.0 + zi)
            p = upper if e >= 0.0 else zi * upper
            wi = w[start + i]
            yi = y[start + i]
            loss += wi * (max(e, 0.0) + log1p_z[i] - yi * e)
            v[start + i] = wi * p * (1.0 - p)
            resid[i] = wi * (yi - p)
        _add_scores(g, XT, resid[: end - start], start)
    return loss


@njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
def _held_out_deviance(XT, coefs, sign, w, out):  # pragma: no cover (compiled)
    """out[l] = Σᵢ wᵢ · 2 log(1 + e^(sᵢ ηᵢₗ)), ηᵢₗ = X1ᵢ · coefs[l] clipped to ±LOGIT_MAX
    (cv.glmnet's clipping of p to [PMIN, 1 − PMIN]): the held-out binomial deviance of each
    fit of a path (``XT``: the held-out rows' X1 transposed; ``sign`` = 1 − 2y).

    By blocks of PASS_BLOCK rows, every fit of the path on a block while it is in cache, with
    the pass's vectorised exponentials and logarithms (:func:`_exp_log1p`): numpy's calls cost
    five times as much, a tenth of a fit.
    """
    q, n = XT.shape
    cols = np.arange(q)
    eta = np.empty(PASS_BLOCK)
    z = np.empty(PASS_BLOCK)
    log1p_z = np.empty(PASS_BLOCK)
    bits = np.empty(PASS_BLOCK, dtype=np.int64)
    out[:] = 0.0
    for start in range(0, n, PASS_BLOCK):
        size = min(n, start + PASS_BLOCK) - start
        block = eta[:size]
        for m in range(coefs.shape[0]):
            block[:] = 0.0
            _add_columns(block, XT, cols, coefs[m], start)
            for i in range(size):
                block[i] = sign[start + i] * min(max(block[i], -LOGIT_MAX), LOGIT_MAX)
            _exp_log1p(block, z, log1p_z, bits)  # softplus(t) = max(t, 0) + log(1 + e^−|t|)
            total = 0.0
            for i in range(size):
                total += w[start + i] * (max(block[i], 0.0) + log1p_z[i])
            out[m] += 2.0 * total


@njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
def _weighted_gram(XT, v, active, H):  # pragma: no cover (compiled)
    """H[j, k] = Σᵢ vᵢ X1[i, j] X1[i, k] for j, k in ``active`` (``XT``: X1 transposed).

    In single precision within blocks of GRAM_BLOCK rows (summed in double precision): H only
    sets the speed of the Newton steps, never their fixed point, which depends on the score g
    alone (computed in double precision). Each of the m(m + 1)/2 products is a contiguous,
    vectorised dot product: twice as fast as BLAS on these tall, narrow matrices.
    """
    n = XT.shape[1]
    m = active.size
    Z = np.empty((m, GRAM_BLOCK), dtype=np.float32)
    W = np.empty((m, GRAM_BLOCK), dtype=np.float32)  # v ∘ Z
    G = np.zeros((m, m))
    for start in range(0, n, GRAM_BLOCK):
        size = min(n - start, GRAM_BLOCK)
        for a in range(m):
            x = XT[active[a], start : start + size]
            for i in range(size):
                Z[a, i] = x[i]
                W[a, i] = v[start + i] * Z[a, i]
        for a in range(m):
            for b in range(a, m):
                s = np.float32(0.0)
                for i in range(size):
                    s += W[a, i] * Z[b, i]
                G[a, b] += s
    for a in range(m):
        for b in range(a, m):
            H[active[a], active[b]] = G[a, b]
            H[active[b], active[a]] = G[a, b]


@njit(cache=True, nogil=True)
def _secant_update(H, active, s, y):  # pragma: no cover (compiled)
    """BFGS update of H on ``active`` after a step ``s`` that changed the gradient by ``y``,
    so that H s = y: a better Hessian for the next Newton step without a pass over the rows.

    Skipped when the curvature y's is not clearly positive (rounding near the solution), which
    keeps H positive definite.
    """
    m = active.size
    Hs = np.zeros(m)
    for a in range(m):
        for b in range(m):
            Hs[a] += H[active[a], active[b]] * s[active[b]]
    sHs = 0.0
    ys = 0.0
    yy = 0.0
    for a in range(m):
        sHs += s[active[a]] * Hs[a]
        ys += y[active[a]] * s[active[a]]
        yy += y[active[a]] ** 2
    if not (sHs > 0.0 and ys > CURVATURE * math.sqrt(sHs * yy)):
        return
    for a in range(m):
        for b in range(m):
            H[active[a], active[b]] += y[active[a]] * y[active[b]] / ys - Hs[a] * Hs[b] / sHs


@njit(cache=True, nogil=True)
def _penalty(b, pen):  # pragma: no cover (compiled)
    s = 0.0
    for j in range(b.size):
        s += pen[j] * abs(b[j])
    return s


@njit(cache=True, nogil=True)
def _strong_set(strong, g, pf, lam, lam_prev):  # pragma: no cover (compiled)
    """Sequential strong rule: keep feature j when |g_j| ≥ pf_j (2λ − λ_prev)."""
    for j in range(strong.size):
        if pf[j] == 0.0 or abs(g[j]) >= pf[j] * (2.0 * lam - lam_prev):
            strong[j] = True


@njit(cache=True, nogil=True)
def _add_violators(strong, g, pen):  # pragma: no cover (compiled)
    """Add the features outside the strong set whose score breaks the KKT condition."""
    added = False
    for j in range(strong.size):
        if not strong[j] and abs(g[j]) > pen[j]:
            strong[j] = True
            added = True
    return added


@njit(cache=True, nogil=True)
def _stop_path(dev_ratio, m, relative):  # pragma: no cover (compiled)
    """glmnet's early stop after fit ``m``: the deviance explained stopped growing."""
    if m + 1 < MIN_LAMBDAS:
        return False
    if dev_ratio[m] > MAX_DEV_RATIO:
        return True
    gain = dev_ratio[m] - dev_ratio[m - 1]
    return gain < MIN_GAIN * (dev_ratio[m] if relative else 1.0)


@njit(cache=True, nogil=True)
def _line_search(
    XT, y, w, b, u, d, pen, loss, g, active, eta, eta_new, v_new, g_new
):  # pragma: no cover (compiled)
    """Backtracking (Armijo) line search on the penalised objective from ``b`` along the
    Newton direction ``d`` (``u`` is the quadratic subproblem's solution, d = u − b on
    ``active``).

    ``loss``, ``g`` and ``eta`` belong to ``b``; the pass at the last step tried is written into
    ``eta_new``, ``v_new`` and ``g_new``. Returns (step, loss at the last step tried, whether it
    decreased the objective enough); after MAX_HALVINGS failed halvings the step is halved once
    more than the pass it returns.
    """
    before = loss + _penalty(b, pen)
    slope = _penalty(u, pen) - _penalty(b, pen)
    for j in active:
        slope -= g[j] * d[j]
    step = 1.0
    for _ in range(MAX_HALVINGS):
        new_loss = _logistic_pass(XT, y, w, eta, d, step, eta_new, v_new, g_new)
        after = new_loss + _penalty(b + step * d, pen)
        # Sufficient decrease, or no change beyond the rounding of the sums.
        if after <= before + max(1e-4 * step * slope, ROUNDING * abs(before)):
            return step, new_loss, True
        step *= 0.5
    return step, new_loss, False


@njit(cache=True, nogil=True)
def _newton_solve(
    XT, y, w, pen, active, thresh, max_sweeps, H, fresh, b, loss, etas, vs, gs, cur
):  # pragma: no cover (compiled)
    """Newton (IRLS) steps at one λ, moving only the coordinates in ``active``, until a step
    would change nothing that matters (H_jj·d_j² < ``thresh`` on every coordinate).

    Each step minimises the quadratic approximation of the loss at ``b`` plus the L1 penalty
    by coordinate descent on ``H`` (X'WX), then line-searches along the result; after each
    step a secant (BFGS) update brings ``H`` closer to the Hessian at the new point, for free.
    ``b`` and ``H`` are updated in place; ``fresh`` tells whether ``H`` was computed at ``b``.
    ``etas``, ``vs`` and ``gs`` hold two passes over the rows (η, Newton weights, score):
    row ``cur`` at ``b``, the other one the trial step's, so accepting a step only flips
    ``cur``. Returns (loss at ``b``, ``cur``, ``fresh``, converged, CD sweeps).
    """
    q = b.size
    u = np.empty(q)
    r = np.empty(q)
    d = np.zeros(q)  # the Newton direction: zero outside the active set
    converged = True
    sweeps = 0
    previous = np.inf
    for _ in range(MAX_NEWTON):
        u[:] = b
        r[:] = gs[cur]
        done = _cd_quadratic(H, r, u, pen, active, thresh, max_sweeps)
        sweeps += abs(done)
        converged = converged and done > 0
        largest = 0.0
        for j in active:
            d[j] = u[j] - b[j]
            largest = max(largest, H[j, j] * d[j] * d[j])
        if largest < thresh:
            return loss, cur, fresh, converged, sweeps  # b is the solution
        if not fresh and largest > SLOW * previous:
            # H, from an earlier point of the path, no longer gives fast steps: refresh it
            # here and solve again (H only sets the speed, not the solution).
            _weighted_gram(XT, vs[cur], active, H)
            fresh = True
            continue
        previous = largest
        nxt = 1 - cur
        step, loss, decreased = _line_search(
            XT, y, w, b, u, d, pen, loss, gs[cur], active, etas[cur], etas[nxt], vs[nxt], gs[nxt]
        )
        converged = converged and decreased
        for j in active:
            d[j] *= step
            b[j] += d[j]
        if decreased:  # the score is −∇: the gradient changed by g − g_new
            _secant_update(H, active, d, gs[cur] - gs[nxt])
        cur = nxt
        fresh = False
        if step < 1.0:  # far from the solution: the next step needs the true Hessian
            _weighted_gram(XT, vs[cur], active, H)
            fresh = True
    return loss, cur, fresh, False, sweeps


@njit(cache=True, nogil=True)
def _logistic_path(
    XT, y, w, lambdas, pf, tol, max_sweeps, early_stop, coefs, dev_ratio, work
):  # pragma: no cover (compiled)
    """Binomial lasso path by Newton steps with coordinate descent (glmnet's lognet).

    ``XT``: (1 + features) × rows, row 0 all ones (X1 transposed); ``y`` in {0, 1}; ``w``
    weights summing to 1; ``pf`` penalty factors (0 for the intercept). Fills ``coefs``
    (λ × (1 + features)) and ``dev_ratio`` (fraction of null deviance explained) and returns
    (number of λ fitted, coordinate-descent sweeps, number of λ whose fit did not converge).
    ``work`` (2 × 2 × rows, the caller's, so that the paths of one fit reuse its memory)
    holds the two passes over the rows: their η in ``work[0]``, their Newton weights in
    ``work[1]``.
    """
    q, n = XT.shape
    ybar = 0.0
    for i in range(n):
        ybar += w[i] * y[i]
    b = np.zeros(q)
    b[0] = math.log(ybar / (1.0 - ybar))
    # Two passes over the rows (η, Newton weights, score): row cur is at b (see _newton_solve).
    etas = work[0]
    etas[0] = b[0]
    vs = work[1]
    gs = np.empty((2, q))
    cur = 0
    loss = _logistic_pass(XT, y, w, etas[0], np.zeros(q), 0.0, etas[0], vs[0], gs[0])
    null_loss = loss
    thresh = tol * null_loss
    H = np.zeros((q, q))
    strong = np.zeros(q, dtype=np.bool_)
    strong[0] = True
    covered = np.zeros(q, dtype=np.bool_)  # the coordinates whose rows of H are computed
    fresh = False  # H was computed at the current b
    sweeps = 0
    failed = 0
    fitted = 0
    lam_prev = lambdas[0]
    for m in range(lambdas.size):
        lam = lambdas[m]
        pen = lam * pf
        _strong_set(strong, gs[cur], pf, lam, lam_prev)
        converged = True
        while True:  # until no feature outside the strong set breaks the KKT conditions
            active = np.flatnonzero(strong)
            if not np.all(covered[active]):  # H lacks rows for features that just entered
                _weighted_gram(XT, vs[cur], active, H)
                covered[active] = True
                fresh = True
            loss, cur, fresh, solved, cd_sweeps = _newton_solve(
                XT, y, w, pen, active, thresh, max_sweeps, H, fresh, b, loss, etas, vs, gs, cur
            )
            sweeps += cd_sweeps
            converged = converged and solved
            if not _add_violators(strong, gs[cur], pen):
                break
        failed += not converged
        coefs[m] = b
        dev_ratio[m] = 1.0 - loss / null_loss
        fitted = m + 1
        lam_prev = lam
        saturated = vs[cur].sum() <= (1.0 + PMIN) * PMIN * (1.0 - PMIN)
        if saturated or (early_stop and _stop_path(dev_ratio, m, False)):
            break
    return fitted, sweeps, failed


@njit(cache=True, nogil=True)
def _gaussian_path(
    C, c, yvar, lambdas, pf, tol, max_sweeps, early_stop, coefs, dev_ratio
):  # pragma: no cover (compiled)
    """Squared-error lasso path by coordinate descent on the centred Gram matrix ``C`` and
    the covariances ``c`` of the features with y (glmnet's elnet, covariance updates).

    Minimises ½ b'Cb − c'b + λ Σ pf_j |b_j| (the least-squares loss ½ Σ wᵢ (yᵢ − ŷᵢ)² up to
    a constant, weights summing to 1). Fills ``coefs`` and ``dev_ratio`` (R²) and returns
    (number of λ fitted, sweeps, number of λ whose fit did not converge).
    """
    p = c.size
    b = np.zeros(p)
    r = c.copy()  # c − Cb: the negative gradient
    strong = np.zeros(p, dtype=np.bool_)
    thresh = tol * yvar
    sweeps = 0
    failed = 0
    fitted = 0
    lam_prev = lambdas[0]
    for m in range(lambdas.size):
        lam = lambdas[m]
        pen = lam * pf
        _strong_set(strong, r, pf, lam, lam_prev)
        while True:
            active = np.flatnonzero(strong)
            done = _cd_quadratic(C, r, b, pen, active, thresh, max_sweeps)
            sweeps += abs(done)
            failed += done < 0
            r[:] = c - np.dot(C, b)  # the gradient on every feature, for the KKT check
            if not _add_violators(strong, r, pen):
                break
        coefs[m] = b
        explained = 0.0
        for j in range(p):
            explained += b[j] * (c[j] + r[j])  # 2c'b − b'Cb = b'(c + r)
        dev_ratio[m] = explained / yvar if yvar > 0.0 else 0.0
        fitted = m + 1
        lam_prev = lam
        if early_stop and _stop_path(dev_ratio, m, True):
            break
    return fitted, sweeps, failed


# --- shared steps of the estimators -----------------------------------------------------


def _fold_ids(n: int, n_folds: int, random_state, strata: np.ndarray | None) -> np.ndarray:
    """Fold of each row (0 … n_folds − 1), shuffled by ``random_state``.

    With ``strata`` (class codes) each class is dealt round-robin over the folds, so every
    fold holds its share of each class, as scikit-learn's StratifiedKFold (cv.glmnet draws
    folds without strata). Fold sizes differ by at most one.
    """
    order = check_random_state(random_state).permutation(n)
    if strata is not None:
        order = order[np.argsort(strata[order], kind="stable")]
    folds = np.empty(n, dtype=np.intp)
    folds[order] = np.arange(n) % n_folds
    return folds


def _classes(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(y, return_inverse=True)``, by hashing for object labels (strings), whose
    sort costs a tenth of a 90k-row fit."""
    if y.dtype != object:
        return np.unique(y, return_inverse=True)
    codes, classes = pd.factorize(y, sort=True, use_na_sentinel=False)
    return classes, codes


def _lambda_path(lambda_max: float, n_lambdas: int, ratio: float) -> np.ndarray:
    """``n_lambdas`` penalties from ``lambda_max`` down to ``ratio · lambda_max`` (log scale)."""
    # λ_max is 0 when no feature varies (or y is constant): every penalty then gives the same
    # intercept-only model, and a tiny positive λ keeps the path well defined.
    top = max(lambda_max, np.finfo(np.float64).tiny / ratio)
    return top * ratio ** (np.arange(n_lambdas) / max(n_lambdas - 1, 1))


@dataclass
class _CVPath:
    """One cross-validated path: cv.glmnet's summary and the λ chosen on it."""

    lambdas: np.ndarray
    cvm: np.ndarray  # mean CV deviance per λ
    cvsd: np.ndarray  # its standard error
    best: int  # index of lambda.min
    one_se: int  # index of lambda.1se
    chosen: int
    n_iter: int = 0  # coordinate-descent sweeps of the final fit


def _cv_select(
    cvraw: np.ndarray, fold_weight: np.ndarray, lambdas: np.ndarray, selection: str
) -> _CVPath:
    """cv.glmnet's summary of per-fold deviances (folds × λ, λ decreasing): the weighted mean
    and its standard error, ``lambda.min`` (the largest λ at the minimum) and ``lambda.1se``
    (the largest λ whose mean is within one standard error of the minimum)."""
    cvm = np.average(cvraw, axis=0, weights=fold_weight)
    n_folds = cvraw.shape[0]
    cvsd = np.sqrt(np.average((cvraw - cvm) ** 2, axis=0, weights=fold_weight) / (n_folds - 1))
    best = int(np.argmin(cvm))  # argmin gives the first, i.e. the largest, λ
    one_se = int(np.flatnonzero(cvm <= cvm[best] + cvsd[best])[0])
    return _CVPath(lambdas, cvm, cvsd, best, one_se, one_se if selection == "1se" else best)


def _train_scale(
    sums: np.ndarray, squares: np.ndarray, fold_weight: np.ndarray, test_fold: int | None
) -> np.ndarray:
    """Weighted standard deviation of each feature on the rows outside ``test_fold`` (all rows
    with None), from the per-fold weighted sums of the features and of their squares."""
    keep = np.arange(fold_weight.size) != test_fold
    total = fold_weight[keep].sum()
    mean = sums[keep].sum(axis=0) / total
    return np.sqrt(np.maximum(squares[keep].sum(axis=0) / total - mean**2, 0.0))


def _held_out_tail(values: np.ndarray, fitted: int, n_lambdas: int) -> np.ndarray:
    """Columns for λ beyond a fold's stopped path repeat its last fit (cv.glmnet's rule)."""
    if fitted == n_lambdas:
        return values
    return np.concatenate(
        [values, np.repeat(values[:, fitted - 1 : fitted], n_lambdas - fitted, 1)], 1
    )


class _LassoCVBase(BaseEstimator):
    """Parameters, input checks, standardisation and the CV loop shared by both estimators."""

    _parameter_constraints: dict = {
        "n_lambdas": [Interval(Integral, 1, None, closed="left")],
        "lambda_min_ratio": [Interval(Real, 0, 1, closed="neither"), None],
        "lambdas": ["array-like", None],
        "n_folds": [Interval(Integral, 3, None, closed="left")],
        "selection": [StrOptions({"1se", "min"})],
        "standardize": ["boolean"],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        *,
        n_lambdas: int = 100,
        lambda_min_ratio: float | None = None,
        lambdas=None,
        n_folds: int = 10,
        selection: str = "1se",
        standardize: bool = True,
        tol: float = 1e-7,
        max_iter: int = 100_000,
        random_state=None,
    ) -> None:
        self.n_lambdas = n_lambdas
        self.lambda_min_ratio = lambda_min_ratio
        self.lambdas = lambdas
        self.n_folds = n_folds
        self.selection = selection
        self.standardize = standardize
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state

    def _check_input(self, X, y, sample_weight) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        self._validate_params()
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=not is_classifier(self))
        n = X.shape[0]
        if n < self.n_folds:
            raise ValueError(
                f"n_folds={self.n_folds} folds need at least {self.n_folds} rows, got "
                f"n_samples={n}; give more rows or lower n_folds"
            )
        w = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
        if not w.sum() > 0:
            raise ValueError("sample_weight sums to 0: at least one row needs a positive weight")
        return X, y, w

    def _scales(self, X: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Weighted mean and standard deviation of each column (weights summing to 1)."""
        mean = w @ X
        return mean, np.sqrt(np.maximum(w @ (X - mean) ** 2, 0.0))

    def _penalty_factors(self, fit_scale: np.ndarray) -> np.ndarray:
        """Penalty factors of the standardised columns for a fit whose rows give them the
        standard deviations ``fit_scale``: with ``standardize``, glmnet penalises the
        coefficients of each fit's own standardised features; without, those of X."""
        return fit_scale if self.standardize else 1.0 / self.scale_

    def _path(self, lambda_max: float, n_rows: int, n_features: int) -> np.ndarray:
        if self.lambdas is not None:
            lambdas = np.sort(np.asarray(self.lambdas, dtype=np.float64).ravel())[::-1]
            if lambdas.size == 0 or not np.all(np.isfinite(lambdas)) or lambdas[-1] < 0:
                raise ValueError(f"lambdas must be finite and >= 0, got {self.lambdas!r}")
            return np.ascontiguousarray(lambdas)
        ratio = self.lambda_min_ratio
        if ratio is None:  # glmnet's default: 1e-4, or 1e-2 with fewer rows than features
            ratio = 1e-4 if n_rows >= n_features else 1e-2
        return _lambda_path(lambda_max, self.n_lambdas, ratio)

    def _standardize(self, X: np.ndarray, w: np.ndarray) -> np.ndarray:
        """Centre and scale with the weighted moments of all rows (constant columns are left
        out of the fit: ``usable_``); returns the scaled usable columns."""
        mean, scale = self._scales(X, w / w.sum())
        self.usable_ = scale > 0
        self.mean_, self.scale_ = mean[self.usable_], scale[self.usable_]
        return (X[:, self.usable_] - self.mean_) / self.scale_

    def _set_path_attributes(self, paths: list[_CVPath]) -> None:
        """The λ attributes: scalars and arrays for one path, per-path arrays and lists for
        several (one-vs-rest)."""
        values = {
            "lambda_": [p.lambdas[p.chosen] for p in paths],
            "lambda_min_": [p.lambdas[p.best] for p in paths],
            "lambda_1se_": [p.lambdas[p.one_se] for p in paths],
            "n_iter_": [p.n_iter for p in paths],
        }
        arrays = {
            "lambda_path_": [p.lambdas for p in paths],
            "cv_deviance_": [p.cvm for p in paths],
            "cv_deviance_se_": [p.cvsd for p in paths],
        }
        one = len(paths) == 1
        for name, vals in values.items():
            setattr(self, name, vals[0] if one else np.array(vals))
        for name, vals in arrays.items():
            setattr(self, name, vals[0] if one else vals)

    def _original_scale(self, beta: np.ndarray, intercept: float) -> tuple[np.ndarray, float]:
        """Coefficients of the standardised usable columns -> coefficients of X."""
        coef = np.zeros(self.n_features_in_)
        coef[self.usable_] = beta / self.scale_
        return coef, float(intercept - coef[self.usable_] @ self.mean_)

    def _warn_unconverged(self, failed: int) -> None:
        if failed:
            warn_user(
                f"{type(self).__name__}: {failed} penalty fit(s) did not converge within "
                f"max_iter={self.max_iter} coordinate-descent sweeps; raise max_iter or tol",
                ConvergenceWarning,
            )


_DOC_PARAMETERS = """
    Parameters
    ----------
    n_lambdas : int, default=100
        Number of penalties on the path (glmnet's ``nlambda``).
    lambda_min_ratio : float, optional
        Smallest penalty as a fraction of λ_max (glmnet's ``lambda.min.ratio``); default 1e-4,
        or 1e-2 when there are fewer rows than features.
    lambdas : array-like, optional
        The penalties to use instead of the path (sorted decreasing; glmnet's ``lambda``).
    n_folds : int, default=10
        Folds of the internal cross-validation (glmnet's ``nfolds``; at least 3).
    selection : {"1se", "min"}, default="1se"
        ``"1se"``: the largest λ whose mean CV deviance is within one standard error of the
        minimum (cv.glmnet's ``lambda.1se``); ``"min"``: the λ of the minimum (``lambda.min``).
    standardize : bool, default=True
        Penalise the coefficients of standardised features (weighted mean 0, standard deviation
        1 on each fit's rows), as glmnet's ``standardize=TRUE``; coefficients are always
        reported on the scale of X. With False the penalty is on the coefficients of X itself.
    tol : float, default=1e-7
        Convergence threshold (glmnet's ``thresh``): coordinate descent and Newton steps stop
        when no coefficient update changes the objective by more than ``tol`` times the null
        deviance.
    max_iter : int, default=100000
        Coordinate-descent sweeps allowed per quadratic subproblem.
    random_state : int, RandomState or None
        Shuffles the rows into folds: the same seed gives the same folds and results.
"""

_DOC_ATTRIBUTES = """
    lambda_ : float
        The selected penalty.
    lambda_min_, lambda_1se_ : float
        cv.glmnet's ``lambda.min`` and ``lambda.1se``.
    lambda_path_ : ndarray of shape (n_lambdas_fitted,)
        The penalties cross-validated (decreasing; the path ends where every fold's path had
        stopped, a fold that stopped earlier keeping its last fit, as in cv.glmnet).
    cv_deviance_, cv_deviance_se_ : ndarray of shape (n_lambdas_fitted,)
        Mean cross-validated deviance at each penalty and its standard error (cv.glmnet's
        ``cvm`` and ``cvsd``).
    n_iter_ : int
        Coordinate-descent sweeps of the final fit on all rows.
    n_features_in_ : int
        Number of features seen in ``fit``.
"""


class LassoCVClassifier(ClassifierMixin, _LassoCVBase):
    __doc__ = (
        """L1-regularised logistic regression with the penalty chosen by internal K-fold CV of
    the binomial deviance, as R's ``cv.glmnet(family="binomial")``: the SOAK paper's learner.

    Minimises (1/Σw) Σᵢ wᵢ logloss(yᵢ, β₀ + xᵢ'β) + λ Σⱼ |βⱼ| (features standardised), the
    objective of scikit-learn's ``LogisticRegression(l1_ratio=1, C=1/(n·λ))`` on standardised
    features. Folds are stratified by class. With more than two classes, one binary model per
    class (one-vs-rest, each with its own λ; probabilities normalised to sum to 1) rather than
    glmnet's multinomial family.
    """
        + _DOC_PARAMETERS
        + """
    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
    intercept_ : ndarray of shape (1,) or (n_classes,)"""
        + _DOC_ATTRIBUTES
        + """
    With more than two classes, ``lambda_``, ``lambda_min_``, ``lambda_1se_`` and ``n_iter_``
    are arrays with one value per class and ``lambda_path_``, ``cv_deviance_`` and
    ``cv_deviance_se_`` lists of arrays.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from soak_dask import LassoCVClassifier
    >>> X, y = make_classification(n_samples=300, n_features=8, random_state=0)
    >>> model = LassoCVClassifier(random_state=0).fit(X, y)
    >>> bool(model.lambda_1se_ >= model.lambda_min_), model.coef_.shape
    (True, (1, 8))
    """
    )

    def fit(self, X, y, sample_weight=None) -> LassoCVClassifier:
        """Cross-validate the penalty path, then fit all rows at the chosen penalty."""
        X, y, w = self._check_input(X, y, sample_weight)
        self.classes_, codes = _classes(y)
        # y is 1-D here, so checking the distinct labels checks y, without sorting every
        # label again (for strings, a tenth of a fit's time outside the kernels).
        check_classification_targets(self.classes_)
        if self.classes_.size < 2:
            raise ValueError(
                f"{type(self).__name__} needs at least 2 classes; y holds one class only: "
                f"{self.classes_[0].item()!r}"
            )
        w = w / w.sum()
        Xs = self._standardize(X, w)
        # The kernels read the features transposed (one contiguous run per feature).
        XT = np.empty((1 + Xs.shape[1], Xs.shape[0]))
        XT[0] = 1.0
        XT[1:] = Xs.T
        folds = _fold_ids(len(y), self.n_folds, self.random_state, codes)
        positives = [1] if self.classes_.size == 2 else range(self.classes_.size)
        fits = [self._fit_binary(XT, (codes == k).astype(np.float64), w, folds) for k in positives]
        self.coef_ = np.array([coef for coef, _, _ in fits])
        self.intercept_ = np.array([intercept for _, intercept, _ in fits])
        self._set_path_attributes([path for _, _, path in fits])
        return self

    def _fit_binary(
        self, XT: np.ndarray, y: np.ndarray, w: np.ndarray, folds: np.ndarray
    ) -> tuple[np.ndarray, float, _CVPath]:
        """Cross-validate and fit one binary problem: coefficients, intercept and the path
        (``XT``: the standardised features transposed, below a row of ones)."""
        X1 = XT.T
        share = float(w @ y)
        if not PMIN < share < 1.0 - PMIN:
            raise ValueError(
                f"one class has a weighted share of {share:.3g} of the rows: too few to fit a "
                f"binomial model (each class needs more than {PMIN:g} of the weight)"
            )
        pf = self._penalty_factors(np.ones(X1.shape[1] - 1))
        score = np.abs(X1[:, 1:].T @ (w * (y - share)))
        lambdas = self._path(float(np.max(score / pf, initial=0.0)), *X1.shape)
        # Weighted first and second moments of the features per fold: a train set's standard
        # deviations follow from the totals minus its test fold's, without a pass over it.
        fold_w = (folds == np.arange(self.n_folds)[:, None]) * w
        fold_weight = fold_w.sum(axis=1)
        sums, squares = fold_w @ X1[:, 1:], fold_w @ X1[:, 1:] ** 2
        cvraw = np.zeros((self.n_folds, lambdas.size))
        # −log-likelihood of a row = log(1 + e^(sη)) with s = 1 − 2y (s = −1 for the positives).
        sign = 1.0 - 2.0 * y
        # The CV paths only choose λ: they run on the features rounded to single precision
        # (a perturbation of 1e-7 of the problem, invisible in the CV deviance), which halves
        # the memory each pass over the rows reads, a fifth of its time.
        XT_single = XT.astype(np.float32)
        # Memory every path reuses (a fresh array per path costs a page fault per 4 kB where
        # freed memory goes back to the system at once, as in Dask's workers).
        work, features = np.empty(4 * XT.shape[1]), np.empty(XT.size, np.float32)
        longest, failed = 0, 0
        for f in range(self.n_folds):
            train, test = folds != f, folds == f
            scale = _train_scale(sums, squares, fold_weight, f)
            XT_train = features[: XT.shape[0] * np.count_nonzero(train)].reshape(XT.shape[0], -1)
            np.compress(train, XT_single, axis=1, out=XT_train)
            coefs, fitted, bad, _ = self._path_fit(
                XT_train, y[train], w[train], lambdas, True, scale, work
            )
            longest, failed = max(longest, fitted), failed + bad
            if fold_weight[f] > 0:
                deviance = np.empty(fitted)
                _held_out_deviance(
                    XT.compress(test, axis=1), coefs[:fitted], sign[test], w[test], deviance
                )
                mean = deviance / fold_weight[f]
                cvraw[f] = _held_out_tail(mean[None, :], fitted, lambdas.size)[0]
        path = _cv_select(cvraw[:, :longest], fold_weight, lambdas[:longest], self.selection)
        scale = _train_scale(sums, squares, fold_weight, None)
        coefs, fitted, bad, path.n_iter = self._path_fit(
            XT, y, w, lambdas[: path.chosen + 1], False, scale, work
        )
        self._warn_unconverged(failed + bad)
        last = coefs[fitted - 1]
        coef, intercept = self._original_scale(last[1:], last[0])
        return coef, intercept, path

    def _path_fit(
        self,
        XT: np.ndarray,
        y: np.ndarray,
        w: np.ndarray,
        lambdas: np.ndarray,
        early: bool,
        scale: np.ndarray,
        work: np.ndarray,
    ) -> tuple[np.ndarray, int, int, int]:
        """The binomial path on these rows (``XT``: features transposed, below a row of ones),
        whose features have the standard deviations ``scale``: (coefficients per λ, λ fitted,
        λ not converged, sweeps). A fold whose rows hold (nearly) one class gets the
        intercept-only model. ``work``: scratch of at least 4 × rows (``_logistic_path``'s)."""
        w = w / w.sum()
        coefs = np.zeros((lambdas.size, XT.shape[0]))
        share = float(w @ y)
        if not PMIN < share < 1.0 - PMIN:
            share = min(max(share, PMIN), 1.0 - PMIN)
            coefs[:, 0] = math.log(share / (1.0 - share))
            return coefs, lambdas.size, 0, 0
        pf = np.concatenate([[0.0], self._penalty_factors(scale)])
        dev_ratio = np.zeros(lambdas.size)
        scratch = work[: 4 * XT.shape[1]].reshape(2, 2, -1)
        fitted, sweeps, failed = _logistic_path(
            XT, y, w, lambdas, pf, self.tol, self.max_iter, early, coefs, dev_ratio, scratch
        )
        return coefs, fitted, failed, sweeps

    def decision_function(self, X) -> np.ndarray:
        """The linear predictor β₀ + x'β (log-odds): one column per class with more than two."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        scores = X @ self.coef_.T + self.intercept_
        return scores[:, 0] if self.classes_.size == 2 else scores

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities, columns in the order of ``classes_``."""
        scores = self.decision_function(X)
        prob = 1.0 / (1.0 + np.exp(-scores))
        if self.classes_.size == 2:
            return np.column_stack([1.0 - prob, prob])
        return prob / prob.sum(axis=1, keepdims=True)

    def predict(self, X) -> np.ndarray:
        """The most probable class of each row."""
        scores = self.decision_function(X)
        if self.classes_.size == 2:
            return self.classes_[(scores > 0).astype(np.intp)]
        return self.classes_[np.argmax(scores, axis=1)]


class LassoCVRegressor(RegressorMixin, _LassoCVBase):
    __doc__ = (
        """Lasso regression with the penalty chosen by internal K-fold CV of the squared error,
    as R's ``cv.glmnet(family="gaussian")``.

    Minimises (1/2Σw) Σᵢ wᵢ (yᵢ − β₀ − xᵢ'β)² + λ Σⱼ |βⱼ| (features standardised), the
    objective of scikit-learn's ``Lasso(alpha=λ)`` on standardised features. The fits work on
    the weighted Gram matrix of each train set (summed from per-fold blocks: one pass over the
    rows for all folds), so a coordinate-descent sweep costs O(p²) whatever the rows.
    """
        + _DOC_PARAMETERS
        + """
    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float"""
        + _DOC_ATTRIBUTES
        + """
    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from soak_dask import LassoCVRegressor
    >>> X, y = make_regression(n_samples=200, n_features=10, n_informative=3, random_state=0)
    >>> model = LassoCVRegressor(random_state=0).fit(X, y)
    >>> int((model.coef_ != 0).sum()) <= 10
    True
    """
    )

    def fit(self, X, y, sample_weight=None) -> LassoCVRegressor:
        """Cross-validate the penalty path, then fit all rows at the chosen penalty."""
        X, y, w = self._check_input(X, y, sample_weight)
        w = w / w.sum()
        Xs = self._standardize(X, w)
        y_mean = float(w @ y)
        # Weighted moments of [1, X, y] per fold: a train set's are the sum over its folds.
        Z = np.column_stack([np.ones(len(y)), Xs, y - y_mean])
        folds = _fold_ids(len(y), self.n_folds, self.random_state, None)
        blocks = np.array(
            [Z[folds == f].T @ (w[folds == f, None] * Z[folds == f]) for f in range(self.n_folds)]
        )
        total = blocks.sum(axis=0)
        _, _, C, c, _ = _centred(total)
        pf = self._penalty_factors(np.sqrt(np.diag(C)))
        lambdas = self._path(float(np.max(np.abs(c) / pf, initial=0.0)), *X.shape)
        cvraw = np.zeros((self.n_folds, lambdas.size))
        fold_weight = blocks[:, 0, 0]
        longest, failed = 0, 0
        for f in range(self.n_folds):
            test = folds == f
            coefs, fitted, bad, _, intercepts = self._path_fit(total - blocks[f], lambdas, True)
            longest, failed = max(longest, fitted), failed + bad
            if fold_weight[f] > 0:
                pred = intercepts[:fitted] + Xs[test] @ coefs[:fitted].T
                mse = w[test] @ (Z[test, -1:] - pred) ** 2 / fold_weight[f]
                cvraw[f] = _held_out_tail(mse[None, :], fitted, lambdas.size)[0]
        path = _cv_select(cvraw[:, :longest], fold_weight, lambdas[:longest], self.selection)
        coefs, fitted, bad, path.n_iter, intercepts = self._path_fit(
            total, lambdas[: path.chosen + 1], False
        )
        self._warn_unconverged(failed + bad)
        self._set_path_attributes([path])
        self.coef_, intercept = self._original_scale(coefs[fitted - 1], intercepts[fitted - 1])
        self.intercept_ = intercept + y_mean
        return self

    def _path_fit(
        self, moments: np.ndarray, lambdas: np.ndarray, early: bool
    ) -> tuple[np.ndarray, int, int, int, np.ndarray]:
        """The squared-error path from a train set's moments of [1, X, y]: (coefficients per
        λ, λ fitted, subproblems not converged, sweeps, intercepts per λ)."""
        x_mean, y_mean, C, c, yvar = _centred(moments)
        pf = self._penalty_factors(np.sqrt(np.maximum(np.diag(C), 0.0)))
        coefs = np.zeros((lambdas.size, c.size))
        dev_ratio = np.zeros(lambdas.size)
        fitted, sweeps, failed = _gaussian_path(
            C, c, yvar, lambdas, pf, self.tol, self.max_iter, early, coefs, dev_ratio
        )
        return coefs, fitted, failed, sweeps, y_mean - coefs @ x_mean

    def predict(self, X) -> np.ndarray:
        """Predicted values β₀ + x'β."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return X @ self.coef_ + self.intercept_


def _centred(moments: np.ndarray) -> tuple[np.ndarray, float, np.ndarray, np.ndarray, float]:
    """From weighted moments M = Σ wᵢ zᵢzᵢ' of zᵢ = [1, xᵢ, yᵢ]: the means of x and y, the
    centred Gram matrix of x, the covariances of x with y and the variance of y."""
    total = moments[0, 0]
    mean = moments[0, 1:] / total
    cov = moments[1:, 1:] / total - np.outer(mean, mean)
    return (
        mean[:-1],
        float(mean[-1]),
        np.ascontiguousarray(cov[:-1, :-1]),
        cov[:-1, -1].copy(),
        float(cov[-1, -1]),
    )


def kernels_cached() -> bool:
    """Whether numba's disk cache holds this file's kernels (then ``compile_kernels`` takes
    milliseconds); False where it cannot tell."""
    import os

    kernels = (_logistic_path, _gaussian_path, _newton_solve, _cd_quadratic, _weighted_gram)
    try:  # numba's cache locator: no public API names the index file
        return all(os.path.exists(k._cache._cache_file._index_path) for k in kernels)
    except AttributeError:
        return False


def compile_kernels() -> float:
    """Compile (or load from numba's disk cache) every kernel of the lasso learners, on tiny
    data; returns the seconds it took.

    Called once in the client before a run that fits them, so that the compilation (about half
    a minute the first time on a machine) happens with a message instead of inside the first
    fits, and worker processes then load the kernels from the disk cache.
    """
    import time

    start = time.perf_counter()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = (X[:, 0] + rng.normal(size=40) > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        LassoCVClassifier(n_folds=3, n_lambdas=3).fit(X, y)
        LassoCVRegressor(n_folds=3, n_lambdas=3).fit(X, X[:, 0])
    return time.perf_counter() - start


def prepare_kernels(estimators: Any, say: Any = print) -> None:
    """Compile the lasso kernels in this process before a run whose ``estimators`` (a mapping
    of name to estimator) use them, telling ``say`` first when they are not cached yet, so
    that neither the wait nor the progress bar's estimate is a surprise."""

    def uses_lasso(est: Any) -> bool:
        parts = [est, *(est.get_params(deep=True).values() if hasattr(est, "get_params") else ())]
        return any(isinstance(p, LassoCVClassifier | LassoCVRegressor) for p in parts)

    names = [name for name, est in estimators.items() if uses_lasso(est)]
    if not names:
        return
    if not kernels_cached():
        say(
            f"{', '.join(names)}: compiling the lasso kernels with numba (once per installation, "
            "about a minute on two cores; cached on disk for later runs)"
        )
    compile_kernels()
