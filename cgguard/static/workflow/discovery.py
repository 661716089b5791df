"""Which files a run checks: explicit Python files as given, folders searched for *.py/*.pyi.

A file named on the command line is checked when it is Python: a ``.py`` or
``.pyi`` name, or a ``python`` shebang on its first line. Anything else (a
README, notes.txt) is passed over with a warning, as is a folder holding no
Python file to check; neither is an error.

Inside a git work tree a folder's files are what ``git ls-files -co
--exclude-standard`` lists: tracked files plus untracked ones that no
.gitignore (nested ones too), ``.git/info/exclude`` or ``core.excludesFile``
ignores. Elsewhere (no git, or git refuses) the folder is walked and the
.gitignore files met on the way are honoured by the same rules, together with
those in the folders between the project root and the walked folder. The
project root is found from the path, never from the working directory: the
nearest folder at or above it holding ``.git``, ``pyproject.toml`` or
``cgguard.toml`` (the walked folder itself when there is none), so the same tree
gives the same files wherever cgguard runs from. Symlinked folders are followed
once (a loop is not walked twice).

``exclude``/``extend-exclude`` skip what a folder search finds: a file, or any
folder between the searched folder and the file, that matches. A path named on
the command line is always checked unless ``force-exclude`` is on; then it is
skipped when it or a folder above it matches. A named folder that holds Python
files but loses every one of them to excludes or .gitignore (a virtual
environment: any of them) is an error that names the patterns (see
:mod:`cgguard.static.workflow.excluded`): the run did not check what it was
asked to.

Each file is checked once per run, however often it is reached: named twice,
named and found in a named folder, or reached through a symbolic link to a file
already in the run. Identity is the file's real path (``os.path.realpath``); the
first path that reaches a file is the one shown. Hard links are different names
(``cgguard fix`` replaces each name on its own), so each is checked.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from cgguard.static.source.findings import FileError
from cgguard.static.workflow.config import Settings
from cgguard.static.workflow.excluded import explain, is_virtualenv
from cgguard.static.workflow.globs import (
    IgnoreRule,
    PathGlobs,
    gitignored,
    last_match,
    parse_gitignore,
    relative_to_root,
    under,
)

SUFFIXES = (".py", ".pyi")
# What makes a folder a project root for .gitignore files outside git.
ROOT_MARKERS = (".git", "pyproject.toml", "cgguard.toml")

NOT_PYTHON = "not a Python file (no .py or .pyi suffix, no python shebang); skipped"
NO_PYTHON_FILES = "no Python files to check in this folder (none found)"


@dataclass(frozen=True)
class Skip(FileError):
    """A path passed over with a warning: nothing in it to check, and not an error."""


def force_excluded(path: str, settings: Settings, excludes: PathGlobs | None = None) -> bool:
    """With force-exclude on: does an exclude glob match ``path`` or a folder above it?"""
    if not settings.force_exclude:
        return False
    excludes = excludes if excludes is not None else PathGlobs(settings.all_excludes())
    return bool(excludes) and excludes.match_within(relative_to_root(path, settings.root))


def discover(
    paths: Iterable[str], settings: Settings | None = None, sizes: dict[str, int] | None = None
) -> Iterator[tuple[str, FileError | None]]:
    """(path, None) for each file to check, (path, error) for each path that cannot be.
    ``sizes``, when given, is filled with each file's size in bytes, from the ``stat``
    discovery makes anyway (the driver shares the biggest files first)."""
    settings = settings or Settings()
    excludes = PathGlobs(settings.all_excludes())
    once = _Once(sizes)
    for path in paths:
        if force_excluded(path, settings, excludes):
            continue
        if os.path.isdir(path):
            if not once.first_folder(path):
                continue  # the same folder named again: its files are in the run already
            found: list[str] = []
            failed = False
            stats: dict[str, os.stat_result] = {}
            for file in _files_under(path, settings, excludes, stats):
                if isinstance(file, FileError):
                    failed = True
                    if once.first_error(file.path):
                        yield file.path, file
                    continue
                found.append(file)
                if once.first_file(file, stats.pop(file, None)):
                    yield file, None
            if not found and not failed:
                yield path, _nothing_found(path, settings, excludes)
            elif found and is_virtualenv(path):
                # A virtual environment named: what it holds lies in site-packages, a
                # default exclude; checking only its scripts would be a false all-clear.
                reason = explain(path, settings, excludes, found)
                if reason and once.first_error(path):
                    yield path, FileError(path, reason)
        elif os.path.exists(path) or os.path.islink(path):
            if once.first_file(path):
                yield path, (None if _named_python(path) else Skip(path, NOT_PYTHON))
        elif once.first_error(path):
            yield path, FileError(path, "no such file or directory")


class _Once:
    """Which files, folders and failed paths a run has already met.

    A file's identity is its real path. Comparing real paths for every file would
    cost a dozen ``lstat`` calls each; one ``stat`` finds the candidates instead
    (same device and inode), and only those are compared by real path, so two
    hard links stay two files.
    """

    def __init__(self, sizes: dict[str, int] | None = None) -> None:
        self._inodes: dict[tuple[int, int], list[str]] = {}
        self._paths: set[tuple[str, str]] = set()
        self._sizes = sizes

    def first_file(self, path: str, st: os.stat_result | None = None) -> bool:
        """``st``: the file's ``stat``, where the caller has it already."""
        if st is None:
            try:
                st = os.stat(path)
            except OSError:  # a broken link, a loop: its error is reported once
                return self.first_error(path)
        seen = self._inodes.setdefault((st.st_dev, st.st_ino), [])
        if seen:
            real = os.path.realpath(path)
            if any(os.path.realpath(p) == real for p in seen):
                return False
        seen.append(path)
        if self._sizes is not None:
            self._sizes[path] = st.st_size
        return True

    def first_folder(self, path: str) -> bool:
        return self._first(("folder", os.path.realpath(path)))

    def first_error(self, path: str) -> bool:
        return self._first(("error", os.path.realpath(path)))

    def _first(self, key: tuple[str, str]) -> bool:
        if key in self._paths:
            return False
        self._paths.add(key)
        return True


