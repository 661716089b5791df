"""What a scope's flow asks of the program: the :class:`Resolver` of its calls and reads, and
the :class:`ClassFacts` of the class it is in (the program's are in :mod:`.scope`);
:class:`NoResolver` knows no call."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol

from cgguard.static.core import ir
from cgguard.static.core.taint import Summary


class ClassFacts(Protocol):
    name: str

    def class_names(self) -> Iterator[str]: ...

    @property
    def self_attrs(self) -> frozenset[str]: ...


# What a call hands from its arguments to its result: the callee's name and, per argument,
# a function giving (labels, tuple index or None) for each way its parameter reaches the return.
Passed = tuple[str, list[tuple[ir.Expr, Callable[[], list[tuple[frozenset[str], int | None]]]]]]


class Resolver(Protocol):
    def member(self, node: ir.Call | ir.Attribute) -> Summary | None:
        """The summary of the helper a call calls or the member a read reads."""

    def holds_bound(self, node: ir.Call | ir.Attribute) -> bool:
        """Does the helper a call calls (the property a read reads) return a bound: a count of
        the model's ``bound_label`` (``Model.bound_counts``)?"""

    def passing(self, call: ir.Call) -> Passed | None:
        """What a call hands through from its arguments to its result."""

    def sinking(
        self, call: ir.Call, tainted: Callable[[ir.Expr], bool]
    ) -> list[tuple[ir.Expr, str]]:
        """Arguments of ``call`` (those ``tainted``) that the callee hands to a sink."""

    def define(self, name: str, func: ir.FunctionDef | None) -> None:
        """From here on the scope's ``name`` calls ``func``, a function defined in it (a
        nested ``def``, a lambda as the function returning its body); None: no longer."""

    def dict_entries(
        self, call: ir.Call, tainted: Callable[[ir.Expr], bool]
    ) -> list[tuple[str, ir.Expr]]:
        """(sink key, argument) for each argument of ``call`` (those ``tainted``) that the
        callee returns in a dict under a sink key: the dict is a sink once splatted."""

    def members_filled(
        self, call: ir.Call, tainted: Callable[[ir.Expr], bool]
    ) -> list[tuple[str, ir.Expr]]:
        """(member, argument) for each argument of ``call`` (those ``tainted``) that the
        object it builds keeps as a member with its count: a field of a dataclass or a
        named tuple of the program, or a member its ``__init__`` sets from the parameter."""

    def source_list(self, node: ir.Call | ir.Attribute) -> bool:
        """Is what a call returns, or a member of ``self`` holds, a list of sources?"""

    def from_list(
        self, call: ir.Call, listed: Callable[[ir.Expr], bool]
    ) -> tuple[frozenset[str] | None, bool]:
        """What the callee returns of the lists of sources ``call`` hands it (``listed``
        tells one): the labels of the count it picks from one (its largest, its last) or
        None, and whether it returns one (a sorted copy)."""


class NoResolver:
    def member(self, node: ir.Call | ir.Attribute) -> Summary | None:
        return None

    def holds_bound(self, node: ir.Call | ir.Attribute) -> bool:
        return False

    def passing(self, call: ir.Call) -> Passed | None:
        return None

    def sinking(
        self, call: ir.Call, tainted: Callable[[ir.Expr], bool]
    ) -> list[tuple[ir.Expr, str]]:
        return []

    def define(self, name: str, func: ir.FunctionDef | None) -> None:
        return None

    def dict_entries(
        self, call: ir.Call, tainted: Callable[[ir.Expr], bool]
    ) -> list[tuple[str, ir.Expr]]:
        return []

    def members_filled(
        self, call: ir.Call, tainted: Callable[[ir.Expr], bool]
    ) -> list[tuple[str, ir.Expr]]:
        return []

    def source_list(self, node: ir.Call | ir.Attribute) -> bool:
        return False

    def from_list(
        self, call: ir.Call, listed: Callable[[ir.Expr], bool]
    ) -> tuple[frozenset[str] | None, bool]:
        return None, False
