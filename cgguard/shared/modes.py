"""Runtime guard modes and how ``CGGUARD_MODE`` maps to one (shared with `cgguard doctor`)."""

from __future__ import annotations

MODES = ("off", "warn", "raise", "fix")
DEFAULT_MODE = "warn"
MODE_ENV = "CGGUARD_MODE"
REPORT_ENV = "CGGUARD_REPORT"


def resolve_mode(value: str | None) -> tuple[str, str | None]:
    """(mode, problem) for a ``CGGUARD_MODE`` value; unset or empty means ``warn``.

    An unknown value falls back to ``warn`` (the guard must never be the reason
    vLLM fails to start) and ``problem`` says so in one line.
    """
    if value is None or not value.strip():
        return DEFAULT_MODE, None
    mode = value.strip().lower()
    if mode in MODES:
        return mode, None
    return DEFAULT_MODE, (
        f"{MODE_ENV}={value!r} is not one of {', '.join(MODES)}; using {DEFAULT_MODE!r}"
    )
