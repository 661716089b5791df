# A local alias of a compilation config, and several hops through locals.
class NPUModelRunner(GPUModelRunner):
    def _init_minimal_kv_cache_for_profiling(self):
        cc = self.compilation_config
        min_blocks = cc.max_cudagraph_capture_size or 1  # expect: CGG001
        self.cache_config.num_gpu_blocks_override = min_blocks

    def hops(self):
        capture = self.compilation_config.max_cudagraph_capture_size
        tokens = capture
        count = int(tokens)
        num_blocks = count or 1  # expect: CGG001
        return build(num_blocks)


def plugin_profiling_blocks(vllm_config):
    compilation_config = vllm_config.compilation_config
    num_blocks = compilation_config.max_cudagraph_capture_size or 16  # expect: CGG001
    return num_blocks
