"""Byte counts in human units (binary: KiB, MiB, GiB, as GPU memory is reported)."""

from __future__ import annotations

_UNITS = ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB")


def human_bytes(n: int) -> str:
    """``2097152`` -> ``"2 MiB"``, ``1610612736`` -> ``"1.5 GiB"``, ``1000`` -> ``"1000 bytes"``."""
    value = float(n)
    unit = 0
    while value >= 1024 and unit < len(_UNITS) - 1:
        value /= 1024
        unit += 1
    if unit == 0:
        return f"{n} bytes"
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return f"{text} {_UNITS[unit]}"
