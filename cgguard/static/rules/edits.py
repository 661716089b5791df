"""The CGG001 fix as text edits: wrap the count in upstream's bound, touch nothing else.

The capture-size expression keeps its exact bytes (comments and line breaks
inside it included); the fix only inserts ``min(<requests>, `` before it and
``)`` after it, adding ``or 1`` when the original had no fallback. When that
makes the line longer than 88 characters and the count is the whole right-hand
side of an assignment, it is laid out over several lines in parentheses, as
upstream did in vLLM 0.26.0::

    min_blocks = (
        min(self.max_num_reqs, self.compilation_config.max_cudagraph_capture_size)
        or 1
    )
"""

from __future__ import annotations

import ast
import re

from cgguard.shared.bound import DEFAULT_FALLBACK, bound_source
from cgguard.static.driver.findings import DISPLAY_ONLY, SAFE, UNSAFE, Fix, TextEdit
from cgguard.static.rules.flow import MAX, Hit
from cgguard.static.driver.sourcetext import SourceText, char_col

MAX_LINE = 88
REQUEST_PLACEHOLDER = "<request count>"
# Messages and fix descriptions quote code; they stay one readable line even for
# generated code with huge expressions.
MAX_QUOTE = 160


def shorten(text: str, limit: int = MAX_QUOTE) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def build_fix(hit: Hit, offset: int, src: SourceText) -> tuple[Fix | None, str]:
    """The fix for a hit (None when no request count is in evidence) and the bound's text."""
    lines = src.lines
    rw = hit.rewrite
    if rw is None:
        cap = _segment(lines, hit.source, offset)
        return None, bound_source(hit.request or REQUEST_PLACEHOLDER, _one_line(cap))
    target_src = _segment(lines, rw.target, offset)
    whole = rw.whole if rw.whole is not None else rw.target
    if rw.has_fallback:
        # The operands after the count (`or K`), without comments between them.
        fallback = " or ".join(_one_line(_segment(lines, v, offset)) for v in whole.values[1:])
    else:
        fallback = str(DEFAULT_FALLBACK)
    bound = bound_source(hit.request or REQUEST_PLACEHOLDER, _one_line(target_src), _one_line(fallback))
    if hit.request is None:
        return None, bound

    start = src.offset(rw.target.lineno + offset, rw.target.col_offset)
    end = src.offset(rw.target.end_lineno + offset, rw.target.end_col_offset)
    head = f"min({hit.request}, "
    tail = ")" if rw.has_fallback else f") or {fallback}"
    if rw.needs_parens:
        head, tail = "(" + head, tail + ")"
    edits: tuple[TextEdit, ...] = (TextEdit(start, start, head), TextEdit(end, end, tail))

    wrapped = _wrapped(hit, rw, whole, offset, src, target_src, fallback)
    if wrapped is not None:
        edits = (wrapped,)

    shown = shorten(bound)
    if hit.kind == MAX:
        applicability = DISPLAY_ONLY
        description = f"Bound the capture size inside max(): {shown}"
    elif isinstance(hit.source, ast.Attribute) and src.compared_with_none(hit.source.attr):
        applicability = UNSAFE
        description = (
            f"Replace with {shown} (unsafe: this file checks the capture size for None, "
            "and min() with None raises)"
        )
    else:
        applicability = SAFE
        description = f"Replace with {shown}"
    return Fix(applicability, description, edits), bound


def _wrapped(hit, rw, whole, offset, src: SourceText, target_src, fallback) -> TextEdit | None:
    """Upstream's multi-line layout when the one-line fix would pass 88 characters."""
    lines = src.lines
    if whole.lineno != whole.end_lineno or rw.needs_parens:
        return None
    lineno = whole.lineno + offset
    line = lines[lineno - 1]
    body = line.rstrip("\r\n")
    newline = line[len(body):] or "\n"
    start_c = char_col(line, whole.col_offset)
    end_c = char_col(line, whole.end_col_offset)
    before, after = body[:start_c], body[end_c:]
    # Only where the count is the whole right-hand side: `name = <count>  # comment`.
    if not re.search(r"[^=!<>]=\s*$", before) or not re.fullmatch(r"\s*(#.*)?", after):
        return None
    # The code's length decides (a trailing comment may run long, as black allows);
    # a tab counts as 4 columns, as ruff's default indent-width does.
    code_len = len(before.expandtabs(4)) + (end_c - start_c)
    grown = code_len + len(f"min({hit.request}, )") + (0 if rw.has_fallback else len(f" or {fallback}"))
    if grown <= MAX_LINE:
        return None
    indent = re.match(r"[ \t]*", body).group(0)
    inner = indent + ("\t" if "\t" in indent else "    ")
    replacement = (
        f"({newline}{inner}min({hit.request}, {target_src}){newline}"
        f"{inner}or {fallback}{newline}{indent})"
    )
    start = src.offset(lineno, whole.col_offset)
    end = src.offset(lineno, whole.end_col_offset)
    return TextEdit(start, end, replacement)


def _segment(lines: list[str], node: ast.AST, offset: int) -> str:
    first, last = node.lineno + offset, node.end_lineno + offset
    if first == last:
        line = lines[first - 1]
        return line[char_col(line, node.col_offset):char_col(line, node.end_col_offset)]
    parts = [lines[first - 1][char_col(lines[first - 1], node.col_offset):]]
    parts.extend(lines[first:last - 1])
    parts.append(lines[last - 1][: char_col(lines[last - 1], node.end_col_offset)])
    return "".join(parts)


def _one_line(src: str) -> str:
    return re.sub(r"\s*\n\s*", " ", src).strip()
