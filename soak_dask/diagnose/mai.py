"""``compare_sampling``: how far each sampling method's test accuracy lies from the absolute
evaluation value (AEV), in SDs of random splits -- the paper's mean accuracy indicator (MAI).

``../shared/seeds/004_balanced_sampling.txt``, section 3.3: AEV = the mean test accuracy of
n random splits (equation 1; the paper uses n = 100), SD = their standard deviation, and for a
sampling method S and a classifier C, MAI = (ACC − AEV) / SD (equation 2), ACC being C's test
accuracy on S's split. MAI near 0: S's split judges C as random splits do on average; MAI > 0:
it flatters C; MAI < 0: it undersells C. Tables 4-5 and Figure 8 compare methods by |MAI| over
data sets and classifiers (``mai_table``, ``mai_summary``, ``plot_mai``).

Every split is a key column computed on the cluster (``soak_dask.split.sampling_splits``); every
(learner, split) fit is one task of one plan run by the engine that runs ``soak`` and
``evaluate``, so the fits run on the cluster and stream back as they finish.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from sklearn.base import BaseEstimator

from ..option_checks import checked
from ..run.entry import entry_point
from ..run.run_design import run_on
from ..run.session import persisted, result_attrs, start
from ..run_options import RunOptions
from ..split.overlap import check_classification, ensure_positions
from ..split.sampling import classes_of
from ..split.sampling_splits import SamplingSplits
from ..tables.table import Table, check_table

#: The roles of a table a sampling comparison ignores (a group column is refused).
UNUSED_ROLES = ("subset", "group", "fold", "excluded_coordinates")
#: Title of ``compare_sampling``'s results.
TITLE = "soak_dask sampling comparison: MAI of train/test sampling methods"


@entry_point
@checked("compare-sampling", design=SamplingSplits)
def compare_sampling(
    table: Table,
    learners: Mapping[str, Any] | Sequence[Any] | BaseEstimator | str | None = None,
    design: SamplingSplits | None = None,
    *,
    options: RunOptions | None = None,
) -> xr.Dataset:
    """Test accuracy of each sampling method's split, AEV, SD and MAI, per learner.

    Parameters
    ----------
    table : Table
        A classification table from ``soak_dask.load_table`` (regression is refused: MAI is
        about accuracy). Rows are sampled one by one, as in the paper: a table with a group
        column is refused (rows of a group would land on both sides).
    learners : dict, list, estimator, str or None
        As for ``soak_dask.soak`` (built-in names or scikit-learn classifiers; None: the
        featureless baseline and logistic regression).
    design : SamplingSplits, optional
        The sampling methods compared, the random splits' share ``train_ratio`` and number
        ``n_repeats`` (their mean test accuracy is the AEV, their SD scales MAI; paper: 100),
        the ``seed`` of every split and of the learners' randomness, and the methods' own
        options (``soak_dask.SamplingSplits``, checked when made; default
        ``SamplingSplits()``).
    options : RunOptions, optional
        How the run runs (``soak_dask.RunOptions``, default ``RunOptions()``): its client,
        progress bar, checkpoint, ``persist``, ``error_score`` and fitting strategy
        (``onepass``, ``max_train_rows``, ``incremental``, ``epochs``), as for
        ``soak_dask.soak``. ``persist`` keeps the table's feature and label columns in cluster
        memory for the fits (the key columns are kept whatever it says: they are small and
        costly to recompute); on resume the splits are drawn again (seeded, they are the same).
        The fitting options apply to every split's fit: additive learners from one pass of block
        statistics where the engine can; a train side larger than ``max_train_rows`` fitted on a
        seeded, stratified sample of exactly that many rows (``n_train`` records them;
        ``n_test`` is the whole test side); ``partial_fit`` learners fed one block of train rows
        per task, ``epochs`` times.

    Returns
    -------
    xarray.Dataset
        ``accuracy`` (learner, sampling): ACC; ``random_accuracy`` (learner, trial); ``aev``
        and ``sd`` (learner); ``mai`` (learner, sampling); ``n_train``, ``n_test`` (sampling);
        settings and each method's notes (e.g. a sample) in attrs. The dim of the methods is
        ``sampling`` (``.sel(method=...)`` would hit the ``method`` keyword of ``sel``).
        ``mai_table`` tabulates several results.

    Examples
    --------
    >>> import soak_dask as sd
    >>> from sklearn.datasets import load_iris
    >>> frame = load_iris(as_frame=True).frame
    >>> table = sd.load_table(frame, label="target")
    >>> design = sd.SamplingSplits(["random", "overlap"], n_repeats=5)
    >>> res = compare_sampling(table, "lda", design, options=sd.RunOptions(progress=False))
    >>> res["mai"].dims, int(res["n_train"].sel(sampling="overlap"))
    (('learner', 'sampling'), 105)
    """
    check_table(table, "compare_sampling")
    check_classification(table, "compare_sampling")
    _refuse_groups(table)
    seed, methods, n_repeats = design.seed, design.methods, design.n_repeats
    session = start(
        table, "compare_sampling", learners, measures=["accuracy"], seed=seed, options=options
    )
    # The features and label, numbered (the keys need the rows' positions), kept in cluster
    # memory before the keys are drawn: the methods read them several times.
    base = replace(table, data=table.data[[*table.features, table.label]], files=None)
    base = ensure_positions(replace(base, fold=None, fold_counts=None))
    kept, _ = persisted(base.data, options.persist, session.client, table, session.progress)
    base = replace(base, data=kept)
    classes = tuple(classes_of(base))  # a one-class table is refused before any split
    ds, ran = run_on(session, base, design, persist=False)
    given = {**design.get_params(), "methods": list(methods)}
    notes = design.learned_["notes"]
    given["notes"] = {m: t for m, t in notes.items() if t}
    # Rows are sampled one by one, whatever the table's subsets or folds: not recorded.
    ran = {k: v for k, v in ran.items() if k not in UNUSED_ROLES}
    settings = {**ran, **_settings(table, given, classes, session.estimators)}
    return mai_dataset(ds.assign_attrs(result_attrs(settings)), methods, n_repeats)


def _refuse_groups(table: Table) -> None:
    """Sampling methods draw rows one by one: a group's rows would land on both sides."""
    if table.group is not None:
        raise ValueError(
            f"compare_sampling samples rows one by one, as the paper does, and the table has "
            f"the group column {table.group!r}, whose rows would land on both sides of a "
            "split; load the table without group= to compare row sampling"
        )


