"""``RunOptions``: how a run runs, one frozen object every entry point takes as ``options=``.

``soak``, ``evaluate``, ``transfer``, ``search_subsets``, ``split_sensitivity``,
``compare_sampling`` and ``run_design`` say *what* is computed in their own keywords (the
design, the learners, the measures, the seed); *how* it runs -- on which cluster, with a
progress bar or not, saving each fit in a checkpoint, keeping the columns in memory, what a
failing fit scores, and how the fits are made -- is the same for all of them and goes in one
``RunOptions``, checked when it is made against the declarations every entry point's door and the
command line read (``soak_dask.settings``). One object serves several runs::

    opts = sd.RunOptions(client=client, progress=False)
    res = sd.soak(table, learners, n_folds=10, seed=1, options=opts)
    ev = sd.evaluate(table, learners, outer="cv", seed=1, options=opts)

The seed stays among the design's keywords, as scikit-learn's splitters take ``random_state``:
it decides the folds. These options leave the design as it is (those that change how a fit is
made, ``onepass``, ``max_train_rows``, ``incremental`` and ``epochs``, are recorded in the
results as before).

Examples
--------
>>> RunOptions(progress=False).progress
False
>>> RunOptions(epochs=0)
Traceback (most recent call last):
...
ValueError: epochs=0: need a positive integer
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .settings import SETTINGS, refuse_ignored

__all__ = ["RUN_OPTIONS", "RunOptions"]


@dataclass(frozen=True)
class RunOptions:
    """How a run runs: its cluster, progress bar, checkpoint, memory and fitting strategy.

    Each value is checked when the options are made (a bad one is refused naming it, before
    any run); every entry point takes them as ``options=`` (default ``RunOptions()``).

    Parameters
    ----------
    client : distributed.Client, optional
        Default: the current client, if any; otherwise Dask's local scheduler. The run makes
        it the current client while it runs (so every pass goes to its workers, also when it
        is not the default client). An address is refused: connect first.
    progress : bool
        Show a progress bar of the fits: (fit, learner) pairs, as counted by ``n_fits``.
        A resumed run says how many fits its checkpoint held either way.
    checkpoint : path, optional
        Directory where each finished fit's scores are saved as it arrives. Running again with
        the same checkpoint and settings, in this process or another, computes only the missing
        fits; other settings (data, seed, folds, learners and their parameters, measures…) are
        refused, never mixed. Files are identified by their sizes, modification times and
        Parquet footers (see docs/scaling.md, "Checkpoints"); edited records are refused.
    persist : bool, optional
        True keeps the columns the run reads in cluster memory for its passes (one read of the
        source); False reads them from storage at each pass (a table larger than the cluster's
        memory). None (default): kept when their estimated size is at most half the memory
        the workers have for tasks (``run.persist_choice``); the run prints which and why.
    error_score : float or "raise"
        Score of a fit that raises, as in scikit-learn's ``cross_validate``: NaN and one
        warning listing the failures, or ``"raise"`` to stop.
    onepass : bool
        Fit learners whose fit needs only additive statistics (featureless,
        LinearRegression, Ridge, RidgeClassifier, LinearDiscriminantAnalysis, GaussianNB,
        optionally after a StandardScaler) from one pass of per-block statistics, instead of
        one pass per fit. Coefficients equal scikit-learn's fit on the rows up to rounding.
    max_train_rows : int, optional
        Fit a train set larger than this on a seeded sample of exactly this many of its rows,
        each class keeping its share of the train set (largest remainder); ``n_train`` records
        the rows used. Each task gathers only slightly more rows than that, so it bounds the
        memory of a fit. Incremental learners get a sample of this size and these shares in
        expectation; down-sampled train sizes are capped after down-sampling.
    incremental : bool
        Feed learners that have ``partial_fit`` (SGDClassifier, MultinomialNB,
        MLPClassifier…) one block of train rows per task, so no worker holds a whole train set.
    epochs : int
        Passes over the train blocks for incremental learners (block order reshuffled,
        seeded); more than 1 needs ``incremental=True`` (refused without it).
    """

    client: Any = None
    progress: bool = True
    checkpoint: str | os.PathLike | None = None
    persist: bool | None = None
    error_score: float | str = np.nan
    onepass: bool = True
    max_train_rows: int | None = None
    incremental: bool = False
    epochs: int = 1

    def __post_init__(self) -> None:
        if self.client is not None and not hasattr(self.client, "as_current"):
            # An address is the natural mistake (the command line takes one): say how to
            # connect, before any run rather than at its first pass.
            raise ValueError(
                f"client={self.client!r}: need a distributed.Client, or None for the current "
                "client; for an address, connect first: distributed.Client(address), or "
                "`with soak_dask.run.cluster.connect(address) as client:` (which also takes a "
                "scheduler file and TLS settings)"
            )
        # The declared checks, as the doors and the command line apply them: plain, canonical
        # values (an int for a numpy integer, NaN for a missing score...).
        for name in RUN_OPTIONS[1:]:
            object.__setattr__(self, name, SETTINGS[name].checked(getattr(self, name)))
        if not self.incremental:  # never ignored silently
            refuse_ignored("epochs", self.epochs, 1, "incremental=False", "incremental=True")

    @classmethod
    def among(cls, values: Mapping[str, Any], **given: Any) -> tuple[RunOptions, dict[str, Any]]:
        """The run options among `values` (a command's settings, as the command line and run
        files check them) and `given` (``client=``...), and the other values: what a command
        hands its entry point.

        >>> RunOptions.among({"seed": 2, "progress": False})  # doctest: +ELLIPSIS
        (RunOptions(client=None, progress=False, ...), {'seed': 2})
        """
        mine = {name: value for name, value in values.items() if name in RUN_OPTIONS}
        rest = {name: value for name, value in values.items() if name not in RUN_OPTIONS}
        return cls(**mine, **given), rest

    def settings(self) -> dict[str, Any]:
        """The options that are settings (``soak_dask.settings``), by name: all but the
        client, an object."""
        return {name: getattr(self, name) for name in RUN_OPTIONS[1:]}


#: The fields of ``RunOptions``, ``client`` first (an object, not a setting: checked to be a
#: client when the options are made).
RUN_OPTIONS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(RunOptions))
