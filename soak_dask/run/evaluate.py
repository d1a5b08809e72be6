"""``evaluate``: how well does a learner predict new data from the same population? K-fold,
repeated, subsampling, leave-one-out, leave-one-group-out or bootstrap estimates, an optional
reserved test split scored once by the final models, on the same engine as SOAK."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr
from sklearn.base import BaseEstimator

from ..learn.model_dir import check_models_dir, model_path
from ..learn.procedure import Procedure
from ..learn.tuning import has_selection
from ..option_checks import checked, strategy_options
from ..run_options import RunOptions
from ..schema import FIT_INFO
from ..split.inner import Inner
from ..split.outer import OuterDesign, outer_design, reserve
from ..split.plan import Plan
from ..stats.mean_tests import right_wrong_counts
from ..tables.table import FOLD_COLUMN, Table
from ..user_warning import warn_user
from .assemble import encode_attrs
from .entry import entry_point
from .final_models import FinalModels
from .halves import check_inference, with_halves
from .nested_folds import with_ncv
from .run_design import run_on
from .session import Session, result_attrs, start

#: Title of evaluate's results.
TITLE = "soak_dask evaluation: resampling estimates of learners"
#: Weight of the out-of-bag score in Efron's .632 estimate (≈ 1 − 1/e, the share of rows a
#: resample holds).
_W632 = 0.632


@entry_point
@checked("evaluate")
def evaluate(
    table: Table,
    learners: Mapping[str, Any] | Sequence[Any] | BaseEstimator | str | None = None,
    *,
    outer: str = "cv",
    outer_folds: int | None = None,
    outer_repeats: int | None = None,
    test_split: float = 0.0,
    seed: int = 1,
    measures: Sequence[str] | str | None = None,
    train_ratio: float | None = None,
    models: str | os.PathLike | None = None,
    nested: bool = True,
    inner: str = "auto",
    inner_folds: int = 5,
    inner_repeats: int = 1,
    prior_correction: bool = True,
    calibration: str | None = None,
    balance: str = "class",
    group_assignment: str = "rows",
    prediction: Any = None,
    clustering: str | None = None,
    inference: str | None = None,
    inference_repeats: int | None = None,
    options: RunOptions | None = None,
) -> xr.Dataset:
    """Estimate how well ``learners`` predict new rows of ``table``'s population.

    The subset column, if any, plays no part (SOAK compares subsets; this evaluates learners).
    With a group column every strategy keeps whole groups together (``cv`` is grouped K-fold,
    ``lodo`` its extreme case); without one, folds are class-stratified.

    Parameters
    ----------
    table : Table
        From ``soak_dask.load_table``.
    learners : dict, list, estimator or str, optional
        As for ``soak_dask.soak``.
    outer : {"cv", "repeated_cv", "subsampling", "loo", "lodo", "bootstrap", "5x2cv", "knndm"}
        How the training rows are scored: K-fold; K-fold ``outer_repeats`` times with fresh
        folds; ``outer_repeats`` random train/test splits (``train_ratio`` to train);
        leave-one-out (small tables only); leave one group out; ``outer_repeats`` bootstrap
        resamples scored out of bag (with the .632 and .632+ estimates); 5 repeats of 2-fold
        CV (``outer_repeats``, at least 2, if given), the design of ``compare``'s 5×2cv
        tests; K-fold on kNNDM folds matched to ``prediction`` (the design ``KNNDMFolds``,
        folds of ``soak_dask.knndm_folds``; a table with ``coords``), with their W and random
        folds' W in ``attrs["knndm_W"]``, ``attrs["knndm_W_random"]``.
    outer_folds : int, optional
        K for cv, repeated_cv and knndm (default 5), capped at the groups (grouped) or the
        rarest class's rows (ungrouped), with a warning; the value used is in
        ``attrs["outer_folds"]``. A table with a fold column has its K: outer_folds is then
        refused, as it would be ignored.
    outer_repeats : int, optional
        Repeats of repeated_cv (default 1) and 5x2cv (default 5), splits of subsampling and
        resamples of bootstrap (default 1).
    test_split : float
        Share of the rows reserved before anything else sees the data (whole groups with a
        group column, a class-stratified sample otherwise), in no outer train set, scored
        once by the final models with a bootstrap 95 % interval (resampling its rows, or its
        groups with a group column). 0: none.
        Exactly round(share·N) rows (whole groups: to within half a group), any share in
        (0, 0.5]; the share drawn is in ``attrs["test_split"]``. A share that leaves no row
        on a side is refused.
    seed : int
        Seed of every split, resample and built-in learner: same seed, same results.
    measures : sequence of str, optional
        Default: all for the task.
    train_ratio : float, optional
        Share of the rows that train in each subsampling split (default 0.8): exactly
        round(share·N) rows (whole groups: to within half a group); ``attrs["train_ratio"]``
        is the share drawn. Each option only some strategies read (``outer_folds``,
        ``outer_repeats``, ``train_ratio``, ``balance``, ``group_assignment``,
        ``prediction``, ``clustering``) is refused with any other ``outer``, naming the
        strategies that read it (``soak_dask.settings.check_design_options``).
    models : path, optional
        Directory to save each learner's final model in, as ``<learner>.skops`` (a safe format:
        ``soak_dask.load_model`` reads it without running code from the file, and
        ``soak_dask.predict_table`` predicts a table larger than memory with it). The final
        model is one fit on all training rows (the test split excepted); the fold models only
        make the estimate.
    nested : bool
        Tune (learners given with a search space) and select features (selector steps of a
        pipeline) inside every outer fold, on its training part alone (default). False does
        both once on all training rows and lets the folds only refit and score: faster, and
        optimistic, which the result says (``attrs["optimistic"]``).
    inner : {"auto", "cv", "repeated_cv", "loo"}
        The inner resampling that ranks a tuned learner's settings (and gives Platt scaling
        its out-of-fold scores). ``auto``: grouped, leave-one-group-out up to
        max(inner_folds, 10) groups and group K-fold above; ungrouped, stratified K-fold
        capped by the rarest class, repeated 3 times on small (≤ 2,000 rows) runs of cheap
        learners. Each fit's choice is in the ``inner_scheme`` variable.
    inner_folds, inner_repeats : int
        K and repeats of the inner resampling.
    prior_correction : bool
        Predict the class of largest probability divided by its share of the fold's training
        rows (classifiers with ``predict_proba``): the decision that maximises balanced
        accuracy; probabilities, and so log loss and AUC, are unchanged. Refused with a
        learner that resamples to balance classes.
    calibration : {None, "platt"}
        Platt scaling: a sigmoid fitted on out-of-fold scores of each training part (binary
        tasks; skipped with a note on others).
    balance : {"class", "overlap"}
        ``"overlap"``: the folds of cv and repeated_cv are dealt within degree-of-overlap level
        × class (``soak_dask.overlap_folds``); other strategies refuse it.
    group_assignment : {"rows", "mlr3resampling"}
        With a group column, how cv, repeated_cv and 5x2cv deal whole groups to folds:
        balancing rows (default) or the same number of groups per fold (as for
        ``soak_dask.soak``). ``"mlr3resampling"`` without a group column is refused.
    prediction : Table, DataFrame, xarray.Dataset or path, optional
        The prediction area of ``outer="knndm"`` (see ``soak_dask.knndm_folds``).
    clustering : {None, "hierarchical", "kmeans"}
        How ``outer="knndm"``'s candidates cluster the training points (as for
        ``soak_dask.knndm_folds``; default k-means); the one used is in
        ``attrs["knndm_clustering"]``.
    options : RunOptions, optional
        How the run runs (``soak_dask.RunOptions``, default ``RunOptions()``): its client,
        progress bar, checkpoint, ``persist``, ``error_score`` and fitting strategy
        (``onepass``, ``max_train_rows``, ``incremental``, ``epochs``), as for
        ``soak_dask.soak``. A final model that fails to fit (with a test split, ``models``, the
        bootstrap or a selecting learner) scores NaN as any fit does (with ``error_score``),
        with a warning naming the learner, and has no model to save. The fitting options apply
        to every strategy's fits and the final models: additive learners from one pass of block
        statistics where the engine can; a train set larger than ``max_train_rows`` fitted on a
        seeded, stratified sample of exactly that many rows, ``n_train`` recording them -- a
        bootstrap resample's rows counted with their weights (exactly that many of its draws,
        each class keeping its share of them), a final model's resubstitution score on its
        sample; ``partial_fit`` learners fed one block of train rows per task, ``epochs`` times,
        a bootstrap's row weights given as ``sample_weight`` (to learners whose ``partial_fit``
        takes it; the others' weighted fits, and weighted fits under a row cap, are fitted
        whole); a learner wrapped for prior correction or calibration is refused, as it would be
        fitted whole. A final model too large for a worker's memory is refused before any fit,
        as any fit is.
    inference : {None, "con_z", "ncv"}
        Extra fits a comparison test needs. ``"con_z"``: the design is also run, with the
        same options, inside ``inference_repeats`` random pairs of disjoint halves of the
        training rows (whole groups; drawn as a test split is, seeded by ``seed``), for
        ``compare(method="con_z")``, the conservative Z test of Nadeau and Bengio (2003):
        2R more runs of the design on half the rows each. ``"ncv"`` (``outer="cv"`` or
        ``"repeated_cv"``, K >= 3, no fold column): R fresh K-fold splits of the training
        rows, dealt as the design's, each run as K-fold CV and, per fold, as a (K − 1)-fold
        CV of the other folds (``run.nested_folds``), for the nested CV interval of Bates,
        Hastie and Tibshirani (2023): ``compare(method="ncv")`` and
        ``soak_dask.ncv_intervals``; R·K² more fits per learner.
    inference_repeats : int, optional
        R, the pairs of halves of ``"con_z"`` or the K-fold splits of ``"ncv"`` (default
        10, at least 2); refused without ``inference``.

    Returns
    -------
    xarray.Dataset
        Dims (learner, repeat, fold): one variable per measure plus ``n_train``, ``n_test``,
        ``fit_seconds``, ``predict_seconds``; ``test_<measure>`` (learner, interval) and
        ``n_test_split`` with a test split, and for classification with two or more learners
        ``test_right_wrong`` (learner, versus: test split rows the learner classifies right
        and the other wrong, for McNemar's test); for log loss, MSE and MAE
        ``loss_sq_<measure>`` (each block's sum of the learner's squared per-row losses, for
        ``soak_dask.wald_cv_intervals``), for pointwise measures with two or more learners
        ``loss_diff_sq_<measure>`` (learner, versus: the sum of the squared per-row
        differences, for ``compare(method="wald_cv")``); for the bootstrap, ``<measure>_632`` (and
        ``error_632plus``) and ``<measure>_resubstitution``. ``.soak.summary()`` gives mean ±
        SD over folds, ``.soak.by_fold()`` the folds, ``.soak.compare(a, b, measure)`` two
        learners with the design's recommended test and a 95 % interval. Learners that tune
        or select features add ``chosen``, ``inner_scheme`` and ``n_features_kept`` per fold
        and ``final_*`` for the final model; ``attrs["outer_seconds"]`` and
        ``attrs["final_seconds"]`` time the outer loop and the final models. With
        ``inference="con_z"``, ``con_z_<measure>`` (learner, inference_repeat, half): each
        half's mean over its cells. With ``inference="ncv"``, ``ncv_<measure>`` and
        ``ncv_n_test`` (learner, inference_repeat, ncv_outer, ncv_fold): each block's score
        and test rows (``ncv_fold`` 0: outer fold ``ncv_outer`` scored by the model of the
        other folds; 1..K − 1: the folds of the inner CV on those), and for pointwise measures
        ``ncv_loss_diff_sq_<measure>`` (learner, versus, ...) and ``ncv_loss_sq_<measure>``,
        as ``loss_diff_sq_<measure>`` and ``loss_sq_<measure>``.
    """
    options_given = dict(locals())  # inference's extra runs rerun with these
    n_extra = check_inference(inference, inference_repeats, outer, table, outer_folds)
    read = strategy_options(outer, options_given)  # resolved at the door
    design = outer_design(outer, seed, read)
    procedure = Procedure(
        Inner(inner, inner_folds, inner_repeats, seed), prior_correction, calibration
    )
    session = start(
        table, "evaluate", learners, measures=measures, seed=seed, options=options,
        prior_correction=prior_correction,
    )  # fmt: skip
    apart = {"checkpoint": options.checkpoint}
    check_models_dir(models, session.estimators, table.source, apart=apart)
    train, held, share = _reserved(table, test_split, seed)
    finals = FinalModels(train, held, resubstitution=design.resubstitution, save=models is not None)
    asked = read.get("outer_folds", "")
    own = {"balance": balance, "group_assignment": group_assignment}
    describe = partial(_settings, design, outer, asked, share, procedure, nested, own)
    ds, settings = run_on(
        session, train, design, options.persist, procedure=procedure, describe=describe,
        finals=finals, loss_pairs=True,
    )  # fmt: skip
    ds.attrs.update(result_attrs({**settings, **finals.seconds_}))
    if models is not None:
        saved = _save_models(finals.fitted_, models, train, settings)
        ds.attrs.update(encode_attrs({"models": saved}))
    ds = _with_finals(ds, finals.fitted_, session.measures, design.resubstitution)
    if n_extra is None:
        return ds
    options_given.pop("table")
    extra = with_halves if inference == "con_z" else with_ncv
    return extra(ds, train, evaluate, options_given, n_extra)


def _reserved(table: Table, share: float, seed: int) -> tuple[Table, Any, float]:
    """The training table, the reserved test split (None without one) and the share drawn."""
    if share and table.fold is not None:
        _warn_fold_column(table, share)
    return reserve(table, share, seed) if share else (table, None, 0.0)


def _warn_fold_column(table: Table, share: float) -> None:
    given = f"the fold column {table.fold!r}"
    folds = "the folds of assign_folds" if table.fold == FOLD_COLUMN else given
    warn_user(
        f"test_split={share} is cut out of {folds}, which may then lose their balance; "
        "let evaluate draw the folds of the other rows instead (no fold column)"
    )


def _nesting(procedure: Procedure, nested: bool, estimators: Mapping[str, Any]) -> dict[str, Any]:
    """The nesting settings the result records, with the optimism note of ``nested=False``."""
    out = {
        "nested": nested,
        "inner": procedure.inner.inner,
        "inner_folds": procedure.inner.folds,
        "inner_repeats": procedure.inner.repeats,
        "prior_correction": procedure.prior_correction,
        "calibration": procedure.calibration,
    }
    selecting = [name for name, est in estimators.items() if has_selection(est)]
    if not nested and selecting:
        out["optimistic"] = (
            f"nested=False: the tuning and feature selection of {', '.join(selecting)} ran "
            "once on all training rows, the outer test folds included, and the folds only "
            "refit that choice: their scores are optimistic. Use nested=True for an honest "
            "estimate."
        )
    return out


def _settings(
    design: OuterDesign,
    outer: str,
    requested: int | str,
    share: float,
    procedure: Procedure,
    nested: bool,
    own: Mapping[str, Any],
    table: Table,
    plan: Plan,
    classes: list | None,
    session: Session,
) -> dict[str, Any]:
    """What the result records of the run (and a checkpoint is identified by): ``run_on``'s
    ``describe``, the learners as the procedure wrapped them."""
    estimators = session.estimators
    return {
        "title": TITLE,
        "design": "evaluate",
        "task": table.task,
        "source": table.source,
        **table.roles,
        **design.recorded(),  # K and repeats drawn, the share to train; kNNDM's W ...
        "outer": outer,  # as asked: "repeated_cv" of one repeat stays so
        "outer_folds_requested": requested,
        "test_split": share,
        "seed": session.seed,
        "measures": list(session.measures),
        "classes": [str(c) for c in classes] if classes else None,
        "learners": {name: repr(est) for name, est in estimators.items()},
        "n_fits": len(plan.fits) * len(estimators),
        "n_distinct_train_sets": len(plan.fits),
        **_nesting(procedure, nested, estimators),
        "balance": own["balance"],
        "group_assignment": own["group_assignment"],
        **session.fitting.settings(),
    }


def _save_models(
    finals: dict[str, dict[str, Any]], models: str | os.PathLike, table: Table, settings: dict
) -> dict[str, str]:
    """Save each final model as ``<learner>.skops`` in ``models``; their paths."""
    from ..learn.persist import save_model  # skops: imported when models are saved

    folder = Path(models)
    folder.mkdir(parents=True, exist_ok=True)
    keep = ("outer", "outer_folds", "outer_repeats", "test_split", "seed", "source")
    paths = {}
    for name, final in finals.items():
        if final["model"] is None:  # its fit failed (error_score): nothing to save
            continue
        meta = {"learner": name, **{k: settings[k] for k in keep}}
        path = model_path(folder, name)
        # Replaces only a model file soak_dask wrote (save_model refuses any other file).
        save_model(
            final["model"],
            path,
            features=table.features,
            label=table.label,
            overwrite=True,
            metadata=meta,
        )
        paths[name] = str(path)
    return paths


def _with_finals(
    ds: xr.Dataset,
    finals: dict[str, dict[str, Any]],
    measures: Sequence[str],
    resubstitution: bool,
) -> xr.Dataset:
    """``ds`` with the test split's scores and intervals, the .632 estimates (with the final
    models' ``resubstitution`` scores: ``Design.resubstitution``), and the final models' fit
    times and choices."""
    learners = list(ds["learner"].values)
    if finals:
        seconds = [finals[n]["fit_seconds"] for n in learners]
        ds["final_fit_seconds"] = ("learner", np.array(seconds, dtype=np.float64))
        ds["final_fit_seconds"].attrs["long_name"] = "seconds to fit the final model"
    for key, long_name in FIT_INFO.items():
        values = [finals[n]["info"].get(key) for n in learners] if finals else [None]
        if any(v is not None for v in values):
            text = key != "n_features_kept"
            column = [("" if text else np.nan) if v is None else v for v in values]
            ds[f"final_{key}"] = ("learner", np.array(column, dtype=object if text else float))
            ds[f"final_{key}"].attrs["long_name"] = f"{long_name}, final model"
    if finals and "test" in next(iter(finals.values())):
        for m in measures:
            values = [finals[n]["test"][m] for n in learners]
            ds[f"test_{m}"] = (("learner", "interval"), np.array(values, dtype=np.float64))
            ds[f"test_{m}"].attrs["long_name"] = f"{ds[m].attrs['long_name']} on the test split"
        # Object strings, as the other coordinates: Zarr v3 has no fixed-width unicode type.
        ds = ds.assign_coords(interval=np.array(["estimate", "low", "high"], dtype=object))
        ds["n_test_split"] = ("learner", np.array([finals[n]["n_test"] for n in learners]))
        # McNemar's cells; NaN beside a learner whose final model failed
        scored = [i for i, n in enumerate(learners) if "test_right" in finals[n]]
        if len(scored) > 1:
            ds = ds.assign_coords(versus=np.array(learners, dtype=object))
            outcomes = [finals[learners[i]] for i in scored]
            right = [np.unpackbits(f["test_right"], count=f["n_test"]) for f in outcomes]
            cells = np.full((len(learners), len(learners)), np.nan)
            cells[np.ix_(scored, scored)] = right_wrong_counts(right)
            ds["test_right_wrong"] = (("learner", "versus"), cells)
            ds["test_right_wrong"].attrs["long_name"] = (
                "test split rows the learner classifies right and the versus learner wrong"
            )
    if resubstitution:
        ds = _with_632(ds, finals, measures)
    return ds


def _with_632(
    ds: xr.Dataset, finals: dict[str, dict[str, Any]], measures: Sequence[str]
) -> xr.Dataset:
    """Efron's .632 (every measure) and .632+ (error) estimates from each resample's
    out-of-bag score and the final model's resubstitution score."""
    learners = list(ds["learner"].values)
    for m in measures:
        resub = xr.DataArray([finals[n]["resubstitution"][m] for n in learners], dims="learner")
        ds[f"{m}_resubstitution"] = resub
        ds[f"{m}_632"] = (1 - _W632) * resub + _W632 * ds[m]
    if "error" in measures and "no_information" in next(iter(finals.values())):
        gamma = xr.DataArray([finals[n]["no_information"] for n in learners], dims="learner")
        ds["error_632plus"] = _632plus(ds["error"], ds["error_resubstitution"], gamma)
    return ds


def _632plus(oob: xr.DataArray, resub: xr.DataArray, gamma: xr.DataArray) -> xr.DataArray:
    """Efron and Tibshirani's (1997) .632+ error, their eq. (32): the .632 estimate plus
    (Err1' − err) · .368 · .632 · R' / (1 − .368 R'), with Err1' = min(oob, γ) and the relative
    overfitting rate R' = (Err1' − err) / (γ − err) where Err1' > err and γ > err, else 0. The
    .632 term keeps the uncapped out-of-bag error, so the estimate is never below the .632's."""
    capped = np.minimum(oob, gamma)
    rate = xr.where((capped > resub) & (gamma > resub), (capped - resub) / (gamma - resub), 0.0)
    plain = (1 - _W632) * resub + _W632 * oob
    return plain + (capped - resub) * (1 - _W632) * _W632 * rate / (1 - (1 - _W632) * rate)
