"""The fitting options every design offers, checked and built once for the one run path.

``onepass`` (additive learners from one pass of block statistics), ``max_train_rows`` (an exact,
seeded, stratified sample of a larger train set: ``run.rowcap``), ``incremental`` and ``epochs``
(``partial_fit`` learners fed one block of train rows per task) mean the same in ``soak``,
``evaluate``, ``transfer``, ``search_subsets``, ``split_sensitivity`` and ``compare_sampling``:
each entry point gets them in its ``RunOptions`` (checked when made), ``session.start`` builds
them here (``FittingOptions.from_options``), the entry point takes its strategies from
``FittingOptions.strategies`` and records ``FittingOptions.settings`` in its results and
checkpoint identity; ``Session.run`` caps each fit and checks its memory from one count of
its rows (``session.with_fit_rows``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..learn.across_workers import trains_across_workers
from .across_workers import AcrossWorkers
from .strategies import OnePass, PartialFit, WholeTrainSet

#: The fitting options, as ``soak_dask.settings`` declares them.
FITTING_OPTIONS: tuple[str, ...] = ("onepass", "max_train_rows", "incremental", "epochs")


@dataclass(frozen=True)
class FittingOptions:
    """How a run's fits are made (checked values: use ``from_options``).

    Attributes
    ----------
    onepass : bool
        Fit additive learners from one pass of block statistics where the design allows it.
    max_train_rows : int, optional
        Fit a larger train set on a seeded, stratified sample of exactly this many rows.
    incremental : bool
        Feed learners with ``partial_fit`` one block of train rows per task.
    epochs : int
        Passes over the train blocks of incremental learners.
    """

    onepass: bool = True
    max_train_rows: int | None = None
    incremental: bool = False
    epochs: int = 1

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> FittingOptions:
        """From options checked already (``RunOptions``: ``epochs`` without ``incremental``
        refused there)."""
        return cls(**{name: options[name] for name in FITTING_OPTIONS})

    def settings(self) -> dict[str, Any]:
        """The options as a result's settings and its checkpoint's identity record them."""
        return {name: getattr(self, name) for name in FITTING_OPTIONS}

    @property
    def from_statistics(self) -> bool:
        """Whether additive learners are fitted from block statistics (not under a row cap:
        a sample of rows has no block statistics)."""
        return self.onepass and self.max_train_rows is None

    def strategies(self, *, onepass: Any = None, last: Any = None) -> list[Any]:
        """The strategies of a run, in the order they are offered each fit: ``AcrossWorkers``
        (the learners that train across the workers, whatever the options), the one-pass
        strategy (``onepass``, default ``OnePass()``) if ``self.onepass``, ``PartialFit`` if
        ``incremental``, then ``last`` (default ``WholeTrainSet()``), which takes the rest."""
        return [
            AcrossWorkers(),
            *([OnePass() if onepass is None else onepass] if self.onepass else []),
            *([PartialFit(self.epochs)] if self.incremental else []),
            WholeTrainSet() if last is None else last,
        ]

    def check_learners(
        self,
        estimators: Mapping[str, Any],
        *,
        wrapped: Mapping[str, Any] | None = None,
        sizes: int = -1,
    ) -> None:
        """Refuse ``incremental`` where it would be silently ignored for a learner that has
        ``partial_fit``: with down-sampled train ``sizes`` (a down-sample needs its train set
        whole), or when the run ``wrapped`` it (prior correction, calibration: a wrapped learner
        is fitted whole); refuse wrapping a learner that trains across the workers."""
        check_unwrapped(estimators, wrapped or {})
        if not self.incremental:
            return
        streamed = [name for name, est in estimators.items() if hasattr(est, "partial_fit")]
        if sizes >= 0 and streamed:
            raise ValueError(
                f"RunOptions(incremental=True) with sizes={sizes}: down-sampling to a train "
                f"size needs each train set whole, which learners {streamed} are not given when "
                "fed block by block; use sizes=-1, or RunOptions(incremental=False)"
            )
        wrapped = {} if wrapped is None else wrapped
        lost = [n for n in streamed if n in wrapped and not hasattr(wrapped[n], "partial_fit")]
        if lost:
            raise ValueError(
                f"RunOptions(incremental=True): learners {lost} have partial_fit, but this run "
                "wraps them (prior correction or calibration), and a wrapped learner is fitted "
                "on its whole train set; pass prior_correction=False and calibration=None to "
                "feed them block by block, or RunOptions(incremental=False)"
            )


def check_unwrapped(estimators: Mapping[str, Any], wrapped: Mapping[str, Any]) -> None:
    """Refuse a learner that trains across the workers (``trains_across_workers``) which the
    run ``wrapped`` other than by a prior correction (calibration: the wrapper would be fitted
    in one task, where the Dask estimator has no cluster to train on)."""
    lost = [
        n
        for n, est in estimators.items()
        if trains_across_workers(est) and n in wrapped and not trains_across_workers(wrapped[n])
    ]
    if lost:
        raise ValueError(
            f"learners {lost} train across the workers, and this run wraps them for "
            "calibration, which fits the wrapper in one task; pass calibration=None for them"
        )
