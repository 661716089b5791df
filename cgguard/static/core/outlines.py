"""A module's outline: what it imports and which classes it defines on which bases, read from
its text without Python's parser, so a base class is followed through modules that are never
parsed.

A class's members carry a count only where a module that names a source defines them (a
method of another module cannot read one but through its own flow, which starts at a
source). So the members a subclass takes from its bases (``Lending.imported_words``) come
from the classes of modules naming a source among its bases and theirs. The modules between
are only looked through: their import statements and class headers say where a base is
defined, and the outline holds exactly that.

The outline is a superset of what the parsed module binds: every import statement of the text
(a function's own, one under ``if``), every class header at any depth, two bindings of one
name both kept. A statement cut from a string (``from docs import this``) adds a binding
that leads nowhere. Following it reaches every class a base resolves to through the core's
own lookup (local classes, then imports, a dotted ``module.Klass``), and a few more
(``*`` imports, re-exports behind a dotted name): a few words more, never one less.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from cgguard.static.core.modulefiles import ModuleFiles, import_spans
from cgguard.static.core.patterns import is_name_char

# Import specs as the core keeps them: (module, name in it), or (module, None) for the
# module itself.
Spec = tuple[str, "str | None"]

_CLASS = re.compile(r"class[ \t]+([^\W\d]\w*)[ \t]*([(:])")
_BRACKET = re.compile(r"[()\[\]{}]")
_COMMENT = re.compile(r"#[^\n]*")
_DOTTED = re.compile(r"[^\W\d]\w*(?:[ \t]*\.[ \t]*[^\W\d]\w*)*\Z")
_NAME = re.compile(r"[^\W\d]\w*\Z")
_FROM = re.compile(r"from[ \t]+(\.*)[ \t]*((?:[^\W\d]\w*(?:[ \t]*\.[ \t]*[^\W\d]\w*)*)?)\Z")
# How many modules a base class is followed through (as the core's class_named).
MAX_DEPTH = 8
# How far a class header's bases may run (longer: it is followed no further).
MAX_HEADER = 4096


@dataclass
class Outline:
    """What a module binds: each local name's imports, each class's bases as spelled (two
    classes of one name: both lists), the modules it imports ``*`` from, and whether its
    text names a source."""

    names_source: bool
    imports: dict[str, list[Spec]] = field(default_factory=dict)
    # The text with its import statements blanked (only where asked: see outline())
    code: str | None = None
    classes: dict[str, list[str]] = field(default_factory=dict)
    stars: list[str] = field(default_factory=list)


def outline(
    text: str,
    dotted: str | None,
    is_package: bool,
    names_source: bool,
    code: bool = False,
    tops: frozenset[str] | None = None,
) -> Outline:
    """The outline of ``text``, the module named ``dotted`` (None: outside the project, where
    a relative import leads nowhere); ``is_package``: an ``__init__.py``. ``code``: keep the
    text with its import statements blanked too (where a name is used, not bound). ``tops``:
    the names the project's absolute imports start with (None: any); an import of anything
    else (the standard library, a dependency) binds nothing the outline follows."""
    found = Outline(names_source)
    parts: list[str] = []
    last = 0
    for start, end, head, rest in import_spans(text):
        if tops is None or _may_name_a_top(head, rest, tops):
            _bind(found, head, rest, dotted, is_package)
        if code and start >= last:
            parts.append(text[last:start])
            parts.append(" ")
            last = end
    if code:
        parts.append(text[last:])
        found.code = "".join(parts)
    at = text.find("class")
    while at != -1:
        line = text.rfind("\n", 0, at) + 1
        match = _CLASS.match(text, at)
        if match is not None and not text[line:at].strip():
            bases = found.classes.setdefault(match.group(1), [])
            close = _closing_paren(text, match.end()) if match.group(2) == "(" else None
            if close is not None:
                bases.extend(_bases(text[match.end() : close]))
        at = text.find("class", at + 5)
    return found


def _may_name_a_top(head: str, rest: str, tops: frozenset[str]) -> bool:
    """Can the import statement name a module of the project: a relative ``from``, a
    ``from`` whose module starts with a top, an ``import`` listing one?"""
    if head:
        module = head[5:].lstrip()
        return module.startswith(".") or module.split(".", 1)[0].strip() in tops
    return any(word in tops for word in re.split(r"[\s,().\\]+", rest))


def _bind(found: Outline, head: str, rest: str, dotted: str | None, is_package: bool) -> None:
    names = _imported(rest)
    if names is None:
        return  # not an import statement of working code (prose in a string)
    if not head:
        for name, asname in names:
            if not _DOTTED.match(name):
                return
            name = _squeeze(name)
            if asname:
                found.imports.setdefault(asname, []).append((name, None))
            else:
                top = name.split(".")[0]
                found.imports.setdefault(top, []).append((top, None))
        return
    match = _FROM.match(head)
    if match is None:
        return
    module = _absolute(dotted, is_package, _squeeze(match.group(2)) or None, len(match.group(1)))
    if module is None:
        return
    for name, asname in names:
        if name == "*":
            found.stars.append(module)
        elif _NAME.match(name):
            found.imports.setdefault(asname or name, []).append((module, name))


def _imported(rest: str) -> list[tuple[str, str | None]] | None:
    """(name, alias) for each name an import statement lists after ``import``, or None
    where what follows is no list of names."""
    if "#" in rest or "\\" in rest or "\n" in rest or "\r" in rest:
        rest = _COMMENT.sub("", rest).replace("\\\n", " ").replace("\\\r\n", " ")
        rest = rest.replace("\n", " ").replace("\r", " ")
    rest = rest.strip().strip("()")
    found: list[tuple[str, str | None]] = []
    for piece in rest.split(","):
        words = piece.split()
        if not words:
            continue  # a trailing comma
        if len(words) == 1:
            found.append((words[0], None))
        elif len(words) == 3 and words[1] == "as" and _NAME.match(words[2]):
            found.append((words[0], words[2]))
        elif len(words) > 1 and "." in piece and all(w == "." or w.strip(".") for w in words):
            found.append(("".join(words), None))  # ``a . b``, spaced
        else:
            return None
    return found or None


def _squeeze(name: str) -> str:
    return "".join(name.split()) if " " in name or "\t" in name else name


def _absolute(dotted: str | None, is_package: bool, module: str | None, level: int) -> str | None:
    """The module a ``from`` import names, a relative one resolved as the core does."""
    if level == 0:
        return module
    if dotted is None:
        return None
    parts = dotted.split(".")
    if not is_package:
        parts = parts[:-1]
    if level - 1 > len(parts):
        return None
    parts = parts[: len(parts) - (level - 1)]
    return ".".join(parts + ([module] if module else []))


def _bases(spelled: str) -> Iterator[str]:
    """The bases a class header's parentheses list that are names or dotted names (the core
    follows no other: a subscript, a call, a keyword, a ``*`` argument)."""
    depth = 0
    piece: list[str] = []
    for part in re.split(r"([()\[\]{},])", _COMMENT.sub("", spelled)):
        if part in ("(", "[", "{"):
            depth += 1
        elif part in (")", "]", "}"):
            depth -= 1
        if part == "," and depth == 0:
            yield from _base("".join(piece))
            piece = []
        else:
            piece.append(part)
    yield from _base("".join(piece))


def _base(piece: str) -> Iterator[str]:
    piece = piece.strip()
    if _DOTTED.match(piece):
        yield _squeeze(piece)


def _closing_paren(text: str, at: int) -> int | None:
    """The index of the ``)`` that closes the ``(`` just before ``at``, or None."""
    depth = 1
    for m in _BRACKET.finditer(text, at, at + MAX_HEADER):
        depth += 1 if m.group() in "([{" else -1
        if depth == 0:
            return m.start()
    return None


class Outlines:
    """The outlines of one project's modules, each read once per run, and the classes of
    modules naming a source that a class derives from."""

    def __init__(self, files: ModuleFiles, source_words: tuple[str, ...]):
        self.files = files
        self.source_words = source_words
        self.outlines: dict[str, Outline | None] = {}
        self.last: tuple[str, str, Outline] | None = None  # see of_text
        # (module file, class name) -> the (module file, class name) of every class it is
        # or derives from, through any module (None: being followed, a cycle)
        self.reached: dict[tuple[str, str], frozenset[tuple[str, str]] | None] = {}

    def of_text(self, path: str, text: str) -> Outline:
        """The outline of ``text``, the module at ``path`` (absolute), with the text its
        import statements left out (``code``). The last one is kept (the core asks again
        for each round of a module's hits)."""
        if self.last is not None and self.last[0] == path and self.last[1] is text:
            return self.last[2]
        found = outline(
            text,
            self.files.dotted_of(path),
            path.endswith("__init__.py"),
            any(w in text for w in self.source_words),
            code=True,
            tops=self.files.tops(),
        )
        self.last = (path, text, found)
        return found

    def forget(self, path: str) -> None:
        """The file at ``path`` changed: its outline, and every class followed through it,
        are read again."""
        self.outlines.pop(path, None)
        self.reached.clear()
        self.last = None

    def of_file(self, path: str) -> Outline | None:
        if path not in self.outlines:
            try:
                with open(path, encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
            except OSError:
                self.outlines[path] = None
            else:
                self.outlines[path] = outline(
                    text,
                    self.files.dotted_of(path),
                    path.endswith("__init__.py"),
                    any(w in text for w in self.source_words),
                    tops=self.files.tops(),
                )
        return self.outlines[path]

    def names_source(self, path: str) -> bool:
        found = self.of_file(path)
        return found is not None and found.names_source

    def bases_of(self, outline: Outline) -> set[tuple[str, str]]:
        """Every class the classes of ``outline`` derive from, at any remove, as (module file,
        class name) where that module defines it."""
        found: set[tuple[str, str]] = set()
        for bases in outline.classes.values():
            for base in bases:
                found |= self._base(outline, base, 0)
        return found

    def _base(self, outline: Outline, spelled: str, depth: int) -> set[tuple[str, str]]:
        """The classes the base ``spelled`` in ``outline`` is or derives from."""
        head, _, rest = spelled.partition(".")
        if not rest:
            return self._named(outline, head, depth)
        found: set[tuple[str, str]] = set()
        # ``module.Klass`` or ``package.module.Klass``, the module bound by an import.
        middle, _, name = rest.rpartition(".")
        for module, attr in outline.imports.get(head, ()):
            base = module if attr is None else f"{module}.{attr}"
            file = self.files.module_file(f"{base}.{middle}" if middle else base)
            if file is not None:
                found |= self._reached(file, name, depth + 1)
        return found

    def _named(self, outline: Outline, name: str, depth: int) -> set[tuple[str, str]]:
        """The classes the name ``name`` in ``outline`` binds are or derive from: a class it
        defines (and its bases), or one it imports."""
        found: set[tuple[str, str]] = set()
        if depth > MAX_DEPTH:
            return found
        for base in outline.classes.get(name, ()):
            found |= self._base(outline, base, depth + 1)
        for module, attr in outline.imports.get(name, ()):
            file = None if attr is None else self.files.module_file(module)
            if file is not None:
                found |= self._reached(file, attr, depth + 1)  # type: ignore[arg-type]
        for module in outline.stars:
            file = self.files.module_file(module)
            if file is not None:
                found |= self._reached(file, name, depth + 1)
        return found

    def _reached(self, path: str, name: str, depth: int) -> set[tuple[str, str]]:
        """What the name ``name`` of the module at ``path`` is or derives from (itself,
        where that module defines a class by that name)."""
        if depth > MAX_DEPTH:
            return set()
        key = (path, name)
        if key in self.reached:
            return set(self.reached[key] or ())  # None: a cycle, nothing more through it
        self.reached[key] = None
        found: set[tuple[str, str]] = set()
        outline = self.of_file(path)
        if outline is not None:
            if name in outline.classes:
                found.add(key)
            found |= self._named(outline, name, depth)
        self.reached[key] = frozenset(found)
        return found


def holds_word(text: str, word: str) -> bool:
    """``word`` whole in ``text``, as the core's walk asks a scope's text (a word ending in
    ``.`` or ``(`` may be followed by anything)."""
    at = text.find(word)
    qualifies = not is_name_char(word[-1])
    while at != -1:
        end = at + len(word)
        if (at == 0 or not is_name_char(text[at - 1])) and (
            qualifies or end == len(text) or not is_name_char(text[end])
        ):
            return True
        at = text.find(word, at + 1)
    return False
