"""One file's text split into physical lines, with the lookups fixes need, each done once."""

from __future__ import annotations

import re
from itertools import accumulate


def char_col(line: str, byte_col: int) -> int:
    """Character column of an ast (UTF-8 byte) column on ``line``."""
    if line.isascii():
        return byte_col
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))


class SourceText:
    def __init__(self, text: str, lines: list[str]):
        self.text = text
        self.lines = lines
        self._starts: list[int] | None = None
        self._none_checked: dict[str, bool] = {}

    def col(self, lineno: int, byte_col: int) -> int:
        """Character column of an ast byte column on 1-based line ``lineno``."""
        return char_col(self.lines[lineno - 1], byte_col)

    def offset(self, lineno: int, byte_col: int) -> int:
        """Character offset into the text of an ast (line, byte column) position."""
        if self._starts is None:
            self._starts = list(accumulate(map(len, self.lines), initial=0))
        return self._starts[lineno - 1] + self.col(lineno, byte_col)

    def compared_with_none(self, name: str) -> bool:
        """Does the file test ``<...>.name is None`` / ``is not None`` anywhere?"""
        if name not in self._none_checked:
            # From the literal name: a pattern starting with \b is tried at every position.
            pattern = re.compile(rf"{re.escape(name)}\s+is\s+(?:not\s+)?None\b")
            self._none_checked[name] = next(word_matches(pattern, self.text), None) is not None
        return self._none_checked[name]

    def char_offset(self, lineno: int, col: int) -> int:
        """Character offset into the text of a (1-based line, character column) position."""
        if self._starts is None:
            self._starts = list(accumulate(map(len, self.lines), initial=0))
        return self._starts[lineno - 1] + col


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")

# Characters str.splitlines() breaks at but Python's tokenizer does not.
_ODD_BREAKS = re.compile("[\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
_ASCII_ODD_BREAKS = (
    "\v\f\x1c\x1d\x1e"  # of those, the ones ASCII text can hold (found by str.find: faster)
)


def split_lines(text: str) -> list[str]:
    """Physical lines with their endings, split only where Python's tokenizer splits."""
    odd = (
        any(c in text for c in _ASCII_ODD_BREAKS)
        if text.isascii()
        else _ODD_BREAKS.search(text) is not None
    )
    if not odd:
        return text.splitlines(keepends=True)  # same result, much faster
    return _LINE.findall(text)


def word_char(ch: str) -> bool:
    """A character ``\\w`` matches (``re``'s word characters: letters, digits, ``_``)."""
    return ch.isalnum() or ch == "_"


def word_matches(pattern: re.Pattern, text: str):
    """``pattern``'s matches in ``text`` that start a word, as ``\\b`` + ``pattern`` finds them
    (``pattern`` starts with a word character): a match inside a word is passed over and
    the search goes on from the next character, not from the match's end."""
    at = 0
    while True:
        m = pattern.search(text, at)
        if m is None:
            return
        if m.start() and word_char(text[m.start() - 1]):
            at = m.start() + 1
            continue
        yield m
        at = m.end()
