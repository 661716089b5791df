"""CGG001: a per-token profiling block count (capture size -> block count, unbounded).

Fix (safe): upstream's bound, ``min(<request count>, <count>) or K``, written on the count
(:mod:`cgguard.static.fixes`). Unsafe when the request count is a guess, or when the file
checks the capture size for None (``min()`` with None raises); none when no request count
is in scope.
"""

from __future__ import annotations

from cgguard.static.core import ir
from cgguard.static.core.flow import Hit
from cgguard.static.core.patterns import is_name_char
from cgguard.static.source.findings import SAFE, UNSAFE

CODE = "CGG001"
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
    if hit.none_tested or (isinstance(source, ir.Attribute) and source.attr in none_tested):
        # tested through any local or alias of it (the core's flow), or by its own name
        reasons.append("this file checks the capture size for None, and min() with None raises")
    elif isinstance(source, ir.Call) and _none_default(source, none_tested):
        reasons.append("getattr() may give None here, and min() with None raises")
    return reasons


def names_tested_for_none(text: str) -> frozenset[str]:
    """The names the file tests with ``<...>.name is None`` / ``is not None`` anywhere
    (asked once per file however many findings it holds). Read back from each ``None`` of
    the text: a pattern tried at every position of a large file costs far more."""
    found: set[str] = set()
    at = text.find("None")
    while at != -1:
        end = at + 4
        if end == len(text) or not is_name_char(text[end]):
            name = _tested_before(text, at)
            if name:
                found.add(name)
        at = text.find("None", end)
    return frozenset(found)


def _tested_before(text: str, at: int) -> str | None:
    """The name in ``<name> is [not] `` just before ``at``, or None."""
    i = _blanks_back(text, at)
    if i == at:
        return None
    if i >= 3 and text.startswith("not", i - 3) and (i == 3 or not is_name_char(text[i - 4])):
        j = _blanks_back(text, i - 3)
        if 2 <= j < i - 3 and text.startswith("is", j - 2):
            i = j  # ``is not None``
    if i < 2 or not text.startswith("is", i - 2):
        return None
    i -= 2
    j = _blanks_back(text, i)
    if j == i:
        return None  # ``xis None``
    start = j
    while start > 0 and is_name_char(text[start - 1]):
        start -= 1
    return text[start:j] or None


def _blanks_back(text: str, at: int) -> int:
    while at > 0 and text[at - 1].isspace():
        at -= 1
    return at


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
