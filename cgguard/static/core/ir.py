"""The intermediate form of Python code that the data-flow core reads, and nothing else.

Two front ends lower a file to it: Python's ``ast`` (:mod:`cgguard.static.core.pyast`, for
checking) and libcst (for fixes, Fixit and the codemod). The core never sees either tree, so
both must produce the same form for the same text. :func:`dump` gives a node's structure
without its spans; a test compares both front ends' dumps over every case and vLLM file.

What a front end must produce
-----------------------------
- A :class:`Module` per file: the file's statements in order, each lowered below.
- **Spans.** Every node carries a :class:`Span`: 1-based lines, 0-based columns counted in
  characters (not bytes), end column exclusive: the same as libcst's ``PositionProvider``.
  Parentheses around an expression are not part of its span (also for a parenthesised tuple).
  A statement's span covers the whole statement; a compound one's covers its body too, and
  starts at its keyword (``def``/``class`` after any decorators, ``async`` where present).
- **Statements.** ``a = b = v`` is one :class:`Assign` with two targets; ``a: T = v`` is an
  :class:`Assign` with one target (without a value it is :class:`Other`); ``a += v`` is an
  :class:`AugAssign`. ``elif`` is an :class:`If` inside the ``orelse`` of the first.
  ``async for`` / ``async with`` / ``async def`` set ``is_async``. ``try``/``except*``: a
  :class:`Try`. ``match``: a :class:`Match`, one :class:`Case` per arm (patterns not lowered).
  ``import`` / ``from ... import``: :class:`Import`, one per statement. ``global``, ``nonlocal``,
  ``pass``, ``break``, ``continue``, ``del``, ``assert``, ``raise``, a bare annotation, and
  ``type X = ...``: :class:`Other` holding the expressions they contain, in source order.
- **Expressions.** Names, attributes, subscripts (a slice ``a:b:c`` is an :class:`Opaque`
  with kind ``"slice"`` and its three parts, absent ones left out), calls with
  :class:`Arg` s (``star`` is ``""``, ``"*"`` or ``"**"``; ``keyword`` the keyword's name),
  constants (``str``/``bytes`` with their value after concatenation of adjacent literals,
  ``int``/``float``/``complex``, ``True``/``False``/``None``, ``...``), binary, unary and
  boolean operators (Python's operator text: ``"+"``, ``"not"``, ``"and"``), comparisons
  (operators ``"<"``, ``"is not"``, ``"not in"``...), conditional expressions, tuples, lists,
  sets and dicts (``**m`` in a dict: a key of None), ``*x`` in a display or target
  (:class:`Starred`), ``x := v`` (:class:`NamedExpr`), lambdas, comprehensions
  (:class:`Comprehension`), ``await``/``yield``/``yield from`` (:class:`Opaque`, kinds
  ``"await"``, ``"yield"``, ``"yield from"``), f-strings (:class:`Opaque` kind ``"fstring"``
  with its formatted values' expressions, in order).
- **Functions and classes.** :class:`FunctionDef` with its :class:`Param` s in source order
  (kinds ``posonly``, ``pos``, ``vararg``, ``kwonly``, ``kwarg``) and decorators;
  :class:`ClassDef` with its bases and keywords as :class:`Arg` s.
- Docstrings and other string statements are an :class:`ExprStmt` of a :class:`Const`:
  what a string holds is never lowered as code. Comments are not in the form.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, TypeAlias

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:  # Python 3.10's typing has no dataclass_transform; it only informs type checkers

    def dataclass_transform(**_options: object) -> Callable[[type], type]:
        return lambda cls: cls


# Every node class, in definition order (their constructors are made at the module's end).
_NODE_CLASSES: list[type[_Node]] = []


@dataclass_transform(eq_default=False)
class _Node:
    """A node of the form: built from its fields in order, treated as immutable, compared
    by identity (:func:`dump` compares structure). Constructors are generated at import,
    all at once: as dataclasses, the form's forty classes took longer to import than a
    file takes to check."""

    _fields: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _NODE_CLASSES.append(cls)

    def __repr__(self) -> str:
        inner = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields)
        return f"{type(self).__name__}({inner})"


class Span(NamedTuple):
    """Where a node is: lines 1-based, columns 0-based in characters, end column exclusive."""

    line: int
    col: int
    end_line: int
    end_col: int


# ---- expressions ------------------------------------------------------------------------


class Name(_Node):
    id: str
    span: Span


class Const(_Node):
    value: object  # str, bytes, int, float, complex, bool, None or Ellipsis
    span: Span


class Attribute(_Node):
    value: Expr
    attr: str
    span: Span


class Subscript(_Node):
    value: Expr
    index: Expr  # ``a[i, j]``: a Tuple; ``a[1:2]``: an Opaque of kind "slice"
    span: Span


class Arg(_Node):
    """One argument of a call (or a class's base or keyword)."""

    value: Expr
    keyword: str | None  # ``f(x=1)``: "x"
    star: str  # "", "*" or "**"
    span: Span


class Call(_Node):
    func: Expr
    args: tuple[Arg, ...]  # in source order
    span: Span


class BinOp(_Node):
    op: str  # "+", "-", "*", "@", "/", "//", "%", "**", "<<", ">>", "|", "^", "&"
    left: Expr
    right: Expr
    span: Span


class UnaryOp(_Node):
    op: str  # "-", "+", "~", "not"
    operand: Expr
    span: Span


class BoolOp(_Node):
    op: str  # "and" or "or"; ``a or b or c`` is one BoolOp of three values
    values: tuple[Expr, ...]
    span: Span


class Compare(_Node):
    left: Expr
    ops: tuple[str, ...]  # "==", "!=", "<", "<=", ">", ">=", "is", "is not", "in", "not in"
    comparators: tuple[Expr, ...]
    span: Span


class IfExp(_Node):
    test: Expr
    body: Expr
    orelse: Expr
    span: Span


class Seq(_Node):
    """A tuple, list or set display (also as an assignment target)."""

    kind: str  # "tuple", "list" or "set"
    elts: tuple[Expr, ...]
    span: Span


class Dict(_Node):
    keys: tuple[Expr | None, ...]  # None: ``**values[i]`` splatted into the dict
    values: tuple[Expr, ...]
    span: Span


class Starred(_Node):
    value: Expr
    span: Span


class NamedExpr(_Node):
    target: Name
    value: Expr
    span: Span


class Lambda(_Node):
    params: tuple[Param, ...]
    body: Expr
    span: Span


class CompFor(_Node):
    target: Expr
    iter: Expr
    ifs: tuple[Expr, ...]
    is_async: bool
    span: Span  # from ``for`` (or ``async``) to the end of its last ``if``


class Comprehension(_Node):
    kind: str  # "list", "set", "dict" or "generator"
    elt: Expr  # a dict comprehension's value
    key: Expr | None  # a dict comprehension's key
    generators: tuple[CompFor, ...]
    span: Span


class Opaque(_Node):
    """An expression the core only looks into: its parts, in source order."""

    kind: str  # "slice", "fstring", "await", "yield", "yield from"
    parts: tuple[Expr, ...]
    span: Span


Expr: TypeAlias = (
    Name
    | Const
    | Attribute
    | Subscript
    | Call
    | BinOp
    | UnaryOp
    | BoolOp
    | Compare
    | IfExp
    | Seq
    | Dict
    | Starred
    | NamedExpr
    | Lambda
    | Comprehension
    | Opaque
)

# ---- statements -------------------------------------------------------------------------


class Param(_Node):
    name: str
    kind: str  # "posonly", "pos", "vararg", "kwonly", "kwarg"
    default: Expr | None
    annotation: Expr | None
    span: Span  # the parameter's name (with its annotation and default)


class Assign(_Node):
    targets: tuple[Expr, ...]  # ``a = b = v``: (a, b), left to right
    value: Expr
    annotation: Expr | None
    span: Span


class AugAssign(_Node):
    target: Expr
    op: str  # the binary operator without "=": "+", "*"...
    value: Expr
    span: Span


class ExprStmt(_Node):
    value: Expr
    span: Span


class Return(_Node):
    value: Expr | None
    span: Span


class If(_Node):
    test: Expr
    body: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...]  # ``elif``: one If here
    span: Span


