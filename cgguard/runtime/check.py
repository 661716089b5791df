"""The check itself: one profiling allocation against the per-sequence bound."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from cgguard.runtime import kvcache
from cgguard.runtime.errors import GuardViolation
from cgguard.runtime.report import append_event
from cgguard.runtime.state import STATE, logger
from cgguard.shared.bound import bound_source, profiling_block_bound
from cgguard.shared.modes import MODE_ENV

REMEDY = (
    "Remedy: upgrade to vLLM 0.26.0 or later, run `cgguard fix` on the fork's model "
    f"runner, or set {MODE_ENV}=fix to build the bounded cache at start-up."
)
# After ``fix`` acted, only the lasting remedies are left to suggest.
LASTING_REMEDY = "upgrade to vLLM 0.26.0 or later, or run `cgguard fix` on the fork's model runner"


@dataclass
class Allocation:
    """The numbers of one profiling allocation, as messages and the report give them."""

    requested_blocks: int
    requested_bytes: int
    bound_blocks: int
    bound_bytes: int
    max_num_reqs: int
    max_cudagraph_capture_size: int | None
    vllm_version: str | None
    via: str | None

    def bound_text(self) -> str:
        return bound_source(
            f"max_num_reqs={self.max_num_reqs}",
            f"max_cudagraph_capture_size={self.max_cudagraph_capture_size}",
        )

    def report_fields(self) -> dict[str, object]:
        return {
            "requested_blocks": self.requested_blocks,
            "requested_bytes": self.requested_bytes,
            "bound_blocks": self.bound_blocks,
            "bound_bytes": self.bound_bytes,
            "max_num_reqs": self.max_num_reqs,
            "max_cudagraph_capture_size": self.max_cudagraph_capture_size,
            "vllm_version": self.vllm_version,
            "via": self.via,
        }


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.2f} {unit}" if unit != "B" else f"{n} B"
        size /= 1024
    return f"{n} B"  # pragma: no cover


def _amount(blocks: int, nbytes: int) -> str:
    return f"{blocks} blocks ({nbytes:,} bytes, {human_bytes(nbytes)})"


def violation_message(a: Allocation, remedy: str = REMEDY) -> str:
    return (
        f"cgguard: vLLM's CUDA-graph profiling KV cache asks for {_amount(a.requested_blocks, a.requested_bytes)}, "
        f"but one block per sequence needs only {_amount(a.bound_blocks, a.bound_bytes)}: "
        f"bound = {a.bound_text()} (vLLM {a.vllm_version or 'unknown'}). {remedy}"
    )


def fixed_message(a: Allocation) -> str:
    saved = a.requested_bytes - a.bound_bytes
    return (
        f"cgguard: {MODE_ENV}=fix built vLLM's CUDA-graph profiling KV cache for "
        f"{_amount(a.bound_blocks, a.bound_bytes)} instead of {_amount(a.requested_blocks, a.requested_bytes)}, "
        f"saving {saved:,} bytes ({human_bytes(saved)}); bound = {a.bound_text()} "
        f"(vLLM {a.vllm_version or 'unknown'}). To remove the cause: {LASTING_REMEDY}."
    )


def check_profiling_allocation(runner: Any, config: Any, via: str | None) -> tuple[Any, int | None]:
    """Check one profiling allocation; returns (config to allocate, blocks the fix requested).

    ``warn`` returns ``config`` unchanged, ``raise`` raises :class:`GuardViolation`,
    ``fix`` returns a configuration vLLM built for the bound (and the original
    count, so the caller can correct the block count vLLM records afterwards).
    """
    mode = STATE.mode
    try:
        limits = kvcache.runner_limits(runner)
    except LookupError as exc:
        STATE.log_once(
            "limits", logging.WARNING, "cgguard: cannot check the profiling KV cache: %s", exc
        )
        append_event(
            STATE.report,
            "profiling_kv_cache",
            action="unchecked",
            mode=mode,
            reason=str(exc),
            via=via,
        )
        return config, None

    requested = int(config.num_blocks)
    requested_bytes = kvcache.config_bytes(config)
    bound = profiling_block_bound(limits.max_num_reqs, limits.max_cudagraph_capture_size)
    # Bytes grow linearly with the block count (size = bytes per block x blocks in
    # every release), so the bound's bytes follow from the requested ones.
    bound_bytes = requested_bytes * bound // requested if requested else 0
    facts = Allocation(
        requested,
        requested_bytes,
        bound,
        bound_bytes,
        limits.max_num_reqs,
        limits.max_cudagraph_capture_size,
        kvcache.vllm_version(),
        via,
    )
    if requested <= bound:
        append_event(
            STATE.report, "profiling_kv_cache", action="ok", mode=mode, **facts.report_fields()
        )
        return config, None

    if mode == "raise":
        append_event(
            STATE.report, "profiling_kv_cache", action="raised", mode=mode, **facts.report_fields()
        )
        raise GuardViolation(violation_message(facts))

    if mode == "fix":
        try:
            fixed = kvcache.build_config_for_blocks(runner, config, bound)
        except Exception as exc:  # the guard must never stop vLLM outside raise mode
            logger.warning(
                "%s cgguard could not build the bounded cache (%s: %s); vLLM continues unchanged.",
                violation_message(facts, f"To remove the cause: {LASTING_REMEDY}."),
                type(exc).__name__,
                exc,
            )
            append_event(
                STATE.report,
                "profiling_kv_cache",
                action="fix_failed",
                mode=mode,
                error=f"{type(exc).__name__}: {exc}",
                **facts.report_fields(),
            )
            return config, None
        facts.bound_bytes = kvcache.config_bytes(fixed)
        logger.warning("%s", fixed_message(facts))
        append_event(
            STATE.report, "profiling_kv_cache", action="fixed", mode=mode, **facts.report_fields()
        )
        return fixed, requested

    STATE.log_once("warn", logging.WARNING, "%s", violation_message(facts))
    append_event(
        STATE.report, "profiling_kv_cache", action="warned", mode=mode, **facts.report_fields()
    )
    return config, None
