"""Scans over a file's text that replaced slow patterns equal the patterns they replaced.

A pattern starting with ``\\b`` or an alternation is tried at every position of a file
(7 ms for ``\\bdef`` on vLLM's model runner); the scans start from a literal instead.
Each is checked here against the pattern it replaced, on generated text.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from cgguard.static.core.pyast import physical_lines
from cgguard.static.driver.prefilter import TEXT_NEEDLES
from cgguard.static.source import sourcetext

PIECES = [
    "def", "def ", "def\t", "async def ", "undef ", "_def ", "édef ", "f", "num_blocks", "xnum_blocks", " is ",
    " is not ", "None", "Nonex", "\n", "\r\n", "\r", "\x0c", "\x0b", "\x1c", "\u2028", "\x85", " ", "(", ".",
    *TEXT_NEEDLES,
]
texts = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=2)), max_size=12).map("".join)


@settings(max_examples=500, deadline=None)
@given(texts)
def test_none_checks_equal_the_pattern(text: str) -> None:
    lines = sourcetext.split_lines(text)
    found = sourcetext.SourceText(text, lines).compared_with_none("num_blocks")
    assert found == (re.search(r"\bnum_blocks\s+is\s+(not\s+)?None\b", text) is not None)


@settings(max_examples=500, deadline=None)
@given(texts)
def test_lines_split_where_python_splits(text: str) -> None:
    assert sourcetext.split_lines(text) == sourcetext._LINE.findall(text)
    # The core's front end splits them the same way (its spans' lines are Python's).
    assert physical_lines(text) == sourcetext._LINE.findall(text)


def test_examples() -> None:
    text = "if xnum_blocks is None: pass\n"
    assert not sourcetext.SourceText(text, sourcetext.split_lines(text)).compared_with_none("num_blocks")
    text = "if self.num_blocks is not None: pass\n"
    assert sourcetext.SourceText(text, sourcetext.split_lines(text)).compared_with_none("num_blocks")
