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


def fix_terms(
    hit: Hit, text: str, shown: str, none_tested: frozenset[str] | None = None
) -> tuple[str, str]:
    """(applicability, description) of the fix; ``shown``: the bound's text;
    ``none_tested``: :func:`names_tested_for_none` of ``text``, when the caller has it."""
    reasons = unsafe_reasons(hit, text, none_tested)
    if reasons:
        return UNSAFE, f"Replace with {shown} (unsafe: {'; '.join(reasons)})"
    return SAFE, f"Replace with {shown}"


def unsafe_reasons(hit: Hit, text: str, none_tested: frozenset[str] | None = None) -> list[str]:
    """Why the fix must not be applied without asking (none: it is safe)."""
    if none_tested is None:
        none_tested = names_tested_for_none(text)
    reasons = []
    if hit.guessed:
        reasons.append(f"nothing shows that this class has `{hit.request}`")
    source = hit.source
    if isinstance(source, ir.Attribute) and source.attr in none_tested:
        reasons.append("this file checks the capture size for None, and min() with None raises")
    elif isinstance(source, ir.Call) and _none_default(source, none_tested):
        reasons.append("getattr() may give None here, and min() with None raises")
    return reasons


# ``<...>.name is None`` / ``is not None``: the name the file tests.
_NONE_TEST = re.compile(r"\b(\w+)\s+is\s+(?:not\s+)?None\b")


def names_tested_for_none(text: str) -> frozenset[str]:
    """The names the file tests with ``is None`` / ``is not None`` anywhere (one pass over
    the text, asked once per file however many findings it holds)."""
    return frozenset(_NONE_TEST.findall(text))


def _none_default(source: ir.Call, none_tested: frozenset[str]) -> bool:
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
    return (isinstance(default, ir.Const) and default.value is None) or name in none_tested
