"""What a comparison's numbers say, in words: the one wording of every verdict.

Every paired test of the package (SOAK's ``pvalues``, ``compare``, the transfer matrix's
``transfer_pvalues``, the subset search's ``search_pvalues``, the AOA sentences) words its
result here, so that no table says more than its data:

- p < alpha: ``"better"`` or ``"worse"`` (compare against reference, in the measure's direction);
- p ≥ alpha (or no p): ``"no evidence of a difference"``, never "similar": a test that does not
  reject says nothing of equality (with 5 folds a 10-point difference can give p = 0.2). The
  interval of the difference, in the measure's own units, says how large a difference the data
  still allow (`verdict_text`);
- ``"equivalent"`` only when the user gives a margin and the two one-sided tests (TOST,
  Schuirmann 1987) both reject at alpha: the 1 − 2·alpha interval of the difference lies
  inside (−margin, margin). Without a margin no verdict says "equivalent".

The Bayesian test gives no p: its rows are "better" / "worse" when the posterior probability of
that side exceeds 1 − alpha.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from ..schema import LOWER_IS_BETTER
from ..stats.mean_tests import ALPHA, base_measure

__all__ = [
    "BETTER",
    "EQUIVALENT",
    "MARKS",
    "NO_EVIDENCE",
    "SAME",
    "WORSE",
    "check_margin",
    "equivalence_p",
    "measure_unit",
    "verdict",
    "verdict_text",
    "with_verdicts",
]

BETTER = "better"
WORSE = "worse"
NO_EVIDENCE = "no evidence of a difference"
EQUIVALENT = "equivalent"
#: The transfer matrix's diagonal: the reference itself, nothing tested.
SAME = "same"
#: A verdict's mark in figures and grids: ▲ worse, ▼ better, ≈ equivalent, none without
#: evidence (a blank is read as "not shown to differ", never as "equal").
MARKS: dict[str, str] = {WORSE: "\u25b2", BETTER: "\u25bc", NO_EVIDENCE: "", EQUIVALENT: "\u2248",
                         SAME: "(same)"}  # fmt: skip
# The unit of a difference of each measure, where it has one.
_UNITS = {"error": "points of error (percent)", "log_loss": "nats"}


def measure_unit(measure: str) -> str:
    """How a difference of ``measure`` is counted, for the text beside its interval.

    >>> measure_unit("error_632"), measure_unit("auc")
    ('points of error (percent)', 'of auc (a share, 0 to 1)')
    """
    base = base_measure(measure)
    if base in _UNITS:
        return _UNITS[base]
    if base in ("accuracy", "balanced_accuracy", "auc"):
        return f"of {base} (a share, 0 to 1)"
    if base in ("mse", "rmse", "mae"):
        return f"of {base} (the label's units{', squared' if base == 'mse' else ''})"
    return f"of {base}"


def check_margin(margin: Any, option: str = "margin") -> float | None:
    """``margin`` as a positive float, or None (not given); anything else refused, naming
    ``option``."""
    if margin is None:
        return None
    if isinstance(margin, bool) or not isinstance(margin, int | float) or not margin > 0:
        raise ValueError(
            f"{option}={margin!r}: the equivalence margin is a positive number in the "
            "measure's own units (e.g. 1 for one point of error), or None for no "
            "equivalence verdict"
        )
    if not math.isfinite(margin):
        raise ValueError(f"{option}={margin!r}: need a finite margin")
    return float(margin)


def _side(mean_diff: float, measure: str) -> str:
    """Whether compare − reference = ``mean_diff`` makes compare worse or better."""
    worse = mean_diff > 0 if base_measure(measure) in LOWER_IS_BETTER else mean_diff < 0
    return WORSE if worse else BETTER


def equivalence_p(
    mean_diff: float, ci_low: float, ci_high: float, df: float, margin: float
) -> float:
    """p of the two one-sided tests of |δ| ≥ ``margin`` (the larger of the two one-sided p),
    from the difference and its 95 % interval (t on ``df`` degrees of freedom; normal when
    ``df`` is not finite). Below alpha: the 1 − 2·alpha interval lies inside ±margin.

    >>> round(equivalence_p(0.0, -1.0, 1.0, math.inf, 2.0), 6)
    4.4e-05
    """
    values = (mean_diff, ci_low, ci_high, df)
    if not all(math.isfinite(v) for v in values[:3]) or not df > 0:
        return math.nan
    dist = sps.t(df) if math.isfinite(df) else sps.norm()
    se = (ci_high - ci_low) / (2 * float(dist.ppf(1 - ALPHA / 2)))
    if not se > 0:
        return 0.0 if abs(mean_diff) < margin else 1.0
    lower = float(dist.sf((mean_diff + margin) / se))  # H0: δ ≤ −margin
    upper = float(dist.cdf((mean_diff - margin) / se))  # H0: δ ≥ margin
    return max(lower, upper)


def verdict(
    mean_diff: float,
    p: float,
    measure: str,
    alpha: float = ALPHA,
    *,
    p_equivalence: float = math.nan,
) -> str:
    """The verdict of one comparison (compare − reference = ``mean_diff``, two-sided ``p``):
    ``"better"`` / ``"worse"`` when p < alpha, else ``"equivalent"`` when
    ``p_equivalence`` (`equivalence_p`, only with a margin) is below alpha, else
    ``"no evidence of a difference"``.

    >>> verdict(-2.2, 0.32, "error"), verdict(9.0, 0.001, "error"), verdict(0.02, 0.01, "auc")
    ('no evidence of a difference', 'worse', 'better')
    """
    if math.isfinite(p) and p < alpha:
        return _side(mean_diff, measure)
    if math.isfinite(p_equivalence) and p_equivalence < alpha:
        return EQUIVALENT
    return NO_EVIDENCE


def _bayesian_verdict(row: Any, alpha: float) -> str:
    """A Bayesian row's verdict: a side whose posterior probability exceeds 1 − alpha."""
    if row.p_compare_better > 1 - alpha:
        return BETTER
    if row.p_reference_better > 1 - alpha:
        return WORSE
    return NO_EVIDENCE


