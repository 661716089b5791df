"""Which files are worth parsing at all, decided on their bytes (imports nothing heavy).

Every capture-size source the rules recognise (``max_cudagraph_capture_size``,
``max_capture_size``, ``cudagraph_capture_sizes``, ``cudagraph_batch_sizes``)
contains one of the model's needles (:data:`cgguard.static.rules.model.NEEDLES`);
a file without any cannot have a finding. The few files that hold a needle are then
asked for a source's whole name (:data:`cgguard.static.rules.model.SOURCE_NAMES`):
two short needles cost half the scans of four names over every file of a tree.
"""

from __future__ import annotations

from cgguard.static.rules.model import NEEDLES as TEXT_NEEDLES
from cgguard.static.rules.model import SOURCE_NAMES

NEEDLES = tuple(n.encode() for n in TEXT_NEEDLES)
_SOURCE_BYTES = tuple(n.encode() for n in SOURCE_NAMES)


def has_needle(data: bytes) -> bool:
    return any(n in data for n in NEEDLES)


def names_a_source(data: bytes) -> bool:
    """Do the bytes hold a source's whole name (the needles first: most files hold none)?"""
    return has_needle(data) and any(n in data for n in _SOURCE_BYTES)


def plain_bytes(data: bytes) -> bool:
    """Bytes with no decoding problem to report: plain ASCII (valid in every encoding
    Python accepts), no NUL byte, no coding cookie to validate."""
    return data.isascii() and b"\0" not in data and b"coding" not in data[:2048]


def might_match(text: str) -> bool:
    """Cheap test on decoded text: can it contain anything a rule looks at (a source's
    name)?"""
    return any(n in text for n in TEXT_NEEDLES) and any(n in text for n in SOURCE_NAMES)