def _nothing_found(folder: str, settings: Settings, excludes: PathGlobs) -> FileError:
    """A folder search that found nothing: a warning when the folder holds no Python
    file, an error naming the patterns when excludes or .gitignore removed them all."""
    reason = explain(folder, settings, excludes)
    return FileError(folder, reason) if reason else Skip(folder, NO_PYTHON_FILES)


def _named_python(path: str) -> bool:
    """Is a file named on the command line Python? Only a regular file without a
    Python suffix is opened (for its shebang): anything else (a broken link, a
    named pipe) goes on to be read, which reports what is wrong with it."""
    if path.endswith(SUFFIXES):
        return True
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return True
        with open(path, "rb") as fh:
            first = fh.readline(256)
    except OSError:
        return True
    return first.startswith(b"#!") and b"python" in first


def project_root(folder: str) -> str:
    """The nearest folder at or above ``folder`` holding a root marker; ``folder`` when none does."""
    folder = os.path.abspath(folder)
    current = folder
    while True:
        if any(os.path.exists(os.path.join(current, m)) for m in ROOT_MARKERS):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return folder
        current = parent


def _files_under(
    folder: str,
    settings: Settings,
    excludes: PathGlobs,
    stats: dict[str, os.stat_result] | None = None,
) -> Iterator[str | FileError]:
    """The files a folder search finds (and what is wrong where it cannot search).
    ``stats``: filled with the ``stat`` of each file listed by git, which finding it
    took, so that :class:`_Once` does not ask again."""
    excluded = excluded_below(folder, settings, excludes)
    listed = _git_files(folder) if settings.respect_gitignore else None
    # git lists nothing in a folder it ignores (an installed package under .venv,
    # say); a folder named on the command line is searched all the same: walk it.
    if listed:
        # A folder's verdict is worked out once for all its files (a fork's checkout
        # lists 2,600 files in 300 folders), not once per file for every folder above it.
        folder_excluded: dict[str, bool] = {"": False}

        def in_excluded_folder(folder_rel: str) -> bool:
            found = folder_excluded.get(folder_rel)
            if found is None:
                parent = folder_rel.rpartition("/")[0]
                found = in_excluded_folder(parent) or excluded(folder_rel)
                folder_excluded[folder_rel] = found
            return found

        for rel in listed:
            if excluded is not None and (
                in_excluded_folder(rel.rpartition("/")[0]) or excluded(rel)
            ):
                continue
            path = os.path.normpath(os.path.join(folder, rel))
            try:
                st = os.stat(path)
            except OSError:  # a deleted tracked file, a broken link
                continue
            if stat.S_ISREG(st.st_mode):  # not a submodule
                if stats is not None:
                    stats[path] = st
                yield path
        return
    yield from walk(folder, settings, excluded)


