"""``split_sensitivity``: does a K-fold CV estimate on the train part agree with the test part,
and at which train/test ratio?

Each trial is a seeded random train/test split at ratio r -- exactly round(r·N) rows to train,
class-stratified (whole groups per side with a group column, r of the rows to within a group),
the exact-share draw of ``soak_dask.split.shares`` -- with K folds inside its train part. Per
(ratio, trial) the plan has K CV fits (train part minus fold k, scored on fold k) and one fit
on the whole train part, scored on the test part; all run as one ``Plan`` on the engine.

Comparing the K fold scores of one trial with its one test score by a variance test (the
seed's sketch) says nothing: one value has no spread. Instead, per ratio, the ``n_repeats`` CV
estimates (each the mean of K folds) and the ``n_repeats`` test scores are two samples of one
size whose variances Levene's and the F test compare; per trial, the test score is checked
against the CV folds' prediction interval for a new score.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from scipy import stats as sps
from sklearn.base import BaseEstimator

from ..learn.builtin import resolve_learners
from ..option_checks import checked
from ..results.estimates import TRIAL_FOLD_MEAN_BASIS, estimate_banner, fold_estimates
from ..run.entry import entry_point
from ..run.run_design import run_on
from ..run.session import result_attrs, start
from ..run_options import RunOptions
from ..schema import LOWER_IS_BETTER, MEASURE_NAMES
from ..split.trials import SplitTrials
from ..tables.table import Table, check_table

#: Title of split_sensitivity's results.
TITLE = "soak_dask split-ratio sensitivity: CV on the train part against the test part"
#: The learner and measure when none is given, by task.
DEFAULTS = {"classification": ("logistic", "accuracy"), "regression": ("linear", "rmse")}
#: How the recommended ratios are chosen, recorded in the results.
RULE = (
    "ratios where neither Levene's test nor the F test rejects equal variances of the CV "
    "estimates and the test scores at alpha, and, among those, the highest share of trials "
    "whose test score lies in the CV prediction interval (ties: all of them)"
)


@entry_point
@checked("split-sensitivity", design=SplitTrials)
def split_sensitivity(
    table: Table,
    learners: Mapping[str, Any] | Sequence[Any] | BaseEstimator | str | None = None,
    design: SplitTrials | None = None,
    *,
    measures: Sequence[str] | str | None = None,
    alpha: float = 0.05,
    options: RunOptions | None = None,
) -> xr.Dataset:
    """Compare K-fold CV on the train part with the test score, over random splits per ratio.

    For each train ratio r and trial t, a seeded random split puts r of the rows in the train
    part (whole groups per side with a group column; class-stratified otherwise) and K folds
    inside it (grouped, stratified, as ``evaluate``'s). The learner is fitted K times (train
    part minus fold k, scored on fold k) and once on the whole train part, scored on the test
    part. The subset and fold columns of the table play no part.

    Parameters
    ----------
    table : Table
        From ``soak_dask.load_table``.
    learners : str, estimator, dict or list, optional
        The one learner studied, as ``soak`` takes learners: a built-in name, a scikit-learn
        estimator, a one-entry dict ``{name: estimator or built-in name}`` or a one-item list
        (several are refused: the statistics and the recommended ratio are one learner's; call
        once per learner). Default: logistic regression (linear for regression). Formerly
        ``learner``.
    design : SplitTrials, optional
        The train ``ratios``, the random splits per ratio ``n_repeats`` (at least 3), K of the
        CV inside each train part ``n_folds`` and the ``seed`` of every split and of built-in
        learners (``soak_dask.SplitTrials``, checked when made; default ``SplitTrials()``:
        ratios 0.5, 0.7, 0.8, 0.9, 20 splits each, 5 folds). Same seed, same results,
        whatever the partitioning or the number of workers. The share of each ratio drawn is
        ``ratio_used``.
    measures : str or list of str, optional
        Measures of the task (``soak_dask.schema.MEASURES``) to score; the first is the one
        the statistics and the recommendation use (``cv_score``, ``test_score``...), the others
        are kept as ``cv_<measure>`` and ``test_<measure>``. Default: accuracy (rmse for
        regression). Formerly ``measure``.
    alpha : float
        Level of the prediction intervals and of the variance tests, in (0, 0.5].
    options : RunOptions, optional
        How the run runs (``soak_dask.RunOptions``, default ``RunOptions()``): its client,
        progress bar, checkpoint, ``persist``, ``error_score`` and fitting strategy
        (``onepass``, ``max_train_rows``, ``incremental``, ``epochs``), as for
        ``soak_dask.soak``. ``persist`` keeps the table and its ``len(ratios) × n_repeats``
        one-byte key columns in cluster memory; pass False for a table near the cluster's
        memory. The fitting options apply to the CV fits and the fits on the whole train part:
        additive learners from one pass of block statistics where the engine can; a train set
        larger than ``max_train_rows`` fitted on a seeded, stratified sample of exactly that
        many rows (``n_train``, ``cv_n_train`` record them); ``partial_fit`` learners fed one
        block of train rows per task, ``epochs`` times.

    Returns
    -------
    xarray.Dataset
        Dims (ratio, trial, fold). ``cv_score`` (ratio, trial, fold) with ``cv_n_train`` and
        ``cv_n_test``; ``test_score``, ``n_train``, ``n_test`` (ratio, trial) of the fit on
        the whole train part; per trial the CV estimate (``cv_estimate``, the mean of the K
        folds), ``cv_sd``, the prediction interval ``pi_low``/``pi_high`` and ``consistent``;
        per ratio the statistics of ``sensitivity_statistics`` and ``recommended``. Settings
        are in ``attrs``.

    Examples
    --------
    >>> table = sd.load_table("aztrees.parquet", label="y", group="polygon")  # doctest: +SKIP
    >>> ds = sd.split_sensitivity(table, "logistic", sd.SplitTrials(n_repeats=10))  # doctest: +SKIP
    >>> split_sensitivity_summary(ds)  # doctest: +SKIP
    """
    check_table(table, "split_sensitivity")
    seed = design.seed
    learner, measure = DEFAULTS[table.task]
    session = start(
        table,
        "split_sensitivity",
        one_learner(learner if learners is None else learners, table.task, seed),
        measures=measure if measures is None else measures,
        seed=seed,
        options=options,
    )
    ds, ran = run_on(session, table, design, options.persist)
    used = design.learned_
    settings = _settings(ran, session.estimators, design, alpha)
    ds = _scores(ds).assign_coords(ratio=np.array(design.ratios, dtype=np.float64))
    ds["ratio_used"] = ("ratio", used["ratio_used"])
    ds["ratio_used"].attrs["long_name"] = "share of the rows that train, as drawn"
    ds = ds.assign(sensitivity_statistics(ds["cv_score"], ds["test_score"], alpha))
    chosen = [f"{r:g}" for r in ds["ratio"].values[ds["recommended"].values]]
    return ds.assign_attrs(result_attrs({**settings, "recommended": chosen, "rule": RULE}))


def _settings(
    ran: dict[str, Any],
    estimators: dict[str, BaseEstimator],
    design: SplitTrials,
    alpha: float,
) -> dict[str, Any]:
    """What the result records: the settings of its design's run (``run_on``: the table's
    roles, the seed, the measures, the classes, the fits...) and the diagnostic's own, as
    ``evaluate``'s attrs do."""
    name, estimator = next(iter(estimators.items()))
    measure = ran["measures"][0]
    return {
        **ran,
        "title": TITLE,
        "design": "split_sensitivity",
        "learner": name,
        "learner_repr": repr(estimator),
        "measure": measure,
        "measure_name": MEASURE_NAMES[measure],
        "ratios": [f"{r:g}" for r in design.ratios],
        "n_repeats": design.n_repeats,
        "n_folds": design.n_folds,
        "alpha": alpha,
    }


