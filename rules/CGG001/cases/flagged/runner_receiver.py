# A module-level twin taking the runner as an argument (model runner v2 style).
def _init_minimal_kv_cache_for_profiling(runner):
    min_blocks = runner.compilation_config.max_cudagraph_capture_size or 1  # expect: CGG001
    runner.cache_config.num_gpu_blocks_override = min_blocks
