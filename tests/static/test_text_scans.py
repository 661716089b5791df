"""Scans over a file's text that replaced slow patterns equal the patterns they replaced.

A pattern starting with ``\\b`` or an alternation is tried at every position of a file
(7 ms for ``\\bdef`` on vLLM's model runner); the scans start from a literal instead.
Each is checked here against the pattern it replaced, on generated text.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from itertools import accumulate

from hypothesis import given, settings
from hypothesis import strategies as st

from cgguard.static.driver import screen, sourcetext
from cgguard.static.driver.helperscreen import defined_names
from cgguard.static.driver.prefilter import TEXT_NEEDLES

PIECES = [
    "def", "def ", "def\t", "async def ", "undef ", "_def ", "édef ", "f", "num_blocks", "xnum_blocks", " is ",
    " is not ", "None", "Nonex", "\n", "\r\n", "\r", "\x0c", "\x0b", "\x1c", "\u2028", "\x85", " ", "(", ".",
    *TEXT_NEEDLES,
]
texts = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=2)), max_size=12).map("".join)


@settings(max_examples=500, deadline=None)
@given(texts)
def test_defined_names_equal_the_pattern(text: str) -> None:
    assert defined_names(text) == set(re.findall(r"\bdef[ \t]+(\w+)", text))


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


@settings(max_examples=500, deadline=None)
@given(texts)
def test_needle_lines_equal_the_alternation(text: str) -> None:
    lines = sourcetext.split_lines(text)
    starts = list(accumulate(map(len, lines), initial=0))
    expected: list[int] = []
    for m in re.finditer("|".join(map(re.escape, TEXT_NEEDLES)), text):
        n = bisect_right(starts, m.start())
        if not expected or expected[-1] != n:
            expected.append(n)
    assert screen._needle_lines(text, lines) == expected


def test_examples() -> None:
    assert defined_names("def f(): pass\nasync def g(): pass\nundef h\nx_def i\n") == {"f", "g"}
    text = "if xnum_blocks is None: pass\n"
    assert not sourcetext.SourceText(text, sourcetext.split_lines(text)).compared_with_none("num_blocks")
    text = "if self.num_blocks is not None: pass\n"
    assert sourcetext.SourceText(text, sourcetext.split_lines(text)).compared_with_none("num_blocks")
