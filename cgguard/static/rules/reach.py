"""Rule reach: what the flow needs beyond single names.

Pure helpers on libcst nodes (and Python's tree of a file's imports), used by
:mod:`cgguard.static.rules.flow` and :mod:`cgguard.static.rules.engine`:

- *count kinds*: whether an expression is a request count (``max_num_reqs``,
  ``max_num_seqs``, on any receiver, alone or combined with constants) or a token
  count (``max_num_tokens``, ``max_num_batched_tokens``, ``max_model_len``). A
  ``min()`` bounds a capture size only with a request count in it; a ``min()`` of
  capture sizes and token counts is still one block per token.
- *unpacking*: which value each target of ``a, b = x, y`` receives.
- *the min() fix*: the request count inserted as the first argument of a ``min()``.
- *imports*: the aliases a file's imports bind (a base class imported under another
  name); the class facts themselves are read from the tree by
  :mod:`cgguard.static.rules.classfacts`.
- *helpers*: functions of the module and methods of a class that a call resolves
  to, and every reference to them (a helper's result is a block count only when
  every use of it is one).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import libcst as cst

from cgguard.static.rules import nodes
from cgguard.static.rules.model import PASSTHROUGH_CALLS as _PASSTHROUGH
from cgguard.static.rules.model import REQUEST_COUNT_NAMES, TOKEN_COUNT_NAMES

REQUESTS = "requests"
TOKENS = "tokens"

_OPAQUE = "opaque"


# ---- count kinds ----------------------------------------------------------------


def count_kind(
    node: cst.BaseExpression, local: Callable[[str], str | None] = lambda key: None
) -> str | None:
    """``REQUESTS``, ``TOKENS`` or None for an expression.

    An expression is a request count when its leaves are request counts (any
    receiver, or locals ``local`` says hold one), constants and other plain names,
    with at least one request count and no token count; a token count likewise.
    Calls other than magnitude-keeping ones (``int``, ``cdiv``...), subscripts and
    anything else make the kind unknown (None).
    """
    kinds: set[str] = set()
    _leaf_kinds(node, local, kinds, 0)
    if _OPAQUE in kinds:
        return None
    if kinds == {REQUESTS}:
        return REQUESTS
    if kinds == {TOKENS}:
        return TOKENS
    return None


def _leaf_kinds(node: cst.BaseExpression, local, kinds: set[str], depth: int) -> None:
    if depth > 50:
        kinds.add(_OPAQUE)
        return
    if isinstance(node, (cst.Name, cst.Attribute)):
        key = nodes.dotted(node)
        kind = local(key) if key is not None else None
        if kind is None:
            name = nodes.last_name(node)
            if name in REQUEST_COUNT_NAMES:
                kind = REQUESTS
            elif name in TOKEN_COUNT_NAMES:
                kind = TOKENS
        if kind is None and key is None:
            kind = _OPAQUE  # (a call).attr and the like
        if kind is not None:
            kinds.add(kind)
        return
    if isinstance(node, (cst.Integer, cst.Float)):
        return
    if isinstance(node, cst.BinaryOperation):
        _leaf_kinds(node.left, local, kinds, depth + 1)
        _leaf_kinds(node.right, local, kinds, depth + 1)
        return
    if isinstance(node, cst.UnaryOperation):
        _leaf_kinds(node.expression, local, kinds, depth + 1)
        return
    if isinstance(node, cst.Call) and nodes.last_name(node.func) in _PASSTHROUGH:
        args = nodes.positional(node)
        if args and not args[0].star:
            _leaf_kinds(args[0].value, local, kinds, depth + 1)
            return
    kinds.add(_OPAQUE)


# ---- unpacking --------------------------------------------------------------------


def unpack_pairs(
    target: cst.BaseExpression, value: cst.BaseExpression | None
) -> list[tuple[cst.BaseExpression, cst.BaseExpression | None]]:
    """(target, value) for each name a target receives; value None where unknown.

    ``a, (b, c) = x, (y, z)`` pairs a-x, b-y, c-z; ``a, b = f()`` and starred
    targets leave the values unknown.
    """
    if not isinstance(target, (cst.Tuple, cst.List)):
        return [(target, value)]
    elements = target.elements
    if (
        isinstance(value, (cst.Tuple, cst.List))
        and len(value.elements) == len(elements)
        and not any(isinstance(e, cst.StarredElement) for e in (*elements, *value.elements))
    ):
        out: list[tuple[cst.BaseExpression, cst.BaseExpression | None]] = []
        for t, v in zip(elements, value.elements):
            out.extend(unpack_pairs(t.value, v.value))
        return out
    out = []
    for t in elements:
        out.extend(unpack_pairs(t.value, None))
    return out


def element_parent(value: cst.BaseExpression, node: cst.BaseExpression) -> cst.CSTNode | None:
    """The Tuple/List literal directly holding ``node`` among (nested) elements of ``value``."""
    if not isinstance(value, (cst.Tuple, cst.List)):
        return None
    for e in value.elements:
        if e.value is node:
            return value
        found = element_parent(e.value, node)
        if found is not None:
            return found
    return None


# ---- the min() fix ----------------------------------------------------------------


def with_first_arg(call: cst.Call, request: str) -> cst.Call:
    """``min(a, b)`` -> ``min(<request>, a, b)``, every other byte kept."""
    first = cst.Arg(
        value=cst.parse_expression(request),
        comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")),
    )
    args = list(call.args)
    if args and isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace):
        # min(\n    a,\n    b\n): the request goes on its own line, laid out like a.
        first = first.with_changes(comma=cst.Comma(whitespace_after=call.whitespace_before_args))
        return call.with_changes(args=[first, *args])
    return call.with_changes(args=[first, *args])


def is_min_call(node: cst.CSTNode) -> bool:
    return (
        isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "min"
    )


# ---- imports ---------------------------------------------------------------------------


def import_aliases(tree) -> dict[str, str]:
    """``import a.b as m`` / ``from a.b import C as D``: each alias -> the dotted name it binds
    (Python's tree of the file; imports anywhere in it)."""
    import ast

    from cgguard.static.rules.pytree import statements

    out: dict[str, str] = {}
    for node in statements(tree):  # an import is a statement
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.asname:
                    out[alias.asname] = f"{node.module or ''}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    out[alias.asname] = alias.name
    return out


# ---- helpers: functions of the module and methods of a class --------------------------


@dataclass(eq=False)
class Owner:
    """Where a function lives: the module (``cls`` None) or a class's body."""

    func: cst.FunctionDef
    cls: cst.ClassDef | None

    @property
    def name(self) -> str:
        return self.func.name.value

    @property
    def is_method(self) -> bool:
        return self.cls is not None

    @property
    def decorators(self) -> frozenset[str]:
        return frozenset(nodes.last_name(d.decorator) or "" for d in self.func.decorators)

    @property
    def is_property(self) -> bool:
        return self.is_method and bool(self.decorators & {"property", "cached_property"})

    @property
    def implicit_first(self) -> bool:
        """Its first parameter is the object or class (``self``/``cls``), not an argument."""
        return self.is_method and "staticmethod" not in self.decorators

    def params(self) -> list[str]:
        p = self.func.params
        return [a.name.value for a in (*p.posonly_params, *p.params)]

    def kwonly(self) -> list[str]:
        return [a.name.value for a in self.func.params.kwonly_params]


@dataclass
class ModuleDefs:
    """The module's functions and each class's methods (direct definitions only)."""

    functions: dict[str, cst.FunctionDef] = field(default_factory=dict)
    methods: dict[int, dict[str, cst.FunctionDef]] = field(default_factory=dict)  # id(class) ->
    classes: list[cst.ClassDef] = field(default_factory=list)

    @classmethod
    def of(cls, module: cst.Module) -> ModuleDefs:
        defs = cls()
        for stmt in _block_stmts(module.body):
            if isinstance(stmt, cst.FunctionDef):
                defs.functions[stmt.name.value] = stmt
            elif isinstance(stmt, cst.ClassDef):
                defs.classes.append(stmt)
                methods = {
                    s.name.value: s
                    for s in _block_stmts(stmt.body.body)
                    if isinstance(s, cst.FunctionDef)
                }
                defs.methods[id(stmt)] = methods
        return defs

    def owners(self) -> Iterator[Owner]:
        for f in self.functions.values():
            yield Owner(f, None)
        for c in self.classes:
            for f in self.methods[id(c)].values():
                yield Owner(f, c)

    def resolve(self, call: cst.Call, cls: cst.ClassDef | None) -> cst.FunctionDef | None:
        """The helper a call in a method of ``cls`` (or a module function) calls.

        ``name(...)``: the module's function; in a method, ``self.name(...)``,
        ``cls.name(...)`` and ``type(self).name(...)``: ``cls``'s own method;
        ``Klass.name(...)``: the method of the module's class ``Klass``. A property
        is read, not called: :meth:`resolve_read`.
        """
        func = call.func
        if isinstance(func, cst.Name):
            return self.functions.get(func.value)
        if not isinstance(func, cst.Attribute):
            return None
        found = self._method(func.value, func.attr.value, cls)
        return None if found is None or Owner(found, cls).is_property else found

    def resolve_read(self, node: cst.Attribute, cls: cst.ClassDef | None) -> cst.FunctionDef | None:
        """The property of ``cls`` that ``self.name`` reads."""
        if cls is None or not (isinstance(node.value, cst.Name) and node.value.value == "self"):
            return None
        found = self.methods.get(id(cls), {}).get(node.attr.value)
        return found if found is not None and Owner(found, cls).is_property else None

    def _method(self, receiver: cst.BaseExpression, name: str, cls: cst.ClassDef | None):
        if isinstance(receiver, cst.Name) and receiver.value in ("self", "cls") and cls is not None:
            return self.methods.get(id(cls), {}).get(name)
        if (
            isinstance(receiver, cst.Call)
            and nodes.last_name(receiver.func) == "type"
            and cls is not None
        ):
            return self.methods.get(id(cls), {}).get(name)
        if isinstance(receiver, cst.Name):
            for klass in self.classes:
                if klass.name.value == receiver.value:
                    return self.methods.get(id(klass), {}).get(name)
        return None

    def class_of(self, func: cst.FunctionDef) -> cst.ClassDef | None:
        for klass in self.classes:
            if any(f is func for f in self.methods[id(klass)].values()):
                return klass
        return None


def _block_stmts(body: Iterable[cst.CSTNode]) -> Iterator[cst.CSTNode]:
    """Statements of a block, looking into ``if``/``try`` blocks at the same level."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, cst.If):
            yield from _block_stmts(stmt.body.body)
            orelse = stmt.orelse
            while isinstance(orelse, cst.If):
                yield from _block_stmts(orelse.body.body)
                orelse = orelse.orelse
            if orelse is not None:
                yield from _block_stmts(orelse.body.body)
        elif isinstance(stmt, (cst.Try, cst.TryStar)):
            yield from _block_stmts(stmt.body.body)
            for h in stmt.handlers:
                yield from _block_stmts(h.body.body)


def references(module: cst.Module, names: set[str]) -> list[cst.CSTNode]:
    """Every Name or ``.attr`` in the module spelling one of ``names`` read (def names,
    assignment targets excluded)."""
    out: list[cst.CSTNode] = []
    # Names that are no reference: a def's or class's own name, a parameter, a keyword
    # argument, an assignment target, and the attribute name of ``x.attr`` (the
    # Attribute itself counts).
    skip: set[int] = set()
    for node in nodes.walk(module):
        if id(node) in skip:
            if isinstance(node, cst.Attribute):
                skip.add(id(node.attr))
            continue
        if isinstance(node, (cst.Import, cst.ImportFrom)):
            skip.update(id(sub) for sub in nodes.walk(node))  # names an import binds: no use
            continue
        if isinstance(node, (cst.AssignTarget, cst.AnnAssign)):
            skip.add(id(node.target))
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Param)):
            skip.add(id(node.name))
        elif isinstance(node, cst.Arg) and node.keyword is not None:
            skip.add(id(node.keyword))
        elif isinstance(node, cst.Attribute):
            skip.add(id(node.attr))
            if node.attr.value in names:
                out.append(node)
        elif isinstance(node, cst.Name) and node.value in names:
            out.append(node)
    return out


def call_argument(call: cst.Call, owner: Owner, param: str) -> cst.BaseExpression | None:
    """The expression a call passes for ``param`` of ``owner``'s function."""
    for a in call.args:
        if a.keyword is not None and a.keyword.value == param:
            return a.value
    params = owner.params()
    if param not in params:
        return None
    index = params.index(param) - (1 if owner.implicit_first else 0)
    positional = nodes.positional(call)
    if 0 <= index < len(positional) and not any(a.star for a in positional[: index + 1]):
        return positional[index].value
    return None
