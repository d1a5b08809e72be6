"""The procedure each fit runs, from the run's options: a ``Search`` tuned inside the train set
(innermost), then Platt calibration, then prior correction (outermost, so it divides the
calibrated probabilities). Built once on the client, before any task, so a bad combination
stops the run before the cluster does any work."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sklearn.base import clone

from ..split.inner import Inner
from .calibration import MULTICLASS_NOTE, PlattCalibrated
from .priors import PriorCorrected, can_correct, check_prior_correction
from .tuning import SCORERS, Search

#: Values of ``calibration``.
CALIBRATIONS: tuple[str | None, ...] = (None, "platt")


@dataclass(frozen=True)
class Procedure:
    """The options that wrap every learner of a run (validated).

    Attributes
    ----------
    inner : Inner
        The inner scheme of searches and of Platt's out-of-fold scores.
    prior_correction : bool
    calibration : {None, "platt"}
    """

    inner: Inner
    prior_correction: bool = False
    calibration: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.prior_correction, bool):
            raise ValueError(f"prior_correction={self.prior_correction!r}: need True or False")
        if self.calibration not in CALIBRATIONS:
            raise ValueError(
                f"calibration={self.calibration!r}: choose None (no calibration) or 'platt'"
            )

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> Procedure:
        """From a run's options: ``prior_correction``, ``calibration``, ``inner``,
        ``inner_folds``, ``inner_repeats`` and ``seed``."""
        inner = Inner(
            options["inner"], options["inner_folds"], options["inner_repeats"], options["seed"]
        )
        return cls(inner, options["prior_correction"], options["calibration"])

    def apply(
        self, estimators: Mapping[str, Any], classes: tuple | None, measure: str
    ) -> tuple[dict[str, Any], list[str]]:
        """Each learner wrapped for this run, and notes for the result (a skipped step).

        Parameters
        ----------
        estimators : mapping
            Name -> unfitted learner (``Search`` for a tuned one).
        classes : tuple or None
            The table's classes (None: regression, nothing to correct or calibrate).
        measure : str
            The run's first measure: the scorer that ranks a search's settings, unless the
            search names its own.
        """
        notes = []
        platt = self.calibration == "platt" and classes is not None
        if platt and len(classes) != 2:
            notes.append(f"{MULTICLASS_NOTE} (this table has {len(classes)} classes)")
            platt = False
        inner = {
            "inner": self.inner.inner,
            "inner_folds": self.inner.folds,
            "inner_repeats": self.inner.repeats,
            "random_state": self.inner.seed,
        }
        out = {}
        for name, est in estimators.items():
            est = clone(est)
            if isinstance(est, Search):
                est.set_params(**inner, scoring=est.scoring or SCORERS[measure])
            if platt and _scores(est):
                est = PlattCalibrated(est, **inner)
            elif platt:
                notes.append(
                    f"calibration='platt' skipped for learner {name!r}: it has neither "
                    "predict_proba nor decision_function"
                )
            if self.prior_correction and classes is not None and can_correct(est):
                check_prior_correction(est, name)
                est = PriorCorrected(est)
            out[name] = est
        return out, notes


def _scores(estimator: Any) -> bool:
    return hasattr(estimator, "predict_proba") or hasattr(estimator, "decision_function")
