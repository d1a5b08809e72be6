"""The distributed client in use, if any: what a function given ``client=None`` runs on
(the run path, and designs that send work to the workers themselves, as kNNDM's candidates)."""

from __future__ import annotations

from typing import Any


def current_client() -> Any:
    try:
        from distributed import default_client

        return default_client()
    except (ImportError, ValueError):
        return None
