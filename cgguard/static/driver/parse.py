"""Parse: libcst reads the functions that hold a finding, on a thread with a large stack
(:func:`deep`); node positions on demand (:class:`Positions`).

Used by :mod:`.report` only, for a file the core found a hit in (Python's own parser has
read all of it by then). Imports nothing from the stages after it.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any


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
        self._ranges: Mapping[Any, Any] | None = None

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
        assert self._ranges is not None
        r = self._ranges[node]
        return (r.start.line + self.offset, r.start.column, r.end.line + self.offset, r.end.column)


def too_deep(source: str, path: str) -> bool:
    """Would libcst's tree of ``source`` nest past :data:`MAX_NESTING` levels? libcst nests
    deeper than Python's tree (an ``a or b or ...`` chain one level per operand)."""
    operators = sum(source.count(c) for c in "-+*/%@&|^")
    if operators + source.count(" or ") + source.count(" and ") <= MAX_NESTING:
        return False  # each level of a long chain needs one of these
    return _libcst_depth(ast.parse(source, filename=path)) > MAX_NESTING


MAX_NESTING = 20_000


def _libcst_depth(tree: ast.AST) -> int:
    """How deep libcst's tree of this code nests, about: Python's depth, with each boolean
    operator chain counted one level per operand (iterative: the tree may be deep)."""
    deepest = 0
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, ast.BoolOp):
            depth += len(node.values) - 1
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest
