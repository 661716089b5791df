"""CGG002: ``max(<capture size>, ...)`` feeding a block count.

Still grows with the token count, but the author may need at least ``max_num_seqs`` rows:
the bound is shown as a suggestion (display-only), never applied.
"""

from __future__ import annotations

from cgguard.static.core.flow import Hit
from cgguard.static.source.findings import DISPLAY_ONLY

CODE = "CGG002"
NAME = "max-with-capture-size-blocks"


def fix_terms(
    hit: Hit, text: str, shown: str, none_tested: frozenset[str] | None = None
) -> tuple[str, str]:
    """(applicability, description) of the fix; ``shown``: the bound's text (the rest as
    :func:`cgguard.static.rules.cgg001.fix_terms` takes them)."""
    return DISPLAY_ONLY, f"Bound the capture size inside max(): {shown}"
