"""Where a project's modules are: the file of a dotted name and the dotted name of a file.

Path arithmetic and file tests only (imports nothing of the core's), so the run can ask what
a file imports from its project before any module is parsed or the data flow is loaded. A
project's modules sit under its root, or under ``src/`` there.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator

# Folders no module of a project is looked for in (besides those named with a dot).
_SKIP = frozenset({"__pycache__", "node_modules", "venv", "build", "dist", "site-packages"})


def project_python_files(root: str) -> list[str]:
    """The ``.py`` files of the project at ``root``, absolute, in a fixed order (the walk's,
    each folder's entries sorted)."""
    files: list[str] = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP)
        files += [
            os.path.abspath(os.path.join(folder, n)) for n in sorted(names) if n.endswith(".py")
        ]
    return files


def read_bytes(path: str) -> bytes | None:
    """The bytes of a regular file (None for anything else, or where it cannot be read).
    Read with the system's calls, not a file object: a fork's checkout has every file of
    its project read once more (the modules naming a sink word), and a file object costs
    about as much again as the read. A FIFO named ``*.py`` is not read (it would block)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        size = os.fstat(fd)
        if not stat.S_ISREG(size.st_mode):
            return None
        chunks = []
        while True:
            want = max(size.st_size + 1, 1 << 16)
            chunk = os.read(fd, want)
            chunks.append(chunk)
            if len(chunk) < want:
                return b"".join(chunks)  # a short read of a regular file is its end
    except OSError:
        return None
    finally:
        os.close(fd)


class ModuleFiles:
    """One project's module files, by dotted name, each looked up once per run."""

    def __init__(self, root: str | None):
        self.root = root
        self.files: dict[str, str | None] = {}
        self.dotted: dict[str, str | None] = {}  # a file's dotted name, by its absolute path
        self._tops: frozenset[str] | None = None
        self._import_of_top: tuple[re.Pattern[bytes], ...] | None = None

    def tops(self) -> frozenset[str]:
        """Names the project's absolute imports start with: the entries of its root and of
        ``src/`` there that a module or package could be named by (listed once)."""
        if self._tops is None:
            names: set[str] = set()
            for base in () if self.root is None else (self.root, os.path.join(self.root, "src")):
                try:
                    entries = os.listdir(base)
                except OSError:
                    continue
                for entry in entries:
                    stem = entry[:-3] if entry.endswith(".py") else entry
                    if stem.isidentifier():
                        names.add(stem)
            self._tops = frozenset(names)
        return self._tops

    def may_import(self, data: bytes, path: str) -> bool:
        """Might the file at ``path`` (these bytes) import a module of the project? True
        wherever :func:`import_statements` could find one whose first part is one of
        :meth:`tops`: ``from`` followed by a top (after any dots), ``import`` followed on
        its line by a top as a word, a relative import in a module of the project, or an
        import line continued by a backslash (its names sit on the next line). Each is one
        search for a literal word, so a file is scanned at the speed of ``in``."""
        if self._import_of_top is None:
            self._import_of_top = _imports_of(sorted(self.tops()))
        if any(p.search(data) for p in self._import_of_top):
            return True
        for continued in _CONTINUED.finditer(data):
            line = data[data.rfind(b"\n", 0, continued.start()) + 1 : continued.start()]
            if b"import" in line or b"from" in line:
                return True
        return (
            _RELATIVE.search(data) is not None and self.dotted_of(os.path.abspath(path)) is not None
        )

    def module_file(self, name: str) -> str | None:
        """The file of module ``name`` (``a/b.py`` or ``a/b/__init__.py``), or None."""
        if name in self.files:
            return self.files[name]
        found = None
        # A name whose first part is no entry of the root (the standard library, a
        # dependency) is no module of the project: no file is looked for.
        if self.root is not None and all(name.split(".")) and name.split(".", 1)[0] in self.tops():
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
        """The dotted name of the module at ``path`` (absolute), or None outside the project.
        Each path is worked out once a run: the outlines and the core ask again for every
        module they read."""
        found = self.dotted.get(path, _UNKNOWN)
        if found is _UNKNOWN:
            found = self.dotted[path] = self._dotted_of(path)
        return found  # type: ignore[return-value]

    def _dotted_of(self, path: str) -> str | None:
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


