# The author wants at least max_num_seqs rows (recurrent state indexed per scheduler slot),
# but max() with the capture size still grows with the token count.
class MambaModelRunner(GPUModelRunner):
    def _init_minimal_kv_cache_for_profiling(self):
        num_blocks = max(self.compilation_config.max_cudagraph_capture_size or 1, self.max_num_reqs)  # expect: CGG002
        self.cache_config.num_gpu_blocks_override = num_blocks


def at_least_sixteen(vllm_config):
    min_blocks = max(16, vllm_config.compilation_config.max_cudagraph_capture_size)  # expect: CGG002
    return min_blocks
