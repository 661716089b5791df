"""Glob patterns as regular expressions: the config's path globs and .gitignore lines.

Paths are matched in POSIX form (``a/b/c.py``), relative to a base folder (the
config file's folder, or the folder holding the .gitignore). ``*`` and ``?`` stop
at ``/``; ``**`` between slashes spans any number of folders; ``[...]`` is a
character class (``[!...]`` negated), as in git.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass


def glob_to_regex(glob: str) -> str:
    """The regex body (no anchors) for one glob."""
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        c = glob[i]
        if c == "*":
            if glob.startswith("**", i):
                j = i + 2
                at_segment_start = i == 0 or glob[i - 1] == "/"
                if at_segment_start and j < n and glob[j] == "/":
                    out.append("(?:.*/)?")  # "**/": zero or more folders
                    i = j + 1
                    continue
                if at_segment_start and j == n:
                    out.append(".*")  # trailing "**": everything below
                    i = j
                    continue
                out.append("[^/]*")  # "**" inside a name is a plain "*"
                i = j
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = glob.find("]", i + 2 if glob[i + 1 : i + 2] in ("!", "^", "]") else i + 1)
            if end == -1:
                out.append(re.escape(c))
            else:
                body = glob[i + 1 : end]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(glob[i]))
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def relative_to_root(path: str, root: str) -> str:
    """``path`` relative to ``root`` in POSIX form ("." for the root itself; absolute
    when it lies outside)."""
    full = os.path.abspath(path)
    if full == root:
        return "."
    rel = os.path.relpath(full, root) if inside(full, root) else full
    return rel.replace(os.sep, "/")


def inside(path: str, folder: str) -> bool:
    """Is the absolute ``path`` the absolute ``folder`` or below it?"""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def under(prefix: str, rel: str) -> str:
    """Join a ``relative_to_root`` folder and a POSIX path below it."""
    return rel if prefix == "." else f"{prefix.rstrip('/')}/{rel}"


class PathGlobs:
    """ruff-style path globs (``exclude``, ``per-file-ignores``).

    A glob without ``/`` matches a file or folder *name* anywhere (``build``,
    ``*_pb2.py``); a glob with ``/`` matches the path relative to the base folder
    (``rules/*/cases``, ``tests/**/*.py``; a leading ``/`` or ``./`` is dropped).
    """

    def __init__(self, globs: tuple[str, ...] | list[str]):
        self.globs = tuple(globs)
        names, paths = [], []
        for g in globs:
            g = g.rstrip("/")
            if g.startswith("./"):
                g = g[2:]
            if "/" in g:
                paths.append(glob_to_regex(g.lstrip("/")))
            elif g:
                names.append(glob_to_regex(g))
        self._name = re.compile("|".join(f"(?:{r})" for r in names)) if names else None
        self._path = re.compile("|".join(f"(?:{r})" for r in paths)) if paths else None

    def __bool__(self) -> bool:
        return self._name is not None or self._path is not None

    def match(self, rel: str) -> bool:
        """Does the glob set match this one path (relative, POSIX) itself?"""
        if self._name is not None and self._name.fullmatch(rel.rpartition("/")[2]):
            return True
        return self._path is not None and self._path.fullmatch(rel) is not None

    def which(self, rel: str) -> str | None:
        """The first glob (as written) that matches ``rel`` itself; None when none does.
        One glob at a time: for messages, never on the hot path."""
        for glob in self.globs:
            if PathGlobs((glob,)).match(rel):
                return glob
        return None

    def match_within(self, rel: str) -> bool:
        """Does it match the path or any folder above it (``a``, ``a/b``, ``a/b/c.py``)?"""
        parts = rel.split("/")
        return any(self.match("/".join(parts[:k])) for k in range(1, len(parts) + 1))


@dataclass(frozen=True)
class IgnoreRule:
    regex: re.Pattern
    negated: bool
    dir_only: bool
    pattern: str = ""  # the line as written, for messages that name the rule
    source: str = ""  # the file it is written in, when not the .gitignore of its base folder


def parse_gitignore(text: str, source: str = "") -> list[IgnoreRule]:
    """The rules of one .gitignore file, in order (see gitignore(5)); ``source`` names
    a file of the same syntax that is not a .gitignore (``.git/info/exclude``)."""
    rules: list[IgnoreRule] = []
    for raw in text.splitlines():
        line = raw
        if not line or line.startswith("#"):
            continue
        # Trailing spaces are dropped unless escaped with a backslash.
        stripped = line.rstrip(" ")
        if stripped.endswith("\\") and len(stripped) < len(line):
            stripped += " "
        line = stripped
        if not line:
            continue
        negated = line.startswith("!")
        if negated or line.startswith("\\!") or line.startswith("\\#"):
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line  # a slash at the start or in the middle anchors it
        body = glob_to_regex(line.lstrip("/"))
        regex = re.compile(body if anchored else f"(?:.*/)?{body}")
        rules.append(IgnoreRule(regex, negated, dir_only, raw.rstrip(" "), source))
    return rules


def gitignored(rules: list[tuple[str, IgnoreRule]], rel: str, is_dir: bool) -> bool:
    """Is ``rel`` (POSIX, relative to the walk's root) ignored by ``rules``?

    ``rules`` holds (base folder relative to the root, rule) pairs, outer files
    first; the last matching rule wins, as in git.
    """
    hit = last_match(rules, rel, is_dir)
    return hit is not None and not hit[1].negated


def last_match(
    rules: list[tuple[str, IgnoreRule]], rel: str, is_dir: bool
) -> tuple[str, IgnoreRule] | None:
    """The (base, rule) that decides whether ``rel`` is ignored (see :func:`gitignored`); None if none matches."""
    found = None
    for base, rule in rules:
        if base:
            if not rel.startswith(base + "/"):
                continue
            sub = rel[len(base) + 1 :]
        else:
            sub = rel
        if rule.dir_only and not is_dir:
            continue
        if rule.regex.fullmatch(sub):
            found = (base, rule)
    return found
