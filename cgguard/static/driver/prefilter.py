"""Which files are worth parsing at all, decided on their bytes (imports nothing heavy).

Every capture-size source the rules recognise (``max_cudagraph_capture_size``,
``max_capture_size``, ``cudagraph_capture_sizes``, ``cudagraph_batch_sizes``)
contains one of the model's needles (:data:`cgguard.static.rules.model.NEEDLES`);
a file without any cannot have a finding.
"""

from __future__ import annotations

from cgguard.static.rules.model import NEEDLES as TEXT_NEEDLES

NEEDLES = tuple(n.encode() for n in TEXT_NEEDLES)


def has_needle(data: bytes) -> bool:
    return any(n in data for n in NEEDLES)


def plain_bytes(data: bytes) -> bool:
    """Bytes with no decoding problem to report: plain ASCII (valid in every encoding
    Python accepts), no NUL byte, no coding cookie to validate."""
    return data.isascii() and b"\0" not in data and b"coding" not in data[:2048]


def might_match(text: str) -> bool:
    """Cheap test on decoded text: can it contain anything a rule looks at?"""
    return any(n in text for n in TEXT_NEEDLES)
