"""Where ``soak_dask.extract`` writes its table: a Parquet dataset (a directory of part files)
that is complete or absent, and that is ours to replace only if it says so.

Each part file's footer holds ``KEY``: what was extracted, from what, in which CRS. A path
that exists is replaced only when every data file under it carries that key and
``overwrite`` is given; anything else there (a user's own table, any other file) is refused
before any work, named. The table is written to a hidden sibling and renamed into place
(``soak_dask.io.stores.write_whole``), so a stopped write leaves nothing at the path.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

import dask
import dask.dataframe as dd
import pyarrow.parquet as pq

from ..io.locations import check_apart, check_links, check_writable, locate
from ..io.outdir import local_path
from ..io.stores import write_whole
from ..tables.crs import CRS_KEY
from ..tables.files import data_files

#: Key of the extraction record in a part file's Parquet metadata (and in a frame's attrs).
KEY = "soak_dask.extract"
#: What messages call the output.
WHAT = "extracted table"


def check_extract_out(
    out: str | os.PathLike, overwrite: bool, sources: dict[str, Any], flag: str
) -> Path:
    """``out`` checked before any work: apart from the inputs, and new or an earlier
    extracted table (replaced with ``flag``, ``overwrite=True`` or ``--overwrite``)."""
    path = local_path(out, "out")
    check_links(path, f"out {str(path)!r}")
    for name, source in sources.items():
        check_apart(path, source, WHAT, source_name=name)
    if os.path.lexists(path):
        foreign = _foreign(path)
        if foreign:
            raise FileExistsError(
                f"out {str(path)!r} exists and {foreign}: extract did not write it, and never "
                "writes over what it did not write; choose a new path, or move it away"
            )
        if not overwrite:
            raise FileExistsError(
                f"out {str(path)!r} holds an earlier extracted table; pass {flag} to replace "
                "it, or choose a new path"
            )
    check_writable(locate(path))
    return path


def _foreign(path: Path) -> str | None:
    """What at ``path`` is not an extracted table's part file, described; None if all is."""
    if path.is_file():
        files = [str(path)]
    elif path.is_dir():
        where = locate(path)
        files = data_files(where.fs, where.path)
        if not files:
            return "is an empty directory or holds only hidden files"
    else:
        return "is not a file or directory"
    for file in files:
        try:
            metadata = pq.read_schema(file).metadata or {}
        except (OSError, ValueError):
            return f"holds {file}, which is not a Parquet file"
        if KEY.encode() not in metadata:
            return f"holds {file}, a Parquet file without extract's record"
    return None


def _crs_key(record: dict[str, Any]) -> dict[bytes, bytes]:
    """The `CRS_KEY` of the written table, which ``load_table`` reads: the raster's CRS, which
    its points' coordinates are in (points given in another CRS were transformed into it)."""
    crs = record.get("raster_crs")
    return {} if crs is None else {CRS_KEY: str(crs).encode()}


def write_extracted(
    frame: dd.DataFrame, path: Path, record: dict[str, Any], reports: list[Any]
) -> list[Any]:
    """Write ``frame`` as a Parquet dataset at ``path`` (each part's footer holding
    ``record``), computing the delayed ``reports`` in the same pass; their values."""
    computed: list[Any] = []

    def write(target: Any) -> None:
        task = frame.to_parquet(
            target.url,
            write_index=False,
            compute=False,
            custom_metadata={KEY: json.dumps(record, default=str), **_crs_key(record)},
        )
        with warnings.catch_warnings():
            # The reports share the partitions' tasks: one pass computes and writes them.
            warnings.filterwarnings("ignore", "Computing mixed collections", UserWarning)
            computed.extend(dask.compute(task, *reports)[1:])

    write_whole(locate(path), write, WHAT)
    return computed


def read_record(path: str | os.PathLike) -> dict[str, Any]:
    """The extraction record of a table extract wrote (a part file's or the file's footer)."""
    text = os.fspath(path)
    where = locate(text)
    files = [where.path] if os.path.isfile(text) else data_files(where.fs, where.path)
    if not files:
        raise FileNotFoundError(f"no Parquet files under {text!r}")
    metadata = pq.read_schema(files[0]).metadata or {}
    if KEY.encode() not in metadata:
        raise ValueError(f"{files[0]} was not written by extract (no {KEY!r} record)")
    return json.loads(metadata[KEY.encode()])
