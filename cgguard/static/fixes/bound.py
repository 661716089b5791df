"""Upstream's bound as a libcst change: wrap the count, touch nothing else.

The count keeps its exact code (comments and line breaks inside it included): it becomes
the second argument of ``min(<requests>, <count>)``, with ``or 1`` added when it had no
fallback; a ``min()`` without a request count gets it as its first argument instead. The
smallest node changes while every line it touches fits in 88 columns, measured as
``ruff format`` measures (a tab counts 4, a trailing comment counts, a pragma comment such
as ``# noqa`` does not). Past 88, the statement holding it is written as ``ruff format``
writes it (:mod:`cgguard.static.fixes.layout`), which for vLLM's own line is upstream's fix
in 0.26.0::

    min_blocks = (
        min(self.max_num_reqs, self.compilation_config.max_cudagraph_capture_size)
        or 1
    )

A statement the layout cannot reproduce (a comment inside it, a construct it does not know)
keeps its own layout and only the new code splits, at its own brackets; when even that
cannot help, the one-line rewrite stays. New nodes carry their whole indentation and the
file's line ending, so the driver's text splice, Fixit and the codemod write the same bytes.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

import libcst as cst

from cgguard.shared.bound import DEFAULT_FALLBACK
from cgguard.static.core import ir
from cgguard.static.core.flow import Hit
from cgguard.static.fixes import layout
from cgguard.static.fixes.site import Site

MAX_LINE = layout.LINE_LENGTH


@dataclass(frozen=True)
class Replacement:
    """Replace ``old`` by ``new`` (which keeps ``old``'s own parentheses).

    ``core`` is ``new`` without those parentheses: the text that replaces the span of
    ``old`` as positions give it (inside its parentheses).
    """

    old: cst.CSTNode
    new: cst.CSTNode
    core: cst.CSTNode


def strip_parens(node: cst.BaseExpression) -> cst.BaseExpression:
    """The node without its own parentheses (spans never include them)."""
    if getattr(node, "lpar", None):
        return node.with_changes(lpar=(), rpar=())
    return node


def with_first_arg(call: cst.Call, request: str) -> cst.Call:
    """``min(a, b)`` -> ``min(<request>, a, b)``, every other byte kept."""
    first = cst.Arg(
        value=cst.parse_expression(request),
        comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")),
    )
    if call.args and isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace):
        # min(\n    a,\n    b\n): the request goes on its own line, laid out like a.
        first = first.with_changes(comma=cst.Comma(whitespace_after=call.whitespace_before_args))
    return call.with_changes(args=[first, *call.args])


def bounded(hit: Hit, site: Site, lay_out: bool = True) -> Replacement | None:
    """The libcst change for ``hit`` in ``site``, laid out (unless ``lay_out`` is False);
    None without a rewrite target, without a request count, or where the site holds no
    node at the target's span. The layout changes how the fix is written, never whether
    there is one."""
    rw = hit.rewrite
    if rw is None or hit.request is None:
        return None
    target = site.expr(rw.target.span)
    if target is None:
        return None
    rep = _smallest(target, rw.insert, rw.has_fallback, rw.needs_parens, hit.request)
    if rep is None:
        return None
    return _laid_out(rep, hit, site) if lay_out else rep


def _arg(value: cst.BaseExpression, last: bool = False) -> cst.Arg:
    comma = (
        cst.MaybeSentinel.DEFAULT
        if last
        else cst.Comma(cst.SimpleWhitespace(""), cst.SimpleWhitespace(" "))
    )
    return cst.Arg(value=value, comma=comma)


def _smallest(
    target: cst.BaseExpression, insert: bool, has_fallback: bool, needs_parens: bool, request: str
) -> Replacement | None:
    """The count itself, rewritten on one line (its own line breaks kept)."""
    if insert:
        bare = strip_parens(target)
        if not isinstance(bare, cst.Call):
            return None
        core: cst.BaseExpression = with_first_arg(bare, request)
        new = core.with_changes(lpar=target.lpar, rpar=target.rpar)
        return Replacement(old=target, new=new, core=core)
    call = cst.Call(
        func=cst.Name("min"),
        args=[_arg(cst.parse_expression(request)), _arg(strip_parens(target), last=True)],
    )
    if has_fallback:
        core = call
    else:
        core = cst.BooleanOperation(
            left=call, operator=cst.Or(), right=cst.Integer(str(DEFAULT_FALLBACK))
        )
        if needs_parens and not target.lpar:
            core = core.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    new = core.with_changes(lpar=[*target.lpar, *core.lpar], rpar=[*core.rpar, *target.rpar])
    return Replacement(old=target, new=new, core=core)


# ---- keeping lines within 88 columns --------------------------------------------------


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


def _laid_out(rep: Replacement, hit: Hit, site: Site) -> Replacement:
    """``rep`` when its lines fit; otherwise the statement (or the new code) laid out."""
    first, c0, last, c1 = site.span(rep.old)
    before = site.lines[first - 1][:c0]
    after = site.lines[last - 1][c1:].rstrip("\r\n")
    written = (before + site.code(rep.core) + after).split("\n")
    if all(line_width(line) <= MAX_LINE for line in written):
        return rep
    for attempt in (_statement, _new_code_only):
        try:
            better = attempt(rep, hit, site)
        except (layout.Unsupported, cst.ParserSyntaxError, RecursionError):
            better = None
        if better is not None:
            return better
    return rep


def _statement(rep: Replacement, hit: Hit, site: Site) -> Replacement | None:
    """The whole statement in ruff's layout."""
    stmt = None if hit.stmt is None else site.stmt(hit.stmt.span)  # type: ignore[attr-defined]
    node: cst.CSTNode
    if isinstance(stmt, (cst.If, cst.While)) and isinstance(hit.stmt, (ir.If, ir.While)):
        node, tail = stmt.test, r"\s*:"
        if stmt.test.lpar:
            return None  # the parentheses stay outside the span: ours would nest
    elif isinstance(stmt, cst.With) and isinstance(hit.stmt, ir.With) and _one_item(stmt):
        node, tail = stmt.items[0].item, r"\s*:"  # laid out as an ``if`` test is
        if stmt.items[0].item.lpar or isinstance(stmt.lpar, cst.LeftParen):
            return None
    elif isinstance(stmt, cst.BaseSmallStatement):
        node, tail = stmt, ""
    else:
        return None
    first, c0, last, c1 = site.span(node)
    line = site.lines[first - 1]
    end = re.fullmatch(rf"({tail})\s*(#.*)?", site.lines[last - 1][c1:].rstrip("\r\n"))
    if end is None:
        return None  # another statement follows on the line (`;`)
    indent = re.match(r"[ \t]*", line).group(0)  # type: ignore[union-attr]
    text = layout.render(
        node,
        swap=(rep.old, rep.new),
        has_comments="#" in "".join(site.lines[first - 1 : last]),
        column=len(line[:c0].expandtabs(4)),
        indent=indent,
        after=":" if tail else "",
        comment=end.group(2),
    )
    new: cst.CSTNode
    if isinstance(node, cst.BaseSmallStatement):
        parsed = cst.parse_statement(text + "\n")
        if not isinstance(parsed, cst.SimpleStatementLine) or len(parsed.body) != 1:
            return None
        new = parsed.body[0]
    else:
        new = cst.parse_expression(text)
    new = _absolute(new, _newline(line))
    if cst.Module([]).code_for_node(new) != text.replace("\n", _newline(line)):
        return None
    return Replacement(old=node, new=new, core=new)


def _one_item(stmt: cst.With) -> bool:
    return len(stmt.items) == 1 and stmt.items[0].asname is None


def _new_code_only(rep: Replacement, hit: Hit, site: Site) -> Replacement | None:
    """Only the new code laid out, splitting at its own brackets."""
    first, c0, last, c1 = site.span(rep.old)
    line = site.lines[first - 1]
    if first != last:
        return None  # the count spans lines already: its layout is the author's
    indent = re.match(r"[ \t]*", line).group(0)  # type: ignore[union-attr]
    rest, comment = _split_comment(line[c1:].rstrip("\r\n"))
    text = layout.render(
        rep.core,
        has_comments="#" in site.code(rep.core),
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
    old = rep.old
    assert isinstance(old, cst.BaseExpression) and isinstance(core, cst.BaseExpression)
    new = core.with_changes(lpar=[*old.lpar, *core.lpar], rpar=[*core.rpar, *old.rpar])
    return Replacement(old=old, new=new, core=core)


def _newline(line: str) -> str:
    return line[len(line.rstrip("\r\n")) :] or "\n"


def _absolute(node: cst.CSTNode, newline: str) -> cst.CSTNode:
    """``node`` with continuation lines that carry their whole indentation and the file's
    line ending, wherever it is rendered (the driver's splice, Fixit, the codemod). A plain
    walk over the dataclass fields: several times cheaper than a libcst transformer, which
    matters for files with thousands of findings."""
    changes: dict[str, object] = {}
    for field in dataclasses.fields(node):
        value = getattr(node, field.name)
        new: object
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
        first: cst.TrailingWhitespace = changes.get("first_line", node.first_line)  # type: ignore[assignment]
        changes["first_line"] = first.with_changes(newline=cst.Newline(value=newline))
    return node.with_changes(**changes) if changes else node
