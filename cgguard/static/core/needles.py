"""The byte prefilter's needles, derived from a model's source names (imports nothing)."""

from __future__ import annotations

from collections.abc import Iterable

# Shorter needles match more unrelated text: a needle is at least this long (or a whole name).
MIN_NEEDLE = 10


def needles_of(names: Iterable[str]) -> tuple[str, ...]:
    """Few substrings such that every name contains one: the substring (of at least
    :data:`MIN_NEEDLE` characters) shared by most names not covered yet, the longest of
    those first, until every name is covered."""
    left = sorted(set(names))
    kept: list[str] = []
    while left:
        candidates = {
            name[i:j]
            for name in left
            for i in range(len(name))
            for j in range(i + min(MIN_NEEDLE, len(name)), len(name) + 1)
        }
        best = max(candidates, key=lambda c: (sum(c in n for n in left), len(c), c))
        kept.append(best)
        left = [n for n in left if best not in n]
    return tuple(sorted(kept))
