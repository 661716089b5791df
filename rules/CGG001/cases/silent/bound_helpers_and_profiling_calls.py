# Calls that take both counts compute the bound (they are the fix, not the bug), and a
# call with "profile" in its name is not a profiling KV-cache builder.
def guard(limits, groups):
    bound = profiling_block_bound(limits.max_num_reqs, limits.max_cudagraph_capture_size)
    config = build_profiling_kv_cache_config(
        groups, min(limits.max_num_reqs, limits.max_cudagraph_capture_size) or 1
    )
    return bound, config


class GPUModelRunner:
    def profile_cudagraphs(self):
        self.profile_run_with_sizes(self.compilation_config.max_cudagraph_capture_size)
