# A capture size handed in as a parameter's default value.
class ForkModelRunner(GPUModelRunner):
    def _init_minimal_kv_cache_for_profiling(self, tokens=DEFAULT_CONFIG.max_cudagraph_capture_size):
        min_blocks = tokens or 1  # expect: CGG001
        self.cache_config.num_gpu_blocks_override = min_blocks


def profiling_blocks(*, capture=get_current_vllm_config().compilation_config.max_cudagraph_capture_size):
    num_blocks = capture  # expect: CGG001
    return num_blocks
