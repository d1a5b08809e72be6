"""The shape of a result, written once: dims, train types, measures, counts and defaults.

At the bottom of the import graph: results, stats, plans, plots and the report read these
names from here, so a design that adds a dim or a measure changes one place.
"""

from __future__ import annotations

import math

#: Dims of every measure variable of a SOAK result, in this order.
RESULT_DIMS: tuple[str, ...] = ("learner", "test_subset", "fold", "train_type")

#: Dims of every measure variable of an ``evaluate`` result (``attrs["design"] == "evaluate"``).
EVALUATION_DIMS: tuple[str, ...] = ("learner", "repeat", "fold")

#: Each kind of result (its ``attrs["design"]``, one per entry point) and the dims it has;
#: ``"search"``: what ``search_subsets`` results were called before every kind had a name.
DESIGN_DIMS: dict[str, tuple[str, ...]] = {
    "soak": RESULT_DIMS,
    "evaluate": EVALUATION_DIMS,
    "transfer": ("learner", "train_subset", "test_subset", "fold"),
    "search_subsets": ("learner", "test_subset", "fold", "train_set"),
    "split_sensitivity": ("ratio", "trial", "fold"),
    "compare_sampling": ("learner", "sampling", "trial"),
}
DESIGN_ALIASES: dict[str, str] = {"search": "search_subsets"}

#: Dims a result gains with down-sampled train sizes.
SIZE_DIMS: tuple[str, ...] = ("train_size", "sample")

#: The train types of SOAK, in canonical order; ``REFERENCE`` is what the others are compared
#: with.
TRAIN_TYPES: tuple[str, ...] = ("same", "other", "all")
REFERENCE = "same"

#: K when neither the user nor a fold column sets it.
DEFAULT_N_FOLDS = 10

#: How the inner resampling of a tuned learner is chosen (``soak_dask.split.inner``).
INNER_SCHEMES: tuple[str, ...] = ("auto", "cv", "repeated_cv", "loo")

#: Task types of a table, from its label.
TASKS: tuple[str, ...] = ("classification", "regression")

#: Measures of each task, the first the default of plots and reports.
MEASURES: dict[str, tuple[str, ...]] = {
    "classification": ("error", "accuracy", "balanced_accuracy", "auc", "log_loss"),
    "regression": ("mse", "rmse", "mae", "r2"),
}

#: A measure's unit (or range, where it has none), as its axes and tables name it.
MEASURE_UNITS: dict[str, str] = {
    "error": "percent",
    "accuracy": "share of rows, 0 to 1",
    "balanced_accuracy": "0 to 1",
    "auc": "0 to 1",
    "log_loss": "nats a row",
    "mse": "label's unit²",
    "rmse": "label's unit",
    "mae": "label's unit",
    "r2": "no unit, at most 1",
}
_NAMES = {
    "error": "test error",
    "accuracy": "accuracy",
    "balanced_accuracy": "balanced accuracy",
    "auc": "area under the ROC curve",
    "log_loss": "log loss",
    "mse": "mean squared error",
    "rmse": "root mean squared error",
    "mae": "mean absolute error",
    "r2": "coefficient of determination R²",
}
#: A measure's long name with its unit (the variable's ``long_name`` attr).
MEASURE_NAMES: dict[str, str] = {m: f"{name} ({MEASURE_UNITS[m]})" for m, name in _NAMES.items()}

#: The measures that are the mean of a per-row loss (the others, AUC, balanced accuracy, R²
#: and RMSE, are not, so their blocks have no per-row differences to sum: ``learn.loss_pairs``).
POINTWISE: tuple[str, ...] = ("error", "accuracy", "log_loss", "mse", "mae")

#: The pointwise measures whose per-row loss takes more than two values: a test block records
#: the sum of the squares of each learner's (``loss_sq_<measure>``).
SQUARED_LOSSES: tuple[str, ...] = ("log_loss", "mse", "mae")
#: The others, whose per-row loss takes the values 0 and this only (error in percent points),
#: so the sum of its squares is this times its sum (the measure times the rows).
TWO_VALUED: dict[str, float] = {"error": 100.0, "accuracy": 1.0}

