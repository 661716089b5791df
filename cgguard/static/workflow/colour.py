"""Colour on a terminal, with ruff's switches: the report's paths in bold and codes in red.

Colour is on when the report's stream is a terminal. ``FORCE_COLOR`` (any value but empty)
turns it on anywhere, a pipe or a file included, and wins over ``NO_COLOR``; ``NO_COLOR``
(any value but empty, https://no-color.org) turns it off. An ``--output-file`` and the
machine formats (json, sarif, github) never get colour.
"""

from __future__ import annotations

import os

BOLD = "\x1b[1m"
RED = "\x1b[31m"
RESET = "\x1b[0m"


def wanted(stream) -> bool:
    """Should text written to ``stream`` be coloured?"""
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("NO_COLOR"):
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


class Painter:
    """Wraps text in colour codes, or leaves it as it is (``on`` False)."""

    def __init__(self, on: bool = False) -> None:
        self.on = on

    def path(self, text: str) -> str:
        return f"{BOLD}{text}{RESET}" if self.on else text

    def code(self, text: str) -> str:
        return f"{BOLD}{RED}{text}{RESET}" if self.on else text


PLAIN = Painter()
