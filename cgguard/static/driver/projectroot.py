"""Where a file's project starts: the nearest folder holding a project marker.

Its own module (imports only the standard library): the driver's byte screen asks
it for every file that might take a count from another module, before the core reads
any of the project's modules.
"""

from __future__ import annotations

import os

MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")


class ProjectRoots:
    """The project roots one run has found, by folder: each folder is looked at once per
    run, however many files sit below it (the run's :class:`.context.RunContext` holds one)."""

    def __init__(self) -> None:
        self.found: dict[str, str | None] = {}
        # By a file's folder as its path spells it: a tree's files share a few hundred
        # folders, and making each file's path absolute costs more than the lookup.
        self.by_folder: dict[str, str | None] = {}

    def of_file(self, path: str) -> str | None:
        """The project root of the file at ``path`` (as given: relative to the working
        folder, or absolute)."""
        folder = os.path.dirname(path)
        if folder in self.by_folder:
            return self.by_folder[folder]
        root = self.by_folder[folder] = self.of(os.path.abspath(folder))
        return root

    def of(self, folder: str) -> str | None:
        """The nearest folder at or above ``folder`` (absolute) holding a project marker."""
        if folder in self.found:
            return self.found[folder]
        if os.path.basename(folder) in ("site-packages", "dist-packages"):
            root = None  # an installed package is no project of the user's
        elif any(os.path.exists(os.path.join(folder, m)) for m in MARKERS):
            root = folder
        else:
            parent = os.path.dirname(folder)
            root = None if parent == folder else self.of(parent)
        self.found[folder] = root
        return root


def project_root(folder: str) -> str | None:
    """:meth:`ProjectRoots.of`, for one question."""
    return ProjectRoots().of(folder)
