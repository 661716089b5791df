"""A fork-style model runner that copied vLLM 0.25's profiling KV cache code.

cgguard's README runs `cgguard check` on this folder: it reports the per-token
block count below, and `cgguard fix` rewrites it to upstream's bound.
"""

from vllm.v1.core.kv_cache_utils import get_kv_cache_config_from_groups, get_kv_cache_groups
from vllm.v1.worker.gpu_model_runner import GPUModelRunner


class MyForkModelRunner(GPUModelRunner):
    def __init__(self, vllm_config, device):
        super().__init__(vllm_config, device)
        # Per-token buffers sized by the capture size are fine: they count tokens.
        max_size = self.compilation_config.max_cudagraph_capture_size
        self.query_start_loc_table = [0] * (max_size + 1)

    def _init_minimal_kv_cache_for_profiling(self) -> None:
        kv_cache_spec = self.get_kv_cache_spec()
        kv_cache_groups = get_kv_cache_groups(self.vllm_config, kv_cache_spec)
        min_blocks = self.compilation_config.max_cudagraph_capture_size or 1

        # Temporarily change num_gpu_blocks_override to allocate a minimal KV cache
        saved_override = self.cache_config.num_gpu_blocks_override
        self.cache_config.num_gpu_blocks_override = min_blocks
        try:
            minimal_config = get_kv_cache_config_from_groups(
                self.vllm_config, kv_cache_groups, available_memory=0
            )
        finally:
            self.cache_config.num_gpu_blocks_override = saved_override

        self.initialize_kv_cache(minimal_config, is_profiling=True)
        self.cache_config.num_gpu_blocks = minimal_config.num_blocks
