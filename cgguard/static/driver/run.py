"""Check or fix files and folders: the static half's programmatic entry point.

``check_paths`` and ``fix_paths`` never raise for a bad file: each problem becomes
a :class:`FileError` with one line of reason, and every other file is still done.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

from cgguard.static.driver import parallel
from cgguard.static.driver.context import RunContext
from cgguard.static.driver.prefilter import mentions_sink_word, plain_bytes
from cgguard.static.source import sourcefile
from cgguard.static.source.findings import FileError, Finding
from cgguard.static.workflow.discovery import Skip, discover

T = TypeVar("T")

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
    traceback: str | None = None  # an internal error's traceback, shown with --verbose
    # Why a path named on the command line was passed over (not Python, say): a
    # warning, neither a checked file nor an error.
    skipped: str | None = None
    # Were the file's findings settled? False for a path that failed before or
    # while it was checked (missing, unreadable, a syntax error): an error, never
    # a checked file. A fix that fails later leaves the file checked.
    checked: bool | None = None
    # The findings before any fix: what stays when a fix is not written.
    found: list[Finding] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.checked is None:
            self.checked = self.error is None and self.skipped is None


@dataclass
class RunResult:
    files: list[FileResult] = field(default_factory=list)
    # `fix --diff`: fixes are worked out but not written; what they would change
    # still counts against a clean exit.
    dry_run: bool = False
    # Were unsafe fixes on for this run (--unsafe-fixes, `unsafe-fixes = true`)? The
    # summary then counts them as fixable instead of naming the flag that applies them.
    unsafe_fixes: bool = False
    # The folder the diffs name their files from (see textdiff.diff_base).
    diff_base: str | None = None

    @property
    def findings(self) -> list[Finding]:
        return [f for r in self.files for f in r.findings]

    @property
    def errors(self) -> list[FileError]:
        return [r.error for r in self.files if r.error is not None]

    @property
    def fixed(self) -> int:
        """Findings fixed (with ``dry_run``: that would be fixed)."""
        return sum(r.fixed_count for r in self.files)

    @property
    def checked(self) -> int:
        """Files whose findings were settled (a path that failed is an error instead)."""
        return sum(1 for r in self.files if r.checked)

    @property
    def skipped(self) -> list[FileResult]:
        return [r for r in self.files if r.skipped is not None]

    def exit_code(self) -> int:
        """0 clean, 1 findings remain (or, dry run, would be fixed), 2 an error occurred (errors win)."""
        if self.errors:
            return 2
        if self.findings or (self.dry_run and self.fixed):
            return 1
        return 0


def iter_python_files(
    paths: Iterable[str], settings=None, sizes: dict[str, int] | None = None
) -> Iterator[tuple[str, FileError | None]]:
    """Files to check (see :mod:`cgguard.static.workflow.discovery`); ``settings`` is a
    config.Settings; ``sizes`` is filled with each file's size (from discovery's ``stat``)."""
    return discover(paths, settings, sizes)


def _checker(
    path: str, finding_filter: FindingFilter | None, context=None, names_source: bool | None = None
):
    def check(text: str) -> list[Finding]:
        findings = _quiet_check(text, path, context, names_source)
        if finding_filter is not None:
            findings = finding_filter(path, text, findings)
        return findings

    return check


def _quiet_check(
    text: str, path: str, context=None, names_source: bool | None = None
) -> list[Finding]:
    # Imported here: a run whose files all pass the prefilter never loads the parser side.
    from cgguard.static.driver.check import check_source
    from cgguard.static.driver.prefilter import might_match

    if names_source is None:
        chosen = _configurations(context)
        names_source = might_match(text, chosen)
        importing = [c for c in chosen if c.follows_imports]
        if not names_source and not _may_import_a_count(text, importing):
            return []
    # The parser warns about the file's content (invalid escapes, `is` with a
    # literal, ...) on stderr; that is not ours to print, one line per file is.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return check_source(text, path, context=context, names_source=names_source)


def check_text(
    text: str,
    path: str,
    finding_filter: FindingFilter | None = None,
    context=None,
    names_source: bool | None = None,
) -> FileResult:
    """``context``: what the run has read (:class:`.context.RunContext`); None: this file alone.
    ``names_source``: what the byte screen found (:func:`screen_file`): True, the text names
    a source; False, it does not but may import a module of its project and names a block
    count; None: ask."""
    result = FileResult(path)
    try:
        result.findings = _checker(path, finding_filter, context, names_source)(text)
    except SyntaxError as exc:
        result.error = FileError(path, syntax_error(exc))
        result.checked = False
    except (ValueError, RecursionError, MemoryError) as exc:
        result.error = FileError(path, _parse_failure(exc))
        result.checked = False
    return result


def _configurations(context: RunContext | None):
    """The configurations a run with ``context`` selected (every one without a context)."""
    from cgguard.static.rules.configs import CONFIGURATIONS

    return CONFIGURATIONS if context is None else context.configurations


def _check_parses(text: str, context: RunContext | None = None) -> bool:
    """Does the check parse all of ``text`` (so a fixed text needs no parse of its own)? It
    does whenever the text names a source and a sink word: the core reads the whole file
    with Python's parser before anything else (:func:`.check.core_hits`). A text without a
    sink word is parsed by the check only inside some projects, so the fixer parses it."""
    chosen = _configurations(context)
    return any(c.might_match(text) and c.mentions_sink_word(text) for c in chosen)


def _may_import_a_count(text: str, configurations=None) -> bool:
    """A file without a capture size that imports something and names a block count: a
    helper of another module of the project may hand it one (the core follows the import)."""
    chosen = _configurations(None) if configurations is None else configurations
    return "import" in text and mentions_sink_word(text, chosen)


def _importer_bytes(path: str, data: bytes, context: RunContext, configurations) -> bool:
    """Without a capture size, a file of a project that imports one of the project's modules
    and names a block count may still take one from a helper of it (the core follows the
    import). Its bytes are asked whether they may import one before its text is decoded
    and its import statements are read: in a tree whose imports name no module of its
    project (an installed package copied into another project), none is.
    ``configurations``: those whose sources the file does not name."""
    root = context.roots.of_file(path)  # one lookup per folder
    if root is None:
        return False
    # Asked of every file of a project, importing or not: the run keeps the answer for
    # the modules of the project that name a sink word (RunContext.names_a_sink).
    if not any(context.names_a_sink(data, path, root, c) for c in configurations):
        return False
    return b"import" in data and context.module_files(root).may_import(data, path)


def screen_file(path: str, context: RunContext | None = None) -> FileResult | tuple[str, bool]:
    """The byte screen: the file's result when its bytes settle it (most files of a
    tree), else its decoded text, which must be checked, and whether it names a source
    (False: it imports a module of its project and names a block count).
    ``context``: what the run has read so far (its project roots and module files)."""
    try:
        data = sourcefile.read_bytes(path)
        context = context or RunContext()
        named = [c for c in context.configurations if c.names_a_source(data)]
        source = any(context.may_reach_a_sink(data, path, c, screening=True) for c in named)
        # A file that names a configuration's source but cannot reach a sink names no sink
        # word of it, which its importer test needs too: it is not scanned for one again.
        others = [c for c in context.importing if c not in named]
        wanted = source or (bool(others) and _importer_bytes(path, data, context, others))
        if not wanted and plain_bytes(data):
            return FileResult(path)
        decoded = sourcefile.decode(data)  # decoding problems are reported for every file
    except sourcefile.SourceError as exc:
        return FileResult(path, error=FileError(path, str(exc)))
    if wanted and not source and not data.isascii():
        # The bytes may hold a block count's word only case-folded: the text says.
        wanted = _may_import_a_count(decoded.text, others)
    if not wanted:
        return FileResult(path)  # decodes fine, but nothing a rule looks at
    return decoded.text, source


def fix_source_text(
    text: str,
    path: str,
    finding_filter: FindingFilter | None = None,
    *,
    unsafe: bool = False,
    diff_base: str | None = None,
    context: RunContext | None = None,
) -> FileResult:
    """Fix one text in memory; ``new_text`` holds the result (the original on any error).
    The diff names the file relative to ``diff_base`` (see textdiff.diff_base).
    ``context``: what the run has read (:class:`.context.RunContext`), for the check and for
    the checks of the fixed text; the caller has it forget the file when the text changed
    (:func:`fix_paths`), so other files read it as it is on disk."""
    # Imported here: a check never loads the fixer.
    from cgguard.static.driver.fixer import fix_text

    result = check_text(text, path, finding_filter, context)
    if result.error is not None:
        return result
    result.found = list(result.findings)
    try:
        outcome = fix_text(
            text,
            _checker(path, finding_filter, context),
            unsafe=unsafe,
            findings=result.findings,
            check_parses=lambda fixed: _check_parses(fixed, context),
        )
    except SyntaxError as exc:
        result.error = FileError(path, f"fix not applied: {syntax_error(exc)}")
        return result
    except (ValueError, RecursionError, MemoryError) as exc:
        result.error = FileError(path, f"fix not applied: {_parse_failure(exc)}")
        return result
    result.findings = outcome.remaining
    result.new_text = outcome.text
    result.fixed_count = len(outcome.applied)
    result.changed = outcome.text != text
    if outcome.error:
        result.error = FileError(path, outcome.error)
    if result.changed:
        from cgguard.static.workflow.textdiff import diff_base as base_of
        from cgguard.static.workflow.textdiff import diff_label, unified_diff

        # Quoted in the headers where git quotes it (textdiff.header_name).
        label = diff_label(path, diff_base or base_of([path]))
        result.diff = "".join(
            unified_diff(
                text.splitlines(keepends=True),
                outcome.text.splitlines(keepends=True),
                fromfile=f"a/{label}",
                tofile=f"b/{label}",
            )
        )
    return result


def fix_file(
    path: str,
    finding_filter: FindingFilter | None = None,
    *,
    write: bool = True,
    unsafe: bool = False,
    diff_base: str | None = None,
    context: RunContext | None = None,
) -> FileResult:
    """Fix one file. It is written only when its bytes change, atomically, and only
    when the untouched parts are sure to come back byte for byte. ``context``: what the
    run has read, as for a check (:func:`check_paths`); the byte screen settles the file
    first, as it does for a check."""
    if context is not None:
        screened = screen_file(path, context)
        if isinstance(screened, FileResult):
            return screened  # nothing for a rule, or unreadable: as a check finds it
    try:
        data = sourcefile.read_bytes(path)
        source = sourcefile.decode(data)
    except sourcefile.SourceError as exc:
        return FileResult(path, error=FileError(path, str(exc)))
    result = fix_source_text(
        source.text, path, finding_filter, unsafe=unsafe, diff_base=diff_base, context=context
    )
    if not result.changed or result.new_text is None:
        return result
    try:
        if sourcefile.encode(source, source.text) != data:
            # An encoding that does not round-trip would rewrite bytes nobody fixed.
            raise _NotWritten(
                f"fix not applied: {source.encoding} does not round-trip this file's bytes"
            )
        new_data = sourcefile.encode(source, result.new_text)
    except UnicodeEncodeError as exc:
        return _not_written(
            result,
            f"fix not applied: the fix cannot be encoded as {source.encoding} ({exc.reason})",
        )
    except _NotWritten as exc:
        return _not_written(result, str(exc))
    if new_data == data:
        return _not_written(result, None)
    if write:
        try:
            sourcefile.write_atomic(path, new_data, expected=data)
        except sourcefile.SourceError as exc:
            return _not_written(result, str(exc))
    return result


class _NotWritten(Exception):
    pass


def _not_written(result: FileResult, reason: str | None) -> FileResult:
    """The file stays as it was: report what the fix would have done as not done,
    and its findings as remaining (as found in the file on disk)."""
    if reason is not None:
        result.error = FileError(result.path, reason)
    if result.found is not None:
        result.findings = list(result.found)
    result.changed = False
    result.fixed_count = 0
    result.diff = ""
    return result


def _guarded_result(path: str, work: Callable[[str], FileResult]) -> FileResult:
    """:func:`_guarded` for work that always gives a result."""
    found = _guarded(path, work)
    assert isinstance(found, FileResult)
    return found


def _guarded(path: str, work: Callable[[str], FileResult | T]) -> FileResult | T:
    """Run one file's work; an unexpected exception becomes that file's error line
    (with the traceback kept for --verbose) and the run goes on."""
    try:
        return work(path)
    except Exception as exc:  # noqa: BLE001 - a bug must not stop the other files
        import traceback

        result = FileResult(
            path, error=FileError(path, f"internal error: {type(exc).__name__}: {exc}")
        )
        result.traceback = traceback.format_exc()
        return result


def _not_checked(path: str, error: FileError) -> FileResult:
    """A path discovery passed over (a warning) or could not take (an error)."""
    if isinstance(error, Skip):
        return FileResult(path, skipped=error.reason)
    return FileResult(path, error=error)


def check_paths(
    paths: Iterable[str],
    finding_filter: FindingFilter | None = None,
    *,
    settings=None,
    fix_layout: bool = True,
) -> RunResult:
    """``fix_layout``: False for a run that never shows a fix's text (see
    :class:`.context.RunContext`); its findings, messages and fixability are the same."""

    # One run's reading of each project (roots, modules, summaries), shared by its files.
    context = RunContext(None if settings is None else settings.selected, fix_layout=fix_layout)

    # Every file goes through the byte screen; what it leaves (text holding a capture
    # size) is the real work. A second process shares both only once that work pays.

    def screen(item: tuple[str, FileError | None]) -> FileResult | parallel.Later[tuple[str, bool]]:
        path, error = item
        if error:
            return _not_checked(path, error)
        screened = _guarded(path, lambda p: screen_file(p, context))
        if isinstance(screened, FileResult):
            return screened
        text, source = screened
        # A file without a capture size is only asked what it imports: a small part of
        # the work per character of one that Python's parser reads whole.
        return parallel.Later(screened, len(text) if source else len(text) // 8)

    def work(item: tuple[str, FileError | None], screened: tuple[str, bool]) -> FileResult:
        text, source = screened
        return _guarded_result(
            item[0], lambda p: check_text(text, p, finding_filter, context, source)
        )

    def before_fork() -> None:
        # The stages every file the screen leaves goes through, imported once in the parent.
        from cgguard.static.core import flow, program, pyast  # noqa: F401
        from cgguard.static.driver import check, report  # noqa: F401

    sizes: dict[str, int] = {}  # discovery's stat of each file, read again by no one

    def size(item: tuple[str, FileError | None]) -> int:
        return 0 if item[1] else sizes.get(item[0], 0)  # 0: the screen reports what is wrong

    def plain(item: tuple[str, FileError | None]) -> FileResult:
        return FileResult(item[0])  # checked, nothing found: most files

    paths = list(paths)
    context.list_ahead(paths)  # on the core left idle until the run forks its helper
    try:
        files = list(iter_python_files(paths, settings, sizes))
        return RunResult(files=parallel.map_files(screen, work, files, before_fork, size, plain))
    finally:
        context.close()


def fix_paths(
    paths: Iterable[str],
    finding_filter: FindingFilter | None = None,
    *,
    write: bool = True,
    unsafe: bool = False,
    settings=None,
    context: RunContext | None = None,
) -> RunResult:
    """``context``: what the run has read, for a caller that fixes its files one call at a
    time (None: one for this call's files)."""
    paths = list(paths)
    # One run's reading of each project, shared by its files as a check shares it.
    if context is not None:
        return _fix_files(paths, finding_filter, write, unsafe, settings, context)
    context = RunContext(None if settings is None else settings.selected)
    # A fix runs in one process: a helper lists the modules naming a sink word meanwhile.
    context.list_ahead(paths)
    try:
        return _fix_files(paths, finding_filter, write, unsafe, settings, context)
    finally:
        context.close()


def _fix_files(
    paths: list[str],
    finding_filter: FindingFilter | None,
    write: bool,
    unsafe: bool,
    settings,
    context: RunContext,
) -> RunResult:
    from cgguard.static.workflow.textdiff import diff_base

    files = list(iter_python_files(paths, settings))
    run = RunResult(dry_run=not write, unsafe_fixes=unsafe)
    if not write:  # one folder names every file of the printed diff
        run.diff_base = diff_base(p for p, error in files if not error)

    def fix_one(path: str) -> FileResult:
        result = _guarded_result(
            path,
            lambda p: fix_file(
                p,
                finding_filter,
                write=write,
                unsafe=unsafe,
                diff_base=run.diff_base,
                context=context,
            ),
        )
        if result.changed:
            # The run read the fixed text, which is on disk only when written: what it read of
            # the file (and what other modules' summaries took from it) is read again. Its
            # lowered form is kept where that text is now the file's (written, nothing refused).
            written = write and result.error is None and result.new_text is not None
            context.forget(path, result.new_text if written else None)
        return result

    done: dict[int, FileResult] = {}
    late: list[int] = []  # files whose screen waits for the others' (parallel.Deferred)
    with parallel.items_deferred():
        for i, (path, error) in enumerate(files):
            try:
                done[i] = _not_checked(path, error) if error else fix_one(path)
            except parallel.Deferred:
                late.append(i)
    with parallel.no_deferral():
        for i in late:
            done[i] = fix_one(files[i][0])
    run.files.extend(done[i] for i in range(len(files)))
    return run


def syntax_error(exc: SyntaxError) -> str:
    """``syntax error at line L, column C: MESSAGE``, C where Python's parser gives it."""
    column = f", column {exc.offset}" if exc.offset else ""
    return f"syntax error at line {exc.lineno}{column}: {exc.msg}"


def _parse_failure(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "too deeply nested to parse"
    if isinstance(exc, MemoryError):
        return "too large or too deeply nested to parse"
    return f"cannot parse: {exc}"
