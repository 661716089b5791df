class ForkModelRunner(GPUModelRunner):
    def walrus(self):
        if (min_blocks := self.compilation_config.max_cudagraph_capture_size or 1) > 0:  # expect: CGG001
            self.cache_config.num_gpu_blocks_override = min_blocks

    def save_restore(self, kv_cache_groups):
        saved_override = self.cache_config.num_gpu_blocks_override
        try:
            # allocate a minimal KV cache for profiling
            self.cache_config.num_gpu_blocks_override = (
                self.compilation_config.max_cudagraph_capture_size  # expect: CGG001
                or 1  # at least one block
            )
            config = get_kv_cache_config_from_groups(
                self.vllm_config, kv_cache_groups, available_memory=0
            )
        finally:
            self.cache_config.num_gpu_blocks_override = saved_override
        return config
