"""Keep the lines a fix writes within 88 columns, in ruff's layout.

The smallest change (the count rewritten in place) is kept whenever every line it
touches fits in 88 columns, measured as ``ruff format`` measures: a tab counts 4,
a trailing comment counts (a pragma comment such as ``# noqa`` does not). When a line
would pass 88, the statement holding the fix is written the way ``ruff format``
writes it (:mod:`cgguard.static.fixes.layout`), and the replacement becomes that
statement (an ``if``/``while`` header: its test). The result is re-parsed into libcst
nodes whose continuation lines carry their absolute indentation, so the driver's
text splice, Fixit and the codemod write the same bytes.

A statement the layout cannot reproduce (a comment inside it, a construct it does
not know) keeps its own layout, and only the new code splits, at its own brackets;
when even that cannot help, the one-line rewrite stays.
"""

from __future__ import annotations

import dataclasses
import re

import libcst as cst

from cgguard.static.fixes import layout
from cgguard.static.rules.base import Context, Replacement
from cgguard.static.rules.flow import Hit

MAX_LINE = layout.LINE_LENGTH


def _split_comment(line: str) -> tuple[str, str | None]:
    """The code and the trailing comment of one physical line (strings skipped)."""
    quote: str | None = None
    i = 0
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == "\\":
                i += 1
            elif line.startswith(quote, i):
                i += len(quote) - 1
                quote = None
        elif ch in "'\"":
            quote = line[i : i + 3] if line[i : i + 3] in ('"""', "'''") else ch
            i += len(quote) - 1
        elif ch == "#":
            return line[:i].rstrip(), line[i:].rstrip()
        i += 1
    return line.rstrip(), None


def line_width(line: str) -> int:
    """A physical line's width as ruff counts it against the limit."""
    code, comment = _split_comment(line.rstrip("\r\n"))
    width = len(code.expandtabs(4))
    return width + layout.comment_width(comment) if comment else width


def laid_out(rep: Replacement, hit: Hit, ctx: Context) -> Replacement:
    """``rep`` when its lines fit; otherwise the statement (or the new code) laid out."""
    first, c0, last, c1 = ctx.span(rep.old)
    before = ctx.lines[first - 1][:c0]
    after = ctx.lines[last - 1][c1:].rstrip("\r\n")
    written = (before + ctx.code(rep.core) + after).split("\n")
    if all(line_width(line) <= MAX_LINE for line in written):
        return rep
    for attempt in (_statement, _new_code_only):
        try:
            better = attempt(rep, hit, ctx)
        except (layout.Unsupported, cst.ParserSyntaxError, RecursionError):
            better = None
        if better is not None:
            return better
    return rep


def _statement(rep: Replacement, hit: Hit, ctx: Context) -> Replacement | None:
    """The whole statement in ruff's layout."""
    stmt = getattr(hit, "stmt", None)  # the statement the flow saw the count in
    if isinstance(stmt, (cst.If, cst.While)):
        node, tail = stmt.test, r"\s*:"
        if node.lpar:
            return None  # the parentheses stay outside the span: ours would nest
    elif isinstance(stmt, cst.BaseSmallStatement):
        node, tail = stmt, ""
    else:
        return None
    first, c0, last, c1 = ctx.span(node)
    line = ctx.lines[first - 1]
    end = re.fullmatch(rf"({tail})\s*(#.*)?", ctx.lines[last - 1][c1:].rstrip("\r\n"))
    if end is None:
        return None  # another statement follows on the line (`;`)
    indent = re.match(r"[ \t]*", line).group(0)
    text = layout.render(
        node,
        swap=(rep.old, rep.new),
        has_comments="#" in "".join(ctx.lines[first - 1 : last]),
        column=len(line[:c0].expandtabs(4)),
        indent=indent,
        after=":" if tail else "",
        comment=end.group(2),
    )
    if isinstance(node, cst.BaseSmallStatement):
        parsed = cst.parse_statement(text + "\n")
        if not isinstance(parsed, cst.SimpleStatementLine) or len(parsed.body) != 1:
            return None
        new: cst.CSTNode = parsed.body[0]
    else:
        new = cst.parse_expression(text)
    new = _absolute(new, _newline(line))
    if cst.Module([]).code_for_node(new) != text.replace("\n", _newline(line)):
        return None
    return Replacement(old=node, new=new, core=new)


def _new_code_only(rep: Replacement, hit: Hit, ctx: Context) -> Replacement | None:
    """Only the new code laid out, splitting at its own brackets."""
    first, c0, last, c1 = ctx.span(rep.old)
    line = ctx.lines[first - 1]
    if first != last:
        return None  # the count spans lines already: its layout is the author's
    indent = re.match(r"[ \t]*", line).group(0)
    rest, comment = _split_comment(line[c1:].rstrip("\r\n"))
    text = layout.render(
        rep.core,
        has_comments="#" in ctx.code(rep.core),
        column=len(line[:c0].expandtabs(4)),
        indent=indent,
        after=rest,
        comment=comment,
        top=True,
    )
    if "\n" not in text:
        return None
    core = _absolute(cst.parse_expression(text), _newline(line))
    if cst.Module([]).code_for_node(core) != text.replace("\n", _newline(line)):
        return None
    new = core.with_changes(lpar=[*rep.old.lpar, *core.lpar], rpar=[*core.rpar, *rep.old.rpar])
    return Replacement(old=rep.old, new=new, core=core)


def _newline(line: str) -> str:
    return line[len(line.rstrip("\r\n")) :] or "\n"


def _absolute(node: cst.CSTNode, newline: str) -> cst.CSTNode:
    """``node`` with continuation lines that carry their whole indentation and the
    file's line ending, wherever it is rendered (the driver's splice, Fixit, the
    codemod). A plain walk over the dataclass fields: several times cheaper than a
    libcst transformer, which matters for files with thousands of findings."""
    changes = {}
    for field in dataclasses.fields(node):
        value = getattr(node, field.name)
        if isinstance(value, cst.CSTNode):
            new = _absolute(value, newline)
        elif isinstance(value, (list, tuple)) and value and isinstance(value[0], cst.CSTNode):
            new = type(value)(_absolute(v, newline) for v in value)
            if all(a is b for a, b in zip(new, value)):
                new = value
        else:
            continue
        if new is not value:
            changes[field.name] = new
    if isinstance(node, cst.ParenthesizedWhitespace):
        changes["indent"] = False
        changes["first_line"] = changes.get("first_line", node.first_line).with_changes(
            newline=cst.Newline(value=newline)
        )
    return node.with_changes(**changes) if changes else node
