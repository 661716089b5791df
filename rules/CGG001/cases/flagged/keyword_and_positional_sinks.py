# vLLM 0.33.0 passes the count to a builder; plugins pass it positionally.
class HPUModelRunner(GPUModelRunner):
    def keyword(self, builder, groups):
        return builder.get_kv_cache_config_from_groups(
            self.vllm_config,
            groups,
            num_blocks=self.compilation_config.max_cudagraph_capture_size or 1,  # expect: CGG001
        )

    def fixed_keyword(self, groups):
        return make_config(groups, fixed_num_blocks=self.compilation_config.max_cudagraph_capture_size)  # expect: CGG001

    def positional(self, groups):
        return self._build_profiling_kv_cache_config(groups, self.compilation_config.max_cudagraph_capture_size)  # expect: CGG001
