# This plugin lets the capture size be None: min(n, None) would raise, so the fix is unsafe.
class PluginModelRunner(GPUModelRunner):
    def _init_minimal_kv_cache_for_profiling(self):
        if self.compilation_config.max_cudagraph_capture_size is None:
            logger.info("no CUDA graphs")
        min_blocks = self.compilation_config.max_cudagraph_capture_size or 1  # expect: CGG001
        self.cache_config.num_gpu_blocks_override = min_blocks
