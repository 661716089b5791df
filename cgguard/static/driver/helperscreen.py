"""Does a file need the full parse because a helper's result may reach a block count?

The fast path parses only functions that hold a capture size and a block-count
word. A helper (``def _blocks(self): return <capture size> or 1``) has the first
and not the second; its caller (``min_blocks = self._blocks()``) the second and
not the first. The rules follow such flows across functions (the finding sits at
the helper's return when every use of it is a block count, at the call
otherwise), which needs every function of the file: this screen says when the
fast path must hand the file to the full path.

Exact in the direction that matters (it may send a file to the full parse that
did not need it, never the other way): a helper flow needs

1. a function holding a needle whose own ``return`` carries the capture size
   (``returns_capture(start, end)``, which parses that one function), and
2. a use of its name inside a function whose text holds a block-count word, or
   inside a function that returns a value (a helper of a helper), and so on.

Imports nothing heavy: callers pass the parse.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from itertools import accumulate
from typing import Callable

from cgguard.static.rules.vocabulary import SINK_WORDS

_DEF_NAME = re.compile(r"[ \t]*(?:async[ \t]+)?def[ \t]+(\w+)")
# `return <value>` (not a bare `return`), at the start of a line's code.
_RETURN_VALUE = re.compile(r"^[ \t]*return[ \t]*[^\s#;]", re.MULTILINE)

Span = tuple[int, int]  # (first line index, index after the last line)


def def_name(line: str) -> str | None:
    m = _DEF_NAME.match(line)
    return m.group(1) if m else None


def needs_full_parse(
    text: str,
    lines: list[str],
    chunks: list[Span],
    enclosing_function: Callable[[int], Span | None],
    returns_capture: Callable[[int, int], bool],
) -> bool:
    """True when a helper's result may reach a block count (see the module doc).

    ``chunks`` are the functions holding a needle; ``enclosing_function(i)`` the span
    of the function around line index ``i`` (None at module or class level).
    """
    candidates: dict[str, Span] = {}
    for start, end in chunks:
        name = def_name(lines[start])
        if name is None or not _RETURN_VALUE.search("".join(lines[start:end])):
            continue
        candidates.setdefault(name, (start, end))
    if not candidates:
        return False
    starts = list(accumulate(map(len, lines), initial=0))

    def uses(names: set[str]) -> dict[str, list[int]]:
        """Line indexes where each name appears as a word, def lines excluded."""
        found: dict[str, list[int]] = {n: [] for n in names}
        pattern = re.compile(r"\b(" + "|".join(map(re.escape, sorted(names))) + r")\b")
        for m in pattern.finditer(text):
            i = bisect_right(starts, m.start()) - 1
            if def_name(lines[i]) == m.group(1):
                continue
            if not found[m.group(1)] or found[m.group(1)][-1] != i:
                found[m.group(1)].append(i)
        return found

    def reaches_block_count(name: str) -> bool:
        """Is ``name`` used (directly or through functions returning it) where a block count is?"""
        frontier, seen = {name}, {name}
        while frontier:
            found: set[str] = set()
            for used_at in uses(frontier).values():
                for i in used_at:
                    span = enclosing_function(i)
                    if span is None:
                        continue  # a use at module or class level is never a block count
                    body = "".join(lines[span[0] : span[1]])
                    if SINK_WORDS.search(body):
                        return True
                    caller = def_name(lines[span[0]])
                    if caller and caller not in seen and _RETURN_VALUE.search(body):
                        found.add(caller)
            seen |= found
            frontier = found
        return False

    # Text first; only then one small parse: does the helper's own return carry the capture size?
    return any(reaches_block_count(n) and returns_capture(*span) for n, span in candidates.items())
