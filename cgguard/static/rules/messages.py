"""One-line messages for findings (the rule pages in rules/ explain them at length)."""

from __future__ import annotations

from cgguard.static.rules.edits import REQUEST_PLACEHOLDER, _one_line, _segment, shorten
from cgguard.static.rules.flow import Hit


def message_for(code: str, hit: Hit, lines: list[str], offset: int, bound: str) -> str:
    cap = shorten(_one_line(_segment(lines, hit.source, offset)))
    sink = shorten(hit.sink)
    bound = shorten(bound)
    if code == "CGG002":
        return (
            f"`{sink}` takes max() with the CUDA-graph capture size `{cap}` (tokens), so it "
            f"still grows with the token count; if it needs at least max_num_seqs rows, bound "
            f"the capture size inside the max(): `{bound}`"
        )
    if hit.request is None:
        hint = bound.replace(REQUEST_PLACEHOLDER, "<max_num_reqs or scheduler_config.max_num_seqs>")
        return (
            f"`{sink}` is sized by the CUDA-graph capture size `{cap}` (tokens, one block per "
            f"token); bound it by a request count: `{hint}` (no automatic fix: no request "
            f"count in scope)"
        )
    return (
        f"`{sink}` is sized by the CUDA-graph capture size `{cap}` (tokens, one block per "
        f"token); use one block per sequence: `{bound}`"
    )
