"""The Friedman test of k treatments over N blocks and the Nemenyi post-hoc test, on a table of
scores (Demšar 2006, "Statistical comparisons of classifiers over multiple data sets").

Each block (a test subset, a data set) ranks the treatments (learners), 1 the best, ties the
average of the ranks they span. Under the null every treatment has the same expected rank; the
Friedman statistic χ² (tie-corrected, as R's ``friedman.test`` and scipy's
``friedmanchisquare``) and the Iman–Davenport F derived from it test that. The Nemenyi test
compares every pair: two treatments differ at level α when their average ranks differ by more
than the critical difference ``CD = q_α · √(k(k+1)/(6N))``, ``q_α`` the studentized range
quantile over √2 (scikit-posthocs' ``posthoc_nemenyi_friedman`` gives the same p-values).

The functions take numbers, not results, so ``friedman_nemenyi`` (SOAK results, in
``soak_dask.results.friedman``) and the level simulation of ``benchmarks/friedman_level.py`` run
the same code.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats as sps

from .mean_tests import ALPHA

__all__ = [
    "PAIR_COLUMNS",
    "FriedmanNemenyi",
    "FriedmanTest",
    "block_ranks",
    "cd_groups",
    "friedman_nemenyi_scores",
    "friedman_test",
    "nemenyi_cd",
    "nemenyi_pvalues",
    "permutation_p",
]

#: Random permutations behind `permutation_p`, drawn from a fixed seed: the same table gives the
#: same p-value on every run.
PERMUTATIONS = 9999
_PERMUTATION_SEED = 2006
_CHUNK = 1000  # permutations held at once: 1000 × N × k ranks

#: Columns of `FriedmanNemenyi.pairs`.
PAIR_COLUMNS: list[str] = ["a", "b", "rank_difference", "p_nemenyi", "significant"]


@dataclass(frozen=True)
class FriedmanTest:
    """The Friedman test: ``chi2`` (df ``k − 1``) and its ``p``; the Iman–Davenport ``f``
    (df ``df1 = k − 1``, ``df2 = (k − 1)(N − 1)``) and its ``f_p``."""

    chi2: float
    p: float
    f: float
    f_p: float
    df1: float
    df2: float


@dataclass(frozen=True, eq=False)
class FriedmanNemenyi:
    """A Friedman test with the Nemenyi critical difference, as `friedman_nemenyi_scores` returns.

    Attributes
    ----------
    measure : str
        What the scores are (e.g. ``"error"``).
    lower_is_better : bool
        Whether rank 1 went to the lowest score.
    block_score : str
        How each block's score was made (e.g. the mean over a test subset's folds).
    scores, ranks : pandas.DataFrame
        One row per block, one column per treatment (index and columns named after them, e.g.
        ``test_subset`` and ``learner``); ranks 1 (best) to k, ties averaged.
    average_ranks : pandas.Series
        Each treatment's mean rank over the blocks, best (lowest) first.
    chi2, p : float
        Friedman's χ² (tie-corrected, df ``k − 1``) and its p-value.
    f, f_p : float
        The Iman–Davenport F (df ``k − 1`` and ``(k − 1)(N − 1)``) and its p-value: less
        conservative than χ² (Demšar 2006 recommends it).
    p_permutation : float
        The p-value of χ² from its permutation distribution (`permutation_p`): it holds its
        level with few blocks, where ``p`` and ``f_p`` may over-reject
        (``benchmarks/friedman_level.py``).
    alpha, q_alpha, cd : float
        The level, the studentized range quantile over √2 and the critical difference.
    pairs : pandas.DataFrame
        Every pair of treatments (`PAIR_COLUMNS`): ``a`` the better ranked, ``b``, their
        ``rank_difference``, the Nemenyi ``p_nemenyi`` and ``significant`` (difference > CD),
        the largest differences first.
    groups : tuple of tuple of str
        The maximal runs of treatments, in rank order, whose ranks lie within CD of each other:
        the bars of the critical-difference diagram (runs of one treatment left out).
    """

    measure: str
    lower_is_better: bool
    block_score: str
    scores: pd.DataFrame = field(repr=False)
    ranks: pd.DataFrame = field(repr=False)
    average_ranks: pd.Series = field(repr=False)
    chi2: float
    p: float
    f: float
    f_p: float
    p_permutation: float
    alpha: float
    q_alpha: float
    cd: float
    pairs: pd.DataFrame = field(repr=False)
    groups: tuple[tuple[str, ...], ...]

    @property
    def n_blocks(self) -> int:
        """N, the blocks (e.g. test subsets)."""
        return len(self.scores.index)

    @property
    def n_treatments(self) -> int:
        """k, the treatments (e.g. learners)."""
        return len(self.scores.columns)


def block_ranks(scores: np.ndarray, lower_is_better: bool = True) -> np.ndarray:
    """Ranks within each row of `scores` (blocks × treatments): 1 the best, ties averaged.

    Examples
    --------
    >>> block_ranks(np.array([[0.2, 0.1, 0.2], [3.0, 2.0, 1.0]]))
    array([[2.5, 1. , 2.5],
           [3. , 2. , 1. ]])
    """
    return sps.rankdata(scores if lower_is_better else -scores, axis=1)


def _tie_correction(ranks: np.ndarray) -> float:
    """1 − Σ(t³ − t) / (N k (k² − 1)) over every group of t tied ranks of every block."""
    n, k = ranks.shape
    ties = 0.0
    for row in ranks:
        counts = np.unique(row, return_counts=True)[1].astype(float)
        ties += float(np.sum(counts**3 - counts))
    return 1.0 - ties / (n * k * (k * k - 1))


def friedman_test(ranks: np.ndarray) -> FriedmanTest:
    """Friedman's χ² and the Iman–Davenport F of `ranks` (blocks × treatments, `block_ranks`).

    ``χ² = 12N / (k(k+1)) · Σⱼ (Rⱼ − (k+1)/2)² / C`` with ``Rⱼ`` the average ranks and ``C``
    the tie correction; ``F = (N − 1) χ² / (N(k − 1) − χ²)`` (infinite, p = 0, when every block
    ranks the treatments alike).

    Raises
    ------
    ValueError
        If every block ties every treatment: the ranks carry no information.

    Examples
    --------
    >>> r = friedman_test(block_ranks(np.array([[1.0, 2, 3], [1, 3, 2], [1, 2, 3], [2, 1, 3]])))
    >>> round(r.chi2, 4), round(r.p, 4), round(r.f, 4), round(r.f_p, 4)
    (4.5, 0.1054, 3.8571, 0.0837)
    """
    n, k = ranks.shape
    correction = _tie_correction(ranks)
    if correction <= 0:
        raise ValueError(
            f"every one of the {n} blocks ties all {k} treatments: their ranks are equal and "
            "there is nothing to test"
        )
    spread = float(np.sum((ranks.mean(axis=0) - (k + 1) / 2) ** 2))
    chi2 = 12 * n / (k * (k + 1)) * spread / correction
    df1, df2 = k - 1, (k - 1) * (n - 1)
    rest = n * (k - 1) - chi2
    # Up to rounding, χ² = N(k − 1) is the most it can be: full agreement of the blocks.
    full = rest <= 1e-12 * n * (k - 1)
    f = math.inf if full else (n - 1) * chi2 / rest
    f_p = 0.0 if full else float(sps.f.sf(f, df1, df2))
    return FriedmanTest(chi2, float(sps.chi2.sf(chi2, df1)), f, f_p, float(df1), float(df2))


def permutation_p(ranks: np.ndarray, permutations: int = PERMUTATIONS) -> float:
    """Monte Carlo p-value of Friedman's statistic under exchangeable ranks within each block.

    Under the null each block's ranks are equally likely in any order: `permutations` tables
    with each row of `ranks` shuffled (tied ranks stay in their block, so the tie correction
    does not change and ``S = Σⱼ (Σ_b r_bj)²`` orders the tables as χ² does) give
    ``p = (1 + #{S* ≥ S}) / (1 + permutations)``, a valid p-value for any number of draws
    (Phipson and Smyth 2010). Drawn from a fixed seed: reproducible.

    Examples
    --------
    >>> ranks = block_ranks(np.array([[1.0, 2, 3], [1, 3, 2], [1, 2, 3], [2, 1, 3]]))
    >>> round(permutation_p(ranks), 3)  # exactly: 162 of the 6⁴ orders reach S, p = 0.125
    0.126
    """
    rng = np.random.default_rng(_PERMUTATION_SEED)
    observed = float(np.sum(ranks.sum(axis=0) ** 2))
    reached = 0
    for start in range(0, permutations, _CHUNK):
        size = min(_CHUNK, permutations - start)
        tables = rng.permuted(np.broadcast_to(ranks, (size, *ranks.shape)), axis=2)
        stats = np.sum(tables.sum(axis=1) ** 2, axis=1)
        # Rank sums are multiples of 0.5: equal statistics are equal floats, up to rounding.
        reached += int(np.count_nonzero(stats >= observed - 1e-9 * observed))
    return (1 + reached) / (1 + permutations)


def nemenyi_cd(k: int, n: int, alpha: float = ALPHA) -> tuple[float, float]:
    """``(q_α, CD)``: the studentized range quantile of k means (infinite df) over √2, and the
    critical difference ``q_α · √(k(k+1)/(6n))`` of average ranks over `n` blocks.

    Examples
    --------
    >>> [round(v, 3) for v in nemenyi_cd(4, 14)]  # Demšar (2006), section 3.2.4
    [2.569, 1.254]
    """
    q_alpha = _q_alpha(k, alpha)
    return q_alpha, q_alpha * math.sqrt(k * (k + 1) / (6 * n))


@functools.lru_cache(maxsize=256)
def _q_alpha(k: int, alpha: float) -> float:
    """The studentized range quantile over √2, cached: scipy integrates it numerically (60 ms)."""
    return float(sps.studentized_range.ppf(1 - alpha, k, np.inf)) / math.sqrt(2)


def nemenyi_pvalues(average_ranks: np.ndarray, n: int) -> np.ndarray:
    """k × k Nemenyi p-values of every pair of `average_ranks` over `n` blocks (1 on the
    diagonal): the studentized range survival of ``|Rᵢ − Rⱼ| / √(k(k+1)/(6n)) · √2``."""
    k = average_ranks.size
    diff = np.abs(average_ranks[:, None] - average_ranks[None, :])
    q = diff / math.sqrt(k * (k + 1) / (6 * n)) * math.sqrt(2)
    out = np.ones((k, k))
    upper = np.triu_indices(k, 1)
    out[upper] = sps.studentized_range.sf(q[upper], k, np.inf)
    out.T[upper] = out[upper]
    return out


def cd_groups(average_ranks: pd.Series, cd: float) -> tuple[tuple[str, ...], ...]:
    """The maximal runs, in rank order, of treatments whose average ranks lie within `cd`.

    Examples
    --------
    >>> cd_groups(pd.Series({"a": 1.0, "b": 1.5, "c": 2.5, "d": 3.9}), 1.2)
    (('a', 'b'), ('b', 'c'))
    """
    ranked = average_ranks.sort_values(kind="stable")
    values, names = ranked.to_numpy(), [str(n) for n in ranked.index]
    groups: list[tuple[str, ...]] = []
    last = 0
    for i, start in enumerate(values):
        # The last treatment not significantly worse than treatment i (difference ≤ CD).
        j = int(np.searchsorted(values, start + cd, side="right")) - 1
        if j > i and j > last:
            groups.append(tuple(names[i : j + 1]))
            last = j
    return tuple(groups)


def _pairs(average_ranks: pd.Series, n: int, cd: float) -> pd.DataFrame:
    """Every pair of treatments, the better ranked first, largest rank difference first."""
    ranked = average_ranks.sort_values(kind="stable")
    pvalues = nemenyi_pvalues(ranked.to_numpy(), n)
    names = [str(x) for x in ranked.index]
    rows = [
        (names[i], names[j], ranked.iloc[j] - ranked.iloc[i], pvalues[i, j])
        for i in range(len(names))
        for j in range(i + 1, len(names))
    ]
    out = pd.DataFrame(rows, columns=PAIR_COLUMNS[:-1])
    out["significant"] = out["rank_difference"] > cd
    return out.sort_values("rank_difference", ascending=False, kind="stable").reset_index(drop=True)


def _check_scores(scores: pd.DataFrame, alpha: float) -> None:
    """Refuse a score table the test cannot use, saying which cells or option and what to do."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha={alpha!r}: need a level in (0, 1), e.g. 0.05")
    blocks = str(scores.index.name or "block").replace("_", " ")
    treatments = str(scores.columns.name or "treatment").replace("_", " ")
    if scores.shape[1] < 2:
        raise ValueError(
            f"the Friedman test compares at least 2 {treatments}s; got "
            f"{scores.shape[1]} ({', '.join(map(str, scores.columns)) or 'none'}): "
            f"run more {treatments}s"
        )
    if scores.shape[0] < 2:
        raise ValueError(
            f"the Friedman test needs at least 2 {blocks}s to rank the {treatments}s over; got "
            f"{scores.shape[0]} ({', '.join(map(str, scores.index)) or 'none'})"
        )
    missing = scores.isna().stack()
    missing = missing[missing]
    if len(missing):
        cells = ", ".join(f"({b!r}, {t!r})" for b, t in missing.index[:10])
        more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
        raise ValueError(
            f"{len(missing)} score(s) are missing ({blocks}, {treatments}): {cells}{more}; the "
            f"Friedman test ranks every {treatments} in every {blocks}: drop "
            f"those {blocks}s or {treatments}s first"
        )