def excluded_below(folder: str, settings: Settings, excludes: PathGlobs):
    """``excluded(rel)``: does a path relative to ``folder`` itself match an exclude
    glob? None when there are no excludes."""
    if not excludes:
        return None
    # Path arithmetic is most of a folder search's cost: the folder's place under
    # the config root is worked out once, its entries' by joining strings.
    base = relative_to_root(folder, settings.root)
    cache: dict[str, bool] = {}

    def excluded(rel: str) -> bool:
        if rel not in cache:
            cache[rel] = excludes.match(under(base, rel))
        return cache[rel]

    return excluded


def _git_files(folder: str) -> list[str] | None:
    """Python files under ``folder`` that git does not ignore; None outside a work tree."""
    import subprocess

    try:
        proc = subprocess.run(
            ["git", "-C", folder, "ls-files", "-co", "--exclude-standard", "-z", "--", "."],
            capture_output=True,
            check=False,
        )
    except OSError:  # no git on this machine
        return None
    if proc.returncode != 0:  # not a work tree (or git refuses it): walk instead
        return None
    names = os.fsdecode(proc.stdout).split("\0")
    return sorted({n for n in names if n.endswith(SUFFIXES)}, key=lambda n: n.split("/"))


def walk(root: str, settings: Settings, excluded, on_skip=None) -> Iterator[str | FileError]:
    """Python files under ``root`` that no exclude glob (``excluded``, see
    :func:`excluded_below`) and no .gitignore rule skips. ``on_skip(rel, is_dir,
    hit)`` hears of each skipped entry (``hit``: the deciding (base, .gitignore
    rule), or None for an exclude glob); folders skipped are not entered."""
    root_abs = os.path.abspath(root)
    use_gitignore = settings.respect_gitignore
    # .gitignore rules as (folder relative to `top`, rule); `top` is the work tree's
    # top inside git, else the project root found from the walked folder, so the
    # files between count too. Inside git, the rules of `core.excludesFile` and then
    # `.git/info/exclude` come first: any .gitignore rule matching later wins, as in git.
    git = _git_tree(root_abs) if use_gitignore else None
    rules: list[tuple[str, IgnoreRule]] = []
    if git is not None:
        top, rules = git[0], list(git[1])
        # git names its top by the real path: the walked folder's place is found the same way.
        prefix = os.path.relpath(os.path.realpath(root_abs), top).replace(os.sep, "/")
        prefix = "" if prefix == "." else prefix
    else:
        top = project_root(root_abs) if use_gitignore else root_abs
        prefix = "" if top == root_abs else os.path.relpath(root_abs, top).replace(os.sep, "/")
    if use_gitignore and prefix:
        parts = prefix.split("/")
        for k in range(len(parts)):
            base = "/".join(parts[:k])
            rules.extend(_read_gitignore(os.path.join(top, *parts[:k]), base))

    def rel_top(rel: str) -> str:
        return f"{prefix}/{rel}" if prefix else rel

    seen: set[tuple[int, int]] = set()
    # Folders os.walk cannot list: reported, never skipped in silence.
    unlistable: list[OSError] = []
    for folder, dirs, files in os.walk(root, followlinks=True, onerror=unlistable.append):
        while unlistable:
            yield _unlistable_error(unlistable.pop(0))
        try:
            st = os.stat(folder)
        except OSError:
            continue
        key = (st.st_dev, st.st_ino)
        if key in seen:  # a symlink loop: do not walk it again
            dirs[:] = []
            continue
        seen.add(key)
        # os.walk names each folder by joining onto ``root`` as given: the rest is its
        # place below it (cheaper than ``relpath``, which makes both paths absolute).
        rel_folder = folder[len(root) :].lstrip(os.sep).replace(os.sep, "/")
        # The listing says which folders hold one (any case: a file system that ignores
        # case opens ``.GitIgnore`` by that name too), so no other folder is asked.
        if use_gitignore and any(name.lower() == ".gitignore" for name in files):
            rules.extend(_read_gitignore(folder, rel_top(rel_folder).rstrip("/")))

        def skip(name: str, is_dir: bool) -> bool:
            rel = f"{rel_folder}/{name}" if rel_folder else name  # noqa: B023 (used within this folder's step)
            if excluded is not None and excluded(rel):
                if on_skip is not None:
                    on_skip(rel, is_dir, None)
                return True
            if not rules:
                return False
            if on_skip is None:
                return gitignored(rules, rel_top(rel), is_dir)
            hit = last_match(rules, rel_top(rel), is_dir)
            if hit is None or hit[1].negated:
                return False
            on_skip(rel, is_dir, hit)
            return True

        dirs[:] = sorted(d for d in dirs if d != ".git" and not skip(d, True))
        shown = os.path.normpath(folder)
        shown = "" if shown == "." else shown + os.sep
        for name in sorted(files):
            if name.endswith(SUFFIXES) and not skip(name, False):
                yield shown + name
    while unlistable:
        yield _unlistable_error(unlistable.pop(0))


