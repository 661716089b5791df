"""Inline suppressions: ``# noqa``, ``# noqa: CGG001`` and ``# cgguard: ignore[CGG001]``.

A directive suppresses a finding when it sits in a comment on any physical line
of the statement the finding belongs to: the flagged line, or another line of the
same multi-line (logical) statement, such as the closing ``)``. A comment on a
line of its own above a statement does not count. Codes match as prefixes, as in
flake8 (``# noqa: CGG`` covers every cgguard rule); a directive without codes
covers all of them.

Comments are collected with :mod:`tokenize` (so a ``#`` inside a string is not a
comment), and only for files that have findings.
"""

from __future__ import annotations

import bisect
import io
import re
import tokenize

from cgguard.static.source.findings import Finding

# The unused-suppression report (ruff's RUF100), made by driver/unusednoqa.py.
UNUSED_NOQA = "CGG100"

ALL = None  # a directive that names no codes

# "noqa" must end the word: "noqa-like" or "noqazz" is not a directive. After a colon
# comes the code list, up to the next "#": codes and prefixes (`CGG001`, `CGG`, `E501`)
# split by commas or blanks. A list that does not read as codes ("noqa: see #12")
# suppresses nothing, never everything; a colon with nothing after it is flake8's
# bare noqa.
NOQA = re.compile(r"#\s*noqa(?=$|[\s:#])(?:\s*:(?P<codes>[^#]*))?", re.I)
_CODE = re.compile(r"[A-Z]+[0-9]*", re.I)
# Words that may follow the codes as an explanation ("noqa: CGG001 (on purpose)") are
# cut off at the first token that is not a code.
CODE_LIST = re.compile(r"\s*(?P<list>[A-Z]+[0-9]*(?:\s*,\s*[A-Z]+[0-9]*|\s+[A-Z]+[0-9]+)*)", re.I)
NOTHING: frozenset[str] = frozenset()  # a directive whose code list cannot be read
_IGNORE = re.compile(r"#\s*cgguard\s*:\s*ignore(?=$|[\s\[#])(?:\[(?P<codes>[^\]]*)\])?", re.I)
_SPLIT = re.compile(r"[\s,]+")


def directives(comment: str) -> list[frozenset[str] | None]:
    """The suppression directives in one comment: a set of codes each, or ALL."""
    return [codes for _, codes in directives_by_kind(comment)]


def directives_by_kind(comment: str) -> list[tuple[str, frozenset[str] | None]]:
    """Each directive in one comment with its kind, ``noqa`` or ``cgguard: ignore``."""
    found: list[tuple[str, frozenset[str] | None]] = []
    for m in NOQA.finditer(comment):
        found.append(("noqa", _noqa_codes(m.group("codes"))))
    for m in _IGNORE.finditer(comment):
        codes = m.group("codes")
        if codes is None or not codes.strip():
            found.append(("cgguard: ignore", ALL))
        else:
            codes_found = frozenset(c.upper() for c in _SPLIT.split(codes.strip()) if c)
            found.append(("cgguard: ignore", codes_found))
    return found


def _noqa_codes(text: str | None) -> frozenset[str] | None:
    """The codes after ``# noqa:``: ALL for a bare ``# noqa`` (or a colon with nothing
    after it, as flake8 reads it), NOTHING where the list does not start with a code."""
    if text is None or not text.strip():
        return ALL
    m = CODE_LIST.match(text)
    if m is None:
        return NOTHING
    return frozenset(c.upper() for c in _CODE.findall(m.group("list")))


def filter_suppressed(text: str, findings: list[Finding]) -> list[Finding]:
    """``findings`` without those a directive in ``text`` suppresses."""
    if not findings or ("noqa" not in text.lower() and "cgguard" not in text.lower()):
        return findings
    if all(f.stmt_lines != (0, 0) for f in findings):
        # The scanner knows each finding's statement: read the comments of those
        # lines only (tokenizing a 7,000-line runner costs more than checking it).
        lines = _physical_lines(text)
        return [f for f in findings if not _suppressed_in_statement(lines, f)]
    comments, spans = _comments_and_statements(text)
    if not comments:
        return findings
    starts = [s for s, _ in spans]
    kept = []
    for f in findings:
        first, last = _statement_lines(f, spans, starts)
        if not any(
            _covers(d, f.code) for line in range(first, last + 1) for d in comments.get(line, ())
        ):
            kept.append(f)
    return kept


def reach(text: str, findings: list[Finding]) -> list[tuple[int, int]]:
    """For each finding, the lines (first, last) where a directive suppresses it: the same
    lines :func:`filter_suppressed` reads."""
    if all(f.stmt_lines != (0, 0) for f in findings):
        return [(min(f.line, f.stmt_lines[0]), max(f.end_line, f.stmt_lines[1])) for f in findings]
    _, spans = _comments_and_statements(text)
    starts = [s for s, _ in spans]
    return [_statement_lines(f, spans, starts) for f in findings]


def covers(directive: frozenset[str] | None, code: str) -> bool:
    """Does a directive (a set of codes or prefixes, or ALL) suppress ``code``?"""
    return _covers(directive, code)


def _suppressed_in_statement(lines: list[str], f: Finding) -> bool:
    first = min(f.line, f.stmt_lines[0])
    last = max(f.end_line, f.stmt_lines[1])
    snippet = "".join(lines[first - 1 : last])
    comments, _ = _comments_and_statements(snippet)
    return any(_covers(d, f.code) for found in comments.values() for d in found)


def _physical_lines(text: str) -> list[str]:
    from cgguard.static.source.sourcetext import split_lines  # the scanner's own line numbering

    return split_lines(text)


def _covers(directive: frozenset[str] | None, code: str) -> bool:
    return directive is ALL or any(code.startswith(c) for c in directive)


def _statement_lines(
    f: Finding, spans: list[tuple[int, int]], starts: list[int]
) -> tuple[int, int]:
    first, last = f.line, f.end_line
    for line in (f.line, f.end_line):
        i = bisect.bisect_right(starts, line) - 1
        if i >= 0 and spans[i][0] <= line <= spans[i][1]:
            first, last = min(first, spans[i][0]), max(last, spans[i][1])
    if f.stmt_lines != (0, 0):
        first, last = min(first, f.stmt_lines[0]), max(last, f.stmt_lines[1])
    return first, last


def _comments_and_statements(text: str):
    """({line: [directive, ...]}, [(first line, last line) of each logical line])."""
    comments: dict[int, list] = {}
    spans: list[tuple[int, int]] = []
    start = None
    skip = (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING)
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                found = directives(tok.string)
                if found:
                    comments.setdefault(tok.start[0], []).extend(found)
            if tok.type in skip:
                continue
            if tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                if start is not None:
                    spans.append((start, tok.start[0]))
                    start = None
                continue
            if start is None:
                start = tok.start[0]
    except (tokenize.TokenError, SyntaxError):
        # The scanner parsed only the functions it needed, and the rest of the file
        # does not tokenize: fall back to one statement per line, comments by '#'.
        comments, spans = {}, []
        for n, line in enumerate(text.splitlines(), 1):
            found = directives(line[line.find("#") :]) if "#" in line else []
            if found:
                comments[n] = found
    return comments, spans
