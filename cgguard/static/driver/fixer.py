"""Apply fixes to a source text, with a safety net.

Fixes are applied, the result is re-parsed and re-checked, and the loop repeats
until nothing changes (at most ``MAX_ROUNDS`` rounds). The caller never gets a
text that does not parse, nor one from a loop that did not settle: in both cases
it gets the original text back with ``error`` saying why, so nothing is written.
"""

from __future__ import annotations

import ast
import bisect
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

from cgguard.static.source.edits import apply_edits
from cgguard.static.source.findings import SAFE, UNSAFE, Finding, TextEdit

# Each round fixes every non-overlapping finding at once, so one round is the
# norm; overlapping fixes (a count nested in another) need one more round each.
MAX_ROUNDS = 8

Checker = Callable[[str], list[Finding]]


@dataclass
class FixOutcome:
    text: str  # the fixed text (the original when nothing applied or on error)
    applied: list[Finding] = field(default_factory=list)
    remaining: list[Finding] = field(default_factory=list)
    error: str | None = None


def applicable(finding: Finding, unsafe: bool) -> bool:
    fix = finding.fix
    return fix is not None and (
        fix.applicability == SAFE or (unsafe and fix.applicability == UNSAFE)
    )


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    (s, e), (os_, oe) = a, b
    return (s < oe and os_ < e) or s == e == os_ == oe


class _Spans:
    """Character spans already claimed by a fix this round, sorted; lookups by bisection.

    Two spans overlap when they share a character, or when both are the same empty
    span (two insertions at one point would depend on their order). Claimed spans
    never overlap each other, so sorted by (start, end) their ends never decrease:
    the span just before ``end`` is the only one that can reach past ``start``.
    """

    def __init__(self) -> None:
        self.spans: list[tuple[int, int]] = []

    def overlaps(self, start: int, end: int) -> bool:
        k = bisect.bisect_left(self.spans, (end, -1))  # spans starting before `end`
        if k and self.spans[k - 1][1] > start and self.spans[k - 1][0] < end:
            return True
        if start == end:
            i = bisect.bisect_left(self.spans, (start, start))
            return i < len(self.spans) and self.spans[i] == (start, start)
        return False

    def add(self, start: int, end: int) -> None:
        bisect.insort(self.spans, (start, end))


def _non_overlapping(findings: list[Finding]) -> tuple[list[Finding], list[TextEdit]]:
    taken: list[Finding] = []
    edits: list[TextEdit] = []
    claimed = _Spans()
    for f in findings:
        if f.fix is None:
            continue
        mine = [(e.start, e.end) for e in f.fix.edits]
        if any(_overlap(a, b) for i, a in enumerate(mine) for b in mine[i + 1 :]):
            continue  # a malformed fix (its own edits collide): never applied
        if any(claimed.overlaps(s, e) for s, e in mine):
            continue  # overlaps an earlier fix: the next round will see it again
        taken.append(f)
        edits.extend(f.fix.edits)
        for s, e in mine:
            claimed.add(s, e)
    return taken, edits


def parses(text: str) -> None:
    """Raise if ``text`` is not valid Python (warnings about its content are not ours to print)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ast.parse(text)


def fix_text(
    text: str,
    check: Checker,
    *,
    unsafe: bool = False,
    findings: list[Finding] | None = None,
    check_parses: Callable[[str], bool] | None = None,
) -> FixOutcome:
    """Fix ``text``; ``findings`` are ``check(text)`` when the caller already has them.
    ``check_parses(text)``: whether ``check(text)`` parses all of ``text`` itself (raising
    SyntaxError where it does not parse), so the fixed text is not parsed a second time."""
    outcome = FixOutcome(text=text)
    current = text
    seen = {text}
    if findings is None:
        findings = check(current)
    for _ in range(MAX_ROUNDS):
        todo = [f for f in findings if applicable(f, unsafe)]
        if not todo:
            break
        taken, edits = _non_overlapping(todo)
        try:
            candidate = apply_edits(current, edits)
        except ValueError as exc:
            return _refused(text, check, f"fix not applied: {exc}")
        if candidate == current:
            break
        if candidate in seen:
            return _refused(text, check, "fix not applied: the fixes undo each other")
        checked = check_parses is not None and check_parses(candidate)
        try:
            if checked:
                findings = check(candidate)
            else:
                parses(candidate)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            return _refused(
                text, check, f"fix not applied: the fixed source would not parse ({_reason(exc)})"
            )
        seen.add(candidate)
        outcome.applied.extend(taken)
        current = candidate
        if not checked:
            findings = check(current)
    else:
        if _would_change(current, findings, unsafe):
            return _refused(
                text, check, f"fix not applied: still changing after {MAX_ROUNDS} rounds"
            )
    outcome.text = current
    outcome.remaining = findings
    return outcome


def _would_change(current: str, findings: list[Finding], unsafe: bool) -> bool:
    todo = [f for f in findings if applicable(f, unsafe)]
    if not todo:
        return False
    try:
        return apply_edits(current, _non_overlapping(todo)[1]) != current
    except ValueError:
        return True


def _refused(text: str, check: Checker, reason: str) -> FixOutcome:
    return FixOutcome(text=text, remaining=check(text), error=reason)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, SyntaxError):
        return f"line {exc.lineno}: {exc.msg}"
    return type(exc).__name__
