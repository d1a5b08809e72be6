"""The table a command reads: ``load_table`` with the command's table settings, then the
spatial groups its flags ask for.

- ``--fold-column`` (a run file's ``fold_column``) names either a column of folds or a fold
  file -- the ``folds.parquet`` that ``soak knndm`` wrote -- which ``attach_folds`` joins
  on. A value is a fold file only when a file or folder of that name exists and carries the
  fold file's own Parquet mark: anything else is a column name, as before, and a column that
  does not exist is refused by ``load_table``, naming it.
- ``--blocks SIZE`` (``--block-shape``) or ``--clusters K`` make the group column from the
  coordinates (``spatial_blocks``, ``spatial_clusters``), as a Python user would call them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..settings import command_line_settings
from .flags import setting_values

if TYPE_CHECKING:
    from ..tables.table import Table

#: The settings this module takes out of the table's before ``load_table``.
SPATIAL_GROUPS = ("blocks", "block_shape", "clusters")


def table_settings(settings: Any, command: str) -> dict[str, Any]:
    """What `open_table` takes of a command's settings (``flags.run_settings``): the table's
    (``load_table``'s keywords) and the spatial groups'."""
    values = setting_values(settings, command, ("table",))
    mine = {s.name for s in command_line_settings(command)}
    return values | {name: getattr(settings, name) for name in SPATIAL_GROUPS if name in mine}


@contextmanager
def table_on_cluster(settings: Any, command: str, debug: bool) -> Iterator[tuple[Table, Any]]:
    """Connect to the command's cluster (``--scheduler``, its TLS files; without it a
    LocalCluster, ``run.cluster.command_client``) and load its table there (`open_table`: its
    passes over the data are read by the workers, not by this process): the table and the
    client, the client closed on leaving (``debug``: the workers' log of a failed task
    shown)."""
    from ..run.cluster import command_client, make_security

    security = make_security(settings.tls_ca_file, settings.tls_cert, settings.tls_key)
    with command_client(settings.scheduler, security=security, log_failures=debug) as client:
        yield open_table(settings.data, table_settings(settings, command)), client


def start_local_workers(settings: Any) -> None:
    """Without ``--scheduler``, start the server the local cluster's workers will be forked
    from now (``run.cluster.start_fork_server``): it imports the engine while this process
    imports its own. A command calls it once its flags are checked."""
    if settings.scheduler is None:
        from ..run.cluster import start_fork_server

        start_fork_server()


def open_table(data: Any, values: dict[str, Any]) -> Table:
    """``load_table(data, **values)``, with ``values["fold"]`` naming a column or a fold file
    (joined by ``attach_folds``; a train/test split's file is refused: it holds no folds),
    and the group column of ``blocks`` or ``clusters`` added."""
    from ..split.fold_file import attach_folds, is_fold_file, refuse_split
    from ..tables.load import load_table

    values = dict(values)
    spatial = {name: values.pop(name, None) for name in SPATIAL_GROUPS}
    _check_spatial_groups(values, **spatial)
    fold = values.get("fold")
    if is_fold_file(fold):
        refuse_split(fold, "--fold-column")
        table = attach_folds(load_table(data, **{**values, "fold": None}), fold)
    else:
        table = load_table(data, **values)
    if spatial["blocks"] is None and spatial["clusters"] is None:
        return table
    # Only now: ``spatial.blocks`` imports scikit-learn's k-means and SciPy's trees.
    from ..spatial.blocks import spatial_blocks, spatial_clusters

    if spatial["blocks"] is not None:
        return spatial_blocks(table, spatial["blocks"], shape=spatial["block_shape"] or "square")
    return spatial_clusters(table, spatial["clusters"])


def _check_spatial_groups(
    values: dict[str, Any], blocks: Any, block_shape: Any, clusters: Any
) -> None:
    """Refuse what cannot make one group column: blocks and clusters both, either beside a
    group or fold column or without coordinates, a block shape without blocks. (The run
    commands refuse blocks beside a fold column earlier, as every option of how folds are
    drawn: ``settings.check_fold_column_options``.)"""
    made = [f"--{name} {value}" for name, value in [("blocks", blocks), ("clusters", clusters)]
            if value is not None]  # fmt: skip
    if len(made) > 1:
        raise ValueError(f"{' and '.join(made)}: each makes the group column; give one")
    if block_shape not in (None, "square") and blocks is None:
        raise ValueError(f"--block-shape {block_shape}: give --blocks SIZE to have blocks")
    if not made:
        return
    if values.get("fold") is not None:
        raise ValueError(
            f"{made[0]} makes groups so that folds keep them whole, and --fold-column "
            f"{values['fold']} gives the folds: give one of them"
        )
    if values.get("group") is not None:
        raise ValueError(
            f"{made[0]} makes the group column, and --group {values['group']} names one: "
            "give one of them"
        )
    if not values.get("coords"):
        raise ValueError(f"{made[0]} needs --coords X,Y (the coordinate columns)")
