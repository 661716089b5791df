"""The guard's per-process settings and one-time flags (one instance, ``STATE``)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from cgguard.shared.modes import DEFAULT_MODE

# Guard messages go through the standard logging tree. They are warnings, so
# they reach stderr even in processes where nothing configured logging.
logger = logging.getLogger("cgguard.runtime")


@dataclass
class GuardState:
    mode: str = DEFAULT_MODE
    report: str | None = None
    active: bool = False
    # "module.Class.method" / "module.function" of every wrapped hook point.
    targets: list[str] = field(default_factory=list)
    # Messages logged at most once per process.
    logged_once: set[str] = field(default_factory=set)

    def log_once(self, key: str, level: int, message: str, *args: object) -> None:
        if key in self.logged_once:
            return
        self.logged_once.add(key)
        logger.log(level, message, *args)


STATE = GuardState()
