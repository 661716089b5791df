"""One-line messages for findings (the rule pages in rules/ explain them at length)."""

from __future__ import annotations

from cgguard.static.core.flow import Hit
from cgguard.static.fixes.edit import REQUEST_PLACEHOLDER, shorten


def message_for(code: str, hit: Hit, bound: str, *, unsafe: bool = False) -> str:
    # One short line (about 120 characters at most): what is wrong and what to write
    # instead. The why is on the rule's page (`cgguard rule CODE`, `--format full`).
    sink = shorten(hit.sink, 48)
    # A count that came through a helper names it: `min_blocks` (via `_graph_tokens()`).
    subject = f"`{sink}`" + (f" (via `{shorten(hit.via, 32)}`)" if hit.via else "")
    request = hit.request or "<max_num_reqs>"
    bound = bound.replace(REQUEST_PLACEHOLDER, request)
    if code == "CGG002":
        return _fit(
            f"{subject} takes max() with the capture size; bound it: `", bound, "`", request
        )
    before = f"{subject} counts one block per captured token; use `"
    if hit.request is None:
        return _fit(before, bound, "` (no request count in scope)", request)
    # Every unsafe fix carries the same label, whatever made it unsafe (a guessed
    # `self.max_num_reqs`, a capture size the file compares with None): the fix's
    # description (`--format full`, JSON, SARIF) says why.
    return _fit(before, bound, f"` {UNSAFE_LABEL}" if unsafe else "`", request)


# What ends the message of a finding whose fix needs `--unsafe-fixes`.
UNSAFE_LABEL = "(unsafe fix)"
MAX_MESSAGE = 120


def _fit(before: str, bound: str, after: str, request: str) -> str:
    """``before + bound + after``, the bound spelled out as far as the line allows:
    whole, then with ``<capture size>`` or ``...`` for the capture-size expression
    (the request count, what the user has to write, is never cut)."""
    head = f"min({request}, "
    fallback = bound.rpartition(") or ")[2] if bound.startswith(head) and ") or " in bound else ""
    candidates = [bound]
    if fallback:
        fallback = shorten(fallback, 20)
        candidates += [f"{head}<capture size>) or {fallback}", f"{head}...) or {fallback}"]
    else:
        candidates.append(shorten(bound, 60))
    for candidate in candidates:
        if len(before) + len(candidate) + len(after) <= MAX_MESSAGE:
            break
    return before + candidate + after
