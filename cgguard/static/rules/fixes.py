"""Upstream's bound as a CST change: wrap the count, touch nothing else.

The count node keeps its exact code (comments and line breaks inside it included):
it becomes the second argument of ``min(<requests>, <count>)``, with ``or 1`` added
when the original had no fallback. The smallest node changes: the count itself, or,
when the one-line form would pass 88 columns and the count is the whole right-hand
side of an assignment, the ``<count> or K`` expression, laid out over several lines
in parentheses as upstream did in vLLM 0.26.0::

    min_blocks = (
        min(self.max_num_reqs, self.compilation_config.max_cudagraph_capture_size)
        or 1
    )

libcst renders the new node; the driver splices that text over the old node's span.
"""

from __future__ import annotations

import re

import libcst as cst

from cgguard.shared.bound import DEFAULT_FALLBACK, bound_source
from cgguard.static.rules import reach
from cgguard.static.rules.base import Context, Replacement
from cgguard.static.rules.flow import Hit, Rewrite
from cgguard.static.rules.nodes import strip_parens

MAX_LINE = 88
REQUEST_PLACEHOLDER = "<request count>"
# Messages and fix descriptions quote code; they stay one readable line even for
# generated code with huge expressions.
MAX_QUOTE = 160


def shorten(text: str, limit: int = MAX_QUOTE) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def one_line(src: str) -> str:
    return re.sub(r"\s*\n\s*", " ", src).strip()


def quote(ctx: Context, node: cst.CSTNode) -> str:
    """A node's code on one line, without its own parentheses."""
    return one_line(ctx.code(strip_parens(node)))


def bound_text(hit: Hit, ctx: Context) -> str:
    """The bounded count as the message shows it."""
    rw = hit.rewrite
    request = hit.request or REQUEST_PLACEHOLDER
    if rw is None:
        return bound_source(request, quote(ctx, hit.source))
    if rw.insert:
        # min(<token count>, <capture size>): the request count joins that min().
        text = one_line(ctx.code(reach.with_first_arg(strip_parens(rw.target), request)))
        return f"{text} or {_fallback_text(rw, ctx)}" if rw.has_fallback else text
    return bound_source(request, quote(ctx, rw.target), _fallback_text(rw, ctx))


def _fallback_text(rw: Rewrite, ctx: Context) -> str:
    if rw.has_fallback:
        return " or ".join(quote(ctx, v) for v in rw.fallbacks)
    return str(DEFAULT_FALLBACK)


def _arg(value: cst.BaseExpression, last: bool = False) -> cst.Arg:
    return cst.Arg(value=value, comma=cst.MaybeSentinel.DEFAULT if last else cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))


def _min_call(request: str, target: cst.BaseExpression) -> cst.Call:
    return cst.Call(
        func=cst.Name("min"),
        args=[_arg(cst.parse_expression(request)), _arg(strip_parens(target), last=True)],
    )


def bounded(hit: Hit, ctx: Context) -> Replacement | None:
    """The CST change for a hit; None without a rewrite target or a request count."""
    rw = hit.rewrite
    if rw is None or hit.request is None:
        return None
    if rw.insert:
        target = rw.target
        core = reach.with_first_arg(strip_parens(target), hit.request)
        return Replacement(old=target, new=core.with_changes(lpar=target.lpar, rpar=target.rpar), core=core)
    wrapped = _wrapped(hit, rw, ctx)
    if wrapped is not None:
        return wrapped
    target = rw.target
    call = _min_call(hit.request, target)
    if rw.has_fallback:
        core: cst.BaseExpression = call
    else:
        core = cst.BooleanOperation(left=call, operator=cst.Or(), right=cst.Integer(str(DEFAULT_FALLBACK)))
        if rw.needs_parens and not target.lpar:
            core = core.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    new = core.with_changes(lpar=[*target.lpar, *core.lpar], rpar=[*core.rpar, *target.rpar])
    return Replacement(old=target, new=new, core=core)


def _pw(newline: str, indent: str) -> cst.ParenthesizedWhitespace:
    return cst.ParenthesizedWhitespace(
        first_line=cst.TrailingWhitespace(newline=cst.Newline(value=newline)),
        indent=False,
        last_line=cst.SimpleWhitespace(indent),
    )


def _wrapped(hit: Hit, rw: Rewrite, ctx: Context) -> Replacement | None:
    """Upstream's multi-line layout when the one-line fix would pass 88 characters."""
    whole = rw.whole if rw.whole is not None else rw.target
    if rw.needs_parens:
        return None
    line_no, start_c, end_line, end_c = ctx.span(whole)
    if line_no != end_line:
        return None
    line = ctx.lines[line_no - 1]
    body = line.rstrip("\r\n")
    newline = line[len(body):] or "\n"
    before, after = body[:start_c], body[end_c:]
    # Only where the count is the whole right-hand side: `name = <count>  # comment`.
    if not re.search(r"[^=!<>]=\s*$", before) or not re.fullmatch(r"\s*(#.*)?", after):
        return None
    fallback = _fallback_text(rw, ctx)
    # The code's length decides (a trailing comment may run long, as black allows);
    # a tab counts as 4 columns, as ruff's default indent-width does.
    code_len = len(before.expandtabs(4)) + (end_c - start_c)
    grown = code_len + len(f"min({hit.request}, )") + (0 if rw.has_fallback else len(f" or {fallback}"))
    if grown <= MAX_LINE:
        return None
    indent = re.match(r"[ \t]*", body).group(0)
    inner = indent + ("\t" if "\t" in indent else "    ")
    count: cst.BaseExpression = _min_call(hit.request, rw.target)
    first_or = cst.Or(whitespace_before=_pw(newline, inner))
    if rw.has_fallback:
        rest = list(zip(rw.operators, rw.fallbacks))
    else:
        rest = [(cst.Or(), cst.Integer(str(DEFAULT_FALLBACK)))]
    for i, (op, value) in enumerate(rest):
        count = cst.BooleanOperation(
            left=count, operator=first_or if i == 0 else op.with_changes(), right=value
        )
    core = count.with_changes(
        lpar=[cst.LeftParen(whitespace_after=_pw(newline, inner))],
        rpar=[cst.RightParen(whitespace_before=_pw(newline, indent))],
    )
    new = core.with_changes(lpar=[*whole.lpar, *core.lpar], rpar=[*core.rpar, *whole.rpar])
    return Replacement(old=whole, new=new, core=core)