def friedman_nemenyi_scores(
    scores: pd.DataFrame,
    *,
    lower_is_better: bool = True,
    alpha: float = ALPHA,
    measure: str = "score",
    block_score: str = "one score per block",
) -> FriedmanNemenyi:
    """Friedman test and Nemenyi critical difference of a blocks × treatments score table.

    Parameters
    ----------
    scores : pandas.DataFrame
        One row per block (data set, test subset), one column per treatment (learner), no
        missing value. The index and columns names, when set, name them in messages.
    lower_is_better : bool, default True
        Rank 1 to the lowest score (an error) or, if False, to the highest (an accuracy).
    alpha : float, default 0.05
        Level of the Nemenyi critical difference.
    measure, block_score : str
        Carried to the result: what the scores are and how each block's was made.

    Returns
    -------
    FriedmanNemenyi

    Raises
    ------
    ValueError
        With fewer than 2 treatments or 2 blocks, a missing score (the cells are named), an
        `alpha` outside (0, 1), or when every block ties every treatment.

    Examples
    --------
    >>> table = pd.DataFrame({"a": [1.0, 1.0, 2.0, 1.0], "b": [2.0, 3.0, 1.0, 2.0],
    ...                       "c": [3.0, 2.0, 3.0, 3.0]})
    >>> r = friedman_nemenyi_scores(table)
    >>> r.average_ranks.to_dict(), round(r.chi2, 2), round(r.cd, 3), r.groups
    ({'a': 1.25, 'b': 2.0, 'c': 2.75}, 4.5, 1.657, (('a', 'b', 'c'),))
    """
    _check_scores(scores, alpha)
    ranks = block_ranks(scores.to_numpy(dtype=np.float64), lower_is_better)
    test = friedman_test(ranks)
    n, k = ranks.shape
    q_alpha, cd = nemenyi_cd(k, n, alpha)
    average = pd.Series(ranks.mean(axis=0), index=scores.columns, name="average_rank")
    average = average.sort_values(kind="stable")
    return FriedmanNemenyi(
        measure=measure,
        lower_is_better=lower_is_better,
        block_score=block_score,
        scores=scores.copy(),
        ranks=pd.DataFrame(ranks, index=scores.index, columns=scores.columns),
        average_ranks=average,
        chi2=test.chi2,
        p=test.p,
        f=test.f,
        f_p=test.f_p,
        p_permutation=permutation_p(ranks),
        alpha=float(alpha),
        q_alpha=q_alpha,
        cd=cd,
        pairs=_pairs(average, n, cd),
        groups=cd_groups(average, cd),
    )
