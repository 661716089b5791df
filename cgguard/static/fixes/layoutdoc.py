"""A small document printer with the semantics of ruff's formatter IR.

Why a printer of our own: a fix that makes a statement too long is laid out the way
``ruff format`` lays it out, and ruff decides that layout with a Prettier-style
document (groups that print flat when they fit, soft line breaks, conditional
content keyed to another group's mode). The static half may not depend on ruff,
so :mod:`cgguard.static.fixes.layout` builds the same documents for the Python it
rewrites and this module prints them. Only the elements that layout needs exist.

Modes: ``FLAT`` (soft breaks print nothing or a space) and ``BREAK`` (they print a
newline at the current indentation).
"""

from __future__ import annotations

from dataclasses import dataclass, field

FLAT = "flat"
BREAK = "break"

SOFT = "soft"  # nothing when flat
SOFT_SPACE = "soft_space"  # a space when flat
HARD = "hard"  # always a newline


@dataclass
class Text:
    text: str


@dataclass
class Line:
    kind: str


@dataclass
class Group:
    items: list
    gid: int | None = None
    expand: bool = False


@dataclass
class CondGroup:
    """A group only while group ``cond`` is broken; otherwise its items print in place."""

    items: list
    cond: int
    expand: bool = False


@dataclass
class Indent:
    items: list


@dataclass
class IndentIfBreaks:
    items: list
    gid: int


@dataclass
class IfBreaks:
    """``items`` only when group ``gid`` (the enclosing group when None) breaks;
    with ``flat`` True, only when it does not."""

    items: list
    gid: int | None = None
    flat: bool = False


@dataclass
class FitsExpanded:
    """Content measured as if expanded while group ``cond`` prints flat (ruff's
    ``fits_expanded``): a bracketed part that may split without the enclosing
    optional parentheses appearing."""

    items: list
    cond: int | None = None
    propagate: bool = False  # something inside must break


@dataclass
class LineSuffix:
    """A trailing comment: printed before the next newline, its width counted."""

    text: str
    reserved: int


Doc = (
    Text
    | Line
    | Group
    | CondGroup
    | Indent
    | IndentIfBreaks
    | IfBreaks
    | FitsExpanded
    | LineSuffix
    | list
)


@dataclass
class _Cmd:
    indent: str
    mode: str
    doc: Doc
    measure_all: bool = False  # inside fits-expanded content while measuring