class While(_Node):
    test: Expr
    body: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...]
    span: Span


class For(_Node):
    target: Expr
    iter: Expr
    body: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...]
    is_async: bool
    span: Span


class WithItem(_Node):
    context: Expr
    target: Expr | None
    span: Span  # the context expression through its target


class With(_Node):
    items: tuple[WithItem, ...]
    body: tuple[Stmt, ...]
    is_async: bool
    span: Span


class Handler(_Node):
    type: Expr | None
    name: str | None
    body: tuple[Stmt, ...]
    span: Span


class Try(_Node):
    body: tuple[Stmt, ...]
    handlers: tuple[Handler, ...]
    orelse: tuple[Stmt, ...]
    finalbody: tuple[Stmt, ...]
    span: Span


class Case(_Node):
    guard: Expr | None
    body: tuple[Stmt, ...]
    span: Span


class Match(_Node):
    subject: Expr
    cases: tuple[Case, ...]
    span: Span


class FunctionDef(_Node):
    """A ``def``. A front end may leave ``body`` :class:`Deferred` (lowered when first read
    through :func:`body_of`, :func:`children` or :func:`dump`): most functions of a file are
    never looked into."""

    name: str
    params: tuple[Param, ...]
    body: tuple[Stmt, ...] | Deferred
    decorators: tuple[Expr, ...]
    returns: Expr | None
    is_async: bool
    span: Span


