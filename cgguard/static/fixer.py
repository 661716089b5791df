"""Apply fixes to a source text, with a safety net.

Fixes are applied, the result is re-parsed and re-checked, and the loop repeats
until nothing changes (at most ``MAX_ROUNDS`` times). A result that does not parse
is never returned: the caller gets the original text and the reason.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Callable

from cgguard.static.findings import SAFE, UNSAFE, Finding, TextEdit

MAX_ROUNDS = 5

Checker = Callable[[str], list[Finding]]


@dataclass
class FixOutcome:
    text: str  # the fixed text (the original when nothing applied or on error)
    applied: list[Finding] = field(default_factory=list)
    remaining: list[Finding] = field(default_factory=list)
    error: str | None = None


def applicable(finding: Finding, unsafe: bool) -> bool:
    fix = finding.fix
    return fix is not None and (fix.applicability == SAFE or (unsafe and fix.applicability == UNSAFE))


def apply_edits(text: str, edits: list[TextEdit]) -> str:
    """Apply non-overlapping edits (later ones first, so offsets stay valid)."""
    out = text
    for edit in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        out = out[: edit.start] + edit.text + out[edit.end :]
    return out


def _non_overlapping(findings: list[Finding]) -> tuple[list[Finding], list[TextEdit]]:
    taken: list[Finding] = []
    edits: list[TextEdit] = []
    spans: list[tuple[int, int]] = []
    for f in findings:
        mine = [(e.start, e.end) for e in f.fix.edits]
        if any(s < oe and os_ < e or s == e == os_ == oe for s, e in mine for os_, oe in spans):
            continue  # overlaps an earlier fix: the next round will see it again
        taken.append(f)
        edits.extend(f.fix.edits)
        spans.extend(mine)
    return taken, edits


def fix_text(text: str, check: Checker, *, unsafe: bool = False) -> FixOutcome:
    outcome = FixOutcome(text=text)
    current = text
    findings = check(current)
    for _ in range(MAX_ROUNDS):
        todo = [f for f in findings if applicable(f, unsafe)]
        if not todo:
            break
        taken, edits = _non_overlapping(todo)
        candidate = apply_edits(current, edits)
        try:
            ast.parse(candidate)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            return FixOutcome(
                text=text,
                remaining=check(text),
                error=f"fix not applied: the fixed source would not parse ({_reason(exc)})",
            )
        if candidate == current:
            break
        outcome.applied.extend(taken)
        current = candidate
        findings = check(current)
    outcome.text = current
    outcome.remaining = findings
    return outcome


def _reason(exc: BaseException) -> str:
    if isinstance(exc, SyntaxError):
        return f"line {exc.lineno}: {exc.msg}"
    return type(exc).__name__
