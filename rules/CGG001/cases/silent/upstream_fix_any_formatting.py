# vLLM 0.26.0 and later: already bounded by the request count, in any formatting.
class GPUModelRunner:
    def _init_minimal_kv_cache_for_profiling(self) -> None:
        # the minimum number of blocks required is 1 block *per sequence*
        min_blocks = (
            min(self.max_num_reqs, self.compilation_config.max_cudagraph_capture_size)
            or 1
        )
        self.cache_config.num_gpu_blocks_override = min_blocks

    def one_line(self):
        min_blocks = min(self.max_num_reqs,self.compilation_config.max_cudagraph_capture_size) or 1
        return min_blocks

    def seqs_first(self):
        cap = self.compilation_config.max_cudagraph_capture_size
        num_blocks = min(cap, self.scheduler_config.max_num_seqs) or 1
        return num_blocks


def _init_minimal_kv_cache_for_profiling(runner):
    min_blocks = (
        min(runner.max_num_reqs, runner.compilation_config.max_cudagraph_capture_size)
        or 1
    )
    runner.cache_config.num_gpu_blocks_override = min_blocks


def spec_decode_bound(vllm_config, num_spec):
    max_num_seqs = vllm_config.scheduler_config.max_num_seqs
    num_blocks = min(max_num_seqs * (1 + num_spec), vllm_config.compilation_config.max_cudagraph_capture_size)
    return num_blocks
