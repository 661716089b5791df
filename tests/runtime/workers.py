"""Code the tensor-parallel test runs inside each vLLM worker (``llm.collective_rpc``).

Pickled by reference, so the workers import this module: the test puts the
repository on ``PYTHONPATH`` (and sets ``VLLM_ALLOW_INSECURE_SERIALIZATION=1``,
which vLLM requires to send a callable).
"""

from __future__ import annotations

import os


def profile_in_worker(worker, use_fork: bool) -> dict:
    """Run one profiling allocation on this worker's runner; say what the guard saw.

    ``use_fork``: run a fork runner carrying the per-token line (for fixed
    releases); otherwise the release's own ``_init_minimal_kv_cache_for_profiling``.
    """
    from cgguard.runtime import hooked_targets
    from cgguard.runtime.state import STATE
    from tests.runtime.conftest import allocated_kv, profiling_cache
    from tests.runtime.forks import make_fork_runner

    runner = worker.model_runner
    original_class = runner.__class__
    if use_fork:
        runner.__class__ = make_fork_runner()
    try:
        with profiling_cache(runner):
            runner._init_minimal_kv_cache_for_profiling()
            blocks, nbytes = allocated_kv(runner)
            recorded = runner.cache_config.num_gpu_blocks
    finally:
        runner.__class__ = original_class
    return {
        "pid": os.getpid(),
        "rank": getattr(worker, "rank", None),
        "active": STATE.active,
        "mode": STATE.mode,
        "targets": hooked_targets(),
        "runner": f"{original_class.__module__}.{original_class.__qualname__}",
        "blocks": blocks,
        "bytes": nbytes,
        "recorded_blocks": recorded,
        "block_size": runner.cache_config.block_size,
    }
