"""Where a file's project starts: the nearest folder holding a project marker.

Its own module (imports only the standard library): the driver's byte screen asks
it for every file that might take a count from another module, before the core reads
any of the project's modules.
"""

from __future__ import annotations

import os
from functools import cache

MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")


@cache
def project_root(folder: str) -> str | None:
    """The nearest folder at or above ``folder`` (absolute) holding a project marker
    (each folder looked at once per run, however many files sit below it)."""
    if os.path.basename(folder) in ("site-packages", "dist-packages"):
        return None  # an installed package is no project of the user's
    if any(os.path.exists(os.path.join(folder, m)) for m in MARKERS):
        return folder
    parent = os.path.dirname(folder)
    return None if parent == folder else project_root(parent)
