"""CGG001: a per-token profiling block count (capture size -> block count, unbounded).

Fix (safe): upstream's bound, ``min(<request count>, <count>) or K``, written on the count
(:mod:`cgguard.static.fixes`). Unsafe when the request count is a guess, or when the file
checks the capture size for None (``min()`` with None raises); none when no request count
is in scope.
"""

from __future__ import annotations

import re

from cgguard.static.core import ir
from cgguard.static.core.flow import TOKEN, Hit
from cgguard.static.source.findings import SAFE, UNSAFE

CODE = "CGG001"
KIND = TOKEN
NAME = "per-token-profiling-blocks"


def fix_terms(hit: Hit, text: str, shown: str) -> tuple[str, str]:
    """(applicability, description) of the fix; ``shown``: the bound's text."""
    reasons = unsafe_reasons(hit, text)
    if reasons:
        return UNSAFE, f"Replace with {shown} (unsafe: {'; '.join(reasons)})"
    return SAFE, f"Replace with {shown}"


def unsafe_reasons(hit: Hit, text: str) -> list[str]:
    """Why the fix must not be applied without asking (none: it is safe)."""
    reasons = []
    if hit.guessed:
        reasons.append(f"nothing shows that this class has `{hit.request}`")
    source = hit.source
    if isinstance(source, ir.Attribute) and _compared_with_none(text, source.attr):
        reasons.append("this file checks the capture size for None, and min() with None raises")
    elif isinstance(source, ir.Call) and _none_default(source, text):
        reasons.append("getattr() may give None here, and min() with None raises")
    return reasons


def _compared_with_none(text: str, name: str) -> bool:
    """Does the file test ``<...>.name is None`` / ``is not None`` anywhere?"""
    return re.search(rf"\b{re.escape(name)}\s+is\s+(not\s+)?None\b", text) is not None


def _none_default(source: ir.Call, text: str) -> bool:
    """A ``getattr`` source whose default is None, or whose name the file checks for None."""
    if not (isinstance(source.func, ir.Name) and source.func.id == "getattr"):
        return False
    args = [a for a in source.args if not a.star and a.keyword is None]
    if len(args) < 2 or not isinstance(args[1].value, ir.Const):
        return False
    name = args[1].value.value
    if not isinstance(name, str):
        return False
    default = args[2].value if len(args) > 2 else None
    return (isinstance(default, ir.Const) and default.value is None) or _compared_with_none(
        text, name
    )
