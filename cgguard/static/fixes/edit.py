"""A finding's fix as a text edit, and the bounded count as messages quote it.

The core's hit says where the fix goes (spans of the intermediate form) and which request
count bounds the count. :func:`text_edit` parses only the statement holding it with libcst
(:func:`cgguard.static.fixes.site.statement_site`), makes the change
(:mod:`cgguard.static.fixes.bound`) and returns it as one text edit. The Fixit rule and the
codemod make the same change on the module they parsed whole
(:func:`cgguard.static.fixes.site.module_site`): the same bytes. :func:`bound_text` is the
bounded count as messages quote it, read from the text alone. How safe a fix is and what
it says are the rules' (:mod:`cgguard.static.rules`).
"""

from __future__ import annotations

import re
from itertools import accumulate

from cgguard.shared.bound import DEFAULT_FALLBACK, bound_source
from cgguard.static.core import ir
from cgguard.static.core.flow import Hit
from cgguard.static.source.findings import TextEdit

REQUEST_PLACEHOLDER = "<request count>"
# Messages and fix descriptions quote code; they stay one readable line even for generated
# code with huge expressions.
MAX_QUOTE = 160


def shorten(text: str, limit: int = MAX_QUOTE) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def one_line(src: str) -> str:
    return re.sub(r"\s*\n\s*", " ", src).strip()


def text_at(lines: list[str], span: ir.Span) -> str:
    """The code at ``span`` (its line breaks kept)."""
    if span.line == span.end_line:
        return lines[span.line - 1][span.col : span.end_col]
    middle = lines[span.line : span.end_line - 1]
    return "".join(
        [lines[span.line - 1][span.col :], *middle, lines[span.end_line - 1][: span.end_col]]
    )


def quote(lines: list[str], node: ir.Node) -> str:
    """A node's code on one line, without its own parentheses."""
    return one_line(text_at(lines, node.span))


def bound_text(hit: Hit, lines: list[str], source_lines: list[str] | None = None) -> str:
    """The bounded count as the message shows it. ``source_lines``: the lines of the module
    holding the hit's source, where it is not this file (a helper's return)."""
    rw = hit.rewrite
    request = hit.request or REQUEST_PLACEHOLDER
    if rw is None:
        return bound_source(request, quote(source_lines or lines, hit.source))
    if rw.insert and isinstance(rw.target, ir.Call):
        text = one_line(_with_first_arg_text(lines, rw.target, request))
        return f"{text} or {_fallback_text(rw.fallbacks, lines)}" if rw.has_fallback else text
    fallback = _fallback_text(rw.fallbacks, lines) if rw.has_fallback else str(DEFAULT_FALLBACK)
    return bound_source(request, quote(lines, rw.target), fallback)


def _fallback_text(fallbacks: tuple[ir.Expr, ...], lines: list[str]) -> str:
    return " or ".join(quote(lines, v) for v in fallbacks)


def _with_first_arg_text(lines: list[str], call: ir.Call, request: str) -> str:
    """``min(a, b)``'s text with ``request`` as its first argument (as the fix writes it)."""
    text = text_at(lines, call.span)
    func = call.func.span
    skip = len(text_at(lines, ir.Span(call.span.line, call.span.col, func.end_line, func.end_col)))
    at = text.index("(", skip) + 1
    blank = re.match(r"(?:\s|#[^\n]*)*", text[at:]).group(0)  # type: ignore[union-attr]
    after = blank if call.args and "\n" in blank else " "
    return text[:at] + blank + request + "," + after + text[at + len(blank) :]


def text_edit(
    hit: Hit, lines: list[str], line_starts: list[int] | None = None, lay_out: bool = True
) -> TextEdit | None:
    """The fix of ``hit`` as a text edit (libcst parses only the statement holding it);
    None where there is no fix (no rewrite target or request count, or nothing parses).
    ``line_starts``: each line's character offset in the text, when the caller has them.
    ``lay_out``: False leaves a fix longer than its line on one line (a run that never
    shows or writes the text; whether there is a fix does not depend on it)."""
    rw = hit.rewrite
    if rw is None or hit.request is None or hit.stmt is None:
        return None
    from cgguard.static.fixes.bound import bounded
    from cgguard.static.fixes.site import statement_site

    needed = rw.whole.span if rw.whole is not None else rw.target.span
    site = statement_site(hit.stmt, needed, lines)  # type: ignore[arg-type]
    if site is None:
        return None
    rep = bounded(hit, site, lay_out)
    if rep is None:
        return None
    first, c0, last, c1 = site.span(rep.old)
    if line_starts is None:
        line_starts = list(accumulate(map(len, lines[:last]), initial=0))
    start, end = line_starts[first - 1] + c0, line_starts[last - 1] + c1
    return TextEdit(start, end, site.code(rep.core))