def with_verdicts(
    table: pd.DataFrame, alpha: float = ALPHA, margin: float | None = None
) -> pd.DataFrame:
    """A paired-test table (``schema.PAIRED_TEST_COLUMNS``: ``measure``, ``mean_diff``,
    ``ci_low``, ``ci_high``, ``df``, ``p``, ``method``) with ``verdict`` at the end, and
    with a ``margin`` also ``margin`` and ``p_equivalence`` (`equivalence_p`) before it.

    Parameters
    ----------
    table : pandas.DataFrame
        From ``pvalues``, ``compare``, ``transfer_pvalues`` or ``search_pvalues``.
    alpha : float
        Level of the tests.
    margin : float, optional
        Equivalence margin in the measure's own units (1 = one point of error): rows whose
        two one-sided tests reject at alpha read ``"equivalent"``. None: no row does.

    Examples
    --------
    >>> t = pd.DataFrame({"measure": ["error"] * 2, "mean_diff": [0.1, 6.0], "ci_low": [-0.5, 1],
    ...                   "ci_high": [0.7, 11.0], "df": [9.0, 9.0], "p": [0.7, 0.02],
    ...                   "method": "paired"})
    >>> with_verdicts(t, margin=1.0)[["p_equivalence", "verdict"]].round(4)
       p_equivalence     verdict
    0          0.004  equivalent
    1          0.975       worse
    """
    margin = check_margin(margin)
    out = table.copy()
    p_equivalence = np.full(len(out), math.nan)
    verdicts = []
    for i, row in enumerate(out.itertuples(index=False)):
        if margin is not None:
            df = math.inf if getattr(row, "method", "") == "mcnemar" else float(row.df)
            p_equivalence[i] = equivalence_p(row.mean_diff, row.ci_low, row.ci_high, df, margin)
        if getattr(row, "method", "") == "bayesian":
            judged = _bayesian_verdict(row, alpha)
            if judged == NO_EVIDENCE:
                judged = verdict(row.mean_diff, math.nan, row.measure, alpha,
                                 p_equivalence=p_equivalence[i])  # fmt: skip
            verdicts.append(judged)
        else:
            verdicts.append(
                verdict(row.mean_diff, row.p, row.measure, alpha, p_equivalence=p_equivalence[i])
            )
    if margin is not None:
        out["margin"], out["p_equivalence"] = margin, p_equivalence
    out["verdict"] = verdicts
    return out


def verdict_text(row: Any, names: tuple[str, str] | None = None) -> str:
    """One comparison in words, its interval in the measure's own units: "worse: transfer −
    same = 9.1 points of error (percent), 95 % interval 4.2 to 14"; a row without a verdict
    column or an interval says so.

    Parameters
    ----------
    row : namedtuple or pandas.Series
        A row of `with_verdicts`.
    names : (compare, reference), optional
        Default: the row's ``compare`` and ``reference``.
    """
    get = row.get if isinstance(row, pd.Series) else lambda k, d=None: getattr(row, k, d)
    compare, reference = names or (get("compare", "compare"), get("reference", "reference"))
    judged = get("verdict", NO_EVIDENCE)
    diff, low, high = (float(get(k, math.nan)) for k in ("mean_diff", "ci_low", "ci_high"))
    unit = measure_unit(str(get("measure", "")))
    if not math.isfinite(diff):
        return f"{judged}: {compare} − {reference} undefined"
    text = f"{judged}: {compare} − {reference} = {diff:.3g} {unit}"
    if math.isfinite(low) and math.isfinite(high):
        text += f", 95 % interval {low:.3g} to {high:.3g}"
    else:
        text += " (no interval: the test is undefined)"
    if judged == EQUIVALENT:
        text += f" (within ±{get('margin'):g}: two one-sided tests, p = {get('p_equivalence'):.2g})"
    return text
