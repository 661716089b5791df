"""Check or fix files and folders: the static half's programmatic entry point.

``check_paths`` and ``fix_paths`` never raise for a bad file: each problem becomes
a :class:`FileError` with one line of reason, and every other file is still done.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

from cgguard.static import sourcefile
from cgguard.static.findings import FileError, Finding
from cgguard.static.fixer import fix_text
from cgguard.static.scan import check_source

# Folders never worth walking into.
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", ".mypy_cache", ".pytest_cache",
                       ".ruff_cache", ".tox", ".nox", ".venv", "venv", "node_modules"})

# Filter applied to each file's findings before they are reported or fixed
# (configuration and suppressions plug in here).
FindingFilter = Callable[[str, str, list[Finding]], list[Finding]]


@dataclass
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)
    error: FileError | None = None
    changed: bool = False
    diff: str = ""
    fixed_count: int = 0
    new_text: str | None = None


@dataclass
class RunResult:
    files: list[FileResult] = field(default_factory=list)

    @property
    def findings(self) -> list[Finding]:
        return [f for r in self.files for f in r.findings]

    @property
    def errors(self) -> list[FileError]:
        return [r.error for r in self.files if r.error is not None]

    @property
    def fixed(self) -> int:
        return sum(r.fixed_count for r in self.files)

    def exit_code(self) -> int:
        """0 clean, 1 findings remain, 2 an error occurred (errors win)."""
        if self.errors:
            return 2
        return 1 if self.findings else 0


def iter_python_files(paths: Iterable[str]) -> Iterator[tuple[str, FileError | None]]:
    """Files to check, in a stable order: explicit files as given, folders walked for *.py."""
    for path in paths:
        if os.path.isdir(path):
            found = False
            for file in _walk(path):
                found = True
                yield file, None
            if not found:
                yield path, FileError(path, "no Python files found in this directory")
        elif os.path.exists(path) or os.path.islink(path):
            yield path, None
        else:
            yield path, FileError(path, "no such file or directory")


def _walk(root: str) -> Iterator[str]:
    seen: set[tuple[int, int]] = set()
    for folder, dirs, files in os.walk(root, followlinks=True):
        try:
            st = os.stat(folder)
        except OSError:
            continue
        key = (st.st_dev, st.st_ino)
        if key in seen:  # a symlink loop: do not walk it again
            dirs[:] = []
            continue
        seen.add(key)
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in sorted(files):
            if name.endswith((".py", ".pyi")):
                yield os.path.join(folder, name)


def _load(path: str) -> sourcefile.Source:
    return sourcefile.decode(sourcefile.read_bytes(path))


def _checker(path: str, finding_filter: FindingFilter | None, text_for_filter: list[str]):
    def check(text: str) -> list[Finding]:
        findings = check_source(text, path)
        if finding_filter is not None:
            findings = finding_filter(path, text, findings)
        return findings

    return check


def check_text(text: str, path: str, finding_filter: FindingFilter | None = None) -> FileResult:
    result = FileResult(path)
    try:
        findings = check_source(text, path)
    except SyntaxError as exc:
        result.error = FileError(path, f"syntax error at line {exc.lineno}: {exc.msg}")
        return result
    except (ValueError, RecursionError, MemoryError) as exc:
        result.error = FileError(path, _parse_failure(exc))
        return result
    if finding_filter is not None:
        findings = finding_filter(path, text, findings)
    result.findings = findings
    return result


def check_file(path: str, finding_filter: FindingFilter | None = None) -> FileResult:
    try:
        source = _load(path)
    except sourcefile.SourceError as exc:
        return FileResult(path, error=FileError(path, str(exc)))
    return check_text(source.text, path, finding_filter)


def fix_source_text(
    text: str, path: str, finding_filter: FindingFilter | None = None, *, unsafe: bool = False
) -> FileResult:
    """Fix one text in memory; ``new_text`` holds the result."""
    result = check_text(text, path, finding_filter)
    if result.error is not None:
        return result
    check = _checker(path, finding_filter, [])
    try:
        outcome = fix_text(text, check, unsafe=unsafe)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        result.error = FileError(path, _parse_failure(exc))
        return result
    result.findings = outcome.remaining
    result.new_text = outcome.text
    result.fixed_count = len(outcome.applied)
    result.changed = outcome.text != text
    if outcome.error:
        result.error = FileError(path, outcome.error)
    if result.changed:
        result.diff = "".join(
            difflib.unified_diff(
                text.splitlines(keepends=True),
                outcome.text.splitlines(keepends=True),
                fromfile=f"a/{path.lstrip('/')}",
                tofile=f"b/{path.lstrip('/')}",
            )
        )
    return result


def fix_file(
    path: str, finding_filter: FindingFilter | None = None, *, write: bool = True, unsafe: bool = False
) -> FileResult:
    try:
        source = _load(path)
    except sourcefile.SourceError as exc:
        return FileResult(path, error=FileError(path, str(exc)))
    result = fix_source_text(source.text, path, finding_filter, unsafe=unsafe)
    if write and result.changed and result.new_text is not None:
        try:
            sourcefile.write_atomic(path, sourcefile.encode(source, result.new_text))
        except (OSError, UnicodeEncodeError) as exc:
            result.error = FileError(path, f"could not write the fixed file: {exc}")
            result.changed = False
    return result


def check_paths(paths: Iterable[str], finding_filter: FindingFilter | None = None) -> RunResult:
    run = RunResult()
    for path, error in iter_python_files(paths):
        run.files.append(FileResult(path, error=error) if error else check_file(path, finding_filter))
    return run


def fix_paths(
    paths: Iterable[str],
    finding_filter: FindingFilter | None = None,
    *,
    write: bool = True,
    unsafe: bool = False,
) -> RunResult:
    run = RunResult()
    for path, error in iter_python_files(paths):
        if error:
            run.files.append(FileResult(path, error=error))
        else:
            run.files.append(fix_file(path, finding_filter, write=write, unsafe=unsafe))
    return run


def _parse_failure(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "too deeply nested to parse"
    if isinstance(exc, MemoryError):
        return "too large to parse"
    return f"cannot parse: {exc}"