def _unlistable_error(exc: OSError) -> FileError:
    path = os.path.normpath(exc.filename) if exc.filename else "?"
    reason = (exc.strerror or type(exc).__name__).lower()
    return FileError(path, f"cannot list this folder: {reason}")


def _git_tree(folder: str) -> tuple[str, list[tuple[str, IgnoreRule]]] | None:
    """Inside a git work tree: its top folder, and the rules of ``core.excludesFile`` and
    ``.git/info/exclude`` (both relative to that top). None outside one, or without git."""
    import subprocess

    def start(*args: str) -> subprocess.Popen[str] | None:
        try:
            return subprocess.Popen(
                ["git", "-C", folder, *args],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
        except OSError:  # no git on this machine
            return None

    def finish(proc: subprocess.Popen[str] | None) -> tuple[int, str] | None:
        if proc is None:
            return None
        out = proc.communicate()[0]
        return proc.returncode, out

    # Both questions at once: each is a process start, and neither waits for the other.
    asked = start("rev-parse", "--show-toplevel", "--git-path", "info/exclude")
    configured = finish(start("config", "--path", "--get", "core.excludesFile"))
    paths = finish(asked)
    if paths is None or paths[0] != 0 or len(paths[1].splitlines()) != 2:
        return None
    top, info_exclude = paths[1].splitlines()
    if configured is not None and configured[0] == 0 and configured[1].strip():
        global_file = configured[1].strip()
    else:  # git's default: $XDG_CONFIG_HOME/git/ignore, or ~/.config/git/ignore
        config_home = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
        global_file = os.path.join(config_home, "git", "ignore")
    rules: list[tuple[str, IgnoreRule]] = []
    for path, name in (
        (global_file, f"core.excludesFile {global_file}"),
        (os.path.join(folder, info_exclude), ".git/info/exclude"),
    ):
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError:
            continue
        rules.extend(("", rule) for rule in parse_gitignore(text, name))
    return os.path.abspath(top), rules


def _read_gitignore(folder: str, base: str) -> list[tuple[str, IgnoreRule]]:
    try:
        with open(os.path.join(folder, ".gitignore"), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return []
    return [(base, rule) for rule in parse_gitignore(text)]
