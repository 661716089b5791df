"""CGG002: ``max(<capture size>, ...)`` feeding a block count.

Still grows with the token count, but the author may need at least
``max_num_seqs`` rows: the bound is shown as a suggestion (display-only), never
applied.
"""

from __future__ import annotations

from cgguard.static.rules.base import DISPLAY_ONLY, Context, Report, Rule, RuleFix
from cgguard.static.rules.fixes import bound_text, bounded, shorten
from cgguard.static.rules.flow import MAX, Hit
from cgguard.static.rules.messages import message_for


class CGG002(Rule):
    code = "CGG002"
    kind = MAX
    name = "max-with-capture-size-blocks"

    def report(self, hit: Hit, ctx: Context) -> Report:
        bound = bound_text(hit, ctx)
        message = message_for(self.code, hit, ctx, bound)
        replacement = bounded(hit, ctx)
        if replacement is None:
            return Report(self.code, hit, message, None)
        fix = RuleFix(DISPLAY_ONLY, f"Bound the capture size inside max(): {shorten(bound)}", replacement)
        return Report(self.code, hit, message, fix)
