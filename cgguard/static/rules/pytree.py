"""Walks over Python's own tree (``ast``) that the screen and the rules share.

Imports nothing heavy: the driver's screen uses it before libcst is imported.
"""

from __future__ import annotations

import ast
from typing import Iterator


def statements(node: ast.AST) -> Iterator[ast.stmt]:
    """Every statement nested in ``node`` (functions, classes, blocks), no expression.

    Imports and assignments are statements, and most of a big module's nodes are
    expressions: this visits a tenth of what ``ast.walk`` does.
    """
    stack = list(getattr(node, "body", ()))
    while stack:
        stmt = stack.pop()
        yield stmt
        for field in ("body", "orelse", "finalbody"):
            block = getattr(stmt, field, None)
            if isinstance(block, list):
                stack.extend(block)
        for sub in (*getattr(stmt, "handlers", ()), *getattr(stmt, "cases", ())):
            stack.extend(sub.body)
