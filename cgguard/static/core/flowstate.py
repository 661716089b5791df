"""A scope's state at a point of its walk and the join of several.

The state is what each local and attribute chain holds (``env``: a :class:`~.taint.Taint`,
a :class:`~.taint.Count` or a marker of :mod:`.taint`), what each local was assigned
(``aliases``) and whether the point is reached at all. The live ``env`` and ``aliases`` are
:class:`Watched` dicts, shared by the flow's parts for the whole walk: a write clears what
``taint_of`` kept (its memo), and a restored state is copied into them, so every part always
reads the current one.
"""

from __future__ import annotations

from dataclasses import dataclass

from cgguard.static.core import ir
from cgguard.static.core.taint import (
    SOURCE_ELEMENT,
    SOURCE_LIST,
    Count,
    SplatDict,
    Taint,
    is_bound,
)


class Watched(dict):
    """A scope's env or aliases: every write through its methods clears taint_of's memo
    (``memo``), whose answers were read from the state before it. Nothing writes to them
    otherwise (``|=`` is not used on them)."""

    def __init__(self, memo: dict, *args: object) -> None:
        super().__init__(*args)
        memo.clear()
        self._memo = memo

    def reset(self, items: dict) -> None:
        """Hold ``items`` (a copy of them) instead of what it holds: a state restored."""
        self._memo.clear()
        super().clear()
        super().update(items)

    def __setitem__(self, key, value) -> None:
        self._memo.clear()
        super().__setitem__(key, value)

    def __delitem__(self, key) -> None:
        self._memo.clear()
        super().__delitem__(key)

    def pop(self, *args):
        self._memo.clear()
        return super().pop(*args)

    def setdefault(self, key, default=None):
        self._memo.clear()
        return super().setdefault(key, default)

    def update(self, *args, **kwargs) -> None:
        self._memo.clear()
        super().update(*args, **kwargs)

    def clear(self) -> None:
        self._memo.clear()
        super().clear()

    def popitem(self):
        self._memo.clear()
        return super().popitem()


@dataclass(frozen=True)
class State:
    env: dict[str, object]
    aliases: dict[str, ir.Expr]
    dead: bool


def join(*states: State) -> State:
    """The state after paths that meet: a count is bounded only if bounded on every path."""
    live = [s for s in states if not s.dead]
    if not live:
        return State({}, {}, True)
    if len(live) == 1:
        return live[0]
    env: dict[str, object] = {}
    keys: dict[str, None] = {}
    for s in live:
        keys.update(dict.fromkeys(s.env))
    for key in keys:
        values = [s.env.get(key) for s in live]
        taint = next((v for v in values if isinstance(v, Taint) and v.pending is not None), None)
        taint = taint or next((v for v in values if isinstance(v, Taint)), None)
        # The model's Count of either label is one value: any path's stands for all.
        unbounded = next((v for v in values if isinstance(v, Count) and not v.bound), None)
        if taint is not None:
            env[key] = taint
        elif unbounded is not None:
            env[key] = unbounded
        elif all(is_bound(v) for v in values):
            env[key] = values[0]
        elif any(v is SOURCE_ELEMENT for v in values):
            env[key] = SOURCE_ELEMENT
        elif any(v is SOURCE_LIST for v in values):
            env[key] = SOURCE_LIST  # a list of sources on one path may hold the largest
        elif all(isinstance(v, SplatDict) for v in values):
            env[key] = SplatDict.merged(values)
    aliases: dict[str, ir.Expr] = {}
    for s in live:
        for k, v in s.aliases.items():
            aliases.setdefault(k, v)
    return State(env, aliases, False)
