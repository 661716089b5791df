"""Fork runners for the tests, made the way forks are made: by copying vLLM's code.

``planted_profiling_method`` takes the installed vLLM's own
``GPUModelRunner._init_minimal_kv_cache_for_profiling`` source and makes sure it
carries the pre-fix (per-token) block count of vLLM 0.18.0-0.25.x: on a fixed
release (0.26.0+) the line is planted back; on an affected release (0.18.0,
0.25.0) the release's own code already has it and is copied unchanged. Either
way the fork runs the real upstream code path of the installed release.
"""

from __future__ import annotations

import inspect
import textwrap
from typing import Callable

from tests.conftest import PRE_FIX_RUNNER_EXPR, UPSTREAM_FIXED_RUNNER_EXPR

PROFILING_CALL = "self.initialize_kv_cache(minimal_config, is_profiling=True)"
LEGACY_PROFILING_CALL = "self.initialize_kv_cache(minimal_config)"  # vLLM 0.18.0: no is_profiling


def _replace_once(source: str, old: str, new: str) -> str:
    if source.count(old) != 1:
        raise AssertionError(f"expected exactly one {old!r} in vLLM's profiling method")
    return source.replace(old, new)


def release_profiling_source() -> str:
    """The installed release's own ``_init_minimal_kv_cache_for_profiling`` source."""
    from vllm.v1.worker import gpu_model_runner

    method = vars(gpu_model_runner.GPUModelRunner)["_init_minimal_kv_cache_for_profiling"]
    method = getattr(method, "__cgguard_original__", method)
    return inspect.getsource(method)


def release_is_per_token() -> bool:
    """Whether the installed release's own method carries the per-token line."""
    source = release_profiling_source()
    if f"min_blocks = {PRE_FIX_RUNNER_EXPR}" in source:
        return True
    if UPSTREAM_FIXED_RUNNER_EXPR in source:
        return False
    raise AssertionError("the installed vLLM's profiling method has neither the pre-fix nor the fixed line")


def planted_profiling_method(legacy_call: bool = False) -> Callable:
    from vllm.v1.worker import gpu_model_runner

    source = release_profiling_source()
    if not release_is_per_token():
        source = _replace_once(source, UPSTREAM_FIXED_RUNNER_EXPR, PRE_FIX_RUNNER_EXPR)
    if legacy_call and PROFILING_CALL in source:
        source = _replace_once(source, PROFILING_CALL, LEGACY_PROFILING_CALL)
    assert source.count(LEGACY_PROFILING_CALL if legacy_call else "self.initialize_kv_cache(") == 1
    namespace = dict(vars(gpu_model_runner))  # the names the method uses, as in vLLM
    exec(compile(textwrap.dedent(source), "<fork runner>", "exec"), namespace)
    return namespace["_init_minimal_kv_cache_for_profiling"]


def make_fork_runner(legacy: bool = False) -> type:
    """A subclass of vLLM's CPU runner carrying the per-token formula.

    ``legacy`` gives it vLLM 0.18.0's shape: ``initialize_kv_cache(self, kv_cache_config)``
    with no ``is_profiling``, called without one from the profiling method.
    """
    from vllm.v1.worker.cpu_model_runner import CPUModelRunner

    body: dict[str, object] = {
        "_init_minimal_kv_cache_for_profiling": planted_profiling_method(legacy_call=legacy),
        "__module__": __name__,
    }
    if legacy:
        def initialize_kv_cache(self, kv_cache_config):
            return CPUModelRunner.initialize_kv_cache(self, kv_cache_config)

        body["initialize_kv_cache"] = initialize_kv_cache
    return type("LegacyForkRunner" if legacy else "PerTokenForkRunner", (CPUModelRunner,), body)