def _settings(
    table: Table, given: dict[str, Any], classes: tuple, estimators: Mapping[str, BaseEstimator]
) -> dict[str, Any]:
    """What the result records of the run (and its checkpoint is identified by)."""
    return {
        "title": TITLE,
        "design": "compare_sampling",
        "source": table.source,
        "label": table.label,
        "features": list(table.features),
        **given,
        "classes": [str(c) for c in classes],
        "learners": {name: repr(est) for name, est in estimators.items()},
    }


def mai_dataset(ds: xr.Dataset, methods: Sequence[str], n_repeats: int) -> xr.Dataset:
    """The result of ``compare_sampling`` from the engine's (learner, split) scores."""
    names = [f"random_{r}" for r in range(1, n_repeats + 1)]
    ds = ds.drop_vars("fit_id")
    chosen = ds.sel(split=list(methods)).rename(split="sampling")
    rand = ds["accuracy"].sel(split=names).rename(split="trial")
    rand = rand.assign_coords(trial=np.arange(1, n_repeats + 1))
    aev = rand.mean("trial")
    sd = rand.std("trial", ddof=1)
    out = xr.Dataset(
        {
            "accuracy": chosen["accuracy"],
            "random_accuracy": rand,
            "aev": aev,
            "sd": sd,
            "mai": (chosen["accuracy"] - aev) / sd,
            # The same rows for every learner.
            "n_train": chosen["n_train"].isel(learner=0, drop=True),
            "n_test": chosen["n_test"].isel(learner=0, drop=True),
        },
        attrs=ds.attrs,
    )
    long_names = {
        "accuracy": "test accuracy of the method's split (ACC)",
        "random_accuracy": "test accuracy of a random split",
        "aev": "absolute evaluation value: mean accuracy of the random splits (AEV)",
        "sd": "SD of the random splits' accuracies",
        "mai": "mean accuracy indicator (ACC - AEV) / SD",
        "n_train": "rows in the training set",
        "n_test": "rows in the test set",
    }
    for name, text in long_names.items():
        out[name].attrs["long_name"] = text
    return out


def mai_table(results: Mapping[str, xr.Dataset] | Sequence[xr.Dataset]) -> pd.DataFrame:
    """The paper's Tables 4 and 5 in one: a row per (data set, learner), with AEV, SD, each
    method's ACC and its MAI.

    Parameters
    ----------
    results : mapping or sequence of Dataset
        ``compare_sampling`` results, by data-set name (a sequence is named by each result's
        ``attrs["source"]``).

    Returns
    -------
    DataFrame
        Index (data, learner); columns ``AEV``, ``SD``, ``ACC <method>``…, ``MAI <method>``….
        ``mai_summary`` gives the mean and SD of |MAI| per method.
    """
    if not isinstance(results, Mapping):
        results = {str(ds.attrs.get("source", i)): ds for i, ds in enumerate(results)}
    frames = []
    for name, ds in results.items():
        frame = pd.concat(
            [
                ds["aev"].to_pandas().rename("AEV"),
                ds["sd"].to_pandas().rename("SD"),
                ds["accuracy"].to_pandas().add_prefix("ACC "),
                ds["mai"].to_pandas().add_prefix("MAI "),
            ],
            axis=1,
        )
        frame.index.name = "learner"
        frames.append(frame.assign(data=name).set_index("data", append=True))
    table = pd.concat(frames).reorder_levels(["data", "learner"])
    return table


def mai_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Mean and SD (n − 1) of |MAI| per method over the rows of ``mai_table`` (the last rows
    of the paper's Table 5); NaN MAI (a learner whose random splits all score alike) are
    left out."""
    mai = table[[c for c in table.columns if c.startswith("MAI ")]].abs()
    mai.columns = [c.removeprefix("MAI ") for c in mai.columns]
    return pd.DataFrame({"mean |MAI|": mai.mean(), "SD |MAI|": mai.std(ddof=1)}).T
