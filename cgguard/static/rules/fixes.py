"""Upstream's bound as a CST change: wrap the count, touch nothing else.

The count node keeps its exact code (comments and line breaks inside it included):
it becomes the second argument of ``min(<requests>, <count>)``, with ``or 1`` added
when the original had no fallback. The smallest node changes: the count itself,
while every line it touches fits in 88 columns. Past 88, the statement holding it is
written as ``ruff format`` writes it (:mod:`cgguard.static.rules.fixlayout`), which
for vLLM's own line is upstream's fix in 0.26.0::

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
from cgguard.static.rules.fixlayout import laid_out
from cgguard.static.rules.flow import Hit, Rewrite
from cgguard.static.rules.nodes import strip_parens

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
    return cst.Arg(
        value=value,
        comma=cst.MaybeSentinel.DEFAULT
        if last
        else cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")),
    )


def _min_call(request: str, target: cst.BaseExpression) -> cst.Call:
    return cst.Call(
        func=cst.Name("min"),
        args=[_arg(cst.parse_expression(request)), _arg(strip_parens(target), last=True)],
    )


def bounded(hit: Hit, ctx: Context) -> Replacement | None:
    """The CST change for a hit; None without a rewrite target or a request count."""
    replacement = _smallest(hit)
    if replacement is None:
        return None
    return laid_out(replacement, hit, ctx)


def _smallest(hit: Hit) -> Replacement | None:
    """The count itself, rewritten on one line (its own line breaks kept)."""
    rw = hit.rewrite
    if rw is None or hit.request is None:
        return None
    target = rw.target
    if rw.insert:
        core = reach.with_first_arg(strip_parens(target), hit.request)
        return Replacement(
            old=target, new=core.with_changes(lpar=target.lpar, rpar=target.rpar), core=core
        )
    call = _min_call(hit.request, target)
    if rw.has_fallback:
        core: cst.BaseExpression = call
    else:
        core = cst.BooleanOperation(
            left=call, operator=cst.Or(), right=cst.Integer(str(DEFAULT_FALLBACK))
        )
        if rw.needs_parens and not target.lpar:
            core = core.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    new = core.with_changes(lpar=[*target.lpar, *core.lpar], rpar=[*core.rpar, *target.rpar])
    return Replacement(old=target, new=new, core=core)
