"""The ``CGGUARD_REPORT`` file: one JSON line per event, appended atomically.

Several vLLM processes (API server, engine core, workers) may write the same
file. Each event is one ``os.write`` on a descriptor opened with ``O_APPEND``,
so lines from concurrent writers never interleave.
"""

from __future__ import annotations

import json
import logging
import os
import time

from cgguard.runtime.state import STATE


def append_event(path: str | None, kind: str, **fields: object) -> None:
    """Append one ``{"event": kind, "pid": ..., "time": ..., **fields}`` line.

    A report that cannot be written is logged once and otherwise ignored: the
    report must never be the reason vLLM fails to start.
    """
    if not path:
        return
    event = {"event": kind, "pid": os.getpid(), "time": round(time.time(), 3), **fields}
    line = (json.dumps(event, sort_keys=True, default=str) + "\n").encode("utf-8")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
    except OSError as exc:
        STATE.log_once(
            f"report:{path}",
            logging.WARNING,
            "cgguard: cannot write the report %s (%s); continuing without it",
            path,
            exc,
        )
