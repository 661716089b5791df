"""vLLM plugin entry point (group ``vllm.general_plugins``, name ``cgguard``).

vLLM calls :func:`register` in every process it starts (API server, engine core,
workers), possibly more than once per process; :func:`install` is idempotent.
"""

from __future__ import annotations

import logging
import os

from cgguard.shared.modes import MODE_ENV, REPORT_ENV, resolve_mode


def register() -> None:
    """Enable the guard as ``CGGUARD_MODE`` (default ``warn``) and ``CGGUARD_REPORT`` say."""
    from cgguard.runtime.state import STATE

    mode, problem = resolve_mode(os.environ.get(MODE_ENV))
    if problem:
        STATE.log_once("mode-env", logging.WARNING, "cgguard: %s", problem)
    if mode == "off":
        return  # the operator's escape hatch: touch nothing
    try:
        from cgguard.runtime.hooks import install

        install(mode, os.environ.get(REPORT_ENV) or None)
    except Exception as exc:  # never the reason vLLM fails to start
        STATE.log_once(
            "register",
            logging.WARNING,
            "cgguard: could not enable the runtime guard (%s: %s)",
            type(exc).__name__,
            exc,
        )
