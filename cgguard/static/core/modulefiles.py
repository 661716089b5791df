"""Where a project's modules are: the file of a dotted name and the dotted name of a file.

Path arithmetic and file tests only (imports nothing of the core's), so the run can ask what
a file imports from its project before any module is parsed or the data flow is loaded. A
project's modules sit under its root, or under ``src/`` there.
"""

from __future__ import annotations

import os


class ModuleFiles:
    """One project's module files, by dotted name, each looked up once per run."""

    def __init__(self, root: str | None):
        self.root = root
        self.files: dict[str, str | None] = {}

    def module_file(self, name: str) -> str | None:
        """The file of module ``name`` (``a/b.py`` or ``a/b/__init__.py``), or None."""
        if name in self.files:
            return self.files[name]
        found = None
        if self.root is not None and all(name.split(".")):
            parts = name.split(".")
            for base in (self.root, os.path.join(self.root, "src")):
                candidate = os.path.join(base, *parts)
                if os.path.isfile(candidate + ".py"):
                    found = os.path.abspath(candidate + ".py")
                    break
                if os.path.isfile(os.path.join(candidate, "__init__.py")):
                    found = os.path.abspath(os.path.join(candidate, "__init__.py"))
                    break
        self.files[name] = found
        return found

    def dotted_of(self, path: str) -> str | None:
        """The dotted name of the module at ``path`` (absolute), or None outside the project."""
        if self.root is None:
            return None
        for base in (os.path.join(self.root, "src"), self.root):
            rel = os.path.relpath(path, base)
            if not rel.startswith("..") and rel.endswith(".py"):
                parts = rel[:-3].split(os.sep)
                if parts[-1] == "__init__":
                    parts = parts[:-1]
                if all(p.isidentifier() for p in parts):
                    return ".".join(parts)
        return None