def _imports_of(tops: list[str]) -> tuple[re.Pattern[bytes], ...]:
    """The patterns of :meth:`ModuleFiles.may_import` for a project with these tops. Each
    starts with a literal word: ``re`` finds such a pattern as fast as ``in`` does. A top
    the bytes may spell in another encoding than UTF-8 matches every file."""
    if not all(t.isascii() for t in tops):
        return (re.compile(rb""),)
    if not tops:
        return ()
    names = b"|".join(re.escape(t.encode()) for t in tops)
    return (
        re.compile(rb"from[ \t]+\.*(?:%s)\b" % names),
        re.compile(rb"import[ \t(][^\n]*?\b(?:%s)\b" % names),
    )


_UNKNOWN = object()

# A relative import, and a line continued by a backslash, whatever the project.
_RELATIVE = re.compile(rb"from[ \t]+\.")
_CONTINUED = re.compile(rb"\\[\r\n]")


def import_statements(
    text: str, package: str, is_package: bool
) -> Iterator[tuple[str | None, str]]:
    """(module, what follows ``import``) for each import statement of the text: the module
    ``from`` names, resolved against ``package`` (None for ``import a, b``). What follows is
    split into names only where a caller needs them (:func:`import_names`)."""
    here = package.split(".") if package else []
    if not is_package:
        here = here[:-1]
    for _, _, head, rest in import_spans(text):
        if not head:
            yield None, rest
            continue
        module = head[5:].strip()
        dots = len(module) - len(module.lstrip("."))
        if dots:
            if dots - 1 <= len(here):
                base = here[: len(here) - (dots - 1)]
                tail = module[dots:]
                module = ".".join(base + ([tail] if tail else []))
            else:
                module = ""
        if module:
            yield module, rest


def import_spans(text: str) -> Iterator[tuple[int, int, str, str]]:
    """(start, end, head, rest) of each import statement of the text: where it starts (its
    ``from`` or ``import``) and ends, ``from <module>`` or "" before ``import``, and what
    follows ``import``.

    Found from each ``import`` word of the text (faster than a pattern tried at every line
    start); a line is one when only ``from <module>`` or blanks stand before the word, after
    any ``:`` or ``;`` (``if TYPE_CHECKING: import x``, ``import a; import b``). A statement
    ends at its line's end (a ``;`` there), at the line a backslash continues it to, or at
    the ``)`` that closes its names (a comment inside may hold another)."""
    at = text.find("import")
    while at != -1:
        if text[at + 6 : at + 7] not in _AFTER_IMPORT:
            # ``imports``, ``important``, ``import`` ending a line: no statement (asked
            # before the line is cut out: many of the word's occurrences are such)
            at = text.find("import", at + 6)
            continue
        start = text.rfind("\n", 0, at) + 1
        lead = text[start:at]
        cut = max(lead.rfind(":"), lead.rfind(";"))
        if cut != -1:
            start += cut + 1
            lead = lead[cut + 1 :]
        head = lead.strip()
        end = text.find("\n", at)
        end = len(text) if end == -1 else end
        while text[at:end].rstrip().endswith("\\") and end < len(text):
            later = text.find("\n", end + 1)  # a continued line: the next one too
            end = len(text) if later == -1 else later
        rest = text[at + 6 : end]
        if rest[:1] in (" ", "\t", "(") and (not head or head.startswith("from ")):
            code = _uncommented(rest)
            opened = code.find("(")
            if opened != -1 and ")" not in code:
                close = _closing(text, at + 6 + opened + 1)
                end = len(text) if close == -1 else close + 1
                rest = text[at + 6 : close if close != -1 else end]
            else:
                semicolon = rest.find(";")
                if semicolon != -1:
                    rest = rest[:semicolon]
                    end = at + 6 + semicolon
            yield start + len(lead) - len(lead.lstrip()), end, head, rest
        at = text.find("import", at + 6)


_AFTER_IMPORT = (" ", "\t", "(")


def _uncommented(line: str) -> str:
    hash_at = line.find("#")
    return line if hash_at == -1 else line[:hash_at]


def _closing(text: str, at: int) -> int:
    """The index of the first ``)`` from ``at`` outside a comment, or -1."""
    while True:
        close = text.find(")", at)
        hash_at = text.find("#", at, close if close != -1 else len(text))
        if hash_at == -1:
            return close
        at = text.find("\n", hash_at)
        if at == -1:
            return -1


def import_names(rest: str) -> list[str]:
    """The (dotted) names an import statement lists after ``import``."""
    return [
        n.split()[0]
        for n in re.split(r"[,()\\\n]+", rest)
        if n.strip() and n.split()[0].replace(".", "_").isidentifier()
    ]
