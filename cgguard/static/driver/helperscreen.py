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
_WORD = re.compile(r"[A-Za-z_]\w*")

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
    if not SINK_WORDS.search(text):
        return False  # no block count anywhere
    candidates: dict[str, Span] = {}
    for start, end in chunks:
        name = def_name(lines[start])
        if name is None or not _RETURN_VALUE.search("".join(lines[start:end])):
            continue
        candidates.setdefault(name, (start, end))
    if not candidates:
        return False
    starts = list(accumulate(map(len, lines), initial=0))
    functions: dict[Span, tuple[str | None, bool, bool]] = {}

    def function_at(i: int) -> tuple[str | None, bool, bool] | None:
        """(name, holds a block-count word, returns a value) of the function around line i."""
        span = enclosing_function(i)
        if span is None:
            return None  # module or class level: never a block count
        found = functions.get(span)
        if found is None:
            body = "".join(lines[span[0] : span[1]])
            found = functions[span] = (
                def_name(lines[span[0]]),
                SINK_WORDS.search(body) is not None,
                _RETURN_VALUE.search(body) is not None,
            )
        return found

    def uses(names: set[str]):
        """(name, line index) of each word in ``names`` off its own def line, in one pass."""
        if len(names) <= 64:
            pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(names))) + r")\b")
        else:
            pattern = _WORD  # many names: every word, looked up (linear in the text)
        for m in pattern.finditer(text):
            word = m.group()
            if word not in names:
                continue
            i = bisect_right(starts, m.start()) - 1
            if def_name(lines[i]) != word:
                yield word, i

    # Which helpers' results reach a function with a block-count word, directly or through
    # functions returning them (each name carries the helpers it may return).
    carries: dict[str, set[str]] = {n: {n} for n in candidates}
    reaching: set[str] = set()
    frontier = set(candidates)
    while frontier:
        grown: set[str] = set()
        for name, i in uses(frontier):
            found = function_at(i)
            if found is None:
                continue
            caller, sink, returns = found
            if sink:
                reaching |= carries[name]
            elif returns and caller is not None:
                mine = carries.setdefault(caller, set())
                if not carries[name] <= mine:
                    mine |= carries[name]
                    grown.add(caller)
        frontier = grown
    # Text first; then one small parse each: does the helper's own return carry the capture size?
    return any(returns_capture(*candidates[n]) for n in sorted(reaching))