class Deferred:
    """A function body not lowered yet: ``lower()`` lowers it, once."""

    __slots__ = ("_lower", "_value")

    def __init__(self, lower: Callable[[], tuple[Stmt, ...]]):
        self._lower: Callable[[], tuple[Stmt, ...]] | None = lower
        self._value: tuple[Stmt, ...] = ()

    def get(self) -> tuple[Stmt, ...]:
        if self._lower is not None:
            self._value, self._lower = self._lower(), None
        return self._value


def body_of(node: FunctionDef) -> tuple[Stmt, ...]:
    """A function's statements (lowered now where the front end deferred them)."""
    body = node.body
    return body.get() if isinstance(body, Deferred) else body


class ClassDef(_Node):
    name: str
    bases: tuple[Arg, ...]  # positional bases, then ``metaclass=`` and other keywords
    body: tuple[Stmt, ...]
    decorators: tuple[Expr, ...]
    span: Span


class Alias(_Node):
    name: str  # ``import a.b``: "a.b"; ``from m import x``: "x"; ``*`` for a star import
    asname: str | None
    span: Span


class Import(_Node):
    module: str | None  # ``from m import x``: "m"; ``from . import x``: None; ``import a``: None
    names: tuple[Alias, ...]
    level: int  # leading dots of a relative ``from`` import; 0 otherwise
    is_from: bool
    span: Span


class Other(_Node):
    """A statement that assigns nothing the core follows: its expressions, in source order."""

    kind: str  # "pass", "break", "continue", "del", "assert", "raise", "global", ...
    exprs: tuple[Expr, ...]
    span: Span


Stmt: TypeAlias = (
    Assign
    | AugAssign
    | ExprStmt
    | Return
    | If
    | While
    | For
    | With
    | Try
    | Match
    | FunctionDef
    | ClassDef
    | Import
    | Other
)


class Module(_Node):
    body: tuple[Stmt, ...]
    span: Span


Node: TypeAlias = Expr | Stmt | Module | Arg | Param | CompFor | WithItem | Handler | Case | Alias


def is_node(value: object) -> bool:
    """Is ``value`` a node of the form (not a span, a constant or a tuple)?"""
    return isinstance(value, _Node)


def fields_of(node: object) -> tuple[str, ...]:
    """A node's field names, in order (its span last); () for anything else."""
    return node._fields if isinstance(node, _Node) else ()


def dump(node: object) -> object:
    """``node``'s structure without spans, as nested tuples: equal for equal code."""
    if isinstance(node, Deferred):
        node = node.get()
    if isinstance(node, Span) or not isinstance(node, _Node | tuple):
        return node
    if isinstance(node, tuple):
        return tuple(dump(item) for item in node)
    parts: list[object] = [type(node).__name__]
    parts.extend((f, dump(getattr(node, f))) for f in node._fields if f != "span")
    return tuple(parts)


def children(node: object) -> tuple[object, ...]:
    """The nodes directly inside ``node``, in field order (statement bodies included)."""
    names = _CHILD_FIELDS.get(type(node))
    if not names:
        return ()  # not a node, or a node with no field that can hold one (a name, a constant)
    found: list[object] = []
    for name in names:
        value = getattr(node, name)
        kind = type(value)
        if kind is tuple:
            found.extend([v for v in value if type(v) in _CHILD_FIELDS])
        elif kind in _CHILD_FIELDS:
            found.append(value)
        elif kind is Deferred:
            found.extend([v for v in value.get() if type(v) in _CHILD_FIELDS])
    return tuple(found)


def _make_constructors() -> None:
    """One ``__init__`` per node class, from its annotated fields, compiled in one go."""
    source: list[str] = []
    for i, cls in enumerate(_NODE_CLASSES):
        names = tuple(n for n in cls.__dict__.get("__annotations__", {}) if n != "_fields")
        cls._fields = names
        body = "".join(f"    self.{n} = {n}\n" for n in names) or "    pass\n"
        source.append(f"def init_{i}(self, {', '.join(names)}):\n{body}")
    made: dict[str, Any] = {}
    exec(compile("\n".join(source), __file__, "exec"), made)  # noqa: S102 - our own text
    for i, cls in enumerate(_NODE_CLASSES):
        cls.__init__ = made[f"init_{i}"]  # type: ignore[method-assign]


_make_constructors()

# Fields of these types never hold a node: names, operators, kinds and flags, and a
# constant's value (a str, a number, None...: what a literal evaluates to).
_NO_NODE = frozenset({"str", "str | None", "bool", "int", "tuple[str, ...]", "object"})

# Per node class, the fields that may hold nodes (a constant of the form, not a cache):
# children() looks at these only.
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {
    cls: tuple(f for f in cls._fields if f != "span" and cls.__annotations__[f] not in _NO_NODE)
    for cls in _NODE_CLASSES
}
