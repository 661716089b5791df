# A layer remembering how many rows the profiling cache has (goes stale when vLLM is fixed).
class MambaMixerProfilingState:
    def __init__(self, vllm_config, prefix=""):
        self.prefix = prefix
        self._profiling_cache_rows = vllm_config.compilation_config.max_cudagraph_capture_size  # expect: CGG001

    def matches(self, kv_cache):
        return kv_cache.shape[0] == self._profiling_cache_rows
