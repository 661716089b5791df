"""The exception the guard raises in ``raise`` mode."""

from __future__ import annotations


class GuardViolation(RuntimeError):
    """The profiling KV cache asked for more blocks than one per sequence.

    Raised in ``raise`` mode before the cache is allocated; the message carries
    the numbers and the remedy.
    """