#: Values each measure can take (mean ± SD bars are clipped to them).
MEASURE_RANGES: dict[str, tuple[float, float]] = {
    "error": (0.0, 100.0),
    "accuracy": (0.0, 1.0),
    "balanced_accuracy": (0.0, 1.0),
    "auc": (0.0, 1.0),
    "log_loss": (0.0, math.inf),
    "mse": (0.0, math.inf),
    "rmse": (0.0, math.inf),
    "mae": (0.0, math.inf),
    "r2": (-math.inf, 1.0),
}


def within_range(measure: str, low: float, high: float) -> tuple[float, float]:
    """``low``..``high`` (an interval or a bar of `measure`) cut to the values the measure can
    take (`MEASURE_RANGES`; unbounded for a measure it does not list), as mlr3inferr's
    ``within_range``.

    >>> within_range("error", -3.0, 40.0)
    (0.0, 40.0)
    """
    bottom, top = MEASURE_RANGES.get(measure, (-math.inf, math.inf))
    return max(low, bottom), min(high, top)


#: Measures where a smaller value is a better model.
LOWER_IS_BETTER: frozenset[str] = frozenset({"error", "log_loss", "mse", "rmse", "mae"})

#: Integer variables of a result that count rows, with their long names.
COUNTS: dict[str, str] = {
    "n_train": "rows in the train set",
    "n_test": "rows in the test block",
}

#: Timing variables of a result, with their long names.
TIMINGS: dict[str, str] = {
    "fit_seconds": "seconds to fit (shared by the splits a fit serves)",
    "predict_seconds": "seconds to predict the test block",
}

#: What a fit chose, recorded for learners that tune or select features (from
#: ``soak_dask.learn.tuning.fit_info``), with their long names.
FIT_INFO: dict[str, str] = {
    "chosen": "setting chosen by the inner search (JSON)",
    "inner_scheme": "inner resampling that ranked the settings",
    "n_features_kept": "features the fitted model kept",
}

#: Data variables that describe a split rather than score it: never default measures.
NON_MEASURE_VARS: frozenset[str] = frozenset({*COUNTS, *TIMINGS, *FIT_INFO})

#: The columns of every paired test's table, in this order, and what each holds: SOAK's
#: ``pvalues`` (other/all against same), evaluate's ``compare`` (learner against learner),
#: the transfer matrix's ``transfer_pvalues`` (a cell against the diagonal) and the subset
#: search's ``search_pvalues``. A design's key columns come first (``learner``,
#: ``test_subset``, ...); its own further columns (``p_welch``, ``verdict``, ...) after these.
PAIRED_TEST_COLUMNS: dict[str, str] = {
    "reference": "what is compared against (same; learner b; the diagonal)",
    "compare": "what is compared (other or all; learner a; a transfer cell; greedy)",
    "measure": "the measure both are scored on",
    "n": "the pairs (folds or cells) where both are finite: those tested",
    "reference_mean": "mean of reference over the pairs",
    "reference_sd": "SD (ddof=1) of reference over the pairs",
    "compare_mean": "mean of compare over the pairs",
    "compare_sd": "SD (ddof=1) of compare over the pairs",
    "mean_diff": "mean of compare − reference over the pairs",
    "sd_diff": "SD (ddof=1) of compare − reference over the pairs",
    "ci_low": "lower end of the 95 % interval of mean_diff, from the test's own variance",
    "ci_high": "upper end of the 95 % interval of mean_diff",
    "statistic": "the test's statistic (t, F or χ²)",
    "df": "its degrees of freedom",
    "p": "its two-sided p-value (NaN for the Bayesian test, which gives probabilities)",
    "method": "the test: paired, corrected, bayesian, 5x2cv, 5x2cv_f or mcnemar",
    "note": "what the level simulations say of this test on this design ('' when it held)",
    "reason": "'' when the test is defined, else why its statistics are NaN",
}
#: The paired-test columns that are not numbers (the others are NaN where undefined; ``n`` is
#: a count, never NaN).
PAIRED_TEST_TEXT = ("reference", "compare", "measure", "n", "method", "note", "reason")
