"""The byte prefilter's needles, derived from a model's source names (imports nothing)."""

from __future__ import annotations

from collections.abc import Iterable

# Shorter needles match more unrelated text: a needle is at least this long (or a whole name).
MIN_NEEDLE = 10


def needles_of(names: Iterable[str]) -> tuple[str, ...]:
    """Few substrings such that every name contains one: runs of whole ``_``-separated words
    of a name (at least :data:`MIN_NEEDLE` characters), the one shared by most names not
    covered yet, the shortest of those, until every name is covered."""
    left = sorted(set(names))
    kept: list[str] = []
    while left:
        candidates: set[str] = set()
        for name in left:
            starts = [0] + [i + 1 for i, c in enumerate(name) if c == "_"]
            ends = [i for i, c in enumerate(name) if c == "_"] + [len(name)]
            shortest = min(MIN_NEEDLE, len(name))
            candidates.update(name[i:j] for i in starts for j in ends if j - i >= shortest)
        best = max(candidates, key=lambda c: (sum(c in n for n in left), -len(c), c))
        kept.append(best)
        left = [n for n in left if best not in n]
    return tuple(sorted(kept))
