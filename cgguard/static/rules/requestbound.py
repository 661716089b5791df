"""Which request count CGG001's fix bounds a capture size by: the rule's, not the core's.

The core finds where a fix goes and asks the model's ``fix_bound`` what bounds the count there
(:class:`cgguard.static.core.patterns.BoundSite`: the source's receiver in the scope's names,
a local holding a bound, the class the scope is in). :class:`RequestBound` answers with
vLLM's names: a model runner's ``max_num_reqs``, the config's ``max_num_seqs``, or what the
class has. It names no node of the core's form and imports nothing of it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cgguard.static.core.patterns import BoundSite


@dataclass(frozen=True)
class RequestBound:
    """The request count a fix writes, from the names around the source (called by the core)."""

    runner_names: frozenset[str]  # receivers that hold ``<runner>.<runner_request>``
    runner_request: str
    config_roots: frozenset[str]  # receivers that hold ``<root>.<config_request>``
    config_request: str
    source_config: str  # the attribute holding the sources (dropped from the receiver)
    # Attributes of a class, in order, that give it a request count (and the count's text).
    class_requests: tuple[tuple[str, str], ...]
    runner_classes: re.Pattern[str]  # class names that are a model runner

    def __call__(self, site: BoundSite) -> tuple[str | None, bool]:
        """The request count's text, and whether it is a guess (the class shows none)."""
        chain = site.chain
        if chain is not None:
            request = self._from_chain(chain, site)
            if request:
                return request, False
        local = site.bound_local()
        if local is not None:
            return local, False
        if site.read_from_self and site.in_class:
            own = self._own(site)
            return (own, False) if own else (f"self.{self.runner_request}", True)
        return None, False

    def _from_chain(self, chain: str, site: BoundSite) -> str | None:
        parts = chain.split(".")
        if parts[-1] in site.source_lists:
            parts = parts[:-1]  # a list's receiver: the list is read from it
        for i, part in enumerate(parts[:-1]):
            if part in self.runner_names and i + 1 < len(parts):
                return ".".join(parts[: i + 1]) + "." + self.runner_request
        if parts and parts[-1] == self.source_config:
            parts = parts[:-1]
        if not parts:
            return None
        if parts[0] == "self" and site.in_class and self._is_runner(site):
            return f"self.{self.runner_request}"  # a runner has its own request count
        base = ".".join(parts)
        last = parts[-1]
        if base == "self":
            return self._own(site)
        if last in self.runner_names:
            return f"{base}.{self.runner_request}"
        if last in self.config_roots:
            return f"{base}.{self.config_request}"
        return None

    def _own(self, site: BoundSite) -> str | None:
        """The request count of the class the scope is in, where it has one."""
        if not site.in_class:
            return None
        if self._is_runner(site):
            return f"self.{self.runner_request}"
        attrs = site.self_attrs()
        for attr, text in self.class_requests:
            if attr in attrs:
                return text
        return None

    def _is_runner(self, site: BoundSite) -> bool:
        """The class, or one of its bases, is a model runner by its name."""
        return any(self.runner_classes.search(name) for name in site.class_names())
