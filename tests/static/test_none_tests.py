"""Which names a file tests for None (a capture size that may be None makes the fix unsafe):
read back from each ``None``, as the pattern ``\\b(\\w+)\\s+is\\s+(?:not\\s+)?None\\b`` reads them."""

from __future__ import annotations

import re

import pytest

from cgguard.static.rules.cgg001 import names_tested_for_none

PATTERN = re.compile(r"\b(\w+)\s+is\s+(?:not\s+)?None\b")

TEXTS = [
    "x is None",
    "self.cc.max_cudagraph_capture_size is not None",
    "a  is\n  None",
    "(x) is None",
    "x is Nonesuch",
    "x is not  None",
    "if y is None:",
    "x isNone",
    "xis None",
    "x is notNone",
    "x is\tnot\nNone",
    "x is knot None",
    "this None",
    "is None",
    "None",
    "",
    "a is None and b is not None or c == None",
    " None",
    "s None",
    "not None",
    " not None",
    "is not None",
]


@pytest.mark.parametrize("text", TEXTS)
def test_the_names_tested_for_none_are_the_patterns(text):
    assert names_tested_for_none(text) == frozenset(PATTERN.findall(text))


def test_a_large_file_gives_the_same_names():
    text = "".join(f"    if self.value_{i} is not None:\n        pass\n" for i in range(2000))
    assert names_tested_for_none(text) == frozenset(PATTERN.findall(text))
    assert len(names_tested_for_none(text)) == 2000
