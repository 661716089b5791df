# PR #30515 (pre-releases): a byte budget computed from the per-token block count.
class GPUModelRunner:
    def _init_minimal_kv_cache_for_profiling(self):
        groups = self.kv_cache_groups
        page_size = groups[0].kv_cache_spec.page_size_bytes
        return get_kv_cache_config_from_groups(
            self.vllm_config,
            groups,
            available_memory=(min(self.max_num_reqs, self.compilation_config.max_cudagraph_capture_size) or 1)  # expect: CGG001
            * page_size
            * len(groups),
        )


class PrereleaseModelRunner:
    # The count first, then the byte budget computed from it: one finding, at the count.
    def _init_minimal_kv_cache_for_profiling(self):
        groups = self.kv_cache_groups
        min_blocks = (
            min(self.max_num_reqs, self.compilation_config.max_cudagraph_capture_size)
            or 1
        )  # expect: CGG001
        available_memory = min_blocks * groups[0].kv_cache_spec.page_size_bytes * len(groups)
        return get_kv_cache_config_from_groups(self.vllm_config, groups, available_memory=available_memory)
