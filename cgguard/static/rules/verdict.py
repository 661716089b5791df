"""What a rule says about one of the core's hits: its code, message, and the fix's terms.

The driver (``cgguard check``/``fix``) and the adapters (Fixit, the codemod) ask the same
question here, so every front end reports the same words.
"""

from __future__ import annotations

from dataclasses import dataclass

from cgguard.static.core.flow import Hit
from cgguard.static.fixes.edit import bound_text, shorten
from cgguard.static.rules import cgg001, cgg002, cgg003
from cgguard.static.rules.configs import CAPTURE_SIZE_BLOCKS
from cgguard.static.rules.messages import message_for
from cgguard.static.source.findings import UNSAFE

# The rule modules by code. A hit the driver ran carries its rule's code; one of CGG001's
# model made without the driver (tests, tools of the core) is that configuration's, by the
# labels its count carries.
RULES = {cgg001.CODE: cgg001, cgg002.CODE: cgg002, cgg003.CODE: cgg003}


@dataclass(frozen=True)
class Verdict:
    code: str
    message: str
    applicability: str | None  # None: no fix
    description: str | None


def verdict(
    hit: Hit,
    text: str,
    lines: list[str],
    source_lines: list[str] | None,
    fixable: bool,
    none_tested: frozenset[str] | None = None,
) -> Verdict:
    """``fixable``: whether a fix could be written (a rewrite target and a request count,
    and the code parses there); ``source_lines``: the lines of the module holding the hit's
    source, where it is not this file; ``none_tested``: the names ``text`` tests for None
    (:func:`cgguard.static.rules.cgg001.names_tested_for_none`), when the caller has them."""
    rule = RULES[hit.rule or CAPTURE_SIZE_BLOCKS.rule_for(hit.labels)]
    bound = bound_text(hit, lines, source_lines)
    applicability = description = None
    if fixable:
        applicability, description = rule.fix_terms(hit, text, shorten(bound), none_tested)
    # A rule with a message of its own says it (CGG003); CGG001/CGG002 name the bound.
    own = getattr(rule, "message", None)
    if own is not None:
        message = own(hit)
    else:
        message = message_for(rule.CODE, hit, bound, unsafe=applicability == UNSAFE)
    return Verdict(rule.CODE, message, applicability, description)
