"""How file names (and other text from outside) are shown in a report.

A file name that is not valid UTF-8 reaches Python with surrogate escapes, which a
strict output stream refuses and JSON would carry as lone surrogates: such bytes are
shown as ``\\xNN``. In a format of one line per finding (or per error), a newline or
another control character in a name would break the line: those are shown as ``\\n``,
``\\r``, ``\\t`` or ``\\xNN``.
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def printable(text: str) -> str:
    """``text`` with each surrogate-escaped byte as ``\\xNN``; anything else as it is."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def one_line(text: str) -> str:
    """:func:`printable`, with control characters escaped too: never more than one line."""
    return _CONTROL.sub(
        lambda m: _NAMED.get(m.group(), f"\\x{ord(m.group()):02x}"), printable(text)
    )


def printable_strings(value):
    """A JSON-ready value with every string in it :func:`printable` (keys included)."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable_strings(k): printable_strings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [printable_strings(v) for v in value]
    return value
