"""The rules as configurations of one engine: what each follows, and which rule reports what.

A :class:`Configuration` is data the driver reads: the core's model (sources with the label
their values carry, transfers, sinks: :class:`cgguard.static.core.patterns.Model`), the
byte prefilter's needles and the sources' whole names (derived from the model's sources),
the words every sink of it names, which rule reports a hit by the labels its count
carries, and whether files that name no sink word are read for flows that other modules
complete. The driver runs the configurations the run selects (a rule code selected
selects its configuration) and knows no rule by name; a new rule is a new entry of
:data:`CONFIGURATIONS` and its rule module.

Keep this module free of the core's form at import: the byte prefilter reads it before
anything is parsed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cgguard.static.rules import cgg003, model

if TYPE_CHECKING:
    from cgguard.static.core.patterns import Model


@dataclass(frozen=True)
class Configuration:
    name: str
    # (a label, the code reporting a hit whose count carries it): the first that matches
    rules: tuple[tuple[str, str], ...]
    model: Callable[[], Model]  # made per run: the core keeps nothing between runs
    needles: tuple[str, ...]  # one of them is in every source's name
    source_names: tuple[str, ...]  # the sources' names whole
    # The sink words, derived from the model's sinks (tests/static/test_sink_words.py):
    # the names a sink holds wherever it is (a stored attribute, a compared count), and the
    # callees whose parameters are sinks, which a sink names where it calls them. A text
    # naming none of them holds no sink of this configuration.
    sink_names: tuple[str, ...]
    sink_callees: tuple[str, ...]
    # Whether its flows cross the modules of a project: a file that names none of its sink
    # words is still read, for a flow that another module completes (a helper that sinks,
    # an importer that sinks a helper's return), and a call, an import or a base class is
    # followed into the module that defines it. False: only files naming a source and a
    # sink word are read, each alone, as outside any project.
    follows_imports: bool = True
    _needle_bytes: tuple[bytes, ...] = field(init=False, repr=False, compare=False)
    _source_bytes: tuple[bytes, ...] = field(init=False, repr=False, compare=False)
    _sink_name_bytes: tuple[bytes, ...] = field(init=False, repr=False, compare=False)
    _sink_callee_bytes: tuple[bytes, ...] = field(init=False, repr=False, compare=False)
    # A part of every sink callee's name, where they share a long one: a text without it
    # names none of them, asked in one search instead of one per callee.
    _sink_callee_part: bytes | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name, words in (
            ("_needle_bytes", self.needles),
            ("_source_bytes", self.source_names),
            ("_sink_name_bytes", self.sink_names),
            ("_sink_callee_bytes", self.sink_callees),
        ):
            object.__setattr__(self, name, tuple(w.encode() for w in words))
        object.__setattr__(self, "_sink_callee_part", _shared_part(self._sink_callee_bytes))

    @property
    def sink_words(self) -> tuple[str, ...]:
        return (*self.sink_names, *self.sink_callees)

    def mentions_sink_word(self, text: str | bytes) -> bool:
        """May the text hold one of the sinks: does it name a sink's name, or a callee whose
        parameter is a sink other than where it is defined (after ``def``)? Case counts:
        these are names."""
        data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
        if any(n in data for n in self._sink_name_bytes):
            return True
        if self._sink_callee_part is not None and self._sink_callee_part not in data:
            return False
        for callee in self._sink_callee_bytes:
            at = data.find(callee)
            while at != -1:
                if not data[max(0, at - 16) : at].rstrip(b" \t").endswith(b"def"):
                    return True
                at = data.find(callee, at + len(callee))
        return False

    @property
    def codes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(code for _, code in self.rules))

    def rule_for(self, labels: frozenset[str]) -> str:
        """The code reporting a hit whose count carries ``labels``."""
        for label, code in self.rules:
            if label in labels:
                return code
        raise ValueError(f"{self.name}: no rule reports a count labelled {sorted(labels)}")

    def names_a_source(self, data: bytes) -> bool:
        """Do the bytes hold a source's whole name (the needles first: most files hold none)?"""
        return any(n in data for n in self._needle_bytes) and any(
            n in data for n in self._source_bytes
        )

    def might_match(self, text: str) -> bool:
        """The same question of decoded text."""
        return any(n in text for n in self.needles) and any(n in text for n in self.source_names)


# The shortest part :func:`_shared_part` takes: a shorter one is in too many texts to spare
# the searches it stands for.
MIN_SHARED_PART = 8


def _shared_part(words: tuple[bytes, ...]) -> bytes | None:
    """The longest part every one of ``words`` holds (two or more of them), where it is at
    least :data:`MIN_SHARED_PART` bytes long; else None."""
    if len(words) < 2:
        return None
    shortest = min(words, key=len)
    for size in range(len(shortest), MIN_SHARED_PART - 1, -1):
        for at in range(len(shortest) - size + 1):
            part = shortest[at : at + size]
            if all(part in word for word in words):
                return part
    return None


CAPTURE_SIZE_BLOCKS = Configuration(
    name="capture-size-blocks",
    # A widened capture size is CGG002's; the capture size itself, CGG001's.
    rules=((model.WIDENED_LABEL, "CGG002"), (model.SOURCE_LABEL, "CGG001")),
    model=model.model,
    needles=model.NEEDLES,
    source_names=model.SOURCE_NAMES,
    sink_names=model.SINK_NAMES,
    sink_callees=model.SINK_CALLEES,
)

TOKENS_WHERE_REQUESTS_BELONG = Configuration(
    name="tokens-where-requests-belong",
    rules=((cgg003.TOKENS_LABEL, cgg003.CODE),),
    model=cgg003.model,
    needles=cgg003.NEEDLES,
    source_names=cgg003.SOURCE_NAMES,
    sink_names=cgg003.SINK_NAMES,
    sink_callees=cgg003.SINK_CALLEES,
    # Its sources and sinks are named in the module that holds the flow (vLLM's runners,
    # its compilation config): a file naming none of its sink words is not read for it.
    follows_imports=False,
)

REQUESTS_WHERE_TOKENS_BELONG = Configuration(
    name="requests-where-tokens-belong",
    rules=((cgg003.REQUESTS_LABEL, cgg003.CODE),),
    model=cgg003.requests_model,
    needles=cgg003.REQUEST_NEEDLES,
    source_names=cgg003.REQUEST_SOURCE_NAMES,
    sink_names=cgg003.REQUEST_SINK_NAMES,
    sink_callees=(),
    # The bound is set and read in the attention builder that names it.
    follows_imports=False,
)

CONFIGURATIONS: tuple[Configuration, ...] = (
    CAPTURE_SIZE_BLOCKS,
    TOKENS_WHERE_REQUESTS_BELONG,
    REQUESTS_WHERE_TOKENS_BELONG,
)


def selected(is_selected: Callable[[str], bool] | None) -> tuple[Configuration, ...]:
    """The configurations a run with this selection runs (every one when None): those with
    a code it selects."""
    if is_selected is None:
        return CONFIGURATIONS
    return tuple(c for c in CONFIGURATIONS if any(is_selected(code) for code in c.codes))
