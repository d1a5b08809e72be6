"""``Table``: a lazy Dask DataFrame and the role of each of its columns (``load_table``, in
``soak_dask.tables.load``, makes one)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

import dask.dataframe as dd
import pandas as pd

from .fingerprint import SourceFiles

Task = Literal["classification", "regression"]

#: Value of the subset column when the user gives none: SOAK is then plain K-fold CV.
SINGLE_SUBSET = "all_rows"
#: Name of the column added when SOAK has no subset column, or assigns the folds itself.
SUBSET_COLUMN = "__soak_subset__"
FOLD_COLUMN = "__soak_fold__"


@dataclass(frozen=True)
class Table:
    """A lazy table and the roles of its columns.

    Attributes
    ----------
    data : dask.dataframe.DataFrame
        Lazy frame holding only the feature and role columns.
    label : str
        Column to predict.
    features : tuple of str
        Feature columns, in order.
    subset : str
        Column naming each row's subset (``SUBSET_COLUMN`` when the user gave none).
    group : str or None
        Rows sharing a value of this column always fall in the same fold.
    fold : str or None
        Column holding folds 1..K, either the user's or assigned by ``soak_dask.assign_folds``.
    task : str
        "classification" or "regression".
    source : str
        Where the data came from, recorded in the results.
    user_subset : bool
        False when the user gave no subset column (plain K-fold CV).
    fold_counts : DataFrame or None
        Rows per (subset, fold[, label]) block when known without a pass over the data (folds
        assigned by ``assign_folds``); ``soak_dask.block_counts`` then returns it.
    files : SourceFiles or None
        The Parquet files or Zarr store the data is read from, which identify it in a
        checkpoint (None for in-memory data, a Dask frame, or folds added to the table).
    excluded_coordinates : tuple of str
        Columns named like coordinates that ``load_table`` left out of the default features.
    coords : tuple of str
        Coordinate columns (x, y, ...) kept in ``data`` for the spatial functions
        (``soak_dask.spatial_blocks``, ``knndm_folds``, ``fold_summary``); features only when
        named in ``features``.
    crs : str or None
        The coordinates' CRS (``soak_dask.tables.crs``): an authority code such as
        ``EPSG:26911``, or WKT; None where no file said and none was given.
    spatial : dict
        How ``soak_dask.spatial_blocks`` / ``spatial_clusters`` made a column of the table
        (``soak_dask.tables.spatial_record``: ``blocks``, ``block_shape``, ``block_column``;
        ``clusters``, ``cluster_seed``, ``cluster_column``), or the fold file
        ``soak_dask.attach_folds`` joined (``fold_file``), recorded with the roles.
    """

    data: dd.DataFrame
    label: str
    features: tuple[str, ...]
    subset: str
    group: str | None
    fold: str | None
    task: Task
    source: str
    user_subset: bool = True
    fold_counts: pd.DataFrame | None = field(default=None, repr=False, compare=False)
    files: SourceFiles | None = field(default=None, repr=False, compare=False)
    excluded_coordinates: tuple[str, ...] = ()
    coords: tuple[str, ...] = ()
    crs: str | None = None
    spatial: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def roles(self) -> dict[str, Any]:
        """Column roles as a plain dict (what the results record)."""
        return {
            "label": self.label,
            "subset": self.subset if self.user_subset else None,
            "group": self.group,
            "fold": self.fold if self.fold != FOLD_COLUMN else None,
            "features": list(self.features),
            "excluded_coordinates": list(self.excluded_coordinates),
            **({"coords": list(self.coords)} if self.coords else {}),
            **({"crs": self.crs} if self.crs else {}),
            **self.spatial,
        }

    @property
    def key_roles(self) -> dict[str, str]:
        """The role of each key column (label, subset, group), for messages naming them."""
        named = {"group": self.group, "subset": self.subset, "label": self.label}
        return {column: role for role, column in named.items() if column is not None}

    def with_fold(
        self, data: dd.DataFrame, fold: str, fold_counts: pd.DataFrame | None = None
    ) -> Table:
        """Return a copy whose ``data`` carries the fold column ``fold`` (rows per block
        ``fold_counts``, if known)."""
        # New folds are not in the files: the data is then identified by its Dask graph.
        files = self.files if fold == self.fold else None
        return replace(self, data=data, fold=fold, fold_counts=fold_counts, files=files)

    def __repr__(self) -> str:
        subset = self.subset if self.user_subset else "(none: plain K-fold CV)"
        return (
            f"Table(source={self.source!r}, task={self.task!r}, label={self.label!r}, "
            f"subset={subset!r}, group={self.group!r}, fold={self.fold!r}, "
            f"{len(self.features)} features, {self.data.npartitions} partitions)"
        )


def check_table(table: Any, caller: str) -> None:
    """Refuse anything but a ``Table``, saying how to make one; ``caller`` names the function."""
    if not isinstance(table, Table):
        raise TypeError(
            f"{caller} takes a Table, not a {type(table).__name__}; make one with "
            "soak_dask.load_table(data, label=..., subset=...)"
        )
