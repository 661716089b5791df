"""The guard's per-process settings and one-time flags (one instance, ``STATE``)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from cgguard.shared.modes import DEFAULT_MODE

# A child of vLLM's logger, so guard messages come out with vLLM's format, level
# (VLLM_LOGGING_LEVEL) and destination, next to the lines they explain. Where vLLM
# did not configure logging they propagate to the root logger, and warnings still
# reach stderr.
LOGGER_NAME = "vllm.cgguard"
logger = logging.getLogger(LOGGER_NAME)


@dataclass
class GuardState:
    mode: str = DEFAULT_MODE
    report: str | None = None
    active: bool = False
    announced_pid: int | None = None  # the process that wrote the last `installed` line
    # "module.Class.method" / "module.function" of every wrapped hook point.
    targets: list[str] = field(default_factory=list)
    # Messages logged at most once per process.
    logged_once: set[str] = field(default_factory=set)

    def log_once(self, key: str, level: int, message: str, *args: object) -> None:
        if key in self.logged_once:
            return
        self.logged_once.add(key)
        logger.log(level, message, *args, stacklevel=2)  # the caller's line, not this one


STATE = GuardState()
