"""Parse: libcst reads what the screen's :class:`~.screen.Plan` names (:func:`pieces`),
on a thread with a large stack (:func:`deep`); node positions on demand (:class:`Positions`).

The third stage of a file's way through the driver (:mod:`.check`): it takes what
:mod:`.screen` decided (Python's own parser has read all of it by then) and hands
libcst's modules to :mod:`.analyse`. Imports nothing from the stages after it.
"""

from __future__ import annotations

from dataclasses import dataclass

from cgguard.static.driver.screen import WHOLE, Plan, parsable


def parse(source: str, path: str):
    """libcst's module for ``source`` (already :func:`validate`-d); call it inside :func:`deep`."""
    import libcst as cst

    try:
        return cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        raise SyntaxError(
            f"libcst cannot parse this: {exc.message}",
            (path, exc.raw_line, exc.raw_column + 1, None),
        ) from None


_DEEP_STACK = (
    1 << 30
)  # bytes of stack for the thread that parses and walks (virtual: only what is used counts)
_DEEP_RECURSION = 400_000


def deep(work):
    """Run ``work()`` on a thread with a large stack and recursion limit.

    libcst's parser and tree walks recurse once per nesting level; generated code
    nests far deeper than the main thread's stack allows. The calling thread waits.
    """
    import sys
    import threading

    from cgguard.static.driver import parallel

    if parallel.in_child() and "libcst" not in sys.modules:
        raise parallel.ParentOnly  # the parent parses (and imports libcst) for both
    result: list = []
    error: list[BaseException] = []

    def run() -> None:
        try:
            result.append(work())
        except BaseException as exc:  # noqa: BLE001 - handed to the caller as is
            error.append(exc)

    old_limit = sys.getrecursionlimit()
    thread = None
    # A smaller stack where the address space is limited (ulimit -v); the limit follows it.
    for stack, limit in ((_DEEP_STACK, _DEEP_RECURSION), (_DEEP_STACK // 8, _DEEP_RECURSION // 8)):
        try:
            old_size = threading.stack_size(stack)
        except (ValueError, RuntimeError):
            continue
        sys.setrecursionlimit(max(old_limit, limit))
        try:
            candidate = threading.Thread(target=run, name="cgguard-libcst", daemon=True)
            candidate.start()
            thread = candidate
            break
        except (RuntimeError, MemoryError):
            sys.setrecursionlimit(old_limit)
            continue
        finally:
            threading.stack_size(old_size)
    if thread is None:
        return work()  # no thread to be had: the default stack, and its limits
    try:
        thread.join()
    finally:
        sys.setrecursionlimit(old_limit)
    if error:
        raise error[0]
    return result[0]


class Positions:
    """Node spans in file coordinates, resolved on first use (a hit) for the whole module."""

    def __init__(self, module, offset: int):
        self.module = module
        self.offset = offset
        self._ranges = None

    def __call__(self, node) -> tuple[int, int, int, int]:
        if self._ranges is None:
            from libcst.metadata import MetadataWrapper, PositionProvider

            try:
                self._ranges = MetadataWrapper(self.module, unsafe_skip_copy=True).resolve(
                    PositionProvider
                )
            except (RecursionError, KeyError) as exc:
                # libcst renders the module to find positions, recursing once per nesting
                # level: past the interpreter's limit (Python 3.12+ stops sooner) the
                # RecursionError may surface as a KeyError from its position bookkeeping.
                # Either way the file is too deeply nested, as a parse that fails is.
                raise RecursionError("too deeply nested to find positions") from exc
        r = self._ranges[node]
        return (r.start.line + self.offset, r.start.column, r.end.line + self.offset, r.end.column)


@dataclass
class Piece:
    """One libcst module of a file: the whole file, or one function cut out of it."""

    module: object  # libcst.Module
    offset: int  # its line 1 is the file's line 1 + offset
    start: int  # the file's line index where it starts (0: the whole file)


def pieces(plan: Plan, path: str) -> list[Piece]:
    """libcst's modules of what ``plan`` names (call it inside :func:`deep`)."""
    if plan.mode == WHOLE:
        return [Piece(parse(plan.text, path), 0, 0)]
    return [cut(plan, start, end, path) for start, end in plan.spans]


def cut(plan: Plan, start: int, end: int, path: str) -> Piece:
    """libcst's module of the function on ``plan.lines[start:end]`` (validated already)."""
    lines = plan.lines
    offset = start - (1 if lines[start][:1] in (" ", "\t") else 0)
    return Piece(parse(parsable(lines, start, "".join(lines[start:end])), path), offset, start)
