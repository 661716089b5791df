"""Is ``--output-file PATH`` safe to write? Asked before any file is read or fixed.

The report must never replace a source (``cgguard check -o r.py r.py``), and a
report that cannot be written must fail the run before ``cgguard fix`` rewrites
anything (not after). :func:`problem` returns the one-line reason, or None.
"""

from __future__ import annotations

import os
from collections.abc import Iterable


def problem(output: str, paths: Iterable[str], settings=None) -> str | None:
    """Why ``output`` cannot take the report of a run over ``paths``, or None."""
    if os.path.isdir(output):
        return f"cannot write {output}: it is a folder"
    parent = os.path.dirname(os.path.abspath(output))
    if not os.path.isdir(parent):
        return f"cannot write {output}: folder {parent} does not exist"
    exists = os.path.lexists(output)
    if not os.access(output if exists else parent, os.W_OK):
        return f"cannot write {output}: permission denied"
    if exists and _is_input(output, [p for p in paths if p != "-"], settings):
        return f"cannot write {output}: it is one of the files to check, and the report would replace it"
    return None


def _is_input(output: str, paths: list[str], settings) -> bool:
    """Is ``output`` (after symlinks) a path named, or a file found in a folder named?"""
    try:
        target = os.stat(output)
    except OSError:
        return False  # a dangling link: it names no source
    # As written and with symlinks resolved: a folder named may reach it either way.
    spellings = {os.path.abspath(output), os.path.realpath(output)}
    folders = []
    for path in paths:
        if _same(path, target):
            return True
        if os.path.isdir(path) and any(
            _within(s, f)
            for s in spellings
            for f in {os.path.abspath(path), os.path.realpath(path)}
        ):
            folders.append(path)
    if not folders:
        return False
    # Inside a folder named: an input only if the search would check it (a report.txt
    # beside the sources is not one). Searched only in this rare case.
    from cgguard.static.workflow.discovery import discover

    return any(
        error is None and _same(found, target) for found, error in discover(folders, settings)
    )


def _same(path: str, target: os.stat_result) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == (target.st_dev, target.st_ino)


def _within(real: str, folder: str) -> bool:
    return real == folder or real.startswith(folder.rstrip(os.sep) + os.sep)
