"""What a module's text shows without lowering it: whole words, the attributes a function may
assign on ``self``, the names a module may bind, the calls made through a name. Each answer is
a superset of what the lowered form would give: a text test only skips work that cannot
change an answer."""

from __future__ import annotations

import re

from cgguard.static.core import ir
from cgguard.static.core.outlines import holds_word
from cgguard.static.core.patterns import is_name_char

__all__ = [
    "assigned_attrs_text",
    "attrs_assigned_from",
    "called_through",
    "holds_word",
    "may_bind",
    "mentions",
    "mentions_text",
    "span_text",
]

_SELF_ATTR = re.compile(r"\bself\.(\w+)")
_ASSIGN = re.compile(r"(?<![=!<>])=(?!=)")


# ``setattr(self, "name", value)`` (also ``object.__setattr__``) assigns ``self.name``.
_SETATTR_SELF = re.compile(r"""setattr(?:__)?\(\s*self\s*,\s*["'](\w+)["']""")


def assigned_attrs_text(lines: list[str], span: ir.Span) -> set[str]:
    """Attributes a function's text may assign on ``self``: every ``self.x`` left of an
    ``=`` on its line, and every ``setattr(self, "x", ...)`` (a superset: strings,
    comparisons in calls and all)."""
    found: set[str] = set()
    for line in lines[span.line - 1 : span.end_line]:
        if "self" not in line:
            continue
        m = _ASSIGN.search(line)
        if m is not None:
            found.update(_SELF_ATTR.findall(line, 0, m.start()))
        if "setattr" in line:
            found.update(_SETATTR_SELF.findall(line))
    return found


def attrs_assigned_from(lines: list[str], span: ir.Span, words: set[str]) -> set[str]:
    """Attributes of ``self`` the text assigns on a line whose right side names a word."""
    found: set[str] = set()
    for line in lines[span.line - 1 : span.end_line]:
        if "self" not in line:
            continue
        m = _ASSIGN.search(line)
        right = "" if m is None else line[m.end() :]
        if m is not None and any(w in right and holds_word(right, w) for w in words):
            found.update(_SELF_ATTR.findall(line, 0, m.start()))
        if "setattr" in line:
            for call in _SETATTR_SELF.finditer(line):
                after = line[call.end() :]
                if any(w in after and holds_word(after, w) for w in words):
                    found.add(call.group(1))
    return found


_AFTER_DEF = re.compile(r"(?:^|[^\w])def$")


def may_bind(text: str, name: str, def_only: bool = False) -> bool:
    """Does ``text`` hold ``name`` as a word after ``def``, or (unless ``def_only``) before
    ``=`` (an assignment, such as a ``partial``)? With the names its import statements list,
    a superset of the module-level functions, partials and imports that bind it."""
    at = text.find(name)
    while at != -1:
        end = at + len(name)
        if (at == 0 or not is_name_char(text[at - 1])) and (
            end == len(text) or not is_name_char(text[end])
        ):
            if _AFTER_DEF.search(text[max(0, at - 64) : at].rstrip(" \t")):
                return True
            after = text[end : end + 64].lstrip(" \t")
            if not def_only and after.startswith("=") and not after.startswith("=="):
                return True
        at = text.find(name, end)
    return False


_CALLED = re.compile(r"(\w+)\s*\(")


def called_through(text: str, name: str) -> set[str]:
    """The names ``text`` calls as ``name.<attr>(...)``."""
    found: set[str] = set()
    needle = name + "."
    at = text.find(needle)
    while at != -1:
        end = at + len(needle)
        if at == 0 or not (is_name_char(text[at - 1]) or text[at - 1] == "."):
            m = _CALLED.match(text, end)
            if m is not None:
                found.add(m.group(1))
        at = text.find(needle, end)
    return found


def mentions(lines: list[str], span: ir.Span, words: set[str]) -> bool:
    """Does the source text at ``span`` (whole lines) hold one of ``words`` as a word?"""
    return mentions_text(span_text(lines, span), words)


def span_text(lines: list[str], span: ir.Span) -> str:
    """The source text at ``span``, whole lines."""
    return "".join(lines[span.line - 1 : span.end_line])


def mentions_text(text: str, words: set[str]) -> bool:
    """Does ``text`` hold one of ``words`` as a word?"""
    return any(w in text and holds_word(text, w) for w in words)