@dataclass
class Printer:
    width: int
    unit: str  # one level of indentation
    out: list = field(default_factory=list)
    col: int = 0
    modes: dict = field(default_factory=dict)
    suffixes: list = field(default_factory=list)
    pending: str | None = None  # indentation to write before the next text

    @staticmethod
    def text_width(text: str) -> int:
        return len(text.expandtabs(4))

    def print(self, doc: Doc, indent: str, col: int) -> str:
        """Print ``doc`` starting at column ``col`` (the text before it is not ours)."""
        self.col = col
        stack: list[_Cmd] = [_Cmd(indent, BREAK, doc)]
        measured = False  # a parent group already measured that everything fits
        while stack:
            cmd = stack.pop()
            doc = cmd.doc
            if isinstance(doc, list):
                stack.extend(_Cmd(cmd.indent, cmd.mode, d) for d in reversed(doc))
            elif isinstance(doc, Text):
                self._write(doc.text)
            elif isinstance(doc, Line):
                if cmd.mode == FLAT and doc.kind != HARD:
                    if doc.kind == SOFT_SPACE:
                        self._write(" ")
                else:
                    self._newline(cmd.indent)
                    measured = False
            elif isinstance(doc, (Group, CondGroup)):
                if isinstance(doc, CondGroup) and self.modes.get(doc.cond, FLAT) != BREAK:
                    stack.append(_Cmd(cmd.indent, cmd.mode, doc.items))
                    continue
                expand = doc.expand
                gid = doc.gid if isinstance(doc, Group) else None
                if expand:
                    mode = BREAK
                elif cmd.mode == FLAT and measured:
                    mode = FLAT
                else:
                    if gid is not None:
                        self.modes[gid] = FLAT
                    mode = FLAT if self._fits(_Cmd(cmd.indent, FLAT, doc.items), stack) else BREAK
                    measured = mode == FLAT
                if gid is not None:
                    self.modes[gid] = mode
                stack.append(_Cmd(cmd.indent, mode, doc.items))
            elif isinstance(doc, Indent):
                stack.append(_Cmd(cmd.indent + self.unit, cmd.mode, doc.items))
            elif isinstance(doc, IndentIfBreaks):
                extra = self.unit if self.modes.get(doc.gid) == BREAK else ""
                stack.append(_Cmd(cmd.indent + extra, cmd.mode, doc.items))
            elif isinstance(doc, IfBreaks):
                mode = cmd.mode if doc.gid is None else self.modes.get(doc.gid, FLAT)
                if (mode == BREAK) != doc.flat:
                    stack.append(_Cmd(cmd.indent, cmd.mode, doc.items))
            elif isinstance(doc, FitsExpanded):
                if doc.cond is None or self.modes.get(doc.cond) == FLAT:
                    measured = False
                stack.append(_Cmd(cmd.indent, cmd.mode, doc.items))
            elif isinstance(doc, LineSuffix):
                self.suffixes.append(doc.text)
            else:  # pragma: no cover - a document the layout never builds
                raise TypeError(f"unknown document element {doc!r}")
        self._flush_suffixes()
        return "".join(self.out)

    def _write(self, text: str) -> None:
        if self.pending is not None:
            self.out.append(self.pending)
            self.col = self.text_width(self.pending)
            self.pending = None
        self.out.append(text)
        self.col += self.text_width(text)

    def _flush_suffixes(self) -> None:
        for text in self.suffixes:
            self.out.append(text)
            self.col += self.text_width(text)
        self.suffixes = []

    def _newline(self, indent: str) -> None:
        self._flush_suffixes()
        self.out.append("\n")
        self.pending = indent
        self.col = 0

    def _fits(self, first: _Cmd, rest: list[_Cmd]) -> bool:
        """Does ``first`` fit on the current line, followed by the rest up to its
        next line break (ruff's ``fits`` in first-line mode)?"""
        col = self.col if self.pending is None else self.text_width(self.pending)
        modes = dict(self.modes)
        todo = [first]
        rest_i = len(rest)
        while True:
            if not todo:
                if rest_i == 0:
                    return True
                rest_i -= 1
                todo.append(rest[rest_i])
            cmd = todo.pop()
            doc = cmd.doc
            if isinstance(doc, list):
                todo.extend(_Cmd(cmd.indent, cmd.mode, d, cmd.measure_all) for d in reversed(doc))
            elif isinstance(doc, Text):
                col += self.text_width(doc.text)
                if col > self.width and not cmd.measure_all:
                    return False
            elif isinstance(doc, Line):
                if cmd.mode == FLAT and doc.kind != HARD:
                    if doc.kind == SOFT_SPACE:
                        col += 1
                        if col > self.width and not cmd.measure_all:
                            return False
                elif cmd.measure_all:
                    col = self.text_width(cmd.indent)
                else:
                    return True
            elif isinstance(doc, (Group, CondGroup)):
                if isinstance(doc, CondGroup) and modes.get(doc.cond, FLAT) != BREAK:
                    todo.append(_Cmd(cmd.indent, cmd.mode, doc.items, cmd.measure_all))
                    continue
                mode = BREAK if doc.expand else cmd.mode
                if isinstance(doc, Group) and doc.gid is not None:
                    modes[doc.gid] = mode
                todo.append(_Cmd(cmd.indent, mode, doc.items, cmd.measure_all))
            elif isinstance(doc, Indent):
                todo.append(_Cmd(cmd.indent + self.unit, cmd.mode, doc.items, cmd.measure_all))
            elif isinstance(doc, IndentIfBreaks):
                extra = self.unit if modes.get(doc.gid) == BREAK else ""
                todo.append(_Cmd(cmd.indent + extra, cmd.mode, doc.items, cmd.measure_all))
            elif isinstance(doc, IfBreaks):
                mode = cmd.mode if doc.gid is None else modes.get(doc.gid, FLAT)
                if (mode == BREAK) != doc.flat:
                    todo.append(_Cmd(cmd.indent, cmd.mode, doc.items, cmd.measure_all))
            elif isinstance(doc, FitsExpanded):
                if cmd.mode == FLAT and doc.cond is not None and modes.get(doc.cond) == FLAT:
                    todo.append(_Cmd(cmd.indent, BREAK, doc.items, True))
                elif cmd.mode == FLAT and doc.propagate:
                    return False
                else:
                    todo.append(_Cmd(cmd.indent, cmd.mode, doc.items, cmd.measure_all))
            elif isinstance(doc, LineSuffix):
                col += doc.reserved
                if col > self.width:
                    return False
