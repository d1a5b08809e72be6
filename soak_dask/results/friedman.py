"""The learners of a SOAK result ranked over its test subsets: the Friedman test and the Nemenyi
critical difference (`friedman_nemenyi`), as mlr3resampling's ``autoplot_cd`` ranks learners
over tasks. The statistics are ``soak_dask.stats.friedman``'s; this module turns a result into
their table of one score per test subset and learner, refusing what would make it mislead.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from ..schema import LOWER_IS_BETTER, REFERENCE, RESULT_DIMS
from ..stats.friedman import FriedmanNemenyi, friedman_nemenyi_scores
from ..stats.mean_tests import ALPHA
from .kinds import coord_values, measure_values, validate_results

__all__ = ["friedman_nemenyi", "subset_scores"]


def _check_measure(ds: xr.Dataset, measure: str, train_type: str) -> None:
    if not isinstance(measure, str):
        raise TypeError(f"measure must be one name, e.g. 'error'; got {measure!r}")
    validate_results(ds, measure)
    train_types = coord_values(ds, "train_type")
    if train_type not in train_types:
        raise ValueError(
            f"train_type={train_type!r} is not in the results; choose one of {train_types}"
        )


def _partial_folds(values: np.ndarray, ds: xr.Dataset) -> list[str]:
    """``(learner, test_subset, fold)`` of each missing score in a fold that other learners
    have, as text (values: learner × test_subset × fold)."""
    missing = np.isnan(values) & ~np.isnan(values).all(axis=0, keepdims=True)
    labels = [coord_values(ds, d) for d in RESULT_DIMS[:3]]
    return [
        f"({labels[0][i]!r}, {labels[1][j]!r}, {labels[2][f]!r})"
        for i, j, f in zip(*np.nonzero(missing), strict=True)
    ]


def subset_scores(
    ds: xr.Dataset, measure: str = "error", train_type: str = REFERENCE
) -> pd.DataFrame:
    """Each learner's mean over the folds of each test subset, trained on `train_type`.

    A fold no learner has a score for (a test subset with fewer folds than the others) is not
    part of that subset; a score missing for some learners only is refused: their means would
    average different folds.

    Returns
    -------
    pandas.DataFrame
        Index ``test_subset``, columns ``learner``.

    Raises
    ------
    ValueError
        If `ds` is not a SOAK result with `measure` and `train_type`, if a learner lacks a
        fold others have (the cells are named), or if a test subset has no score at all.
    """
    _check_measure(ds, measure, train_type)
    where = coord_values(ds, "train_type").index(train_type)
    values = measure_values(ds, measure)[..., where]  # learner × test_subset × fold
    partial = _partial_folds(values, ds)
    if partial:
        shown = ", ".join(partial[:10]) + (
            f" and {len(partial) - 10} more" if len(partial) > 10 else ""
        )
        raise ValueError(
            f"{len(partial)} {measure!r} score(s) (learner, test_subset, fold) trained on "
            f"{train_type!r} are missing where other learners have that fold: {shown}; the "
            "learners' fold means would average different folds: rerun those fits, or drop the "
            "learner (ds.drop_sel(learner=[...])) or the test subset "
            "(ds.drop_sel(test_subset=[...]))"
        )
    subsets = coord_values(ds, "test_subset")
    empty = [
        s
        for s, cell in zip(subsets, values.transpose(1, 0, 2), strict=True)
        if np.isnan(cell).all()
    ]
    if empty:
        raise ValueError(
            f"test subset(s) {empty} have no {measure!r} score trained on {train_type!r}; drop "
            f"them (ds.drop_sel(test_subset={empty})) or choose another train_type"
        )
    with np.errstate(invalid="ignore"):
        means = np.nanmean(values, axis=2).T
    frame = pd.DataFrame(means, index=subsets, columns=coord_values(ds, "learner"))
    frame.index.name, frame.columns.name = "test_subset", "learner"
    return frame


def friedman_nemenyi(
    ds: xr.Dataset,
    measure: str = "error",
    *,
    train_type: str = REFERENCE,
    alpha: float = ALPHA,
) -> FriedmanNemenyi:
    """Friedman test and Nemenyi critical difference of the learners over the test subsets.

    As mlr3resampling's ``autoplot_cd`` (Demšar 2006): the treatments are the learners, the
    blocks the test subsets. Each test subset's score of a learner is its mean over the folds
    (`subset_scores`) of `measure` trained on `train_type`; each subset ranks the learners (1
    the best, ties averaged). The Friedman χ² and Iman–Davenport F test whether any learner
    ranks better than another; the Nemenyi critical difference says which pairs differ.

    Parameters
    ----------
    ds : xarray.Dataset
        SOAK results (``soak()``: dims ``learner``, ``test_subset``, ``fold``, ``train_type``);
        select one ``train_size`` first if it has several.
    measure : str, default "error"
        The measure ranked; lower is better for ``error``, ``log_loss``, ``mse``, ``rmse`` and
        ``mae``, higher for the others.
    train_type : str, default "same"
        The train set whose scores are ranked: ``same`` (each subset's own model), ``other``
        or ``all``.
    alpha : float, default 0.05
        Level of the critical difference.

    Returns
    -------
    soak_dask.stats.friedman.FriedmanNemenyi
        ``average_ranks``, ``chi2`` and ``p``, ``f`` and ``f_p``, ``cd``, ``pairs`` (with
        ``significant``), ``groups``; draw it with ``plot_critical_difference``.

    Raises
    ------
    ValueError
        With fewer than 2 learners or 2 test subsets, a missing score (the cells are named), a
        measure or train type not in `ds`, or when every subset ties every learner.

    Examples
    --------
    >>> import pandas as pd
    >>> from soak_dask.results.store import from_dataframe
    >>> rows = [(lrn, s, f, "same", err + f) for s, errs in
    ...         {"A": (5, 9, 20), "B": (4, 12, 18), "C": (7, 6, 25), "D": (3, 8, 30)}.items()
    ...         for lrn, err in zip(["rf", "lasso", "featureless"], errs) for f in (1, 2)]
    >>> ds = from_dataframe(pd.DataFrame(
    ...     rows, columns=["learner", "test_subset", "fold", "train_type", "error"]))
    >>> r = friedman_nemenyi(ds)
    >>> r.average_ranks.round(2).to_dict(), round(r.p, 4), round(r.cd, 2)
    ({'rf': 1.25, 'lasso': 1.75, 'featureless': 3.0}, 0.0388, 1.66)
    >>> r.pairs.loc[0, "a"], r.pairs.loc[0, "b"], bool(r.pairs.loc[0, "significant"])
    ('rf', 'featureless', True)
    """
    scores = subset_scores(ds, measure, train_type)
    return friedman_nemenyi_scores(
        scores,
        lower_is_better=measure in LOWER_IS_BETTER,
        alpha=alpha,
        measure=measure,
        block_score=f"mean over each test subset's folds, trained on {train_type!r}",
    )