def one_learner(learner: Any, task: str, seed: int) -> dict[str, BaseEstimator]:
    """``{name: estimator}`` of exactly one learner (see ``resolve_learners``)."""
    estimators = resolve_learners(learner, task, seed)
    if len(estimators) != 1:
        raise ValueError(
            f"learners: got {len(estimators)} learners ({', '.join(estimators)}); the "
            "diagnostic studies one learner at a time (its statistics and recommended ratio "
            "are one learner's): call it once per learner"
        )
    return estimators


def _scores(ds: xr.Dataset) -> xr.Dataset:
    """The engine's result (learner, ratio, trial, fold 0..K) as CV scores over folds 1..K
    and the test part's score (fold 0)."""
    ds = ds.isel(learner=0, drop=True).reset_coords("fit_id", drop=True)
    measure, *others = ds.attrs["measures"]
    cv, test = ds.sel(fold=ds["fold"] > 0), ds.sel(fold=0, drop=True)
    out = xr.Dataset(
        {
            "cv_score": cv[measure],
            "cv_n_train": cv["n_train"],
            "cv_n_test": cv["n_test"],
            "test_score": test[measure],
            "n_train": test["n_train"],
            "n_test": test["n_test"],
        }
    )
    out["cv_score"].attrs["long_name"] = f"{MEASURE_NAMES[measure]} of CV fold k (train part)"
    out["test_score"].attrs["long_name"] = f"{MEASURE_NAMES[measure]} on the test part"
    out["cv_n_train"].attrs["long_name"] = "rows fitting the CV fold's model"
    out["cv_n_test"].attrs["long_name"] = "rows in the CV fold"
    out["n_train"].attrs["long_name"] = "rows in the train part"
    out["n_test"].attrs["long_name"] = "rows in the test part"
    for other in others:  # scored, not used by the statistics
        name = MEASURE_NAMES[other]
        out[f"cv_{other}"] = cv[other].assign_attrs(long_name=f"{name} of CV fold k")
        out[f"test_{other}"] = test[other].assign_attrs(long_name=f"{name} on the test part")
    return out


