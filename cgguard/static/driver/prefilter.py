"""Which files are worth parsing at all, decided on their bytes (imports nothing heavy).

Every source a selected configuration recognises (CGG001's: ``max_cudagraph_capture_size``,
``max_capture_size``, ``cudagraph_capture_sizes``, ``cudagraph_batch_sizes``) contains one
of its needles (:class:`cgguard.static.rules.configs.Configuration`, derived from its
model's sources); a file without any cannot have a finding. The few files that hold a
needle are then asked for a source's whole name: two short needles cost half the scans of
four names over every file of a tree.
"""

from __future__ import annotations

from collections.abc import Sequence

from cgguard.static.rules.configs import CONFIGURATIONS, Configuration

# Every configuration's needles (what a text may hold of any rule's sources).
TEXT_NEEDLES = tuple(sorted({n for c in CONFIGURATIONS for n in c.needles}))


def has_needle(data: bytes, configurations: Sequence[Configuration] = CONFIGURATIONS) -> bool:
    """Do the bytes hold a needle of a configuration (what every source's name holds)?"""
    return any(n.encode() in data for c in configurations for n in c.needles)


def names_a_source(data: bytes, configurations: Sequence[Configuration] = CONFIGURATIONS) -> bool:
    """Do the bytes hold a source's whole name of a configuration (the needles first: most
    files hold none)? ``configurations``: those the run selected (every one by default)."""
    return any(c.names_a_source(data) for c in configurations)


def plain_bytes(data: bytes) -> bool:
    """Bytes with no decoding problem to report: plain ASCII (valid in every encoding
    Python accepts), no NUL byte, no coding cookie to validate."""
    return data.isascii() and b"\0" not in data and b"coding" not in data[:2048]


def might_match(text: str, configurations: Sequence[Configuration] = CONFIGURATIONS) -> bool:
    """Cheap test on decoded text: can it contain anything a rule looks at (a source's
    name)?"""
    return any(c.might_match(text) for c in configurations)


def mentions_sink_word(
    data: str | bytes, configurations: Sequence[Configuration] = CONFIGURATIONS
) -> bool:
    """May the text name a sink of a configuration (every sink names one of its words)?"""
    return any(c.mentions_sink_word(data) for c in configurations)
