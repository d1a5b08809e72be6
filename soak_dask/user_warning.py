"""Warnings located at the user's line: a warning the package gives names the first frame
outside the package (the notebook cell or script line that called it), however deep in the
run path it was found -- not a fixed ``stacklevel``, which points into the package whenever a
call moves one level."""

from __future__ import annotations

import os
import sys
import warnings

#: The package's own files: the frames a warning is not located in.
PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn_user(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn(message, category)`` located at the first caller outside soak_dask."""
    frame, level = sys._getframe(1), 2  # the caller of warn_user: stacklevel 2
    while frame is not None and frame.f_code.co_filename.startswith(PACKAGE):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
