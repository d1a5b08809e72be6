"""Which files of a table's directory hold its data: not the hidden files that tools keep
beside data (``_SUCCESS``, ``.crc``, as pyarrow skips them), nor the documentation that people
keep beside it (``README.txt``, ``notes.md``), which no table format here reads."""

from __future__ import annotations

import posixpath

import fsspec

#: Endings of documentation: none of them is a table format soak_dask reads.
DOC_SUFFIXES = (".md", ".markdown", ".rst", ".html", ".htm", ".pdf", ".docx", ".odt")
#: Names of documentation whatever their ending (``README``, ``README.txt``, ``LICENSE.md``).
DOC_STEMS = ("readme", "license", "licence", "changelog", "citation", "authors", "copying")


def is_hidden(path: str, root: str) -> bool:
    """Whether ``path`` below ``root`` is (or lies in) a file or folder named ``_*`` or ``.*``."""
    relative = path[len(root.rstrip("/")) + 1 :]
    return any(part.startswith(("_", ".")) for part in relative.split("/"))


def is_documentation(path: str) -> bool:
    """Whether ``path`` is documentation kept beside data (by its name, not its bytes).

    >>> [is_documentation(p) for p in ("d/README.txt", "d/notes.md", "d/notes.txt", "d/a.csv")]
    [True, True, False, False]
    """
    name = posixpath.basename(path).lower()
    return name.endswith(DOC_SUFFIXES) or name.split(".", 1)[0] in DOC_STEMS


def data_files(fs: fsspec.AbstractFileSystem, root: str) -> list[str]:
    """The files below directory ``root`` that may hold table data, sorted."""
    return [p for p in sorted(fs.find(root)) if not is_hidden(p, root) and not is_documentation(p)]
