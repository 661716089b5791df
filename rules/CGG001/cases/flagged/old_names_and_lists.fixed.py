# Before vLLM 0.11.1 the capture size was `max_capture_size`; the largest size can also be
# read from the sorted capture-size lists.
class XPUModelRunner(GPUModelRunner):
    def old_name(self):
        min_blocks = (
            min(self.max_num_reqs, self.compilation_config.max_capture_size)
            or 1
        )  # expect: CGG001
        return min_blocks

    def last_batch_size(self):
        min_blocks = min(self.max_num_reqs, self.cudagraph_batch_sizes[-1]) or 1  # expect: CGG001
        return min_blocks

    def last_capture_size(self):
        num_blocks = int(min(self.max_num_reqs, self.compilation_config.cudagraph_capture_sizes[-1]) or 1)  # expect: CGG001
        return num_blocks

    def max_of_list(self):
        self.cache_config.num_gpu_blocks_override = (
            min(self.max_num_reqs, max(self.compilation_config.cudagraph_capture_sizes))
            or 1
        )  # expect: CGG001