def prediction_interval(
    scores: np.ndarray, alpha: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Mean, SD (ddof 1) and the 1 − alpha prediction interval of one more score, from K
    scores on the last axis: mean ± t(K−1, 1−alpha/2) · sd · sqrt(1 + 1/K).

    Examples
    --------
    >>> mean, sd, low, high = prediction_interval(np.array([0.8, 0.9, 0.85]), 0.05)
    >>> round(float(mean), 3), round(float(low), 3), round(float(high), 3)
    (0.85, 0.602, 1.098)
    """
    k = scores.shape[-1]
    mean, sd = scores.mean(axis=-1), scores.std(axis=-1, ddof=1)
    half = sps.t.ppf(1 - alpha / 2, k - 1) * sd * np.sqrt(1 + 1 / k)
    return mean, sd, mean - half, mean + half


def f_test(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Two-sided F test of equal variances of two normal samples: var(a)/var(b) and its p.

    Examples
    --------
    >>> f, p = f_test(np.array([1.0, 2.0, 3.0, 4.0]), np.array([1.0, 3.0, 5.0, 7.0]))
    >>> round(f, 3), round(p, 3)
    (0.25, 0.285)
    """
    va, vb = np.var(a, ddof=1), np.var(b, ddof=1)
    if va == vb == 0:
        return np.nan, np.nan
    with np.errstate(divide="ignore"):
        f = va / vb
    dist = sps.f(len(a) - 1, len(b) - 1)
    return float(f), float(min(1.0, 2 * min(dist.cdf(f), dist.sf(f))))


def pitman_morgan(a: np.ndarray, b: np.ndarray) -> float:
    """p of the Pitman–Morgan test of equal variances of paired samples: the correlation of
    a + b with a − b is zero exactly when var(a) = var(b)."""
    return _pearson(a + b, a - b)[1]


def _pearson(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    if len(a) < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return np.nan, np.nan  # undefined: no spread to correlate
    res = sps.pearsonr(a, b)
    return float(res.statistic), float(res.pvalue)


def _levene(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    if np.ptp(a) == 0 and np.ptp(b) == 0:
        return np.nan, np.nan
    res = sps.levene(a, b)  # centred on the medians (Brown-Forsythe): robust to skew
    return float(res.statistic), float(res.pvalue)


#: Per-ratio statistics and their long names, in order.
RATIO_STATISTICS: dict[str, str] = {
    "n_trials_used": "trials with a CV estimate and a test score (no failed fit)",
    "cv_estimate_mean": "mean over trials of the CV estimate",
    "cv_estimate_sd": "SD over trials of the CV estimate",
    "test_score_mean": "mean over trials of the test score",
    "test_score_sd": "SD over trials of the test score",
    "levene_stat": "Levene's W (median-centred): CV estimates vs test scores",
    "levene_p": "p of Levene's test of equal variances",
    "f_stat": "F = var(CV estimates) / var(test scores)",
    "f_p": "p of the two-sided F test of equal variances",
    "pitman_morgan_p": "p of the Pitman–Morgan test of equal variances (paired by trial)",
    "correlation": "Pearson correlation of CV estimate and test score over trials",
    "correlation_p": "p of the correlation (zero correlation as null)",
    "consistent_share": "share of trials whose test score lies in the CV prediction interval",
}


def sensitivity_statistics(
    cv_score: xr.DataArray, test_score: xr.DataArray, alpha: float
) -> dict[str, xr.DataArray]:
    """Per trial the CV estimate, its prediction interval and whether the test score lies in
    it; per ratio the variance tests, the correlation, the share of consistent trials and the
    recommended ratios (``RULE``).

    Parameters
    ----------
    cv_score : DataArray
        Dims (ratio, trial, fold).
    test_score : DataArray
        Dims (ratio, trial).
    alpha : float
        Level of the intervals and tests.
    """
    cv = cv_score.transpose("ratio", "trial", "fold").values
    test = test_score.transpose("ratio", "trial").values
    mean, sd, low, high = prediction_interval(cv, alpha)
    out = {
        "cv_estimate": (mean, "CV estimate: mean of the K fold scores"),
        "cv_sd": (sd, "SD of the K fold scores"),
        "pi_low": (low, f"low end of the {1 - alpha:.0%} prediction interval for a new score"),
        "pi_high": (high, f"high end of the {1 - alpha:.0%} prediction interval"),
        "consistent": ((low <= test) & (test <= high), "test score in the prediction interval"),
    }
    per_trial = {
        name: xr.DataArray(v, dims=("ratio", "trial"), attrs={"long_name": text})
        for name, (v, text) in out.items()
    }
    rows = [_ratio_row(mean[i], test[i], per_trial["consistent"].values[i]) for i in range(len(cv))]
    per_ratio = {
        name: xr.DataArray([r[name] for r in rows], dims="ratio", attrs={"long_name": text})
        for name, text in RATIO_STATISTICS.items()
    }
    per_ratio["n_trials_used"] = per_ratio["n_trials_used"].astype(np.int64)
    per_ratio["recommended"] = xr.DataArray(
        recommend(per_ratio["levene_p"].values, per_ratio["f_p"].values,
                  per_ratio["consistent_share"].values, alpha),
        dims="ratio",
        attrs={"long_name": "recommended ratio", "rule": RULE},
    )  # fmt: skip
    return {**per_trial, **per_ratio}


def _ratio_row(cv: np.ndarray, test: np.ndarray, consistent: np.ndarray) -> dict[str, float]:
    """The per-ratio statistics from the trials' CV estimates and test scores (failed trials,
    NaN, left out)."""
    ok = np.isfinite(cv) & np.isfinite(test)
    a, b = cv[ok], test[ok]
    row = dict.fromkeys(RATIO_STATISTICS, np.nan)
    row["n_trials_used"] = int(ok.sum())
    if ok.sum() < 2:
        return row
    row.update(
        cv_estimate_mean=a.mean(),
        cv_estimate_sd=a.std(ddof=1),
        test_score_mean=b.mean(),
        test_score_sd=b.std(ddof=1),
        consistent_share=consistent[ok].mean(),
    )
    row["levene_stat"], row["levene_p"] = _levene(a, b)
    row["f_stat"], row["f_p"] = f_test(a, b)
    row["correlation"], row["correlation_p"] = _pearson(a, b)
    row["pitman_morgan_p"] = pitman_morgan(a, b)
    return row


def recommend(levene_p: np.ndarray, f_p: np.ndarray, share: np.ndarray, alpha: float) -> np.ndarray:
    """Which ratios ``RULE`` recommends. A test with an undefined p (both samples constant)
    does not reject. None when every ratio fails a variance test.

    Examples
    --------
    >>> recommend(np.array([0.3, 0.01, 0.5]), np.array([0.2, 0.4, 0.6]),
    ...           np.array([0.9, 1.0, 0.9]), 0.05).tolist()
    [True, False, True]
    """
    passes = ~(levene_p <= alpha) & ~(f_p <= alpha) & np.isfinite(share)
    if not passes.any():
        return np.zeros(len(share), dtype=bool)
    return passes & (share == share[passes].max())


def split_sensitivity_summary(ds: xr.Dataset) -> pd.DataFrame:
    """One row per ratio: the ratio used, the per-ratio statistics, the level of the test
    score against the best ratio's, and ``recommended``.

    ``RULE`` looks only at how well the CV estimate agrees with the test score, not at how
    good the model is, and it favours small ratios (a small train part fits worse models whose
    scores vary alike); so beside it, ``test_score_behind_best`` is how much worse the mean
    test score is than the best ratio's (in the measure's units, 0 for the best ratio, which
    ``best_test_score`` marks). After the CV estimates' mean and SD over trials,
    ``cv_pooled_mean`` is the mean over trials of each trial's pooled CV estimate and
    ``trials_estimates_differ`` counts the trials whose two estimates disagree
    (``cv_estimates``).
    """
    names = ["ratio_used", *RATIO_STATISTICS, "recommended"]
    table = ds[names].to_dataframe().reset_index()
    mean = table["test_score_mean"]
    lower = ds.attrs["measure"] in LOWER_IS_BETTER
    best = mean.min() if lower else mean.max()
    level = {
        "test_score_behind_best": (mean - best) if lower else (best - mean),
        "best_test_score": mean == best,
    }
    at = table.columns.get_loc("test_score_sd") + 1
    for offset, (name, values) in enumerate(level.items()):
        table.insert(at + offset, name, values)
    # Over the trials the other statistics use: a CV estimate and a test score, no failed fit.
    used = (np.isfinite(ds["cv_estimate"]) & np.isfinite(ds["test_score"])).to_series()
    estimates = cv_estimates(ds).set_index(["ratio", "trial"])
    pooled = estimates[used.reindex(estimates.index).to_numpy()].groupby("ratio")
    at = table.columns.get_loc("cv_estimate_sd") + 1
    by_ratio = table["ratio"].to_numpy()
    table.insert(at, "cv_pooled_mean", pooled["weighted_mean"].mean().reindex(by_ratio).values)
    differ = pooled["estimates_differ"].sum().reindex(by_ratio, fill_value=0)
    table.insert(at + 1, "trials_estimates_differ", differ.to_numpy(np.int64))
    return table


def split_sensitivity_trials(ds: xr.Dataset) -> pd.DataFrame:
    """One row per (ratio, trial): the K fold scores (``fold_1``…), the CV estimate, SD and
    prediction interval, the pooled CV estimate with the fewest and most rows of a CV fold and
    whether it disagrees with the CV estimate (``cv_estimates``), the test score,
    ``consistent`` and the train/test rows."""
    wide = ds["cv_score"].to_dataframe()["cv_score"].unstack("fold")
    wide.columns = [f"fold_{k}" for k in wide.columns]
    names = ["cv_estimate", "cv_sd", "pi_low", "pi_high", "test_score", "consistent"]
    trials = ds[[*names, "n_train", "n_test"]].to_dataframe()
    pooled = cv_estimates(ds).set_index(["ratio", "trial"])[list(POOLED_COLUMNS)]
    at = trials.columns.get_loc("pi_high") + 1
    trials = pd.concat(
        [trials.iloc[:, :at], pooled.rename(columns=POOLED_COLUMNS), trials.iloc[:, at:]], axis=1
    )
    return wide.join(trials).reset_index()


#: ``cv_estimates``' columns a trial's row shows, under these names.
POOLED_COLUMNS = {
    "weighted_mean": "cv_pooled",
    "n_test_min": "cv_n_test_min",
    "n_test_max": "cv_n_test_max",
    "estimates_differ": "cv_estimates_differ",
}


def cv_estimates(ds: xr.Dataset) -> pd.DataFrame:
    """Each trial's CV estimate as the one estimate rule gives it (``results.estimates``): the
    mean ± SD of its K fold scores beside the pooled estimate (every CV test row once) and
    the fewest and most rows of a fold, one row per (ratio, trial). Grouped folds can be very
    uneven, and then the two disagree (``estimates_differ``)."""
    return fold_estimates(ds["cv_score"], ds["cv_n_test"], dim="fold")


def sensitivity_banner(ds: xr.Dataset) -> str:
    """The line saying in how many trials the CV estimate (the fold mean) and the pooled CV
    estimate disagree, and what the statistics rest on; "" where every trial's agree."""
    return estimate_banner(
        cv_estimates(ds), "ratio {ratio:g} trial {trial}", ds.attrs["measure"],
        TRIAL_FOLD_MEAN_BASIS, unit="trials",
    )  # fmt: skip
