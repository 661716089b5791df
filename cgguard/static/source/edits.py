"""Text edits applied to a source text."""

from __future__ import annotations

from cgguard.static.source.findings import TextEdit


def apply_edits(text: str, edits: list[TextEdit]) -> str:
    """Apply non-overlapping edits in one pass (linear: a file may hold thousands)."""
    for edit in edits:
        if not 0 <= edit.start <= edit.end <= len(text):
            raise ValueError(f"edit {edit.start}..{edit.end} outside the text (length {len(text)})")
    pieces: list[str] = []
    pos = 0
    for edit in sorted(edits, key=lambda e: (e.start, e.end)):
        if edit.start < pos:
            raise ValueError(f"edit {edit.start}..{edit.end} overlaps another")
        pieces.append(text[pos : edit.start])
        pieces.append(edit.text)
        pos = edit.end
    pieces.append(text[pos:])
    return "".join(pieces)
