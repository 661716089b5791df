"""CGG002: ``max(<capture size>, ...)`` feeding a block count.

Still grows with the token count, but the author may need at least
``max_num_seqs`` rows: the bound is shown as a suggestion (display-only), never
applied.
"""

from __future__ import annotations

from cgguard.static.rules.base import DISPLAY_ONLY, Context, Replacement, Rule, RuleFix
from cgguard.static.rules.flow import MAX, Hit


class CGG002(Rule):
    code = "CGG002"
    kind = MAX
    name = "max-with-capture-size-blocks"

    def fix(self, hit: Hit, ctx: Context, replacement: Replacement, shown: str) -> RuleFix:
        return RuleFix(DISPLAY_ONLY, f"Bound the capture size inside max(): {shown}", replacement)
